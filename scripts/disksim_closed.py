"""`make bench`, third part: issue 12's closed random load on the HP C3323A,
the simulator core beside DiskSim 4.0 on the same machine, interleaved.

The load: 8 processes, each waiting for its 4 KiB random read and issuing
the next at once (no think time), over the whole of DiskSim's HP C3323A
(`data/disksim/hp_c3323a.parv`). iolab runs it with `iolab-sim-bench
--workload 3` (one core, the core alone: no Python); DiskSim runs the same
drive from the same `.parv` with its own synthetic generator in place of
the validation trace: 8 closed generators ("time-critical" requests, the
process waits for each), reads only, 8 blocks each on 8-block boundaries,
uniform over the disk, FCFS in the driver as the `.parv` says.

Also the whole command as a user runs it: `iolab run` of the same load
(a spec on `hp_c3323a.parv`, `placement = "shared"`) for noop (FIFO, as
DiskSim's driver), AS and WPCAS, start-up and report included, since
DiskSim's rows time its whole command too.

Prints figures, asserts nothing (docs/bench.md). DISKSIM=/path/to/disksim
(several builds: separated by ':') runs DiskSim in every round beside iolab
(the order alternating between rounds) and gives each row the ratio of
DiskSim's time to its own in each round, median and range, by CPU time and
by the clock, and each goal its verdict from this run; without it only
DiskSim's recorded figure is printed, marked as recorded, with its date
and build.

Usage: python scripts/disksim_closed.py [--requests N] [--rounds R] [--no-command] [SCHEDULER ...]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "disksim"
BENCH = ROOT / "target" / "release" / "iolab-sim-bench"
# DiskSim 4.0 on this load, as recorded (printed only when no DISKSIM is
# given, and marked so).
RECORDED_DISKSIM = (277e3, "2026-11-28, this 2-core VM quiet (load < 1), DiskSim 4.0 64-bit -O2 built from "
                    "benh/disksim with the fixes in BENCH.md")
# Issue 28's goals: the core's requests/s on one core (and, for AS, the
# multiple of DiskSim's CPU time); the whole `iolab run` against DiskSim.
GOALS = {"as": (3e6, 11.0), "wpcas": (2e6, None)}
COMMAND_GOAL = 10.0
IOLAB = [sys.executable, "-m", "iolab"]

SPEC = """name = "closed random load, HP C3323A"
[disk]
diskspecs = "{parv}"
[[scheduler]]
name = "{sched}"
[workload]
kind = "processes"
placement = "shared"
[[workload.group]]
count = 8
pattern = "random"
request_kb = 4
file_mb = 1003
[run]
max_requests = {requests}
"""

GENERATOR = """disksim_synthgen {{
   Storage capacity per device = {capacity},
   devices = [ disk0 ],
   Blocking factor = 8,
   Probability of sequential access = 0.0,
   Probability of local access = 0.0,
   Probability of read access = 1.0,
   Probability of time-critical request = 1.0,
   Probability of time-limited request = 0.0,
   Time-limited think times = [ normal, 30.0, 100.0 ],
   General inter-arrival times = [ exponential, 0.0, 0.0 ],
   Sequential inter-arrival times = [ normal, 0.0, 0.0 ],
   Local inter-arrival times = [ exponential, 0.0, 0.0 ],
   Local distances = [ normal, 0.0, 40000.0 ],
   Sizes = [ uniform, 8.0, 8.0 ]
}}"""


def disksim_parv(requests: int) -> str:
    """hp_c3323a.parv with its synthetic-workload block replaced by the
    closed load (the validation run ignores that block: it replays the
    trace). Everything else, drive, bus and controller, is the file's."""
    parv = (DATA / "hp_c3323a.parv").read_text()
    head, _, _ = parv.partition("disksim_synthio Synthio {")
    # One processor per generator, as DiskSim's own synthclosed.parv does.
    head = re.sub(r"Number of processors\s*=\s*\d+", "Number of processors = 8", head)
    # The drive's 2,056,008 sectors (DiskSim's Storage capacity is in blocks).
    gens = ",\n".join([GENERATOR.format(capacity=2056008)] * 8)
    return (head + "disksim_synthio Synthio {\n"
            f"   Number of I/O requests to generate = {requests},\n"
            "   Maximum time of trace generated = 1000000000.0,\n"
            "   System call/return with each request = 0,\n"
            "   Think time from call to request = 0.0,\n"
            "   Think time from request to return = 0.0,\n"
            f"Generators = [\n{gens}\n] # end of generator list\n}} # end of synthetic workload spec\n")


