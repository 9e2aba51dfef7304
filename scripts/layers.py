#!/usr/bin/env python3
"""Which part of iolab imports which, checked against the layering in docs/architecture.md.

The simulator (crates/iolab-sim) is built in tiers that follow the kernel's data path: a room (a
top-level module, `src/NAME.rs` or `src/NAME/`) may import only rooms of tiers below its own, and
rooms of one tier never import each other (the elevators and the disk models sit side by side:
an elevator never sees the drive). The other crates and the Python packages need no tiers, only
no import circle between their files.

Imports are read from the code itself: `use` lines and inline paths (`crate::a::b`,
`super::x`) in Rust, `import` and `from ... import` (at any depth, `TYPE_CHECKING` blocks
included) in Python. Test code is not held to the tiers (`#[cfg(test)]` items and modules): a
test of an elevator may run the whole engine, as an integration test under `tests/` does, and
Cargo allows the same of dev-dependencies.

    python3 scripts/layers.py            # check everything; exit 1 and name each offending import
    python3 scripts/layers.py --graph    # the simulator's rooms, tier by tier, with what each imports
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The simulator's tiers, top to bottom. Keep docs/architecture.md's table in step
# (tests/python/test_layers.py compares them).
SIM_TIERS: list[tuple[str, list[str]]] = [
    ("front ends", ["experiment", "validate"]),
    ("the run", ["engine"]),
    ("results", ["metrics"]),
    ("processes", ["workload"]),
    ("trace formats", ["trace"]),
    ("page cache", ["pagecache"]),
    ("block layer", ["blk"]),
    ("elevators and drives", ["sched", "disk"]),
    ("vocabulary", ["cost", "field", "fileop", "histogram", "input", "limits", "rng"]),
    ("the request", ["request"]),
    ("base", ["error", "time"]),
]

# Crates and Python packages held to "no import circle between files".
ACYCLIC_CRATES = ["crates/iolab-mail", "crates/fastqueue", "crates/iolab-emu", "crates/iolab-py"]
PYTHON_PACKAGE = "python/iolab"


# ---------------------------------------------------------------------------------------------
# Rust


def _strip_rust(src: str) -> str:
    """The source with comments, strings and char literals blanked (line numbers kept)."""
    out: list[str] = []
    i, n = 0, len(src)
    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i)
            j = n if j < 0 else j + 2
            out.append("\n" * src.count("\n", i, j))
            i = j
            continue
        m = re.match(r'b?r(#*)"', src[i : i + 12])
        if m and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            end = '"' + m.group(1)
            j = src.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j
            continue
        c = src[i]
        if c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j + 1
            continue
        if c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", src[i : i + 12])
            if m:
                out.append("' '")
                i += len(m.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out)


def _blank_test_items(src: str, module: tuple[str, ...], test_modules: set) -> str:
    """Blank each item under `#[cfg(test)]`; a `mod NAME;` so marked makes its file test code."""
    marker = "#[cfg(test)]"
    while True:
        k = src.find(marker)
        if k < 0:
            return src
        j = k + len(marker)
        m = re.match(r"\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", src[j:])
        if m:
            test_modules.add(module + (m.group(1),))
            end = j + m.end()
        else:
            depth, end = 0, j
            while end < len(src):
                ch = src[end]
                end += 1
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                    if depth == 0:
                        break
                elif ch == ";" and depth == 0:
                    break
        src = src[:k] + re.sub(r"[^\n]", " ", src[k:end]) + src[end:]


def _expand_use(tree: str) -> list[str]:
    """`a::{b, c::{d, e}}` → [`a::b`, `a::c::d`, `a::c::e`]."""
    tree = tree.strip()
    m = re.match(r"^(.*?)\{(.*)\}$", tree, re.S)
    if not m:
        return [tree]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in inner:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [prefix + q for p in parts if p.strip() for q in _expand_use(p)]


def rust_imports(src_dir: Path) -> tuple[dict, set]:
    """{module: {imported module: [(file, line, path)]}} for a crate's `src/`, and its modules.

    A module is a tuple of names (`("sched", "anticipatory")`; the crate root is `()`); binaries
    under `src/bin/` are left out. Only the code outside `#[cfg(test)]` is read."""
    files: dict[tuple, Path] = {}
    for f in sorted(src_dir.rglob("*.rs")):
        rel = f.relative_to(src_dir)
        if rel.parts[0] == "bin":
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[-1] == "mod" or (len(parts) == 1 and parts[0] in ("lib", "main")):
            parts = parts[:-1]
        files[tuple(parts)] = f
    test_modules: set = set()
    code = {m: _blank_test_items(_strip_rust(f.read_text()), m, test_modules) for m, f in files.items()}

    def is_test(m: tuple) -> bool:
        return any(m[:k] in test_modules for k in range(1, len(m) + 1))

    def resolve(cur: tuple, path: str):
        segs = [re.sub(r"\s+as\s+\w+$", "", s.strip()) for s in path.split("::")]
        if segs[0] == "crate":
            base, segs = [], segs[1:]
        else:
            base = list(cur)
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    base = base[:-1]
                segs = segs[1:]
        full = base + segs
        for k in range(len(full), -1, -1):
            if tuple(full[:k]) in files:
                return tuple(full[:k])
        return None

    token = re.compile(
        r"(?:\bmod\s+(\w+)\s*\{)|(\{)|(\})|(\buse\s+([^;]*);)|((?<![\w:])(?:crate|super|self)(?:::\w+)+)"
    )
    edges: dict = defaultdict(lambda: defaultdict(list))
    for mod, src in code.items():
        if is_test(mod):
            continue
        inline: list[tuple[str, int]] = []  # inline `mod x { ... }` blocks we are inside
        depth = 0
        for t in token.finditer(src):
            if t.group(1):
                depth += 1
                inline.append((t.group(1), depth))
                continue
            if t.group(2):
                depth += 1
                continue
            if t.group(3):
                if inline and inline[-1][1] == depth:
                    inline.pop()
                depth -= 1
                continue
            cur = mod + tuple(name for name, _ in inline)
            paths = _expand_use(t.group(5)) if t.group(4) else [t.group(6)]
            line = src.count("\n", 0, t.start()) + 1
            for p in paths:
                p = p.strip()
                if not re.match(r"^(crate|super|self)\b", p):
                    continue
                target = resolve(cur, p)
                if target is not None and target != mod:
                    edges[mod][target].append((files[mod], line, p))
    return edges, set(m for m in files if not is_test(m))


# ---------------------------------------------------------------------------------------------
# Python


def python_imports(pkg_dir: Path) -> dict:
    """{module: {imported module: [(file, line, name)]}} between the modules of one package."""
    pkg = pkg_dir.name
    mods: dict[str, Path] = {}
    for f in sorted(pkg_dir.rglob("*.py")):
        rel = f.relative_to(pkg_dir.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = f
    edges: dict = defaultdict(lambda: defaultdict(list))

    def known(name: str):
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    for mod, f in mods.items():
        is_pkg = f.name == "__init__.py"
        tree = ast.parse(f.read_text(), str(f))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".")
                    base = base[: len(base) - node.level + (1 if is_pkg else 0)]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                names = [f"{stem}.{a.name}" for a in node.names] + [stem]
            for name in names:
                if not (name == pkg or name.startswith(pkg + ".")):
                    continue
                target = known(name)
                # A package's own `__init__` is not an import of it by its modules (Python runs
                # it first either way); `from pkg.sub import x` names pkg.sub, not pkg.
                if target and target != mod and not mod.startswith(target + "."):
                    edges[mod][target].append((f, node.lineno, name))
    return edges


# ---------------------------------------------------------------------------------------------
# Checks


def cycles(graph: dict) -> list[list]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on: set = set()
    out: list = []
    counter = 0
    nodes = set(graph) | {w for vs in graph.values() for w in vs}
    for root in sorted(nodes, key=str):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()), key=str)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ()), key=str))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp, key=str))
    return out


def _where(locs: list, root: Path) -> str:
    f, line, name = locs[0]
    return f"{f.relative_to(root)}:{line} ({name})"


def _modname(m: tuple) -> str:
    return "::".join(m) or "lib"


def check_simulator(root: Path = ROOT) -> list[str]:
    """The offending imports of the simulator's rooms, one message each."""
    edges, modules = rust_imports(root / "crates/iolab-sim/src")
    tier_of = {room: i for i, (_, rooms) in enumerate(SIM_TIERS) for room in rooms}
    problems = []
    for room in sorted({m[0] for m in modules if m}):
        if room not in tier_of:
            problems.append(f"crates/iolab-sim/src/{room}: a room no tier of scripts/layers.py names")
    for a in sorted(edges):
        for b, locs in sorted(edges[a].items()):
            if not a or not b or a[0] == b[0] or a[0] not in tier_of or b[0] not in tier_of:
                continue
            ta, tb = tier_of[a[0]], tier_of[b[0]]
            if tb < ta:
                problems.append(f"{_where(locs, root)}: {a[0]} ({SIM_TIERS[ta][0]}) imports {b[0]}, a tier above it")
            elif tb == ta:
                problems.append(
                    f"{_where(locs, root)}: {a[0]} imports {b[0]}, beside it in the tier {SIM_TIERS[ta][0]!r}"
                )
    return problems


