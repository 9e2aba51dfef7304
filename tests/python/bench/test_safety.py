"""Safety refusals: writes on devices in use or holding data, root, no scheduler choice, foreign targets."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iolab.bench import fio, safety, sandbox, sysfs, workloads
from iolab.cli.errors import UserError

from .conftest import MiB


def write_mbr(device: str) -> None:
    """A one-partition DOS partition table (type 0x83) at the start of ``device``."""
    entry = bytes([0x00, 0, 0, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little") + (8192).to_bytes(4, "little")
    with open(device, "r+b") as f:
        f.seek(446)
        f.write(entry)
        f.seek(510)
        f.write(b"\x55\xaa")
        f.flush()


def digest(device: str) -> str:
    with open(device, "rb") as f:
        return hashlib.sha256(f.read(4 * MiB)).hexdigest()


def iolab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "iolab", "bench", *args], capture_output=True, text=True)


def test_blank_device_may_be_written(loops):
    dev = sysfs.resolve(loops.make())
    occ = safety.check_writes(dev, "oltp", destroy_data=False)
    assert occ.in_use() == [] and occ.holds_data() == []


def test_file_system_is_refused_without_destroy_data(loops):
    device = loops.make()
    sandbox.make_fs(device)
    dev = sysfs.resolve(device)
    with pytest.raises(UserError, match=r"holds ext4 \(filesystem\).*--destroy-data"):
        safety.check_writes(dev, "oltp", destroy_data=False)
    safety.check_writes(dev, "oltp", destroy_data=True)


def test_partition_table_is_refused_without_destroy_data(loops):
    device = loops.make()
    write_mbr(device)
    dev = sysfs.resolve(device)
    with pytest.raises(UserError, match="dos partition table"):
        safety.check_writes(dev, "iozone", destroy_data=False)
    safety.check_writes(dev, "iozone", destroy_data=True)


def test_mounted_device_is_refused_even_with_destroy_data(loops, tmp_path):
    device = loops.make()
    mnt = tmp_path / "mnt"
    loops.mount_fs(device, mnt)
    dev = sysfs.resolve(device)
    with pytest.raises(UserError, match=f"mounted on {mnt}.*even with --destroy-data"):
        safety.check_writes(dev, "copy", destroy_data=True)


def test_cli_refuses_in_one_line_and_leaves_the_device_alone(loops):
    device = loops.make()
    sandbox.make_fs(device)
    before = digest(device)
    dev = sysfs.resolve(device)
    scheduler = sysfs.schedulers(dev)[1]
    proc = iolab("--device", device, "--workload", "oltp", "--reps", "1", "--runtime", "0.2", "--no-progress")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "refusing to run oltp" in proc.stderr and "--destroy-data" in proc.stderr
    assert digest(device) == before and sysfs.schedulers(dev)[1] == scheduler


def test_read_only_workload_runs_on_a_mounted_device(loops, tmp_path):
    device = loops.make()
    mnt = tmp_path / "mnt"
    loops.mount_fs(device, mnt)
    dev = sysfs.resolve(device)
    original = sysfs.snapshot(dev)
    proc = iolab("--device", device, "--workload", "hdparm-direct", "--schedulers", "none,mq-deadline",
                 "--reps", "1", "--runtime", "0.2", "--ramp", "0", "--no-progress", "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert sysfs.snapshot(dev) == original
    assert sandbox.mounted_device(mnt) == device  # still mounted, untouched


def test_root_is_required(monkeypatch):
    monkeypatch.setattr(safety.os, "geteuid", lambda: 1000)
    with pytest.raises(UserError, match="needs root"):
        safety.require_root()


def test_device_without_scheduler_choice_is_refused(loops, monkeypatch):
    dev = sysfs.resolve(loops.make())
    monkeypatch.setattr(sysfs, "schedulers", lambda d: (["none"], "none"))
    with pytest.raises(UserError, match="offers no choice of I/O scheduler"):
        safety.require_scheduler_choice(dev)


def test_a_job_file_may_only_name_the_users_target(tmp_path):
    job = tmp_path / "mine.fio"
    job.write_text("[x]\nfilename=/dev/vda\nrw=randwrite\n")
    with pytest.raises(UserError, match="never touches a device you did not name"):
        workloads.custom(str(job))
    job.write_text("[x]\nrw=read\n")
    with pytest.raises(UserError, match=r"job \[x\] names no target"):
        workloads.custom(str(job))
    job.write_text("[x]\nfilename=${IOLAB_DEV}\n[y]\nrw=read\n")
    with pytest.raises(UserError, match=r"mine.fio:3: job \[y\] names no target"):
        workloads.custom(str(job))
    job.write_text("include other.fio\n[x]\nfilename=${IOLAB_DEV}\n")
    with pytest.raises(UserError, match="include"):
        workloads.custom(str(job))


# fio itself decides whether a job writes (its --parse-only --readonly fails on one that does).
@pytest.mark.parametrize("body, writes", [
    ("rw=randrw ; mixed", True),
    ("rw=randread", False),
    ("readwrite=randwrite", True),      # rw's alias
    ("rw=trim", True),
    ("rw=trimwrite", True),
    ("rw=read\nverify=md5", False),     # verifying reads only reads
    ("rw=read # rw=write", False),      # fio's comment starts at #
    ("rw=write ; rw=read", True),
    ("rw=randread\nrw=write", True),    # the last value counts
])
def test_fio_decides_whether_a_job_writes(tmp_path, body, writes):
    job = tmp_path / "mine.fio"
    job.write_text(f"[global]\nfilename=${{IOLAB_DEV}}\n[x]\n{body}\n")
    assert workloads.custom(str(job)).writes is writes


# The bypasses of issue 12, and their relatives: each refused with the line and the reason.
@pytest.mark.parametrize("body, message", [
    ("rw=${MODE}", r"mine.fio:4: \$\{MODE\}: a job for iolab reads only the variables iolab sets"),
    ("${WHAT}=write", r"\$\{WHAT\}"),
    ("filename=${IOLAB_DEV}${SUFFIX}", r"\$\{SUFFIX\}"),
    ("include\tother.fio", "mine.fio:4: iolab does not run job files that include others"),
    ("  include other.fio", "include others"),
    ("includeXother.fio", "include others"),
    ("exec_prerun=dd if=/dev/zero of=/dev/sda", "exec_prerun: iolab refuses this option in a job .runs a program"),
    ("exec_postrun=true", "runs a program"),
    ("ioengine=external:/tmp/engine.so", "only fio's block I/O engines"),
    ("ioengine=/tmp/engine.so", "only fio's block I/O engines"),
    # fio's exec engine runs any program, and a read-only parse passes it.
    ("ioengine=exec\nprogram=/bin/touch\narguments=/tmp/owned", "ioengine=exec: iolab runs only fio's block I/O"),
    ("ioengine=net\nhostname=example.org", "ioengine=net"),
    ("ioengine=sg", "ioengine=sg"),
    ("ioengine=filedelete", "ioengine=filedelete"),
    ("mem=mmap:/etc/passwd", "mem=mmap:/etc/passwd: a buffer mapped from a file creates that file"),
    ("iomem=mmaphuge:/tmp/x", "iomem=mmaphuge"),
    ("write_bw_log=/etc/cron.d/x", "write_bw_log: iolab refuses this option in a job .writes log files"),
    ("write_lat_log=lat", "write_lat_log"),
    ("cgroup=x", "creates a control group"),
    ("opendir=/", "adds every file under a directory"),
    ("filename_format=/dev/sd$jobnum", "a plain name"),
    ("filename_format=../../$jobnum", "a plain name"),
    ("read_iolog=trace.log", "replays I/O"),
    ("replay_redirect=/dev/sda", "another device"),
    ("ioscheduler=bfq", "switches the scheduler itself"),
    ("allow_mounted_write=1", "mounted device"),
    ("directory=/", "directory=\\$\\{IOLAB_DIR\\}"),
    ("filename=${IOLAB_DEV}:/dev/sda", "never touches a device you did not name"),
    ("x" * 5000, "a line of 5000 characters"),
    ("rw=read\x00", "a NUL byte"),
    ("bogus=1", "fio cannot parse the job: Bad option <bogus=1>"),
    ("rw=sideways", "fio cannot parse the job"),
])
def test_job_files_that_could_escape_the_checks_are_refused(tmp_path, body, message):
    job = tmp_path / "mine.fio"
    job.write_text(f"[global]\nfilename=${{IOLAB_DEV}}\n[x]\n{body}\n")
    with pytest.raises(UserError, match=message):
        workloads.custom(str(job))


def test_a_job_file_that_is_not_text_is_refused(tmp_path):
    job = tmp_path / "mine.fio"
    job.write_bytes(b"[x]\nfilename=${IOLAB_DEV}\nrw=read\xff\n")
    with pytest.raises(UserError, match="mine.fio:3: not UTF-8 text"):
        workloads.custom(str(job))
    with pytest.raises(UserError, match="No such file"):
        workloads.custom(str(tmp_path / "absent.fio"))


def test_fio_readonly_refuses_a_write_the_checks_did_not_foresee(loops, tmp_path):
    """The last guard: a read-only workload runs under fio --readonly, which refuses any write."""
    device = loops.make(size=16 * 2**20, fill=True)
    before = Path(loops.directory / "loop0.img").read_bytes()
    job = "[x]\nfilename=${IOLAB_DEV}\nrw=write\nsize=1M\n"
    with pytest.raises(fio.FioError, match="fio failed on job.fio: fio: job <x> has write or trim bit set, "
                                           "but fio is in read-only mode"):
        fio.run(shutil.which("fio"), tmp_path / "job.fio", {"IOLAB_DEV": device}, tmp_path / "out.json", 60,
                readonly=True, text=job)
    assert Path(loops.directory / "loop0.img").read_bytes() == before
