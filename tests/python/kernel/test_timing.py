"""The guest's time per request and its clock against the emulator's
(`iolab kernel timing`, the clock ratio of emulog.cut_log), and the --icount bounds."""

import argparse
import json

import pytest

from iolab.cli.errors import UserError
from iolab.kernel import calibration, compare, emulog, timing
from iolab.kernel.emulog import cut_log
from iolab.kernel.guest import Plan

from .emulogs import CAP, COLS, MARK
from .emulogs import calibration_boot as _calibration_boot



def _boot(d, gaps_ns, guest_stretch=1.0):
    """A boot of one run (id 0, zlt0 on anticipatory): requests of 1 µs
    whose next arrival comes ``gap`` after the previous reply; the guest
    stamps its clock after each marker, its run ``guest_stretch`` times as
    long as the emulator's."""
    rows = []

    def rq(sector, arrival, service):
        rows.append(f"{len(rows)},1,read,,{sector * 512},4096,{sector},8,{arrival},{arrival},"
                    f"{arrival + service},{arrival + service},{service},0,0,0,0,0,miss,")
        return arrival + service

    t = rq(MARK, 1_000, 1_000)
    start = t
    for g in gaps_ns:
        t = rq(100, t + g, 1_000)
    end = rq(MARK + 8, t + 5_000, 1_000)
    d.mkdir()
    (d / "emu.csv").write_text("# iolab-emu-log 1 {}\n" + COLS + "\n" + "\n".join(rows) + "\n")
    (d / "plan.txt").write_text("0 zlt0 anticipatory\n")
    (d / "disk.conf").write_text(f"marker_sector {MARK}\n")
    (d / "runs").mkdir()
    g0 = 7_000_000_000
    (d / "runs" / "clock.txt").write_text(f"0 {g0}\n1 {g0 + round((end - start) * guest_stretch)}\n")
    return end - start


def test_gap_percentiles_and_one_clock(tmp_path):
    gaps = [1_000_000 + 1_000 * i for i in range(100)]  # 1.000 .. 1.099 ms
    _boot(tmp_path / "b", gaps)
    [r] = timing.boot_timing(tmp_path / "b")
    # 100 requests; 99 gaps between them (the first one's is from the marker's reply)
    assert r["requests"] == 100
    assert r["gap_pct_us"]["50"] == pytest.approx(1_050.0, abs=1.0)
    assert r["gap_pct_us"]["99"] == pytest.approx(1_098.0, abs=1.5)
    assert r["clock_ratio"] == pytest.approx(1.0)


def test_a_guest_that_fell_behind_shows_in_the_clock_ratio(tmp_path):
    length = _boot(tmp_path / "b", [2_000_000] * 10, guest_stretch=0.9)
    c = cut_log(tmp_path / "b", Plan("x", [(0, "zlt0", "anticipatory", 0)]), CAP)
    # the guest's length over the emulator's (marker reply to marker reply)
    assert c[0]["clock_ratio"] == pytest.approx(round(length * 0.9) / length)
    assert c[0]["clock_ratio"] == pytest.approx(0.9)


def test_runs_without_guest_stamps_have_no_ratio(tmp_path):
    _boot(tmp_path / "b", [1_000_000] * 5)
    (tmp_path / "b" / "runs" / "clock.txt").unlink()
    [r] = timing.boot_timing(tmp_path / "b")
    assert r["clock_ratio"] != r["clock_ratio"]  # NaN


def test_timing_command_reads_every_boot_and_writes_json(tmp_path, capsys):
    _boot(tmp_path / "calibration-hp97560", [1_000_000] * 5)
    _boot(tmp_path / "hp97560", [3_000_000] * 5)
    (tmp_path / "meta.json").write_text(json.dumps({"icount": 6, "load_before": "0.1 0.1 0.1"}))
    out = tmp_path / "t.json"
    assert timing.run_timing(argparse.Namespace(dir=str(tmp_path), json=str(out))) == 0
    text = capsys.readouterr().out
    assert "shift=6" in text and "calibration-hp97560" in text
    doc = json.loads(out.read_text())
    assert [r["boot"] for r in doc["runs"]] == ["calibration-hp97560", "hp97560"]
    assert doc["runs"][1]["gap_pct_us"]["50"] == pytest.approx(3_000.0)


