"""``iolab validate``: replay a measured disk trace against a disk model.

The trace is a DiskSim validation trace (one request at a time, measured on
a real drive); the model comes from a DiskSim parameter file. The command
prints the measured and simulated access-time statistics side by side and
the demerit figure (RMS horizontal distance between the two CDFs, in ms).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from iolab.cli.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="replay a measured DiskSim trace against a disk model and compare",
        description=__doc__,
    )
    p.add_argument("--diskspecs", required=True, metavar="FILE",
                   help="DiskSim parameter file (.parv or .diskspecs; FILE#NAME picks a disk)")
    p.add_argument("--trace", required=True, metavar="FILE",
                   help="DiskSim validation trace (R|W Miss|Hit|Doub|Trip LBN blocks access_us delay_us)")
    p.add_argument("--json", metavar="OUT", help="also write the report as JSON to OUT")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from iolab._iolab import validate

    spec_file = args.diskspecs.rsplit("#", 1)[0] if "#" in args.diskspecs else args.diskspecs
    for what, path in (("--diskspecs", spec_file), ("--trace", args.trace)):
        if not Path(path).is_file():
            raise UserError(f"{what} {path}: no such file")
    start = time.perf_counter()
    report = json.loads(validate(args.diskspecs, args.trace))
    elapsed = time.perf_counter() - start
    print_report(report, elapsed)
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        except OSError as e:
            raise UserError(f"--json {args.json}: {e.strerror}") from e
    return 0


def print_report(r: dict, elapsed_s: float) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]disk[/bold]  {r['disk']}")
    console.print(f"[bold]trace[/bold] {r['trace']} ({r['requests']} requests, "
                  f"replayed in {elapsed_s * 1e3:.0f} ms)")
    t = Table(title="Access time (ms)")
    t.add_column("")
    for col in ("mean", "sd", "p10", "p50", "p90", "p99"):
        t.add_column(col, justify="right")
    for name in ("measured", "simulated"):
        s = r[name]
        t.add_row(name, *(f"{s[k + '_ms']:.3f}" for k in ("mean", "sd", "p10", "p50", "p90", "p99")))
    console.print(t)
    c = Table(title="By the drive's outcome (trace column 2)")
    for col in ("class", "count", "measured mean", "simulated mean", "model hit", "partial", "miss"):
        c.add_column(col, justify="right" if col != "class" else "left")
    for row in r["classes"]:
        c.add_row(row["class"], str(row["count"]), f"{row['measured_mean_ms']:.3f}",
                  f"{row['simulated_mean_ms']:.3f}", str(row["model_hits"]),
                  str(row["model_partial_hits"]), str(row["model_misses"]))
    console.print(c)
    console.print(f"[bold]demerit[/bold] {r['demerit_ms']:.3f} ms "
                  f"({r['demerit_percent_of_mean']:.2f}% of the measured mean)")
