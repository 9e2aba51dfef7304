"""The ``iolab`` command.

Each subcommand lives in its own module of this package and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to the
function that runs it. A user error is raised as :class:`UserError` (or a
``ValueError``/``OSError`` from the native core) and printed as one line,
without a backtrace.

Start-up: only the module of the subcommand that runs is imported. The
others are listed from :data:`COMMANDS` (name and one-line help, as their
``register`` gives them), so ``iolab --help`` needs none of them; a module in
``SUBCOMMANDS`` that is missing from :data:`COMMANDS` is imported and
registered as before. tests/python/test_cli_startup.py checks that every help
text is the same as with every module registered.
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
    "iolab.cli.kernel",
    "iolab.cli.elevator",
    "iolab.cli.mail",
    "iolab.cli.emu",
    "iolab.cli.recommend",
    "iolab.cli.characterize",
]


# The commands each module of SUBCOMMANDS registers, with their one-line
# help, so that `iolab --help` and `iolab X` import no other module. Must say
# what the module's register() says (pinned by tests/python/test_cli_startup.py).
COMMANDS: dict[str, tuple[tuple[str, str], ...]] = {
    "iolab.cli.simulate": (
        ("run", "run an experiment spec (TOML)"),
        ("compare", "compare schedulers on a disk preset and a named workload"),
        ("presets", "list disks, workloads and schedulers with their tunables"),
    ),
    "iolab.cli.validate": (("validate", "replay measured DiskSim traces against disk models and compare"),),
    "iolab.cli.sweep": (("sweep", "run a spec over a grid of settings (locally or on a Dask cluster)"),),
    "iolab.cli.paper": (("paper", "reproduce a paper's experiments and write a report"),),
    "iolab.cli.bench": (("bench", "benchmark the kernel's I/O schedulers and tunables on a device "
                                  "(needs root and fio)"),),
    "iolab.cli.queue": (("queue", "FastQueue: benchmark, check, stats, repair"),),
    "iolab.cli.kernel": (("kernel", "the anticipatory/wpcas kernel module in a QEMU guest: overhead, "
                                    "simulator vs kernel"),),
    "iolab.cli.elevator": (("elevator", "write your own elevator in C, once, for the simulator and the kernel"),),
    "iolab.cli.mail": (("mail", "SMTP server over FastQueue: serve, queue, bench"),),
    "iolab.cli.emu": (("emu", "an emulated disk: serve an image over NBD with a disk model's timing"),),
    "iolab.cli.recommend": (("recommend", "which of today's schedulers suits a block trace on a disk "
                                          "(simulated, with tests)"),),
    "iolab.cli.characterize": (("characterize", "extract a disk model from a device by timed reads (never writes)"),),
}


def command_of(argv: list[str]) -> str | None:
    """The subcommand named in ``argv``: its first word that is not an
    option (the top-level parser's options, -h and --version, take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def alone(argv: list[str]) -> bool:
    """Whether ``argv`` can be parsed without the other commands' placeholders:
    it starts with a command's name (every later option is that command's), or
    with ``--version`` (which prints and exits before anything else is read).
    Only ``iolab --help`` and an unknown command's error list the commands."""
    first = argv[0] if argv else None
    return first == "--version" or any(first == c for listed in COMMANDS.values() for c, _ in listed)


def build_parser(command: str | None = "", *, full: bool = False, only: bool = False) -> argparse.ArgumentParser:
    """The parser; with ``full`` (or for a module missing from COMMANDS) every
    subcommand's own, else only ``command``'s: the rest are placeholders that
    carry their name and help for ``iolab --help``, left out with ``only``
    (when argv passed :func:`alone`: each placeholder is a whole ArgumentParser
    with its own ``-h`` and formatter, all of them paid by every ``iolab run``)."""
    from iolab import __version__

    parser = argparse.ArgumentParser(
        prog="iolab",
        description="A laboratory for disk I/O scheduling and disk-bound storage.",
    )
    parser.add_argument("--version", action="version", version=f"iolab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMANDS:
        listed = COMMANDS.get(name)
        if full or listed is None or any(command == c for c, _ in listed):
            importlib.import_module(name).register(sub)
        elif not only:
            for c, text in listed:
                sub.add_parser(c, help=text)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        # Ctrl-C while the subcommand is imported is still a clean stop.
        parser = build_parser(command_of(argv), only=alone(argv))
        args = parser.parse_args(argv)
        if not hasattr(args, "func"):  # a placeholder was chosen (an argv command_of misread)
            args = build_parser(full=True).parse_args(argv)
    except KeyboardInterrupt:
        print("iolab: interrupted", file=sys.stderr)
        return 130
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
