"""Summaries, tables, files and plots of a simulation result document.

Across seeds, each metric is given as a mean with a 95% confidence interval
from Student's t distribution (scipy), which is what the repetitions are
for: a difference between schedulers whose intervals overlap widely is not
established by the run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from iolab.document import Document

# (column, label, getter) for the per-run table; the JSON has them all.
RUN_FIELDS = [
    ("throughput_mb_s", "MB/s", lambda r: r["throughput_mb_s"]),
    ("iops", "IOPS", lambda r: r["iops"]),
    ("lat_mean_ms", "lat ms", lambda r: r["latency_ms"]["mean"]),
    ("lat_p50_ms", "p50 ms", lambda r: r["latency_ms"]["p50"]),
    ("lat_p95_ms", "p95 ms", lambda r: r["latency_ms"]["p95"]),
    ("lat_p99_ms", "p99 ms", lambda r: r["latency_ms"]["p99"]),
    ("lat_max_ms", "max ms", lambda r: r["latency_ms"]["max"]),
    ("seek_cyl", "seek cyl", lambda r: r["seek"]["mean_cylinders"]),
    ("disk_util", "util", lambda r: r["disk"]["utilization"]),
    ("antic_started", "A-T", lambda r: r["anticipation"]["started"]),
    ("antic_succeeded", "A-S", lambda r: r["anticipation"]["succeeded"]),
    ("antic_failed", "A-F", lambda r: r["anticipation"]["failed"]),
    ("deceptive_idleness_ms", "DI ms", lambda r: r["anticipation"]["deceptive_idleness_ms"]),
    ("mean_success_wait_ms", "wait ms", lambda r: r["anticipation"]["mean_success_wait_ms"]),
]


def runs_frame(doc: dict[str, Any]) -> pd.DataFrame:
    """One row per run (scheduler, seed) with the main figures."""
    rows = []
    for r in doc["runs"]:
        row = {"scheduler": r["scheduler"], "seed": r["seed"], "elapsed_ms": r["elapsed_ms"],
               "completed": r["requests"]["completed"]}
        for col, _, get in RUN_FIELDS:
            row[col] = get(r)
        rows.append(row)
    return pd.DataFrame(rows)


def ci95(values: np.ndarray) -> float:
    """Half-width of the 95% t interval of the mean (0 for one value)."""
    n = len(values)
    if n < 2:
        return 0.0
    sem = stats.sem(values)
    return float(stats.t.ppf(0.975, n - 1) * sem) if sem > 0 else 0.0


def summary_frame(doc: dict[str, Any]) -> pd.DataFrame:
    """Per scheduler: mean, standard deviation and 95% CI of every figure."""
    df = runs_frame(doc)
    order = list(dict.fromkeys(df["scheduler"])) if len(df) else []
    rows = []
    for name in order:
        g = df[df["scheduler"] == name]
        row: dict[str, Any] = {"scheduler": name, "runs": len(g)}
        for col, _, _ in RUN_FIELDS:
            v = g[col].to_numpy(dtype=float)
            row[col] = float(v.mean())
            row[f"{col}_sd"] = float(v.std(ddof=1)) if len(v) > 1 else 0.0
            row[f"{col}_ci95"] = ci95(v)
        rows.append(row)
    return pd.DataFrame(rows)


def _fmt(x: float) -> str:
    """About 3-4 significant digits: 1234, 196.1, 50.00, 0.208."""
    if isinstance(x, (int, np.integer)):
        return str(x)
    if math.isnan(x):
        return "-"
    a = abs(x)
    if a >= 100:
        return f"{x:.0f}" if a >= 1000 or x == int(x) else f"{x:.1f}"
    return f"{x:.2f}" if a >= 1 else "0" if x == 0 else f"{x:.3f}"


# The columns a terminal table shows (the files have them all).
CONSOLE_FIELDS = {"throughput_mb_s", "iops", "lat_mean_ms", "lat_p99_ms", "disk_util",
                  "antic_started", "deceptive_idleness_ms", "mean_success_wait_ms"}
# In a terminal only throughput carries its interval (the files carry all).
CONSOLE_CI = {"throughput_mb_s"}
ANTICIPATION_FIELDS = ("antic", "deceptive", "mean_success")


def summary_rows(summary: pd.DataFrame, anticipation: bool, compact: bool = False) -> tuple[list[str], list[list[str]]]:
    """Header and cells of the summary table (mean ± CI)."""
    cols = [c for c in RUN_FIELDS
            if (anticipation or not c[0].startswith(ANTICIPATION_FIELDS)) and (not compact or c[0] in CONSOLE_FIELDS)]
    header = ["scheduler"] + ([] if compact else ["runs"]) + [label for _, label, _ in cols]
    cells = []
    for _, row in summary.iterrows():
        line = [str(row["scheduler"])] + ([] if compact else [str(row["runs"])])
        for col, _, _ in cols:
            ci = row[f"{col}_ci95"]
            show_ci = ci > 0 and (not compact or col in CONSOLE_CI)
            line.append(_fmt(row[col]) + (f" ±{_fmt(ci)}" if show_ci else ""))
        cells.append(line)
    return header, cells


def print_summary(doc: dict[str, Any], console) -> None:
    from rich.table import Table

    summary = summary_frame(doc)
    anticipation = any(r["anticipates"] for r in doc["runs"])
    header, cells = summary_rows(summary, anticipation, compact=True)
    spec = doc["spec"]
    title = spec.get("name") or "iolab"
    t = Table(title=f"{title}: {len(doc['seeds'])} seed(s), means (MB/s ± 95% CI)", title_justify="left")
    for h in header:
        t.add_column(h, justify="left" if h == "scheduler" else "right", no_wrap=h == "scheduler")
    for line in cells:
        t.add_row(*line)
    console.print(t)


def plot(doc: dict[str, Any], outdir: Path) -> list[str]:
    """Throughput and latency plots (PNG); returns the file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = summary_frame(doc)
    runs = runs_frame(doc)
    names = list(summary["scheduler"])
    x = np.arange(len(names))
    files = []

    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(names) + 2), 3.6))
    ax.bar(x, summary["throughput_mb_s"], yerr=summary["throughput_mb_s_ci95"], capsize=4, color="#4c72b0", alpha=0.8)
    for i, name in enumerate(names):
        pts = runs[runs["scheduler"] == name]["throughput_mb_s"]
        ax.scatter(np.full(len(pts), i) + np.linspace(-0.15, 0.15, len(pts)), pts, s=10, color="black", zorder=3)
    ax.set_xticks(x, names)
    ax.set_ylabel("throughput (MB/s)")
    ax.set_title("Throughput: mean, 95% CI, and each seed")
    fig.tight_layout()
    fig.savefig(outdir / "throughput.png", dpi=110)
    plt.close(fig)
    files.append("throughput.png")

    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(names) + 2), 3.6))
    width = 0.2
    for j, (col, label) in enumerate([("lat_p50_ms", "p50"), ("lat_p95_ms", "p95"), ("lat_p99_ms", "p99")]):
        ax.bar(x + (j - 1) * width, summary[col], width, yerr=summary[f"{col}_ci95"], capsize=3, label=label)
    ax.set_xticks(x, names)
    ax.set_ylabel("latency (ms)")
    ax.set_title("Request latency percentiles")
    ax.legend()
    fig.tight_layout()
    fig.savefig(outdir / "latency.png", dpi=110)
    plt.close(fig)
    files.append("latency.png")
    return files


