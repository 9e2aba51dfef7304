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
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Optional

from iolab.cli.errors import UserError
from iolab.paper.wpcas_kernel_plan import (DISK, FILE_KB, ICOUNT, PLACEMENTS, RECORD_KB, SCHEDULERS, KPlan, Run,
                                           expected_requests, job_name, make_runs, plan_for, share_out, write_share)
from iolab.paper.wpcas_kernel_report import SideBySide, shown, side_by_side, write_report
from iolab.paper.wpcas_kernel_sim import guest_time, read_sim_guest, run_sim, run_sim_guest, sim_rows

__all__ = ["analyse", "kernel_rows", "resim_guest", "run", "shown", "side_by_side", "SideBySide"]


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
    from iolab.kernel.emulog import cut_log, off_clock
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
            # requests as the disk saw them: fewer than fio's when the block
            # layer merged two processes' records across the boundary of two
            # packed files (any elevator may; the bytes must all be there)
            "requests": cut["requests"], "expected_requests": expected_requests(r.mode, r.classes, file_kb),
            "bytes": cut["bytes"], "expected_bytes": expected_requests(r.mode, r.classes, file_kb) * RECORD_KB * 1024,
            "antic_started": st.get("antic_started", 0), "antic_succeeded": st.get("antic_succeeded", 0),
            "antic_failed": st.get("antic_failed", 0),
            "mean_seek_cylinders": cut["mean_seek_cylinders"],
            "phases": fio_phases(outdir / r.share / "runs" / f"{r.id}.json"),
            "clock_ratio": cut["clock_ratio"], "guest": r.share, "off_clock": off_clock(cut),
            # the guest's time from a reply to the next request, by the disk's clock
            "mean_gap_ms": cut["mean_gap_us"] / 1000, "mean_service_ms": cut["mean_service_ms"],
            "continued": cut["continued"],
        })
    return rows


# ---------------------------------------------------------------- the command


CALIBRATION_SHARE = f"calibration-{DISK}"


def run(quick: bool, outdir: Path, reps: Optional[int] = None, classes: Optional[list[int]] = None,
        placement: str = "packed", icount: Optional[int] = ICOUNT, repo: Optional[str] = None,
        guests: int = 1, file_kb: int = FILE_KB, calibrate: bool = True,
        calibration: Optional[Path] = None, trace: tuple[str, ...] = (),
        take_back: bool = True) -> list[SideBySide]:
    """The guest's runs and the simulator's, decided and reported. With
    ``calibrate`` (and no ``calibration`` boot given) one more guest, side
    by side with the others, measures the guest's own time per request
    under each elevator (`iolab kernel compare`'s calibration, traced), and
    the simulator runs a third time paying it (``take_back``: without the
    tracer's own time, iolab.kernel.tracercost)."""
    from iolab import _iolab
    from iolab.kernel import testbed
    from iolab.kernel.calibration import CALIBRATION_RUNTIME_S, calibration_plan
    from iolab.kernel.guest import boot_on_emulator, run_disk, run_side_by_side

    plan = plan_for(quick, reps, classes, placement, icount, guests, file_kb, trace)
    runs = make_runs(plan)
    root = testbed.find_repo(repo)
    t0 = time.monotonic()
    outdir.mkdir(parents=True, exist_ok=True)
    seek = json.loads(_iolab.wpcas_seek_tunables(DISK))
    capacity = int(seek["capacity_sectors"])
    host = guest_time(calibration, take_back) if calibration is not None else None
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
        "calibration": str(calibration) if calibration is not None else (CALIBRATION_SHARE if calibrate else None),
    }
    for g in groups:
        share = outdir / g[0].share
        share.mkdir(parents=True, exist_ok=True)
        write_share(share, plan, g, capacity, seek["tunables"])
    tasks = [lambda g=g, e=e: boot_on_emulator(root, outdir / g[0].share, DISK, e, icount=plan.icount)
             for g, e in zip(groups, expect)]
    if calibrate and calibration is None:
        elevators = sorted({s.elevator for s in SCHEDULERS})
        cal_plan, traced = calibration_plan(DISK, elevators, "guest")
        tasks.append(lambda: run_disk(root, outdir, DISK, cal_plan, CALIBRATION_RUNTIME_S,
                                      share_name=CALIBRATION_SHARE, icount=plan.icount, trace_runs=traced))
    side = f" on {len(tasks)} guests side by side" if len(tasks) > 1 else ""
    print(f"iolab paper wpcas --kernel: {len(runs)} guest runs on {DISK}{side} (about {max(expect) / 1.5 / 60:.0f} "
          f"min of disk time{' on the longest' if side else ''}), icount {plan.icount}"
          f"{', the guest calibrated beside them' if calibrate and calibration is None else ''}; "
          f"load {testbed.host_load()}", flush=True)
    try:
        run_side_by_side(tasks, "paper-guest")
    finally:
        meta["load_after"] = testbed.host_load()
        meta["wall_s"] = time.monotonic() - t0
        (outdir / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    if calibrate or calibration is not None:
        resim_guest(outdir, calibration or outdir / CALIBRATION_SHARE, host, take_back)
    return analyse(outdir, sim)


def resim_guest(outdir: Path, calibration: Path, host: Optional[dict] = None, take_back: bool = True) -> None:
    """The simulator's third side, paying the guest's time of the
    calibration boot ``calibration``, written into ``outdir``."""
    meta = load_meta(outdir)
    plan = KPlan(**{**meta["plan"], "trace": tuple(meta["plan"].get("trace", ()))})
    run_sim_guest(plan, outdir, host if host is not None else guest_time(calibration, take_back))
    meta["tracer_cost"] = "take-back" if take_back else "keep"
    meta["calibration"] = str(calibration) if calibration.parent.resolve() != outdir.resolve() else calibration.name
    (outdir / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


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
        plan = KPlan(**{**meta["plan"], "trace": tuple(meta["plan"].get("trace", ()))})
        runs = [Run(**r) for r in meta["runs"]]
        if sim is None:
            sim = []
            for mode in plan.modes:
                for c in plan.classes:
                    doc = json.loads((outdir / "sim" / f"{job_name(mode, c)}.json").read_text())
                    sim += sim_rows(doc, mode, c, plan.file_kb)
        kern = kernel_rows(outdir, runs, meta["capacity"], plan.file_kb)
        sim = sim + read_sim_guest(outdir, plan)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        raise UserError(f"{outdir}: the run's results are incomplete or damaged ({type(e).__name__}: {e})") from None
    # a run whose guest fell behind the disk's clock measured the host's load, not the guest
    left_out = [r for r in kern if r["off_clock"]]
    rows = [r for r in kern if not r["off_clock"]] + sim
    result = side_by_side(rows, PLACEMENTS[plan.placement])
    write_report(outdir, meta, plan, rows, result, left_out)
    return result
