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
import time
from dataclasses import dataclass, field
from pathlib import Path

from iolab.cli.errors import UserError
from iolab.kernel import anticipation
from iolab.kernel import meta as kmeta
from iolab.kernel import testbed
from iolab.kernel.calibration import (CALIBRATION_RUNTIME_S, calibrate, device_us, host_of, measure_host,
                                      queue_run_inputs, sim_inputs,
                                      takes_queue_runs)
from iolab.kernel.emulog import CLOCK_TOLERANCE, cut_log, mean_of_cuts, off_clock
from iolab.kernel.guest import (MAX_GUESTS, Plan, capacity_sectors, check_run_ids, fio_summary, make_plan, run_disk,
                                run_side_by_side, stats_file)
from iolab.kernel.significance import BUILTIN, mean_ci, ranking_sets, rankings, tost
from iolab.kernel.workloads import WORKLOADS, Workload, sim_workload

DISKS = ["hp97560", "modern7200"]
ELEVATORS = ["none", "mq-deadline", "bfq", "kyber", "anticipatory", "wpcas"]
# The workloads compared ((a) to (h) of docs/kernel.md); the zl* ones
# measure the guest on a zero-latency disk.
COMPARED = ["seqreaders", "randseq", "rwmix", "bufwrite", "aiowrite", "coop", "rtbe", "fsync"]
# The guest raises nr_requests to this after each switch (testbed/guest/
# lib.sh set_sched); the simulator's 6.1 elevators get the same.
GUEST_NR_REQUESTS = 64
# The guest's vCPUs without --icount (testbed/run.sh's default -smp); under
# it, one (testbed.run).
GUEST_SMP = 2


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
    c.add_argument("--think", choices=kmeta.THINK_MODELS, default="mean",
                   help="the guest's measured time on top of a process's think time, given to the "
                        "simulator as its mean (default), as its distribution at the disk (samples), "
                        "or as its distribution by the guest's own clock, from traced copies of the "
                        "calibration runs, at the disk's mean (guest); as that of each process in a traced "
                        "run of its own workload (workload); or the one-process distribution as CPU time on "
                        "the guest's CPUs, where the processes' bursts wait for each other (cpu)")
    c.add_argument("--queue-runs", action="store_true",
                   help="give the simulator kblockd's queue runs as the calibration's traced runs measured "
                        "them: the elevator is asked for a request when the guest's worker would ask it, "
                        "after an insertion, a completion or its timer (needs --think guest, workload or "
                        "cpu; the elevators of kernel/ and the simulator's request-function ones)")
    c.add_argument("--tracer-cost", choices=("take-back", "keep"), default="take-back",
                   help="the blk tracer's own time in the traced calibration runs the think models read: "
                        "measured per line it writes (traced against untraced one-process runs) and taken "
                        "off every gap and queue-run delay for the lines written in it (take-back, the "
                        "default), or left in (keep)")
    c.add_argument("--keep-calibration", action="store_true",
                   help="with --resim: measure the guest's time per request again from the "
                        "calibration boots already in DIR instead of booting again")
    c.add_argument("--icount", type=int, metavar="SHIFT",
                   help="run the guest on QEMU's instruction counter, one CPU, 2**SHIFT ns per "
                        "instruction, its clock held to the host's: the guest's time per request "
                        "becomes a count of its instructions, not a share of the host (docs/kernel.md)")
    c.add_argument("--guests", type=int, default=1, metavar="N",
                   help="boot up to N disks' guests side by side (their calibration boots too), each with "
                        "its own emulated disk (default 1: one after the other)")
    c.add_argument("--repo", metavar="DIR", help="the iolab checkout (default: found)")
    c.set_defaults(func=run_compare)


def _list(value: str, known, what: str) -> list[str]:
    items = [x.strip() for x in value.split(",") if x.strip()]
    bad = [x for x in items if x not in known]
    if bad or not items:
        raise UserError(f"--{what}: unknown {', '.join(bad) or '(empty)'}; known: {', '.join(known)}")
    return items