def test_timing_of_a_directory_without_runs_is_a_clear_error(tmp_path):
    with pytest.raises(UserError, match="no guest runs"):
        timing.run_timing(argparse.Namespace(dir=str(tmp_path), json=None))


@pytest.mark.parametrize("shift", [-1, 11])
def test_icount_shift_outside_qemus_range_is_refused(shift):
    args = argparse.Namespace(reps=3, runtime=10, overhead_us=None, icount=shift)
    with pytest.raises(UserError, match="--icount: shift"):
        compare.check_options(args)


def test_measure_host_keeps_the_distribution_for_the_simulator(tmp_path):
    """Calibration runs: zlt0 and zlaio8 on one elevator; think samples are
    the zlt0 gaps less the mean device time, as many as GAP_QUANTILES."""
    d = tmp_path / "cal"
    d.mkdir()
    rows = []

    def rq(sector, arrival):
        rows.append(f"{len(rows)},1,read,,{sector * 512},4096,{sector},8,{arrival},{arrival},"
                    f"{arrival + 1_000},{arrival + 1_000},1000,0,0,0,0,0,miss,")
        return arrival + 1_000

    t = 0
    for rid, gaps in ((0, [400_000, 600_000] * 20), (1, [200_000] * 40)):
        t = rq(MARK + 16 * rid, t + 1_000)
        for g in gaps:
            t = rq(100, t + g)
        t = rq(MARK + 16 * rid + 8, t + 1_000)
    (d / "emu.csv").write_text("# iolab-emu-log 1 {}\n" + COLS + "\n" + "\n".join(rows) + "\n")
    (d / "plan.txt").write_text("0 zlt0 anticipatory\n1 zlaio8 anticipatory\n")
    (d / "disk.conf").write_text(f"marker_sector {MARK}\n")
    host = calibration.measure_host(d)["anticipatory"]
    assert host["device_us"] == pytest.approx(200.0)
    assert host["think_us"]["0"] == pytest.approx(300.0, rel=0.01)
    s = host["think_samples_us"]["0"]
    assert len(s) == emulog.GAP_QUANTILES
    assert min(s) == pytest.approx(200.0) and max(s) == pytest.approx(400.0)
    spec, _ = compare.sim_spec("hp97560", compare.WORKLOADS["seqreaders"], "anticipatory", 10, 1,
                               {"device_us": 200.0, "think_us": {"2": 300.0},
                                "think_samples_us": {"2": [100.0, 500.0]}}, "samples")
    assert spec["workload"]["group"][0]["think"] == {"dist": "samples", "ms": [2.1, 2.5]}
    assert spec["disk"]["host_overhead_us"] == 200.0


def test_traced_gaps_by_the_guest_clock_skip_the_markers(tmp_path):
    lines = [
        "    kworker/0:1H-39      [000] d..1.   10.000000: 254,0    D  RS 9000 + 8 [kworker/0:1H]",
        "    kworker/0:1H-39      [000] d.h2.   10.000100: 254,0    C  RS 9000 + 8 [0]",   # the marker
        "    kworker/0:1H-39      [000] d..1.   19.000000: 254,0    D  RS 100 + 8 [kworker/0:1H]",  # fio's start
        "         fio-127      [000] d.h2.   19.001000: 254,0    C  RS 100 + 8 [0]",
        "    kworker/0:1H-39      [000] d..1.   19.002500: 254,0    D  RS 108 + 8 [kworker/0:1H]",
        "         fio-127      [000] d.h2.   19.003000: 254,0    C  RS 108 + 8 [0]",
        "    kworker/0:1H-39      [000] d..1.   19.003700: 254,0    D  RS 116 + 8 [kworker/0:1H]",
        "    kworker/0:1H-39      [000] d..1.   19.004700: 254,0   1,0  m   N not a block event",
    ]
    f = tmp_path / "0.trace"
    f.write_text("\n".join(lines) + "\n")
    assert timing.traced_gaps_us(f, marker=8000) == pytest.approx([1_500.0, 700.0])
    # without the marker, fio's start counts as a gap of 9 s
    assert timing.traced_gaps_us(f)[0] == pytest.approx(9e6 - 100, rel=1e-6)


