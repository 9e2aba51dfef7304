"""A report written once and rendered twice, as Markdown and as HTML.

Blocks are added in order (headings, paragraphs, lists, tables, images);
``markdown()`` and ``html()`` render the same content, so the two reports
never drift apart.
"""

from __future__ import annotations

import html as _html
import re
from dataclasses import dataclass, field
from typing import Sequence, Union

# Readable on a phone as on a desktop: the page never scrolls sideways; a
# table wider than the screen scrolls inside its own box, a figure shrinks,
# and a long path or name breaks rather than pushing the page wider.
_STYLE = (
    "body{font-family:sans-serif;max-width:1150px;margin:2em auto;padding:0 1em;line-height:1.4;"
    "overflow-wrap:break-word}"
    ".wide{overflow-x:auto;margin:1em 0}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
    "td:first-child,th:first-child{text-align:left}img{max-width:100%;height:auto}"
    "code{background:#f4f4f4}pre{overflow-x:auto}"
)


def _inline(text: str) -> str:
    """Text escaped for HTML, with the two Markdown marks reports use:
    ``**bold**`` and ```code```."""
    text = _html.escape(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", text)


@dataclass
class _Heading:
    level: int
    text: str


@dataclass
class _Para:
    text: str


@dataclass
class _List:
    items: list[str]


@dataclass
class _Table:
    header: list[str]
    rows: list[list[str]]


@dataclass
class _Image:
    path: str
    alt: str


@dataclass
class _Code:
    text: str


Block = Union[_Heading, _Para, _List, _Table, _Image, _Code]


@dataclass
class Document:
    title: str
    blocks: list[Block] = field(default_factory=list)

    def heading(self, text: str, level: int = 2) -> "Document":
        self.blocks.append(_Heading(level, text))
        return self

    def para(self, text: str) -> "Document":
        self.blocks.append(_Para(text))
        return self

    def bullets(self, items: Sequence[str]) -> "Document":
        self.blocks.append(_List(list(items)))
        return self

    def table(self, header: Sequence[str], rows: Sequence[Sequence[str]]) -> "Document":
        self.blocks.append(_Table(list(header), [list(map(str, r)) for r in rows]))
        return self

    def image(self, path: str, alt: str = "") -> "Document":
        self.blocks.append(_Image(path, alt or path))
        return self

    def code(self, text: str) -> "Document":
        self.blocks.append(_Code(text))
        return self

    def markdown(self) -> str:
        out = [f"# {self.title}", ""]
        for b in self.blocks:
            if isinstance(b, _Heading):
                out += ["#" * b.level + " " + b.text, ""]
            elif isinstance(b, _Para):
                out += [b.text, ""]
            elif isinstance(b, _List):
                out += [f"- {i}" for i in b.items] + [""]
            elif isinstance(b, _Table):
                out.append("| " + " | ".join(b.header) + " |")
                out.append("|" + "|".join("---" for _ in b.header) + "|")
                out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in b.rows]
                out.append("")
            elif isinstance(b, _Image):
                out += [f"![{b.alt}]({b.path})", ""]
            elif isinstance(b, _Code):
                out += ["```", b.text, "```", ""]
        return "\n".join(out)

    def html(self) -> str:
        e = _html.escape
        parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
                 f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
                 # An empty icon: without it a browser asks the server for /favicon.ico, a 404.
                 f"<link rel='icon' href='data:,'>"
                 f"<title>{e(self.title)}</title><style>{_STYLE}</style></head><body><h1>{e(self.title)}</h1>"]
        for b in self.blocks:
            if isinstance(b, _Heading):
                parts.append(f"<h{b.level}>{e(b.text)}</h{b.level}>")
            elif isinstance(b, _Para):
                parts.append(f"<p>{_inline(b.text)}</p>")
            elif isinstance(b, _List):
                parts.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in b.items) + "</ul>")
            elif isinstance(b, _Table):
                head = "".join(f"<th>{e(h)}</th>" for h in b.header)
                body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in b.rows)
                parts.append(f"<div class='wide'><table><thead><tr>{head}</tr></thead>"
                             f"<tbody>{body}</tbody></table></div>")
            elif isinstance(b, _Image):
                parts.append(f"<p><img src='{e(b.path)}' alt='{e(b.alt)}'></p>")
            elif isinstance(b, _Code):
                parts.append(f"<pre><code>{e(b.text)}</code></pre>")
        parts.append("</body></html>")
        return "\n".join(parts)

    def write(self, outdir, stem: str = "report") -> list:
        """Write STEM.md and STEM.html into ``outdir``; returns the paths."""
        md, page = outdir / f"{stem}.md", outdir / f"{stem}.html"
        md.write_text(self.markdown() + "\n")
        page.write_text(self.html() + "\n")
        return [md, page]
