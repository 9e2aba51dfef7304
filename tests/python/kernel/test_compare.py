"""The analysis half of `iolab kernel compare` (no guest needed)."""

import json
import math

import pytest

from iolab.cli.errors import UserError
from iolab.kernel import compare, emulog, guest, significance
from iolab.kernel.emulog import cut_log
from iolab.kernel.guest import Plan, fio_summary, make_plan
from iolab.kernel.significance import mean_ci, tost


def test_equivalence_test_needs_both_sides_within_the_margin():
    a = [100.0, 101.0, 99.0, 100.5, 99.5]
    assert tost(a, [100.2, 100.8, 99.4, 100.1, 99.9]) < 0.05
    assert tost(a, [110.0, 111.0, 109.0, 110.5, 109.5]) > 0.5
    assert math.isnan(tost([1.0], [1.0, 2.0]))


def test_mean_and_interval():
    m, h = mean_ci([1.0, 2.0, 3.0])
    assert m == 2.0 and h == pytest.approx(2.484, abs=1e-3)  # t(0.975, 2) * 1 / sqrt(3)
    assert math.isnan(mean_ci([5.0])[1])
    assert math.isnan(mean_ci([])[0])


def test_plan_is_repetition_major_and_numbered():
    p = make_plan("hp97560", ["a", "b"], ["none", "wpcas"], 2)
    assert [r[0] for r in p.runs] == list(range(8))
    assert p.runs[0][1:] == ("a", "none", 0) and p.runs[4][1:] == ("a", "none", 1)


def test_fio_summary_reads_total_latency(tmp_path):
    job = {"job_runtime": 2000, "read": {"bw_bytes": 3_000_000, "total_ios": 400,
                                           "lat_ns": {"percentile": {"50.000000": 4_000_000,
                                                                      "99.000000": 90_000_000}}},
           "write": {"bw_bytes": 1_000_000, "total_ios": 100,
                     "lat_ns": {"percentile": {"50.000000": 5_000_000, "99.000000": 20_000_000}}}}
    f = tmp_path / "r.json"
    f.write_text(json.dumps({"jobs": [job]}))
    s = fio_summary(f)
    assert s["throughput_mb_s"] == 4.0 and s["iops"] == 250.0
    assert s["p50_ms"] == 5.0 and s["p99_ms"] == 90.0


def test_the_emulator_log_is_cut_at_the_markers(tmp_path):
    cap = 10_000
    m = cap - 2048
    cols = "seq,conn,op,flags,offset,length,sector,nr_sectors,arrival_ns,start_ns,complete_ns,reply_ns," \
           "service_ns,seek_ns,rotation_ns,transfer_ns,overhead_ns,seek_cylinders,cache,error"
    rows = []

    def rq(op, sector, n, arrival, service, cyl=0):
        rows.append(f"{len(rows)},1,{op},,{sector * 512},{n * 512},{sector},{n},{arrival},{arrival},"
                    f"{arrival + service},{arrival + service + 1000},{service},0,0,0,0,{cyl},miss,")

    rq("read", 0, 8, 0, 10)                 # before the run: not counted
    rq("read", m + 0, 8, 100, 10)           # run 0 starts
    rq("read", 100, 8, 1_000, 4_000, 3)
    rq("write", 200, 8, 6_000, 2_000, 5)
    rq("flush", 0, 0, 9_000, 0)             # not a data request
    rq("read", m + 8, 8, 10_000, 10)        # run 0 ends
    (tmp_path / "emu.csv").write_text("# iolab-emu-log 1 {}\n" + cols + "\n" + "\n".join(rows) + "\n")
    plan = Plan("hp97560", [(0, "seqreaders", "none", 0), (1, "seqreaders", "wpcas", 0)])
    cuts = cut_log(tmp_path, plan, cap)
    assert set(cuts) == {0}  # run 1 has no markers
    c = cuts[0]
    assert c["requests"] == 2 and c["mean_kb"] == 4.0
    assert c["utilization"] == pytest.approx(6_000 / 7_000)
    assert c["mean_seek_cylinders"] == 4.0
    assert c["median_gap_us"] == pytest.approx((6_000 - 6_000) / 1e3)  # reply 1_000+4_000+1_000 -> 6_000
    # the disk's bytes over the run's window: the opening marker's completion
    # (110 ns) to the closing marker's arrival (10,000 ns)
    assert c["disk_mb_s"] == pytest.approx(2 * 8 * 512 / (9_890 / 1e9) / 1e6)
    # and from the first request's arrival to the last completion
    assert c["bytes"] == 2 * 8 * 512 and c["span_s"] == pytest.approx(7_000 / 1e9)


def test_runs_cuts_are_averaged_figure_by_figure():
    a = {"requests": 2, "span_s": 1.0, "gap_pct_us": {"50": 3.0}}
    b = {"requests": 4, "span_s": 3.0, "gap_pct_us": {"50": 5.0}}
    # the gap percentiles (a table per run) are not averaged: that raised
    # TypeError and made every analysis with an emulator log fail
    assert emulog.mean_of_cuts([a, b]) == {"requests": 3.0, "span_s": 2.0}
    assert emulog.mean_of_cuts([]) == {}


def test_only_a_buffered_writer_is_compared_at_the_disk():
    from iolab.kernel.workloads import WORKLOADS

    assert [w for w in WORKLOADS.values() if w.buffered_writes] == [WORKLOADS["bufwrite"]]


def test_simulator_counterparts_say_when_they_stand_in():
    assert compare.sim_counterpart("anticipatory", {"as", "wpcas"}) == ("as", "")
    name, note = compare.sim_counterpart("mq-deadline", {"deadline"})
    assert name == "deadline" and "stands in" in note
    with pytest.raises(UserError):
        compare.sim_counterpart("none", {"as"})


