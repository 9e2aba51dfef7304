"""The anticipating rows by the elevator's own counters (iolab.kernel.anticipation)
and the emulator log's MB/s by process group (emulog.group_mb_s)."""

import json
import math

import pandas as pd
import pytest

from iolab.kernel import anticipation
from iolab.kernel.emulog import group_mb_s
from iolab.kernel.workloads import WORKLOADS, layout


def _stats(path, started, ok, failed, ok_ns, fail_ns):
    path.write_text(f"antic_started {started}\nantic_succeeded {ok}\nantic_failed {failed}\n"
                    f"antic_success_wait_ns {int(ok_ns)}\nantic_failure_wait_ns {int(fail_ns)}\ninserted 10\n")


def _fio(path, mb_s):
    side = {"bw_bytes": int(mb_s * 1e6), "total_ios": 100, "lat_ns": {"percentile": {"50.000000": 1e6,
                                                                                      "99.000000": 9e6}}}
    path.write_text(json.dumps({"jobs": [{"read": side, "write": {"bw_bytes": 0, "total_ios": 0},
                                          "job_runtime": 8000}]}))


def _sim(started, ok, failed, ok_ms, fail_ms, groups):
    return {"scheduler": "wpcas", "anticipation": {"started": started, "succeeded": ok, "failed": failed,
                                                   "success_wait_ms": ok_ms, "failure_wait_ms": fail_ms},
            "per_class": [{"name": n, "throughput_mb_s": v} for n, v in groups.items()]}


def test_counters_give_shares_and_mean_waits():
    c = anticipation.counters(100, 90, 10, 90 * 3e6, 10 * 5e6)
    assert c["success_share"] == pytest.approx(0.9)
    assert c["ok_wait_ms"] == pytest.approx(3.0) and c["fail_wait_ms"] == pytest.approx(5.0)
    empty = anticipation.counters(0, 0, 0, 0, 0)
    assert all(math.isnan(empty[k]) for k in ("success_share", "ok_wait_ms", "fail_wait_ms"))


def test_a_run_without_counters_is_left_out(tmp_path):
    (tmp_path / "1.stats").write_text("inserted 5\n")
    assert anticipation.kernel_run(tmp_path / "1.stats") is None
    assert anticipation.kernel_run(tmp_path / "missing.stats") is None
    assert anticipation.sim_run({"scheduler": "none"}) is None


def _directory(tmp_path):
    """A comparison's directory: two untraced kernel runs, and the
    calibration boot's traced run of randseq under wpcas."""
    runs = tmp_path / "d" / "runs"
    runs.mkdir(parents=True)
    _stats(runs / "0.stats", 1000, 950, 50, 950 * 2.0e6, 50 * 4e6)
    _stats(runs / "1.stats", 1000, 940, 60, 940 * 2.2e6, 60 * 4e6)
    cal = tmp_path / "calibration-d" / "runs"
    cal.mkdir(parents=True)
    (tmp_path / "calibration-d" / "plan.txt").write_text("0 zlt0 wpcas\n7 randseq anticipatory\n8 randseq wpcas\n")
    _stats(cal / "8.stats", 400, 360, 40, 360 * 2.5e6, 40 * 4e6)
    _fio(cal / "8.json", 1.5)
    (cal / "8.trace").write_text("# tracer: blk\n")
    return [runs / "0.stats", runs / "1.stats"]


def test_a_row_holds_both_sides_the_traced_run_and_the_groups(tmp_path):
    stats = _directory(tmp_path)
    sims = [_sim(1000, 900, 100, 900 * 2.3, 100 * 4.0, {"rand": 0.3, "seq": 1.2}),
            _sim(1000, 880, 120, 880 * 2.5, 120 * 4.0, {"rand": 0.3, "seq": 1.4})]
    r = anticipation.row(tmp_path, "d", "randseq", "wpcas", stats,
                         [{"rand": 0.28, "seq": 1.5}, {"rand": 0.30, "seq": 1.7}], sims)
    assert r["kernel_runs"] == 2 and r["sim_runs"] == 2
    assert r["kernel"]["ok_wait_ms"][0] == pytest.approx(2.1)
    assert r["sim"]["ok_wait_ms"][0] == pytest.approx(2.4)
    # sim - kernel: +0.3 ms, and an interval around it
    d, h = r["ok_wait_diff_ms"]
    assert d == pytest.approx(0.3) and h > 0
    assert r["failed_diff"][0] == pytest.approx(55.0)
    t = r["traced"]
    assert t["run"] == 8 and t["mb_s"] == pytest.approx(1.5) and t["success_share"] == pytest.approx(0.9)
    assert r["groups"]["seq"]["kernel"][0] == pytest.approx(1.6)
    assert r["groups"]["seq"]["sim"][0] == pytest.approx(1.3)
    # an elevator that does not anticipate has no row
    assert anticipation.row(tmp_path, "d", "randseq", "bfq", stats, [], sims) is None


def test_the_report_table_gives_every_figure(tmp_path):
    stats = _directory(tmp_path)
    sims = [_sim(1000, 900, 100, 900 * 2.3, 100 * 4.0, {"rand": 0.3, "seq": 1.2}),
            _sim(1000, 880, 120, 880 * 2.5, 120 * 4.0, {"rand": 0.3, "seq": 1.4})]
    a = anticipation.row(tmp_path, "d", "randseq", "wpcas", stats,
                         [{"rand": 0.28, "seq": 1.5}, {"rand": 0.30, "seq": 1.7}], sims)
    rows = [{"disk": "d", "workload": "randseq", "elevator": "wpcas", "kernel_mb_s": [2.0, 0.1], "anticipation": a},
            {"disk": "d", "workload": "randseq", "elevator": "bfq", "kernel_mb_s": [2.0, 0.1], "anticipation": None}]
    text = "\n".join(anticipation.table(rows, 20, 8))
    line = next(x for x in text.splitlines() if x.startswith("| d | randseq | wpcas |"))
    assert "94.5" in line and "89.0" in line and "90.0%" in line  # success shares: kernel, sim, traced
    assert "+300 ±" in line  # ok wait, sim - kernel, µs
    assert "| 100 |" not in line and "/ 100 |" in line  # the traced run's 40 failures over 8 s, for 20 s
    assert "1.50 (-25.0%)" in line  # the traced run against the untraced mean
    assert "| d | randseq | wpcas | seq | 1.600" in text and "-18.8%" in text
    assert "bfq" not in text
    assert anticipation.table(rows[1:], 20, 8) == []


def test_the_disks_bytes_are_told_apart_by_the_groups_regions():
    cap = 1 << 24
    regions = layout(WORKLOADS["randseq"], cap)
    rows = []
    for g, _, start, size in regions:
        n = 3 if g.name == "seq" else 1
        rows += [{"sector": start + 8 * k, "length": 4096 * (4 if g.name == "seq" else 1)} for k in range(n)]
    rows.append({"sector": cap - 8, "length": 4096})  # outside every region: nobody's
    got = group_mb_s(pd.DataFrame(rows), "randseq", cap, 1e9)
    seqs = sum(1 for g, *_ in regions if g.name == "seq")
    rands = sum(1 for g, *_ in regions if g.name == "rand")
    assert got["seq"] == pytest.approx(seqs * 3 * 16384 / 1e6)
    assert got["rand"] == pytest.approx(rands * 4096 / 1e6)
    assert group_mb_s(pd.DataFrame(rows), "no-such-workload", cap, 1e9) == {}
    assert group_mb_s(pd.DataFrame(rows), "randseq", cap, 0) == {}
