"""Summaries, tables, files and plots of a simulation result document.

Across seeds, each metric is given as a mean with a 95% confidence interval
from Student's t distribution, which is what the repetitions are for: a
difference between schedulers whose intervals overlap widely is not
established by the run. When every seed of a scheduler gives the same
result (a workload that makes no random draw), the runs are deterministic:
the report says so instead of showing an interval of zero.

Nothing heavy is imported at module level: the terminal summary and the
text files need only the standard library and the native module (the t
quantile comes from it), so `iolab run` starts in a fraction of a second;
matplotlib is imported for the plots, pandas only by :func:`runs_frame`.
`statistics` (with `fractions` and `decimal`, about 5 ms) is imported only
for a standard deviation, which one seed does not need, and `csv` only for
the files.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from iolab import _iolab

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


def runs_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per run (scheduler, seed) with the main figures."""
    rows = []
    for r in doc["runs"]:
        row = {"scheduler": r["scheduler"], "seed": r["seed"], "elapsed_ms": r["elapsed_ms"],
               "completed": r["requests"]["completed"]}
        for col, _, get in RUN_FIELDS:
            row[col] = get(r)
        rows.append(row)
    return rows


def runs_frame(doc: dict[str, Any]):
    """:func:`runs_rows` as a pandas DataFrame (for sweeps and the paper)."""
    import pandas as pd

    return pd.DataFrame(runs_rows(doc))


def ci95(values: Iterable[float]) -> float:
    """Half-width of the 95% t interval of the mean (0 for one value)."""
    v = [float(x) for x in values]
    n = len(v)
    if n < 2:
        return 0.0
    import statistics

    sem = statistics.stdev(v) / math.sqrt(n)
    return _iolab.student_t_quantile(0.975, n - 1) * sem if sem > 0 else 0.0


def _fmean(v: list[float]) -> float:
    """statistics.fmean of a non-empty list, which is this: fsum(data) / n."""
    return math.fsum(v) / len(v)


def _stdev(v: list[float]) -> float:
    import statistics

    return statistics.stdev(v)


