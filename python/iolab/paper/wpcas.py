"""`iolab paper wpcas`: rerun the WPCAS paper's experiments and write a
report (Markdown, HTML, PNG plots and the JSON behind them)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from iolab import report
from iolab.document import Document
from iolab.paper import wpcas_claims as claims
from iolab.paper.wpcas_experiments import (CLASS_COUNTS, FULL, IOZONE_SCHEDULERS, QUICK, SWEEP, Plan,
                                           iozone_spec, sweep_specs, table1_spec)
from iolab.simulate import spec_from_dict

FIGURE = {("sequential", 10): 3, ("sequential", 40): 4, ("sequential", 80): 5,
          ("random", 10): 6, ("random", 40): 7, ("random", 80): 8}


def _slim(doc: dict[str, Any]) -> dict[str, Any]:
    """The result document without per-process and per-class detail (which
    the paper's figures do not use and which would make the JSON huge)."""
    runs = [{k: v for k, v in r.items() if k not in ("per_process", "per_class")} for r in doc["runs"]]
    return {**doc, "runs": runs}


def run(quick: bool, outdir: Path, workers: Optional[int] = None, quiet: bool = False) -> tuple[int, list[claims.Verdict]]:
    from iolab.cli.progress import run_with_progress

    plan = QUICK if quick else FULL
    named: list[tuple[str, dict]] = []
    for mode in ("sequential", "random"):
        for c in CLASS_COUNTS:
            named.append((f"iozone/{mode}/{c}", iozone_spec(mode, c, plan.iozone_seeds)))
    named.append(("table1", table1_spec(plan)))
    for param, disk, spec in sweep_specs(plan):
        named.append((f"sweep/{param}/{disk}", spec))
    exps = [spec_from_dict(spec, f"<paper wpcas: {name}>") for name, spec in named]
    t0 = time.monotonic()
    outcomes = run_with_progress(exps, workers=workers, quiet=quiet, label="paper wpcas")
    wall = time.monotonic() - t0
    docs = {name: o.document for (name, _), o in zip(named, outcomes)}
    interrupted = any(o.interrupted for o in outcomes)
    outdir.mkdir(parents=True, exist_ok=True)
    verdicts = write_report(docs, plan, quick, outdir, wall, interrupted)
    return (130 if interrupted else 0), verdicts


def _frame(docs: dict[str, dict], prefix: str) -> pd.DataFrame:
    frames = []
    for name, doc in docs.items():
        if not name.startswith(prefix) or not doc["runs"]:
            continue
        df = report.runs_frame(doc)
        parts = name.split("/")
        df["experiment"] = name
        if prefix == "iozone/":
            df["mode"], df["classes"] = parts[1], int(parts[2])
        elif prefix == "sweep/":
            df["param"], df["disk"] = parts[1], parts[2]
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _bar(ax, df: pd.DataFrame, order: list[str], col: str = "throughput_mb_s") -> None:
    means = [df.loc[df["scheduler"] == s, col].mean() for s in order]
    cis = [report.ci95(df.loc[df["scheduler"] == s, col].to_numpy(dtype=float)) for s in order]
    colors = ["#8c8c8c", "#b0b0b0", "#55a868", "#4c72b0", "#c44e52", "#dd8452", "#8172b2"]
    ax.bar(range(len(order)), means, yerr=cis, capsize=4, color=colors[: len(order)])
    ax.set_xticks(range(len(order)), order)


def _plots(iozone: pd.DataFrame, sweep: pd.DataFrame, outdir: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = {}
    for (mode, classes), fig_no in FIGURE.items():
        g = iozone[(iozone["mode"] == mode) & (iozone["classes"] == classes)] if len(iozone) else iozone
        if g.empty:
            continue
        fig, ax = plt.subplots(figsize=(5, 3.4))
        _bar(ax, g, [s for s in IOZONE_SCHEDULERS if s in set(g["scheduler"])])
        ax.set_ylabel("throughput (MB/s)")
        ax.set_title(f"Figure {fig_no}: {mode}, {classes} classes ({g['seed'].nunique()} seeds, 95% CI)", fontsize=9)
        fig.tight_layout()
        name = f"fig{fig_no}_{mode}_{classes}.png"
        fig.savefig(outdir / name, dpi=110)
        plt.close(fig)
        files[f"fig{fig_no}"] = name
    for param in SWEEP:
        g = sweep[sweep["param"] == param] if len(sweep) else sweep
        if g.empty:
            continue
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
        for disk, gd in g.groupby("disk"):
            swept = gd[~gd["scheduler"].str.startswith("as (default)")]
            values = swept["scheduler"].str.split("=").str[-1].astype(float)
            swept = swept.assign(value=values.to_numpy())
            for ax, col, label in ((axes[0], "throughput_mb_s", "throughput (MB/s)"),
                                   (axes[1], "deceptive_idleness_ms", "deceptive idleness (ms)")):
                agg = swept.groupby("value")[col].agg(["mean", lambda v: report.ci95(v.to_numpy(dtype=float))])
                agg.columns = ["mean", "ci"]
                line = ax.errorbar(agg.index, agg["mean"], yerr=agg["ci"], marker="o", capsize=3, label=disk)
                base = gd.loc[gd["scheduler"] == "as (default)", col]
                if len(base):
                    ax.axhline(base.mean(), color=line[0].get_color(), ls="--", lw=1)
                ax.set_xlabel(param)
                ax.set_ylabel(label)
        axes[0].legend(fontsize=8, title="disk (dashed: AS default)", title_fontsize=8)
        fig.suptitle(f"Sensitivity to {param} (web-server load)", fontsize=10)
        fig.tight_layout()
        name = f"sweep_{param}.png"
        fig.savefig(outdir / name, dpi=110)
        plt.close(fig)
        files[f"sweep_{param}"] = name
    return files


def _fmt(x: float, digits: int = 3) -> str:
    return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{digits}f}"


def _table1_rows(t1_docs: dict) -> tuple[list[str], list[list[str]]]:
    runs = t1_docs["runs"]
    header = ["figure"] + [f"{s} (iolab)" for s in claims.PAPER_TABLE1] + [f"{s} (paper)" for s in claims.PAPER_TABLE1]
    fields = [("A-T", lambda r: r["anticipation"]["started"], 0),
              ("A-S", lambda r: r["anticipation"]["succeeded"], 0),
              ("A-F", lambda r: r["anticipation"]["failed"], 0),
              ("A-ST ms", lambda r: r["anticipation"]["success_wait_ms"], 0),
              ("A-FT ms", lambda r: r["anticipation"]["failure_wait_ms"], 0),
              ("deceptive idleness ms", lambda r: r["anticipation"]["deceptive_idleness_ms"], 3),
              ("mean success wait ms", lambda r: r["anticipation"]["mean_success_wait_ms"], 3),
              ("throughput kbit/s", lambda r: r["throughput_mb_s"] * 8000, 0)]
    rows = []
    for label, get, digits in fields:
        row = [label]
        for s in claims.PAPER_TABLE1:
            vals = [get(r) for r in runs if r["scheduler"] == s]
            row.append(_fmt(float(np.mean(vals)), digits) if vals else "-")
        for s in claims.PAPER_TABLE1:
            v = claims.PAPER_TABLE1[s].get(label)
            row.append(f"{v:g}" if v is not None else "-")
        rows.append(row)
    return header, rows


def write_report(docs: dict[str, dict], plan: Plan, quick: bool, outdir: Path, wall_s: float,
                 interrupted: bool) -> list[claims.Verdict]:
    iozone = _frame(docs, "iozone/")
    sweep = _frame(docs, "sweep/")
    t1 = docs.get("table1", {"runs": []})
    t1_frame = report.runs_frame(t1) if t1["runs"] else pd.DataFrame()
    verdicts = []
    if len(iozone):
        verdicts += [claims.wpcas_over_as(iozone, "sequential", 0.109), claims.wpcas_over_as(iozone, "random", 0.05),
                     claims.cfq_best_random(iozone), claims.noop_deadline_sequential(iozone)]
    verdicts += claims.table1_claims(t1_frame)
    files = _plots(iozone, sweep, outdir)
    (outdir / "paper-wpcas.json").write_text(json.dumps(
        {"plan": plan.__dict__, "quick": quick, "interrupted": interrupted,
         "claims": [v.__dict__ for v in verdicts],
         "experiments": {k: _slim(v) for k, v in docs.items()}}, indent=1, sort_keys=True) + "\n")

    doc = Document("WPCAS paper reproduction" + (" (quick)" if quick else ""))
    runs_total = sum(len(d["runs"]) for d in docs.values())
    any_doc = next(iter(docs.values()))
    doc.bullets([
        f"iolab {any_doc['iolab_version']}, RNG {any_doc['rng']}; {runs_total} simulation runs in {wall_s:.0f} s wall time",
        f"IOzone: {plan.iozone_seeds} seeds per point (the paper: 50); Table 1: {plan.table1_seeds} seeds of "
        f"{plan.table1_duration_s:g} s; sweep: {plan.sweep_seeds} seeds of {plan.sweep_duration_s:g} s on "
        + ", ".join(plan.sweep_disks),
        "command: iolab paper wpcas" + (" --quick" if quick else "") + f" -o {outdir}",
        "the JSON behind every table and plot: paper-wpcas.json",
    ] + (["INTERRUPTED: only finished runs are included"] if interrupted else []))
    doc.heading("Claims of the paper and what iolab measured")
    doc.table(["claim", "paper", "iolab", "verdict"], [[v.claim, v.paper, v.iolab, v.verdict] for v in verdicts])
    doc.para("Verdicts: a throughput difference counts when Welch's t test over seeds gives p < 0.05; "
             "'direction only' means a significant difference of the paper's sign but a size outside half to "
             "twice the paper's.")
    doc.heading("Figures 3–8: IOzone throughput")
    if len(iozone):
        header = ["mode", "classes"] + IOZONE_SCHEDULERS
        rows = []
        for (mode, classes), g in iozone.groupby(["mode", "classes"], sort=False):
            cells = []
            for s in IOZONE_SCHEDULERS:
                v = g.loc[g["scheduler"] == s, "throughput_mb_s"].to_numpy(dtype=float)
                cells.append(f"{v.mean():.3f} ±{report.ci95(v):.3f}" if len(v) else "-")
            rows.append([mode, str(classes)] + cells)
        doc.para("Throughput in MB/s, mean ± half-width of the 95% CI over seeds.").table(header, rows)
    for key in sorted(k for k in files if k.startswith("fig")):
        doc.image(files[key])
    doc.heading("Table 1: the web-server load")
    if t1["runs"]:
        header, rows = _table1_rows(t1)
        doc.para("iolab: means over seeds of one run's totals; the paper's run length is not stated, so compare "
                 "ratios (A-F/A-T, deceptive idleness, throughput ratios), not absolute counts.")
        doc.table(header, rows)
    doc.heading("Sensitivity of WPCAS's parameters and AS's antic_expire")
    if len(sweep):
        header = ["parameter", "disk", "value", "MB/s", "deceptive idleness ms", "vs AS default"]
        rows = []
        for (param, disk), g in sweep.groupby(["param", "disk"], sort=False):
            base = g.loc[g["scheduler"] == "as (default)", "throughput_mb_s"]
            for sched, gs in g.groupby("scheduler", sort=False):
                if sched == "as (default)":
                    continue
                tp = gs["throughput_mb_s"].to_numpy(dtype=float)
                delta = f"{tp.mean() / base.mean() - 1:+.1%}" if len(base) and base.mean() > 0 else "-"
                rows.append([param, disk, sched.split("=")[-1], f"{tp.mean():.3f} ±{report.ci95(tp):.3f}",
                             f"{gs['deceptive_idleness_ms'].mean():.3f}", delta])
        doc.table(header, rows)
        for key in sorted(k for k in files if k.startswith("sweep")):
            doc.image(files[key])
    doc.write(outdir, "report")
    return verdicts
