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


@pytest.fixture(scope="session")
def wpcas_quick(tmp_path_factory) -> Path:
    """`iolab paper wpcas --quick`'s output, made once for the tests that read it."""
    out = tmp_path_factory.mktemp("paper") / "pw"
    proc = run_iolab("paper", "wpcas", "--quick", "-q", "-o", str(out), check=True, timeout=1800)
    (out / "stdout.txt").write_text(proc.stdout)
    return out


@pytest.fixture(scope="session")
def fastqueue_quick(tmp_path_factory) -> Path:
    """`iolab paper fastqueue --quick`'s output (it needs Postfix's smtp-source, from `make deps`)."""
    from iolab.mail.tools import which

    if which("smtp-source") is None and not os.environ.get("CI"):
        pytest.skip("smtp-source not installed (make deps)")
    out = tmp_path_factory.mktemp("paper") / "pf"
    proc = run_iolab("paper", "fastqueue", "--quick", "-q", "-o", str(out), check=True, timeout=600)
    (out / "stdout.txt").write_text(proc.stdout)
    return out