def check_acyclic(root: Path = ROOT) -> list[str]:
    """The import circles between the files of the other crates and of the Python package."""
    problems = []
    for crate in ACYCLIC_CRATES:
        edges, _ = rust_imports(root / crate / "src")
        graph = {a: [b for b in bs if b] for a, bs in edges.items() if a}
        for comp in cycles(graph):
            members = set(comp)
            via = [
                _where(locs, root) for a in comp for b, locs in sorted(edges[a].items()) if b in members
            ]
            problems.append(f"{crate}: import circle {' ↔ '.join(_modname(m) for m in comp)}: " + "; ".join(via))
    edges = python_imports(root / PYTHON_PACKAGE)
    for comp in cycles(edges):
        members = set(comp)
        via = [_where(locs, root) for a in comp for b, locs in sorted(edges[a].items()) if b in members]
        problems.append(f"{PYTHON_PACKAGE}: import circle {' ↔ '.join(comp)}: " + "; ".join(via))
    return problems


def room_graph(root: Path = ROOT) -> dict[str, set[str]]:
    edges, modules = rust_imports(root / "crates/iolab-sim/src")
    g: dict[str, set[str]] = {m[0]: set() for m in modules if m}
    for a, bs in edges.items():
        for b in bs:
            if a and b and a[0] != b[0]:
                g[a[0]].add(b[0])
    return g


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", action="store_true", help="print the simulator's rooms and their imports")
    args = ap.parse_args()
    if args.graph:
        g = room_graph()
        for name, rooms in SIM_TIERS:
            print(f"{name}:")
            for r in rooms:
                print(f"  {r:<11} → {', '.join(sorted(g.get(r, ()))) or '-'}")
        return 0
    problems = check_simulator() + check_acyclic()
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} import(s) against the layering (docs/architecture.md)", file=sys.stderr)
        return 1
    print("layers: every import runs down the simulator's tiers; no import circle in the other crates or python/iolab")
    return 0


if __name__ == "__main__":
    sys.exit(main())
