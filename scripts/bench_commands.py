"""`make bench`, second part: the `iolab` command timed as a user runs it.

Prints figures, asserts nothing (docs/bench.md):
- start-up: wall time of a tiny `iolab run` (median of 15), and whether it
  imported pandas, scipy, numpy or matplotlib; beside it Python's own floor
  (`python -c pass`, importing the native module) and `iolab --help`;
- end to end at one million requests: `iolab validate` on the HP C2247A
  validation trace repeated to 1,009,899 requests, and `iolab run` of a
  closed random load on the same disk; beside them DiskSim 4.0 on the same
  trace when DISKSIM=/path/to/disksim is given (interleaved, 3 rounds),
  else DiskSim's figure recorded in issue 12, labelled as recorded;
- memory (max RSS): `iolab run` with 16 and 4,096 processes at 10^5, 10^6
  and 10^7 requests.

Usage: python scripts/bench_commands.py [--quick]   (DISKSIM=... in the environment)
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "disksim"
IOLAB = [sys.executable, "-m", "iolab"]
# DiskSim 4.0 -O2 on this machine, HP C2247A trace repeated to 1 M requests
# (issue 12, measured by the reviewer, interleaved with iolab).
RECORDED_DISKSIM_REQ_S = 119_000


def timed_rss(cmd: list[str], cwd: Path | None = None, out: list[str] | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of `cmd` (its standard output is
    appended to `out` when given). The peak is read from /proc/PID/status
    (VmHWM) while it runs: the rusage of a child counts the memory of this
    (forking) process too."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE if out is not None else subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    peak = 0
    status = Path(f"/proc/{p.pid}/status")
    while p.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except (OSError, ValueError):
            pass
        time.sleep(0.005)
    wall = time.perf_counter() - t0
    if out is not None and p.stdout:
        out.append(p.stdout.read().decode())
    err = p.stderr.read().decode() if p.stderr else ""
    if p.returncode != 0:
        raise SystemExit(f"bench: {' '.join(map(str, cmd))} failed:\n{err[-2000:]}")
    return wall, peak


def load() -> str:
    return "load average %.2f %.2f %.2f" % os.getloadavg()


SPEC = """
[disk]
diskspecs = "{diskspecs}"
[[scheduler]]
name = "{sched}"
[workload]
kind = "processes"
[[workload.group]]
count = {procs}
pattern = "random"
request_kb = 4
file_mb = {file_mb}
[run]
max_requests = {requests}
"""


def write_spec(tmp: Path, name: str, requests: int, procs: int = 8, sched: str = "noop") -> Path:
    p = tmp / f"{name}.toml"
    file_mb = round(800 / procs, 3)
    p.write_text(SPEC.format(diskspecs=DATA / "hp_c2247a.diskspecs", sched=sched, procs=procs,
                             file_mb=file_mb, requests=requests))
    return p


def median_ms(cmd: list[str], rounds: int) -> str:
    walls = [timed_rss(cmd)[0] for _ in range(rounds)]
    return f"median {statistics.median(walls) * 1000:.0f} ms (min {min(walls) * 1000:.0f})"


def startup(tmp: Path, rounds: int) -> None:
    spec = write_spec(tmp, "tiny", 100, procs=2)
    print(f"start-up ({load()}), {rounds} runs each:")
    print(f"  python -c pass (the floor): {median_ms([sys.executable, '-c', 'pass'], rounds)}; "
          f"import iolab._iolab: {median_ms([sys.executable, '-c', 'import iolab._iolab'], rounds)}; "
          f"iolab --help: {median_ms(IOLAB + ['--help'], rounds)}")
    walls = [timed_rss(IOLAB + ["run", str(spec), "-q"])[0] for _ in range(rounds)]
    probe = ("import sys, runpy; sys.argv = ['iolab', 'run', %r, '-q']\n"
             "try:\n    runpy.run_module('iolab', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "heavy = [m for m in ('pandas', 'scipy', 'numpy', 'matplotlib') if m in sys.modules]\n"
             "print(','.join(heavy) or 'none')" % str(spec))
    heavy = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip().splitlines()
    print(f"  `iolab run` of 100 requests: median {statistics.median(walls) * 1000:.0f} ms "
          f"(min {min(walls) * 1000:.0f}, {rounds} runs); heavy modules imported: {heavy[-1] if heavy else '?'}")


def end_to_end(tmp: Path, rounds: int) -> None:
    trace = tmp / "c2247a-1m.trace"
    lines = (DATA / "hp_c2247a.trace").read_text()
    reps = 101
    trace.write_text(lines * reps)
    n = lines.count("\n") * reps
    disksim = os.environ.get("DISKSIM")
    print(f"end to end, HP C2247A validation trace repeated to {n} requests ({load()}):")
    rows = []
    replay = []  # the native replay's own time, as `iolab validate` prints it
    for _ in range(rounds):
        said: list[str] = []
        w, rss = timed_rss(IOLAB + ["validate", "--diskspecs", str(DATA / "hp_c2247a.parv"), "--trace", str(trace)],
                           out=said)
        rows.append(("iolab validate", w, rss))
        found = re.search(r"replayed in (\d+) ms", said[0])
        if found:
            replay.append((w, int(found.group(1)) / 1000))
        if disksim:
            d = tmp / "ds"
            d.mkdir(exist_ok=True)
            for f in DATA.iterdir():
                shutil.copy(f, d)
            statdefs = Path(disksim).resolve().parent / "statdefs"
            if statdefs.exists():
                shutil.copy(statdefs, d)
            w, rss = timed_rss([disksim, "hp_c2247a.parv", "out.outv", "validate", str(trace), "0"], cwd=d)
            rows.append(("DiskSim 4.0 (DISKSIM)", w, rss))
    for name in dict.fromkeys(r[0] for r in rows):
        ws = [r[1] for r in rows if r[0] == name]
        rss = max(r[2] for r in rows if r[0] == name)
        print(f"  {name:<24} {n / min(ws):>12,.0f} requests/s  best {min(ws):.2f} s of {len(ws)}  max RSS {rss / 1024:.0f} MiB")
    if replay:
        w, native = min(replay)
        print(f"  of the best `iolab validate`: {native:.2f} s in the native replay (reading the trace, the "
              f"disk model, the statistics), {w - native:.2f} s the rest (start-up, the report)")
    best = min(r[1] for r in rows if r[0] == "iolab validate")
    ref = [r[1] for r in rows if r[0].startswith("DiskSim")]
    if ref:
        print(f"  ratio: iolab validate is {min(ref) / best:.1f}x DiskSim, measured side by side")
    else:
        print(f"  DiskSim 4.0 -O2, RECORDED (issue 12, not measured now): {RECORDED_DISKSIM_REQ_S:,} requests/s "
              f"-> iolab validate is {n / best / RECORDED_DISKSIM_REQ_S:.1f}x the recorded figure; "
              f"give DISKSIM=/path/to/disksim to measure it here")
    spec = write_spec(tmp, "run1m", 1_000_000)
    ws = [timed_rss(IOLAB + ["run", str(spec), "-q"]) for _ in range(rounds)]
    w = min(x[0] for x in ws)
    print(f"  iolab run, 8 closed random readers on the C2247A, noop, 10^6 requests: {1e6 / w:,.0f} requests/s "
          f"end to end (best {w:.2f} s of {rounds}), max RSS {max(x[1] for x in ws) / 1024:.0f} MiB; "
          f"{1e6 / w / RECORDED_DISKSIM_REQ_S:.1f}x DiskSim's recorded trace figure")
    print(f"  issue 12's goal, 10x DiskSim end to end: {10 * RECORDED_DISKSIM_REQ_S:,} requests/s")


def memory(tmp: Path, quick: bool) -> None:
    print(f"memory, `iolab run` max RSS ({load()}):")
    sizes = [100_000, 1_000_000] if quick else [100_000, 1_000_000, 10_000_000]
    for procs in (16, 4096):
        cells = []
        for req in sizes:
            w, rss = timed_rss(IOLAB + ["run", str(write_spec(tmp, f"m{procs}-{req}", req, procs=procs)), "-q"])
            cells.append(f"{req:>10,} requests: {rss / 1024:5.1f} MiB ({w:.1f} s)")
        print(f"  {procs:>5} processes: " + "; ".join(cells))


def main() -> None:
    quick = "--quick" in sys.argv
    with tempfile.TemporaryDirectory(prefix="iolab-bench-") as t:
        tmp = Path(t)
        startup(tmp, 5 if quick else 15)
        end_to_end(tmp, 1 if quick else 3)
        memory(tmp, quick)


if __name__ == "__main__":
    main()
