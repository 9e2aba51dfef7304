"""What a session leaves in ``-o DIR``.

- ``runs.json``: the setup, every run (settings read back, metrics) and the
  analysis; ``runs.csv``: one row per run; ``fio/run-NNNN.json``: fio's own
  output; ``runs.jsonl``: written while running, one line per finished run.
- ``report.md`` and ``report.html``: the recommendation, the tables (per run
  as in seed 004, with mean and sigma; the iozone matrix as in seed 003),
  the tests, and two plots -- ``primary.png`` (each run as a point, the mean
  with its 95% interval per configuration) and ``drift.png`` (values against
  run order).

The report is built once as a :class:`iolab.document.Document` and
rendered twice, to Markdown and to HTML.
"""

from __future__ import annotations

import json
import math
import textwrap
import warnings
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from iolab.bench.analysis import Analysis, Measure
from iolab.bench.stats import ALPHA, Comparison
from iolab.bench.words import about, count, interval, num, pct, pval
from iolab.bench.workloads import IOZONE_TESTS
from iolab.document import Document

# ---------------------------------------------------------- recommendation


def verdict(c: Comparison, family_p: float | None = None) -> str:
    """A few words: the winner, the top group, or indistinguishable.

    ``family_p`` is the measure's ANOVA p-value corrected over all the
    measures of the report; when given, it decides whether there is a
    difference at all.
    """
    if c.anova is None:
        return "not tested (fewer than 2 complete repetitions or configurations)"
    p = c.anova.p if family_p is None or not math.isfinite(family_p) else family_p
    if p >= ALPHA:
        return "indistinguishable"
    if c.winner:
        return f"{c.winner} best (significant)"
    if len(c.top) < len(c.summaries):
        return "top group: " + ", ".join(c.top)
    return "they differ, but no pair is separated"


def recommendation(session, analysis: Analysis) -> str:
    meta = session.meta
    m = analysis.primary
    c = m.comparison
    what = f"{m.title} ({m.unit})"
    where = (f"On {meta['device']} ({meta['model']}, rotational={meta['rotational']}, "
             f"kernel {meta['kernel']}), workload {meta['workload']}")
    if c.anova is None:
        return (f"{where}: too few complete repetitions or configurations for a test "
                f"({count(c.blocks, 'complete repetition')}, {count(len(c.summaries), 'configuration')}); "
                f"iolab names no winner.")
    best = c.summary(c.best)
    ranked = sorted(c.summaries, key=lambda s: s.mean, reverse=c.higher_is_better)
    runner = ranked[1] if len(ranked) > 1 else None
    rank = (f" The {c.rank_test.name} test {'agrees' if c.rank_test.p < ALPHA else 'does not reach significance'} "
            f"(p = {pval(c.rank_test.p)}).") if c.rank_test else ""
    anova = f"blocked ANOVA over {c.blocks} repetitions: F({c.anova.df}) = {num(c.anova.statistic)}, p = {pval(c.anova.p)}"
    power = c.power
    detect = ""
    if power is not None:
        need = (f"about {power.reps_needed} repetitions" if power.reps_needed is not None
                else "an unknown number of repetitions")
        detect = (f" With {count(c.blocks, 'repetition')}, differences of {about(power.detectable)} can be "
                  f"detected (80% power, alpha split over {count(len(c.pairs), 'pair')}); telling a "
                  f"{pct(power.detect)} difference apart would need {need} per configuration.")
    drift = ""
    if c.drift is not None and c.drift.significant:
        drift = (f" The values drifted by {pct(c.drift.slope_per_rep, True)} per repetition against "
                 f"run order (p = {pval(c.drift.p)}): the machine was not steady; the shuffled, blocked "
                 f"design keeps the drift out of the comparison but widens the intervals.")
    cvs = [s.cv for s in c.summaries if math.isfinite(s.cv)]
    spread = f"CV {pct(min(cvs))}-{pct(max(cvs))}" if cvs else "CV unknown"
    if c.winner:
        gap = (best.mean - runner.mean) / runner.mean if runner and runner.mean else math.nan
        worst_p = max(pp.p_holm for pp in c.pairs if c.winner in (pp.a, pp.b))
        return (f"{where}: {c.winner} is the best configuration by {what}: {num(best.mean)} "
                f"(95% CI {interval(best.ci_low, best.ci_high)}, CV {pct(best.cv)}), "
                f"{pct(abs(gap))} {'ahead of' if c.higher_is_better else 'below'} {runner.config}. "
                f"The difference is significant ({anova}), and Holm-corrected paired t-tests separate "
                f"{c.winner} from every other configuration (largest corrected p = {pval(worst_p)}), "
                f"so iolab recommends {c.winner} for this workload on this device at 95% confidence."
                f"{rank}{drift}")
    if c.anova.p < ALPHA and len(c.top) < len(c.summaries):
        others = [s.config for s in c.summaries if s.config not in c.top]
        return (f"{where}: the configurations differ ({anova}), but no single one is best: "
                f"{', '.join(c.top)} cannot be told apart, and together they are significantly better "
                f"by {what} than {', '.join(others)} (Holm-corrected paired t-tests). iolab recommends "
                f"any of {', '.join(c.top)} with 95% confidence against the others, and none over "
                f"the rest of that group.{rank}{detect}{drift}")
    lo, hi = min(s.mean for s in c.summaries), max(s.mean for s in c.summaries)
    within = pct((hi - lo) / lo if lo else math.nan)
    if c.anova.p < ALPHA:
        closest = min(pp.p_holm for pp in c.pairs)
        return (f"{where}: the blocked ANOVA finds that the configurations differ by {what} ({anova}), "
                f"but no Holm-corrected paired t-test separates any two of them (smallest corrected "
                f"p = {pval(closest)}; the means lie within {within} of each other, runs vary by {spread}). "
                f"So iolab cannot say which configuration is better and names no winner; more repetitions "
                f"would tell.{detect}{rank}{drift}")
    return (f"{where}: the configurations are indistinguishable by {what} ({anova}; runs vary by "
            f"{spread}; the means lie within {within} of each other). "
            f"iolab names no winner and does not recommend a change on this evidence.{detect}{rank}{drift}")