def summarize(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Per scheduler: runs, and the mean, standard deviation and 95% CI of
    every figure; `deterministic` when every seed gave the same figures."""
    rows = runs_rows(doc)
    out = []
    for name in dict.fromkeys(r["scheduler"] for r in rows):
        group = [r for r in rows if r["scheduler"] == name]
        row: dict[str, Any] = {"scheduler": name, "runs": len(group)}
        for col, _, _ in RUN_FIELDS:
            v = [float(r[col]) for r in group]
            row[col] = _fmean(v)
            row[f"{col}_sd"] = _stdev(v) if len(v) > 1 else 0.0
            row[f"{col}_ci95"] = ci95(v)
        row["deterministic"] = len(group) > 1 and all(
            all(r[col] == group[0][col] for col, _, _ in RUN_FIELDS) for r in group)
        out.append(row)
    return out


def _no_disk_request(row: dict[str, Any]) -> bool:
    """No run of this summary row completed a disk request (IOPS is
    completed requests over a positive elapsed time: its mean over the
    runs is 0 only when every run's is)."""
    return row["iops"] == 0


def no_request_note(summary: Sequence[dict[str, Any]]) -> str | None:
    """A sentence naming the schedulers none of whose runs completed a disk
    request: their zeros say the workload never reached the disk (it was
    served by the page cache, or it ended first), not that they are slow."""
    idle = [r["scheduler"] for r in summary if _no_disk_request(r)]
    if not idle:
        return None
    return (f"{', '.join(idle)}: no request reached the disk in any run, so the table has nothing to compare "
            f"(a buffered workload can run in the page cache and end before any write-back: see the buffered "
            f"calls, and the page cache's dirty pages left in the result).")


def deterministic_note(summary: Sequence[dict[str, Any]]) -> str | None:
    """A sentence naming the schedulers whose seeds all gave one result
    (those that never reached the disk are named by `no_request_note`)."""
    same = [r for r in summary if r["deterministic"] and not _no_disk_request(r)]
    if not same:
        return None
    names = ", ".join(r["scheduler"] for r in same)
    runs = ", ".join(sorted({str(r["runs"]) for r in same}))
    return (f"{names}: all {runs} seeds gave identical results. This workload makes no random draw on this "
            f"disk, so the runs are deterministic: repeating them measures nothing, and no interval is shown.")


def buffered_note(doc: dict[str, Any], capital: bool = False) -> str | None:
    """A sentence on the buffered read(2)/write(2) calls of the runs that
    made any (per scheduler, means over its runs), which the table's disk
    figures do not count; None when no run made one. `capital`: its first
    word capitalized (a paragraph, not a console note)."""
    parts = []
    for name in dict.fromkeys(r["scheduler"] for r in doc["runs"]):
        calls = [r.get("buffered") for r in doc["runs"] if r["scheduler"] == name]
        if not any(calls):
            continue
        n = len(calls)
        per_s = sum(c["calls_per_s"] for c in calls if c) / n
        mb_s = sum(c["throughput_mb_s"] for c in calls if c) / n
        lat = [c["latency_ms"]["mean"] for c in calls if c]
        parts.append(f"{name} {per_s:,.0f} calls/s, {_fmt(mb_s)} MB/s, mean {_fmt(sum(lat) / len(lat))} ms")
    if not parts:
        return None
    return (("Buffered" if capital else "buffered") + " read/write calls (served by the page cache; the table "
            "counts disk requests, which include their read-ahead and write-back): " + "; ".join(parts) + ".")


def summary_notes(doc: dict[str, Any], summary: Sequence[dict[str, Any]], paragraphs: bool = False) -> list[str]:
    """The sentences under the summary table (the console's notes, or
    report.md's paragraphs): runs that never reached the disk, deterministic
    runs, buffered calls."""
    notes = (no_request_note(summary), deterministic_note(summary), buffered_note(doc, capital=paragraphs))
    return [n for n in notes if n]


def _write_csv(path: Path | str, rows: Sequence[dict[str, Any]]) -> None:
    """Rows (dicts with the same keys) as CSV; floats with 6 significant digits."""
    with open(path, "w", newline="") as f:
        if not rows:
            return
        import csv

        w = csv.writer(f)
        w.writerow(rows[0].keys())
        for r in rows:
            w.writerow(f"{v:.6g}" if isinstance(v, float) else v for v in r.values())


def _fmt(x: float) -> str:
    """About 3-4 significant digits: 1234, 196.1, 50.00, 0.208."""
    if isinstance(x, int):
        return str(x)
    if math.isnan(x):
        return "-"
    a = abs(x)
    if a >= 100:
        return f"{x:.0f}" if a >= 1000 or x == int(x) else f"{x:.1f}"
    return f"{x:.2f}" if a >= 1 else "0" if x == 0 else f"{x:.3f}"


def _fmt_ci(ci: float) -> str:
    """An interval's half-width to two significant digits, so a small one
    never shows as ±0.000."""
    if ci >= 100:
        return f"{ci:.0f}"
    return f"{ci:.2g}" if ci >= 1e-4 else f"{ci:.1e}"


# The columns a terminal table shows (the files have them all).
CONSOLE_FIELDS = {"throughput_mb_s", "iops", "lat_mean_ms", "lat_p99_ms", "disk_util",
                  "antic_started", "deceptive_idleness_ms", "mean_success_wait_ms"}
# In a terminal only throughput carries its interval (the files carry all).
CONSOLE_CI = {"throughput_mb_s"}
ANTICIPATION_FIELDS = ("antic", "deceptive", "mean_success")


def summary_rows(summary: Sequence[dict[str, Any]], anticipation: bool,
                 compact: bool = False) -> tuple[list[str], list[list[str]]]:
    """Header and cells of the summary table (mean ± CI)."""
    cols = [c for c in RUN_FIELDS
            if (anticipation or not c[0].startswith(ANTICIPATION_FIELDS)) and (not compact or c[0] in CONSOLE_FIELDS)]
    header = ["scheduler"] + ([] if compact else ["runs"]) + [label for _, label, _ in cols]
    cells = []
    for row in summary:
        line = [str(row["scheduler"])] + ([] if compact else [str(row["runs"])])
        for col, _, _ in cols:
            ci = row[f"{col}_ci95"]
            show_ci = ci > 0 and (not compact or col in CONSOLE_CI)
            line.append(_fmt(row[col]) + (f" ±{_fmt_ci(ci)}" if show_ci else ""))
        cells.append(line)
    return header, cells


def table_title(doc: dict[str, Any], summary: Sequence[dict[str, Any]], compact: bool) -> str:
    """What the figures of the summary table are, as they are shown."""
    seeds = len(doc["seeds"])
    if seeds < 2:
        return f"{seeds} seed: means of one run, no interval (use 2 or more seeds for one)"
    if all(r["deterministic"] for r in summary):
        return f"{seeds} seeds, deterministic runs: no interval"
    what = "MB/s ± 95% CI" if compact else "± half-width of the 95% CI"
    return f"{seeds} seeds: means ({what})"


def print_summary(doc: dict[str, Any], console) -> None:
    from rich.table import Table

    summary = summarize(doc)
    anticipation = any(r["anticipates"] for r in doc["runs"])
    header, cells = summary_rows(summary, anticipation, compact=True)
    title = doc["spec"].get("name") or "iolab"
    t = Table(title=f"{title}: {table_title(doc, summary, compact=True)}", title_justify="left")
    for h in header:
        t.add_column(h, justify="left" if h == "scheduler" else "right", no_wrap=h == "scheduler")
    for line in cells:
        t.add_row(*line)
    console.print(t)
    for note in summary_notes(doc, summary):
        console.print(f"note: {note}", highlight=False)


def plot(doc: dict[str, Any], outdir: Path) -> list[str]:
    """Throughput and latency plots (PNG); returns the file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = summarize(doc)
    runs = runs_rows(doc)
    names = [r["scheduler"] for r in summary]
    x = list(range(len(names)))
    files = []

    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(names) + 2), 3.6))
    ax.bar(x, [r["throughput_mb_s"] for r in summary], yerr=[r["throughput_mb_s_ci95"] for r in summary],
           capsize=4, color="#4c72b0", alpha=0.8)
    for i, name in enumerate(names):
        pts = [r["throughput_mb_s"] for r in runs if r["scheduler"] == name]
        offsets = [(-0.15 + 0.3 * k / (len(pts) - 1)) if len(pts) > 1 else 0.0 for k in range(len(pts))]
        ax.scatter([i + o for o in offsets], pts, s=10, color="black", zorder=3)
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
        ax.bar([i + (j - 1) * width for i in x], [r[col] for r in summary], width,
               yerr=[r[f"{col}_ci95"] for r in summary], capsize=3, label=label)
    ax.set_xticks(x, names)
    ax.set_ylabel("latency (ms)")
    ax.set_title("Request latency percentiles")
    ax.legend()
    fig.tight_layout()
    fig.savefig(outdir / "latency.png", dpi=110)
    plt.close(fig)
    files.append("latency.png")
    return files


def write_runs_csv(doc: dict[str, Any], path: Path | str) -> None:
    _write_csv(path, runs_rows(doc))


def write_outputs(doc: dict[str, Any], outdir: Path, plots: bool = True,
                  write_json: Callable[[Path], None] | None = None) -> list[Path]:
    """results.json, runs.csv, summary.csv, report.md, report.html (+ PNGs);
    returns every path written. `write_json` writes results.json when `doc`
    holds summaries only (see ``simulate.Outcome.write_json``)."""
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    p = outdir / "results.json"
    if write_json is not None:
        write_json(p)
    else:
        p.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    written.append(p)
    summary = summarize(doc)
    _write_csv(outdir / "runs.csv", runs_rows(doc))
    _write_csv(outdir / "summary.csv", summary)
    written += [outdir / "runs.csv", outdir / "summary.csv"]
    images = plot(doc, outdir) if plots and doc["runs"] else []
    written += [outdir / img for img in images]
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
    from iolab.document import Document  # only for -o: its dataclasses and html cost ~10 ms at start-up

    page = Document(spec.get("name") or "iolab simulation")
    page.bullets(facts).para(f"{table_title(doc, summary, compact=False)}.").table(header, cells)
    for note in summary_notes(doc, summary, paragraphs=True):
        page.para(note)
    for img in images:
        page.image(img)
    written += page.write(outdir)
    return written
