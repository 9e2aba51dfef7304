"""`iolab paper wpcas --kernel` without a guest: the fio jobs put IOzone's
files where the simulator puts them, and the verdicts come from
wpcas_claims on synthetic kernel runs."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from iolab import _iolab
from iolab.cli.errors import UserError
from iolab.kernel.guest import MARKER_SECTORS
from iolab.paper import wpcas_kernel as wk
from iolab.paper import wpcas_kernel_plan as wkp
from iolab.paper import wpcas_kernel_sim as wks
from iolab.paper.wpcas_experiments import iozone_spec, reading

from .emulogs import calibration_boot

HP97560_SECTORS = 2684016


def sections(text: str) -> list[dict[str, str]]:
    """The fio job file's job sections (name and options), in order."""
    out: list[dict[str, str]] = []
    for line in text.splitlines():
        if line.startswith("[") and line != "[global]":
            out.append({"name": line[1:-1]})
        elif out and line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[-1][key] = value
    return out


@pytest.mark.parametrize("placement", ["packed", "ext3"])
@pytest.mark.parametrize("mode", ["sequential", "random"])
def test_every_test_of_every_process_is_on_the_simulators_file(placement, mode):
    classes = 10
    w = wkp.workload(mode, classes, placement)
    # the simulator's own placement of this very workload
    starts = _iolab.iozone_file_starts(json.dumps(w), HP97560_SECTORS)
    secs = sections(wkp.fio_job(mode, classes, placement, HP97560_SECTORS))
    tests = wkp.TESTS[mode]
    assert len(secs) == classes * len(tests)
    for t, (_, rw) in enumerate(tests):
        phase = secs[t * classes:(t + 1) * classes]
        assert [int(s["offset"]) for s in phase] == [s * 512 for s in starts]
        assert all(s["rw"] == rw for s in phase)
        # the test's processes start together, after the previous test's
        assert [("stonewall" in s) for s in phase] == [t > 0] + [False] * (classes - 1)
    if placement == "packed":
        # crates/iolab-sim/src/workload/mod.rs: back to back from sector 0
        assert starts == [i * 1024 for i in range(classes)]
    else:
        assert len(set(starts)) == classes and starts != [i * 1024 for i in range(classes)]


def test_the_workload_is_iolab_paper_wpcas_s_own():
    for placement, name in wk.PLACEMENTS.items():
        for mode in wkp.MODES:
            assert wkp.workload(mode, 40, placement) == iozone_spec(reading(name), mode, 40, 1)["workload"]
    text = wkp.fio_job("random", 10, "packed", HP97560_SECTORS)
    for option in ("direct=1", "ioengine=psync", "bs=4k", f"size={512 * 1024}", "norandommap=1",
                   "filename=/dev/vda"):
        assert option in text.splitlines()


