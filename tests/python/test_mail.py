"""`iolab mail serve` as a user runs it: a message sent with smtplib lands in
the Maildir; the SMTP limits answer with the right codes; a next hop that
refuses connections makes the message go to the retry queue with backoff
and then to the dead-letter queue with a bounce record; a 5xx from the next
hop dead-letters at once; SIGTERM drains and exits 0."""

from __future__ import annotations

import json
import os
import shutil
import signal
import smtplib
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from iolab.fastqueue import FastQueue


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(tmp: Path, *extra: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "iolab", "mail", "serve", "--listen", f"127.0.0.1:{port}",
         "--queue-dir", str(tmp / "queue"), "--stats", str(tmp / "stats.json"), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if "listening on" not in line:
        _, err = proc.communicate(timeout=30)
        raise AssertionError(line + err)
    return proc, port


def stop(proc: subprocess.Popen, tmp: Path) -> dict:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)  # also closes the pipes
    proc.stderr_text = err  # type: ignore[attr-defined]  # the server's log, for the tests that read it
    assert proc.returncode == 0, err
    return json.loads((tmp / "stats.json").read_text())


def wait_for(cond, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_serve_delivers_to_maildir_and_enforces_limits(tmp_path: Path) -> None:
    proc, port = serve(tmp_path, "--maildir", str(tmp_path / "mail"), "--max-recipients", "2",
                       "--max-size", "20000", "--max-line", "200", "--local-domain", "x")
    try:
        with smtplib.SMTP("127.0.0.1", port, timeout=10) as s:
            code, caps = s.ehlo("client.test")
            assert code == 250 and b"SIZE 20000" in caps and b"PIPELINING" in caps
            msg = "From: a@x\r\nTo: alice@x\r\nMessage-ID: <one@test>\r\n\r\nhello\r\n"
            assert s.sendmail("a@x", ["alice@x"], msg) == {}
            # Recipients beyond the limit: 452 (RFC 5321 4.5.3.1.10).
            s.mail("a@x")
            assert s.rcpt("b1@x")[0] == 250 and s.rcpt("b2@x")[0] == 250
            assert s.rcpt("b3@x")[0] == 452
            s.rset()
            # A declared size over the limit is refused at MAIL.
            assert s.mail("a@x", ["SIZE=30000"])[0] == 552
            # A mailbox name that is not a safe folder name.
            s.mail("a@x")
            assert s.rcpt("a/b@x")[0] == 550
            s.rset()
            # Message text: a line over 200 bytes, then a message over the size.
            for body, code in (("x" * 300, 552), (("y" * 70 + "\r\n") * 400, 552)):
                s.mail("a@x")
                s.rcpt("alice@x")
                assert s.data(f"Subject: t\r\n\r\n{body}\r\n")[0] == code
            # The session still works after refusals.
            assert s.sendmail("a@x", ["bob@x"], "Subject: two\r\n\r\nok\r\n") == {}
        alice = tmp_path / "mail" / "alice" / "new"
        wait_for(lambda: alice.is_dir() and len(os.listdir(alice)) == 1 and (tmp_path / "mail" / "bob" / "new").is_dir())
        text = (alice / os.listdir(alice)[0]).read_bytes()
        assert b"Message-ID: <one@test>" in text and b"Return-Path: <a@x>" in text
        assert b"Received: from client.test" in text and text.endswith(b"hello\r\n")
        assert not list((tmp_path / "mail" / "alice" / "tmp").iterdir())
    finally:
        stats = stop(proc, tmp_path)
    assert stats["accepted"] == 2 and stats["delivered"] == 2 and stats["rejected"] == 2
    # Per delivery: file + new/; per new folder: its 4 directories' parents.
    assert stats["delivery_syncs"] == 2 * (2 + 4)


def test_unreachable_next_hop_retries_with_backoff_then_dead_letters(tmp_path: Path) -> None:
    closed = free_port()  # nothing listens: connection refused = temporary failure
    proc, port = serve(tmp_path, "--relay", f"127.0.0.1:{closed}", "--retry-base", "0.2",
                       "--max-attempts", "3")
    try:
        t0 = time.monotonic()
        with smtplib.SMTP("127.0.0.1", port, timeout=10) as s:
            # The null sender: when the message gives up, no bounce is
            # made (RFC 5321 section 4.5.5), so nothing else is queued.
            s.sendmail("<>", ["rcpt@y"], "Message-ID: <r@test>\r\n\r\nbody\r\n")
        wait_for(lambda: _dead_records(tmp_path) == 1)
        took = time.monotonic() - t0
    finally:
        stats = stop(proc, tmp_path)
    # Two retries (0.2 s then 0.4 s) before the third failure bounces it.
    assert stats["retried"] == 2 and stats["dead"] == 1 and stats["delivered"] == 0, stats
    assert stats["bounces"] == 0 and stats["queued"] == 0, stats
    assert took >= 0.6
    (bounce,) = read_dead(tmp_path)
    assert bounce.startswith(b"IOLAB-MAIL 1\nF \nT rcpt@y\nI ")
    assert b"\nB <rcpt@y>: 4.4.1 connect to 127.0.0.1[127.0.0.1]:" in bounce
    assert b"(gave up after 3 attempts)" in bounce
    assert b"\nA 3\n\n" in bounce and bounce.endswith(b"body\r\n")


def _dead_records(tmp: Path) -> int:
    """Records in the dead-letter queue's segments so far (the queue is
    locked while the server runs, so its files are read directly)."""
    return sum(f.read_bytes().count(b"IOLAB-MAIL 1\n") for f in (tmp / "queue" / "dead").glob("seg-*.fq"))


def read_dead(tmp: Path) -> list[bytes]:
    with FastQueue(tmp / "queue" / "dead") as q:
        return [m.payload for m in q.dequeue_batch(10)]


def test_permanent_refusal_bounces_at_once(tmp_path: Path) -> None:
    """A 5xx from the next hop bounces at once: a dead-letter record and a
    DSN to the sender; the next hop refuses the DSN too (it refuses every
    RCPT), which, from <>, is only recorded."""
    sink = shutil.which("smtp-sink") or ("/usr/sbin/smtp-sink" if os.path.exists("/usr/sbin/smtp-sink") else None)
    if sink is None:
        if os.environ.get("CI"):
            pytest.fail("smtp-sink missing: make deps installs Debian's postfix package")
        pytest.skip("smtp-sink not installed (make deps)")
    sink_port = free_port()
    cmd = [sink] + (["-u", "postfix"] if os.geteuid() == 0 else []) + ["-f", "RCPT", f"127.0.0.1:{sink_port}", "50"]
    sink_proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: _listening(sink_port))
        proc, port = serve(tmp_path, "--relay", f"127.0.0.1:{sink_port}", "--retry-base", "0.2")
        try:
            with smtplib.SMTP("127.0.0.1", port, timeout=10) as s:
                s.sendmail("sender@x", ["rcpt@y"], "Subject: p\r\n\r\nbody\r\n")
            wait_for(lambda: _dead_records(tmp_path) == 2)
        finally:
            stats = stop(proc, tmp_path)
        log = proc.stderr_text  # type: ignore[attr-defined]
    finally:
        sink_proc.terminate()
        sink_proc.wait()
    assert stats["dead"] == 2 and stats["bounces"] == 1 and stats["retried"] == 0, stats
    original, dsn = sorted(read_dead(tmp_path), key=lambda r: r.startswith(b"IOLAB-MAIL 1\nF \n"))
    assert b"said: 500 " in original and b"(in reply to RCPT TO command)" in original and b"\nA 1\n" in original
    assert dsn.startswith(b"IOLAB-MAIL 1\nF \nT sender@x\n") and b"report-type=delivery-status" in dsn
    # Postfix's log lines (docs/mail.md, "Logs").
    assert "status=bounced (host 127.0.0.1[127.0.0.1]" in log and "sender non-delivery notification:" in log
    assert "from=<sender@x>, size=" in log and "nrcpt=1 (queue active)" in log


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def test_bad_settings_are_one_line_errors(iolab, tmp_path: Path) -> None:
    r = iolab("mail", "serve", "--queue-dir", str(tmp_path / "q"), "--maildir", str(tmp_path / "m"),
              "--listen", "nonsense")
    assert r.returncode == 2 and "listen" in r.stderr and "Traceback" not in r.stderr
    r = iolab("mail", "serve", "--queue-dir", str(tmp_path / "q"), "--maildir", str(tmp_path / "m"),
              "--max-recipients", "0")
    assert r.returncode == 2 and "--max-recipients" in r.stderr
    r = iolab("mail", "serve", "--queue-dir", str(tmp_path / "q"), "--maildir", str(tmp_path / "m"),
              "--visibility-timeout", "nan")
    assert r.returncode == 2 and "--visibility-timeout" in r.stderr and "Traceback" not in r.stderr
    # Accepted by the command line, refused by the server's own check: the
    # values reach the server.
    r = iolab("mail", "serve", "--queue-dir", str(tmp_path / "q"), "--maildir", str(tmp_path / "m"),
              "--visibility-timeout", "0.01")
    assert r.returncode == 2 and "--visibility-timeout: must be at least 30 ms" in r.stderr, r.stderr
    r = iolab("mail", "serve", "--queue-dir", str(tmp_path / "q"), "--maildir", str(tmp_path / "m"),
              "--delivery-timeout", "100000")
    assert r.returncode == 2 and "--delivery-timeout" in r.stderr, r.stderr
    r = iolab("mail", "bench", "--systems", "sendmail")
    assert r.returncode == 2 and "sendmail" in r.stderr


