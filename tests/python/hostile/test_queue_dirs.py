"""A FastQueue directory damaged in every way a file system allows (issue 27):
symbolic links, FIFOs, sockets, directories and devices where a file should
be, a file where the directory should be, truncated and sparse-extended
files, permissions. `iolab queue check`, `repair --yes` and `stats` (which
opens the queue) must each answer at once: a result, or one error line
naming the file and what was expected; never a traceback, a panic, an abort
or a hang. What they refuse they leave as it was, `check` never changes a
byte, and no file outside the queue is ever written (a planted link's
target included).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import stat
from pathlib import Path

import pytest

from .harness import BAD_SIGNS, TALLY, run_cli

SEG1, SEG2 = "seg-0000000000000001.fq", "seg-0000000000000002.fq"


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A queue closed cleanly: 200 messages of 1,000 bytes in 64 KiB
    segments (4 segments), 20 of them acknowledged."""
    from iolab.fastqueue import FastQueue

    d = tmp_path_factory.mktemp("queue-template") / "q"
    with FastQueue(d, segment_size=65536, batch_delay=0.0, spare_segments=0) as q:
        for i in range(200):
            q.enqueue(bytes([i % 251]) * 1000)
        q.ack_many([m.id for m in q.dequeue_batch(20)])
    return d


def _replace(path: Path, make) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    make(path)


def _fifo(p: Path) -> None:
    os.mkfifo(p)


def _dir(p: Path) -> None:
    p.mkdir()


def _socket(p: Path) -> None:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(p))
    s.close()


def _sparse(size: int, tail: bytes = b""):
    def damage(p: Path) -> None:
        with open(p, "r+b") as f:
            f.truncate(size)
            if tail:
                f.seek(size - len(tail))
                f.write(tail)
    return damage


def _cut(size: int):
    def damage(p: Path) -> None:
        with open(p, "r+b") as f:
            f.truncate(size)
    return damage


def _flip(offset: int):
    def damage(p: Path) -> None:
        with open(p, "r+b") as f:
            f.seek(offset)
            b = f.read(1)
            f.seek(offset)
            f.write(bytes([b[0] ^ 0xFF]))
    return damage


def _chmod(mode: int):
    def damage(p: Path) -> None:
        p.chmod(mode)
    return damage


# (id, file in the queue, how it is damaged, whether the commands must refuse
# it naming that file)
DAMAGE = [
    ("manifest-fifo", "MANIFEST", lambda p: _replace(p, _fifo), True),
    ("segment-fifo", SEG2, lambda p: _replace(p, _fifo), True),
    ("lock-fifo", "LOCK", lambda p: _replace(p, _fifo), True),
    ("free-fifo", "free-0000000000000009.fq", _fifo, True),
    ("manifest-directory", "MANIFEST", lambda p: _replace(p, _dir), True),
    ("segment-directory", SEG2, lambda p: _replace(p, _dir), True),
    ("lock-directory", "LOCK", lambda p: _replace(p, _dir), True),
    ("segment-socket", SEG2, lambda p: _replace(p, _socket), True),
    ("segment-link-outside", SEG2, "link-outside", True),
    ("manifest-link-outside", "MANIFEST", "link-outside", True),
    ("segment-dangling-link", SEG2, "dangling-link", True),
    ("segment-cut-to-0", SEG2, _cut(0), False),
    ("segment-cut-in-half", SEG2, _cut(32768), False),
    ("newest-segment-cut", "seg-0000000000000004.fq", _cut(8192), False),
    ("segment-sparse-1tib", SEG2, _sparse(1 << 40), False),
    ("segment-sparse-1tib-byte-at-end", SEG2, _sparse(1 << 40, b"!"), False),
    ("manifest-cut-to-0", "MANIFEST", _cut(0), False),
    ("manifest-sparse-1tib", "MANIFEST", _sparse(1 << 40), False),
    ("segment-payload-flip", SEG1, _flip(4096 + 3 * 1064 + 100), False),
    ("segment-header-flip", SEG1, _flip(20), False),
    ("segment-unreadable", SEG2, _chmod(0), False),
    ("directory-unwritable", ".", _chmod(0o500), False),
    ("tmp-directory", "tmp-0000000000000009.fq", _dir, False),
    ("manifest-tmp-fifo", "MANIFEST.tmp", _fifo, False),
    ("quarantine-name-is-a-directory", "quarantine-seg-0000000000000001-7288.bin", _dir, False),
]

COMMANDS = [("check", ["check"]), ("repair", ["repair", "--yes"]), ("stats", ["stats"])]


def _digest(d: Path) -> dict[str, str]:
    """What each regular file holds (by name; links and others by kind)."""
    out = {}
    for p in sorted(d.iterdir()):
        st = os.lstat(p)
        if stat.S_ISREG(st.st_mode) and st.st_size < (64 << 20):
            out[p.name] = hashlib.sha256(p.read_bytes()).hexdigest() if os.access(p, os.R_OK) else "unreadable"
        else:
            out[p.name] = f"mode {stat.S_IFMT(st.st_mode):o} size {st.st_size}"
    return out


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
@pytest.mark.parametrize("case", DAMAGE, ids=[c[0] for c in DAMAGE])
def test_damaged_queue_directory(tmp_path: Path, template: Path, case, command) -> None:
    name, target, damage, refused = case
    cmd, args = command
    TALLY["queue directories damaged (check/repair/stats)"] += 1
    q = tmp_path / "q"
    shutil.copytree(template, q)
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"not the queue's" * 100)
    path = q / target
    if damage == "link-outside":
        # The link's target holds what the file held: followed, it would be
        # read as the queue's and written by it.
        if path.is_file():
            shutil.copyfile(path, outside)
        _replace(path, lambda p: p.symlink_to(outside))
    elif damage == "dangling-link":
        _replace(path, lambda p: p.symlink_to(tmp_path / "nowhere"))
    else:
        damage(path)
    before_outside = outside.read_bytes()
    before = _digest(q)
    try:
        proc = run_cli(["queue", *args, str(q)], cwd=tmp_path, timeout=60, stdin="")
    finally:
        # Give the test's cleanup its permissions back.
        q.chmod(0o755)
        if (q / SEG2).exists() and not (q / SEG2).is_symlink():
            (q / SEG2).chmod(0o644)
    out = proc.stdout + proc.stderr
    assert not any(s in out for s in BAD_SIGNS), f"{name}/{cmd}: crashed:\n{out[-3000:]}"
    assert proc.returncode in (0, 1, 2), f"{name}/{cmd}: exit {proc.returncode}:\n{out[-3000:]}"
    if proc.returncode == 2:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("iolab: error: "), f"{name}/{cmd}: not one line:\n{proc.stderr}"
    if refused:
        assert proc.returncode == 2, f"{name}/{cmd}: accepted:\n{out[-3000:]}"
        assert target in proc.stderr, f"{name}/{cmd}: the error does not name {target}:\n{proc.stderr}"
    # No file outside the queue is written, through a link or otherwise.
    assert outside.read_bytes() == before_outside, f"{name}/{cmd}: wrote outside the queue"
    # check changes nothing; a refusal changes nothing.
    if cmd == "check" or proc.returncode == 2:
        after = _digest(q)
        after.pop("LOCK", None), before.pop("LOCK", None)
        assert after == before, f"{name}/{cmd}: changed the queue:\n{out[-2000:]}"
