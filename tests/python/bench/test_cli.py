"""`iolab bench` end to end on loop devices: a sandbox, a named device, a file system workload."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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


def run_until(args: list[str], state, runs: int, sig: int) -> subprocess.CompletedProcess:
    """Starts `iolab bench ARGS`, sends ``sig`` once ``runs`` runs are logged, waits for it."""
    out = Path(args[args.index("-o") + 1])
    env = {**os.environ, "IOLAB_STATE_DIR": str(state)}
    proc = subprocess.Popen([sys.executable, "-m", "iolab", "bench", "--no-progress", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        log = out / "runs.jsonl"
        if log.exists() and len(log.read_text().splitlines()) >= runs + 1:  # the setup line, then runs
            break
        time.sleep(0.1)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def test_sigterm_exits_143_and_the_report_uses_complete_repetitions_only(tmp_path, private_state_dir):
    out = tmp_path / "out"
    proc = run_until(["--loop", "64M", "--reps", "3", "--runtime", "0.3", "--ramp", "0",
                      "--schedulers", "none,mq-deadline", "-o", str(out)], private_state_dir, 3, signal.SIGTERM)
    assert proc.returncode == 143, proc.stderr
    assert "interrupted by SIGTERM; 3 runs kept" in proc.stderr and "Traceback" not in proc.stderr
    doc = json.loads((out / "runs.json").read_text())
    assert doc["interrupted"] == "SIGTERM" and len(doc["runs"]) == 3
    primary = doc["analysis"]["primary"]["comparison"]["summaries"]
    assert [s["n"] for s in primary] == [1, 1]  # the third run, of the unfinished repetition, is left out
    md = (out / "report.md").read_text()
    assert ("**Interrupted** by SIGTERM after 3 of 6 planned runs; the tables use the 1 complete "
            "repetition only (1 run of the unfinished repetition left out).") in md
    assert attached_to(out) == [] and statefile.pending(private_state_dir) == []


def test_report_is_rebuilt_from_the_log_after_sigkill(tmp_path, private_state_dir):
    out = tmp_path / "out"
    proc = run_until(["--loop", "64M", "--reps", "3", "--runtime", "0.3", "--ramp", "0",
                      "--schedulers", "none,mq-deadline", "-o", str(out)], private_state_dir, 3, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    time.sleep(2)  # fio, orphaned, finishes its run
    assert not (out / "runs.json").exists()
    restore = iolab("--restore", state=private_state_dir)
    assert restore.returncode == 0 and "detached" in restore.stdout, restore.stdout + restore.stderr
    again = iolab("--report", str(out), state=private_state_dir)
    assert again.returncode == 0, again.stderr
    assert "report:" in again.stdout
    doc = json.loads((out / "runs.json").read_text())
    assert doc["interrupted"] == "killed" and len(doc["runs"]) >= 3
    assert doc["meta"]["rebuilt_from_log"] and doc["meta"]["workload"] == "hdparm-direct"
    assert "**Killed** before it finished (this report was rebuilt from runs.jsonl" in (out / "report.md").read_text()
    # fio's own JSON is the source of each run's metrics.
    first = json.loads((out / doc["runs"][0]["fio_json"]).read_text())
    assert doc["runs"][0]["metrics"]["seqread.read.bw"] == first["jobs"][0]["read"]["bw_bytes"]


def test_a_rejected_setup_leaves_no_output_directory(loops, tmp_path, private_state_dir):
    for target in (["--loop", "64M"], ["--device", loops.make()]):
        out = tmp_path / "new" / "out"
        proc = iolab(*target, "--schedulers", "cfq", "-o", str(out), state=private_state_dir)
        assert proc.returncode == 2 and "does not offer scheduler 'cfq'" in proc.stderr, proc.stderr
        assert not (tmp_path / "new").exists()


def test_an_output_directory_holding_a_session_is_refused(tmp_path, private_state_dir):
    out = tmp_path / "out"
    out.mkdir()
    (out / "runs.jsonl").write_text('{"meta": {}}\n')
    proc = iolab("--loop", "64M", "-o", str(out), state=private_state_dir)
    assert proc.returncode == 2 and "already holds a bench session" in proc.stderr
    assert (out / "runs.jsonl").read_text() == '{"meta": {}}\n'


def test_help_shows_the_output_default():
    proc = subprocess.run([sys.executable, "-m", "iolab", "bench", "--help"], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"})
    assert "(default: bench-out)" in proc.stdout


def test_a_job_reading_a_foreign_variable_or_including_a_file_writes_nothing(loops, tmp_path, private_state_dir):
    """Issue 12: rw=${MODE} with MODE=write, and include<TAB>file, each wrote to an unmounted ext4."""
    device = loops.make()
    sandbox.make_fs(device)
    backing = loops.directory / "loop0.img"
    before = hashlib.sha256(backing.read_bytes()).hexdigest()
    (tmp_path / "other.fio").write_text(f"filename={tmp_path / 'victim'}\nrw=write\nsize=4M\n")
    for body, message in (("rw=${MODE}\nsize=8M\nbs=1M\n", "${MODE}: a job for iolab reads only"),
                          (f"rw=read\ninclude\t{tmp_path / 'other.fio'}\n", "include others")):
        job = tmp_path / "job.fio"
        job.write_text(f"[global]\nfilename=${{IOLAB_DEV}}\n[w]\n{body}")
        proc = subprocess.run([sys.executable, "-m", "iolab", "bench", "--no-progress", "--device", device,
                               "--fio", str(job), "--reps", "1", "--runtime", "0.3", "--ramp", "0",
                               "--schedulers", "none", "-o", str(tmp_path / "out")],
                              env={**os.environ, "IOLAB_STATE_DIR": str(private_state_dir), "MODE": "write"},
                              capture_output=True, text=True)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert hashlib.sha256(backing.read_bytes()).hexdigest() == before
    assert not (tmp_path / "victim").exists() and not (tmp_path / "out").exists()


def test_a_read_only_job_runs_under_fio_readonly_and_its_text_is_kept(loops, tmp_path, private_state_dir):
    device = loops.make()
    job = tmp_path / "mine.fio"
    job.write_text("[r]\nfilename=${IOLAB_DEV}\nrw=randread\nbs=4k\nsize=${IOLAB_SIZE}\n"
                   "time_based=1\nruntime=${IOLAB_RUNTIME}\n")
    out = tmp_path / "out"
    proc = iolab("--device", device, "--fio", str(job), "--reps", "1", "--runtime", "0.3", "--ramp", "0",
                 "--schedulers", "none,bfq", "-o", str(out), state=private_state_dir)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "runs.json").read_text())
    assert doc["meta"]["readonly"] is True and doc["meta"]["builtin"] is False
    assert (out / "job.fio").read_text() == job.read_text()
    assert all(r["metrics"]["r.read.bw"] > 0 for r in doc["runs"])


def test_fios_own_reason_is_passed_on(loops, tmp_path, private_state_dir):
    device = loops.make()
    job = tmp_path / "odd.fio"
    job.write_text("[r]\nfilename=${IOLAB_DEV}\nrw=read\nbs=100\ndirect=1\nsize=1M\n")  # not sector-aligned
    proc = iolab("--device", device, "--fio", str(job), "--reps", "1", "--schedulers", "none",
                 "-o", str(tmp_path / "out"), state=private_state_dir)
    assert proc.returncode == 2
    assert "iolab: error: fio failed on odd.fio: fio: io_u error on file" in proc.stderr
    assert "Invalid argument" in proc.stderr
    job.write_text("[r]\nfilename=${IOLAB_DEV}\nrw=read\noffset=1G\nsize=1M\n")  # past the end: no I/O
    proc = iolab("--device", device, "--fio", str(job), "--reps", "1", "--schedulers", "none",
                 "-o", str(tmp_path / "out2"), state=private_state_dir)
    assert proc.returncode == 2
    assert "measured none of the workload's primary metrics (*.bw); fio reported no error" in proc.stderr
    assert (tmp_path / "out2" / "runs.json").exists()  # the runs are kept
