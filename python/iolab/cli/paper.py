"""`iolab paper NAME`: reproduce a paper's experiments."""

from __future__ import annotations

import argparse
from pathlib import Path

from iolab.cli.errors import positive_int


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("paper", help="reproduce a paper's experiments and write a report")
    papers = p.add_subparsers(dest="paper", metavar="PAPER")
    papers.required = True
    w = papers.add_parser("wpcas", help="Chen et al., improved AS based on workload characteristic and service "
                                        "time evaluation (Figures 3–8, Table 1, each reading of the setup)")
    w.add_argument("--quick", action="store_true", help="fewer seeds, shorter runs, two readings (a few minutes)")
    w.add_argument("-o", "--output", default="paper-wpcas", metavar="DIR", help="report directory (default paper-wpcas)")
    w.add_argument("-j", "--jobs", type=positive_int, default=None, help="parallel jobs (default: all cores)")
    w.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    w.set_defaults(func=cmd_wpcas)


def cmd_wpcas(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from iolab.paper import wpcas

    code, verdicts = wpcas.run(args.quick, Path(args.output), workers=args.jobs, quiet=args.quiet)
    t = Table(title="WPCAS paper: claims (reading 'paper'; every reading is in the report)")
    for col in ("claim", "WPCAS start-up", "paper", "iolab", "verdict"):
        t.add_column(col, overflow="fold")
    for v in verdicts:
        if v.reading == "paper":
            t.add_row(v.claim, v.startup, v.paper, v.iolab, v.verdict)
    Console().print(t)
    print(f"report: {args.output}/report.md (and report.html, paper-wpcas.json, PNG figures)")
    return code
