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


# two simulator runs of randseq under wpcas
SIMS = [_sim(1000, 900, 100, 900 * 2.3, 100 * 4.0, {"rand": 0.3, "seq": 1.2}),
        _sim(1000, 880, 120, 880 * 2.5, 120 * 4.0, {"rand": 0.3, "seq": 1.4})]


def _wpcas_row(tmp_path):
    """The directory's kernel runs, their groups' MB/s and SIMS as one row."""
    stats = _directory(tmp_path)
    return stats, anticipation.row(tmp_path, "d", "randseq", "wpcas", stats,
                                   [{"rand": 0.28, "seq": 1.5}, {"rand": 0.30, "seq": 1.7}], SIMS)


def test_a_row_holds_both_sides_the_traced_run_and_the_groups(tmp_path):
    stats, r = _wpcas_row(tmp_path)
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
    assert anticipation.row(tmp_path, "d", "randseq", "bfq", stats, [], SIMS) is None


def test_the_report_table_gives_every_figure(tmp_path):
    _, a = _wpcas_row(tmp_path)
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
    for g, _, start, _size in regions:
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


def test_percentiles_of_the_binned_waits_interpolate_within_a_bin():
    bins = [0] * anticipation.WAIT_BINS
    bins[4], bins[8] = 50, 50  # half at 1.00-1.25 ms, half at 2.00-2.25 ms
    assert anticipation.binned_percentile(bins, 0.25, 10) == pytest.approx(1.05)
    assert anticipation.binned_percentile(bins, 0.25, 50) == pytest.approx(1.25)
    assert anticipation.binned_percentile(bins, 0.25, 90) == pytest.approx(2.2)
    bins[-1] = 1000  # most waits past the last bound: no number for them
    assert math.isnan(anticipation.binned_percentile(bins, 0.25, 50))
    assert math.isnan(anticipation.binned_percentile([0] * 4, 0.25, 50))


def test_the_stats_files_bins_line_is_read_and_a_bad_one_ignored(tmp_path):
    p = tmp_path / "0.stats"
    _stats(p, 10, 10, 0, 10 * 1.1e6, 0)
    good = " ".join(["0"] * 4 + ["10"] + ["0"] * (anticipation.WAIT_BINS - 5))
    p.write_text(p.read_text() + f"antic_success_wait_bins {good}\n")
    c = anticipation.kernel_run(p)
    assert c["ok_wait_p50_ms"] == pytest.approx(1.125)
    for bad in ("1 2 3", " ".join(["x"] * anticipation.WAIT_BINS), " ".join(["-1"] * anticipation.WAIT_BINS)):
        _stats(p, 10, 10, 0, 10 * 1.1e6, 0)
        p.write_text(p.read_text() + f"antic_success_wait_bins {bad}\n")
        c = anticipation.kernel_run(p)
        assert c["started"] == 10 and math.isnan(c["ok_wait_p50_ms"])


def test_the_spread_table_needs_the_kernels_bins(tmp_path):
    stats = _directory(tmp_path)
    bins = [0] * anticipation.WAIT_BINS
    bins[8] = 900
    sims = [_sim(1000, 900, 100, 900 * 2.1, 100 * 4.0, {"rand": 0.3})]
    sims[0]["anticipation"].update(success_wait_bins=bins, success_wait_bin_ms=0.25)
    sims.append(dict(sims[0]))
    rows = [{"disk": "d", "workload": "randseq", "elevator": "wpcas", "kernel_mb_s": [2.0, 0.1],
             "anticipation": anticipation.row(tmp_path, "d", "randseq", "wpcas", stats, [], sims)}]
    assert "spread" not in "\n".join(anticipation.table(rows, 20, 8))  # the kernel's runs predate the bins
    kbins = " ".join(["0"] * 7 + ["950"] + ["0"] * (anticipation.WAIT_BINS - 8))
    for p in stats:
        p.write_text(p.read_text() + f"antic_success_wait_bins {kbins}\n")
    rows[0]["anticipation"] = anticipation.row(tmp_path, "d", "randseq", "wpcas", stats, [], sims)
    text = "\n".join(anticipation.table(rows, 20, 8))
    assert "spread" in text
    line = [x for x in text.splitlines() if x.startswith("| d | randseq | wpcas |")][-1]
    # p50: the middle of the kernel's bin 7 and of the simulator's bin 8; the traced run has no bins
    assert "1.88 ± 0.00 / 2.12 ± 0.00 / -" in line
