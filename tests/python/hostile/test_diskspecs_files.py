"""DiskSim parameter files pathological in size and depth (issue 27), read by
`iolab validate --diskspecs` and `iolab emu --diskspecs`: each refused with one
line naming the file (and the line where one is meant), never a crash, an
abort, a hang or a stack overflow (a file nested 100,000 deep was a SIGSEGV).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .harness import ROOT, TALLY, check_clean, run_cli

DATA = ROOT / "data" / "disksim"


def _deep(open_: str, close: str, n: int) -> str:
    return open_ * n + close * n


def _write(tmp: Path, name: str, text: str | bytes) -> Path:
    p = tmp / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    return p


# (id, how to make the file in tmp, substrings of the error)
CASES = [
    ("lists-100000-deep", lambda t: _write(t, "d.parv", f"disksim_global G {{ A = {_deep('[', ']', 100_000)} }}"),
     ["d.parv:1: lists, blocks or topology nodes nested more than 64 deep"]),
    ("blocks-100000-deep", lambda t: _write(t, "d.parv", f"b X {{ A = {_deep('c Y { B = ', '}', 100_000)} }}"),
     ["nested more than 64 deep"]),
    ("topology-100000-deep", lambda t: _write(t, "d.parv", f"topology a b [ {_deep('c d [ ', ']', 100_000)} ]"),
     ["nested more than 64 deep"]),
    ("includes-itself", lambda t: _write(t, "d.parv", "source d.parv\n"), ["d.parv"]),
    ("includes-17-deep", lambda t: [_write(t, f"i{k}.parv", f"source i{k + 1}.parv\n") for k in range(17)][0]
     and t / "i0.parv", ["i"]),
    ("includes-a-fifo", lambda t: (os.mkfifo(t / "f"), _write(t, "d.parv", "source f\n"))[1], ["not a regular file"]),
    ("is-a-fifo", lambda t: (os.mkfifo(t / "d.parv"), t / "d.parv")[1], ["not a regular file"]),
    ("is-dev-zero", lambda t: Path("/dev/zero"), ["/dev/zero: is not a regular file"]),
    ("is-missing", lambda t: t / "nosuch.parv", ["nosuch.parv"]),
    ("is-a-directory", lambda t: t, ["a directory"]),
    ("sparse-1-TiB", lambda t: (_write(t, "d.parv", b""), os.truncate(t / "d.parv", 1 << 40))[0],
     ["bytes; files of at most"]),
    ("65-MiB", lambda t: _write(t, "d.parv", b"#" * (65 << 20)), ["bytes; files of at most"]),
    ("not-utf8", lambda t: _write(t, "d.parv", b"disksim_global G { A = \xff }"), ["not UTF-8"]),
    ("empty", lambda t: _write(t, "d.parv", b""), ["d.parv"]),
    ("unclosed-everything", lambda t: _write(t, "d.parv", "b X { A = [ c Y { B = [ [ ["), ["d.parv"]),
    ("a-million-params", lambda t: _write(t, "d.parv", "b X { " + ", ".join(f"K{i} = {i}" for i in range(1_000_000))
                                          + " }"), ["d.parv"]),
    ("numbers-out-of-range", lambda t: _write(
        t, "d.parv", (DATA / "hp_c2247a.parv").read_text().replace("= 0.", "= 1e999", 1)), ["d.parv"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("command", ["validate", "emu"])
def test_diskspecs_file(tmp_path, case, command):
    name, make, needles = case
    path = make(tmp_path)
    TALLY[f"DiskSim parameter files ({command})"] += 1
    if command == "validate":
        args = ["validate", "--diskspecs", str(path), "--trace", str(DATA / "hp_c2247a.trace")]
    else:
        args = ["emu", "--diskspecs", str(path), "--image", str(tmp_path / "disk.img"),
                "--socket", str(tmp_path / "nbd.sock")]
    proc = run_cli(args, cwd=tmp_path, timeout=120)
    check_clean(proc, name)
    assert proc.returncode == 2, f"{name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    for n in needles:
        assert n in proc.stderr, f"{name}: {n!r} not in {proc.stderr!r}"
    assert not (tmp_path / "nbd.sock").exists()
