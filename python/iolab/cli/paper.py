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
    f = papers.add_parser("fastqueue", help="Wei, Lu, Zhou, FastQueue: a high performance disk queue storage "
                                            "management mechanism (Figures 3, 8, 9, 10 and the 230%% headline, with "
                                            "this machine's ceiling)")
    f.add_argument("--quick", action="store_true",
                   help="a small load, 2 repetitions, few cells (well under a minute; for CI)")
    f.add_argument("-o", "--output", default="paper-fastqueue", metavar="DIR",
                   help="report directory (default paper-fastqueue)")
    f.add_argument("--reps", type=positive_int, default=None,
                   help="repetitions of the mail runs (default 10, quick 2); the queue benchmark gets half, at least 2")
    f.add_argument("--seed", type=int, default=1, help="seed of the run order within repetitions (default 1)")
    f.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    f.add_argument("--from", dest="source", metavar="DIR",
                   help="measure nothing: write the report again from DIR/paper-fastqueue.json (an earlier run)")
    f.set_defaults(func=cmd_fastqueue)


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


def cmd_fastqueue(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from iolab.paper import fastqueue

    if args.source:
        code, verdicts = 0, fastqueue.rerender(Path(args.source), Path(args.output))
    else:
        code, verdicts = fastqueue.run(args.quick, Path(args.output), seed=args.seed, reps=args.reps,
                                       quiet=args.quiet)
    t = Table(title="FastQueue paper: claims")
    for col in ("figure", "claim", "paper", "measured [95% CI]", "verdict", "ceiling [95% CI]"):
        t.add_column(col, overflow="fold")
    for v in verdicts:
        t.add_row(v.figure, v.short, v.target.text(), v.measured.text(), v.verdict,
                  v.ceiling.text() if v.ceiling else "-")
    Console().print(t)
    print(f"report: {args.output}/report.md (and report.html, paper-fastqueue.json, PNG figures)")
    return code
