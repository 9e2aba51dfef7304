"""`iolab mail queue` as a postmaster runs it, on both queues: every command
against a running `iolab mail serve` (through its control socket) and
against the stopped one (the queue opened directly); the socket's
permissions; hostile clients of the socket while SMTP and delivery go on.

The server runs as a process of its own; the queue commands run through
`iolab.cli.main` in this process (the same code as the `iolab` command,
without an interpreter start per command: CI time)."""

from __future__ import annotations

import json
import os
import signal
import smtplib
import socket
import socketserver
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from iolab.cli import main


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(qdir: Path, *extra: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "iolab", "mail", "serve", "--listen", f"127.0.0.1:{port}", "--queue-dir", str(qdir),
         *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        _, err = proc.communicate(timeout=60)
        raise AssertionError(line + err)
    return proc, port


def stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return err


def wait_for(cond, what: str, timeout: float = 30.0) -> None:
    """Polls `cond`; the deadline only detects a hang."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"hang detector: {what}"
        time.sleep(0.05)


def q(capfd, *args: str) -> tuple[int, str, str]:
    """`iolab mail queue ARGS`: exit code, stdout, stderr."""
    code = main(["mail", "queue", *args])
    out = capfd.readouterr()
    return code, out.out, out.err


def listing(capfd, qdir: Path) -> dict:
    code, out, err = q(capfd, "list", "--queue-dir", str(qdir), "--json")
    assert code == 0, err
    return json.loads(out)


def settled(listed: dict, n: int) -> bool:
    """`n` records, each tried and waiting (deferred or dead)."""
    msgs = listed["messages"]
    return len(msgs) == n and all(m["state"] in ("deferred", "dead") for m in msgs)


def by_rcpt(listed: dict, rcpt: str) -> list[dict]:
    return [m for m in listed["messages"] if any(r["address"] == rcpt for r in m["recipients"])]


class Sink(socketserver.ThreadingTCPServer):
    """A next hop that takes every message; counts copies per recipient."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, port: int) -> None:
        self.got: dict[str, int] = {}
        super().__init__(("127.0.0.1", port), SinkSession)


class SinkSession(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        rcpts: list[str] = []
        self.wfile.write(b"220 sink ESMTP\r\n")
        while line := self.rfile.readline():
            verb = line[:4].upper()
            if verb == b"RCPT":
                rcpts.append(line.split(b"<")[1].split(b">")[0].decode())
            if verb == b"DATA":
                self.wfile.write(b"354 go\r\n")
                while self.rfile.readline() not in (b".\r\n", b""):
                    pass
                for r in rcpts:
                    self.server.got[r] = self.server.got.get(r, 0) + 1  # type: ignore[attr-defined]
                rcpts.clear()
            if verb == b"QUIT":
                self.wfile.write(b"221 bye\r\n")
                return
            self.wfile.write(b"250 ok\r\n")


def send(port: int, rcpt: str, subject: str) -> None:
    with smtplib.SMTP("127.0.0.1", port, timeout=30) as s:
        s.sendmail("bob@example.org", [rcpt], f"Subject: {subject}\r\n\r\ntext of {subject}\r\n")


@pytest.mark.parametrize("kind", ["fastqueue", "filedir"])
def test_every_command_with_the_server_running_and_stopped(tmp_path: Path, capfd, kind: str) -> None:
    qdir = tmp_path / "q"
    hop = free_port()  # nobody listens there yet: every delivery is deferred
    proc, port = serve(qdir, "--queue", kind, "--relay", f"127.0.0.1:{hop}", "--retry-base", "600",
                       "--max-attempts", "2")
    sink = None
    try:
        send(port, "carol@example.net", "stays")
        send(port, "dave@example.net", "goes")
        wait_for(lambda: [m["attempts"] for m in listing(capfd, qdir)["messages"]] == [1, 1], "two deferred")
        code, out, err = q(capfd, "list", "--queue-dir", str(qdir))
        assert code == 0 and "asked the running server" in err, err
        carol = by_rcpt(listing(capfd, qdir), "carol@example.net")[0]
        dave = by_rcpt(listing(capfd, qdir), "dave@example.net")[0]
        assert carol["qid"] in out and "carol@example.net (deferred)" in out and "Connection refused" in out, out
        assert carol["state"] == "deferred" and carol["next_retry_ms"] > time.time() * 1000 + 500_000, carol
        code, out, err = q(capfd, "show", "--queue-dir", str(qdir), dave["qid"], "--body")
        assert code == 0 and f"with ESMTP id {dave['qid']}" in out and "Subject: goes" in out, out
        assert "text of goes" in out and "recipient: dave@example.net (deferred" in out, out
        code, out, err = q(capfd, "delete", "--queue-dir", str(qdir), dave["qid"], "NOSUCHID")
        assert code == 1 and f"1 message(s) deleted: {dave['qid']}" in out and "NOSUCHID: not in the queue" in err
        # Flushed, carol's second attempt fails too: a dead letter, and a
        # DSN to bob (deferred in turn).
        code, out, _ = q(capfd, "flush", "--queue-dir", str(qdir))
        assert code == 0 and f"1 message(s) due now: {carol['qid']}" in out, out
        wait_for(lambda: settled(listing(capfd, qdir), 2), "a dead letter and its DSN, deferred")
        listed = listing(capfd, qdir)
        (dead,) = by_rcpt(listed, "carol@example.net")
        (dsn,) = by_rcpt(listed, "bob@example.org")
        assert (dead["queue"], dead["recipients"][0]["state"]) == ("dead", "dead"), dead
        assert "gave up after 2 attempts" in dead["recipients"][0]["reason"], dead
        assert dsn["sender"] == "" and dsn["state"] == "deferred", dsn
        # The next hop is back: the dead letter goes out when requeued, the
        # DSN when flushed.
        sink = Sink(hop)
        threading.Thread(target=sink.serve_forever, daemon=True).start()
        code, out, _ = q(capfd, "requeue", "--queue-dir", str(qdir), dead["qid"])
        assert code == 0 and f"1 message(s) requeued: {dead['qid']}" in out, out
        assert q(capfd, "flush", "--queue-dir", str(qdir), dsn["qid"])[0] == 0
        wait_for(lambda: sink.got.get("carol@example.net") == 1 and sink.got.get("bob@example.org") == 1, "delivery")
        wait_for(lambda: not listing(capfd, qdir)["messages"], "an empty queue")
        assert "dave@example.net" not in sink.got
        # For the stopped server: one deferred (erin), one dead letter
        # (frank) and the DSN about frank (deferred).
        sink.shutdown()
        sink.server_close()
        sink = None
        send(port, "erin@example.net", "erin")
        send(port, "frank@example.net", "frank")
        wait_for(lambda: [m["attempts"] for m in listing(capfd, qdir)["messages"]] == [1, 1], "two deferred")
        frank = by_rcpt(listing(capfd, qdir), "frank@example.net")[0]
        assert q(capfd, "flush", "--queue-dir", str(qdir), frank["qid"])[0] == 0
        wait_for(lambda: settled(listing(capfd, qdir), 3), "frank dead, its DSN deferred")
    finally:
        if sink is not None:
            sink.shutdown()
            sink.server_close()
        log = stop(proc)
    # One line per operation on the server's log, by whom.
    assert f"postsuper: {dave['qid']}: removed (uid={os.geteuid()} pid=" in log, log
    assert "postsuper: Deleted: 1 message(s)" in log and f"postsuper: {dead['qid']}: requeued" in log
    assert "postqueue: list: 2 record(s)" in log and "postqueue: flush: 1 message(s) due now" in log
    assert f"postqueue: show {dave['qid']}: 1 record(s)" in log

    # Stopped: the command opens the queue itself and says so.
    assert not (qdir / "control").exists()
    code, out, err = q(capfd, "list", "--queue-dir", str(qdir))
    assert code == 0 and "no server is running" in err and "opened the queue directly" in err, err
    assert "erin@example.net" in out and "frank@example.net (dead)" in out and "MAILER-DAEMON" in out, out
    listed = listing(capfd, qdir)
    erin = by_rcpt(listed, "erin@example.net")[0]
    # (The file-per-message queue counts attempts in memory only.)
    assert listed["via"] == "direct" and erin["attempts"] == (1 if kind == "fastqueue" else 0), erin
    code, out, _ = q(capfd, "show", "--queue-dir", str(qdir), erin["qid"])
    assert code == 0 and "Subject: erin" in out and "text of erin" not in out, out
    code, out, err = q(capfd, "flush", "--queue-dir", str(qdir))
    # FastQueue keeps retry times on disk and moves them (erin and the
    # DSN); the file-per-message queue keeps them in memory, so after a
    # stop everything is due anyway and there is nothing to move.
    assert code == 0 and out.startswith("2 message(s)" if kind == "fastqueue" else "0 message(s)"), out
    assert "postqueue: flush:" in err and "the server not running" in err, err
    code, out, _ = q(capfd, "requeue", "--queue-dir", str(qdir), "--all")
    assert code == 0 and f"requeued: {frank['qid']}" in out, out
    code, out, err = q(capfd, "delete", "--queue-dir", str(qdir), erin["qid"])
    assert code == 0 and f"postsuper: {erin['qid']}: removed" in err, err
    left = listing(capfd, qdir)["messages"]
    assert sorted((m["queue"], m["recipients"][0]["address"]) for m in left) == [
        ("main", "bob@example.org"), ("main", "frank@example.net")], left
    # Started again with the next hop up: frank and the DSN go out (at
    # once: both were made due), erin never.
    sink = Sink(hop)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    proc, port = serve(qdir, "--queue", kind, "--relay", f"127.0.0.1:{hop}", "--retry-base", "600")
    try:
        wait_for(lambda: sink.got.get("frank@example.net") == 1 and sink.got.get("bob@example.org") == 1, "after start")
        wait_for(lambda: not listing(capfd, qdir)["messages"], "an empty queue")
    finally:
        stop(proc)
        sink.shutdown()
        sink.server_close()
    assert "erin@example.net" not in sink.got


def test_bad_queue_commands_are_one_line_errors(tmp_path: Path, capfd) -> None:
    code, _, err = q(capfd, "list", "--queue-dir", str(tmp_path / "none"))
    assert code == 2 and "no mail queue here" in err and "Traceback" not in err, err
    (tmp_path / "q" / "main").mkdir(parents=True)
    code, _, err = q(capfd, "show", "--queue-dir", str(tmp_path / "q"), "../../etc/passwd")
    assert code == 2 and "is not a queue id" in err, err
    code, _, err = q(capfd, "requeue", "--queue-dir", str(tmp_path / "q"))
    assert code == 2 and "--all" in err, err


def test_the_control_socket_is_private_and_hostile_clients_do_not_stop_mail(tmp_path: Path, capfd) -> None:
    """Mode 0600 and the server's user; another user is refused at connect
    (and not given the queue directly); garbage, an over-long request, a
    client that never reads and a crowd of silent clients get errors or
    nothing, while a message is accepted and delivered; once the crowd
    has gone, a queue command is answered again."""
    qdir = tmp_path / "q"
    proc, port = serve(qdir, "--maildir", str(tmp_path / "mail"), "--local-domain", "example.org")
    try:
        # The queue tool, which cannot open a running server's queue, points
        # at the queue commands.
        assert main(["queue", "stats", str(qdir / "main")]) == 2
        assert f"use iolab mail queue list --queue-dir {qdir}" in capfd.readouterr().err
        sock = qdir / "control"
        st = os.lstat(sock)
        assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid()
        if os.geteuid() == 0:
            # Another user, with the directories open to it: refused by the
            # socket's mode.
            os.chmod(tmp_path, 0o755)
            os.chmod(qdir, 0o755)
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child
                code = 1
                try:
                    os.setuid(65534)
                    c = socket.socket(socket.AF_UNIX)
                    try:
                        c.connect(str(sock))
                    except PermissionError:
                        code = 0
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0, "another user could connect"

        def client() -> socket.socket:
            c = socket.socket(socket.AF_UNIX)
            c.connect(str(sock))
            c.settimeout(20)
            return c

        def answer(c: socket.socket) -> str:
            with c:
                data = b""
                while chunk := c.recv(65536):
                    data += chunk
                return data.decode()

        garbage = client()
        garbage.sendall(b"\x00\xff{{{ not json\n")
        assert "not a request" in answer(garbage)
        long = client()
        long.sendall(b"x" * 100_000)
        assert "request longer than" in answer(long)
        silent_reader = client()
        silent_reader.sendall(b'{"op": "list"}\n')
        crowd = [client() for _ in range(30)]
        with smtplib.SMTP("127.0.0.1", port, timeout=30) as s:
            s.sendmail("bob@example.org", ["alice@example.org"], "Subject: meanwhile\r\n\r\nhi\r\n")
        new = tmp_path / "mail" / "alice" / "new"
        wait_for(lambda: new.is_dir() and len(os.listdir(new)) == 1, "delivery while the socket is crowded")
        told: set[int] = set()

        def crowd_told() -> bool:
            for i, c in enumerate(crowd):
                c.setblocking(False)
                try:
                    if b"busy" in c.recv(200):
                        told.add(i)
                except OSError:
                    pass
            return len(told) >= 30 - 8

        wait_for(crowd_told, "the crowd told it is busy")
        for c in crowd:
            c.close()
        wait_for(lambda: q(capfd, "list", "--queue-dir", str(qdir))[0] == 0, "an answer after the crowd")
        silent_reader.close()
    finally:
        stop(proc)
