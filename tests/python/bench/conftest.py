"""Fixtures for the bench tests: root, fio, and loop devices they own.

These tests run as root in CI (``make test``) and never skip: a missing
prerequisite is a failure. They only touch loop devices they create over
files in their own temporary directory, and detach them afterwards -- also
when the test fails. Each test gets its own state directory, so nothing
here can see or restore a real session's state file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from iolab.bench import sandbox

DATA = Path(__file__).parent / "data"
MiB = 2**20


def _losetup(*args: str) -> str:
    return subprocess.run(["losetup", *args], capture_output=True, text=True, check=True).stdout.strip()


class Loops:
    """Creates loop devices over files in ``tmp_path``; detaches them all at teardown."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.devices: list[tuple[str, Path]] = []
        self.mounts: list[Path] = []

    def make(self, size: int = 64 * MiB, fill: bool = False) -> str:
        backing = self.directory / f"loop{len(self.devices)}.img"
        with open(backing, "wb") as f:
            if fill:
                f.write(b"\xa5" * size)
            else:
                f.truncate(size)
        dev = _losetup("--find", "--show", "--direct-io=on", str(backing))
        self.devices.append((dev, backing))
        return dev

    def mount_fs(self, device: str, mnt: Path) -> None:
        """A fresh ext4 on ``device``, mounted on ``mnt`` (unmounted at teardown)."""
        sandbox.make_fs(device)
        self.mounts.append(mnt)
        sandbox.mount(device, mnt)

    def cleanup(self) -> None:
        for mnt in self.mounts:
            subprocess.run(["umount", str(mnt)], capture_output=True)
        for dev, backing in self.devices:
            # Only while it is still ours: a device a test detached may since be another test's.
            if os.path.realpath(sandbox.loop_backing_file(dev) or "") == os.path.realpath(backing):
                subprocess.run(["losetup", "--detach", dev], capture_output=True)


@pytest.fixture
def loops(tmp_path):
    assert os.geteuid() == 0, "the bench tests need root (CI runs them as root)"
    assert shutil.which("fio"), "fio is missing: run `make deps`"
    assert shutil.which("losetup"), "losetup is missing"
    pool = Loops(tmp_path)
    try:
        yield pool
    finally:
        pool.cleanup()


@pytest.fixture(autouse=True)
def private_state_dir(tmp_path, monkeypatch):
    path = tmp_path / "state"
    monkeypatch.setenv("IOLAB_STATE_DIR", str(path))
    return path


def data(name: str) -> Path:
    return DATA / name