def test_placement_errors_are_user_errors():
    with pytest.raises(UserError, match="hp97560"):
        wkp.file_starts("sequential", 10, "packed", 1000)


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is installed by make deps")
@pytest.mark.parametrize("mode", ["sequential", "random"])
def test_fio_accepts_the_jobs(tmp_path, mode):
    job = tmp_path / "iozone.fio"
    job.write_text(wkp.fio_job(mode, 80, "packed", HP97560_SECTORS, device=str(tmp_path / "disk")))
    r = subprocess.run(["fio", "--parse-only", str(job)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_quick_and_full_plans():
    q = wk.plan_for(True)
    assert q.classes == (10,) and q.reps == 1 and q.icount == 6 and q.modes == ("sequential", "random")
    runs = wk.make_runs(q)
    assert len(runs) == 2 * len(wk.SCHEDULERS)
    f = wk.plan_for(False, icount=None)
    assert f.classes == (10, 40, 80) and f.reps == 3 and f.icount is None
    runs = wk.make_runs(f)
    assert [r.id for r in runs] == list(range(3 * 2 * 3 * 5))
    # every scheduler once per experiment and repetition, the order rotated
    first = [r.label for r in runs[:5]]
    second = [r.label for r in runs if r.rep == 1][:5]
    assert sorted(first) == sorted(s.label for s in wk.SCHEDULERS) and second == first[1:] + first[:1]


def test_the_share_names_each_runs_elevator_and_wpcas_start_up(tmp_path):
    plan = wk.plan_for(True)
    runs = wk.make_runs(plan)
    wk.write_share(tmp_path, plan, runs, HP97560_SECTORS, {"seek_cyl_sectors": 1368})
    lines = (tmp_path / "plan.txt").read_text().splitlines()
    assert lines[:5] == ["0 iozone-sequential-10 none", "1 iozone-sequential-10 mq-deadline",
                         "2 iozone-sequential-10 anticipatory", "3 iozone-sequential-10 wpcas",
                         "4 iozone-sequential-10 wpcas wpcas-ste"]
    # STE from the first request, as the simulator's wpcas-ste
    assert (tmp_path / "tunables" / "wpcas-ste").read_text() == "min_samples 0\nprior_ps 1\n"
    assert (tmp_path / "disk.conf").read_text() == f"marker_sector {HP97560_SECTORS - MARKER_SECTORS}\n"
    assert sorted(p.name for p in (tmp_path / "jobs").iterdir()) == ["iozone-random-10.fio",
                                                                     "iozone-sequential-10.fio"]
    assert not (tmp_path / "trace.conf").exists()
    traced = wk.plan_for(True, trace=("mq-deadline", "none"))
    wk.write_share(tmp_path, traced, runs, HP97560_SECTORS, {})
    assert (tmp_path / "trace.conf").read_text() == "mq-deadline\nnone\n"


def test_simulator_side_runs_the_kernel_s_schedulers():
    spec = wks.sim_spec("sequential", 10, wk.plan_for(True))
    assert [s["label"] for s in spec["scheduler"]] == [s.label for s in wk.SCHEDULERS]
    assert [s["name"] for s in spec["scheduler"]] == ["none", "mq-deadline", "as", "wpcas", "wpcas"]
    assert spec["scheduler"][4]["min_samples"] == 0 and spec["scheduler"][4]["prior_ps"] == 1.0
    assert spec["disk"] == {"preset": "hp97560", "queue_depth": 1}
    assert spec["run"]["repetitions"] == 2


def synthetic(side: str, reps: int, gain: float, noise: float, seed: int = 1) -> list[dict]:
    """Runs of one side: noop and deadline equal, AS a little better, WPCAS
    (STE) `gain` better than AS, WPCAS (as-rule) equal to AS; the same noise
    per repetition for every scheduler (paired), a little of its own."""
    rng = np.random.default_rng(seed)
    rows = []
    for mode in wkp.MODES:
        for c in (10, 40):
            for rep in range(reps):
                base = 0.30 * (1 + rng.normal(0, noise))
                for label, f in (("noop", 1.0), ("deadline", 1.0), ("as", 1.1), ("wpcas", 1.1),
                                 ("wpcas-ste", 1.1 * (1 + gain))):
                    rows.append({"side": side, "scheduler": label, "seed": rep, "mode": mode, "classes": c,
                                 "throughput_mb_s": base * f * (1 + rng.normal(0, noise / 20)),
                                 "requests": 1, "expected_requests": 1})
    return rows


def test_verdicts_side_by_side_from_synthetic_results():
    rows = synthetic("kernel", 5, 0.10, 0.05) + synthetic("simulator", 5, 0.0, 0.05, seed=2)
    result = wk.side_by_side(rows, "packed")

    def by(prefix, startup):
        return next(r for r in result if r.claim.startswith(prefix) and r.startup == startup)

    ste = by("WPCAS beats AS on sequential", "ste")
    assert ste.kernel.verdict == "reproduced" and ste.sim.verdict == "not distinguishable"
    assert by("WPCAS beats AS on sequential", "as-rule").kernel.verdict == "not distinguishable"
    cfq = by("CFQ has the highest random", "ste")
    assert cfq.kernel.verdict == cfq.sim.verdict == "n/a" and "5.0" in cfq.kernel.iolab
    # NOOP/Deadline trail AS at 10 and 40 classes where the paper has them lead
    lead = by("NOOP and Deadline lead", "as-rule")
    assert lead.kernel.verdict == "refuted"
    assert {r.startup for r in result} == {"as-rule", "ste"} and len(result) == 8
    assert all(wk.shown(r.kernel) == r.kernel.verdict for r in result)


def test_one_kernel_run_is_labelled_as_one_run():
    rows = synthetic("kernel", 1, 0.10, 0.05) + synthetic("simulator", 3, 0.10, 0.05)
    r = next(x for x in wk.side_by_side(rows, "packed") if x.claim.startswith("WPCAS beats AS on random")
             and x.startup == "ste")
    assert wk.shown(r.kernel) == "reproduced (one run)" and "one run" in r.kernel.iolab
    assert wk.shown(r.sim) == "reproduced"


@pytest.mark.parametrize("guests, reps", [(1, 1), (2, 2)])
def test_report_from_a_finished_directory(tmp_path, guests, reps):
    """A guest run's directory (markers, requests, the module's counters)
    and the simulator's documents give the report without a guest; with
    two guests side by side, each repetition in a boot of its own."""
    plan = wk.plan_for(True, reps=reps, classes=[10], guests=guests)
    plan.modes = ("random",)
    runs = wk.make_runs(plan)
    groups = wk.share_out(runs, guests, {})
    assert len(groups) == guests
    cap = HP97560_SECTORS
    marker = cap - MARKER_SECTORS
    for group in groups:
        _write_boot(tmp_path / group[0].share, group, marker)
    meta = {"kernel": "6.1.0-test", "disk": wk.DISK, "plan": wk.asdict(plan), "runs": [wk.asdict(r) for r in runs],
            "capacity": cap, "quick": True, "wall_s": 1.0}
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    sim = wk.run_sim(plan, tmp_path)
    assert {r["scheduler"] for r in sim} == {s.label for s in wk.SCHEDULERS}
    result = wk.analyse(tmp_path)
    doc = json.loads((tmp_path / "paper-wpcas-kernel.json").read_text())
    kern = [r for r in doc["runs"] if r["side"] == "kernel"]
    assert len(kern) == len(runs)
    assert {r["guest"] for r in kern} == {g[0].share for g in groups}
    ste = next(r for r in kern if r["scheduler"] == "wpcas-ste")
    # 20 requests of 4 KiB, 8 ms each and 1 µs apart
    assert ste["throughput_mb_s"] == pytest.approx(20 * 4096 / (20 * 8e-3 + 19 * 1e-6) / 1e6)
    assert ste["antic_started"] == 12 and ste["requests"] == 20
    # the bytes the disk moved, and IOzone's (10 processes x 2 tests x 512 KiB): here a fake log's 20 requests
    assert ste["bytes"] == 20 * 4096 and ste["expected_bytes"] == 10 * 2 * 512 * 1024
    rnd = next(r for r in result if r.claim.startswith("WPCAS beats AS on random") and r.startup == "ste")
    assert rnd.kernel.verdict == "reproduced"
    text = (tmp_path / "report.md").read_text()
    assert "CFQ is not in Linux 6.1" in text
    if reps == 1:
        assert rnd.kernel.note == "one run" and "reproduced (one run)" in text
    else:
        assert rnd.kernel.note != "one run" and "2 guests side by side" in text


def _write_boot(share, runs, marker, stretch=None):
    """One guest's emulator log and counters: per run its two markers and
    20 requests whose service time depends on the scheduler; with
    ``stretch`` ({run id: factor}) the guest stamps its clock after each
    marker, those runs that much longer by the guest's clock."""
    (share / "runs").mkdir(parents=True)
    (share / "disk.conf").write_text(f"marker_sector {marker}\n")
    cols = "seq,conn,op,flags,offset,length,sector,nr_sectors,arrival_ns,start_ns,complete_ns,reply_ns," \
           "service_ns,seek_ns,rotation_ns,transfer_ns,overhead_ns,seek_cylinders,cache,error"
    log, t = [], 0

    def rq(op, sector, service):
        nonlocal t
        log.append(f"{len(log)},1,{op},,{sector * 512},4096,{sector},8,{t},{t},{t + service},{t + service},"
                   f"{service},0,0,0,0,1,miss,")
        t += service + 1000

    per_run = {"noop": 10_000_000, "deadline": 10_000_000, "as": 9_000_000, "wpcas": 9_000_000,
               "wpcas-ste": 8_000_000}
    stamps = []
    for r in runs:
        rq("read", marker + 16 * r.id, 10)
        begin = t - 1000
        for i in range(20):
            rq("read", 8 * i, per_run[r.label])
        rq("read", marker + 16 * r.id + 8, 10)
        if stretch is not None:
            # the guest's clock after each marker's reply: 10 ns after the request's arrival
            stamps += [f"{2 * r.id} {begin}", f"{2 * r.id + 1} {begin + round((t - 1000 - begin) * stretch.get(r.id, 1.0))}"]
        (share / "runs" / f"{r.id}.stats").write_text("antic_started 12\nantic_succeeded 10\nantic_failed 2\n")
    (share / "emu.csv").write_text("# iolab-emu-log 1 {}\n" + cols + "\n" + "\n".join(log) + "\n")
    if stamps:
        (share / "runs" / "clock.txt").write_text("\n".join(stamps) + "\n")


def test_a_run_off_the_disks_clock_is_left_out_and_named(tmp_path):
    plan = wk.plan_for(True, reps=2, classes=[10])
    plan.modes = ("random",)
    runs = wk.make_runs(plan)
    bad = next(r for r in runs if r.label == "as" and r.rep == 1)
    _write_boot(tmp_path / wk.DISK, runs, HP97560_SECTORS - MARKER_SECTORS, stretch={bad.id: 0.95})
    meta = {"kernel": "6.1.0-test", "disk": wk.DISK, "plan": wk.asdict(plan), "runs": [wk.asdict(r) for r in runs],
            "capacity": HP97560_SECTORS, "quick": True, "wall_s": 1.0}
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    wk.run_sim(plan, tmp_path)
    wk.analyse(tmp_path)
    doc = json.loads((tmp_path / "paper-wpcas-kernel.json").read_text())
    kern = [r for r in doc["runs"] if r["side"] == "kernel"]
    assert len(kern) == len(runs) - 1 and bad.id not in {r["run"] for r in kern}
    assert [r["run"] for r in doc["left_out"]] == [bad.id]
    assert all(r["clock_ratio"] == pytest.approx(1.0) for r in kern)
    text = (tmp_path / "report.md").read_text()
    assert f"run {bad.id} (as, random 10: 0.950)" in text and "left out of every figure" in text


def test_runs_are_shared_out_by_whole_repetitions_of_an_experiment():
    plan = wk.plan_for(False, guests=4)
    runs = wk.make_runs(plan)
    # the simulator's run lengths: a sequential 80-class run is the longest
    secs = {(m, c, s.label): (4.0 if m == "sequential" else 2.0) * c for m in wkp.MODES
            for c in wkp.CLASS_COUNTS for s in wk.SCHEDULERS}
    groups = wk.share_out(runs, 4, secs)
    assert len(groups) == 4 and sorted(r.id for g in groups for r in g) == [r.id for r in runs]
    assert [g[0].share for g in groups] == [f"{wk.DISK}-g{i}" for i in range(1, 5)]
    for g in groups:
        assert [r.id for r in g] == sorted(r.id for r in g)
        assert all(r.share == g[0].share for r in g)
    # every scheduler of a repetition of an experiment in one guest
    where = {}
    for r in runs:
        where.setdefault((r.rep, r.mode, r.classes), set()).add(r.share)
    assert all(len(v) == 1 for v in where.values())
    # no guest has more work than another by more than the longest block
    load = [sum(secs[(r.mode, r.classes, r.label)] for r in g) for g in groups]
    assert max(load) - min(load) <= 5 * 4.0 * 80
    # one guest: everything in the disk's own directory, as before
    assert wk.share_out(runs, 1, secs) == [runs]


@pytest.mark.parametrize("args, message", [
    (["--from", "DIR"], "give --kernel too"),
    (["--kernel", "--classes", "20"], "--classes"),
    (["--kernel", "--icount", "11"], "--icount"),
    (["--kernel", "--guests", "9"], "--guests"),
    (["--kernel", "--file-kib", "6"], "--file-kib"),
    (["--kernel", "--trace", "bfq"], "--trace: unknown bfq"),
    (["--kernel", "--file-kib", "1024"], "--file-kib"),
    (["--kernel", "--from", "DIR"], "no finished"),
])
def test_command_line_refuses_before_booting(tmp_path, args, message):
    args = [str(tmp_path / "nothing") if a == "DIR" else a for a in args]
    r = subprocess.run([sys.executable, "-m", "iolab", "paper", "wpcas", *args, "-o", str(tmp_path / "out")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_a_damaged_directory_is_one_clear_error(tmp_path):
    plan = wk.plan_for(True)
    meta = {"plan": wk.asdict(plan), "runs": [wk.asdict(r) for r in wk.make_runs(plan)], "capacity": 1}
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(UserError, match="incomplete or damaged"):
        wk.analyse(tmp_path)


def test_a_scaled_down_file_is_the_same_on_both_sides():
    plan = wk.plan_for(True, file_kb=64)
    spec = wks.sim_spec("sequential", 10, plan)
    assert spec["workload"]["file_kb"] == 64
    starts = _iolab.iozone_file_starts(json.dumps(spec["workload"]), HP97560_SECTORS)
    text = wkp.fio_job("sequential", 10, "packed", HP97560_SECTORS, file_kb=64)
    assert "size=65536" in text
    assert [int(s["offset"]) for s in sections(text)[:10]] == [s * 512 for s in starts]
    # packed 64 KiB files lie 128 sectors apart
    assert starts == [i * 128 for i in range(10)]
    assert wk.expected_requests("sequential", 10, 64) == 10 * 4 * 16


def test_the_simulator_pays_the_guests_time_of_a_calibration_boot(tmp_path):
    """A calibration boot with traced copies for every elevator the paper
    maps to: the simulator runs once more per scheduler, each charged its
    elevator's time per request and given its completion-to-insertion
    distribution as CPU time; the report grows a third column."""
    cal = tmp_path / "cal"
    runs = []
    for el, rest_ns, guest_us in (("none", 2_000_000, 300), ("mq-deadline", 3_000_000, 600),
                                  ("anticipatory", 3_000_000, 700), ("wpcas", 3_000_000, 800)):
        runs += [("zlt0", el, [rest_ns] * 20, None), ("zlaio8", el, [1_000_000] * 20, None),
                 ("zlt0", el, [rest_ns] * 20, [guest_us] * 20)]
    calibration_boot(cal, runs)
    host = wks.guest_time(cal)
    assert host["none"]["guest_device_us"]["mean"] == pytest.approx(2_000 - 300)
    plan = wk.plan_for(True, classes=[10])
    plan.modes = ("random",)
    specs = wks.with_guest_time(wks.sim_spec("random", 10, plan), host)
    assert [s["scheduler"][0]["label"] for s in specs] == [s.label for s in wk.SCHEDULERS]
    by = {s["scheduler"][0]["label"]: s for s in specs}
    assert by["deadline"]["disk"]["host_overhead_us"] == pytest.approx(3_000 - 600)
    assert by["wpcas-ste"]["workload"]["cpu"] == {"dist": "samples", "ms": [0.8] * 100}
    # a finished run gets the third side from --from DIR --calibration CAL
    runs_k = wk.make_runs(plan)
    _write_boot(tmp_path / wk.DISK, runs_k, HP97560_SECTORS - MARKER_SECTORS)
    meta = {"kernel": "6.1.0-test", "disk": wk.DISK, "plan": wk.asdict(plan),
            "runs": [wk.asdict(r) for r in runs_k], "capacity": HP97560_SECTORS, "quick": True, "wall_s": 1.0}
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    wk.run_sim(plan, tmp_path)
    wk.resim_guest(tmp_path, cal)
    result = wk.analyse(tmp_path)
    assert all(r.sim_guest is not None for r in result)
    doc = json.loads((tmp_path / "paper-wpcas-kernel.json").read_text())
    guest = [r for r in doc["runs"] if r["side"] == "simulator+guest"]
    plain = [r for r in doc["runs"] if r["side"] == "simulator"]
    assert len(guest) == len(plain)
    mean = {side: np.mean([r["throughput_mb_s"] for r in rows]) for side, rows in (("g", guest), ("p", plain))}
    assert mean["g"] < mean["p"]  # paying the guest's time costs throughput
    assert "simulator+guest" in (tmp_path / "report.md").read_text()


def test_a_calibration_without_every_elevator_traced_is_refused(tmp_path):
    cal = tmp_path / "cal"
    calibration_boot(cal, [("zlt0", "none", [1_000_000] * 5, [300] * 5), ("zlaio8", "none", [1_000_000] * 5, None)])
    with pytest.raises(UserError, match="no traced calibration of anticipatory, mq-deadline, wpcas"):
        wks.guest_time(cal)
    with pytest.raises(UserError, match="not a calibration boot"):
        wks.guest_time(tmp_path)