@pytest.mark.parametrize("log", ["garbage\n\x01\x02", "seq,op\n1,read\n", ""])
def test_a_damaged_emulator_log_is_one_clear_error(tmp_path, log):
    d = tmp_path / "b"
    d.mkdir()
    (d / "plan.txt").write_text("0 zlt0 none\n")
    (d / "disk.conf").write_text(f"marker_sector {MARK}\n")
    (d / "emu.csv").write_text(log)
    with pytest.raises(UserError, match="emu.csv: not an `iolab emu` request log"):
        timing.run_timing(argparse.Namespace(dir=str(tmp_path), json=None))


def test_guest_think_model_splits_the_gap_where_the_guests_elevator_does(tmp_path):
    """The untraced zlt0 run's mean gap at the disk is about 2,500 µs; its
    traced copy gives, by the guest's clock, 700 or 900 µs from each
    completion to the next request (mean 800 µs; the synthetic trace has no
    insertion, so its queueing stands in): the think extras are those gaps,
    and what the guest model charges to every request is the disk's mean
    gap less the guest's."""
    d = tmp_path / "cal"
    _calibration_boot(d, [("zlt0", "anticipatory", [2_400_000, 2_600_000] * 20, None),
                          ("zlaio8", "anticipatory", [200_000] * 40, None),
                          ("zlt0", "anticipatory", [1_000_000] * 40, [700, 900] * 20)])
    host = calibration.measure_host(d)["anticipatory"]
    g = host["think_guest_us"]["0"]
    assert len(g) == emulog.GAP_QUANTILES
    assert sum(g) / len(g) == pytest.approx(800.0)
    assert min(g) == pytest.approx(700.0) and max(g) == pytest.approx(900.0)
    assert host["guest_gap_us"]["0"]["mean"] == pytest.approx(800.0)
    assert host["guest_gap_us"]["0"]["n"] == 40
    # (the untraced run's 39 gaps between its 40 requests: 20 of 2,600 µs, 19 of 2,400)
    disk_mean = (20 * 2_600 + 19 * 2_400) / 39
    assert host["guest_device_us"]["0"] == pytest.approx(disk_mean - 800.0)
    assert host["guest_device_us"]["mean"] == pytest.approx(disk_mean - 800.0)
    dev, extra = calibration.sim_inputs(host, "guest")
    assert dev == pytest.approx(disk_mean - 800.0)
    assert extra[0.0] == pytest.approx([x / 1000 for x in g])
    # the mean model keeps the 8-in-flight device part
    assert calibration.sim_inputs(host, "mean")[0] == pytest.approx(200.0)
    spec, _ = compare.sim_spec("hp97560", compare.WORKLOADS["seqreaders"], "anticipatory", 10, 1,
                               {"device_us": 200.0, "think_us": {"2": 300.0},
                                "think_guest_us": {"2": [-100.0, 500.0]},
                                "guest_device_us": {"2": 1500.0, "mean": 1500.0}}, "guest")
    # a draw below zero is taken as zero; the guest model's charge per request
    assert spec["workload"]["group"][0]["think"] == {"dist": "samples", "ms": [2.0, 2.5]}
    assert spec["disk"]["host_overhead_us"] == 1500.0


