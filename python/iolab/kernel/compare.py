"""``iolab kernel compare``: the simulator against the kernel on the same disk
model and the same workloads.

For each disk (default ``hp97560`` and ``modern7200``) one guest boots with an
``iolab emu`` disk of that model (one request at a time, the model's timing,
every request logged) and runs every workload under every elevator,
``--reps`` times, in an interleaved order (repetition-major). The same
workloads (:mod:`.workloads`) run in the simulator on the same preset, one
seed per repetition. Before that, one boot on a zero-latency emulated disk
measures the guest's own time per request (the gap between the emulator's
reply and the next request's arrival, :func:`measure_host`), which the
simulator takes as measured inputs: ``[disk] host_overhead_us`` for the part
every request pays, extra think time for the part a process pays between
its completion and its next request (see docs/kernel.md).

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
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from iolab.cli.errors import UserError
from iolab.kernel import meta as kmeta
from iolab.kernel import testbed
from iolab.kernel.workloads import WORKLOADS, Workload, fio_job, sim_workload

DISKS = ["hp97560", "modern7200"]
ELEVATORS = ["none", "mq-deadline", "bfq", "kyber", "anticipatory", "wpcas"]
MARGIN = 0.05
# The workloads compared ((a) to (h) of docs/kernel.md); the zl* ones
# measure the guest on a zero-latency disk.
COMPARED = ["seqreaders", "randseq", "rwmix", "bufwrite", "aiowrite", "coop", "rtbe", "fsync"]
# The guest raises nr_requests to this after each switch (testbed/guest/
# lib.sh set_sched); the simulator's 6.1 elevators get the same.
GUEST_NR_REQUESTS = 64
MEASURE = ["zlt0", "zlt1", "zlt2", "zlaio8"]
# Percentiles of the guest's time between a reply and the next request.
GAP_PERCENTILES = (10, 50, 90, 99)
# A run whose length by the guest's clock and by the disk's differ by more
# than this did not keep one clock (docs/kernel.md).
CLOCK_TOLERANCE = 0.01
# How finely the distribution of those gaps is kept for the simulator.
GAP_QUANTILES = 100
# How the guest's time on top of a process's think time reaches the
# simulator: its mean, or its measured distribution (`samples`).
THINK_MODELS = ("mean", "samples")


def register(sub) -> None:
    c = sub.add_parser(
        "compare",
        help="the simulator against the kernel on an emulated disk",
        description="Run the comparison workloads in a QEMU guest on an `iolab emu` disk and in the "
                    "simulator on the same disk model; report both side by side.",
    )
    c.add_argument("--disks", default=",".join(DISKS), metavar="LIST", help=f"default {','.join(DISKS)}")
    c.add_argument("--workloads", default=",".join(COMPARED), metavar="LIST",
                   help=f"default {','.join(COMPARED)}")
    c.add_argument("--elevators", default=",".join(ELEVATORS), metavar="LIST",
                   help=f"default {','.join(ELEVATORS)}")
    c.add_argument("--reps", type=int, default=3, metavar="N", help="repetitions (default 3)")
    c.add_argument("--runtime", type=int, default=20, metavar="S", help="seconds per run (default 20)")
    c.add_argument("-o", "--output", default="kernel-compare", metavar="DIR", help="output directory")
    c.add_argument("--report", metavar="DIR", help="analyse a finished comparison in DIR again (no guest)")
    c.add_argument("--overhead-us", type=float, metavar="US",
                   help="skip the calibration boots and use this guest time per request")
    c.add_argument("--calibrate", choices=["idle", "zero"], default="idle",
                   help="measure the guest's own time per request on each compared disk's model, "
                        "where the guest idles between requests as in the comparison (idle, the "
                        "default), or once on a zero-latency disk (zero)")
    c.add_argument("--resim", action="store_true",
                   help="with -o DIR of a finished comparison: keep its kernel runs, calibrate again "
                        "(unless --overhead-us), run the simulator side again and report")
    c.add_argument("--trace", default="", metavar="LIST",
                   help="elevators whose kernel runs are traced with the blk tracer (block events and "
                        "the elevator's own messages, e.g. bfq's) into DIR/DISK/runs/ID.trace; "
                        "`iolab kernel bfqlog DIR` summarises bfq's")
    c.add_argument("--think", choices=THINK_MODELS, default="mean",
                   help="the guest's measured time on top of a process's think time, given to the "
                        "simulator as its mean (default) or as its measured distribution (samples)")
    c.add_argument("--keep-calibration", action="store_true",
                   help="with --resim: measure the guest's time per request again from the "
                        "calibration boots already in DIR instead of booting again")
    c.add_argument("--icount", type=int, metavar="SHIFT",
                   help="run the guest on QEMU's instruction counter, one CPU, 2**SHIFT ns per "
                        "instruction, its clock held to the host's: the guest's time per request "
                        "becomes a count of its instructions, not a share of the host (docs/kernel.md)")
    c.add_argument("--repo", metavar="DIR", help="the iolab checkout (default: found)")
    c.set_defaults(func=run_compare)


def _list(value: str, known, what: str) -> list[str]:
    items = [x.strip() for x in value.split(",") if x.strip()]
    bad = [x for x in items if x not in known]
    if bad or not items:
        raise UserError(f"--{what}: unknown {', '.join(bad) or '(empty)'}; known: {', '.join(known)}")
    return items


# ---------------------------------------------------------------- emulator


class Emulator:
    """``iolab emu`` serving one disk to the guest, its log in ``log``."""

    def __init__(self, disk: str, image: Path, socket: Path, log: Path, zero_latency: bool = False,
                 nice: int | None = None):
        self.socket = socket
        self.log = log
        # IOLAB_EMU: another iolab executable whose `emu` serves the disk
        base = [os.environ["IOLAB_EMU"]] if os.environ.get("IOLAB_EMU") else [sys.executable, "-m", "iolab"]
        if nice is not None:
            # every thread of the emulator at the guest's priority (testbed/run.sh)
            base = ["nice", "-n", str(nice), *base]
        cmd = [*base, "emu", "--disk", disk, "--image", str(image),
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


def write_share(share: Path, plan: Plan, runtime: int, capacity: int, wpcas: dict[str, int],
                trace: list[str] = ()) -> None:
    """The files guest/compare.sh reads."""
    (share / "jobs").mkdir(parents=True, exist_ok=True)
    for wl in sorted({r[1] for r in plan.runs}):
        (share / "jobs" / f"{wl}.fio").write_text(fio_job(WORKLOADS[wl], capacity, runtime))
    (share / "plan.txt").write_text("".join(f"{i} {wl} {el}\n" for i, wl, el, _ in plan.runs))
    (share / "disk.conf").write_text(f"marker_sector {capacity - 2048}\n")
    (share / "wpcas.conf").write_text("".join(f"{k} {v}\n" for k, v in wpcas.items()))
    (share / "trace.conf").unlink(missing_ok=True)
    if trace:
        (share / "trace.conf").write_text("".join(f"{el}\n" for el in trace))


def run_disk(repo: Path, out: Path, disk: str, plan: Plan, runtime: int, zero_latency: bool = False,
             share_name: str | None = None, trace: list[str] = (), icount: int | None = None) -> Path:
    """One boot on an emulated ``disk``; returns the guest's run directory
    (``out/share_name``, by default the disk's name or ``zero-latency``)."""
    from iolab import _iolab

    seek = json.loads(_iolab.wpcas_seek_tunables(disk))
    share = out / (share_name or ("zero-latency" if zero_latency else disk))
    share.mkdir(parents=True, exist_ok=True)
    write_share(share, plan, runtime, seek["capacity_sectors"], seek["tunables"], trace)
    boot_on_emulator(repo, share, disk, len(plan.runs) * (runtime + 15), zero_latency=zero_latency, icount=icount)
    return share


def boot_on_emulator(repo: Path, share: Path, disk: str, runs_s: float, zero_latency: bool = False,
                     icount: int | None = None) -> None:
    """Boot the guest once with ``guest/compare.sh`` over the files already
    in ``share`` (:func:`write_share` or its like), on an ``iolab emu``
    disk of model ``disk`` whose log goes to ``share/emu.csv``. ``runs_s``:
    the runs' expected length in all, for the timeout (twice it, plus the
    boot)."""
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"iolab-compare-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    image = work / f"{disk}.img"
    emu = Emulator(disk, image, work / f"{disk}.sock", share / "emu.csv", zero_latency=zero_latency,
                   nice=testbed.guest_nice() if icount is not None else None)
    try:
        run = testbed.boot(repo, share, "compare.sh", [], nbd=emu.socket,
                           timeout_s=int((900 if icount is not None else 300) + runs_s * 2),
                           icount=icount)
    finally:
        emu.stop()
        image.unlink(missing_ok=True)
    if not run.ok:
        raise UserError(f"the guest run on {disk} failed: {'; '.join(run.failures)} (see {share})")


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
    fio_mb_s: list[float] = field(default_factory=list)  # the kernel's, as fio counts it


def mean_ci(xs: list[float]) -> tuple[float, float]:
    """Mean and 95% t half-width (NaN for fewer than two values)."""
    import numpy as np

    from iolab.report import ci95

    xs = [x for x in xs if not math.isnan(x)]
    if not xs:
        return math.nan, math.nan
    m = sum(xs) / len(xs)
    return m, (ci95(np.array(xs)) if len(xs) > 1 else math.nan)


def tost(a: list[float], b: list[float], margin: float = MARGIN) -> float:
    """p-value of two one-sided Welch tests that mean(b)/mean(a) - 1 lies
    within ±margin (relative to a's mean). Small p: equivalent."""
    from scipy import stats

    if len(a) < 2 or len(b) < 2:
        return math.nan
    ma = sum(a) / len(a)
    delta = margin * ma
    with warnings.catch_warnings():
        # the simulator's repetitions can be identical (a deterministic
        # workload): scipy warns about the zero variance, the test stands
        warnings.simplefilter("ignore", RuntimeWarning)
        lo = stats.ttest_ind([x + delta for x in b], a, equal_var=False, alternative="greater").pvalue
        hi = stats.ttest_ind([x - delta for x in b], a, equal_var=False, alternative="less").pvalue
    return float(max(lo, hi))


def welch_p(a: list[float], b: list[float]) -> float:
    """Two-sided Welch test p-value (NaN for fewer than two values a side)."""
    from scipy import stats

    if len(a) < 2 or len(b) < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p = stats.ttest_ind(a, b, equal_var=False).pvalue
    return float(p) if not math.isnan(p) else (0.0 if sum(a) / len(a) != sum(b) / len(b) else 1.0)


def holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (NaN stays NaN)."""
    order = sorted((p, i) for i, p in enumerate(ps) if not math.isnan(p))
    out = [math.nan] * len(ps)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * p))
        out[i] = running
    return out


# The built-in elevators of Linux 6.1 (issue 13 asks for their ranking), and
# every elevator of the run.
BUILTIN = ["none", "mq-deadline", "bfq", "kyber"]


def ranking_sets(elevators: list[str]) -> dict[str, list[str]]:
    sets = {}
    builtin = [e for e in elevators if e in BUILTIN]
    if len(builtin) >= 2:
        sets["6.1 built-in"] = builtin
    if len(elevators) > len(builtin) and len(elevators) >= 2:
        sets["all"] = list(elevators)
    return sets


def rankings(rows: list[dict], elevators: list[str]) -> list[dict]:
    """Per disk and workload: the elevators ordered by the kernel's mean
    throughput and by the simulator's, and for every pair the kernel tells
    apart (Welch, Holm-corrected over the workload's pairs, p < 0.05)
    whether the simulator orders it the same way. Pairs the kernel cannot
    tell apart are not counted either way: their order is noise."""
    out = []
    groups: dict[tuple[str, str], dict[str, dict]] = {}
    for r in rows:
        if r["elevator"] in elevators:
            groups.setdefault((r["disk"], r["workload"]), {})[r["elevator"]] = r
    for (disk, wl), by_el in groups.items():
        els = [e for e in elevators if e in by_el]
        km = {e: by_el[e]["kernel_mb_s"][0] for e in els}
        sm = {e: by_el[e]["sim_mb_s"][0] for e in els}
        pairs = [(a, b) for i, a in enumerate(els) for b in els[i + 1:]]
        kp = holm([welch_p(by_el[a]["kernel_runs_mb_s"], by_el[b]["kernel_runs_mb_s"]) for a, b in pairs])
        sp = holm([welch_p(by_el[a]["sim_runs_mb_s"], by_el[b]["sim_runs_mb_s"]) for a, b in pairs])
        separated, alike, unlike = [], [], []
        for (a, b), p, q in zip(pairs, kp, sp):
            if math.isnan(p) or p >= 0.05:
                continue
            hi, lo = (a, b) if km[a] > km[b] else (b, a)
            separated.append((hi, lo))
            if sm[hi] > sm[lo]:
                alike.append((hi, lo))
            else:
                unlike.append((hi, lo, "tie" if not q < 0.05 else "reversed"))
        korder = sorted(els, key=lambda e: -km[e] if not math.isnan(km[e]) else math.inf)
        sorder = sorted(els, key=lambda e: -sm[e] if not math.isnan(sm[e]) else math.inf)
        out.append({"disk": disk, "workload": wl, "kernel_order": korder, "sim_order": sorder,
                    "same_order": korder == sorder, "separated": separated, "alike": alike,
                    "unlike": unlike})
    return out


# ---------------------------------------------------------------- emulator log


def cut_log(share: Path, plan: Plan, capacity: int) -> dict[int, dict]:
    """Per run, what the emulated disk saw between the run's two markers.
    A marker block read twice (the same run interrupted?) keeps its last."""
    import numpy as np
    import pandas as pd

    log = pd.read_csv(share / "emu.csv", comment="#")
    marker = capacity - 2048
    # the (2*ID)th and (2*ID+1)th 4 KiB block from marker_sector on
    is_mark = (log["op"] == "read") & (log["sector"] >= marker) & \
        (log["sector"] < marker + 8 * (2 * len(plan.runs) + 2)) & ((log["sector"] - marker) % 8 == 0)
    marks = {int(s - marker) // 8: i for i, s in zip(log.index[is_mark], log["sector"][is_mark])}
    stamps = _clock_stamps(share)
    out = {}
    for rid, *_ in plan.runs:
        a, b = marks.get(2 * rid), marks.get(2 * rid + 1)
        if a is None or b is None:
            continue
        rows = log.loc[a + 1:b - 1]
        rows = rows[rows["op"].isin(["read", "write"])]
        if rows.empty:
            continue
        span = rows["complete_ns"].max() - rows["arrival_ns"].min()
        # the run's own length: from the opening marker's reply to the
        # closing marker's arrival
        window = log.at[b, "arrival_ns"] - log.at[a, "complete_ns"]
        gaps = (rows["arrival_ns"].values[1:] - rows["reply_ns"].values[:-1]) / 1e3
        gaps = gaps[gaps >= 0]  # < 0: the next request came while this one was served
        out[rid] = {
            "requests": int(len(rows)),
            "mean_kb": float(rows["length"].mean() / 1024),
            "utilization": float(rows["service_ns"].sum() / span) if span > 0 else math.nan,
            "mean_service_ms": float(rows["service_ns"].mean() / 1e6),
            "mean_seek_cylinders": float(rows["seek_cylinders"].mean()),
            "median_gap_us": float(pd.Series(gaps).median()) if len(gaps) else math.nan,
            "mean_gap_us": float(gaps.mean()) if len(gaps) else math.nan,
            # the spread of the guest's own time per request (docs/kernel.md:
            # under TCG it moves with the host's load, under -icount it should not)
            "gap_pct_us": {str(q): float(pd.Series(gaps).quantile(q / 100)) if len(gaps) else math.nan
                           for q in GAP_PERCENTILES},
            # the whole distribution, as GAP_QUANTILES equally likely values
            # (the simulator's `samples` think time, --think samples)
            "gap_quantiles_us": [float(x) for x in np.quantile(gaps, (np.arange(GAP_QUANTILES) + 0.5)
                                                               / GAP_QUANTILES)] if len(gaps) else [],
            "disk_mb_s": float(rows["length"].sum() / (window / 1e9) / 1e6) if window > 0 else math.nan,
            # the bytes the disk moved, from the first request's arrival to
            # the last completion (a run that ends when its work is done)
            "bytes": int(rows["length"].sum()),
            "span_s": float(span / 1e9),
            # the run's length by the guest's clock over its length by the
            # emulator's (the two markers' replies): 1 when guest and disk
            # keep one clock; NaN for runs made before the guest stamped
            # its markers
            "clock_ratio": _clock_ratio(stamps, 2 * rid, 2 * rid + 1,
                                        int(log.at[a, "reply_ns"]), int(log.at[b, "reply_ns"])),
        }
    return out


def _clock_stamps(share: Path) -> dict[int, int]:
    """``runs/clock.txt``: the guest's CLOCK_MONOTONIC (ns) after each marker read."""
    path = share / "runs" / "clock.txt"
    stamps = {}
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
                stamps[int(parts[0])] = int(parts[1])
    return stamps


def _clock_ratio(stamps: dict[int, int], a: int, b: int, reply_a: int, reply_b: int) -> float:
    if a not in stamps or b not in stamps or reply_b <= reply_a:
        return math.nan
    return (stamps[b] - stamps[a]) / (reply_b - reply_a)


def mean_of_cuts(cuts: list[dict]) -> dict[str, float]:
    """The mean of each figure of several runs' cuts (:func:`cut_log`);
    the gap percentiles and quantiles, a table or list per run, are left
    to ``iolab kernel timing`` and the calibration."""
    if not cuts:
        return {}
    return {key: sum(c[key] for c in cuts) / len(cuts) for key, v in cuts[0].items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and key != "clock_ratio"}


def measure_host(share: Path) -> dict[str, dict]:
    """The guest's own time per request, per elevator, from a run of the
    ``MEASURE`` workloads. Every gap is measured from the emulator's reply
    to the next request's arrival, so whatever the disk's latency, that
    time is the guest's. On a zero-latency disk (``--calibrate zero``) the
    guest never idles; on the compared disk's own model (``--calibrate
    idle``, the default) it idles between requests as in the comparison,
    and its way back from idle (the halted virtual CPUs woken by the
    completion interrupt, blk-mq's queue run) is then part of the gap:

    * ``device_us``: the mean gap while one process keeps 8 requests in
      flight (libaio), so that a request is always waiting and no process
      runs between two requests: QEMU and NBD, the completion interrupt,
      the block layer, the elevator, the next dispatch. The simulator
      charges it to every request (``[disk] host_overhead_us``). (Eight
      synchronous processes would do instead, but at zero latency they
      keep the guest's two CPUs busy, and the gap measures that.)
    * ``think_us[t]``: for one process thinking ``t`` ms, the mean gap less
      ``t`` and ``device_us``: waking the process, fio's sleep overshooting
      its think time, the system calls. The simulator adds it to the think
      time of processes that think ``t`` ms.
    """
    plan = [line.split() for line in (share / "plan.txt").read_text().splitlines() if line.strip()]
    cap = int((share / "disk.conf").read_text().split()[1]) + 2048
    p = Plan("zero-latency", [(int(i), wl, el, 0) for i, wl, el in plan])
    cuts = cut_log(share, p, cap)
    gap: dict[tuple[str, str], float] = {}
    quantiles: dict[tuple[str, str], list[float]] = {}
    for rid, wl, el, _ in p.runs:
        if rid in cuts:
            gap[(el, wl)] = cuts[rid]["mean_gap_us"]
            quantiles[(el, wl)] = cuts[rid].get("gap_quantiles_us", [])
    out = {}
    for el in sorted({el for el, _ in gap}):
        dev = gap.get((el, "zlaio8"), math.nan)
        ts = [t for t in (0, 1, 2) if (el, f"zlt{t}") in gap]
        think = {t: gap[(el, f"zlt{t}")] - t * 1000 - dev for t in ts}
        out[el] = {"device_us": dev, "think_us": {str(t): v for t, v in think.items()},
                   # the same, gap by gap (GAP_QUANTILES equally likely values;
                   # below zero where a gap was shorter than the mean device_us)
                   "think_samples_us": {str(t): [q - t * 1000 - dev for q in quantiles[(el, f"zlt{t}")]]
                                        for t in ts if quantiles[(el, f"zlt{t}")] and not math.isnan(dev)},
                   "one_process_gap_us": {str(t): gap[(el, f"zlt{t}")] for t in ts}}
    return out


# ---------------------------------------------------------------- simulator side


def sim_scheduler_names() -> set[str]:
    from iolab import _iolab

    names = set()
    for s in json.loads(_iolab.presets())["schedulers"]:
        names.add(s["name"])
        names.update(s.get("aliases", []))
    return names


def module_elevators() -> list[str]:
    """The other elevators of kernel/'s modules (a researcher's own, from
    `iolab elevator new`): the same C is the simulator's kernel:NAME."""
    ours = {"kernel:anticipatory", "kernel:as", "kernel:wpcas"}
    return sorted(n.split(":", 1)[1] for n in sim_scheduler_names() if n.startswith("kernel:") and n not in ours)


def sim_counterpart(elevator: str, known: set[str]) -> tuple[str, str]:
    """The simulator's scheduler for a kernel elevator, and a note when it
    stands in for one the simulator lacks."""
    wanted = {"none": ["none", "noop"], "mq-deadline": ["mq-deadline", "deadline"],
              "bfq": ["bfq"], "kyber": ["kyber"], "anticipatory": ["as"],
              "wpcas": ["wpcas"]}.get(elevator, [f"kernel:{elevator}"])
    for i, name in enumerate(wanted):
        if name in known:
            note = "" if i == 0 else f"the simulator has no {wanted[0]}: {name} stands in"
            return name, note
    raise UserError(f"the simulator knows none of {', '.join(wanted)} for {elevator}")


def sim_spec(disk: str, wl: Workload, elevator: str, runtime: int, reps: int,
             host: dict | None, think_model: str = "mean") -> tuple[dict, str]:
    """The simulator's spec for one elevator, with the guest's measured time
    per request (``host``, from :func:`measure_host`; it can differ between
    elevators, so each gets its own spec). ``think_model``: the guest's time
    on top of a process's think time as its mean, or as its measured
    distribution (``samples``: each think drawn from it; a sample below
    zero, a gap shorter than the mean device time, is taken as zero)."""
    name, note = sim_counterpart(elevator, sim_scheduler_names())
    extra: dict[float, float | list[float]] = {}
    disk_tbl = {"preset": disk, "queue_depth": 1}
    if host:
        dev = host.get("device_us", 0.0)
        if not math.isnan(dev):
            disk_tbl["host_overhead_us"] = round(max(dev, 0.0), 3)
        extra = {float(t): max(v, 0.0) / 1000 for t, v in host.get("think_us", {}).items()
                 if not math.isnan(v)}
        if think_model == "samples":
            extra.update({float(t): [x / 1000 for x in v]
                          for t, v in host.get("think_samples_us", {}).items() if v})
    sched = {"name": name, "label": elevator}
    if elevator in BUILTIN and elevator != "none":
        # As in the guest: the tag pool is not the limit (none's tags are
        # the driver's queue_depth, which sysfs does not let one raise).
        sched["nr_requests"] = GUEST_NR_REQUESTS
    spec = {
        "name": f"kernel compare: {wl.name} on {disk}, {elevator}",
        "disk": disk_tbl,
        "scheduler": [sched],
        "workload": sim_workload(wl, extra),
        "run": {"duration_s": runtime, "seed": 1, "repetitions": reps},
    }
    return spec, note


def run_sim(spec: dict) -> list[dict]:
    from iolab.simulate import run_experiment, spec_from_dict

    exp = spec_from_dict(spec, name=spec["name"])
    return run_experiment(exp).document["runs"]


# ---------------------------------------------------------------- the command


def _sim_side(runs: list[dict]) -> dict[str, Side]:
    out: dict[str, Side] = {}
    for r in runs:
        s = out.setdefault(r["scheduler"], Side())
        s.throughput.append(r["throughput_mb_s"])
        s.p50.append(r["latency_ms"]["p50"])
        s.p99.append(r["latency_ms"]["p99"])
        a = r.get("anticipation") or {}
        s.antic.append((a.get("started", 0), a.get("succeeded", 0), a.get("failed", 0)))
    return out


def _kernel_side(share: Path, plan: Plan, wl: str, cuts: dict[int, dict]) -> dict[str, Side]:
    """fio's figures per elevator; for a workload with buffered writes the
    throughput is the disk's, from the emulator's log (`buffered_writes`)."""
    at_disk = WORKLOADS[wl].buffered_writes
    out: dict[str, Side] = {}
    for rid, w, el, _ in plan.runs:
        if w != wl or not (share / "runs" / f"{rid}.json").exists():
            continue
        if at_disk and rid not in cuts:
            continue
        f = fio_summary(share / "runs" / f"{rid}.json")
        st = stats_file(share / "runs" / f"{rid}.stats")
        s = out.setdefault(el, Side())
        s.throughput.append(cuts[rid]["disk_mb_s"] if at_disk else f["throughput_mb_s"])
        s.fio_mb_s.append(f["throughput_mb_s"])
        s.p50.append(f["p50_ms"])
        s.p99.append(f["p99_ms"])
        s.antic.append((st.get("antic_started", 0), st.get("antic_succeeded", 0), st.get("antic_failed", 0)))
    return out


def _fmt(m: float, h: float, digits: int = 2) -> str:
    if math.isnan(m):
        return "n/a"
    return f"{m:.{digits}f}" if math.isnan(h) else f"{m:.{digits}f} ± {h:.{digits}f}"


def analyse(out: Path, meta: dict | None = None) -> dict:
    """Build compare.json and report.md from a finished comparison in ``out``."""
    if meta is None:
        meta = load_meta(out)
    try:
        return _analyse(out, meta)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        # meta.json is checked; what else the directory holds (the kernel's
        # and the simulator's results) may still be cut short or edited.
        raise UserError(f"{out}: the comparison's results are incomplete or damaged "
                        f"({type(e).__name__}: {e})") from None


def load_meta(out: Path) -> dict:
    """``out/meta.json``, checked field by field (:mod:`iolab.kernel.meta`)."""
    return kmeta.load(out, DISKS, COMPARED, None)


def _analyse(out: Path, meta: dict) -> dict:
    rows = []
    for disk in meta["disks"]:
        share = out / disk
        plan = Plan(disk, [tuple(r) for r in meta["plans"][disk]])
        cuts = cut_log(share, plan, meta["capacity"][disk]) if (share / "emu.csv").exists() else {}
        for wl in meta["workloads"]:
            kern = _kernel_side(share, plan, wl, cuts)
            simdoc = json.loads((out / "sim" / f"{disk}-{wl}.json").read_text())
            sim = _sim_side(simdoc["runs"])
            for el in meta["elevators"]:
                k, s = kern.get(el, Side()), sim.get(el, Side())
                km, kh = mean_ci(k.throughput)
                sm, sh = mean_ci(s.throughput)
                emu = [cuts[rid] for rid, w, e, _ in plan.runs if w == wl and e == el and rid in cuts]
                rows.append({
                    "disk": disk, "workload": wl, "elevator": el,
                    "kernel_mb_s": [km, kh], "sim_mb_s": [sm, sh],
                    "kernel_runs_mb_s": list(k.throughput), "sim_runs_mb_s": list(s.throughput),
                    "diff": (sm - km) / km if km else math.nan,
                    "tost_p": tost(k.throughput, s.throughput),
                    "kernel_p50_ms": mean_ci(k.p50)[0], "sim_p50_ms": mean_ci(s.p50)[0],
                    "kernel_p99_ms": mean_ci(k.p99)[0], "sim_p99_ms": mean_ci(s.p99)[0],
                    "kernel_antic": [sum(x[i] for x in k.antic) / max(len(k.antic), 1) for i in range(3)],
                    "sim_antic": [sum(x[i] for x in s.antic) / max(len(s.antic), 1) for i in range(3)],
                    "emu": mean_of_cuts(emu),
                    "sim_disk": {
                        "utilization": mean_ci([r["disk"]["utilization"] for r in simdoc["runs"]
                                                if r["scheduler"] == el])[0],
                        # the same less the guest's time the simulator charges
                        # to every request as service (host_overhead_us): the
                        # share the emulated disk itself was busy, as the
                        # kernel side's column counts it
                        "media_utilization": mean_ci([
                            r["disk"]["utilization"] - r["requests"]["dispatched"] * _device_us(meta, disk, el) / 1e3
                            / max(r["elapsed_ms"], 1e-9) for r in simdoc["runs"] if r["scheduler"] == el])[0],
                        "mean_seek_cylinders": mean_ci([r["seek"]["mean_cylinders"] for r in simdoc["runs"]
                                                        if r["scheduler"] == el])[0],
                    },
                    "note": meta.get("notes", {}).get(el, ""),
                    "at_disk": WORKLOADS[wl].buffered_writes,
                    "kernel_fio_mb_s": mean_ci(k.fio_mb_s)[0],
                    # each run's length by the guest's clock over the disk's
                    "clock_ratios": [cuts[rid]["clock_ratio"] for rid, w, e, _ in plan.runs
                                     if w == wl and e == el and rid in cuts
                                     and not math.isnan(cuts[rid]["clock_ratio"])],
                })
    result = {"meta": meta, "rows": rows,
              "rankings": {name: {"elevators": els, "groups": rankings(rows, els)}
                           for name, els in ranking_sets(meta["elevators"]).items()}}
    (out / "compare.json").write_text(json.dumps(result, indent=2, default=float) + "\n")
    (out / "report.md").write_text(report(result))
    return result


CALIBRATION_TEXT = {
    "zero": "measured once on a zero-latency disk",
    "idle": "measured on each disk's own model, the guest idling between requests as in the comparison",
    "given": "given with --overhead-us",
}


def report(result: dict) -> str:
    meta = result["meta"]
    lines = [
        "# Simulator against kernel",
        "",
        f"Kernel {meta['kernel']}; {meta['reps']} repetitions of {meta['runtime']} s; host load "
        f"{meta['load_before']} before, {meta['load_after']} after.",
        "",
        f"The guest's own time per request ({CALIBRATION_TEXT.get(meta.get('calibration', 'zero'), '')}), "
        "given to the simulator (µs; `device`: with a queue, charged to every request; `think+t`: "
        "on top of a process's t ms think time):",
        "",
        "| disk | elevator | device | think+0 | think+1 | think+2 |",
        "|---|---|---|---|---|---|",
        *[f"| {disk} | {el} | {h['device_us']:.0f} | "
          + " | ".join(f"{h['think_us'].get(t, math.nan):.0f}" for t in ("0", "1", "2")) + " |"
          for disk in meta["disks"] for el, h in host_of(meta, disk).items()],
        "",
        "Throughput in MB/s (mean ± 95% half-width over repetitions; simulator: one seed per "
        "repetition); `diff` = simulator / kernel − 1; `≡5%`: two one-sided Welch tests show the "
        "two within ±5% (p < 0.05). Latency: fio's total latency (p50/p99 ms); anticipation: "
        "A-T / A-S / A-F per run; disk util: the share of the run the emulated disk was busy (the "
        "simulator's less the guest's time it charges to each request as service).",
        "",
        "| disk | workload | elevator | kernel MB/s | sim MB/s | diff | ≡5% | p50 k/s | p99 k/s | "
        "antic k | antic s | disk util k/s | seek cyl k/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        eq = "yes" if r["tost_p"] < 0.05 else ("no" if not math.isnan(r["tost_p"]) else "n/a")
        ka = "/".join(f"{x:.0f}" for x in r["kernel_antic"])
        sa = "/".join(f"{x:.0f}" for x in r["sim_antic"])
        emu = r["emu"]
        util = (f"{emu.get('utilization', math.nan):.2f}/"
                f"{r['sim_disk'].get('media_utilization', r['sim_disk']['utilization']):.2f}")
        seek = f"{emu.get('mean_seek_cylinders', math.nan):.0f}/{r['sim_disk']['mean_seek_cylinders']:.0f}"
        lines.append(
            f"| {r['disk']} | {r['workload']}{' †' if r.get('at_disk') else ''} | "
            f"{r['elevator']}{' *' if r['note'] else ''} | "
            f"{_fmt(*r['kernel_mb_s'])} | {_fmt(*r['sim_mb_s'])} | {r['diff'] * 100:+.1f}% | {eq} | "
            f"{r['kernel_p50_ms']:.1f}/{r['sim_p50_ms']:.1f} | {r['kernel_p99_ms']:.0f}/{r['sim_p99_ms']:.0f} | "
            f"{ka} | {sa} | {util} | {seek} |")
    for name, rk in result.get("rankings", {}).items():
        ranks = rk["groups"]
        lines += [
            "",
            f"Ranking by throughput ({name}: {', '.join(rk['elevators'])}); "
            "`told apart`: pairs whose kernel throughputs differ (Welch, Holm over the workload's "
            "pairs, p < 0.05), and how many of them the simulator orders the same way:",
            "",
            "| disk | workload | kernel order | simulator order | same order | told apart: same / all | other |",
            "|---|---|---|---|---|---|---|",
        ]
        for g in ranks:
            other = "; ".join(f"{hi} > {lo}: sim {how}" for hi, lo, how in g["unlike"]) or "-"
            lines.append(
                f"| {g['disk']} | {g['workload']} | {' > '.join(g['kernel_order'])} | "
                f"{' > '.join(g['sim_order'])} | {'yes' if g['same_order'] else 'no'} | "
                f"{len(g['alike'])} / {len(g['separated'])} | {other} |")
    ratios = [x for r in result["rows"] for x in r.get("clock_ratios", [])]
    if ratios:
        off = [f"{r['disk']} {r['workload']} {r['elevator']} ({', '.join(f'{x:.3f}' for x in r['clock_ratios'] if abs(x - 1) > CLOCK_TOLERANCE)})"
               for r in result["rows"] if any(abs(x - 1) > CLOCK_TOLERANCE for x in r.get("clock_ratios", []))]
        guest = (f"under -icount shift={meta['icount']}" if meta.get("icount") is not None else "under plain TCG")
        lines += ["", f"One clock for the guest ({guest}) and the disk? Each run's length by the guest's clock "
                  f"over its length by the emulator's, {min(ratios):.4f} to {max(ratios):.4f} over {len(ratios)} runs"
                  + (f"; beyond ±{CLOCK_TOLERANCE:.0%}: {'; '.join(off)}." if off else f", every run within ±{CLOCK_TOLERANCE:.0%}.")]
    at_disk = [r for r in result["rows"] if r.get("at_disk")]
    if at_disk:
        fio = ", ".join(f"{r['disk']} {r['elevator']} {r['kernel_fio_mb_s']:.1f}" for r in at_disk)
        lines.append(
            "\n† A buffered writer: both sides give the bytes the disk completed per second (the "
            "kernel's from the emulator's log), since fio counts the bytes of the writer's "
            "write(2) calls, most of which stay in the guest's page cache during a run (fio's "
            f"MB/s: {fio}).")
    notes = {r["elevator"]: r["note"] for r in result["rows"] if r["note"]}
    for el, n in notes.items():
        lines.append(f"\n\\* {el}: {n}.")
    return "\n".join(lines) + "\n"


def run_compare(args) -> int:
    if args.report:
        out = Path(args.report)
        print(report(analyse(out, load_meta(out))))
        return 0
    check_options(args)
    if args.resim:
        return resim(args)
    disks = _list(args.disks, DISKS, "disks")
    workloads = _list(args.workloads, COMPARED, "workloads")
    elevators = _list(args.elevators, ELEVATORS + module_elevators(), "elevators")
    trace = _list(args.trace, elevators, "trace") if args.trace else []
    repo = testbed.find_repo(args.repo)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    kver = testbed.prepare(repo)
    meta = {"kernel": kver, "disks": disks, "workloads": workloads, "elevators": elevators,
            "reps": args.reps, "runtime": args.runtime, "trace": trace, "load_before": testbed.host_load(),
            "icount": args.icount, "think_model": args.think,
            "started": time.strftime("%Y-%m-%d %H:%M:%S"), "plans": {}, "capacity": {}}
    # 1. the guest's own time per request
    calibrate(repo, out, meta, args)
    # 2. the kernel on each emulated disk
    for disk in disks:
        plan = make_plan(disk, workloads, elevators, args.reps)
        meta["plans"][disk] = plan.runs
        meta["capacity"][disk] = _capacity_sectors(disk)
        print(f"iolab kernel compare: {disk}: {len(plan.runs)} runs of {args.runtime} s "
              f"(about {len(plan.runs) * (args.runtime + 12) // 60 + 1} min); load {testbed.host_load()}", flush=True)
        run_disk(repo, out, disk, plan, args.runtime, trace=trace, icount=args.icount)
    meta["load_after"] = testbed.host_load()
    run_sim_side(out, meta)
    print(report(analyse(out)))
    return 0


# Bounds of the options, checked before anything is booted or written: a
# comparison is hours at the defaults (36 rows x 3 reps x 20 s plus boots).
MAX_REPS = 100
MAX_RUNTIME_S = 3600
MAX_OVERHEAD_US = 1e6


def check_options(args) -> None:
    """Refuse what cannot run before any side effect (a boot, apt, a directory)."""
    if not 1 <= args.reps <= MAX_REPS:
        raise UserError(f"--reps: {args.reps} is outside 1..{MAX_REPS}")
    if not 2 <= args.runtime <= MAX_RUNTIME_S:
        raise UserError(f"--runtime: {args.runtime} s is outside 2..{MAX_RUNTIME_S} s")
    testbed.check_icount(args.icount)
    us = args.overhead_us
    if us is not None and not (math.isfinite(us) and 0 <= us <= MAX_OVERHEAD_US):
        raise UserError(f"--overhead-us: {us} is not a time per request in 0..{MAX_OVERHEAD_US:g} µs")


def calibrate(repo: Path, out: Path, meta: dict, args) -> None:
    """Fill ``meta["host_by_disk"]``: per compared disk and elevator, the
    guest's own time per request (see :func:`measure_host`)."""
    disks, elevators = meta["disks"], meta["elevators"]
    meta["calibration"] = "given" if args.overhead_us is not None else args.calibrate
    if args.overhead_us is not None:
        host = {el: {"device_us": args.overhead_us, "think_us": {}} for el in elevators}
        meta["host_by_disk"] = {d: host for d in disks}
        return
    meta["calibration_load"] = {}
    if args.calibrate == "zero":
        print("iolab kernel compare: zero-latency run (the guest's own time per request)", flush=True)
        meta["calibration_load"]["zero-latency"] = testbed.host_load()
        share = run_disk(repo, out, disks[0], make_plan(disks[0], MEASURE, elevators, 1), 8, zero_latency=True,
                         icount=args.icount, trace=meta.get("trace", []))
        host = measure_host(share)
        meta["host_by_disk"] = {d: host for d in disks}
        return
    meta["host_by_disk"] = {}
    for disk in disks:
        print(f"iolab kernel compare: calibration on {disk} (the guest's own time per request); "
              f"load {testbed.host_load()}", flush=True)
        meta["calibration_load"][disk] = testbed.host_load()
        share = run_disk(repo, out, disk, make_plan(disk, MEASURE, elevators, 1), 8,
                         share_name=f"calibration-{disk}", icount=args.icount, trace=meta.get("trace", []))
        meta["host_by_disk"][disk] = measure_host(share)


def _device_us(meta: dict, disk: str, elevator: str) -> float:
    """The guest's time per request the simulator charged as service (µs)."""
    dev = host_of(meta, disk).get(elevator, {}).get("device_us", 0.0)
    return 0.0 if not isinstance(dev, (int, float)) or math.isnan(dev) else max(dev, 0.0)


def host_of(meta: dict, disk: str) -> dict[str, dict]:
    """The calibration that applies to ``disk`` (older directories hold one
    zero-latency calibration for every disk under ``host``)."""
    return meta.get("host_by_disk", {}).get(disk) or meta.get("host", {})


def resim(args) -> int:
    """Calibrate again and run the simulator side again over the kernel runs
    of a finished comparison."""
    out = Path(args.output)
    meta = load_meta(out)
    meta["think_model"] = args.think
    if args.keep_calibration and args.overhead_us is None:
        for disk in meta["disks"]:
            share = out / f"calibration-{disk}"
            if not (share / "emu.csv").exists() and meta.get("calibration") == "zero":
                share = out / "zero-latency"
            if not (share / "emu.csv").exists():
                raise UserError(f"--keep-calibration: {out} has no calibration boot for {disk} "
                                f"({share.name}/emu.csv)")
            meta.setdefault("host_by_disk", {})[disk] = measure_host(share)
        run_sim_side(out, meta)
        print(report(analyse(out)))
        return 0
    meta.pop("host", None)
    if args.icount is None:
        args.icount = meta.get("icount")
    calibrate(testbed.find_repo(args.repo), out, meta, args)
    run_sim_side(out, meta)
    print(report(analyse(out)))
    return 0


def run_sim_side(out: Path, meta: dict) -> None:
    """The simulator on the same disks, workloads and durations; writes
    ``sim/`` and ``meta.json``."""
    disks, workloads, elevators = meta["disks"], meta["workloads"], meta["elevators"]
    (out / "sim").mkdir(exist_ok=True)
    notes: dict[str, str] = {}
    for disk in disks:
        for wl in workloads:
            runs = []
            for el in elevators:
                spec, note = sim_spec(disk, WORKLOADS[wl], el, meta["runtime"], meta["reps"],
                                      host_of(meta, disk).get(el), meta.get("think_model", "mean"))
                if note:
                    notes[el] = note
                (out / "sim" / f"{disk}-{wl}-{el}.spec.json").write_text(json.dumps(spec, indent=2) + "\n")
                runs += run_sim(spec)
            (out / "sim" / f"{disk}-{wl}.json").write_text(json.dumps({"runs": runs}, indent=2) + "\n")
    meta["notes"] = notes
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
