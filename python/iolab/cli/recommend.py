"""`iolab recommend`: the best of today's schedulers for a block trace on a
disk, only where the difference is significant (see iolab.recommend)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from iolab.cli.errors import UserError, finite_positive, positive_int

EXAMPLES = """examples:
  iolab recommend data/traces/sample.blkparse.txt --disk modern7200
  iolab recommend my.blkparse.txt --disk ssd --queue-depth 32 --metric read-p99 --seeds 20
  iolab recommend my.blkparse.txt --diskspecs drive.diskspecs --tunables bfq.slice_idle=0,4,8
  iolab recommend my.blkparse.txt --disk modern7200 --verify /dev/sdb
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "recommend", help="which of today's schedulers suits a block trace on a disk (simulated, with tests)",
        description="Replay a block trace under none, mq-deadline, kyber and bfq and a small grid of their "
                    "tunables over several seeds, and name the best configuration for a metric only where "
                    "paired tests, corrected for the number of comparisons, find it significantly best.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", help="block trace (blkparse text by default; see --format)")
    p.add_argument("--format", default="blkparse", choices=["blkparse", "msr", "spc", "fiu", "disksim"],
                   help="trace format (default blkparse)")
    disk = p.add_mutually_exclusive_group()
    disk.add_argument("--disk", default=None, metavar="PRESET", help="disk preset (default modern7200; see iolab presets), or a TOML file with a [disk] "
                           "table (iolab characterize writes one)")
    disk.add_argument("--diskspecs", metavar="FILE", help="a DiskSim 4.0 parameter file")
    p.add_argument("--queue-depth", type=positive_int, default=None, metavar="N",
                   help="requests the device holds at once (default 32 for the ssd preset, else 1)")
    p.add_argument("--metric", default="throughput", choices=["throughput", "read-p99", "fairness"],
                   help="what 'best' means (default throughput)")
    p.add_argument("--seeds", type=positive_int, default=10, metavar="N", help="seeds per configuration (default 10)")
    p.add_argument("--jitter-ms", type=float, default=1.0, metavar="MS",
                   help="each request is issued up to this much later than recorded, drawn with the seed "
                        "(default 1; 0 = a deterministic replay, run once)")
    p.add_argument("--margin", type=float, default=5.0, metavar="PCT",
                   help="equivalence margin in %% for 'the choice does not matter' (default 5)")
    p.add_argument("--schedulers", default=",".join(("none", "mq-deadline", "kyber", "bfq")), metavar="LIST",
                   help="comma-separated schedulers (default none,mq-deadline,kyber,bfq)")
    p.add_argument("--tunables", nargs="+", action="extend", default=[], metavar="SCHED.NAME=V1,V2",
                   help="replace a scheduler's grid by the product of these values, e.g. bfq.slice_idle=0,8")
    p.add_argument("--mode", default="open", choices=["open", "closed"], help="trace replay mode (default open)")
    p.add_argument("--speed", type=finite_positive, default=1.0, help="replay speed factor (default 1)")
    p.add_argument("--fit", default="wrap", choices=["error", "wrap", "scale"],
                   help="sectors beyond the simulated disk (default wrap)")
    p.add_argument("--max-records", type=positive_int, default=None, metavar="N", help="replay only the first N requests")
    p.add_argument("--device-name", default="DEV", metavar="NAME", help="device name in the printed sysfs lines")
    p.add_argument("--verify", metavar="DEV",
                   help="run `iolab bench` on DEV (or loop:SIZE, a sandbox) with the recommended and the "
                        "current configuration (needs root and fio)")
    p.add_argument("--verify-workload", metavar="NAME", help="iolab bench workload for --verify (default bench's)")
    p.add_argument("--verify-reps", type=positive_int, default=5, metavar="N", help="repetitions for --verify (default 5)")
    p.add_argument("--verify-runtime", type=finite_positive, default=None, metavar="S",
                   help="seconds per fio job for --verify (default bench's)")
    p.add_argument("--dask", metavar="ADDRESS", help="run on a Dask scheduler (tcp://host:8786) or 'local'")
    p.add_argument("-j", "--jobs", type=positive_int, default=None, help="parallel jobs without --dask")
    p.add_argument("-o", "--output", metavar="DIR", help="write recommend.json and the runs here")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_recommend)


