"""The verdicts of `iolab paper wpcas --kernel`, side by side (the kernel's,
the simulator's, and the simulator's paying the guest's time), and its
report (report.md, report.html, paper-wpcas-kernel.json)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pandas as pd

from iolab.paper import wpcas_claims as claims
from iolab.paper.wpcas import with_startup
from iolab.paper.wpcas_experiments import STARTUPS
from iolab.paper.wpcas_kernel_plan import CFQ_NOTE, DISK, FILE_KB, PLACEMENTS, RECORD_KB, SCHEDULERS, KPlan
from iolab.paper.wpcas_kernel_sim import SIM, SIM_GUEST


@dataclass
class SideBySide:
    claim: str
    startup: str
    paper: str
    kernel: claims.Verdict
    sim: claims.Verdict
    # the simulator paying the guest's measured time (None: not run)
    sim_guest: Optional[claims.Verdict] = None


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
    side = {name: verdicts(df[df["side"] == name] if len(df) else df, reading_name) for name in ("kernel", SIM)}
    guest = verdicts(df[df["side"] == SIM_GUEST], reading_name) if len(df) and (df["side"] == SIM_GUEST).any() else []

    def match(vs: list[claims.Verdict], a: claims.Verdict) -> Optional[claims.Verdict]:
        return next((x for x in vs if x.claim == a.claim and x.startup == a.startup), None)

    out = []
    for a in side["kernel"]:
        b = match(side[SIM], a)
        if b is not None:
            out.append(SideBySide(a.claim, a.startup, a.paper, a, b, match(guest, a)))
    return out


def shown(v: claims.Verdict) -> str:
    """A label as the tables print it: one run decides nothing by
    interval, and says so."""
    return f"{v.verdict} (one run)" if v.note == "one run" else v.verdict


def _mean_ci(v: pd.Series) -> str:
    m, h = claims.interval(v.to_numpy(dtype=float))
    if math.isnan(m):
        return "-"
    return f"{m:.3f}" if h == 0 else f"{m:.3f} ±{h:.3f}"


def write_report(outdir: Path, meta: dict[str, Any], plan: KPlan, rows: list[dict[str, Any]],
                 result: list[SideBySide], left_out: Optional[list[dict[str, Any]]] = None) -> None:
    from iolab.document import Document

    def verdict_doc(v: claims.Verdict) -> dict[str, Any]:
        return {**{k: x for k, x in v.__dict__.items() if k != "steps"}, "steps": [p.__dict__ for p in v.steps]}

    (outdir / "paper-wpcas-kernel.json").write_text(json.dumps(
        {"meta": meta, "margin": claims.MARGIN, "labels": list(claims.LABELS), "runs": rows,
         "left_out": left_out or [],
         "claims": [{"claim": r.claim, "startup": r.startup, "paper": r.paper, "kernel": verdict_doc(r.kernel),
                     "simulator": verdict_doc(r.sim),
                     **({"simulator_guest": verdict_doc(r.sim_guest)} if r.sim_guest else {})} for r in result]},
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
    guest = any(r.sim_guest for r in result)
    doc.heading("Verdicts: kernel and simulator")
    doc.para(f"Labels of `iolab paper wpcas` (paired per repetition or seed, margin ±{claims.MARGIN:.0%}). "
             "'(one run)': a single kernel repetition, no interval: the label reads the one run's difference "
             "against the margin, as a deterministic simulation is read; it is not a statistical verdict."
             + (f" `{SIM_GUEST}`: the simulator paying the guest's own time per request under each elevator, "
                f"measured by the calibration boot `{meta.get('calibration')}` (the part charged to every request, "
                "and the guest-clock time from a completion to the next insertion as each request's CPU time; "
                "`iolab kernel compare --think guest`)." if guest else ""))
    extra = [SIM_GUEST] if guest else []
    doc.table(["claim", "WPCAS start-up", "paper", "kernel", "simulator", *extra],
              [[r.claim, r.startup, r.paper, shown(r.kernel), shown(r.sim),
                *([shown(r.sim_guest) if r.sim_guest else "-"] if guest else [])] for r in result])
    doc.heading("The paired differences", level=3)
    doc.table(["claim", "start-up", "kernel", "simulator", *extra],
              [[r.claim, r.startup, r.kernel.iolab, r.sim.iolab,
                *([r.sim_guest.iolab if r.sim_guest else "-"] if guest else [])] for r in result])
    doc.heading("Throughput and anticipation")
    doc.para("MB/s: the bytes the disk moved from the run's first request to its last completion (the kernel's "
             "by the emulator's log), mean ±95% half-width over repetitions (seeds). A-T/A-S/A-F: "
             "anticipations started, succeeded, failed per run. Requests: per run, against IOzone's "
             "processes x tests x records (fewer where the block layer merged two processes' records at the "
             "boundary of their back-to-back files; the bytes are all there). Gap: the kernel's mean time from the disk's reply to the next "
             "request's arrival (the guest's time per request, by the disk's clock); service: the emulated "
             "disk's mean time per request; continued: the share of requests that began where the one before "
             "ended (a process's stream served on, by anticipation or by the completing process taking the "
             "freed tag first), from the emulator's log.")
    table = []
    if len(df):
        for (mode, c), g in df.groupby(["mode", "classes"], sort=False):
            for s in SCHEDULERS:
                cells = [mode, str(c), s.label]
                for side in ("kernel", SIM, *extra):
                    x = g[(g["side"] == side) & (g["scheduler"] == s.label)]
                    cells.append(_mean_ci(x["throughput_mb_s"]) if len(x) else "-")
                for side in ("kernel", SIM):
                    x = g[(g["side"] == side) & (g["scheduler"] == s.label)]
                    cells.append("/".join(f"{x[k].mean():.0f}" for k in ("antic_started", "antic_succeeded",
                                                                           "antic_failed")) if len(x) else "-")
                x = g[(g["side"] == "kernel") & (g["scheduler"] == s.label)]
                cells.append(f"{x['requests'].mean():.0f} / {int(x['expected_requests'].iloc[0])}" if len(x) else "-")
                cells.append(f"{x['mean_gap_ms'].mean():.2f}" if len(x) and "mean_gap_ms" in x else "-")
                cells.append(f"{x['mean_service_ms'].mean():.2f}" if len(x) and "mean_service_ms" in x else "-")
                cells.append(f"{x['continued'].mean():.0%}" if len(x) and "continued" in x else "-")
                table.append(cells)
    doc.table(["mode", "classes", "scheduler", "kernel MB/s", "sim MB/s", *[f"{e} MB/s" for e in extra],
               "kernel A-T/A-S/A-F", "sim A-T/A-S/A-F", "kernel requests", "kernel gap ms", "kernel service ms",
               "kernel continued"], table)
    left_out = left_out or []
    kern = [r for r in rows if r["side"] == "kernel"] + left_out
    ratios = [r["clock_ratio"] for r in kern if not math.isnan(r.get("clock_ratio", math.nan))]
    if ratios:
        from iolab.kernel.emulog import CLOCK_TOLERANCE

        off = [f"run {r['run']} ({r['scheduler']}, {r['mode']} {r['classes']}: {r['clock_ratio']:.3f})"
               for r in left_out]
        doc.para(f"One clock for the guest and the disk? Each run's length by the guest's clock over its length by "
                 f"the emulator's: {min(ratios):.4f} to {max(ratios):.4f} over {len(ratios)} runs"
                 + (f"; beyond ±{CLOCK_TOLERANCE:.0%}, and so left out of every figure and verdict above (the guest "
                    f"fell behind the host): {', '.join(off)}." if off
                    else f", every run within ±{CLOCK_TOLERANCE:.0%}."))
    doc.write(outdir, "report")