def test_report_of_a_directory_without_meta_is_one_clear_error(tmp_path):
    class A:
        report = str(tmp_path)
    with pytest.raises(UserError, match="meta.json"):
        compare.run_compare(A())


def test_simulator_has_a_counterpart_for_every_6_1_elevator():
    known = compare.sim_scheduler_names()
    for el in compare.ELEVATORS:
        name, note = compare.sim_counterpart(el, known)
        assert note == "", (el, name, note)


def test_holm_adjusts_step_down_and_keeps_nan():
    adj = significance.holm([0.01, 0.04, math.nan, 0.03])
    # sorted 0.01, 0.03, 0.04 -> 3*0.01, max(0.03, 2*0.03), max(0.06, 1*0.04)
    assert adj[0] == pytest.approx(0.03)
    assert adj[3] == pytest.approx(0.06)
    assert adj[1] == pytest.approx(0.06)
    assert math.isnan(adj[2])


def _row(el, kernel, sim):
    k = sum(kernel) / len(kernel)
    s = sum(sim) / len(sim)
    return {"disk": "d", "workload": "w", "elevator": el, "kernel_mb_s": [k, 0.0], "sim_mb_s": [s, 0.0],
            "kernel_runs_mb_s": kernel, "sim_runs_mb_s": sim}


def test_rankings_count_only_pairs_the_kernel_tells_apart():
    rows = [
        _row("none", [1.00, 1.01, 0.99], [1.20, 1.21, 1.19]),
        _row("bfq", [2.00, 2.02, 1.98], [1.10, 1.11, 1.09]),   # kernel: bfq >> none; sim: reversed
        _row("kyber", [1.00, 1.30, 0.70], [1.00, 1.00, 1.00]),  # too noisy to tell from none
    ]
    (g,) = significance.rankings(rows, ["none", "bfq", "kyber"])
    assert g["kernel_order"] == ["bfq", "none", "kyber"] or g["kernel_order"][0] == "bfq"
    assert g["sim_order"] == ["none", "bfq", "kyber"]
    assert not g["same_order"]
    assert ("bfq", "none") in g["separated"]
    assert ("bfq", "none", "reversed") in g["unlike"]
    assert all("kyber" not in pair or pair == ("bfq", "kyber") for pair in g["separated"])


def test_ranking_sets_split_builtin_from_all():
    sets = significance.ranking_sets(["none", "mq-deadline", "bfq", "kyber", "anticipatory", "wpcas"])
    assert sets["6.1 built-in"] == ["none", "mq-deadline", "bfq", "kyber"]
    assert len(sets["all"]) == 6
    assert list(significance.ranking_sets(["anticipatory", "wpcas"])) == ["all"]


def test_trace_names_the_traced_elevators_for_the_guest(tmp_path):
    plan = make_plan("hp97560", ["randseq"], ["bfq", "mq-deadline"], 1)
    guest.write_share(tmp_path, plan, 5, 2_600_000, {}, ["bfq"])
    assert (tmp_path / "trace.conf").read_text() == "bfq\n"
    # A later boot without --trace leaves no stale file behind.
    guest.write_share(tmp_path, plan, 5, 2_600_000, {})
    assert not (tmp_path / "trace.conf").exists()


def test_trace_must_name_a_compared_elevator():
    with pytest.raises(UserError, match="--trace: unknown kyber"):
        compare._list("kyber", ["bfq", "mq-deadline"], "trace")


def test_a_whole_comparison_of_one_disk_fits_one_boots_markers(tmp_path):
    """The defaults (8 workloads x 6 elevators x 3 repetitions) are 144 runs:
    their markers fit; a boot of more runs than marker blocks is refused
    before anything is booted, and the markers' place is read back from
    the boot's disk.conf."""
    plan = make_plan("hp97560", compare.COMPARED, compare.ELEVATORS, 3)
    assert len(plan.runs) == 144
    guest.write_share(tmp_path / "a", plan, 5, 2_600_000, {})
    assert emulog.marker_sector(tmp_path / "a") == 2_600_000 - guest.MARKER_SECTORS
    big = make_plan("hp97560", compare.COMPARED, compare.ELEVATORS, 6)
    with pytest.raises(UserError, match="288 runs in one boot: the marker blocks hold 256"):
        guest.write_share(tmp_path / "b", big, 5, 2_600_000, {})
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "disk.conf").write_text("capacity 12\n")
    with pytest.raises(ValueError, match="no `marker_sector N` line"):
        emulog.marker_sector(tmp_path / "c")


def test_a_run_off_the_disks_clock_is_left_out_of_the_kernels_figures(tmp_path):
    assert emulog.off_clock({"clock_ratio": 0.95}) and emulog.off_clock({"clock_ratio": 1.011})
    assert not emulog.off_clock({"clock_ratio": 1.009}) and not emulog.off_clock({"clock_ratio": math.nan})
    assert not emulog.off_clock(None) and not emulog.off_clock({})
    # _kernel_side skips it: two runs of one elevator, the second off the clock
    (tmp_path / "runs").mkdir()
    fio = {"jobs": [{"read": {"bw_bytes": 2e6, "total_ios": 10, "lat_ns": {}},
                     "write": {"bw_bytes": 0, "total_ios": 0, "lat_ns": {}}, "job_runtime": 1000}]}
    for rid in (0, 1):
        (tmp_path / "runs" / f"{rid}.json").write_text(json.dumps(fio))
    plan = Plan("hp97560", [(0, "seqreaders", "none", 0), (1, "seqreaders", "none", 1)])
    side = compare._kernel_side(tmp_path, plan, "seqreaders", {0: {"clock_ratio": 1.0}, 1: {"clock_ratio": 0.9}})
    assert side["none"].throughput == [2.0]