def cmd_recommend(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from iolab import recommend as rc
    from iolab.diskfile import DiskFileError, is_disk_file, load_disk
    from iolab.sweep import run_sweep

    trace = Path(args.trace)
    if not trace.exists():
        raise UserError(f"{trace}: no such trace file")
    if not trace.is_file():
        what = "a directory" if trace.is_dir() else "not a regular file"
        raise UserError(f"{trace}: is {what}; expected a trace file")
    if not (0 <= args.jitter_ms <= 60_000):
        raise UserError(f"--jitter-ms {args.jitter_ms}: must be within [0, 60000]")
    if not (0 < args.margin < 100):
        raise UserError(f"--margin {args.margin}: must be a percentage above 0 and below 100")
    rc.check_device_name(args.device_name)
    if args.diskspecs:
        disk = {"diskspecs": str(Path(args.diskspecs).resolve())}
        qd = args.queue_depth or 1
    elif args.disk and is_disk_file(args.disk):
        try:
            disk = load_disk(args.disk)
        except DiskFileError as e:
            raise UserError(str(e)) from None
        qd = args.queue_depth or int(disk.get("queue_depth", 1))
    else:
        preset = args.disk or "modern7200"
        disk = {"preset": preset}
        qd = args.queue_depth or (32 if preset == "ssd" else 1)
    disk["queue_depth"] = qd
    disk_name = args.diskspecs or args.disk or disk.get("preset")
    metric = rc.METRICS[args.metric]
    cfgs = rc.configs([s.strip() for s in args.schedulers.split(",") if s.strip()], rc.parse_tunables(args.tunables))
    spec = rc.build_spec(trace, args.format, disk, cfgs, args.seeds, args.jitter_ms, args.mode, args.speed,
                         args.fit, args.max_records)
    result = run_sweep(json.dumps(spec, allow_nan=False), "<recommend>", "json", [], [], dask_address=args.dask,
                       workers=args.jobs, quiet=args.quiet)
    doc = result.docs[""]
    if result.interrupted:
        print("iolab: interrupted; no recommendation from an incomplete grid", file=sys.stderr)
        return 130
    verdict = rc.analyse(doc, metric, args.margin / 100)
    console = Console()
    jitter = (f"jitter {args.jitter_ms:g} ms, seeds 1..{args.seeds}" if args.jitter_ms > 0
              else "no jitter (deterministic, one run each)")
    t = Table(title=f"{trace.name} on {disk_name} (queue depth {qd}), "
                    f"{args.mode} replay, {jitter}: {metric.title}")
    for col in ("configuration", f"{metric.unit or 'value'} (mean ± 95% CI)", "seeds"):
        t.add_column(col)
    for row in rc.table(verdict):
        t.add_row(*row)
    console.print(t)
    for line in rc.explain(verdict, {c.label: c for c in cfgs}, args.device_name):
        console.print(line, highlight=False, soft_wrap=True)
    if args.output:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        rc.dump(verdict, out / "recommend.json")
        (out / "results.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        print(f"wrote {out}/recommend.json, results.json")
    if args.verify:
        rec = verdict.winner or (verdict.best if len(verdict.top) < len(verdict.values) else None)
        if rec is None:
            print("--verify: nothing to verify, the simulation recommends no configuration")
            return 0
        recommended = {c.label: c for c in cfgs}[rec]
        cmd = rc.verify_command(args.verify, recommended, rc.default_config(args.verify), args.verify_reps,
                                Path(args.output or "recommend-out") / "verify", args.verify_workload,
                                args.verify_runtime)
        print("verifying on the device: " + " ".join(cmd[1:]), flush=True)
        return subprocess.call(cmd)
    return 0
