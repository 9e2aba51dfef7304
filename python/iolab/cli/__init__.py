"""The ``iolab`` command.

Each subcommand lives in its own module of this package and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to the
function that runs it. A user error is raised as :class:`UserError` (or a
``ValueError``/``OSError`` from the native core) and printed as one line,
without a backtrace.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from iolab.cli.errors import UserError, one_line

# Subcommand modules, in the order `iolab --help` lists them.
SUBCOMMANDS = [
    "iolab.cli.simulate",
    "iolab.cli.validate",
    "iolab.cli.sweep",
    "iolab.cli.paper",
    "iolab.cli.bench",
    "iolab.cli.queue",
    "iolab.cli.mail",
    "iolab.cli.emu",
    "iolab.cli.recommend",
]


def build_parser() -> argparse.ArgumentParser:
    from iolab import __version__

    parser = argparse.ArgumentParser(
        prog="iolab",
        description="A laboratory for disk I/O scheduling and disk-bound storage.",
    )
    parser.add_argument("--version", action="version", version=f"iolab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        # Ctrl-C while the subcommands are imported is still a clean stop.
        parser = build_parser()
    except KeyboardInterrupt:
        print("iolab: interrupted", file=sys.stderr)
        return 130
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as e:
        print(f"iolab: error: {one_line(str(e))}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as e:
        print(f"iolab: error: {one_line(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("iolab: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
