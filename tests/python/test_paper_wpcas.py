"""`iolab paper wpcas --quick` writes the whole report on a fresh install,
and its claims are decided with the fixed labels."""

import json

import numpy as np
import pandas as pd

from iolab.paper import wpcas_claims as claims


def test_quick_reproduction_writes_report_figures_and_claims(wpcas_quick):
    out = wpcas_quick
    assert "claims" in (out / "stdout.txt").read_text()
    for name in ["report.md", "report.html", "paper-wpcas.json", "calibration.png"] + [
        f"fig{n}_{m}_{c}.png" for n, m, c in [(3, "sequential", 10), (5, "sequential", 80), (8, "random", 80)]
    ]:
        assert (out / name).is_file(), name
    data = json.loads((out / "paper-wpcas.json").read_text())
    readings = {c["reading"] for c in data["claims"]}
    assert readings == {"paper", "packed"}
    # Seven claims under each WPCAS start-up rule.
    paper = [c for c in data["claims"] if c["reading"] == "paper"]
    assert sorted(c["startup"] for c in paper) == ["as-rule"] * 7 + ["ste"] * 7
    assert all(c["verdict"] in claims.LABELS for c in data["claims"]), data["claims"]
    assert data["table1_cpu_ms"] in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    # Table 1's accounting identity holds in every run of the web load.
    assert {r["scheduler"] for r in data["experiments"]["table1/paper"]["runs"]} == {"as95", "as", "wpcas",
                                                                                  "wpcas-ste"}
    for run in data["experiments"]["table1/paper"]["runs"]:
        a = run["anticipation"]
        assert a["started"] == a["succeeded"] + a["failed"]
    # IOzone's tests are reported per phase, as IOzone does.
    run = data["experiments"]["iozone/paper/sequential/10"]["runs"][0]
    assert [p["phase"] for p in run["phases"]] == ["initial write", "rewrite", "read", "re-read"]
    report = (out / "report.md").read_text()
    for heading in ("Table 1", "Figures 3–8", "calibration", "Verdicts, by reading", "headroom"):
        assert heading.lower() in report.lower(), heading


def frame(a, b):
    """Two schedulers' figures over seeds."""
    rows = [{"scheduler": "a", "seed": i, "throughput_mb_s": x} for i, x in enumerate(a)]
    rows += [{"scheduler": "b", "seed": i, "throughput_mb_s": x} for i, x in enumerate(b)]
    return pd.DataFrame(rows)


def test_labels_follow_the_paired_interval_and_the_margin():
    rng = np.random.default_rng(1)
    base = 10 + rng.normal(0, 1, 30)
    # The same noise in both (paired): a 10% gain is clear.
    p = claims.paired(frame(base * 1.10, base), "a", "b")
    assert claims.label(p) == "reproduced" and abs(p.mean - 0.10) < 1e-9
    assert claims.label(claims.paired(frame(base * 0.9, base), "a", "b")) == "refuted"
    # +0.5% with small paired noise: equivalent within ±2%.
    eq = claims.paired(frame(base * (1.005 + rng.normal(0, 0.002, 30)), base), "a", "b")
    assert claims.label(eq) == "not distinguishable"
    # +2% with large noise: the interval straddles the margin.
    wide = claims.paired(frame(base * (1.02 + rng.normal(0, 0.05, 30)), base), "a", "b")
    assert claims.label(wide) == "inconclusive"
    # Deterministic: every seed the same difference.
    det = claims.paired(frame([10.0] * 5, [9.0] * 5), "a", "b")
    assert det.deterministic and det.lo95 == det.hi95 and claims.label(det) == "reproduced"
    assert "deterministic" in det.text()


def test_unpaired_noise_does_not_hide_a_paired_difference():
    # Seeds vary by ±20% but b is always 3% behind a: Welch's test on the
    # two columns would call this noise; the paired interval does not.
    rng = np.random.default_rng(2)
    base = 10 * (1 + rng.normal(0, 0.2, 40))
    p = claims.paired(frame(base, base * 0.97 * (1 + rng.normal(0, 0.001, 40))), "a", "b")
    assert p.lo95 > 0.02 and claims.label(p) == "reproduced"


def test_combining_parts():
    assert claims.combine(["reproduced", "reproduced"]) == "reproduced"
    assert claims.combine(["reproduced", "refuted"]) == "refuted"
    assert claims.combine(["not distinguishable"] * 3) == "not distinguishable"
    assert claims.combine(["reproduced", "not distinguishable"]) == "inconclusive"