def test_the_cpu_think_model_gives_the_guest_time_as_cpu_on_the_guests_cpus():
    """--think cpu: the one-process distribution becomes each process's CPU
    time per request (a draw below zero taken as zero), the think time
    stays fio's, and the run has the guest's CPUs: one under --icount, two
    otherwise; the workloads' own runs are traced too, to compare."""
    host = {"device_us": 200.0, "think_us": {"0": 100.0, "1": 300.0},
            "think_guest_us": {"0": [800.0, 1200.0], "1": [-100.0, 900.0]},
            "guest_device_us": {"0": 1500.0, "mean": 1500.0}}
    spec, _ = compare.sim_spec("hp97560", compare.WORKLOADS["randseq"], "wpcas", 10, 1, host, "cpu", icount=3)
    rand, seq = spec["workload"]["group"]
    assert "think" not in rand and rand["cpu"] == {"dist": "samples", "ms": [0.8, 1.2]}
    assert seq["think"] == {"dist": "constant", "ms": 1.0} and seq["cpu"] == {"dist": "samples", "ms": [0.0, 0.9]}
    assert spec["host"] == {"cpus": 1} and spec["disk"]["host_overhead_us"] == 1500.0
    assert compare.sim_spec("hp97560", compare.WORKLOADS["randseq"], "wpcas", 10, 1, host, "cpu")[0]["host"] \
        == {"cpus": compare.GUEST_SMP}
    assert "host" not in compare.sim_spec("hp97560", compare.WORKLOADS["randseq"], "wpcas", 10, 1, host, "guest",
                                          icount=3)[0]
    runs = compare.run_sim({**spec, "run": {"duration_s": 2, "seed": 1, "repetitions": 1}})
    assert runs[0]["cpu"]["cpus"] == 1 and runs[0]["cpu"]["bursts"] > 0
    plan, traced = calibration.calibration_plan("hp97560", ["wpcas"], "cpu", ["randseq"])
    assert [plan.runs[i][1:3] for i in traced] == [("zlt0", "wpcas"), ("zlt1", "wpcas"), ("zlt2", "wpcas"),
                                                  ("randseq", "wpcas"),
                                                  ("zlt0", "bfq"), ("zlt1", "bfq"), ("zlt2", "bfq")]


def test_the_guest_clock_gap_ends_at_the_insertion_and_falls_back_to_queueing(tmp_path):
    lines = [
        "         fio-127      [000] d.h2.   10.000000: 254,0    C  RS 100 + 8 [0]",
        "         fio-127      [000] d..1.   10.000600: 254,0    Q  RS 108 + 8 [fio]",
        "         fio-127      [000] d..2.   10.000800: 254,0    I  RS 108 + 8 [fio]",
        "    kworker/0:1H-39      [000] d..1.   10.001200: 254,0    D  RS 108 + 8 [kw]",
    ]
    f = tmp_path / "0.trace"
    f.write_text("\n".join(lines) + "\n")
    assert timing.traced_gaps_us(f, to="I") == pytest.approx([800.0])
    assert timing.traced_gaps_us(f, to="Q") == pytest.approx([600.0])
    assert timing.traced_gaps_us(f) == pytest.approx([1_200.0])
    # under none nothing is inserted: I gives nothing, and Q is taken instead
    f.write_text("\n".join(x for x in lines if " I " not in x) + "\n")
    assert timing.traced_gaps_us(f, to="I") == []


def test_guest_think_model_without_traced_runs_is_refused(tmp_path):
    d = tmp_path / "cal"
    _calibration_boot(d, [("zlt0", "anticipatory", [500_000] * 10, None),
                          ("zlaio8", "anticipatory", [200_000] * 10, None)])
    host = calibration.measure_host(d)["anticipatory"]
    assert "think_guest_us" not in host
    with pytest.raises(UserError, match="--think guest: the calibration has no traced runs"):
        calibration.sim_inputs(host, "guest")


