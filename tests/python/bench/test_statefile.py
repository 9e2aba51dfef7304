"""The restore path: after a simulated crash (SIGKILL), after SIGTERM, and its refusals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iolab.bench import sandbox, statefile, sysfs

DEADLINE = 180  # seconds to wait for the bench to reach its measurements (a failure bound, not a timing check)


def start_bench(*args: str, env_state: Path) -> subprocess.Popen:
    env = {**os.environ, "IOLAB_STATE_DIR": str(env_state)}
    return subprocess.Popen(
        [sys.executable, "-m", "iolab", "bench", "--no-progress", *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own process group: the "crash" kills fio too
    )


def logged_runs(log: Path) -> list[int]:
    """The run numbers in runs.jsonl: its lines after the first (the setup),
    whole ones only (a line may be half written)."""
    out = []
    for line in log.read_text().splitlines()[1:]:
        try:
            out.append(json.loads(line)["run"])
        except (ValueError, KeyError):
            pass
    return out


def wait_for_runs(proc: subprocess.Popen, state_dir: Path, outdir: Path, runs: int = 1) -> dict:
    """Waits until the state file records the device and ``runs`` runs are logged; returns the state."""
    log = outdir / "runs.jsonl"
    start = time.monotonic()
    while time.monotonic() - start < DEADLINE:
        assert proc.poll() is None, proc.communicate()
        files = statefile.pending(state_dir)
        if files and log.exists() and len(logged_runs(log)) >= runs:
            data = json.loads(files[0].read_text())
            if data.get("queue"):
                return data
        time.sleep(0.1)
    raise AssertionError("the bench did not start measuring")


def kill_group(proc: subprocess.Popen, sig: int) -> None:
    os.killpg(proc.pid, sig)
    proc.communicate(timeout=120)


def _fio_in_group(pgid: int) -> bool:
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # the process ended while we looked
        comm = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        if comm == "fio" and fields[0] not in "ZX" and int(fields[2]) == pgid:
            return True
    return False


def crash_while_fio_measures(proc: subprocess.Popen) -> None:
    """SIGKILLs the bench's process group at a moment when fio is measuring.

    A crash can land anywhere, but a test that asserts what the crash left
    must choose where: between two runs the bench switches the scheduler, and
    the kernel then resets ``nr_requests`` to its default (2 x min(queue depth,
    BLKDEV_DEFAULT_RQ) = 256 on a loop device, block/blk-mq-sched.c
    blk_mq_init_sched) until the bench writes the configured value again. A
    kill in that window left 256 where the test expected 64. So the group is
    stopped, and killed only if a fio is running (the configuration is then
    fully applied, as fio starts after it); otherwise it goes on and we try
    again.
    """
    start = time.monotonic()
    while time.monotonic() - start < DEADLINE:
        os.killpg(proc.pid, signal.SIGSTOP)
        if _fio_in_group(proc.pid):
            kill_group(proc, signal.SIGKILL)
            return
        os.killpg(proc.pid, signal.SIGCONT)
        time.sleep(0.05)
    raise AssertionError("no fio run to crash in")


def restore_cli(state_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "IOLAB_STATE_DIR": str(state_dir)}
    return subprocess.run([sys.executable, "-m", "iolab", "bench", "--restore"],
                          env=env, capture_output=True, text=True)


def make_non_default(dev: sysfs.BlockDevice) -> sysfs.QueueState:
    sysfs.set_scheduler(dev, "kyber")
    sysfs.set_tunable(dev, "read_lat_nsec", "3000000")
    sysfs.set_queue_attr(dev, "nr_requests", "32")
    sysfs.set_queue_attr(dev, "read_ahead_kb", "256")
    return sysfs.snapshot(dev)


def test_restore_after_a_crash_puts_every_setting_back(loops, tmp_path, private_state_dir):
    dev = sysfs.resolve(loops.make())
    original = make_non_default(dev)
    out = tmp_path / "out"
    proc = start_bench("--device", dev.path, "--workload", "hdparm-direct", "--reps", "50",
                       "--runtime", "0.5", "--ramp", "0", "--schedulers", "bfq,mq-deadline",
                       "--tunables", "bfq.slice_idle=0", "queue.nr_requests=64", "-o", str(out),
                       env_state=private_state_dir)
    state = wait_for_runs(proc, private_state_dir, out)
    assert sysfs.QueueState.from_json(state["queue"]) == original
    crash_while_fio_measures(proc)
    assert sysfs.read_attr(dev, "nr_requests") == "64"  # the crash left the bench's settings
    assert len(statefile.pending(private_state_dir)) == 1

    done = restore_cli(private_state_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"restored {dev.path}" in done.stdout
    assert sysfs.snapshot(dev) == original
    assert statefile.pending(private_state_dir) == []
    again = restore_cli(private_state_dir)
    assert again.returncode == 0 and "nothing to restore" in again.stdout


@pytest.mark.parametrize("how", ["SIGTERM to iolab", "Ctrl-C to the process group"])
def test_a_stopped_bench_restores_and_keeps_the_runs(how, loops, tmp_path, private_state_dir):
    dev = sysfs.resolve(loops.make())
    original = make_non_default(dev)
    out = tmp_path / "out"
    proc = start_bench("--device", dev.path, "--workload", "hdparm-direct", "--reps", "50",
                       "--runtime", "0.5", "--ramp", "0", "--schedulers", "none,bfq", "-o", str(out),
                       env_state=private_state_dir)
    wait_for_runs(proc, private_state_dir, out, runs=2)
    if how.startswith("SIGTERM"):
        os.kill(proc.pid, signal.SIGTERM)  # the bench alone; it stops fio itself
    else:
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends: iolab and fio
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == (143 if how.startswith("SIGTERM") else 130), stderr  # 128 + the signal
    assert ("interrupted by SIGTERM" if how.startswith("SIGTERM") else "interrupted") in stderr
    assert sysfs.snapshot(dev) == original
    assert statefile.pending(private_state_dir) == []
    doc = json.loads((out / "runs.json").read_text())
    assert doc["interrupted"]
    # Every finished run is in both: the log and runs.json (the report's data).
    assert len(doc["runs"]) >= 2
    assert [r["run"] for r in doc["runs"]] == logged_runs(out / "runs.jsonl")


def test_restore_after_a_crash_removes_the_sandbox(tmp_path, private_state_dir):
    out = tmp_path / "out"
    proc = start_bench("--loop", "32M", "--workload", "hdparm-direct", "--reps", "50", "--runtime", "0.5",
                       "--ramp", "0", "--schedulers", "none,kyber", "-o", str(out),
                       env_state=private_state_dir)
    device = None
    try:
        state = wait_for_runs(proc, private_state_dir, out)
        device, backing = state["loop"]["device"], Path(state["loop"]["backing_file"])
        kill_group(proc, signal.SIGKILL)
        assert sandbox.loop_backing_file(device) == str(backing)
        done = restore_cli(private_state_dir)
        assert done.returncode == 0, done.stdout + done.stderr
        assert sandbox.loop_backing_file(device) is None
        assert not backing.exists()
        assert statefile.pending(private_state_dir) == []
    finally:
        if proc.poll() is None:
            kill_group(proc, signal.SIGKILL)
        if device:
            # Only if it is still ours: after the restore, /dev/loopN may be another test's device.
            sandbox.detach(device, backing)


def test_restore_leaves_a_device_that_changed_hands(loops, private_state_dir):
    dev = sysfs.resolve(loops.make())
    journal = statefile.Journal.begin(private_state_dir)
    journal.record(device=dev.to_json(), identity={"devno": dev.devno, "backing_file": "/somewhere/else.img"},
                   queue=sysfs.QueueState("bfq", {}, {}).to_json(), pid=2**22 + 1)
    before = sysfs.snapshot(dev)
    done, problems = statefile.restore_pending(private_state_dir)
    assert problems and "no longer the device" in problems[0]
    assert sysfs.snapshot(dev) == before
    assert statefile.pending(private_state_dir)  # kept, for a look by a human


def test_a_running_session_is_not_restored_under_its_feet(private_state_dir):
    journal = statefile.Journal.begin(private_state_dir)  # this process: alive
    done, problems = statefile.restore_pending(private_state_dir)
    assert done == [] and "still running" in problems[0]
    journal.finish()
    assert statefile.pending(private_state_dir) == []


def test_a_device_held_by_another_session_is_refused(loops, tmp_path, private_state_dir):
    dev = sysfs.resolve(loops.make())
    other = private_state_dir / "bench-1.json"
    private_state_dir.mkdir(parents=True, exist_ok=True)
    other.write_text(json.dumps({"version": statefile.VERSION, "pid": 1, "device": dev.to_json()}))
    proc = subprocess.run([sys.executable, "-m", "iolab", "bench", "--device", dev.path, "--no-progress",
                           "-o", str(tmp_path / "out")],
                          env={**os.environ, "IOLAB_STATE_DIR": str(private_state_dir)},
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "held by another bench session" in proc.stderr


@pytest.mark.parametrize("content", ["{", json.dumps({"version": 99})])
def test_unreadable_state_file_is_a_clear_error(private_state_dir, content):
    private_state_dir.mkdir(parents=True)
    (private_state_dir / "bench-7.json").write_text(content)
    proc = restore_cli(private_state_dir)
    assert proc.returncode == 2 and "state file" in proc.stderr
