"""The comparison's workloads: the same processes on the same sectors for
fio and the simulator."""

import shutil
import subprocess

import pytest

from iolab.cli.errors import UserError
from iolab.kernel.workloads import WORKLOADS, fio_job, layout, place_spread, sim_workload

HP97560_SECTORS = 2684016


def test_spread_placement_matches_the_simulators_rule():
    # crates/iolab-sim/src/workload/mod.rs, spread_and_packed_placement
    assert place_spread([16, 16, 16, 16], 4000) == [0, 1000, 2000, 3000]
    # a file that would run past the end is pulled back; none overlap
    assert place_spread([10, 3000], 4000) == [0, 1000]
    assert place_spread([1500, 1500, 1000], 4000) == [0, 1504, 3000]
    with pytest.raises(UserError, match="MiB"):
        place_spread([3000, 3000], 4000)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_every_workload_fits_the_hp97560_without_overlap(name):
    procs = layout(WORKLOADS[name], HP97560_SECTORS)
    if WORKLOADS[name].placement == "shared":
        assert {start for _, _, start, _ in procs} == {0}
        return
    ends = 0
    for _, _, start, size in procs:
        assert start >= ends and start % 8 == 0
        ends = start + size
    assert ends <= HP97560_SECTORS


def test_sim_workload_lists_every_group():
    w = sim_workload(WORKLOADS["rwmix"])
    assert w["kind"] == "processes" and w["placement"] == "spread"
    assert [g["count"] for g in w["group"]] == [2, 2]
    assert w["group"][1]["think"] == {"dist": "constant", "ms": 2.0}
    assert w["group"][0]["op"] == "mix" and w["group"][0]["read_fraction"] == 0.7
    assert all(g["sync"] for g in w["group"])


def test_fio_job_has_one_section_per_process_at_the_simulators_offsets():
    w = WORKLOADS["randseq"]
    text = fio_job(w, HP97560_SECTORS, 7)
    sections = [line for line in text.splitlines() if line.startswith("[") and line != "[global]"]
    assert sections == ["[rand-0]", "[rand-1]", "[seq-0]", "[seq-1]"]
    offsets = [int(line.split("=")[1]) for line in text.splitlines() if line.startswith("offset=")]
    assert offsets == [start * 512 for _, _, start, _ in layout(w, HP97560_SECTORS)]
    assert "runtime=7" in text and "thinktime=1000" in text and "norandommap=1" in text


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is installed by make deps")
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_fio_accepts_every_job(tmp_path, name):
    job = tmp_path / f"{name}.fio"
    job.write_text(fio_job(WORKLOADS[name], HP97560_SECTORS, 5, device=str(tmp_path / "disk")))
    r = subprocess.run(["fio", "--parse-only", str(job)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_measurement_workloads_are_fio_only():
    text = fio_job(WORKLOADS["zlaio8"], HP97560_SECTORS, 5)
    assert "ioengine=libaio" in text and "iodepth=8" in text
    with pytest.raises(ValueError, match="no simulator counterpart"):
        sim_workload(WORKLOADS["zlaio8"])


def test_measured_think_is_added_per_think_time():
    w = sim_workload(WORKLOADS["randseq"], {0.0: 0.3, 1.0: 0.5})
    rand, seq = w["group"]
    assert rand["think"] == {"dist": "constant", "ms": 0.3}
    assert seq["think"] == {"dist": "constant", "ms": 1.5}


def test_new_workloads_map_to_the_simulators_groups():
    aio = sim_workload(WORKLOADS["aiowrite"], {0.0: 0.4})["group"][0]
    assert (aio["sync"], aio["max_outstanding"], aio["rq_sync"]) == (False, 8, True)
    assert "think" not in aio, "fio refills a libaio queue at once"
    buf = sim_workload(WORKLOADS["bufwrite"], {0.0: 0.4})["group"][0]
    assert buf["direct"] is False and "think" not in buf
    rt = sim_workload(WORKLOADS["rtbe"])["group"][1]
    assert rt["ioprio"] == "rt/0"
    fs = sim_workload(WORKLOADS["fsync"], {0.0: 0.4})["group"][1]
    assert fs["fsync"] is True and fs["think"] == {"dist": "constant", "ms": 0.4}
    coop = sim_workload(WORKLOADS["coop"])
    assert coop["placement"] == "shared" and coop["group"][0]["start_interval_ms"] == 250.0


def test_fio_jobs_of_the_new_workloads():
    text = fio_job(WORKLOADS["coop"], HP97560_SECTORS, 20)
    assert text.count("offset=0\n") == 4
    assert "startdelay=750ms" in text and "runtime=19250ms" in text, "all end at 20 s"
    text = fio_job(WORKLOADS["rtbe"], HP97560_SECTORS, 20)
    assert "prioclass=1\nprio=0" in text
    assert "direct=0" in fio_job(WORKLOADS["bufwrite"], HP97560_SECTORS, 20)
    assert "fsync=1" in fio_job(WORKLOADS["fsync"], HP97560_SECTORS, 20)


def test_measured_think_as_a_distribution_becomes_samples():
    # randseq: 2 random readers with no think, 2 sequential readers thinking 1 ms
    w = sim_workload(WORKLOADS["randseq"], {0.0: [-0.2, 0.1, 0.5], 1.0: [-0.3, 0.0, 2.0]})
    rand, seq = w["group"]
    # each value on top of the group's own think time, none below zero
    assert rand["think"] == {"dist": "samples", "ms": [0.0, 0.1, 0.5]}
    assert seq["think"] == {"dist": "samples", "ms": [0.7, 1.0, 3.0]}
