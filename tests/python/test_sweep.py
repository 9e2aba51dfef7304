"""`iolab sweep`: grids, and the same bytes locally and on Dask."""

import json

import pytest

SPEC = """
[disk]
preset = "fixed"
[[scheduler]]
name = "noop"
[workload]
kind = "iozone"
processes = 2
file_kb = 64
[run]
repetitions = 2
"""


def test_grid_is_a_product_and_dask_matches_local(iolab, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    args = ["sweep", str(spec), "--grid", "disk.fixed_ms=1,2", "--grid", "workload.processes=2,3", "-q"]
    iolab(*args, "-o", str(tmp_path / "local"), check=True)
    iolab(*args, "-o", str(tmp_path / "dask"), "--dask", "local", check=True)
    local = (tmp_path / "local" / "sweep.json").read_bytes()
    assert local == (tmp_path / "dask" / "sweep.json").read_bytes()
    docs = json.loads(local)
    assert sorted(docs) == ["disk.fixed_ms=1, workload.processes=2", "disk.fixed_ms=1, workload.processes=3",
                            "disk.fixed_ms=2, workload.processes=2", "disk.fixed_ms=2, workload.processes=3"]
    # Halving the service time doubles the IOPS.
    iops = {k: d["runs"][0]["iops"] for k, d in docs.items()}
    assert iops["disk.fixed_ms=1, workload.processes=2"] == pytest.approx(1000)
    assert iops["disk.fixed_ms=2, workload.processes=2"] == pytest.approx(500)


def test_bad_grid_and_bad_point(iolab, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    proc = iolab("sweep", str(spec), "--grid", "workload.processes")
    assert proc.returncode == 2 and "KEY=V1,V2" in proc.stderr
    proc = iolab("sweep", str(spec), "--grid", "workload.processes=2,0", "-q", "-o", str(tmp_path / "x"))
    assert proc.returncode == 2 and "workload.processes=0" in proc.stderr and "Traceback" not in proc.stderr


# Points whose runs cannot end within the test on any machine: a run of
# 2×10^9 requests is 100 times the 2×10^7 that CI's machine finished in
# under 2 s, so it lasts minutes and an interrupt always lands in the
# middle of it. The short point (10^3 requests) ends within milliseconds.
# An earlier version guessed from wall time how many 2×10^7-request runs
# were done after 2 s and 12 s, and failed on that faster CI machine.
LONG = """
[disk]
preset = "fixed"
fixed_ms = 2
[[scheduler]]
name = "noop"
[workload]
kind = "processes"
[[workload.group]]
count = 3
pattern = "random"
file_mb = 4
[run]
repetitions = 3
max_requests = 2000000000
"""


def _interrupt_sweep(tmp_path, grid, delay):
    import signal
    import subprocess
    import sys
    import time

    spec = tmp_path / "long.toml"
    spec.write_text(LONG)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "iolab", "sweep", str(spec), "--grid", grid,
                             "-j", "1", "-q", "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    time.sleep(delay)
    assert proc.poll() is None, "the sweep ended before the interrupt: " + proc.communicate()[1]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err and "Incomplete points" in err, err
    return json.loads((out / "sweep.json").read_text()), err


def test_ctrl_c_before_any_run_finished_names_every_point(tmp_path):
    """Issue 12: Ctrl-C before any run finished gave a pandas KeyError."""
    docs, err = _interrupt_sweep(tmp_path, "disk.fixed_ms=1,2", 2.0)
    assert sorted(docs) == ["disk.fixed_ms=1", "disk.fixed_ms=2"]
    assert all(d["interrupted"] and d["runs"] == [] for d in docs.values())
    assert "disk.fixed_ms=1 (0 of 3 runs)" in err and "disk.fixed_ms=2 (0 of 3 runs)" in err


def test_ctrl_c_keeps_finished_points_and_names_the_missing(tmp_path):
    """Issue 12: a Ctrl-C after some runs exited 0 with points silently missing."""
    docs, err = _interrupt_sweep(tmp_path, "run.max_requests=1000,2000000000", 8.0)
    short, long_ = "run.max_requests=1000", "run.max_requests=2000000000"
    assert sorted(docs) == [short, long_]
    assert all(d["interrupted"] for d in docs.values())
    assert len(docs[short]["runs"]) == 3 and docs[long_]["runs"] == []
    assert f"{long_} (0 of 3 runs)" in err and short not in err.split("Incomplete points")[1]
