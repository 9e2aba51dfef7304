"""`iolab bench` end to end on loop devices: a sandbox, a named device, a file system workload."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

from iolab.bench import sandbox, statefile, sysfs


def iolab(*args: str, state) -> subprocess.CompletedProcess:
    env = {**os.environ, "IOLAB_STATE_DIR": str(state)}
    return subprocess.run([sys.executable, "-m", "iolab", "bench", "--no-progress", *args],
                          env=env, capture_output=True, text=True)


def read_csv(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def attached_to(directory) -> list[str]:
    out = subprocess.run(["losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE"],
                         capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(directory) in line]


def test_loop_sandbox_end_to_end(tmp_path, private_state_dir):
    out = tmp_path / "out"
    proc = iolab("--loop", "64M", "--reps", "2", "--runtime", "0.5", "--ramp", "0.2",
                 "--schedulers", "none,mq-deadline", "--tunables", "mq-deadline.fifo_batch=8,16",
                 "-o", str(out), state=private_state_dir)
    assert proc.returncode == 0, proc.stderr
    assert "report:" in proc.stdout and "removed" in proc.stderr
    rows = read_csv(out / "runs.csv")
    assert len(rows) == 2 * 3
    assert {r["config"] for r in rows} == {"none", "mq-deadline fifo_batch=8", "mq-deadline fifo_batch=16"}
    for r in rows:
        assert r["set.scheduler"] == r["config"].split()[0]
        assert r["set.nr_requests"] and r["set.rotational"] and r["set.wbt_lat_usec"] and r["kernel"] and r["model"]
        assert float(r["seqread.read.bw"]) > 0
        if "fifo_batch" in r["config"]:
            assert r["config"].endswith("fifo_batch=" + r["set.iosched.fifo_batch"])
    assert sorted({r["rep"] for r in rows}) == ["1", "2"]
    doc = json.loads((out / "runs.json").read_text())
    assert doc["meta"]["preconditioned"] and doc["meta"]["sandbox"]["removed"]
    for name in ("report.md", "report.html", "primary.png", "drift.png"):
        assert (out / name).exists()
    assert attached_to(out) == [] and list(out.glob("*.img")) == []
    assert statefile.pending(private_state_dir) == []


def test_named_device_is_restored_after_a_normal_run(loops, tmp_path, private_state_dir):
    dev = sysfs.resolve(loops.make())
    sysfs.set_scheduler(dev, "bfq")
    sysfs.set_tunable(dev, "low_latency", "0")
    original = sysfs.snapshot(dev)
    proc = iolab("--device", dev.path, "--workload", "sync-readers", "--param", "readers=2",
                 "--config", "none", "--config", "tuned=bfq:slice_idle=0", "--reps", "1",
                 "--runtime", "0.3", "--ramp", "0", "-o", str(tmp_path / "out"), state=private_state_dir)
    assert proc.returncode == 0, proc.stderr
    assert sysfs.snapshot(dev) == original
    rows = read_csv(tmp_path / "out" / "runs.csv")
    tuned = next(r for r in rows if r["config"] == "tuned")
    assert tuned["set.iosched.slice_idle"] == "0" and tuned["set.iosched.low_latency"] == "1"


def test_file_system_workload_on_a_sandbox(tmp_path, private_state_dir):
    out = tmp_path / "out"
    proc = iolab("--loop", "96M", "--workload", "smallfiles", "--param", "files=100", "--reps", "1",
                 "--runtime", "0.3", "--ramp", "0", "--schedulers", "none,bfq", "-o", str(out),
                 state=private_state_dir)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "runs.json").read_text())
    assert len(doc["runs"]) == 2 and "unmounted" in " ".join(doc["restored"])
    mnt = doc["meta"]["file_system"].split(" mounted on ")[1]
    assert sandbox.mounted_device(mnt) is None
    assert attached_to(out) == []


def test_user_errors_are_one_line(tmp_path, private_state_dir):
    for args, message in (
        ((), "name a target"),
        (("--loop", "64M", "--workload", "nope"), "unknown workload"),
        (("--loop", "lots"), "cannot read size"),
        (("--loop", "64M", "--tunables", "bfq"), "cannot read --tunables"),
        (("--device", "/dev/null"), "not a block device"),
    ):
        proc = iolab(*args, "-o", str(tmp_path / "out"), state=private_state_dir)
        assert proc.returncode == 2, (args, proc.stderr)
        assert message in proc.stderr and "Traceback" not in proc.stderr
        assert proc.stderr.count("\n") == 1


def test_list_workloads():
    proc = subprocess.run([sys.executable, "-m", "iolab", "bench", "--list-workloads"],
                          capture_output=True, text=True)
    assert proc.returncode == 0
    for name in ("hdparm-buffered", "iozone", "copy", "sync-readers", "oltp", "smallfiles"):
        assert name in proc.stdout