@dataclass
class Side:
    """Repetitions of one configuration on one side."""

    throughput: list[float] = field(default_factory=list)
    p50: list[float] = field(default_factory=list)
    p99: list[float] = field(default_factory=list)
    antic: list[tuple[int, int, int]] = field(default_factory=list)
    fio_mb_s: list[float] = field(default_factory=list)  # the kernel's, as fio counts it
    runs: list[int] = field(default_factory=list)  # the kernel's run ids counted


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
             host: dict | None, think_model: str = "mean", icount: int | None = None,
             queue_runs: bool = False) -> tuple[dict, str]:
    """The simulator's spec for one elevator, with the guest's measured time
    per request (``host``, from :func:`measure_host`; it can differ between
    elevators, so each gets its own spec). ``think_model``: the guest's time
    on top of a process's think time as its mean, or as a measured
    distribution each think is drawn from (``samples``, ``guest``:
    :func:`iolab.kernel.calibration.think_extras`), or as CPU time on the
    guest's CPUs (``cpu``: one under ``icount``, testbed/run.sh's two
    otherwise). ``queue_runs``: the queue runs wait for kblockd's worker as
    measured (:func:`iolab.kernel.calibration.queue_run_inputs`), and the
    insertion's part leaves the charge to every request."""
    name, note = sim_counterpart(elevator, sim_scheduler_names())
    disk_tbl: dict = {"preset": disk, "queue_depth": 1}
    dev, extra = sim_inputs(host, think_model, wl.name)
    runs: dict = {}
    if queue_runs:
        runs, split = queue_run_inputs(host, wl.name)
        dev = max(dev - split, 0.0)
    if host:
        disk_tbl["host_overhead_us"] = round(dev, 3)
    sched = {"name": name, "label": elevator}
    if elevator in BUILTIN and elevator != "none":
        # As in the guest: the tag pool is not the limit (none's tags are
        # the driver's queue_depth, which sysfs does not let one raise).
        sched["nr_requests"] = GUEST_NR_REQUESTS
    spec = {
        "name": f"kernel compare: {wl.name} on {disk}, {elevator}",
        "disk": disk_tbl,
        "scheduler": [sched],
        "workload": sim_workload(wl, extra, extra_as_cpu=think_model == "cpu"),
        "run": {"duration_s": runtime, "seed": 1, "repetitions": reps},
    }
    if think_model == "cpu":
        spec["host"] = {"cpus": 1 if icount is not None else GUEST_SMP}
    if runs:
        spec.setdefault("host", {})["queue_run_us"] = runs
    return spec, note


def run_sim(spec: dict) -> list[dict]:
    from iolab.simulate import run_experiment, spec_from_dict

    exp = spec_from_dict(spec, name=spec["name"])
    outcome = run_experiment(exp)
    try:
        return outcome.document["runs"]
    finally:
        outcome.store.close()  # the spooled runs' temporary file


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
    throughput is the disk's, from the emulator's log (`buffered_writes`).
    A run off the disk's clock (:func:`off_clock`) is left out."""
    at_disk = WORKLOADS[wl].buffered_writes
    out: dict[str, Side] = {}
    for rid, w, el, _ in plan.runs:
        if w != wl or not (share / "runs" / f"{rid}.json").exists():
            continue
        if (at_disk and rid not in cuts) or off_clock(cuts.get(rid)):
            continue
        f = fio_summary(share / "runs" / f"{rid}.json")
        st = stats_file(share / "runs" / f"{rid}.stats")
        s = out.setdefault(el, Side())
        s.throughput.append(cuts[rid]["disk_mb_s"] if at_disk else f["throughput_mb_s"])
        s.fio_mb_s.append(f["throughput_mb_s"])
        s.runs.append(rid)
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
                    "anticipation": anticipation.row(
                        out, disk, wl, el, [share / "runs" / f"{rid}.stats" for rid in k.runs],
                        [cuts[rid].get("group_mb_s", {}) for rid in k.runs if rid in cuts],
                        [r for r in simdoc["runs"] if r["scheduler"] == el]),
                    "sim_disk": {
                        "utilization": mean_ci([r["disk"]["utilization"] for r in simdoc["runs"]
                                                if r["scheduler"] == el])[0],
                        # the same less the guest's time the simulator charges
                        # to every request as service (host_overhead_us): the
                        # share the emulated disk itself was busy, as the
                        # kernel side's column counts it
                        "media_utilization": mean_ci([
                            r["disk"]["utilization"] - r["requests"]["dispatched"] * device_us(meta, disk, el) / 1e3
                            / max(r["elapsed_ms"], 1e-9) for r in simdoc["runs"] if r["scheduler"] == el])[0],
                        "mean_seek_cylinders": mean_ci([r["seek"]["mean_cylinders"] for r in simdoc["runs"]
                                                        if r["scheduler"] == el])[0],
                    },
                    "sim_cpu": _sim_cpu([r for r in simdoc["runs"] if r["scheduler"] == el]),
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


