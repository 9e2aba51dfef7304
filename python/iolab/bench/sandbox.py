"""The loop sandbox (``--loop SIZE``) and the scratch file system.

A sandbox is a file-backed loop device with direct I/O (``losetup
--direct-io=on``): requests leave the loop device's queue, where the
scheduler under test runs, and reach the backing file without passing
through the page cache. iolab creates it, preconditions it by writing it
once (a freshly allocated file reads as zeros without touching the disk,
which made reads look six times faster in BENCH.md), and removes it.

Workloads that need files (``smallfiles``) get a fresh ext4 made on the
target and mounted in a private directory; :func:`unmount` undoes it.

Every step is recorded in the session's state file before it is taken, so
``iolab bench --restore`` can undo it after a crash; :func:`detach` checks
the loop device still belongs to the backing file iolab made before it
detaches anything.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from iolab.cli.errors import UserError

_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}

# The smallest sandbox: big enough for every built-in workload's regions.
MIN_LOOP_BYTES = 16 * 2**20


def parse_size(text: str) -> int:
    """``512M``, ``1G``, ``1GiB``, ``4096`` (bytes) -> bytes. Units are binary."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgtKMGT]?)(?:i?[bB])?\s*", text)
    if not m:
        raise UserError(f"cannot read size {text!r}: use a number with K, M, G or T (e.g. 1G)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def run(cmd: list[str], what: str) -> str:
    """Runs a system command; its failure becomes a one-line :class:`UserError`."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise UserError(f"{what}: {cmd[0]} is not installed") from None
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise UserError(f"{what} failed: {detail[-1] if detail else f'exit {proc.returncode}'}")
    return proc.stdout


def create_backing_file(path: Path, size: int) -> None:
    """Creates the sandbox's backing file (sparse; :func:`precondition` fills it)."""
    if size < MIN_LOOP_BYTES:
        raise UserError(f"--loop needs at least {MIN_LOOP_BYTES // 2**20}M")
    path.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(path.parent).free
    if free < size + 64 * 2**20:
        raise UserError(
            f"--loop {size // 2**20}M does not fit in {path.parent} "
            f"({free // 2**20}M free); choose a smaller size or another --loop-dir"
        )
    with open(path, "xb") as f:
        f.truncate(size)


def attach(path: Path) -> str:
    """Attaches ``path`` to a free loop device with direct I/O; returns ``/dev/loopN``."""
    out = run(["losetup", "--find", "--show", "--direct-io=on", str(path)], "losetup")
    return out.strip()


def loop_backing_file(device: str) -> str | None:
    """The file behind ``/dev/loopN``, or ``None`` when it is detached."""
    name = os.path.basename(device)
    try:
        return (Path("/sys/block") / name / "loop" / "backing_file").read_text().strip()
    except OSError:
        return None


def detach(device: str, backing: Path) -> bool:
    """Detaches ``device`` if it is still backed by ``backing``; True if it did."""
    current = loop_backing_file(device)
    if current is None or os.path.realpath(current) != os.path.realpath(backing):
        return False
    run(["losetup", "--detach", device], f"detaching {device}")
    return True


def precondition(fio: str, device: str, size: int) -> None:
    """Writes the whole device once, so reads later reach real blocks."""
    run(
        [
            fio, "--name=precondition", f"--filename={device}", "--rw=write", "--bs=1M",
            "--direct=1", "--ioengine=libaio", "--iodepth=8", f"--size={size}",
            "--eta=never", "--output-format=terse",
        ],
        f"preconditioning {device}",
    )


def make_fs(device: str) -> None:
    """A fresh ext4 with every table initialised now, not lazily during the runs."""
    run(
        ["mkfs.ext4", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard", device],
        f"mkfs.ext4 on {device}",
    )


def mount(device: str, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    run(["mount", "-t", "ext4", device, str(directory)], f"mounting {device}")


def mounted_device(directory: Path) -> str | None:
    """The source mounted on ``directory``, if anything is."""
    target = os.path.realpath(directory)
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    found = None
    for line in lines:
        fields = line.split()
        if len(fields) >= 2 and fields[1] == target:
            found = fields[0]
    return found


def unmount(device: str, directory: Path) -> bool:
    """Unmounts ``directory`` if ``device`` is what is mounted there; True if it did."""
    source = mounted_device(directory)
    if source is None or os.path.realpath(source) != os.path.realpath(device):
        return False
    run(["umount", str(directory)], f"unmounting {directory}")
    try:
        directory.rmdir()
    except OSError:
        pass
    return True
