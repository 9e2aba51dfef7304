"""Hostile inputs for `iolab recommend` (issue 27): options that must be refused
naming the option (a NaN came back as "expected value at line 1 column 615"),
a device name that would inject a command into the printed sysfs lines, and a
large trace that `--max-records` must not read to its end; and Ctrl-C while a
large trace is read ends cleanly.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .harness import BAD_SIGNS, ROOT, TALLY, check_clean, run_cli

SAMPLE = str(ROOT / "data" / "traces" / "sample.blkparse.txt")
QUICK = ["--seeds", "2", "--schedulers", "none,bfq", "-q"]

# (id, args, substrings of the error)
CASES = [
    ("device-name-newline", ["--device-name", "sda\necho pwned > /etc/motd"], ["--device-name", "not a block device name"]),
    ("device-name-semicolon", ["--device-name", "sda;reboot"], ["--device-name 'sda;reboot'"]),
    ("device-name-space", ["--device-name", "sd a"], ["--device-name 'sd a'"]),
    ("device-name-slash", ["--device-name", "../../etc"], ["--device-name '../../etc'"]),
    ("device-name-dollar", ["--device-name", "$(id)"], ["--device-name '$(id)'"]),
    ("device-name-backtick", ["--device-name", "`id`"], ["--device-name '`id`'"]),
    ("device-name-empty", ["--device-name", ""], ["--device-name ''"]),
    ("device-name-long", ["--device-name", "a" * 33], ["at most 32"]),
    ("speed-nan", ["--speed", "nan"], ["--speed", "finite number above 0"]),
    ("speed-inf", ["--speed", "inf"], ["--speed"]),
    ("speed-0", ["--speed", "0"], ["--speed"]),
    ("speed-negative", ["--speed", "-1"], ["--speed"]),
    ("jitter-nan", ["--jitter-ms", "nan"], ["--jitter-ms nan"]),
    ("margin-nan", ["--margin", "nan"], ["--margin nan"]),
    ("tunable-nan", ["--tunables", "bfq.slice_idle=nan"], ["--tunables 'bfq.slice_idle=nan'", "not a finite number"]),
    ("tunable-inf", ["--tunables", "bfq.slice_idle=0,inf"], ["'inf' is not a finite number"]),
    ("max-records-0", ["--max-records", "0"], ["--max-records"]),
    ("seeds-0", ["--seeds", "0"], ["--seeds"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_recommend_refuses_naming_the_option(tmp_path, case):
    name, args, needles = case
    TALLY["recommend options"] += 1
    proc = run_cli(["recommend", SAMPLE, *QUICK, *args], cwd=tmp_path, timeout=120)
    check_clean(proc, name)
    assert proc.returncode == 2, f"{name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    for n in needles:
        assert n in proc.stderr, f"{name}: {n!r} not in {proc.stderr!r}"


def test_real_device_names_are_accepted_and_printed(tmp_path):
    from iolab.recommend import check_device_name

    for dev in ["sda", "nvme0n1", "dm-0", "mmcblk0p1", "cciss!c0d0", "loop7", "md127", "sr0"]:
        assert check_device_name(dev) == dev
    TALLY["recommend options"] += 1
    proc = run_cli(["recommend", SAMPLE, *QUICK, "--device-name", "nvme0n1"], cwd=tmp_path, timeout=300)
    check_clean(proc, "nvme0n1")
    assert proc.returncode == 0, proc.stderr
    if "To apply it:" in proc.stdout:
        assert "/sys/block/nvme0n1/queue/scheduler" in proc.stdout


def _trace_with_a_bad_tail(path: Path, good: int) -> None:
    """`good` requests, then a line no blkparse reader accepts."""
    lines = [f"  8,0    0 {i + 1:8d} {0.001 * (i + 1):14.9f}  {1000 + i % 4}  Q   R {8 * i} + 8 [p]"
             for i in range(good)]
    # A sector that runs past 2^64: every reader refuses it.
    bad = f"  8,0    0 {good + 1:8d} {0.001 * (good + 1):14.9f}  1000  Q   R 18446744073709551615 + 8 [p]"
    path.write_text("\n".join(lines) + "\n" + bad + "\n")


def test_max_records_reads_no_further_than_it_needs(tmp_path):
    trace = tmp_path / "t.blkparse"
    _trace_with_a_bad_tail(trace, 50)
    TALLY["recommend options"] += 1
    proc = run_cli(["recommend", str(trace), *QUICK, "--max-records", "50"], cwd=tmp_path, timeout=300)
    check_clean(proc, "max-records")
    assert proc.returncode == 0, proc.stderr
    proc = run_cli(["recommend", str(trace), *QUICK], cwd=tmp_path, timeout=300)
    check_clean(proc, "whole trace")
    assert proc.returncode == 2 and ":51:" in proc.stderr, proc.stderr


def test_ctrl_c_while_a_large_trace_is_read(tmp_path):
    """Ctrl-C during the read of a trace of 2 million requests (about 130 MB):
    exit 130 with one line, nothing left running."""
    trace = tmp_path / "big.blkparse"
    with open(trace, "w") as f:
        for block in range(20):
            f.write("".join(f"  8,0    0 {i + 1:8d} {0.0005 * (block * 100_000 + i + 1):14.9f}  {1000 + i % 16}  "
                            f"Q   R {(i * 7919) % 10_000_000 * 8} + 8 [p]\n" for i in range(100_000)))
    TALLY["recommend options"] += 1
    p = subprocess.Popen([sys.executable, "-m", "iolab", "recommend", str(trace), *QUICK], cwd=tmp_path,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=60)  # a hang detector
    except subprocess.TimeoutExpired:
        os.kill(p.pid, signal.SIGKILL)
        raise AssertionError("still running 60 s after Ctrl-C") from None
    assert not any(s in out + err for s in BAD_SIGNS + ("FATAL",)), err
    assert p.returncode in (130, 0), f"exit {p.returncode}: {err}"
    if p.returncode == 130:
        assert err.strip().splitlines()[-1] in ("iolab: interrupted",
                                                "iolab: interrupted; no recommendation from an incomplete grid")
