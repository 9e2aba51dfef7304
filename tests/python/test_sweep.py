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
