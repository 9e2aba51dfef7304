"""``iolab bench``: the kernel's real schedulers and tunables, measured with fio."""

from __future__ import annotations

import math

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from iolab.bench.words import count
from iolab.cli.errors import UserError

if TYPE_CHECKING:
    from rich.console import Console

EXAMPLES = """\
examples:
  iolab bench --loop 1G --reps 3
  iolab bench --loop 4G --workload hdparm-buffered --reps 15 --runtime 3 \\
      --config none --config mq-deadline --config kyber --config bfq \\
      --config bfq:slice_idle=20,fifo_expire_async=150,fifo_expire_sync=200,timeout_sync=160
  iolab bench --loop 2G --workload iozone --param reclen=64k,1m,16m --runtime 2
  iolab bench --device /dev/sdb --schedulers mq-deadline,bfq \\
      --tunables bfq.slice_idle=0,8 bfq.low_latency=0,1 --workload sync-readers
  iolab bench --restore          undo a session that was killed

A write workload on a device that holds a file system or a partition table
needs --destroy-data; one that is mounted or in use is always refused.
See docs/real-kernel.md.
"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "bench",
        help="benchmark the kernel's I/O schedulers and tunables on a device (needs root and fio)",
        description="Compare the kernel's I/O schedulers (none, mq-deadline, kyber, bfq) and their "
                    "tunables on a block device or a loop sandbox, with fio, repeated, shuffled "
                    "and tested for significance; restores every setting afterwards.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    target = p.add_mutually_exclusive_group()
    target.add_argument("--device", metavar="DEV", help="the block device to benchmark (whole disk)")
    target.add_argument("--loop", metavar="SIZE",
                        help="a sandbox: a file-backed loop device with direct I/O, made and removed by iolab")
    p.add_argument("--loop-dir", metavar="DIR", help="where the sandbox's backing file goes (default: -o DIR)")
    p.add_argument("--size", metavar="SIZE",
                   help="use only the first SIZE bytes of the device (default: all; preconditioning "
                        "writes this much)")
    p.add_argument("--schedulers", metavar="LIST",
                   help="comma-separated schedulers (default: all the device offers, "
                        "or none beyond --config when --config is given)")
    p.add_argument("--tunables", nargs="+", action="extend", default=[], metavar="SCHED.NAME=V1,V2",
                   help="a grid of tunables, e.g. bfq.slice_idle=0,8 queue.nr_requests=64,256; "
                        "'default' leaves a value as the switch left it")
    p.add_argument("--config", action="append", default=[], metavar="SCHED[:NAME=V,...]",
                   help="one more configuration with tunables set together (repeatable)")
    wl = p.add_mutually_exclusive_group()
    wl.add_argument("--workload", metavar="NAME", help="a built-in workload (see --list-workloads)")
    wl.add_argument("--fio", metavar="JOBFILE",
                    help="your own fio job; it must say filename=${IOLAB_DEV} or directory=${IOLAB_DIR}")
    p.add_argument("--param", action="append", default=[], metavar="NAME=V1,V2",
                   help="a workload parameter, e.g. reclen=32k,1m for iozone")
    p.add_argument("--reps", type=int, default=3, metavar="N", help="repetitions (default 3)")
    p.add_argument("--runtime", type=float, default=5.0, metavar="S", help="seconds per fio job (default 5)")
    p.add_argument("--ramp", type=float, default=1.0, metavar="S", help="warm-up seconds (default 1)")
    p.add_argument("-o", "--output", default="bench-out", metavar="DIR",
                   help="output directory; must not hold another session (default: bench-out)")
    p.add_argument("--destroy-data", action="store_true",
                   help="allow a writing workload on a device that holds a file system or partitions")
    p.add_argument("--seed", type=int, help="seed of the run order (default: random, recorded)")
    p.add_argument("--detect", type=float, default=5.0, metavar="PCT",
                   help="the difference (in %%) the power analysis asks about (default 5)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--restore", action="store_true",
                   help="undo what an interrupted session left (settings, sandbox, mounts) and exit")
    p.add_argument("--list-workloads", action="store_true", help="list the built-in workloads and exit")
    p.add_argument("--report", metavar="DIR",
                   help="analyse the runs a session left in DIR again and rewrite its report (no measuring)")
    p.set_defaults(func=run)


def _params(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise UserError(f"cannot read --param {item!r}: write NAME=VALUE[,VALUE...]")
        out[name.strip()] = value.strip()
    return out


def _list_workloads(console: Console) -> int:
    from iolab.bench.workloads import WORKLOADS

    for w in WORKLOADS:
        needs = ["writes" if w.writes else "read-only"] + (["makes a file system"] if w.needs_fs else [])
        params = " ".join(f"{k}={v}" for k, v in w.params.items())
        console.print(f"{w.name:16} {w.job}  ({', '.join(needs)})", soft_wrap=True, highlight=False)
        console.print(f"{'':16} {w.summary}; mirrors {w.mirrors}", soft_wrap=True, highlight=False)
        if params:
            console.print(f"{'':16} parameters: {params}", soft_wrap=True, highlight=False)
    return 0


def _restore(console: Console) -> int:
    from iolab.bench import statefile

    done, problems = statefile.restore_pending()
    for line in done:
        console.print(line)
    for line in problems:
        console.print(f"[red]not restored:[/red] {line}")
    if not done and not problems:
        console.print(f"nothing to restore (no state files in {statefile.state_dir()})")
    return 1 if problems else 0


def _report_again(outdir: Path, detect: float, out: Console) -> int:
    from iolab.bench import record

    result = record.load(outdir)
    if not result.runs:
        raise UserError(f"{outdir} holds no runs to analyse")
    return _write_report(result, outdir, detect, out)


def _write_report(result, outdir: Path, detect: float, out: Console) -> int:
    """Writes the data and, when there is something to compare, the report."""
    # Imported late: pandas, scipy and statsmodels take seconds to load, and a
    # refusal or a restore needs none of them.
    from iolab.bench import analysis as an
    from iolab.bench import report

    try:
        analysis = an.analyse(result, detect=detect)
    except an.NothingToCompare:
        report.write_data(result, outdir)
        raise
    path = report.write(result, analysis, outdir)
    out.print(report.recommendation(result, analysis), soft_wrap=True)
    out.print(f"report: {path} (and report.html, runs.json, runs.csv)")
    return 0


def _size(flag: str, text: str) -> int:
    """A size option's bytes; an empty or unreadable one named by its flag."""
    from iolab.bench.sandbox import parse_size

    if not text.strip():
        raise UserError(f"{flag}: the size is empty; give one such as 1G")
    try:
        return parse_size(text)
    except UserError as e:
        raise UserError(f"{flag}: {e}") from None