def write_outputs(doc: dict[str, Any], outdir: Path, plots: bool = True) -> list[Path]:
    """results.json, runs.csv, summary.csv, report.md, report.html (+ PNGs)."""
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    p = outdir / "results.json"
    p.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    written.append(p)
    runs = runs_frame(doc)
    summary = summary_frame(doc)
    for name, frame in (("runs.csv", runs), ("summary.csv", summary)):
        frame.to_csv(outdir / name, index=False, float_format="%.6g")
        written.append(outdir / name)
    images = plot(doc, outdir) if plots and len(runs) else []
    anticipation = any(r["anticipates"] for r in doc["runs"])
    header, cells = summary_rows(summary, anticipation)
    spec = doc["spec"]
    disk = spec["disk"].get("preset") or spec["disk"].get("diskspecs")
    wl = spec["workload"]
    facts = [
        f"iolab {doc['iolab_version']}, RNG {doc['rng']}, seeds {', '.join(map(str, doc['seeds']))}",
        f"disk: {disk} (queue depth {spec['disk']['queue_depth']})",
        f"workload: {wl.get('kind')} " + json.dumps({k: v for k, v in wl.items() if k != 'kind'}, sort_keys=True),
    ]
    if doc.get("interrupted"):
        facts.append("interrupted: only the runs that finished are included")
    page = Document(spec.get("name") or "iolab simulation")
    page.bullets(facts).para("Mean ± half-width of the 95% confidence interval over seeds.").table(header, cells)
    for img in images:
        page.image(img)
    written += page.write(outdir)
    return written
