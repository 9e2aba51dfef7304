"""The workload table against its job files, and each job run for real on a small loop device."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from iolab.bench import fio, sandbox, userjob, workloads
from iolab.bench.workloads import JOBS_DIR, WORKLOADS, Target
from iolab.cli.errors import UserError

from .conftest import MiB


def test_job_files_are_numbered_and_each_is_in_the_table():
    files = sorted(p.name for p in JOBS_DIR.glob("*.fio"))
    assert files == sorted(w.job for w in WORKLOADS)
    numbers = [f[:4] for f in files]
    assert all(re.fullmatch(r"\d{4}", n) for n in numbers) and len(set(numbers)) == len(numbers)


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.name)
def test_table_agrees_with_the_job_file(w):
    env = w.env(w.variants()[0], Target("/dev/x", 64 * MiB, "/mnt/x"), 1.0, 0.5)
    text = userjob.read(str(w.jobfile))
    # The checks a user's --fio file gets, with the job's parameters among the variables it may read.
    sections, needs_fs = userjob.check_text(str(w.jobfile), text, variables=tuple(env))
    assert needs_fs == w.needs_fs and len(sections) >= w.sections
    assert userjob.writes(shutil.which("fio"), str(w.jobfile), text, env) == w.writes
    for name in re.findall(r"\$\{(IOLAB_[A-Z]+)\}", text):
        assert name in env, f"{w.job} reads {name}, which iolab does not set"
    proc = subprocess.run([shutil.which("fio"), "--parse-only", str(w.jobfile)],
                          env={**env, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_variants_are_the_product_of_multi_valued_parameters():
    iozone = workloads.get("iozone")
    assert len(iozone.variants()) == 10
    v = iozone.variants({"reclen": "32k,1m"})
    assert [x.label for x in v] == ["reclen=32k", "reclen=1m"]
    env = iozone.env(v[1], Target("/dev/x", 100 * MiB + 5), 2.0, 0.5)
    assert env["IOLAB_SIZE"] == str(100 * MiB) and env["IOLAB_RUNTIME"] == "2000ms"
    assert env["IOLAB_BACK"] == str(-2 * MiB) and env["IOLAB_STRIDE"] == str(16 * MiB)
    readers = workloads.get("sync-readers")
    assert readers.env(readers.variants({"readers": "3"})[0], Target("/dev/x", 64 * MiB), 1, 0)["IOLAB_REGION"] == str(21 * MiB)
    with pytest.raises(UserError, match="no parameter 'depth'"):
        iozone.variants({"depth": "4"})
    with pytest.raises(UserError, match="unknown workload"):
        workloads.get("dbench")


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.name)
def test_every_workload_measures_what_the_table_says(w, loops, tmp_path):
    device = loops.make(size=64 * MiB)
    sandbox.precondition(shutil.which("fio"), device, 64 * MiB)
    directory = ""
    if w.needs_fs:
        loops.mount_fs(device, tmp_path / "mnt")
        directory = str(tmp_path / "mnt")
    params = {"reclen": "64k", "files": "50"}
    variant = w.variants({k: v for k, v in params.items() if k in w.params})[0]
    env = w.env(variant, Target(device, 64 * MiB, directory), 0.2, 0.0)
    result = fio.run(shutil.which("fio"), w.jobfile, env, tmp_path / "out.json", timeout=120)
    keys = fio.metrics(result)
    for key in list(w.measures) + list(w.primary):
        assert keys.get(key, 0) > 0, f"{w.name} did not measure {key}"
    if w.needs_fs:
        assert sorted(p.name for p in (tmp_path / "mnt").iterdir()) == ["lost+found"]  # unlink=1


def test_expand_finds_measures_among_keys():
    keys = ["a.read.bw", "b.write.bw", "all.read.bw", "a.read.lat_p99"]
    assert workloads.expand(("*.bw",), keys) == ["a.read.bw", "b.write.bw"]
    assert workloads.expand(("a.read.lat_p99", "zzz"), keys) == ["a.read.lat_p99"]
