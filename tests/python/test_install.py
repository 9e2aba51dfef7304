"""A normal install runs every command: the wheel `pip install .` builds,
installed into a fresh venv, run from outside the source tree.

The wheel is built as pip builds it (PEP 517 through maturin, the `wheel`
cargo profile of pyproject.toml), installed with its dependencies into a new
venv, and each command is run from a directory outside the checkout, so any
file looked up relative to the source tree instead of the package would be
missing. Needs root (for `iolab bench --loop`), fio, qemu-io: CI runs it
(`make test`, as root, after `make deps`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Installed:
    def __init__(self, venv: Path, home: Path):
        self.venv = venv
        self.home = home  # the working directory: outside the source tree
        bin_dir = str(venv / "bin")
        path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if ".venv" not in p]
        self.env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
        self.env.update(PATH=os.pathsep.join([bin_dir, *path]), COLUMNS="120")

    def run(self, *args: str, timeout: float = 600, check: bool = True, env: dict | None = None,
            **kw) -> subprocess.CompletedProcess:
        proc = subprocess.run([str(self.venv / "bin" / "iolab"), *args], cwd=self.home, env=env or self.env,
                              capture_output=True, text=True, timeout=timeout, **kw)
        if check:
            assert proc.returncode == 0, f"iolab {' '.join(args)}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    base = tmp_path_factory.mktemp("install")
    wheels = base / "wheels"
    # As `pip install .` builds it: PEP 517, maturin, the wheel profile (in-tree: target/wheel).
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(wheels), str(ROOT)], capture_output=True, text=True, timeout=3600)
    assert build.returncode == 0, build.stdout + build.stderr
    wheel = next(wheels.glob("iolab-*.whl"))
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], capture_output=True,
                         text=True, timeout=1800)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    home = base / "home"
    home.mkdir()
    return Installed(venv, home)


def test_the_package_and_its_data_come_from_the_venv(installed):
    probe = ("import iolab, iolab._iolab, iolab.bench.workloads as w; "
             "print(iolab.__file__); print(w.JOBS_DIR); print(sorted(p.name for p in w.JOBS_DIR.glob('*.fio')))")
    out = subprocess.run([str(installed.venv / "bin" / "python"), "-c", probe], cwd=installed.home,
                         env=installed.env, capture_output=True, text=True, check=True).stdout.splitlines()
    site = str(installed.venv / "lib")
    assert out[0].startswith(site) and out[1].startswith(site), out
    from iolab.bench.workloads import WORKLOADS
    assert eval(out[2]) == sorted(w.job for w in WORKLOADS)
    assert installed.run("--version").stdout.startswith("iolab ")


def test_simulator_commands_run_from_the_wheel(installed):
    home = installed.home
    spec = home / "spec.toml"
    spec.write_text((ROOT / "examples" / "iozone-seq.toml").read_text())
    installed.run("run", str(spec), "--set", "workload.processes=2", "--set", "run.repetitions=2", "-q",
                  "-o", "run-out")
    for name in ("report.md", "report.html", "results.json"):
        assert (home / "run-out" / name).stat().st_size > 0
    installed.run("compare", "--disk", "hp97560", "--workload", "iozone", "--schedulers", "noop,deadline",
                  "--set", "workload.processes=2", "--seeds", "2", "-q", "-o", "compare-out")
    assert (home / "compare-out" / "report.html").exists()
    assert "hp97560" in installed.run("presets").stdout
    installed.run("sweep", str(spec), "--grid", "workload.processes=1,2", "--set", "run.repetitions=1", "-q",
                  "-o", "sweep-out")
    data = ROOT / "data" / "disksim"
    out = installed.run("validate", "--diskspecs", str(data / "hp_c2247a.parv"),
                        "--trace", str(data / "hp_c2247a.trace")).stdout
    assert "demerit" in out


def test_paper_reproduction_runs_from_the_wheel(installed):
    installed.run("paper", "wpcas", "--quick", "-q", "-o", "paper-out", timeout=1200)
    assert (installed.home / "paper-out" / "report.html").exists()


def test_bench_runs_from_the_wheel_on_a_loop_sandbox(installed):
    assert os.geteuid() == 0, "iolab bench needs root (CI runs as root)"
    state = installed.home / "state"
    out = "bench-out"
    proc = installed.run("bench", "--loop", "64M", "--reps", "2", "--runtime", "0.3", "--ramp", "0",
                         "--schedulers", "none,mq-deadline", "--no-progress", "-o", out,
                         env={**installed.env, "IOLAB_STATE_DIR": str(state)})
    assert "report:" in proc.stdout
    doc = json.loads((installed.home / out / "runs.json").read_text())
    assert len(doc["runs"]) == 4 and doc["meta"]["job_file"].startswith(str(installed.venv))
    assert "iozone" in installed.run("bench", "--list-workloads").stdout


def test_queue_and_emu_run_from_the_wheel(installed):
    home = installed.home
    out = installed.run("queue", "bench", "--quick", "--peers", "fastqueue",
                        "--dir", str(home / "q")).stdout
    assert "fastqueue" in out.lower()
    sock, log, image = home / "nbd.sock", home / "emu.csv", home / "disk.img"
    server = subprocess.Popen([str(installed.venv / "bin" / "iolab"), "emu", "--disk", "fixed", "--fixed-ms", "0.2",
                               "--image", str(image), "--socket", str(sock), "--log", str(log)],
                              cwd=home, env=installed.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not sock.exists():
            assert server.poll() is None and time.monotonic() < deadline, server.communicate()
            time.sleep(0.05)
        qemu = subprocess.run([shutil.which("qemu-io"), "-f", "raw", f"nbd+unix:///?socket={sock}",
                               "-c", "write -P 7 0 64k", "-c", "read -P 7 0 64k"],
                              capture_output=True, text=True, timeout=120)
        assert qemu.returncode == 0 and "Pattern verification failed" not in qemu.stdout, qemu.stdout + qemu.stderr
        # the emulated disk as iolab characterize's NBD client sees it: a fixed 0.2 ms device does not rotate
        out = installed.run("characterize", f"nbd+unix:///?socket={sock}", "--quick", "--budget", "1", "-q",
                            "-o", "emu-model").stdout
        assert "not rotating" in out and (home / "emu-model.toml").exists(), out
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=60)
    assert installed.run("emu", "--check", str(log)).returncode == 0


def test_characterize_runs_from_the_wheel_on_a_read_only_loop_device(installed, tmp_path):
    """`iolab characterize` on a block device (a loop device over a file,
    read-only, direct I/O), as a user would run it on /dev/sdX."""
    assert os.geteuid() == 0, "a loop device needs root (CI runs as root)"
    backing = tmp_path / "backing.img"
    with open(backing, "wb") as f:
        f.write(os.urandom(1 << 20) * 64)  # 64 MiB
    before = hashlib.sha256(backing.read_bytes()).hexdigest()
    dev = subprocess.run(["losetup", "--find", "--show", "--read-only", "--direct-io=on", str(backing)],
                         capture_output=True, text=True, check=True).stdout.strip()
    try:
        out = installed.run("characterize", dev, "--quick", "--budget", "1", "-q", "-o", "loop-model").stdout
    finally:
        subprocess.run(["losetup", "--detach", dev], capture_output=True)
    assert "block" in out and "not rotating" in out, out
    model = (installed.home / "loop-model.toml").read_text()
    assert "[disk]" in model, model
    assert hashlib.sha256(backing.read_bytes()).hexdigest() == before, "the device was written"
