"""Hostile SMTP clients and careless operators against `iolab mail serve`
(issue 26, defects 2, 3, 6 and 8), as a user runs it.

- Settings that cannot work are refused at start with one error line.
- Raw sessions over a socket: each case sends bytes as a client might
  and lists the reply codes it must get, one reply per command line (a
  pipelining client's replies must never shift).
- Generated sessions (seeded): random command lines, over-long lines,
  control and 8-bit bytes, smuggling sequences inside DATA. Whatever is
  sent, the server answers each complete line once, stays up, and queues
  no message that did not end with <CRLF>.<CRLF> and a 250.
"""

from __future__ import annotations

import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .harness import TALLY, check_clean, run_cli

SERVE = ["mail", "serve", "--queue-dir", "{tmp}/q", "--listen", "127.0.0.1:0"]
MAILDIR = [*SERVE, "--maildir", "{tmp}/md"]

START_CASES = [
    ("open-mynetworks", [*SERVE, "--relay", "127.0.0.1:9", "--mynetworks", "0.0.0.0/0"], ["open relay", "--open-relay"]),
    ("mynetworks-junk", [*SERVE, "--relay", "127.0.0.1:9", "--mynetworks", "10.0.0.0/99"], ["mynetworks"]),
    ("hostname-10k", [*MAILDIR, "--hostname", "h" * 10_000], ["hostname"]),
    ("hostname-nul", [*MAILDIR, "--hostname", "a\x01b"], ["hostname"]),
    ("idle-timeout-1ns", [*MAILDIR, "--idle-timeout", "1e-9"], ["--idle-timeout: must be at least 1 s"]),
    ("maildir-is-a-file", [*SERVE, "--maildir", "{tmp}/file"], ["maildir", "not a directory"]),
    ("maildir-under-proc", [*SERVE, "--maildir", "/proc/iolab-mail"], ["maildir", "/proc"]),
    ("relay-to-itself", ["mail", "serve", "--queue-dir", "{tmp}/q", "--listen", "127.0.0.1:2599",
                         "--relay", "127.0.0.1:2599"], ["loop"]),
    ("local-domain-junk", [*MAILDIR, "--local-domain", "not a domain"], ["domain"]),
    ("per-client-0", [*MAILDIR, "--max-connections-per-client", "0"], ["--max-connections-per-client"]),
]


@pytest.mark.parametrize("case", START_CASES, ids=[c[0] for c in START_CASES])
def test_unworkable_settings_are_refused_at_start(tmp_path, case):
    name, args, needles = case
    (tmp_path / "file").write_text("x")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    TALLY["mail serve (settings that cannot work)"] += 1
    proc = run_cli(args, cwd=tmp_path, timeout=60)
    check_clean(proc, name)
    assert proc.returncode == 2, f"{name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    for n in needles:
        assert n in proc.stderr, f"{name}: {n!r} not in: {proc.stderr}"


def test_filedir_refuses_a_fastqueue_directory(tmp_path):
    """A queue directory holding FastQueue records opened as the
    file-per-message queue would strand its mail."""
    srv = Server(tmp_path)
    srv.stop()
    TALLY["mail serve (settings that cannot work)"] += 1
    proc = run_cli(["mail", "serve", "--queue", "filedir", "--queue-dir", str(tmp_path / "q"), "--listen",
                    "127.0.0.1:0", "--maildir", str(tmp_path / "md")], cwd=tmp_path, timeout=60)
    check_clean(proc, "filedir-on-fastqueue")
    assert proc.returncode == 2 and "FastQueue" in proc.stderr, proc.stderr


class Server:
    """`iolab mail serve` delivering into a Maildir for `localhost`."""

    def __init__(self, tmp: Path, *extra: str) -> None:
        self.tmp = tmp
        self.log = open(tmp / "server.log", "w")  # noqa: SIM115  # closed by stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "iolab", "mail", "serve", "--listen", "127.0.0.1:0", "--queue-dir",
             str(tmp / "q"), "--maildir", str(tmp / "md"), "--max-line", "200", "--max-size", "20000", *extra],
            stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        assert "listening on" in line, (line, (tmp / "server.log").read_text())
        host, port = line.split("listening on ")[1].split(",")[0].rsplit(":", 1)
        self.addr = (host, int(port))

    def messages(self) -> list[bytes]:
        new = self.tmp / "md" / "alice" / "new"
        return [p.read_bytes() for p in new.iterdir()] if new.is_dir() else []

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.communicate(timeout=30)
        self.log.close()
        assert self.proc.returncode == 0
        return (self.tmp / "server.log").read_text()


class Session:
    """A raw client: sends bytes, reads whole replies (their codes)."""

    def __init__(self, addr) -> None:
        self.s = socket.create_connection(addr, timeout=10)
        self.buf = b""
        assert self.reply().startswith("220 ")

    def send(self, data: bytes) -> None:
        self.s.sendall(data)

    def reply(self) -> str:
        """The last line of the next reply ('' if the server closed)."""
        while True:
            while b"\r\n" not in self.buf:
                chunk = self.s.recv(65536)
                if not chunk:
                    return ""
                self.buf += chunk
            line, self.buf = self.buf.split(b"\r\n", 1)
            if line[3:4] != b"-":
                return line.decode("ascii", "replace")

    def codes(self, n: int) -> list[str]:
        return [self.reply()[:3] for _ in range(n)]

    def close(self) -> None:
        self.s.close()


HELLO = b"EHLO client.example\r\nMAIL FROM:<a@x.example>\r\nRCPT TO:<alice@localhost>\r\n"