def test_the_guest_think_model_traces_a_copy_of_each_one_process_run(tmp_path):
    plan, traced = calibration.calibration_plan("hp97560", ["none", "anticipatory"], "guest")
    # and bfq's one-process runs, untraced and traced: what a message costs the tracer
    assert len(plan.runs) == 2 * 4 + 2 * 3 + 2 * 3
    assert [plan.runs[i][1:3] for i in traced] == [(w, e) for e in ("none", "anticipatory", "bfq")
                                                   for w in ("zlt0", "zlt1", "zlt2")]
    assert [r[1:3] for r in plan.runs if r[0] not in traced][-3:] == [(w, "bfq") for w in ("zlt0", "zlt1", "zlt2")]
    assert calibration.calibration_plan("hp97560", ["bfq"], "guest")[0].runs[-1][1:3] == ("zlt2", "bfq")
    assert len(calibration.calibration_plan("hp97560", ["bfq"], "guest")[0].runs) == 4 + 3
    from iolab.kernel import guest

    guest.write_share(tmp_path, plan, 8, 2_600_000, {}, [], traced)
    assert (tmp_path / "trace.conf").read_text().splitlines() == [f"run:{i}" for i in traced]
    plain, none_traced = calibration.calibration_plan("hp97560", ["none"], "mean")
    assert len(plain.runs) == 4 and none_traced == []


def test_calibration_prefers_runs_on_the_disks_clock(tmp_path):
    """The untraced zlt0 run's guest fell behind (its clock 5% short): the
    disk's view comes from the traced copy, on the clock, and the report's
    list of runs used off the clock has only the 8-in-flight run, which
    has no copy."""
    d = tmp_path / "cal"
    _calibration_boot(d, [("zlt0", "anticipatory", [9_000_000] * 20, None),
                          ("zlaio8", "anticipatory", [200_000] * 20, None),
                          ("zlt0", "anticipatory", [1_000_000] * 20, [700] * 20)],
                      stretch={0: 0.95, 1: 0.98})
    host = calibration.measure_host(d)["anticipatory"]
    assert host["one_process_gap_us"]["0"] == pytest.approx(1_000.0)
    assert host["guest_device_us"]["0"] == pytest.approx(300.0)
    assert host["off_clock_runs"] == [1]


def test_the_cut_counts_requests_that_continue_the_one_before(tmp_path):
    d = tmp_path / "b"
    d.mkdir()
    rows, t = [], 0
    # marker, then sectors 100, 108, 116 (two continue), 500, 508 (one more): 3 of 4
    for sector in (MARK, 100, 108, 116, 500, 508, MARK + 8):
        rows.append(f"{len(rows)},1,read,,{sector * 512},4096,{sector},8,{t},{t},{t + 10},{t + 10},10,0,0,0,0,0,miss,")
        t += 1_000
    (d / "emu.csv").write_text("# iolab-emu-log 1 {}\n" + COLS + "\n" + "\n".join(rows) + "\n")
    (d / "disk.conf").write_text(f"marker_sector {MARK}\n")
    c = cut_log(d, Plan("x", [(0, "zlt0", "none", 0)]))
    assert c[0]["requests"] == 5 and c[0]["continued"] == pytest.approx(3 / 4)


def test_each_processs_own_gap_with_several_sharing_the_guest(tmp_path):
    """Two processes: 200's request completes, 300's completes, then 300
    inserts its next (0.5 ms after its own completion) before 200 does
    (1.2 ms after its own): each gap is the process's own, not the time
    from the last completion of anyone."""
    ev = [
        ("fio-200", "Q", 10.000000, 100), ("fio-200", "I", 10.000100, 100),
        ("fio-300", "Q", 10.000200, 900), ("fio-300", "I", 10.000300, 900),
        ("<idle>-0", "C", 10.010000, 100),
        ("<idle>-0", "C", 10.020000, 900),
        ("fio-300", "Q", 10.020400, 908), ("fio-300", "I", 10.020500, 908),
        ("fio-200", "Q", 10.011100, 108), ("fio-200", "I", 10.011200, 108),
    ]
    ev.sort(key=lambda e: e[2])
    lines = [f"{c:>16s}      [000] d..1.   {t:.6f}: 254,0    {a}  RS {sec} + 8 [x]"
             for c, a, t, sec in ((c if "-" in c else c + "-1", a, t, sec) for c, a, t, sec in ev)]
    f = tmp_path / "0.trace"
    f.write_text("\n".join(lines) + "\n")
    assert sorted(timing.traced_process_gaps_us(f)) == pytest.approx([500.0, 1_200.0])