def timed(cmd: list[str], cwd: Path | None = None) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system, from the children's
    rusage: runs are one at a time) and standard output of `cmd`. CPU time
    is what steal and other load change least on a shared virtual machine;
    the wall time is what a user waits."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    except OSError as e:
        raise SystemExit(f"disksim_closed: cannot run {cmd[0]}: {e.strerror}") from None
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode != 0:
        raise SystemExit(f"disksim_closed: {' '.join(cmd)} failed (exit {p.returncode}): {p.stderr.strip()[-300:]}")
    return wall, cpu, p.stdout


def run_disksim(disksim: str, work: Path) -> tuple[float, float, float]:
    """Wall and CPU seconds and DiskSim's mean response time (ms) of one run."""
    wall, cpu, _ = timed([disksim, "closed.parv", "closed.outv", "ascii", "0", "1"], cwd=work)
    outv = work / "closed.outv"
    found = outv.exists() and re.search(r"IOdriver Response time average:\s*([\d.]+)", outv.read_text(errors="replace"))
    if not found:
        raise SystemExit(f"disksim_closed: {disksim} wrote no DiskSim output (closed.outv with a response time)")
    outv.unlink()
    return wall, cpu, float(found.group(1))


def run_iolab(sched: str, requests: int) -> tuple[float, float, float]:
    """Wall and CPU seconds and mean response time (ms) of one
    iolab-sim-bench run (the process as a whole, as DiskSim's). The
    response time follows from Little's law: 8 requests are always
    outstanding, so R = 8 x simulated time / requests."""
    wall, cpu, out = timed([str(BENCH), "--requests", str(requests), "--workload", "3", sched])
    row = [ln for ln in out.splitlines() if "C3323A" in ln][-1].split()
    return wall, cpu, 8 * float(row[-1]) / requests * 1000