# (name, bytes sent, reply codes expected in order, messages queued)
SESSIONS = [
    ("smuggle-cr-cr-lf", HELLO + b"DATA\r\n" + b"one\r\n.\r\r\nMAIL FROM:<e@x.test>\r\nRCPT TO:<alice@localhost>\r\n"
     b"DATA\r\nsmuggled\r\n.\r\n", ["250", "250", "250", "354", "550"], 0),
    # Bare LFs are normalised and never end the text: one message, which
    # holds the would-be command as text.
    ("smuggle-lf-dot-lf", HELLO + b"DATA\r\none\n.\nMAIL FROM:<e@x.test>\r\n.\r\nNOOP\r\n",
     ["250", "250", "250", "354", "250", "250"], 1),
    ("smuggle-cr-dot-cr", HELLO + b"DATA\r\none\r.\rMAIL FROM:<e@x.test>\r\n.\r\n", ["250", "250", "250", "354", "550"], 0),
    ("cut-line-then-data", HELLO + b"NOOP " + b"x" * 5000 + b"DATA\r\nSubject: s\r\n\r\nx\r\n.\r\n",
     ["250", "250", "250", "500", "500", "500", "500", "500"], 0),
    ("megabyte-line", b"NOOP " + b"y" * (1 << 20) + b"\r\nNOOP\r\n", ["500", "250"], 0),
    ("nul-in-ehlo", b"EHLO a\x00b\r\nEHLO ok.example\r\n", ["501", "250"], 0),
    ("latin1-sender", b"EHLO c.example\r\nMAIL FROM:<\xe9@x.example>\r\n", ["250", "501"], 0),
    ("binarymime", b"EHLO c.example\r\nMAIL FROM:<a@x.example> BODY=BINARYMIME\r\n", ["250", "555"], 0),
    ("notify", b"EHLO c.example\r\nMAIL FROM:<a@x.example>\r\nRCPT TO:<alice@localhost> NOTIFY=NEVER\r\n",
     ["250", "250", "555"], 0),
    ("postmaster", b"EHLO c.example\r\nMAIL FROM:<a@x.example>\r\nRCPT TO:<Postmaster>\r\n", ["250", "250", "250"], 0),
    ("foreign-domain", b"EHLO c.example\r\nMAIL FROM:<a@x.example>\r\nRCPT TO:<victim@gmail.example>\r\n",
     ["250", "250", "550"], 0),
    ("dot-after-354", HELLO + b"DATA\r\n.\r\n", ["250", "250", "250", "354", "250"], 1),
    ("hop-loop", HELLO + b"DATA\r\n" + b"Received: from a by b; Sat, 28 Nov 2026 00:00:00 +0000\r\n" * 50
     + b"\r\nloop\r\n.\r\n", ["250", "250", "250", "354", "554"], 0),
    ("data-without-rcpt", b"EHLO c.example\r\nMAIL FROM:<a@x.example>\r\nDATA\r\n", ["250", "250", "554"], 0),
    ("quoted-injection", (b"EHLO c.example\r\nMAIL FROM:<a@x.example>\r\n"
                          b"RCPT TO:<\"x> NOTIFY=NEVER\"@localhost>\r\n"), ["250", "250", "550"], 0),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("smtp"))
    yield srv
    log = srv.stop()
    assert "panicked" not in log, log[-3000:]


@pytest.mark.parametrize("case", SESSIONS, ids=[c[0] for c in SESSIONS])
def test_hostile_session(server, case):
    name, data, want, queued = case
    TALLY["mail serve (raw SMTP sessions)"] += 1
    before = len(server.messages())
    s = Session(server.addr)
    s.send(data)
    got = s.codes(len(want))
    # In step: the next command gets its own reply, not a leftover one.
    s.send(b"RSET\r\nNOOP\r\n")
    after = s.codes(2)
    s.close()
    assert got == want, f"{name}: {got}"
    assert after == ["250", "250"], f"{name}: replies shifted: {after}"
    deadline = time.monotonic() + 10
    while len(server.messages()) < before + queued and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(server.messages()) == before + queued, name
    assert server.alive()


def _random_line(rng: random.Random) -> bytes:
    verbs = [b"EHLO", b"HELO", b"MAIL FROM:", b"RCPT TO:", b"DATA", b"RSET", b"NOOP", b"QUIT", b"VRFY", b"BDAT",
             b"STARTTLS", b"AUTH", b"XYZZY", b""]
    junk = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 5, 40, 300, 3000])))
    junk = junk.replace(b"\n", b" ")
    return rng.choice(verbs) + rng.choice([b"", b" ", b"<", b"<>"]) + junk + rng.choice([b"\r\n", b"\n"])


def test_generated_sessions(server):
    """Seeded random sessions: one reply per complete command line, the
    server stays up, and nothing without a 250 after DATA is queued."""
    rng = random.Random(26)
    for n in range(40):
        TALLY["mail serve (raw SMTP sessions)"] += 1
        before = len(server.messages())
        s = Session(server.addr)
        lines = [_random_line(rng) for _ in range(rng.randrange(1, 12))]
        lines = [ln for ln in lines if not ln.upper().startswith((b"DATA", b"QUIT"))]
        s.send(b"".join(lines))
        codes = s.codes(len(lines))
        assert all(c[:1] in "2345" for c in codes), (n, codes, lines)
        s.send(b"RSET\r\nNOOP\r\n")
        assert s.codes(2) == ["250", "250"], (n, lines)
        s.close()
        assert len(server.messages()) == before, (n, lines)
    assert server.alive()
