"""``iolab kernel``: the ``anticipatory`` and ``wpcas`` elevators of
``kernel/`` in a QEMU guest (``testbed/``).

``iolab kernel overhead`` measures the CPU cost per request of each elevator
on a fast disk, against mq-deadline; ``iolab kernel compare`` runs the same
workloads on an emulated disk in the guest and in the simulator. Both need
root and a checkout of the repository. See docs/kernel.md.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from iolab.cli.errors import UserError

EXAMPLES = """\
examples:
  iolab kernel overhead --reps 5 --secs 5 -o kernel-overhead
  iolab kernel overhead --report kernel-overhead        analyse again, no guest
  iolab kernel compare -o kernel-compare                 simulator against kernel (about 1 h)
  iolab kernel compare --report kernel-compare
  iolab kernel compare --disks hp97560 --elevators bfq --trace bfq -o bfq-trace
  iolab kernel bfqlog bfq-trace                           what the kernel's BFQ did, per run
  iolab kernel compare --icount 6 -o cmp                  the guest on QEMU's instruction counter
  iolab kernel timing cmp                                 the guest's time per request, per run
  iolab kernel compare --trace wpcas -o cmp && iolab kernel decisions cmp
                                                          WPCAS's decisions in the guest and the simulator
"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "kernel",
        help="the anticipatory/wpcas kernel module in a QEMU guest: overhead, simulator vs kernel",
        description="Measure the kernel/ module's elevators in a QEMU guest booting Debian's 6.1 "
                    "kernel (testbed/). Needs root and a checkout of the repository.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="kernel_command", metavar="COMMAND")
    sub.required = True

    o = sub.add_parser("overhead", help="CPU cost per request against mq-deadline on null_blk",
                       description="Boot the guest once; run none, mq-deadline, bfq, anticipatory "
                                   "and wpcas in rotated order on a null_blk disk; report the CPU "
                                   "cost per request and its ratio to mq-deadline.")
    o.add_argument("--reps", type=int, default=5, metavar="N", help="repetitions (default 5)")
    o.add_argument("--secs", type=int, default=5, metavar="S", help="seconds measured per run (default 5)")
    o.add_argument("-o", "--output", default="kernel-overhead", metavar="DIR", help="output directory")
    o.add_argument("--report", metavar="DIR", help="analyse the runs in DIR again (no guest)")
    o.add_argument("--icount", type=int, metavar="SHIFT",
                   help="run the guest on QEMU's instruction counter (one CPU, 2**SHIFT ns per "
                        "instruction): the busy time per request is then the guest's instructions "
                        "per request times 2**SHIFT ns, whatever the host's load")
    o.add_argument("--repo", metavar="DIR", help="the iolab checkout (default: found)")
    o.set_defaults(func=run_overhead)

    from iolab.kernel import bfqlog, compare, decisions, timing

    compare.register(sub)
    bfqlog.register(sub)
    timing.register(sub)
    decisions.register(sub)


# Bounds checked before the guest boots (each repetition runs five elevators).
MAX_REPS = 100
MAX_SECS = 3600


def _read_json(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"{path}: cannot read it ({e})") from None
    if not isinstance(doc, dict):
        raise UserError(f"{path}: expected a JSON object")
    return doc


def run_overhead(args) -> int:
    from iolab.kernel import overhead, testbed

    if args.report:
        out = Path(args.report)
        meta = _read_json(out / "overhead.json") if (out / "overhead.json").exists() else {}
        if not (out / "guest" / "overhead" / "runs.txt").is_file():
            raise UserError(f"{out}: no guest/overhead/runs.txt (not a finished `iolab kernel overhead` directory)")
    else:
        if not 1 <= args.reps <= MAX_REPS:
            raise UserError(f"--reps: {args.reps} is outside 1..{MAX_REPS}")
        if not 1 <= args.secs <= MAX_SECS:
            raise UserError(f"--secs: {args.secs} is outside 1..{MAX_SECS}")
        testbed.check_icount(args.icount)
        repo = testbed.find_repo(args.repo)
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        kver = testbed.prepare(repo)
        meta = {"kernel": kver, "reps": args.reps, "secs": args.secs, "load_before": testbed.host_load(),
                "started": time.strftime("%Y-%m-%d %H:%M:%S"), "icount": args.icount}
        print(f"iolab kernel overhead: booting {kver} (about {args.reps * 5 * (args.secs + 8) // 60 + 1} min); "
              f"host load {meta['load_before']}")
        run = testbed.boot(repo, out / "guest", "overhead.sh", [str(args.secs), str(args.reps)],
                           timeout_s=(1200 if args.icount is not None else 600) + args.reps * 5 * (args.secs + 30),
                           icount=args.icount)
        meta["load_after"] = testbed.host_load()
        meta["ok"] = run.ok
        meta["failures"] = run.failures
        (out / "overhead.json").write_text(json.dumps(meta, indent=2) + "\n")
        if not run.ok:
            raise UserError(f"the guest run failed: {'; '.join(run.failures)} (see {out / 'guest'})")
    runs = overhead.parse_runs(out / "guest" / "overhead" / "runs.txt")
    s = overhead.summarize(runs)
    text = overhead.table(s)
    guest = (f"one CPU under -icount shift={meta['icount']} ({2 ** meta['icount']} ns per instruction)"
             if meta.get("icount") is not None else "TCG, two CPUs")
    head = (f"kernel {meta.get('kernel', '?')}, {meta.get('reps', '?')} reps x {meta.get('secs', '?')} s, "
            f"guest {guest}, host load {meta.get('load_before', '?')} -> {meta.get('load_after', '?')}")
    (out / "report.md").write_text(f"# CPU cost per request\n\n{head}\n\n{text}\n")
    print(head)
    print(text)
    return 0


