"""``iolab elevator new NAME``: a researcher's own elevator, written once in C.

The elevator is one file, ``kernel/NAME-iosched.c``, made from
``template.c`` (a first-come-first-served elevator over Linux 6.1's
``elevator_mq_ops``, every hook documented), and one line in
``kernel/Makefile`` (``obj-m += NAME-iosched.o``). From there it is both a
kernel module (``make -C kernel``) and the simulator's ``kernel:NAME``: the
simulator compiles ``kernel/``'s modules against its stand-ins for the
kernel's functions, at build time, and at first use for a module that is
new or changed since (docs/elevator-howto.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from iolab.cli.errors import UserError

TEMPLATE = Path(__file__).with_name("template.c")

# Linux's ELV_NAME_MAX is 16 bytes with the terminating NUL.
NAME_MAX = 15
NAME_RE = re.compile(r"[a-z][a-z0-9_]*\Z")

# Keywords of C11 and the GNU extensions the kernel uses: a name becomes
# part of every identifier of the file (NAME_init_sched, struct NAME_data).
C_KEYWORDS = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
    "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
    "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "typeof", "union",
    "unsigned", "void", "volatile", "while", "asm",
}

# Elevators that exist already: Linux 6.1's own and the simulator's (a
# name there would make `iolab compare` and `iolab kernel compare`
# ambiguous). Names registered by kernel/'s modules are read from them.
EXISTING = {"none", "mq-deadline", "kyber", "bfq", "noop", "fifo", "deadline", "cfq", "as", "as95",
            "anticipatory", "wpcas"}

# Prefixes of the kernel's (and the simulator's stand-ins') own functions:
# NAME_... would collide with them.
RESERVED_PREFIXES = ("elv", "blk", "kshim", "bio", "rq", "rb", "list", "hrtimer", "ioc", "sbitmap",
                     "trace", "kobject", "elevator", "sysfs", "module")

MAKEFILE_MARK = "# Elevators of one file each"


@dataclass
class Written:
    source: Path
    makefile: Path
    line: str


def registered_names(kernel_dir: Path) -> set[str]:
    """Elevator names and aliases registered by the sources in ``kernel_dir``."""
    names: set[str] = set()
    for c in sorted(kernel_dir.glob("*.c")):
        text = c.read_text(errors="replace")
        names.update(re.findall(r"\.elevator_(?:name|alias)\s*=\s*\"([^\"]+)\"", text))
    return names


def check_name(name: str, kernel_dir: Path) -> None:
    """Refuse a name that is not a C identifier, too long for the kernel,
    reserved, or an elevator that exists already."""
    if not NAME_RE.match(name):
        raise UserError(f"elevator name '{name}': use lower-case letters, digits and '_', starting with a "
                        "letter (it becomes part of C identifiers and of the module's file name)")
    if len(name) > NAME_MAX:
        raise UserError(f"elevator name '{name}': at most {NAME_MAX} characters (Linux's ELV_NAME_MAX)")
    if name in C_KEYWORDS:
        raise UserError(f"elevator name '{name}' is a C keyword")
    if any(name == p or name.startswith(p + "_") for p in RESERVED_PREFIXES):
        raise UserError(f"elevator name '{name}': its functions ({name}_...) would be in the kernel's own "
                        f"namespaces ({', '.join(p + '_' for p in RESERVED_PREFIXES)})")
    taken = EXISTING | registered_names(kernel_dir)
    if name in taken:
        raise UserError(f"there is an elevator called '{name}' already; choose another name")


def render(name: str) -> str:
    """The template for ``name``: placeholders replaced, and every line
    starting with ``@(@`` indented to the column after the first ``(`` of
    the line before it (continued parameter lists, as checkpatch wants)."""
    out: list[str] = []
    for line in TEMPLATE.read_text().splitlines():
        line = line.replace("@NAME@", name).replace("@UNAME@", name.upper())
        if line.startswith("@(@"):
            col = out[-1].expandtabs(8).index("(") + 1
            line = "\t" * (col // 8) + " " * (col % 8) + line[3:]
        out.append(line)
    return "\n".join(out) + "\n"


def new(name: str, kernel_dir: Path) -> Written:
    """Write ``kernel_dir/NAME-iosched.c`` and its line in the Makefile.
    Never overwrites: an existing file is an error."""
    kernel_dir = Path(kernel_dir)
    makefile = kernel_dir / "Makefile"
    if not makefile.is_file():
        raise UserError(f"{kernel_dir}: no Makefile (give the kernel/ directory of an iolab checkout)")
    check_name(name, kernel_dir)
    source = kernel_dir / f"{name}-iosched.c"
    obj = f"{name}-iosched.o"
    text = makefile.read_text()
    if re.search(rf"(?m)^obj-m\s*[:+]?=.*\b{re.escape(obj)}\b", text):
        raise UserError(f"{makefile} builds {obj} already")
    lines = text.splitlines(keepends=True)
    mark = next((i for i, ln in enumerate(lines) if ln.startswith(MAKEFILE_MARK)), None)
    if mark is None:
        raise UserError(f"{makefile} has no line starting with '{MAKEFILE_MARK}' to add the module after")
    # after the mark's comment block and the modules added before
    i = mark + 1
    while i < len(lines) and (lines[i].startswith("#") or lines[i].startswith("obj-m +=")):
        i += 1
    line = f"obj-m += {obj}\n"
    try:
        with open(source, "x") as f:  # "x": never overwrite
            f.write(render(name))
    except FileExistsError:
        raise UserError(f"{source} exists; iolab never overwrites it") from None
    lines.insert(i, line)
    makefile.write_text("".join(lines))
    return Written(source, makefile, line.strip())