def _sim_cpu(runs: list[dict]) -> dict | None:
    """The simulator's CPUs over ``runs`` (``--think cpu``): the mean burst
    and the mean wait for a CPU per request, µs."""
    cpu = [r["cpu"] for r in runs if r.get("cpu") and r["cpu"]["bursts"]]
    if not cpu:
        return None
    return {"burst_us": mean_ci([c["busy_ms"] * 1e3 / c["bursts"] for c in cpu])[0],
            "wait_us": mean_ci([c["mean_wait_us"] for c in cpu])[0]}


def cpu_table(result: dict) -> list[str]:
    """``--think cpu``: the time per request beyond the think time the
    simulator's CPUs gave each workload's processes, against what the
    workload's traced run measured in the guest (its processes' own gaps)."""
    meta = result["meta"]
    rows = []
    for r in result["rows"]:
        c = r.get("sim_cpu")
        if not c:
            continue
        gaps = host_of(meta, r["disk"]).get(r["elevator"], {}).get("workload_gap_us", {}).get(r["workload"], {})
        n = sum(g["n"] for g in gaps.values())
        guest = sum(g["mean"] * g["n"] for g in gaps.values()) / n if n else math.nan
        total = c["burst_us"] + c["wait_us"]
        measured = f"{guest:.0f} | {n} | {total / guest - 1:+.1%}" if n else "n/a | 0 | "
        rows.append(f"| {r['disk']} | {r['workload']} | {r['elevator']} | {c['burst_us']:.0f} | {c['wait_us']:.0f} "
                    f"| {total:.0f} | {measured} |")
    if not rows:
        return []
    return [
        "The guest's CPU in the simulator (`--think cpu`): per request of a synchronous process, the mean "
        "burst (the one-process time), the mean wait for the CPU, their sum, and the same time measured in the "
        "guest (the workload's traced run, every synchronous process's gaps less its think time; µs):",
        "",
        "| disk | workload | elevator | burst | wait | sim | guest | n | sim/guest − 1 |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


CALIBRATION_TEXT = {
    "zero": "measured once on a zero-latency disk",
    "idle": "measured on each disk's own model, the guest idling between requests as in the comparison",
    "given": "given with --overhead-us",
}


THINK_TEXT = {
    "mean": "as the mean above (`--think mean`)",
    "samples": "from the gaps as the disk saw them (`--think samples`: 100 quantiles per think time)",
    "guest": "from the gaps by the guest's own clock, traced, from a completion to the next insertion "
             "(`--think guest`: 100 quantiles per think time)",
    "workload": "from the gaps by the guest's own clock, traced, from a completion to the next insertion, "
                "of each process in a traced run of its own workload (`--think workload`: 100 quantiles "
                "per workload and think time; the one-process runs' for the rest)",
    "cpu": "from the one-process gaps by the guest's own clock (as `--think guest`), as CPU time run on the "
           "guest's CPUs before the think time, each process's burst waiting for the others' "
           "(`--think cpu`, `[host] cpus`; the table below sets what that gives against the workloads' "
           "own traced gaps)",
}


def guest_clock_table(meta: dict) -> list[str]:
    """The traced calibration runs' gaps by the guest's clock (completion to
    the next request's insertion), and the rest of the gap at the disk."""
    rows = [(disk, el, t, g, h.get("guest_device_us", {}).get(t, math.nan))
            for disk in meta["disks"] for el, h in host_of(meta, disk).items()
            for t, g in sorted(h.get("guest_gap_us", {}).items())]
    if not rows:
        return []
    return [
        "The one-process calibration runs by the guest's own clock (traced copies; µs from a completion "
        "to the next request's insertion into the elevator, less the think time: the think extra of "
        "`--think guest`), and `rest`, the untraced run's mean gap at the disk less that mean (the way "
        "through the guest's submission, QEMU, NBD and the interrupt; `--think guest` charges the mean of "
        "the three to every request):",
        "",
        "| disk | elevator | think ms | n | p10 | p50 | p90 | p99 | mean | rest |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *[f"| {disk} | {el} | {t} | {g['n']} | "
          + " | ".join(f"{g[str(q)] - float(t) * 1000:.0f}" for q in (10, 50, 90, 99))
          + f" | {g['mean'] - float(t) * 1000:.0f} | {rest:.0f} |" for disk, el, t, g, rest in rows],
        "",
    ]


