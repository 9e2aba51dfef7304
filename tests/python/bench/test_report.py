"""Analysis and report on synthetic runs with a known answer."""

from __future__ import annotations

import json
import warnings

import numpy as np

from iolab.bench import analysis, report, session, workloads
from iolab.bench.configs import Config
from iolab.bench.workloads import Variant

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
    again = session.load(tmp_path)
    assert [r.metrics for r in again.runs] == [r.metrics for r in s.runs]
    assert analysis.analyse(again).primary.comparison.best == "none"


def test_formatting():
    assert report.num(1234.5) == "1234" and report.num(12.345) == "12.3" and report.num(0.01234) == "0.0123"
    assert report.pct(0.1234) == "12.3%" and report.pct(-0.05, signed=True) == "-5.0%"
    assert report.pval(0.00001) == "< 0.0001" and report.pval(0.5) == "0.500"
    assert report.num(float("nan")) == "-"
