"""``iolab kernel compare``: the simulator against the kernel on the same disk
model and the same workloads.

For each disk (default ``hp97560`` and ``modern7200``) one guest boots with an
``iolab emu`` disk of that model (one request at a time, the model's timing,
every request logged) and runs every workload under every elevator,
``--reps`` times, in an interleaved order (repetition-major). The same
workloads (:mod:`.workloads`) run in the simulator on the same preset, one
seed per repetition. Before that, one boot on a zero-latency emulated disk
measures the guest's own time per request (the gap between the emulator's
reply and the next request's arrival), which the simulator takes as a
measured input (``[disk] host_overhead_us``, see docs/kernel.md).

Everything lands in the output directory: the guest runs (fio JSON, the
module's counters, the emulator's log cut into runs) and ``compare.json`` /
``report.md`` with, per disk, workload and elevator, the kernel's and the
simulator's throughput (mean and 95% interval over repetitions), p50/p99
latency and anticipation counters, their difference, and an equivalence test
(two one-sided Welch tests, margin ±5%) on throughput.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from iolab.cli.errors import UserError
from iolab.kernel import testbed
from iolab.kernel.workloads import WORKLOADS, Workload, fio_job, sim_workload

DISKS = ["hp97560", "modern7200"]
ELEVATORS = ["none", "mq-deadline", "anticipatory", "wpcas"]
MARGIN = 0.05


def register(sub) -> None:
    c = sub.add_parser(
        "compare",
        help="the simulator against the kernel on an emulated disk",
        description="Run the comparison workloads in a QEMU guest on an `iolab emu` disk and in the "
                    "simulator on the same disk model; report both side by side.",
    )
    c.add_argument("--disks", default=",".join(DISKS), metavar="LIST", help=f"default {','.join(DISKS)}")
    c.add_argument("--workloads", default=",".join(WORKLOADS), metavar="LIST",
                   help=f"default {','.join(WORKLOADS)}")
    c.add_argument("--elevators", default=",".join(ELEVATORS), metavar="LIST",
                   help=f"default {','.join(ELEVATORS)}")
    c.add_argument("--reps", type=int, default=3, metavar="N", help="repetitions (default 3)")
    c.add_argument("--runtime", type=int, default=20, metavar="S", help="seconds per run (default 20)")
    c.add_argument("-o", "--output", default="kernel-compare", metavar="DIR", help="output directory")
    c.add_argument("--report", metavar="DIR", help="analyse a finished comparison in DIR again (no guest)")
    c.add_argument("--overhead-us", type=float, metavar="US",
                   help="skip the zero-latency boot and use this guest time per request")
    c.add_argument("--repo", metavar="DIR", help="the iolab checkout (default: found)")
    c.set_defaults(func=run_compare)


def _list(value: str, known, what: str) -> list[str]:
    items = [x.strip() for x in value.split(",") if x.strip()]
    bad = [x for x in items if x not in known]
    if bad or not items:
        raise UserError(f"--{what}: unknown {', '.join(bad) or '(empty)'}; known: {', '.join(known)}")
    return items


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


# ---------------------------------------------------------------- emulator


class Emulator:
    """``iolab emu`` serving one disk to the guest, its log in ``log``."""

    def __init__(self, disk: str, image: Path, socket: Path, log: Path, zero_latency: bool = False):
        self.socket = socket
        self.log = log
        cmd = [sys.executable, "-m", "iolab", "emu", "--disk", disk, "--image", str(image),
               "--socket", str(socket), "--log", str(log), "--no-sync"]
        if zero_latency:
            cmd.append("--zero-latency")
        if socket.exists():
            socket.unlink()
        self.out = open(log.with_suffix(".emu.txt"), "w")
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not socket.exists():
            if self.proc.poll() is not None:
                raise UserError(f"iolab emu exited at start: {log.with_suffix('.emu.txt').read_text().strip()}")
            if time.monotonic() > deadline:
                self.stop()
                raise UserError("iolab emu did not open its socket within 60 s")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()


def _capacity_sectors(disk: str) -> int:
    from iolab import _iolab

    return int(json.loads(_iolab.wpcas_seek_tunables(disk))["capacity_sectors"])


# ---------------------------------------------------------------- guest side


@dataclass
class Plan:
    disk: str
    runs: list[tuple[int, str, str, int]]  # id, workload, elevator, rep


def make_plan(disk: str, workloads: list[str], elevators: list[str], reps: int) -> Plan:
    runs, n = [], 0
    for rep in range(reps):
        for wl in workloads:
            for el in elevators:
                runs.append((n, wl, el, rep))
                n += 1
    return Plan(disk, runs)


def write_share(share: Path, plan: Plan, runtime: int, capacity: int, wpcas: dict[str, int]) -> None:
    """The files guest/compare.sh reads."""
    (share / "jobs").mkdir(parents=True, exist_ok=True)
    for wl in sorted({r[1] for r in plan.runs}):
        (share / "jobs" / f"{wl}.fio").write_text(fio_job(WORKLOADS[wl], capacity, runtime))
    (share / "plan.txt").write_text("".join(f"{i} {wl} {el}\n" for i, wl, el, _ in plan.runs))
    (share / "disk.conf").write_text(f"marker_sector {capacity - 2048}\n")
    (share / "wpcas.conf").write_text("".join(f"{k} {v}\n" for k, v in wpcas.items()))


def run_disk(repo: Path, out: Path, disk: str, plan: Plan, runtime: int, zero_latency: bool = False) -> Path:
    """One boot on an emulated ``disk``; returns the guest's run directory."""
    from iolab import _iolab

    seek = json.loads(_iolab.wpcas_seek_tunables(disk))
    share = out / ("zero-latency" if zero_latency else disk)
    share.mkdir(parents=True, exist_ok=True)
    write_share(share, plan, runtime, seek["capacity_sectors"], seek["tunables"])
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"iolab-compare-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    image = work / f"{disk}.img"
    emu = Emulator(disk, image, work / f"{disk}.sock", share / "emu.csv", zero_latency=zero_latency)
    try:
        per_run = runtime + 15
        run = testbed.boot(repo, share, "compare.sh", [], nbd=emu.socket,
                           timeout_s=300 + len(plan.runs) * per_run * 2)
    finally:
        emu.stop()
        image.unlink(missing_ok=True)
    if not run.ok:
        raise UserError(f"the guest run on {disk} failed: {'; '.join(run.failures)} (see {share})")
    return share