# ------------------------------------------------------------------- tables


def summary_rows(c: Comparison) -> list[list[str]]:
    best = c.summary(c.best) if c.best else None
    rows = []
    for s in c.summaries:
        if best is None or s.config == best.config:
            vs = "best" if best is not None else "-"
        else:
            rel = (s.mean - best.mean) / best.mean if best.mean else math.nan
            pair = c.pair(s.config, best.config)
            vs = pct(rel, True)
            if pair is not None:
                vs += f" (p {pval(pair.p_holm)}{' *' if pair.significant else ''})"
        rows.append([s.config, str(s.n), num(s.mean), num(s.sd), pct(s.cv),
                     interval(s.ci_low, s.ci_high), vs])
    return rows


def per_run_rows(m: Measure, configs: list[str]) -> list[list[str]]:
    """Seed 004's table: one row per repetition, one column per configuration, then mean and sigma."""
    wide = m.data.pivot_table(index="rep", columns="config", values="value", aggfunc="mean")
    rows = []
    for rep, row in wide.iterrows():
        rows.append([f"rep {int(rep) + 1}"] + [num(row.get(c, math.nan)) for c in configs])
    sums = {s.config: s for s in m.comparison.summaries}
    for label, attr in (("mean", "mean"), ("σ", "sd")):
        rows.append([label] + [num(getattr(sums[c], attr)) if c in sums else "-" for c in configs])
    rows.append(["CV"] + [pct(sums[c].cv) if c in sums else "-" for c in configs])
    return rows


