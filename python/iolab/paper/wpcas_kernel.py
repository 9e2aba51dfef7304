"""`iolab paper wpcas --kernel`: the paper's IOzone experiments (Figures
3–8) on Linux 6.1 in a QEMU guest, over an `iolab emu` disk of the HP 97560
model, and the same experiments in the simulator, decided with the same
paired statistics and labels as `iolab paper wpcas` (wpcas_claims).

Each experiment (sequential `-i 0 -i 1` or random `-i 2`, N processes, 4 KiB
records, 512 KiB files, O_DIRECT) becomes one fio job file: one fio job per
process and IOzone test, on the process's region of the raw device, the
region's first sector taken from the simulator's own placement of the
files (`_iolab.iozone_file_starts`), so that both sides put every file on
the same sectors. IOzone's tests follow one another as in its throughput
mode: all processes of a test start together, and the next test starts when
all have finished (fio's `stonewall` on the first job of each test).

The schedulers of the paper that 6.1 can run: the module's `anticipatory`
and `wpcas` (under both start-up rules, by the module's `min_samples` and
`prior_ps` tunables, as the simulator's `wpcas` and `wpcas-ste`), `none` for
NOOP and `mq-deadline` for Deadline. CFQ left Linux in 5.0 with the legacy
block layer: its claim is not decided on either side.

A run's throughput is the bytes the disk moved over the time from the
run's first request to its last completion, by the emulator's clock (its
log cut at the run's two marker reads): the simulator's `throughput_mb_s`.
The simulator side runs the same schedulers (none and mq-deadline as the
simulator's 6.1 elevators, AS and WPCAS as 2.6.20's) on the same disk at
queue depth 1; it does not charge the guest's own time per request (the
kernel's absolute MB/s are lower by that time), so the two sides are set
side by side by their verdicts, not their MB/s.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

import pandas as pd

from iolab.cli.errors import UserError
from iolab.paper import wpcas_claims as claims
from iolab.paper.wpcas import with_startup
from iolab.paper.wpcas_experiments import FULL, QUICK, STARTUPS, WPCAS_LABEL, iozone_spec, reading

DISK = "hp97560"
DEVICE = "/dev/vda"
SECTOR = 512
# The reading of wpcas_experiments whose file placement the kernel runs:
# `packed` (files back to back from sector 0) by default; `paper` (ext3's
# layout of one directory, with its per-process goals) can be reproduced
# on the raw device too, since with direct I/O IOzone reads and writes only
# its files' sectors.
PLACEMENTS = {"packed": "packed", "ext3": "paper"}
MODES = ("sequential", "random")
CLASS_COUNTS = (10, 40, 80)
# IOzone's tests, as the simulator's iozone workload runs them
# (crates/iolab-sim/src/workload/iozone.rs) and names them in `phases`.
TESTS = {
    "sequential": [("initial write", "write"), ("rewrite", "write"), ("read", "read"), ("re-read", "read")],
    "random": [("random read", "randread"), ("random write", "randwrite")],
}
RECORD_KB = 4
FILE_KB = 512
ICOUNT = 6
CFQ_NOTE = ("CFQ is not in Linux 6.1 (it left with the legacy block layer in 5.0): not run on the kernel, "
            "so not decided on either side")


@dataclass(frozen=True)
class Sched:
    """One of the paper's schedulers: its label (the simulator's and the
    claims'), the 6.1 elevator standing for it, the elevator's tunables on
    top of the module's defaults, and the simulator's tunables."""

    label: str
    elevator: str
    tunables: tuple[tuple[str, str], ...] = ()
    sim_tunables: tuple[tuple[str, float], ...] = ()


SCHEDULERS = [
    Sched("noop", "none"),
    Sched("deadline", "mq-deadline"),
    Sched("as", "anticipatory"),
    # as-rule: the module's defaults are the simulator's (min_samples 4,
    # prior_ps 0; docs/kernel.md "Defaults equal in both homes")
    Sched(WPCAS_LABEL["as-rule"], "wpcas"),
    Sched(WPCAS_LABEL["ste"], "wpcas", tunables=(("min_samples", "0"), ("prior_ps", "1")),
          sim_tunables=tuple(STARTUPS["ste"].items())),
]


@dataclass
class KPlan:
    """What the kernel side runs, and how many seeds the simulator gets."""

    classes: tuple[int, ...]
    reps: int
    placement: str = "packed"
    modes: tuple[str, ...] = MODES
    sim_seq_seeds: int = QUICK.seq_seeds
    sim_random_seeds: int = QUICK.random_seeds
    icount: Optional[int] = ICOUNT
    guests: int = 1
    file_kb: int = FILE_KB


def plan_for(quick: bool, reps: Optional[int] = None, classes: Optional[list[int]] = None,
             placement: str = "packed", icount: Optional[int] = ICOUNT, guests: int = 1,
             file_kb: int = FILE_KB) -> KPlan:
    """Quick: 10 classes, one repetition (about 15 minutes in all).
    Full: 10, 40 and 80 classes, 3 repetitions (about 6 hours of disk time,
    shared out among ``guests`` booted side by side).
    The simulator gets the seeds of `iolab paper wpcas` (or --quick)."""
    base = QUICK if quick else FULL
    return KPlan(classes=tuple(classes or ((10,) if quick else CLASS_COUNTS)), reps=reps or (1 if quick else 3),
                 placement=placement, sim_seq_seeds=base.seq_seeds, sim_random_seeds=base.random_seeds,
                 icount=icount, guests=guests, file_kb=file_kb)


def workload(mode: str, classes: int, placement: str, file_kb: int = FILE_KB) -> dict[str, Any]:
    """The simulator's `[workload]` of one experiment: exactly `iolab paper
    wpcas`'s for the reading whose placement this is (at the paper's
    512 KiB files, or scaled down to ``file_kb``, on both sides alike)."""
    w = iozone_spec(reading(PLACEMENTS[placement]), mode, classes, 1)["workload"]
    return {**w, "file_kb": file_kb}


def file_starts(mode: str, classes: int, placement: str, capacity: int, file_kb: int = FILE_KB) -> list[int]:
    """Each process's first sector, from the simulator's own placement."""
    from iolab import _iolab

    try:
        return list(_iolab.iozone_file_starts(json.dumps(workload(mode, classes, placement, file_kb)), capacity))
    except ValueError as e:
        raise UserError(f"IOzone's files on {DISK}: {e}") from None


def job_name(mode: str, classes: int) -> str:
    return f"iozone-{mode}-{classes}"


def fio_job(mode: str, classes: int, placement: str, capacity: int, device: str = DEVICE,
            file_kb: int = FILE_KB) -> str:
    """The fio job file of one IOzone experiment on the raw device: per
    IOzone test one fio job per process on its file's sectors, psync with
    O_DIRECT (one synchronous request at a time; an O_DIRECT write is
    REQ_SYNC as the simulator's WRITE_SYNC), random offsets with
    replacement as the simulator draws them; `stonewall` on the first job
    of each test after the first: all processes of a test start together,
    the next test when all have ended (IOzone's throughput mode)."""
    size = file_kb * 1024
    starts = file_starts(mode, classes, placement, capacity, file_kb)
    from iolab.kernel.guest import MARKER_SECTORS

    marker = capacity - MARKER_SECTORS
    if any(s * SECTOR + size > marker * SECTOR for s in starts):
        raise UserError(f"an IOzone file reaches the marker blocks at sector {marker}")
    lines = [
        f"# iolab paper wpcas --kernel: IOzone {mode} ({' then '.join(t for t, _ in TESTS[mode])}), "
        f"{classes} processes, {RECORD_KB} KiB records, {file_kb} KiB files, placement {placement}",
        "[global]",
        f"filename={device}",
        "ioengine=psync",
        "direct=1",
        f"bs={RECORD_KB}k",
        f"size={size}",
        "norandommap=1",
        "randrepeat=0",
        "invalidate=0",
        "group_reporting=1",
        "",
    ]
    for t, (test, rw) in enumerate(TESTS[mode]):
        slug = test.replace(" ", "-")
        for i, start in enumerate(starts):
            lines.append(f"[{slug}-{i}]")
            if t > 0 and i == 0:
                lines.append("stonewall")
            lines += [f"rw={rw}", f"offset={start * SECTOR}", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- the guest's runs


@dataclass
class Run:
    id: int
    mode: str
    classes: int
    label: str
    rep: int
    # the guest that runs it: its directory under the output (one guest: the disk's name)
    share: str = DISK

    @property
    def job(self) -> str:
        return job_name(self.mode, self.classes)

    @property
    def sched(self) -> Sched:
        return next(s for s in SCHEDULERS if s.label == self.label)


def make_runs(plan: KPlan) -> list[Run]:
    """Repetition-major; within a repetition every experiment, the
    schedulers' order rotated by one per repetition."""
    runs, n = [], 0
    for rep in range(plan.reps):
        order = SCHEDULERS[rep % len(SCHEDULERS):] + SCHEDULERS[:rep % len(SCHEDULERS)]
        for mode in plan.modes:
            for c in plan.classes:
                for s in order:
                    runs.append(Run(n, mode, c, s.label, rep))
                    n += 1
    return runs


def share_out(runs: list[Run], guests: int, seconds: dict[tuple[str, int, str], float]) -> list[list[Run]]:
    """Share the runs out among ``guests`` booted side by side: a block is
    one experiment (mode, classes) of one repetition, every scheduler in
    it, so that the schedulers a repetition pairs run in one boot, one
    after the other, as with one guest. The longest blocks first, each to
    the guest with the least work so far (by the simulator's run lengths);
    each guest's runs keep the plan's order. Every guest gets a block if
    there are enough."""
    if guests <= 1:
        return [runs]
    blocks: dict[tuple[int, str, int], list[Run]] = {}
    for r in runs:
        blocks.setdefault((r.rep, r.mode, r.classes), []).append(r)
    cost = {k: sum(seconds.get((r.mode, r.classes, r.label), 60.0) for r in b) for k, b in blocks.items()}
    load = [0.0] * min(guests, len(blocks))
    mine: list[list[tuple[int, str, int]]] = [[] for _ in load]
    for k in sorted(blocks, key=lambda k: (-cost[k], k)):
        g = min(range(len(load)), key=lambda i: (load[i], i))
        load[g] += cost[k]
        mine[g].append(k)
    out = []
    for g, keys in enumerate(mine):
        name = f"{DISK}-g{g + 1}"
        group = sorted((r for k in keys for r in blocks[k]), key=lambda r: r.id)
        for r in group:
            r.share = name
        out.append(group)
    return out


def write_share(share: Path, plan: KPlan, runs: list[Run], capacity: int, seek: dict[str, int]) -> None:
    """The files guest/compare.sh reads: jobs, plan (with each run's
    tunables file), markers, the module's seek curve."""
    from iolab.kernel.guest import MARKER_SECTORS, check_run_ids

    check_run_ids(r.id for r in runs)
    (share / "jobs").mkdir(parents=True, exist_ok=True)
    (share / "tunables").mkdir(exist_ok=True)
    for mode, c in sorted({(r.mode, r.classes) for r in runs}):
        (share / "jobs" / f"{job_name(mode, c)}.fio").write_text(
            fio_job(mode, c, plan.placement, capacity, file_kb=plan.file_kb))
    for s in SCHEDULERS:
        if s.tunables:
            (share / "tunables" / s.label).write_text("".join(f"{k} {v}\n" for k, v in s.tunables))
    (share / "plan.txt").write_text("".join(
        f"{r.id} {r.job} {r.sched.elevator}" + (f" {r.label}" if r.sched.tunables else "") + "\n" for r in runs))
    (share / "disk.conf").write_text(f"marker_sector {capacity - MARKER_SECTORS}\n")
    (share / "wpcas.conf").write_text("".join(f"{k} {v}\n" for k, v in seek.items()))
    (share / "trace.conf").unlink(missing_ok=True)


def fio_phases(path: Path) -> list[dict[str, float]]:
    """fio's figures per reporting group (one per IOzone test)."""
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    out = []
    for job in data.get("jobs", []):
        bw = sum(job[d]["bw_bytes"] for d in ("read", "write"))
        out.append({"name": job.get("jobname", ""), "mb_s": bw / 1e6, "runtime_ms": float(job.get("job_runtime", 0))})
    return out


def kernel_rows(outdir: Path, runs: list[Run], capacity: int, file_kb: int = FILE_KB) -> list[dict[str, Any]]:
    """One row per finished guest run: throughput by the emulator's log,
    the module's counters, fio's per-test figures."""
    from iolab.kernel.emulog import cut_log
    from iolab.kernel.guest import Plan, stats_file

    cuts: dict[tuple[str, int], dict] = {}
    for name in sorted({r.share for r in runs}):
        boot = outdir / name
        mine = [(r.id, r.job, r.label, r.rep) for r in runs if r.share == name]
        if (boot / "emu.csv").exists():
            cuts.update({(name, rid): c for rid, c in cut_log(boot, Plan(DISK, mine), capacity).items()})
    rows = []
    for r in runs:
        cut = cuts.get((r.share, r.id))
        if not cut or not cut.get("span_s"):
            continue
        st = stats_file(outdir / r.share / "runs" / f"{r.id}.stats")
        rows.append({
            "side": "kernel", "scheduler": r.label, "elevator": r.sched.elevator, "seed": r.rep,
            "mode": r.mode, "classes": r.classes, "run": r.id,
            "throughput_mb_s": cut["bytes"] / cut["span_s"] / 1e6, "elapsed_s": cut["span_s"],
            "requests": cut["requests"], "expected_requests": expected_requests(r.mode, r.classes, file_kb),
            "antic_started": st.get("antic_started", 0), "antic_succeeded": st.get("antic_succeeded", 0),
            "antic_failed": st.get("antic_failed", 0),
            "mean_seek_cylinders": cut["mean_seek_cylinders"],
            "phases": fio_phases(outdir / r.share / "runs" / f"{r.id}.json"),
            "clock_ratio": cut["clock_ratio"], "guest": r.share,
        })
    return rows


def expected_requests(mode: str, classes: int, file_kb: int = FILE_KB) -> int:
    return classes * len(TESTS[mode]) * (file_kb // RECORD_KB)


# ---------------------------------------------------------------- the simulator's runs


def sim_spec(mode: str, classes: int, plan: KPlan) -> dict[str, Any]:
    from iolab.kernel.compare import GUEST_NR_REQUESTS, sim_counterpart, sim_scheduler_names

    known = sim_scheduler_names()
    scheds = []
    for s in SCHEDULERS:
        name, _ = sim_counterpart(s.elevator, known)
        entry: dict[str, Any] = {"name": name, "label": s.label, **dict(s.sim_tunables)}
        if s.elevator == "mq-deadline":
            entry["nr_requests"] = GUEST_NR_REQUESTS  # as the guest sets after each switch
        scheds.append(entry)
    seeds = plan.sim_seq_seeds if mode == "sequential" else plan.sim_random_seeds
    return {
        "name": f"IOzone {mode}, {classes} classes ({plan.placement}), the kernel's schedulers",
        "disk": {"preset": DISK, "queue_depth": 1},
        "scheduler": scheds,
        "workload": workload(mode, classes, plan.placement, plan.file_kb),
        "run": {"seed": 1, "repetitions": seeds},
    }


def sim_rows(doc: dict[str, Any], mode: str, classes: int, file_kb: int = FILE_KB) -> list[dict[str, Any]]:
    rows = []
    for r in doc["runs"]:
        a = r.get("anticipation") or {}
        rows.append({
            "side": "simulator", "scheduler": r["scheduler"], "seed": r["seed"], "mode": mode, "classes": classes,
            "throughput_mb_s": r["throughput_mb_s"], "elapsed_s": r["elapsed_ms"] / 1000,
            "requests": r["requests"]["completed"], "expected_requests": expected_requests(mode, classes, file_kb),
            "antic_started": a.get("started", 0), "antic_succeeded": a.get("succeeded", 0),
            "antic_failed": a.get("failed", 0), "mean_seek_cylinders": r["seek"]["mean_cylinders"],
            "phases": [{"name": p["phase"], "mb_s": p["children_mb_s"], "runtime_ms": p["elapsed_ms"]}
                       for p in r.get("phases", [])],
        })
    return rows


def run_sim(plan: KPlan, out: Path) -> list[dict[str, Any]]:
    from iolab.simulate import run_experiment, spec_from_dict

    (out / "sim").mkdir(parents=True, exist_ok=True)
    rows = []
    for mode in plan.modes:
        for c in plan.classes:
            spec = sim_spec(mode, c, plan)
            outcome = run_experiment(spec_from_dict(spec, spec["name"]))
            try:
                doc = outcome.document
            finally:
                outcome.store.close()
            slim = {**doc, "runs": [{k: v for k, v in r.items() if k not in ("per_process", "per_class")}
                                    for r in doc["runs"]]}
            (out / "sim" / f"{job_name(mode, c)}.json").write_text(json.dumps({"spec": spec, **slim}, indent=1) + "\n")
            rows += sim_rows(doc, mode, c, plan.file_kb)
    return rows


# ---------------------------------------------------------------- verdicts


@dataclass
class SideBySide:
    claim: str
    startup: str
    paper: str
    kernel: claims.Verdict
    sim: claims.Verdict


def verdicts(df: pd.DataFrame, reading_name: str) -> list[claims.Verdict]:
    """The IOzone claims on one side's runs, under each WPCAS start-up
    (wpcas_claims decides them; CFQ's is marked not run)."""
    out = []
    for startup in STARTUPS:
        vs = claims.iozone_claims(with_startup(df, startup), reading_name) if len(df) else []
        for v in vs:
            v.startup = startup
            if v.claim.startswith("CFQ"):
                v.verdict, v.iolab, v.note = "n/a", CFQ_NOTE, "cfq"
            elif any(p.n == 1 for p in v.steps):
                v.note = "one run"
        out += vs
    return out


def side_by_side(rows: list[dict[str, Any]], reading_name: str) -> list[SideBySide]:
    df = pd.DataFrame(rows)
    k = df[df["side"] == "kernel"] if len(df) else df
    s = df[df["side"] == "simulator"] if len(df) else df
    kv, sv = verdicts(k, reading_name), verdicts(s, reading_name)
    out = []
    for a in kv:
        b = next((x for x in sv if x.claim == a.claim and x.startup == a.startup), None)
        if b is not None:
            out.append(SideBySide(a.claim, a.startup, a.paper, a, b))
    return out


def shown(v: claims.Verdict) -> str:
    """A label as the tables print it: one run decides nothing by
    interval, and says so."""
    return f"{v.verdict} (one run)" if v.note == "one run" else v.verdict


# ---------------------------------------------------------------- the command


def run(quick: bool, outdir: Path, reps: Optional[int] = None, classes: Optional[list[int]] = None,
        placement: str = "packed", icount: Optional[int] = ICOUNT, repo: Optional[str] = None,
        guests: int = 1, file_kb: int = FILE_KB) -> list[SideBySide]:
    from iolab import _iolab
    from iolab.kernel import testbed
    from iolab.kernel.guest import boot_on_emulator, run_side_by_side

    plan = plan_for(quick, reps, classes, placement, icount, guests, file_kb)
    runs = make_runs(plan)
    root = testbed.find_repo(repo)
    t0 = time.monotonic()
    outdir.mkdir(parents=True, exist_ok=True)
    seek = json.loads(_iolab.wpcas_seek_tunables(DISK))
    capacity = int(seek["capacity_sectors"])
    # the simulator first: it takes seconds, and its run lengths bound the guest's
    sim = run_sim(plan, outdir)
    sim_s = {(r["mode"], r["classes"], r["scheduler"]): r["elapsed_s"] for r in sim}
    groups = share_out(runs, plan.guests, sim_s)
    expect = [sum(1.5 * sim_s.get((r.mode, r.classes, r.label), 60.0) + 15 for r in g) for g in groups]
    kver = testbed.prepare(root)
    meta: dict[str, Any] = {
        "kernel": kver, "disk": DISK, "plan": asdict(plan), "runs": [asdict(r) for r in runs],
        "capacity": capacity, "started": time.strftime("%Y-%m-%d %H:%M:%S"), "load_before": testbed.host_load(),
        "quick": quick,
    }
    for g in groups:
        share = outdir / g[0].share
        share.mkdir(parents=True, exist_ok=True)
        write_share(share, plan, g, capacity, seek["tunables"])
    side = f" on {len(groups)} guests side by side" if len(groups) > 1 else ""
    print(f"iolab paper wpcas --kernel: {len(runs)} guest runs on {DISK}{side} (about {max(expect) / 1.5 / 60:.0f} "
          f"min of disk time{' on the longest' if side else ''}), icount {plan.icount}; load {testbed.host_load()}",
          flush=True)
    try:
        run_side_by_side([lambda g=g, e=e: boot_on_emulator(root, outdir / g[0].share, DISK, e, icount=plan.icount)
                          for g, e in zip(groups, expect)], "paper-guest")
    finally:
        meta["load_after"] = testbed.host_load()
        meta["wall_s"] = time.monotonic() - t0
        (outdir / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return analyse(outdir, sim)


def load_meta(outdir: Path) -> dict[str, Any]:
    try:
        meta = json.loads((outdir / "meta.json").read_text())
        meta["plan"]["classes"] = tuple(meta["plan"]["classes"])
        meta["plan"]["modes"] = tuple(meta["plan"]["modes"])
        return meta
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UserError(f"{outdir}: no finished `iolab paper wpcas --kernel` run there ({e})") from None


def analyse(outdir: Path, sim: Optional[list[dict[str, Any]]] = None) -> list[SideBySide]:
    """Decide the claims on both sides and write the report from the runs
    in ``outdir`` (the simulator's again if ``sim`` is not given)."""
    meta = load_meta(outdir)
    try:
        plan = KPlan(**meta["plan"])
        runs = [Run(**r) for r in meta["runs"]]
        if sim is None:
            sim = []
            for mode in plan.modes:
                for c in plan.classes:
                    doc = json.loads((outdir / "sim" / f"{job_name(mode, c)}.json").read_text())
                    sim += sim_rows(doc, mode, c, plan.file_kb)
        kern = kernel_rows(outdir, runs, meta["capacity"], plan.file_kb)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        raise UserError(f"{outdir}: the run's results are incomplete or damaged ({type(e).__name__}: {e})") from None
    rows = kern + sim
    result = side_by_side(rows, PLACEMENTS[plan.placement])
    write_report(outdir, meta, plan, rows, result)
    return result


def _mean_ci(v: pd.Series) -> str:
    m, h = claims.interval(v.to_numpy(dtype=float))
    if math.isnan(m):
        return "-"
    return f"{m:.3f}" if h == 0 else f"{m:.3f} ±{h:.3f}"


def write_report(outdir: Path, meta: dict[str, Any], plan: KPlan, rows: list[dict[str, Any]],
                 result: list[SideBySide]) -> None:
    from iolab.document import Document

    def verdict_doc(v: claims.Verdict) -> dict[str, Any]:
        return {**{k: x for k, x in v.__dict__.items() if k != "steps"}, "steps": [p.__dict__ for p in v.steps]}

    (outdir / "paper-wpcas-kernel.json").write_text(json.dumps(
        {"meta": meta, "margin": claims.MARGIN, "labels": list(claims.LABELS), "runs": rows,
         "claims": [{"claim": r.claim, "startup": r.startup, "paper": r.paper, "kernel": verdict_doc(r.kernel),
                     "simulator": verdict_doc(r.sim)} for r in result]},
        indent=1, default=str) + "\n")
    df = pd.DataFrame(rows)
    nk = int((df["side"] == "kernel").sum()) if len(df) else 0
    doc = Document("WPCAS paper on the real kernel" + (" (quick)" if meta.get("quick") else ""))
    doc.bullets([
        f"Linux {meta.get('kernel', '?')} in QEMU" + (f" on the instruction counter (-icount shift={plan.icount}, "
                                                      "one vCPU)" if plan.icount is not None else " (TCG, no icount)")
        + f", the module's anticipatory and wpcas; `iolab emu` disk {DISK} (queue depth 1)",
        f"IOzone: {RECORD_KB} KiB records, {plan.file_kb} KiB files per process"
        + ("" if plan.file_kb == FILE_KB else f" (scaled down from the paper's {FILE_KB} KiB, on both sides)")
        + ", O_DIRECT, "
        f"{', '.join(str(c) for c in plan.classes)} classes; placement `{plan.placement}` (reading "
        f"'{PLACEMENTS[plan.placement]}'), the same sectors on both sides",
        f"kernel: {plan.reps} repetition(s), {nk} of {len(meta['runs'])} runs finished"
        + (f" on {len({r['share'] for r in meta['runs'] if 'share' in r})} guests side by side (each repetition "
           "of an experiment, every scheduler in it, in one guest)" if plan.guests > 1 else "")
        + "; simulator: "
        f"{plan.sim_seq_seeds} seeds sequential, {plan.sim_random_seeds} random",
        f"wall time {meta.get('wall_s', float('nan')):.0f} s; host load {meta.get('load_before', '?')} before, "
        f"{meta.get('load_after', '?')} after",
        "NOOP = none, Deadline = mq-deadline (the simulator's 6.1 elevators on its side), AS = anticipatory "
        "(the simulator's 2.6.20 AS), WPCAS = wpcas; " + CFQ_NOTE,
    ])
    doc.heading("Verdicts: kernel and simulator")
    doc.para(f"Labels of `iolab paper wpcas` (paired per repetition or seed, margin ±{claims.MARGIN:.0%}). "
             "'(one run)': a single kernel repetition, no interval: the label reads the one run's difference "
             "against the margin, as a deterministic simulation is read; it is not a statistical verdict.")
    doc.table(["claim", "WPCAS start-up", "paper", "kernel", "simulator"],
              [[r.claim, r.startup, r.paper, shown(r.kernel), shown(r.sim)] for r in result])
    doc.heading("The paired differences", level=3)
    doc.table(["claim", "start-up", "kernel", "simulator"],
              [[r.claim, r.startup, r.kernel.iolab, r.sim.iolab] for r in result])
    doc.heading("Throughput and anticipation")
    doc.para("MB/s: the bytes the disk moved from the run's first request to its last completion (the kernel's "
             "by the emulator's log), mean ±95% half-width over repetitions (seeds). A-T/A-S/A-F: "
             "anticipations started, succeeded, failed per run. Requests: per run, against IOzone's "
             "processes x tests x records.")
    table = []
    if len(df):
        for (mode, c), g in df.groupby(["mode", "classes"], sort=False):
            for s in SCHEDULERS:
                cells = [mode, str(c), s.label]
                for side in ("kernel", "simulator"):
                    x = g[(g["side"] == side) & (g["scheduler"] == s.label)]
                    cells.append(_mean_ci(x["throughput_mb_s"]) if len(x) else "-")
                for side in ("kernel", "simulator"):
                    x = g[(g["side"] == side) & (g["scheduler"] == s.label)]
                    cells.append("/".join(f"{x[k].mean():.0f}" for k in ("antic_started", "antic_succeeded",
                                                                           "antic_failed")) if len(x) else "-")
                x = g[(g["side"] == "kernel") & (g["scheduler"] == s.label)]
                cells.append(f"{x['requests'].mean():.0f} / {int(x['expected_requests'].iloc[0])}" if len(x) else "-")
                table.append(cells)
    doc.table(["mode", "classes", "scheduler", "kernel MB/s", "sim MB/s", "kernel A-T/A-S/A-F", "sim A-T/A-S/A-F",
               "kernel requests"], table)
    ratios = [r["clock_ratio"] for r in rows if r["side"] == "kernel" and not math.isnan(r.get("clock_ratio", math.nan))]
    if ratios:
        from iolab.kernel.emulog import CLOCK_TOLERANCE

        off = [f"run {r['run']} ({r['clock_ratio']:.3f})" for r in rows
               if r["side"] == "kernel" and abs(r.get("clock_ratio", 1.0) - 1) > CLOCK_TOLERANCE]
        doc.para(f"One clock for the guest and the disk? Each run's length by the guest's clock over its length by "
                 f"the emulator's: {min(ratios):.4f} to {max(ratios):.4f} over {len(ratios)} runs"
                 + (f"; beyond ±{CLOCK_TOLERANCE:.0%}: {', '.join(off)}." if off
                    else f", every run within ±{CLOCK_TOLERANCE:.0%}."))
    doc.write(outdir, "report")