def tracer_cost_table(meta: dict) -> list[str]:
    """What the blk tracer cost the guest per line, as each calibration
    boot measured it (iolab.kernel.tracercost), and whether it was taken
    back from the times read from traces."""
    rows = []
    for disk in meta["disks"]:
        t = next((h["tracer"] for h in host_of(meta, disk).values() if h.get("tracer")), None)
        if t:
            extra = "; ".join(f"{el} {th} ms {v['extra_us']:+.0f}" for el, per in sorted(t["pairs"].items())
                              for th, v in sorted(per.items()))
            rows.append(f"| {disk} | {t['n']} | {t['block_us']:.1f} | "
                        f"{t['message_us']:.1f}{' (as a block event)' if t['message_assumed'] else ''} | "
                        f"{t.get('residual_sd_us', math.nan):.0f} | "
                        f"{'taken back' if t.get('taken_back') else 'kept'} | {extra} |")
    if not rows:
        return []
    return [
        "The blk tracer's cost to the guest, µs of its clock per line written (`--tracer-cost`): fitted to the "
        "calibration's pairs of one-process runs, each traced run's mean gap at the disk less its untraced "
        "twin's (`pairs`, µs a request) over its lines a request, block events and messages apart (bfq's "
        "runs write messages; where none did, a message is taken to cost a block event). `taken back`: "
        "every gap and queue-run delay read from a trace was shortened by the lines written in it while its "
        "process could run:",
        "",
        "| disk | pairs | block µs | message µs | residual sd µs | applied | pairs µs |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def workload_clock_table(meta: dict) -> list[str]:
    """The traced runs of the compared workloads (``--think workload``):
    each synchronous process's own gaps by the guest's clock."""
    rows = [(disk, el, wl, t, g) for disk in meta["disks"] for el, h in host_of(meta, disk).items()
            for wl, by in sorted(h.get("workload_gap_us", {}).items()) for t, g in sorted(by.items())]
    if not rows:
        return []
    return [
        "The compared workloads in traced runs of the calibration boot, by the guest's own clock: each "
        "synchronous process's time from the completion of its request to its next insertion, less its think "
        "time (µs; the think extra of `--think workload`):",
        "",
        "| disk | elevator | workload | think ms | n | p10 | p50 | p90 | p99 | mean |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *[f"| {disk} | {el} | {wl} | {t} | {g['n']} | " + " | ".join(f"{g[str(q)]:.0f}" for q in (10, 50, 90, 99))
          + f" | {g['mean']:.0f} |" for disk, el, wl, t, g in rows],
        "",
    ]


