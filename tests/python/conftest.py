import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_iolab(*args: str, cwd: Path | None = None, check: bool = False, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the installed `iolab` command (as a user would)."""
    proc = subprocess.run(
        [sys.executable, "-m", "iolab", *args],
        cwd=cwd or ROOT, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "COLUMNS": "200"},
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"iolab {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture
def iolab():
    return run_iolab
