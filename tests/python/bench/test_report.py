"""Analysis and report on synthetic runs with a known answer."""

from __future__ import annotations

import json
import warnings

import numpy as np

import pytest

from iolab.bench import analysis, record, report, session, words, workloads
from iolab.bench.configs import Config

MB = 1e6


def fake_session(workload: str, means: dict[str, float], reps: int = 5, sd: float = 0.02,
                 variants=None, seed: int = 3) -> session.Session:
    w = workloads.get(workload)
    variants = variants or w.variants()
    rng = np.random.default_rng(seed)
    configs = [Config(name) for name in means]
    runs, index = [], 0
    for rep, units in enumerate(session.plan(configs, variants, reps, seed)):
        for slot, (config, variant) in enumerate(units):
            base = means[config.label]
            metrics = {}
            for key in w.measures:
                factor = 1 + rng.normal(0, sd)
                metrics[key] = base * factor * (1e-3 if "lat" in key else MB)
            runs.append(session.Run(index, rep, slot, config.label, variant.label, "2026-01-01T00:00:00",
                                    1.0, {"scheduler": config.scheduler, "nr_requests": "256"},
                                    {"kernel": "6.1", "model": "test", "size_bytes": str(2**30)}, metrics,
                                    f"fio/run-{index:04d}.json"))
            index += 1
    meta = {
        "device": "/dev/test", "model": "synthetic", "rotational": "1", "kernel": "6.1", "kernel_version": "#1",
        "fio": "fio-3.33", "cpus": 2, "host": "test", "workload": w.name, "workload_summary": w.summary,
        "mirrors": w.mirrors, "job_file": str(w.jobfile), "params": w.params,
        "variants": [{"label": v.label, "params": v.params} for v in variants],
        "configs": [c.label for c in configs], "reps": reps, "runtime_s": 1.0, "ramp_s": 0.0, "seed": seed,
        "drop_caches": "yes", "loadavg_start": "0", "loadavg_end": "0", "scheduler_defaults": {},
    }
    opts = session.Options(workload=w, reps=reps)
    return session.Session(opts, meta, configs, variants, runs, restored=["restored /dev/test"])


def test_clear_winner_is_recommended_with_its_confidence(tmp_path):
    s = fake_session("hdparm-direct", {"none": 100, "mq-deadline": 130, "bfq": 101})
    a = analysis.analyse(s)
    assert a.primary.key == "seqread.read.bw" and a.primary.unit == "MB/s"
    assert a.primary.comparison.winner == "mq-deadline"
    text = report.recommendation(s, a)
    assert "mq-deadline is the best configuration" in text and "95% confidence" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        path = report.write(s, a, tmp_path)
    md = path.read_text()
    assert "| mean |" in md and "| σ |" in md and "| rep 5 |" in md
    for name in ("report.html", "primary.png", "drift.png", "runs.csv", "runs.json"):
        assert (tmp_path / name).stat().st_size > 0
    doc = json.loads((tmp_path / "runs.json").read_text())
    assert len(doc["runs"]) == 15 and doc["analysis"]["primary"]["comparison"]["winner"] == "mq-deadline"
    assert "<table>" in (tmp_path / "report.html").read_text()


def test_indistinguishable_configurations_get_no_winner_and_a_sample_size():
    s = fake_session("hdparm-direct", {"none": 100, "kyber": 100, "bfq": 100}, sd=0.1)
    a = analysis.analyse(s)
    assert a.primary.comparison.winner is None
    text = report.recommendation(s, a)
    assert "indistinguishable" in text and "would need about" in text and "repetitions" in text


def test_iozone_matrix_uses_the_geometric_mean_and_seed_003_tables(tmp_path):
    variants = workloads.get("iozone").variants({"reclen": "32k,1m"})
    s = fake_session("iozone", {"none": 100, "mq-deadline": 100}, reps=3, variants=variants)
    a = analysis.analyse(s)
    assert a.primary.key == "score" and "geometric mean of 18" in a.primary.title
    assert len(a.measures) == 18
    path = report.write(s, a, tmp_path)
    md = path.read_text()
    assert "iozone matrix" in md and "| KiB | reclen | write | rewrite | read | reread |" in md
    assert "<b>none</b>" in (tmp_path / "report.html").read_text()


def test_report_can_be_rebuilt_from_runs_json(tmp_path):
    s = fake_session("oltp", {"none": 100, "mq-deadline": 90}, reps=3)
    report.write(s, analysis.analyse(s), tmp_path)
    again = record.load(tmp_path)
    assert [r.metrics for r in again.runs] == [r.metrics for r in s.runs]
    assert analysis.analyse(again).primary.comparison.best == "none"


def test_formatting():
    assert report.num(1234.5) == "1234" and report.num(12.345) == "12.3" and report.num(0.01234) == "0.0123"
    assert report.pct(0.1234) == "12.3%" and report.pct(-0.05, signed=True) == "-5.0%"
    assert report.pval(0.00001) == "< 0.0001" and report.pval(0.5) == "0.500"
    assert report.num(float("nan")) == "-"