def queue_run_table(meta: dict) -> list[str]:
    """``--queue-runs``: kblockd's runs as the calibration measured them
    and the simulator was given them."""
    if not meta.get("queue_runs"):
        return []
    lines = [
        "kblockd's queue runs (`--queue-runs`): µs from what asked for a run to the guest's worker carrying it "
        "out, by the guest's clock in the calibration's traced runs (p50 / mean, n; `-`: fewer than "
        "20, run at once). The simulator asks the elevator for a request only then, draws each delay from "
        "the same runs (100 quantiles), and takes the one-process insertion mean off the time it charges "
        "to every request (`device`, µs, before → after); the simulator's blk-mq elevators (none, "
        "mq-deadline, bfq, kyber) run their queues at once:",
        "",
        "| disk | elevator | runs of | insert | completion | timer | device |",
        "|---|---|---|---|---|---|---|",
    ]
    for disk in meta["disks"]:
        for el, h in host_of(meta, disk).items():
            q = h.get("queue_runs")
            if not q or not takes_queue_runs(meta, el):
                continue
            after = device_us(meta, disk, el)
            split = queue_run_inputs(h, None)[1]
            for what, m in [("one process", q.get("one_process", {})), *sorted(q.get("workload", {}).items())]:
                cells = [f"{m[c]['p50_us']:.0f} / {m[c]['mean_us']:.0f}, {m[c]['n']}" if c in m else "-"
                         for c in ("insert", "completion", "timer")]
                dev = f"{after + split:.0f} → {after:.0f}" if what == "one process" else ""
                lines.append(f"| {disk} | {el} | {what} | {' | '.join(cells)} | {dev} |")
    return lines + [""]


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
        f"The simulator draws each think's extra {THINK_TEXT.get(meta.get('think_model', 'mean'), '')}.",
        "",
        *([("Calibration runs whose guest fell behind the disk's clock, used for want of one on it: "
            + "; ".join(f"{disk} {el} runs {', '.join(map(str, h['off_clock_runs']))}"
                        for disk in meta["disks"] for el, h in host_of(meta, disk).items() if h.get("off_clock_runs"))
            + "."), ""] if any(h.get("off_clock_runs") for disk in meta["disks"]
                               for h in host_of(meta, disk).values()) else []),
        *tracer_cost_table(meta),
        *guest_clock_table(meta),
        *workload_clock_table(meta),
        *queue_run_table(meta),
        *cpu_table(result),
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
                  + (f"; beyond ±{CLOCK_TOLERANCE:.0%}, and so left out of the kernel's figures above (the guest fell "
                     f"behind the host): {'; '.join(off)}." if off else f", every run within ±{CLOCK_TOLERANCE:.0%}.")]
    antic = anticipation.table(result["rows"], meta["runtime"], CALIBRATION_RUNTIME_S)
    if antic:
        lines += ["", *antic]
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
    check_run_ids(range(len(workloads) * len(elevators) * args.reps))  # one disk's runs in one boot
    repo = testbed.find_repo(args.repo)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    kver = testbed.prepare(repo)
    meta = {"kernel": kver, "disks": disks, "workloads": workloads, "elevators": elevators,
            "reps": args.reps, "runtime": args.runtime, "trace": trace, "load_before": testbed.host_load(),
            "icount": args.icount, "think_model": args.think, "queue_runs": args.queue_runs,
            "tracer_cost": getattr(args, "tracer_cost", "take-back"),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"), "plans": {}, "capacity": {}}
    # 1. the guest's own time per request
    calibrate(repo, out, meta, args)
    # 2. the kernel on each emulated disk (args.guests disks' guests side by side)
    plans = {}
    for disk in disks:
        plans[disk] = make_plan(disk, workloads, elevators, args.reps)
        meta["plans"][disk] = plans[disk].runs
        meta["capacity"][disk] = capacity_sectors(disk)

    def one(disk: str) -> None:
        print(f"iolab kernel compare: {disk}: {len(plans[disk].runs)} runs of {args.runtime} s (about "
              f"{len(plans[disk].runs) * (args.runtime + 12) // 60 + 1} min); load {testbed.host_load()}", flush=True)
        run_disk(repo, out, disk, plans[disk], args.runtime, trace=trace, icount=args.icount)

    for i in range(0, len(disks), args.guests):
        run_side_by_side([lambda d=d: one(d) for d in disks[i:i + args.guests]], "compare")
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
    if not 1 <= getattr(args, "guests", 1) <= MAX_GUESTS:
        raise UserError(f"--guests: {args.guests} is outside 1..{MAX_GUESTS}")
    if getattr(args, "queue_runs", False) and (args.think not in ("guest", "workload", "cpu")
                                               or args.overhead_us is not None):
        raise UserError(f"--queue-runs: kblockd's runs are measured in the calibration's traced runs, which "
                        f"--think {args.think}{' with --overhead-us' if args.overhead_us is not None else ''} "
                        "does not have (use --think guest, workload or cpu)")
    us = args.overhead_us
    if us is not None and not (math.isfinite(us) and 0 <= us <= MAX_OVERHEAD_US):
        raise UserError(f"--overhead-us: {us} is not a time per request in 0..{MAX_OVERHEAD_US:g} µs")


def resim(args) -> int:
    """Calibrate again and run the simulator side again over the kernel runs
    of a finished comparison."""
    out = Path(args.output)
    meta = load_meta(out)
    meta["think_model"] = args.think
    meta["queue_runs"] = args.queue_runs
    meta["tracer_cost"] = getattr(args, "tracer_cost", "take-back")
    if args.keep_calibration and args.overhead_us is None:
        for disk in meta["disks"]:
            share = out / f"calibration-{disk}"
            if not (share / "emu.csv").exists() and meta.get("calibration") == "zero":
                share = out / "zero-latency"
            if not (share / "emu.csv").exists():
                raise UserError(f"--keep-calibration: {out} has no calibration boot for {disk} "
                                f"({share.name}/emu.csv)")
            meta.setdefault("host_by_disk", {})[disk] = measure_host(
                share, take_back=meta["tracer_cost"] == "take-back", elevators=meta["elevators"])
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
                                      host_of(meta, disk).get(el), meta.get("think_model", "mean"),
                                      meta.get("icount"), takes_queue_runs(meta, el))
                if note:
                    notes[el] = note
                (out / "sim" / f"{disk}-{wl}-{el}.spec.json").write_text(json.dumps(spec, indent=2) + "\n")
                runs += run_sim(spec)
            (out / "sim" / f"{disk}-{wl}.json").write_text(json.dumps({"runs": runs}, indent=2) + "\n")
    meta["notes"] = notes
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
