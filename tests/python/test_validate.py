"""Tests of ``iolab validate`` (python/iolab/cli/validate.py)."""

from __future__ import annotations

import json
from pathlib import Path

from iolab.cli import main

DATA = Path(__file__).resolve().parents[2] / "data" / "disksim"


def test_missing_file_is_one_line_and_exit_2(capsys, tmp_path):
    code = main(["validate", "--diskspecs", str(tmp_path / "nope.parv"),
                 "--trace", str(DATA / "hp_c2247a.trace")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("iolab: error: --diskspecs") and "nope.parv" in err


def test_malformed_trace_names_the_line(capsys, tmp_path):
    bad = tmp_path / "bad.trace"
    bad.write_text("R Miss 10 2 100.0 5.0\nR Maybe 10 2 100.0 5.0\n")
    code = main(["validate", "--diskspecs", str(DATA / "hp_c2247a.parv"), "--trace", str(bad)])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{bad}:2:" in err


def test_demerit_on_the_real_drive(capsys, tmp_path):
    out = tmp_path / "report.json"
    code = main(["validate", "--diskspecs", str(DATA / "hp_c2247a.parv"),
                 "--trace", str(DATA / "hp_c2247a.trace"), "--json", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "demerit" in text and "measured" in text and "simulated" in text
    report = json.loads(out.read_text())
    assert report["requests"] == 9999
    assert 0.0 < report["demerit_ms"] < 1.0


def test_disk_presets_lists_the_drives():
    from iolab._iolab import disk_presets

    names = [name for name, _ in disk_presets()]
    assert {"hp97560", "modern7200", "fixed"} <= set(names)