def run_command(spec: Path) -> tuple[float, float]:
    """Wall and CPU seconds of `iolab run SPEC -q`, the whole command (its
    table on the terminal; no report directory, as DiskSim writes one text
    file)."""
    wall, cpu, _ = timed(IOLAB + ["run", str(spec), "-q"])
    return wall, cpu


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-command", action="store_true", help="time the core only, not `iolab run`")
    ap.add_argument("schedulers", nargs="*", default=["noop", "deadline", "as", "cfq", "wpcas"])
    ap.add_argument("--commands", default="noop,as,wpcas",
                    help="schedulers whose whole `iolab run` is timed too (comma-separated; those among SCHEDULER)")
    a = ap.parse_args()
    if a.requests < 1 or a.rounds < 1:
        ap.error("--requests and --rounds must be at least 1")
    if not BENCH.exists():
        raise SystemExit(f"disksim_closed: {BENCH} is missing: cargo build --release -p iolab-sim --bin iolab-sim-bench")
    builds = [b for b in os.environ.get("DISKSIM", "").split(os.pathsep) if b]
    commands = [] if a.no_command else [s for s in a.commands.split(",") if s in a.schedulers]
    # name -> [(wall s, cpu s)] per round, in round order.
    runs: dict[str, list[tuple[float, float]]] = {s: [] for s in a.schedulers}
    runs.update({f"iolab run {s}": [] for s in commands})
    resp: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="iolab-dsclosed-") as tmp:
        work = Path(tmp)
        for name in ("hp_c3323a_validate.diskspecs", "hp_c3323a_validate.model", "hp_c3323a_validate.seek",
                     "statdefs"):
            shutil.copy(DATA / name, work)
        (work / "closed.parv").write_text(disksim_parv(a.requests))
        specs = {}
        for s in commands:
            specs[s] = work / f"run-{s}.toml"
            specs[s].write_text(SPEC.format(parv=DATA / "hp_c3323a.parv", sched=s, requests=a.requests))
        labels = {b: f"DiskSim ({Path(b).name})" if len(builds) > 1 else "DiskSim 4.0" for b in builds}
        for b in builds:
            runs[labels[b]] = []
        print(f"closed random load, HP C3323A, 8 processes x 4 KiB reads, {a.requests:,} requests per run, "
              f"{a.rounds} rounds interleaved ({load()}):")
        print("  rows: the core alone (iolab-sim-bench --workload 3, one core, no Python) by scheduler; "
              "`iolab run SCHED` the whole command; DiskSim its whole command")
        for b in builds:
            print(f"  {labels[b]}: {build_of(b)}")
        for r in range(a.rounds):
            def ours() -> None:
                for s in a.schedulers:
                    wall, cpu, resp[s] = run_iolab(s, a.requests)
                    runs[s].append((wall, cpu))
                for s in commands:
                    runs[f"iolab run {s}"].append(run_command(specs[s]))

            def theirs() -> None:
                for b in builds:
                    wall, cpu, resp[labels[b]] = run_disksim(b, work)
                    runs[labels[b]].append((wall, cpu))
            # The order alternates, so that a change of load mid-round
            # falls on both sides alike over the rounds.
            for part in ((ours, theirs) if r % 2 == 0 else (theirs, ours)):
                part()
        print(f"  ({load()} at the end)")
    n = a.requests
    # The reference: the DiskSim build with the least median CPU time.
    ref = min((labels[b] for b in builds), key=lambda k: statistics.median(c for _, c in runs[k])) if builds else None
    print("  requests/s of wall time (best, median) and of CPU time (median); x DiskSim: DiskSim's time over the row's")
    print("  in each round, median (min-max) over the rounds, by CPU time and by the clock")
    print(f"  {'':<22} {'wall best':>11} {'median':>11} {'CPU median':>11} {'mean resp ms':>13}  "
          f"{'x DiskSim (CPU)':>19}  {'x DiskSim (wall)':>19}")
    ratios: dict[str, list[float]] = {}
    wall_ratios: dict[str, list[float]] = {}
    for name, rs in runs.items():
        walls, cpus = [n / w for w, _ in rs], [n / c for _, c in rs]
        cells = [f"{'-':>19}", f"{'-':>19}"]
        if ref:
            ratios[name] = [rc / c for (_, rc), (_, c) in zip(runs[ref], rs)]
            wall_ratios[name] = [rw / w for (rw, _), (w, _) in zip(runs[ref], rs)]
            cells = [f"{statistics.median(x):6.1f}x ({min(x):.1f}-{max(x):.1f})".rjust(19)
                     for x in (ratios[name], wall_ratios[name])]
        shown = f"{resp[name]:>13.2f}" if name in resp else f"{'(same)':>13}"
        print(f"  {name:<22} {max(walls):>11,.0f} {statistics.median(walls):>11,.0f} {statistics.median(cpus):>11,.0f}"
              f" {shown}  {cells[0]}  {cells[1]}")
    for s, (goal, multiple) in GOALS.items():
        if s not in runs:
            continue
        med = statistics.median(n / w for w, _ in runs[s])
        print(f"  goal {s} core >= {goal / 1e6:.0f} M requests/s on one core: median {med / 1e6:.2f} M, best "
              f"{max(n / w for w, _ in runs[s]) / 1e6:.2f} M: {verdict(med >= goal, f'{100 * (1 - med / goal):.0f}% short')}")
        if multiple and ref:
            m = statistics.median(ratios[s])
            print(f"  goal {s} core >= {multiple:.0f}x DiskSim's CPU time: {m:.1f}x: "
                  f"{verdict(m >= multiple, f'{100 * (1 - m / multiple):.0f}% short')}")
    for s in commands:
        name = f"iolab run {s}"
        if ref:
            m = statistics.median(wall_ratios[name])
            print(f"  goal {name} >= {COMMAND_GOAL:.0f}x DiskSim end to end (wall, median of the rounds): {m:.1f}x: "
                  f"{verdict(m >= COMMAND_GOAL, f'{100 * (1 - m / COMMAND_GOAL):.0f}% short')}")
    if not builds:
        rate, said = RECORDED_DISKSIM
        print(f"  DiskSim not measured: give DISKSIM=/path/to/disksim (DiskSim 4.0; docs/bench.md says how to build "
              f"it). RECORDED, not measured now: {rate / 1e3:.0f} k requests/s ({said})")


def verdict(ok: bool, short: str) -> str:
    return "met" if ok else f"NOT met ({short})"


def build_of(disksim: str) -> str:
    """What DISKSIM names: its path and, when DiskSim's source tree is
    beside it, the optimisation its Makefile builds with."""
    exe = Path(disksim).resolve()
    mk = exe.parent / "Makefile"
    if mk.exists():
        found = re.search(r"^CC\s*=\s*\S+\s+(.*)$", mk.read_text(errors="replace"), re.M)
        if found:
            return f"{exe}, built with {found.group(1).split(' -W')[0].strip()}"
    return str(exe)


if __name__ == "__main__":
    main()