# ---------------------------------------------------------------- results


def fio_summary(path: Path) -> dict:
    """Throughput (MB/s, 10^6 bytes) and total-latency percentiles of a run."""
    data = json.loads(path.read_text())
    job = data["jobs"][0]
    bw = sum(job[d]["bw_bytes"] for d in ("read", "write"))
    ios = sum(job[d]["total_ios"] for d in ("read", "write"))
    pct = {}
    for key, q in (("p50", "50.000000"), ("p99", "99.000000")):
        vals = [(job[d]["total_ios"], job[d].get("lat_ns", {}).get("percentile", {}).get(q))
                for d in ("read", "write") if job[d]["total_ios"]]
        vals = [(n, v) for n, v in vals if v is not None]
        # two directions: the larger percentile (a bound; reads dominate every workload here)
        pct[key] = max(v for _, v in vals) / 1e6 if vals else math.nan
    return {"throughput_mb_s": bw / 1e6, "iops": ios / (job["job_runtime"] / 1e3),
            "p50_ms": pct["p50"], "p99_ms": pct["p99"]}


def stats_file(path: Path) -> dict:
    out = {}
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2:
                out[parts[0]] = int(parts[1])
    return out


@dataclass
class Side:
    """Repetitions of one configuration on one side."""

    throughput: list[float] = field(default_factory=list)
    p50: list[float] = field(default_factory=list)
    p99: list[float] = field(default_factory=list)
    antic: list[tuple[int, int, int]] = field(default_factory=list)