def test_the_workload_model_traces_each_compared_workload_and_tells_its_processes_apart(tmp_path):
    plan, traced = calibration.calibration_plan("hp97560", ["anticipatory"], "workload",
                                                ["seqreaders", "randseq", "coop", "aiowrite"])
    # the one-process copies, then the workloads whose processes have regions of their own
    # and wait for each request (coop shares one file; aiowrite keeps 8 in flight)
    assert [plan.runs[i][1] for i in traced] == ["zlt0", "zlt1", "zlt2", "seqreaders", "randseq",
                                                 "zlt0", "zlt1", "zlt2"]
    # a traced randseq run: a random reader (0 ms think) and a sequential reader (1 ms
    # think), each told by the region its requests fall in
    cap = 2_684_016
    regions = compare.WORKLOADS["randseq"].processes()
    from iolab.kernel.workloads import layout

    places = layout(compare.WORKLOADS["randseq"], cap)
    rand = next(start for g, _, start, _ in places if g.name == "rand")
    seq = next(start for g, _, start, _ in places if g.name == "seq")
    lines, t = [], 10.0
    for pid, sector, gap_us in ((201, rand, 900), (202, seq, 1_000 + 1_600), (201, rand + 64, 1_100),
                                (202, seq + 32, 1_000 + 1_400)):
        lines.append(f"         fio-{pid}      [000] d..1.   {t:.6f}: 254,0    Q  RS {sector} + 8 [fio]")
        lines.append(f"         fio-{pid}      [000] d..2.   {t + 0.0001:.6f}: 254,0    I  RS {sector} + 8 [fio]")
        lines.append(f"          <idle>-0       [000] d.h3.   {t + 0.005:.6f}: 254,0    C  RS {sector} + 8 [0]")
        lines.append(f"         fio-{pid}      [000] d..2.   {t + 0.005 + gap_us / 1e6:.6f}: 254,0    Q  RS "
                     f"{sector + 8} + 8 [fio]")
        lines.append(f"         fio-{pid}      [000] d..2.   {t + 0.005 + gap_us / 1e6:.6f}: 254,0    I  RS "
                     f"{sector + 8} + 8 [fio]")
        t += 0.1
    f = tmp_path / "r.trace"
    f.write_text("\n".join(lines) + "\n")
    gaps = calibration.workload_gaps_us(f, cap - 4096, "randseq", cap)
    assert sorted(gaps) == [0.0, 1.0] and len(regions) == 4
    assert sorted(gaps[0.0]) == pytest.approx([900.0, 1_100.0])
    assert sorted(gaps[1.0]) == pytest.approx([1_400.0, 1_600.0])
    host = {"device_us": 100.0, "think_us": {"0": 1.0, "1": 1.0},
            "think_guest_us": {"0": [500.0], "1": [500.0]}, "guest_device_us": {"mean": 800.0},
            "workload_think_us": {"randseq": {"1.0": [1_500.0]}}}
    dev, extra = calibration.sim_inputs(host, "workload", "randseq")
    assert dev == 800.0 and extra == {0.0: [0.5], 1.0: [1.5]}
    with pytest.raises(UserError, match="no traced run of seqreaders"):
        calibration.sim_inputs(host, "workload", "seqreaders")