def test_lines(c: Comparison) -> list[str]:
    lines = []
    if c.anova:
        lines.append(f"{c.anova.name}: F({c.anova.df}) = {num(c.anova.statistic)}, p = {pval(c.anova.p)}")
    if c.rank_test:
        lines.append(f"{c.rank_test.name}: statistic {num(c.rank_test.statistic)}, p = {pval(c.rank_test.p)}")
    if c.power:
        lines.append(
            f"power: spread of a paired difference {num(c.power.sd_diff)}; detectable now "
            f"{pct(c.power.detectable)}; repetitions needed for {pct(c.power.detect)}: "
            f"{c.power.reps_needed if c.power.reps_needed is not None else '-'}")
    if c.drift:
        lines.append(
            f"drift against run order: {pct(c.drift.slope_per_rep, True)} per repetition, "
            f"p = {pval(c.drift.p)}{' (significant)' if c.drift.significant else ''}; "
            f"repetition means " + " → ".join(num(v) for v in c.drift.rep_means))
    if c.dropped_blocks:
        lines.append(f"{count(c.dropped_blocks, 'incomplete repetition')} left out of the tests")
    return lines


def pair_rows(c: Comparison) -> list[list[str]]:
    return [[f"{pp.a} − {pp.b}", num(pp.diff), pct(pp.rel, True), pval(pp.p), pval(pp.p_holm),
             "yes" if pp.significant else "no"] for pp in c.pairs]


