"""Postfix's test tools and process accounting for the mail benchmark.

Nothing here installs anything: :func:`require` says which Debian package
is missing and how ``make deps`` installs it."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import threading
import time
from dataclasses import dataclass

from iolab.cli.errors import UserError

SBIN = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")


def which(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for d in SBIN:
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return None


def require(*names: str) -> dict[str, str]:
    """Paths of Postfix's programs, or a UserError naming what to install."""
    paths = {n: which(n) for n in names}
    missing = [n for n, p in paths.items() if p is None]
    if missing:
        raise UserError(
            f"{', '.join(missing)} not found: they come with Debian's postfix package; run `make deps` "
            "(installs it without configuring or starting a mail system) or: echo \"postfix "
            "postfix/main_mailer_type select No configuration\" | debconf-set-selections && "
            "DEBIAN_FRONTEND=noninteractive apt-get install -y postfix")
    return {n: p for n, p in paths.items() if p}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise UserError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")


class Sink:
    """``smtp-sink -c`` on a free loopback port, counting messages ('.')
    from its running counter line ``sess=N quit=N mesg=N``."""

    def __init__(self, smtp_sink: str, dump: str | None = None, separator: str = ""):
        self.port = free_port()
        cmd = [smtp_sink, "-c"]
        if os.geteuid() == 0:
            cmd += ["-u", "postfix"]  # it refuses to run as root without -u
        if dump:
            cmd += ["-D", dump]
            if separator:
                cmd += ["-S", separator]
        cmd += [f"127.0.0.1:{self.port}", "4096"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self._count = 0
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        wait_port(self.port, 10)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        buf = b""
        while True:
            chunk = self.proc.stdout.read1(4096) if hasattr(self.proc.stdout, "read1") else self.proc.stdout.read(1)
            if not chunk:
                return
            buf = (buf + chunk)[-256:]
            m = re.findall(rb"mesg=(\d+)", buf)
            if m:
                with self._lock:
                    self._count = int(m[-1])

    @property
    def count(self) -> int:
        with self._lock:
            return self._count

    def wait_for(self, n: int, timeout: float) -> float | None:
        """Monotonic time at which the count reached ``n`` (None on timeout)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.count >= n:
                return time.monotonic()
            time.sleep(0.01)
        return None

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Io:
    write_bytes: int = 0
    syscw: int = 0


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(_children(p))
    return out


def tree_io(pid: int) -> dict[int, Io]:
    """/proc/PID/io of a process and its descendants. A process's counters
    include those of the children it has reaped (kernel/exit.c,
    wait_task_zombie), so a tree's sum before and after a run counts every
    process that lived in between."""
    out = {}
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/io") as f:
                kv = dict(line.split(": ") for line in f.read().splitlines())
            out[p] = Io(int(kv["write_bytes"]), int(kv["syscw"]))
        except (OSError, KeyError, ValueError):
            pass
    return out


def io_delta(before: dict[int, Io], after: dict[int, Io]) -> Io:
    total = Io()
    for p, a in after.items():
        b = before.get(p, Io())
        total.write_bytes += a.write_bytes - b.write_bytes
        total.syscw += a.syscw - b.syscw
    return total


def load_average() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])
