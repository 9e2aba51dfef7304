#!/usr/bin/env python3
"""Issue 23's "done when": `iolab compare --schedulers
as,kernel:anticipatory,wpcas,kernel:wpcas` on every workload preset, and
whether each pair (the Rust elevator, the module's C) gives the same
figures, run by run.

    scripts/kernel_pairs.py [--disks hp97560,modern7200] [--seeds 2]
                            [--duration 20] [--set KEY=VALUE ...]

Every field of a run's result is compared but the scheduler's name and
its tunables (which differ by construction: the module has no
`seek_model`). Prints a Markdown table and exits 1 if a pair differs.
docs/kernel.md shows its output.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

PAIRS = [("as", "kernel:anticipatory"), ("wpcas", "kernel:wpcas")]
IGNORED = {"scheduler", "tunables"}


def first_difference(a, b, path: str = "") -> str | None:
    """Where two JSON values first differ (None if they do not)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k in IGNORED and not path:
                continue
            d = first_difference(a.get(k), b.get(k), f"{path}.{k}" if path else k)
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} entries against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a} against {b}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--disks", default="hp97560,modern7200")
    ap.add_argument("--workloads", default="", help="comma-separated (default: every preset)")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--iolab", default=str(Path(__file__).resolve().parent.parent / ".venv/bin/iolab"))
    args = ap.parse_args()
    if args.workloads:
        workloads = args.workloads.split(",")
    else:
        out = subprocess.run([args.iolab, "presets", "--json"], check=True, capture_output=True, text=True).stdout
        workloads = [w["name"] for w in json.loads(out)["workloads"]]
    schedulers = ",".join(s for pair in PAIRS for s in pair)
    print("| disk | workload | " + " | ".join(f"{a} = {b}" for a, b in PAIRS) + " |")
    print("|---|---|" + "---|" * len(PAIRS))
    differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        for disk in args.disks.split(","):
            for w in workloads:
                out = Path(tmp) / f"{disk}-{w}.json"
                cmd = [args.iolab, "compare", "--disk", disk, "--workload", w, "--schedulers", schedulers,
                       "--seeds", str(args.seeds), "--duration", str(args.duration), "--json", str(out), "-q"]
                for s in args.set:
                    cmd += ["--set", s]
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
                runs = json.loads(out.read_text())["runs"]
                by = {(r["scheduler"], r["seed"]): r for r in runs}
                cells = []
                for a, b in PAIRS:
                    diffs = [(seed, first_difference(by[(a, seed)], by[(b, seed)]))
                             for (name, seed) in sorted(by) if name == a]
                    diffs = [(s, d) for s, d in diffs if d]
                    differ += bool(diffs)
                    cells.append("identical" if not diffs else
                                 f"differ on {len(diffs)} seed(s); seed {diffs[0][0]}: {diffs[0][1]}")
                print(f"| {disk} | {w} | " + " | ".join(cells) + " |", flush=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
