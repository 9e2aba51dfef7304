"""Hostile NBD clients against `iolab emu` over raw sockets (issue 27).

One emulator serves the whole module. Each case does something a real NBD
client never does (bad magic, a header cut short, lengths past the end or
past 2^64, unknown commands and flags, writes whose data never comes, a client
that never reads its replies, option haggling gone wrong), and then a
well-behaved client checks that the server still answers and that every write
it acknowledged before is still there: a hostile client may lose its own
connection, never the server or anyone's data.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nbdraw import (CMD_FLAG_FUA, CMD_FLUSH, CMD_READ, CMD_TRIM, CMD_WRITE, IHAVEOPT, NBDMAGIC, OPT_GO,
                    REQUEST_MAGIC, NbdClient)

from .harness import TALLY

BLOCK = 4096


class Emu:
    def __init__(self, tmp: Path):
        self.sock = tmp / "nbd.sock"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "iolab", "emu", "--disk", "fixed", "--fixed-ms", "0.05", "--image",
             str(tmp / "disk.img"), "--socket", str(self.sock), "--no-realtime", "--no-sync"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not self.sock.exists():
            assert self.proc.poll() is None and time.monotonic() < deadline, self.proc.communicate()
            time.sleep(0.05)
        self.written: dict[int, bytes] = {}  # offset -> what a good client wrote there and had acknowledged

    def raw(self) -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(str(self.sock))
        return s

    def still_serves(self, case: str) -> None:
        """A good client writes a block of its own and reads back every block written so far."""
        c = NbdClient(self.sock, timeout=60)
        offset = (len(self.written) + 1) * BLOCK
        data = (case.encode() * (BLOCK // max(len(case), 1) + 1))[:BLOCK]
        c.write(offset, data)
        self.written[offset] = data
        for off, want in self.written.items():
            assert c.read(off, BLOCK) == want, f"after {case}: the block at {off} changed"
        c.disconnect()
        assert self.proc.poll() is None, f"after {case}: the emulator exited"

    def stop(self) -> tuple[int, str]:
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=60)
        return self.proc.returncode, out + err


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    e = Emu(tmp_path_factory.mktemp("nbd"))
    yield e
    code, text = e.stop()
    assert code == 0, text
    assert "Traceback" not in text and "panicked" not in text, text


def _header(kind: int, offset: int, length: int, flags: int = 0, cookie: int = 7, magic: int = REQUEST_MAGIC) -> bytes:
    return struct.pack(">IHHQQI", magic, flags, kind, cookie, offset, length)


def _drain(s: socket.socket, seconds: float = 1.0) -> bytes:
    """What the server sends until it closes or goes quiet."""
    s.settimeout(seconds)
    out = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return out


def _after_go(emu: Emu) -> NbdClient:
    return NbdClient(emu.sock, timeout=30)


# Cases in the transmission phase: (id, bytes sent after NBD_OPT_GO, expected NBD error of the
# first reply, or None when the server may simply drop the connection).
TRANSMISSION = [
    ("bad-request-magic", _header(CMD_READ, 0, 512, magic=0xDEADBEEF), None),
    ("header-cut-short", _header(CMD_READ, 0, 512)[:10], None),
    ("read-past-the-end", _header(CMD_READ, 2**40, 512), "error"),
    ("read-past-2^64", _header(CMD_READ, 2**64 - 100, 512), "error"),
    ("write-past-2^64", _header(CMD_WRITE, 2**64 - 100, 512) + b"x" * 512, "error"),
    ("read-of-4-GiB", _header(CMD_READ, 0, 2**32 - 1), "error"),
    ("read-of-0-bytes", _header(CMD_READ, 0, 0), "any"),
    ("write-of-64-MiB-announced", _header(CMD_WRITE, 0, 64 << 20) + b"y" * 4096, None),
    ("write-data-never-comes", _header(CMD_WRITE, 0, 4096) + b"z" * 100, None),
    ("unknown-command", _header(99, 0, 512), "error"),
    ("unknown-flags", _header(CMD_READ, 0, 512, flags=0xFFFF), "any"),
    ("fua-on-read", _header(CMD_READ, 0, 512, flags=CMD_FLAG_FUA), "any"),
    ("flush-with-length", _header(CMD_FLUSH, 0, 512), "any"),
    ("trim-past-the-end", _header(CMD_TRIM, 2**63, 512), "error"),
    ("unaligned-write", _header(CMD_WRITE, 3, 5) + b"abcde", "any"),
    ("a-thousand-requests-unread", b"".join(_header(CMD_READ, 0, 4096, cookie=i) for i in range(1000)), "unread"),
    ("garbage", os.urandom(4096), None),
    ("zeros", bytes(4096), None),
]


@pytest.mark.parametrize("case", TRANSMISSION, ids=[c[0] for c in TRANSMISSION])
def test_transmission_phase(emu, case):
    name, payload, expect = case
    TALLY["emu: NBD over raw sockets"] += 1
    c = _after_go(emu)
    c.s.sendall(payload)
    if expect == "unread":
        time.sleep(0.5)  # replies pile up untaken; then the client just goes away
        c.close()
    elif expect is None:
        c.s.shutdown(socket.SHUT_WR)
        _drain(c.s)
        c.close()
    else:
        c.s.settimeout(30)
        error, cookie = c.reply()
        assert cookie == 7
        if expect == "error":
            assert error != 0, f"{name}: accepted"
        c.close()
    emu.still_serves(name)


# Cases in the handshake: raw bytes after the server's greeting.
HANDSHAKE = [
    ("bad-client-flags", struct.pack(">I", 0xFFFFFFFF)),
    ("no-client-flags", b""),
    ("option-bad-magic", struct.pack(">I", 3) + struct.pack(">QII", 0x1234, OPT_GO, 0)),
    ("option-4-GiB-long", struct.pack(">I", 3) + struct.pack(">QII", IHAVEOPT, OPT_GO, 2**32 - 1) + b"x" * 100),
    ("option-unknown", struct.pack(">I", 3) + struct.pack(">QII", IHAVEOPT, 0x7FFF, 4) + b"abcd"),
    ("go-name-longer-than-option", struct.pack(">I", 3) + struct.pack(">QII", IHAVEOPT, OPT_GO, 6)
     + struct.pack(">I", 1000) + b"ab"),
    ("go-with-a-million-info-requests", struct.pack(">I", 3) + struct.pack(">QII", IHAVEOPT, OPT_GO, 6)
     + struct.pack(">IH", 0, 65535)),
    ("options-forever", struct.pack(">I", 3) + b"".join(
        struct.pack(">QII", IHAVEOPT, 0x7FFF, 0) for _ in range(2000))),
]


@pytest.mark.parametrize("case", HANDSHAKE, ids=[c[0] for c in HANDSHAKE])
def test_handshake_phase(emu, case):
    name, payload = case
    TALLY["emu: NBD over raw sockets"] += 1
    s = emu.raw()
    greeting = s.recv(18)
    assert greeting[:8] == NBDMAGIC
    if payload:
        try:
            s.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass
    s.shutdown(socket.SHUT_WR)
    _drain(s)
    s.close()
    emu.still_serves(name)


def test_many_connections_that_never_finish_the_handshake(emu):
    TALLY["emu: NBD over raw sockets"] += 1
    idle = [emu.raw() for _ in range(50)]
    emu.still_serves("fifty-idle-connections")
    for s in idle:
        s.close()
    emu.still_serves("fifty-idle-connections-closed")