def mean_ci(xs: list[float]) -> tuple[float, float]:
    from scipy import stats

    xs = [x for x in xs if not math.isnan(x)]
    if not xs:
        return math.nan, math.nan
    m = sum(xs) / len(xs)
    if len(xs) < 2:
        return m, math.nan
    return m, float(stats.t.ppf(0.975, len(xs) - 1) * stats.tstd(xs) / math.sqrt(len(xs)))


def tost(a: list[float], b: list[float], margin: float = MARGIN) -> float:
    """p-value of two one-sided Welch tests that mean(b)/mean(a) - 1 lies
    within ±margin (relative to a's mean). Small p: equivalent."""
    from scipy import stats

    if len(a) < 2 or len(b) < 2:
        return math.nan
    ma = sum(a) / len(a)
    delta = margin * ma
    lo = stats.ttest_ind([x + delta for x in b], a, equal_var=False, alternative="greater").pvalue
    hi = stats.ttest_ind([x - delta for x in b], a, equal_var=False, alternative="less").pvalue
    return float(max(lo, hi))


# ---------------------------------------------------------------- emulator log


def cut_log(share: Path, plan: Plan, capacity: int) -> dict[int, dict]:
    """Per run, what the emulated disk saw between the run's two markers."""
    import pandas as pd

    log = pd.read_csv(share / "emu.csv", comment="#")
    marker = capacity - 2048
    is_mark = (log["op"] == "read") & (log["nr_sectors"] == 1) & (log["sector"] >= marker) & \
        (log["sector"] < marker + 2 * len(plan.runs) + 2)
    marks = {int(s): i for i, s in zip(log.index[is_mark], log["sector"][is_mark])}
    out = {}
    for rid, *_ in plan.runs:
        a, b = marks.get(marker + 2 * rid), marks.get(marker + 2 * rid + 1)
        if a is None or b is None:
            continue
        rows = log.loc[a + 1:b - 1]
        rows = rows[rows["op"].isin(["read", "write"])]
        if rows.empty:
            continue
        span = rows["complete_ns"].max() - rows["arrival_ns"].min()
        gaps = (rows["arrival_ns"].values[1:] - rows["reply_ns"].values[:-1]) / 1e3
        out[rid] = {
            "requests": int(len(rows)),
            "mean_kb": float(rows["length"].mean() / 1024),
            "utilization": float(rows["service_ns"].sum() / span) if span > 0 else math.nan,
            "mean_service_ms": float(rows["service_ns"].mean() / 1e6),
            "mean_seek_cylinders": float(rows["seek_cylinders"].mean()),
            "median_gap_us": float(pd.Series(gaps).median()) if len(gaps) else math.nan,
        }
    return out


def zero_latency_overhead_us(share: Path) -> dict[str, float]:
    """The guest's time per request on a zero-latency disk: the median gap
    between the emulator's reply and the next request's arrival, per
    elevator, for the one-process workload (``zl1``) of the plan."""
    import pandas as pd

    log = pd.read_csv(share / "emu.csv", comment="#")
    plan = [line.split() for line in (share / "plan.txt").read_text().splitlines() if line.strip()]
    cap = int((share / "disk.conf").read_text().split()[1]) + 2048
    p = Plan("zero-latency", [(int(i), wl, el, 0) for i, wl, el in plan])
    cuts = cut_log(share, p, cap)
    out: dict[str, list[float]] = {}
    for rid, wl, el, _ in p.runs:
        if rid in cuts:
            out.setdefault(el, []).append(cuts[rid]["median_gap_us"])
    _ = log
    return {el: float(sum(v) / len(v)) for el, v in out.items()}