def test_bench_measures_the_machines_ceiling(iolab, tmp_path: Path) -> None:
    """`mail bench --ceiling` runs each system again with its queue on
    tmpfs and says how far a queue that costs nothing could go."""
    from iolab.mail.tools import which

    if which("smtp-source") is None and not os.environ.get("CI"):
        pytest.skip("smtp-source not installed (make deps)")
    out = tmp_path / "out"
    def ours() -> set[str]:
        return {p for p in os.listdir("/dev/shm") if p.startswith("iolab-mail-ceiling-")}

    before = ours()
    r = iolab("mail", "bench", "--systems", "fastqueue,filedir", "--users", "10", "--messages", "100",
              "--reps", "1", "--no-loop", "--dir", str(tmp_path / "w"), "--ceiling", "--out", str(out))
    assert r.returncode == 0, r.stderr
    for system in ("fastqueue", "filedir", "fastqueue@tmpfs", "filedir@tmpfs"):
        assert f"| {system} |" in r.stdout
    assert "ceiling of this machine: the fastest system with its queue on tmpfs delivered" in r.stdout
    rows = json.loads((out / "results.json").read_text())
    assert sorted(row["system"] for row in rows) == ["fastqueue", "fastqueue@tmpfs", "filedir", "filedir@tmpfs"]
    assert all(row["sink_count"] >= 100 and not row["errors"] for row in rows)
    assert ours() == before  # its tmpfs directory is gone