def _region(size: int) -> int:
    if size < 2**20:
        raise UserError(f"--size {size}: expected at least 1M (0 is not \"the whole device\"; leave --size out)")
    return size


def run(args) -> int:
    from rich.console import Console

    console = Console(stderr=True)
    out = Console()
    if args.list_workloads:
        return _list_workloads(out)
    if args.restore:
        return _restore(out)

    from iolab.bench import configs, session, workloads

    if not (math.isfinite(args.detect) and 0 < args.detect <= 1000):
        raise UserError(f"--detect {args.detect:g}: expected a percentage above 0 and at most 1000")
    if args.report:
        return _report_again(Path(args.report), args.detect / 100, out)
    session.check_limits(args.reps, args.runtime, args.ramp)
    if args.schedulers is not None and not args.schedulers.strip():
        raise UserError("--schedulers is empty: name at least one, e.g. --schedulers none,bfq")
    for flag, value in (("--loop-dir", args.loop_dir), ("-o", args.output)):
        if value and Path(value).exists() and not Path(value).is_dir():
            raise UserError(f"{flag} {value}: not a directory")
    if args.device is None and args.loop is None:
        raise UserError("name a target: --device DEV (a whole disk) or --loop SIZE (a sandbox)")
    if args.device is not None and not args.device.strip():
        raise UserError("--device: the path is empty; give a whole disk such as /dev/sdb")
    workload = workloads.custom(args.fio) if args.fio else workloads.get(args.workload or workloads.DEFAULT_WORKLOAD)
    opts = session.Options(
        workload=workload,
        device=args.device,
        loop_size=_size("--loop", args.loop) if args.loop is not None else None,
        loop_dir=Path(args.loop_dir) if args.loop_dir else None,
        size=_region(_size("--size", args.size)) if args.size is not None else None,
        schedulers=[s.strip() for s in args.schedulers.split(",") if s.strip()] if args.schedulers else None,
        grid=configs.parse_grid(args.tunables),
        explicit=[configs.parse_config(c) for c in args.config],
        params=_params(args.param),
        reps=args.reps,
        runtime=args.runtime,
        ramp=args.ramp,
        outdir=Path(args.output),
        destroy_data=args.destroy_data,
        seed=args.seed,
        progress=not args.no_progress,
    )
    result = session.run(opts, console)
    for line in result.restored:
        console.print(f"restore: {line}")
    for line in result.restore_problems:
        console.print(f"[red]restore failed:[/red] {line} -- fix it, then run `iolab bench --restore`")
    code = 1 if result.restore_problems else 0
    if result.runs:
        try:
            _write_report(result, opts.outdir, args.detect / 100, out)
        except UserError as e:
            if not result.interrupted:
                raise
            console.print(f"iolab: {e}")
    if result.interrupted:
        kept = f"{count(len(result.runs), 'run')} kept in {opts.outdir}" if result.runs else "no run finished"
        console.print(f"iolab: interrupted by {result.interrupted}; {kept}")
        return 128 + int(result.signum or 2)
    return code
