"""`iolab paper wpcas --quick` writes the whole report on a fresh install."""

import json


def test_quick_reproduction_writes_report_figures_and_claims(wpcas_quick):
    out = wpcas_quick
    assert "claims" in (out / "stdout.txt").read_text()
    for name in ["report.md", "report.html", "paper-wpcas.json"] + [
        f"fig{n}_{m}_{c}.png" for n, m, c in [(3, "sequential", 10), (5, "sequential", 80), (8, "random", 80)]
    ] + [f"sweep_{p}.png" for p in ("gamma", "hist_len", "window_ms", "antic_expire")]:
        assert (out / name).is_file(), name
    data = json.loads((out / "paper-wpcas.json").read_text())
    verdicts = {c["claim"]: c["verdict"] for c in data["claims"]}
    assert len(verdicts) == 8
    assert all(v in {"agrees", "disagrees", "partly", "direction only", "not distinguishable"}
               or " / " in v for v in verdicts.values()), verdicts
    # Table 1's accounting identity holds in every run of the web load.
    for run in data["experiments"]["table1"]["runs"]:
        a = run["anticipation"]
        assert a["started"] == a["succeeded"] + a["failed"]
    report = (out / "report.md").read_text()
    assert "Table 1" in report and "Figures 3–8" in report and "Sensitivity" in report
