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
    k = w.add_argument_group("on the real kernel (--kernel: root, a checkout, QEMU; docs/paper-wpcas.md)")
    k.add_argument("--kernel", action="store_true",
                   help="the IOzone experiments on Linux 6.1 in a QEMU guest over an emulated HP 97560 "
                        "(none, mq-deadline, the module's anticipatory and wpcas), beside the simulator's "
                        "verdicts; with --quick 10 classes and one repetition (about 15 minutes)")
    k.add_argument("--reps", type=positive_int, default=None,
                   help="kernel repetitions (default 3, quick 1)")
    k.add_argument("--classes", default=None, metavar="LIST",
                   help="process counts, of 10,40,80 (default all, quick 10)")
    k.add_argument("--placement", choices=["packed", "ext3"], default="packed",
                   help="IOzone's files on the raw device as the simulator places them: back to back "
                        "(packed, the default) or as ext3 would in one directory (the 'paper' reading)")
    k.add_argument("--icount", type=int, default=6, metavar="SHIFT",
                   help="QEMU's instruction counter, 2**SHIFT ns per instruction, one vCPU (default 6; "
                        "-1: off)")
    k.add_argument("--file-kib", dest="file_kib", type=positive_int, default=512, metavar="K",
                   help="IOzone's file per process, KiB, on both sides (default 512, the paper's; smaller "
                        "scales every run down: a multiple of the 4 KiB record, at most 512)")
    k.add_argument("--guests", type=positive_int, default=1, metavar="N",
                   help="boot N guests side by side, each with its own emulated disk, and share the runs "
                        "out among them by whole repetitions of an experiment (default 1; at most 8)")
    k.add_argument("--calibration", metavar="DIR",
                   help="a calibration boot of `iolab kernel compare --think guest` on hp97560 "
                        "(DIR/calibration-hp97560): the simulator runs again paying the guest's time per "
                        "request it measured (with --from: added to a finished run)")
    k.add_argument("--tracer-cost", choices=("take-back", "keep"), default="take-back",
                   help="the blk tracer's own time in the calibration's traced runs: measured per line and "
                        "taken off the guest's gaps (take-back, the default) or left in (keep), as "
                        "`iolab kernel compare --tracer-cost`")
    k.add_argument("--no-calibration", action="store_true",
                   help="boot no calibration guest beside the runs (by default one measures the guest's "
                        "time per request under each elevator, for the simulator's third side)")
    k.add_argument("--trace", default="", metavar="LIST",
                   help="elevators (none, mq-deadline, anticipatory, wpcas) whose guest runs are traced with "
                        "the blk tracer into DIR/hp97560*/runs/ID.trace (costs the guest time)")
    k.add_argument("--repo", metavar="DIR", help="the iolab checkout (default: found)")
    k.add_argument("--from", dest="source", metavar="DIR",
                   help="with --kernel: boot nothing, decide the claims and write the report again from DIR")
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

    if args.kernel or args.source:
        return cmd_wpcas_kernel(args)

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


def _classes(value: str | None) -> list[int] | None:
    from iolab.cli.errors import UserError
    from iolab.paper.wpcas_kernel_plan import CLASS_COUNTS

    if value is None:
        return None
    try:
        items = [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        items = []
    if not items or any(c not in CLASS_COUNTS for c in items):
        raise UserError(f"--classes: expected some of {','.join(map(str, CLASS_COUNTS))}, got {value!r}")
    return items


def cmd_wpcas_kernel(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from iolab.cli.errors import UserError
    from iolab.kernel.guest import MAX_GUESTS
    from iolab.kernel.testbed import MAX_ICOUNT_SHIFT
    from iolab.paper import wpcas_kernel
    from iolab.paper.wpcas_kernel_plan import FILE_KB, RECORD_KB

    if args.source:
        if not args.kernel:
            raise UserError("--from DIR re-reads a --kernel run: give --kernel too")
        if args.calibration:
            wpcas_kernel.resim_guest(Path(args.source), Path(args.calibration),
                                     take_back=args.tracer_cost == "take-back")
        result = wpcas_kernel.analyse(Path(args.source))
        out = args.source
    else:
        if not -1 <= args.icount <= MAX_ICOUNT_SHIFT:
            raise UserError(f"--icount: {args.icount} is outside -1..{MAX_ICOUNT_SHIFT} (-1: off)")
        if args.file_kib % RECORD_KB or args.file_kib > FILE_KB:
            raise UserError(f"--file-kib: {args.file_kib} is not a multiple of the {RECORD_KB} KiB "
                            f"record up to {FILE_KB}")
        traced = tuple(x.strip() for x in args.trace.split(",") if x.strip())
        known = sorted({s.elevator for s in wpcas_kernel.SCHEDULERS})
        if any(x not in known for x in traced):
            raise UserError(f"--trace: unknown {', '.join(x for x in traced if x not in known)}; "
                            f"known: {', '.join(known)}")
        if args.guests > MAX_GUESTS:
            raise UserError(f"--guests: {args.guests} is more than {MAX_GUESTS} guests side by side")
        out = args.output if args.output != "paper-wpcas" else "paper-wpcas-kernel"
        result = wpcas_kernel.run(args.quick, Path(out), reps=args.reps, classes=_classes(args.classes),
                                  placement=args.placement, icount=None if args.icount < 0 else args.icount,
                                  repo=args.repo, guests=args.guests, file_kb=args.file_kib,
                                  calibrate=not args.no_calibration,
                                  calibration=Path(args.calibration) if args.calibration else None,
                                  trace=traced, take_back=args.tracer_cost == "take-back")
    t = Table(title="WPCAS paper, IOzone: the kernel's verdicts beside the simulator's")
    guest = any(r.sim_guest for r in result)
    for col in ("claim", "WPCAS start-up", "paper", "kernel", "simulator", *(["simulator+guest"] if guest else [])):
        t.add_column(col, overflow="fold")
    for r in result:
        t.add_row(r.claim, r.startup, r.paper, wpcas_kernel.shown(r.kernel), wpcas_kernel.shown(r.sim),
                  *([wpcas_kernel.shown(r.sim_guest) if r.sim_guest else "-"] if guest else []))
    Console().print(t)
    print(f"report: {out}/report.md (and report.html, paper-wpcas-kernel.json, meta.json, the guest's runs)")
    return 0


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
