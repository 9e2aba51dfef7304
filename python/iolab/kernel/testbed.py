"""Boot the testbed's guest with one job (``testbed/run.sh``) from Python.

The testbed is shell (it installs Debian packages, builds the module against
the image's headers, builds the initramfs and runs QEMU); this module finds
it, builds the module, runs a job and hands back the run directory. It needs
a checkout of the repository: the module's C sources and the guest scripts
are not part of the Python package.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from iolab.cli.errors import UserError


def find_repo(given: str | None = None) -> Path:
    """The repository holding ``kernel/`` and ``testbed/``: ``given``, else
    ``$IOLAB_REPO``, else the checkout this package was installed from, else
    the current directory or one of its parents."""
    # A checkout named by the user is the only one tried: falling back to
    # another would boot (and run apt for) something the user did not name.
    named = given or os.environ.get("IOLAB_REPO")
    if named:
        p = Path(named)
        if (p / "testbed" / "run.sh").is_file() and (p / "kernel" / "Makefile").is_file():
            return p.resolve()
        what = "--repo" if given else "IOLAB_REPO"
        why = "no such directory" if not p.exists() else "not a directory" if not p.is_dir() else \
            "not an iolab checkout (no kernel/Makefile and testbed/run.sh)"
        raise UserError(f"{what} {named}: {why}")
    candidates = [Path(__file__).resolve().parents[3]]
    cwd = Path.cwd().resolve()
    candidates += [cwd, *cwd.parents]
    for c in candidates:
        if (c / "testbed" / "run.sh").is_file() and (c / "kernel" / "Makefile").is_file():
            return c.resolve()
    raise UserError(
        f"no iolab checkout (kernel/ and testbed/) at {cwd}: `iolab kernel` boots a guest with the "
        "repository's module and scripts; run it inside a clone or pass --repo DIR"
    )


def host_load() -> str:
    """The host's load averages (1, 5, 15 min), recorded with every timing
    figure: other work on the host slows the emulated guest."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


# QEMU's -icount: a fixed shift (2**shift ns of guest time per instruction),
# align=on (QEMU sleeps when the guest's clock runs more than 3 ms ahead of
# the host's, accel/tcg/cpu-exec.c VM_CLOCK_ADVANCE), sleep=on (an idle
# guest's clock advances with the host's). One virtual CPU: with two, the
# guest hung at boot under -icount.
ICOUNT_SPEC = "shift={shift},align=on,sleep=on"
# QEMU refuses a shift above 10 (icount_configure: MAX_ICOUNT_SHIFT).
MAX_ICOUNT_SHIFT = 10


def check_icount(shift: int | None) -> None:
    """Refuse an --icount QEMU would refuse, and a bad IOLAB_GUEST_NICE with
    it, before anything boots."""
    if shift is None:
        return
    if not 0 <= shift <= MAX_ICOUNT_SHIFT:
        raise UserError(f"--icount: shift {shift} is outside 0..{MAX_ICOUNT_SHIFT} "
                        f"(2**SHIFT ns of the guest's time per instruction)")
    guest_nice()


def guest_nice() -> int:
    """The nice value of QEMU and the emulator under --icount (testbed/run.sh
    reads the same ``IOLAB_GUEST_NICE``, default -10)."""
    text = os.environ.get("IOLAB_GUEST_NICE", "-10")
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not -20 <= value <= 19:
        raise UserError(f"IOLAB_GUEST_NICE={text!r}: a nice value from -20 to 19 expected")
    return value


@dataclass
class GuestRun:
    """A finished guest run: its directory and whether the job succeeded."""

    out: Path
    ok: bool
    failures: list[str]

    def read(self, name: str) -> str:
        return (self.out / name).read_text()


def _check_root() -> None:
    if os.geteuid() != 0:
        raise UserError("booting the guest needs root (Debian packages, QEMU's 9p shares); run as root")


def prepare(repo: Path, quiet: bool = True) -> str:
    """Install what is missing and build the module; return the kernel release."""
    _check_root()
    out = subprocess.DEVNULL if quiet else None
    _run([str(repo / "testbed" / "deps.sh")], stdout=out)
    kver = subprocess.run(
        ["bash", "-c", f". {repo / 'testbed' / 'lib.sh'} && tb_kver"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    _run(["make", "-s", "-C", str(kernel_dir(repo)), f"KVER={kver}"], stdout=out)
    return kver


def kernel_dir(repo: Path) -> Path:
    """The modules' sources: ``$IOLAB_KERNEL_DIR`` (a copy of kernel/ with
    a researcher's elevator, as make test-kernel makes one; the simulator
    reads the same variable) or the checkout's kernel/."""
    return Path(os.environ.get("IOLAB_KERNEL_DIR") or repo / "kernel")


def boot(repo: Path, out: Path, job: str, args: list[str], *, disk: Path | None = None,
         nbd: Path | None = None, timeout_s: int = 3600, mem_mb: int = 1024,
         icount: int | None = None) -> GuestRun:
    """Run ``testbed/guest/JOB ARGS`` in a fresh guest, results in ``out``.

    ``icount``: run the guest on QEMU's instruction counter, one virtual CPU,
    each instruction 2**icount ns of the guest's time, its clock held to the
    host's (``align=on``) and idle time passing as the host's (``sleep=on``):
    see :data:`ICOUNT_SPEC` and docs/kernel.md."""
    _check_root()
    cmd = [str(repo / "testbed" / "run.sh"), "--out", str(out), "--timeout", str(timeout_s),
           "--mem", str(mem_mb)]
    if icount is not None:
        cmd += ["--smp", "1", "--icount", ICOUNT_SPEC.format(shift=icount)]
    if disk is not None:
        cmd += ["--disk", str(disk)]
    if nbd is not None:
        cmd += ["--nbd", str(nbd)]
    cmd += [job, *args]
    # run.sh, its `timeout` and QEMU in a process group of their own, so
    # that stopping a boot (Ctrl-C, SIGTERM, a failure beside it) stops
    # every one of them, not only the shell (stop_all)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    with _LIVE_LOCK:
        _LIVE.add(proc)
    try:
        _, stderr = proc.communicate()
    except BaseException:
        _stop(proc)
        raise
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
    fails_file = out / "failures"
    failures = fails_file.read_text().splitlines() if fails_file.exists() else []
    if proc.returncode != 0 and not failures:
        failures = [stderr.strip().splitlines()[-1] if stderr.strip() else "run.sh failed"]
    return GuestRun(out=out, ok=proc.returncode == 0 and not failures, failures=failures)


# The boots running now (each its run.sh's process group), for stop_all.
_LIVE: set[subprocess.Popen] = set()
_LIVE_LOCK = threading.Lock()
# How long a stopped boot's QEMU gets to go before it is killed.
STOP_GRACE_S = 20


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the boot's whole process group, SIGKILL after the grace."""
    for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def stop_all() -> None:
    """Stop every boot still running (guests side by side, on Ctrl-C)."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for proc in live:
        _stop(proc)


def _run(cmd: list[str], stdout=None) -> None:
    proc = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-3:]
        raise UserError(f"{' '.join(cmd[:2])} failed: {' | '.join(tail)}")
