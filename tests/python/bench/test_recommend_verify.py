"""`iolab recommend --verify loop:SIZE`: the recommendation measured by
`iolab bench` in a loop sandbox (root and fio, as every bench test)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_verify_runs_bench_with_the_recommended_and_the_default(tmp_path, private_state_dir):
    out = tmp_path / "rec"
    env = {**os.environ, "IOLAB_STATE_DIR": str(private_state_dir)}
    # Deterministic replay (no jitter): the fairest configuration on the
    # sample is a single winner, so there is something to verify.
    p = subprocess.run([sys.executable, "-m", "iolab", "recommend", "-q", str(ROOT / "data/traces/sample.blkparse.txt"),
                        "--disk", "modern7200", "--metric", "fairness", "--jitter-ms", "0",
                        "--verify", "loop:64M", "--verify-reps", "1", "--verify-runtime", "0.3", "-o", str(out)],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "verifying on the device: -m iolab bench --loop 64M --config default=mq-deadline" in p.stdout
    with open(out / "verify" / "runs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["config"] for r in rows} == {"default", "recommended"}
    assert all(float(r["seqread.read.bw"]) > 0 for r in rows if "seqread.read.bw" in r)