def session_of(values: dict[str, list[float]], workload: str = "hdparm-direct") -> session.Session:
    """A session whose primary metric (MB/s) takes exactly ``values`` per configuration and repetition."""
    s = fake_session(workload, {c: 100 for c in values}, reps=len(next(iter(values.values()))))
    for r in s.runs:
        r.metrics["seqread.read.bw"] = values[r.config][r.rep] * MB
    return s


def test_significant_anova_without_a_separated_pair_says_so():
    # ANOVA p = 0.0048, but the smallest Holm-corrected pairwise p is 0.061 (found by search, kept).
    s = session_of({"a": [101, 102, 101], "b": [99, 106, 104], "c": [104, 108, 107], "d": [110, 109, 111]})
    a = analysis.analyse(s)
    c = a.primary.comparison
    assert c.anova.p < 0.05 and not any(pp.significant for pp in c.pairs)
    text = report.recommendation(s, a)
    assert "indistinguishable" not in text
    assert "the configurations differ" in text and "no Holm-corrected paired t-test separates any two" in text
    assert "names no winner" in text and "p = 0.0048" in text
    assert report.verdict(c) == "they differ, but no pair is separated"


def test_interrupted_session_uses_complete_repetitions_only(tmp_path):
    s = session_of({"none": [100, 101, 99], "bfq": [90, 91, 89], "kyber": [95, 96, 94]})
    # Interrupted during the third repetition: its bfq run, far above the rest, finished.
    partial = [r for r in s.runs if r.rep == 2]
    bfq = next(r for r in partial if r.config == "bfq")
    bfq.metrics["seqread.read.bw"] = 500 * MB
    s.runs = [r for r in s.runs if r.rep < 2] + [bfq]
    s.interrupted, s.signum = "Ctrl-C", 2
    a = analysis.analyse(s)
    sums = {x.config: x for x in a.primary.comparison.summaries}
    assert all(x.n == 2 for x in sums.values())
    assert sums["bfq"].mean == pytest.approx(90.5) and a.primary.comparison.best == "none"
    md = report.write(s, a, tmp_path).read_text()
    assert ("**Interrupted** by Ctrl-C after 7 of 9 planned runs; the tables use the 2 complete "
            "repetitions only (1 run of the unfinished repetition left out).") in md
    assert "interrupted (" not in md and "500" not in md.split("## Settings")[0]
    with pytest.raises(analysis.NothingToCompare, match="no repetition is complete"):
        s.runs = [bfq]
        analysis.analyse(s)


def test_counts_and_estimates_read_as_english():
    s = session_of({"none": [100], "bfq": [120]})
    text = report.recommendation(s, analysis.analyse(s))
    assert "(1 complete repetition, 2 configurations)" in text
    assert words.count(1, "variant") == "1 variant" and words.count(2, "variant") == "2 variants"
    assert words.about(12.0) == "more than 1000%" and words.about(0.123) == "about 12.3%"
    assert words.pct(12.0) == "1200%"
    # Wildly spread runs: the power analysis can only detect huge differences, and says so without "about over".
    wild = session_of({"none": [1, 30000], "bfq": [30000, 1]})
    text = report.recommendation(wild, analysis.analyse(wild))
    assert "about over" not in text and "more than 1000% can be detected" in text


def test_intervals_stay_positive_and_the_axis_fits_the_runs(tmp_path):
    s = session_of({"none": [100, 300, 3200], "bfq": [1000, 1010, 990]})
    a = analysis.analyse(s)
    none = a.primary.comparison.summary("none")
    assert none.ci_low > 0 and none.ci_high > 1e6
    md = report.write(s, a, tmp_path).read_text()
    assert "| none | 3 | 1200 |" in md and "0.697–6928669" in md
    scale, low, high = report.plot_points(a.primary, a.configs, tmp_path / "p.png")
    # Runs from 100 to 3200 MB/s: a log axis from below 100 to at most ten times 3200, never below zero.
    assert scale == "log" and 0 < low < 100 and 3200 < high <= 32000
    assert report.value_axis([990, 1000, 1010], [975], [1025]) == ("linear", 975, 1025)
    # A wide interval widens the axis only to twice the runs' span on each side...
    assert report.value_axis([10, 11, 12], [-500], [9000]) == ("linear", 6, 16)
    # ... and a positive quantity's axis stops at zero.
    assert report.value_axis([1, 2, 3], [-5], [4]) == ("linear", 0, 4)


def test_fios_own_messages_explain_runs_that_measured_nothing():
    s = session_of({"none": [100, 101], "bfq": [90, 91]})
    for r in s.runs:
        r.metrics = {}
        r.fio_messages = ["fio: file /dev/test exceeds 32-bit tausworthe random generator.", "fio: job r dropped"]
    with pytest.raises(analysis.NothingToCompare, match="measured none of the workload's primary metrics "
                                                        r"\(seqread.read.bw\); fio said: fio: file /dev/test exceeds"):
        analysis.analyse(s)
