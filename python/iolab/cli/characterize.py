"""``iolab characterize``: a disk model from timed reads of a device."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path

from iolab.cli.errors import UserError, finite_positive

EPILOG = """examples:
  iolab characterize nbd+unix:///?socket=/tmp/nbd.sock --budget 2 -o hp   # an `iolab emu` disk
  iolab characterize nbd://127.0.0.1:10809 -o mydisk
  iolab characterize /dev/sdb --budget 10 -o mydisk && iolab compare --disk mydisk.toml
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "characterize",
        help="extract a disk model from a device by timed reads (never writes)",
        description=(
            "Measure DEVICE (a block device, an image file, nbd://HOST:PORT or "
            "nbd+unix:///?socket=PATH) with timed O_DIRECT reads only and write a model the "
            "simulator loads: NAME.toml ([disk]), NAME.diskspecs/.model/.seek (DiskSim 4.0) and "
            "NAME.parv (the same disk on a bus, DiskSim's run-file form) for a rotating disk, NAME.json "
            "(every figure with its spread). See docs/characterize.md."
        ),
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("device", help="block device, image file, nbd://HOST:PORT or nbd+unix:///?socket=PATH")
    p.add_argument("-o", "--output", metavar="NAME", help="write NAME.toml, NAME.diskspecs... (default: from the device's name)")
    p.add_argument("--budget", type=finite_positive, default=10.0, metavar="MINUTES",
                   help="time to spend measuring (default 10); steps past it are left out and said so")
    p.add_argument("--quick", action="store_true",
                   help="fewer samples: fewer zone samples and seek distances, shorter rotation runs")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_characterize)


def _default_name(device: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", device.rstrip("/").split("/")[-1].split("?")[-1]).strip("_.")
    return name or "disk"


def cmd_characterize(args: argparse.Namespace) -> int:
    from iolab.characterize.device import DeviceError, open_device
    from iolab.characterize.model import write_model
    from iolab.characterize.report import summary

    if args.budget > 24 * 60:
        raise UserError(f"--budget {args.budget:g}: at most {24 * 60} minutes (a day)")
    out = Path(args.output or _default_name(args.device))
    if out.suffix in (".toml", ".diskspecs", ".json"):
        out = out.with_suffix("")
    if not out.parent.exists():
        raise UserError(f"-o {args.output}: directory {out.parent} does not exist")
    try:
        dev = open_device(args.device)
    except DeviceError as e:
        raise UserError(str(e)) from None
    budget_s = args.budget * 60
    command = "iolab characterize " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if len(sys.argv) > 2 \
        else f"iolab characterize {args.device}"
    try:
        with dev:
            res = _measure(dev, budget_s, args.quick, args.quiet)
    except DeviceError as e:
        raise UserError(str(e)) from None
    for line in summary(res):
        print(line)
    try:
        files = write_model(res, out, command)
    except ValueError as e:
        print(f"iolab characterize: no model written: {e}", file=sys.stderr)
        return 130 if res.interrupted else 1
    print("wrote " + ", ".join(str(f) for f in files))
    return 130 if res.interrupted else 0


def _measure(dev, budget_s: float, quick: bool, quiet: bool):
    from iolab.characterize.run import characterize

    if quiet or not sys.stderr.isatty():
        return characterize(dev, budget_s, quick)
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]characterizing"), BarColumn(), TextColumn("{task.description}"),
                  TimeElapsedColumn(), transient=True, console=Console(stderr=True)) as bar:
        task = bar.add_task("", total=1.0)

        def on_step(text: str, frac: float) -> None:
            bar.update(task, completed=min(frac, 1.0), description=f"{text} ({dev.reads} reads)")

        return characterize(dev, budget_s, quick, on_step)