def iozone_section(doc: Document, session, analysis: Analysis) -> None:
    """Seed 003's matrix per configuration (KiB/s, as iozone prints) and the significant cells."""
    variants = [v for v in session.variants if "reclen" in v.params]
    if not variants:
        return
    by = {(m.key, m.variant): m for m in analysis.measures}
    tests = [t for t, d in IOZONE_TESTS if any((f"{t}.{d}.bw", v.label) in by for v in variants)]
    headers = ["KiB", "reclen"] + tests
    region = session.meta.get("region_bytes") or int(session.runs[0].facts.get("size_bytes", 0))
    doc.heading("iozone matrix (mean KiB/s over repetitions, direct I/O)")
    for config in analysis.configs:
        rows = []
        for v in variants:
            row = [str(int(region) // 1024), v.params["reclen"]]
            for t, d in IOZONE_TESTS:
                if t not in tests:
                    continue
                m = by.get((f"{t}.{d}.bw", v.label))
                mean = m.comparison.summary(config).mean if m and config in {s.config for s in m.comparison.summaries} else math.nan
                row.append("-" if not math.isfinite(mean) else f"{mean * 1e6 / 1024:.0f}")
            rows.append(row)
        doc.para(f"**{config}**").table(headers, rows)
    rows = []
    for v in variants:
        row = [v.params["reclen"]]
        for t, d in IOZONE_TESTS:
            if t in tests:
                m = by.get((f"{t}.{d}.bw", v.label))
                row.append("-" if m is None else _cell(m))
        rows.append(row)
    doc.para("Best configuration per cell: a name when it beats every other significantly, "
             "names joined by / for a significant top group, ≈ when indistinguishable, ≠ when the "
             "configurations differ but no pair is separated (ANOVA p Holm-corrected over all cells).")
    doc.table(["reclen"] + tests, rows)


def _cell(m: Measure) -> str:
    text = verdict(m.comparison, m.family_p)
    if text.endswith("(significant)"):
        return m.comparison.winner
    if text.startswith("top group"):
        return "/".join(m.comparison.top)
    return "≈" if text == "indistinguishable" or text.startswith("not tested") else "≠"


def settings_rows(session) -> tuple[list[str], list[list[str]]]:
    """The settings each configuration ran with, as read back from sysfs (first run of each)."""
    first = {}
    for r in session.runs:
        first.setdefault(r.config, r.settings)
    keys = ["scheduler", "nr_requests", "wbt_lat_usec", "rotational", "read_ahead_kb"]
    extra = sorted({k for s in first.values() for k in s if k.startswith("iosched.")})
    headers = ["configuration"] + keys + ["tunables (iosched)"]
    rows = []
    for config, s in first.items():
        tun = " ".join(f"{k[len('iosched.'):]}={s[k]}" for k in extra if k in s)
        rows.append([config] + [s.get(k, "-") for k in keys] + [tun or "-"])
    return headers, rows


# -------------------------------------------------------------------- plots


def value_axis(values, lows, highs) -> tuple[str, float, float]:
    """Scale and limits of a value axis that fits the data.

    Every run is in view. An interval widens the axis only while it stays
    within twice the data's own span (ten times its range on a log axis),
    so one wide interval cannot squeeze the runs into a line; the axis of a
    positive quantity never goes below zero, and is logarithmic when the
    runs spread over more than a factor of ten.
    """
    values = [float(v) for v in values if math.isfinite(v)]
    if not values:
        return "linear", 0.0, 1.0
    vmin, vmax = min(values), max(values)
    lows = [v for v in lows if math.isfinite(v)]
    highs = [v for v in highs if math.isfinite(v)] + [v for v in highs if v == math.inf]
    positive = vmin > 0
    if positive and vmax / vmin > 10:
        low, high = vmin / 1.3, vmax * 1.3
        if lows:
            low = min(low, max(min(lows), vmin / 10))
        if highs:
            high = max(high, min(max(highs), vmax * 10))
        return "log", low, high
    span = (vmax - vmin) or abs(vmax) * 0.1 or 1.0
    low, high = vmin - 0.1 * span, vmax + 0.1 * span
    if lows:
        low = min(low, max(min(lows), vmin - 2 * span))
    if highs:
        high = max(high, min(max(highs), vmax + 2 * span))
    if positive:
        low = max(low, 0.0)
    return "linear", low, high


def plot_points(m: Measure, configs: list[str], path: Path) -> tuple[str, float, float]:
    """Each run as a point, and each configuration's mean with its 95% interval;
    returns the value axis (scale, low, high)."""
    fig = Figure(figsize=(max(5.0, 1.1 * len(configs) + 2.5), 4.2), layout="constrained")
    ax = fig.subplots()
    reps = sorted(m.data["rep"].unique())
    colors = {r: f"C{i % 10}" for i, r in enumerate(reps)}
    present = {s.config: s for s in m.comparison.summaries}
    shown = [present[c] for c in configs if c in present and math.isfinite(present[c].ci_low)]
    scale, low, high = value_axis(m.data["value"], [s.ci_low for s in shown], [s.ci_high for s in shown])
    ax.set_yscale(scale)
    ax.set_ylim(low, high)
    for i, config in enumerate(configs):
        rows = m.data[m.data["config"] == config]
        if not len(rows):
            continue
        offsets = np.linspace(-0.18, 0.18, len(rows)) if len(rows) > 1 else np.zeros(1)
        ax.scatter(i + offsets, rows["value"], s=16, c=[colors[r] for r in rows["rep"]], alpha=0.8, zorder=2)
        s = present[config]
        if not math.isfinite(s.ci_low):
            continue
        x = i + 0.3
        bottom, top = max(s.ci_low, low), min(s.ci_high, high)
        ax.vlines(x, bottom, top, color="black", zorder=3)
        ax.plot([x], [s.mean], "D", color="black", zorder=3)
        # A bound beyond the axis: an arrow at the edge, and the bound written beside it.
        for bound, edge, marker, inside in ((s.ci_low, low, "v", s.ci_low >= low),
                                            (s.ci_high, high, "^", s.ci_high <= high)):
            if inside:
                ax.hlines(bound, x - 0.06, x + 0.06, color="black", zorder=3)
            else:
                ax.plot([x], [edge], marker, color="black", ms=6, zorder=3, clip_on=False)
                ax.annotate("∞" if bound == math.inf else num(bound), (x, edge), xytext=(4, -10 if marker == "^" else 2),
                            textcoords="offset points", fontsize="x-small", annotation_clip=False)
    ax.set_xlim(-0.6, len(configs) - 0.3)
    ax.set_xticks(range(len(configs)), configs, rotation=20, ha="right")
    ax.set_ylabel(m.unit)
    _title(ax, fig, f"{m.title}: runs (colour = repetition), mean and 95% CI")
    ax.grid(axis="y", alpha=0.3)
    _save(fig, path)
    return scale, low, high


def plot_drift(m: Measure, configs: list[str], per_rep: int, path: Path) -> None:
    fig = Figure(figsize=(8.0, 4.6), layout="constrained")
    ax = fig.subplots()
    for i, config in enumerate(configs):
        rows = m.data[m.data["config"] == config]
        ax.plot(rows["order"], rows["value"], "o", ms=4, color=f"C{i % 10}", label=config)
    top = int(m.data["order"].max()) if len(m.data) else 0
    for boundary in range(per_rep, top + 1, per_rep):
        ax.axvline(boundary - 0.5, color="grey", lw=0.6, alpha=0.5)
    ax.set_xlabel("run order (grey lines: repetitions)")
    ax.set_ylabel(m.unit)
    _title(ax, fig, f"{m.title} against run order")
    fig.legend(fontsize="small", loc="outside lower center", ncols=min(3, max(1, len(configs))))
    ax.grid(alpha=0.3)
    _save(fig, path)


def _title(ax, fig: Figure, text: str) -> None:
    """A title wrapped to the figure's width (about 12 characters an inch at this size)."""
    ax.set_title(textwrap.fill(text, width=int(fig.get_figwidth() * 12)), fontsize="medium")


def _save(fig: Figure, path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # layout engines warn on cramped axes
        fig.savefig(path, dpi=96)


# ------------------------------------------------------------------ outputs


def _clean(value):
    """NaN and infinities become null in JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def runs_table(session) -> pd.DataFrame:
    rows = []
    for r in session.runs:
        row = {"run": r.run, "rep": r.rep + 1, "slot": r.slot, "config": r.config, "variant": r.variant,
               "started": r.started, "seconds": r.seconds}
        row.update(r.facts)
        row.update({f"set.{k}": v for k, v in sorted(r.settings.items())})
        row.update(sorted(r.metrics.items()))
        rows.append(row)
    frame = pd.DataFrame(rows)
    fixed = [c for c in frame.columns if "." not in c]
    settings = sorted(c for c in frame.columns if c.startswith("set."))
    metrics = sorted(c for c in frame.columns if "." in c and not c.startswith("set."))
    return frame[fixed + settings + metrics]


def analysis_json(analysis: Analysis) -> dict:
    def one(m: Measure) -> dict:
        return {"key": m.key, "variant": m.variant, "title": m.title, "unit": m.unit,
                "comparison": asdict(m.comparison)}

    return {"primary": one(analysis.primary), "measures": [one(m) for m in analysis.measures]}


def write_data(session, outdir: Path, analysis: Analysis | None = None) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    doc = {
        "meta": session.meta,
        "interrupted": session.interrupted,
        "restored": session.restored,
        "restore_problems": session.restore_problems,
        "runs": [asdict(r) for r in session.runs],
        "analysis": analysis_json(analysis) if analysis else None,
    }
    (outdir / "runs.json").write_text(json.dumps(_clean(doc), indent=1))
    runs_table(session).to_csv(outdir / "runs.csv", index=False)


def interruption(session) -> str:
    """What stopped the session early, and which runs the tables use."""
    planned = session.options.reps * session.runs_per_rep
    done = len(session.runs)
    complete = len(session.complete_runs())
    how = ("**Killed** before it finished (this report was rebuilt from runs.jsonl and fio's JSON)"
           if session.interrupted == "killed" else f"**Interrupted** by {session.interrupted}")
    left = done - complete
    return (f"{how} after {done} of {count(planned, 'planned run')}; the tables use the "
            f"{count(complete // max(1, session.runs_per_rep), 'complete repetition')} only"
            + (f" ({count(left, 'run')} of the unfinished repetition left out)." if left else "."))


def build(session, analysis: Analysis) -> Document:
    meta = session.meta
    m = analysis.primary
    c = m.comparison
    configs = analysis.configs
    doc = Document(f"iolab bench: {meta['workload']} on {meta['device']}")
    if session.interrupted:
        doc.para(interruption(session))
    doc.heading("Recommendation").para(recommendation(session, analysis))
    setup = [
        f"device: {meta['device']} — {meta['model']}; rotational {meta['rotational']}",
        f"kernel {meta['kernel']} ({meta['kernel_version']}); {meta['fio']}; {meta['cpus']} CPUs on {meta['host']}",
        f"workload {meta['workload']}: {meta['workload_summary']} — mirrors {meta['mirrors']}",
        f"job file {meta['job_file']}; parameters "
        + (", ".join(f"{k}={v}" for k, v in meta["params"].items()) or "none")
        + ("; run under fio --readonly" if meta.get("readonly") else ""),
        f"{count(meta['reps'], 'repetition')} × {count(len(configs), 'configuration')} × "
        f"{count(len(meta['variants']), 'variant')}, each repetition in a freshly shuffled order "
        f"(seed {meta['seed']}); runtime {meta['runtime_s']} s, ramp {meta['ramp_s']} s; {meta['drop_caches']}",
        f"preconditioned: {'yes' if meta.get('preconditioned') else 'no'}"
        + (f"; sandbox {meta['sandbox']['size_bytes'] // 2**20} MiB on {meta['sandbox']['backing_device']}"
           if "sandbox" in meta else ""),
        f"load average at start {meta['loadavg_start']}, at end {meta.get('loadavg_end', '-')}",
    ]
    doc.heading("Setup").bullets(setup)
    doc.heading(f"Primary measure: {m.title} ({m.unit})")
    doc.table(["configuration", "n", "mean", "σ", "CV", "95% CI", "vs best (Holm p)"], summary_rows(c))
    doc.para("95% CI: the interval of the mean. For positive values it is computed on the log scale "
             "(the modified Cox interval of a log-normal mean), so it stays above zero and is "
             "asymmetric like the runs; otherwise Student's t.")
    doc.bullets(test_lines(c))
    if c.pairs:
        doc.heading("Pairwise comparisons (paired t-tests, Holm-corrected)", 3)
        doc.table(["pair", "difference", "relative", "p", "p (Holm)", "significant"], pair_rows(c))
    doc.heading("Every run (as seed 004: one row per repetition, then mean and σ)", 3)
    doc.table(["repetition"] + configs, per_run_rows(m, configs))
    doc.image("primary.png", "runs, means and 95% intervals").image("drift.png", "values against run order")
    others = [x for x in analysis.measures if x is not m]
    if others:
        rows = []
        for x in others:
            xc = x.comparison
            means = {s.config: s for s in xc.summaries}
            rows.append([x.title, x.unit, verdict(xc, x.family_p), pval(xc.anova.p) if xc.anova else "-",
                         pval(x.family_p), pval(xc.rank_test.p) if xc.rank_test else "-"]
                        + [f"{num(means[cf].mean)} ± {num(means[cf].sd)}" if cf in means else "-"
                           for cf in configs])
        doc.heading("All measures (mean ± σ)")
        doc.para(f"Each measure is tested on its own; the verdict uses the ANOVA p-value Holm-corrected "
                 f"over these {len(others)} measures, since among many tests at 5% some come out "
                 f"significant by chance.")
        doc.table(["measure", "unit", "verdict", "ANOVA p", "ANOVA p (Holm)", "rank-test p"] + configs, rows)
    iozone_section(doc, session, analysis)
    headers, rows = settings_rows(session)
    doc.heading("Settings as read back from sysfs (first run of each configuration)").table(headers, rows)
    defaults = meta.get("scheduler_defaults", {})
    if defaults:
        doc.heading("Scheduler defaults on this kernel (right after switching)", 3)
        doc.bullets([f"{name}: " + " ".join(f"{k}={v}" for k, v in d.items()) for name, d in defaults.items()])
    restore = session.restored + [f"NOT restored: {x}" for x in session.restore_problems]
    doc.heading("Restore").bullets(restore or ["nothing to restore"])
    return doc


def write(session, analysis: Analysis, outdir: Path) -> Path:
    """Writes every output; returns the Markdown report's path."""
    write_data(session, outdir, analysis)
    m = analysis.primary
    plot_points(m, analysis.configs, outdir / "primary.png")
    plot_drift(m, analysis.configs, session.runs_per_rep, outdir / "drift.png")
    md, _ = build(session, analysis).write(outdir)
    return md
