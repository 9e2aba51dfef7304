"""A bare NBD client for tests: it speaks the protocol byte by byte (the fixed
newstyle handshake, NBD_OPT_GO, simple replies), so a test can send what
QEMU's client never would: requests past 2^64 bytes, bad magic, half a
header, a client that never reads its replies.

Numbers from the NBD protocol document (doc/proto.md of the NBD project).
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path

NBDMAGIC = b"NBDMAGIC"
IHAVEOPT = 0x49484156454F5054
OPT_REPLY_MAGIC = 0x3E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_REPLY_MAGIC = 0x67446698
FLAG_C_FIXED_NEWSTYLE = 1
FLAG_C_NO_ZEROES = 2
OPT_GO = 7
REP_ACK = 1
REP_INFO = 3
INFO_EXPORT = 0

CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH, CMD_TRIM = 0, 1, 2, 3, 4
CMD_FLAG_FUA = 1
EINVAL, ENOSPC = 22, 28


class NbdClient:
    """One connection to an NBD server on a Unix socket, after NBD_OPT_GO."""

    def __init__(self, path: str | Path, timeout: float = 60.0):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)  # a hang detector, not a speed target
        self.s.connect(str(path))
        self.cookie = 0
        assert self.recv(8) == NBDMAGIC
        assert self.u64() == IHAVEOPT
        self.handshake_flags = self.u16()
        self.s.sendall(struct.pack(">I", FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES))
        name = b""
        data = struct.pack(">I", len(name)) + name + struct.pack(">H", 0)
        self.s.sendall(struct.pack(">QII", IHAVEOPT, OPT_GO, len(data)) + data)
        self.size = None
        while True:
            magic, _opt, kind, length = struct.unpack(">QIII", self.recv(20))
            assert magic == OPT_REPLY_MAGIC, hex(magic)
            body = self.recv(length)
            if kind == REP_INFO:  # NBD_INFO_EXPORT, and others (block sizes) we do not need
                if struct.unpack(">H", body[:2])[0] == INFO_EXPORT:
                    self.size, self.flags = struct.unpack(">QH", body[2:12])
            elif kind == REP_ACK:
                break
            else:
                raise AssertionError(f"NBD_OPT_GO refused: reply type {kind:#x} {body!r}")

    def recv(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            if not chunk:
                raise ConnectionError(f"closed after {len(out)} of {n} bytes")
            out += chunk
        return out

    def u16(self) -> int:
        return struct.unpack(">H", self.recv(2))[0]

    def u64(self) -> int:
        return struct.unpack(">Q", self.recv(8))[0]

    def send(self, kind: int, offset: int, length: int, data: bytes = b"", flags: int = 0) -> int:
        self.cookie += 1
        self.s.sendall(struct.pack(">IHHQQI", REQUEST_MAGIC, flags, kind, self.cookie, offset, length) + data)
        return self.cookie

    def reply(self) -> tuple[int, int]:
        """A simple reply's (error, cookie)."""
        magic, error, cookie = struct.unpack(">IIQ", self.recv(16))
        assert magic == SIMPLE_REPLY_MAGIC, hex(magic)
        return error, cookie

    def request(self, kind: int, offset: int, length: int, data: bytes = b"", flags: int = 0) -> tuple[int, bytes]:
        cookie = self.send(kind, offset, length, data, flags)
        error, got = self.reply()
        assert got == cookie
        payload = self.recv(length) if kind == CMD_READ and error == 0 else b""
        return error, payload

    def read(self, offset: int, length: int) -> bytes:
        error, data = self.request(CMD_READ, offset, length)
        assert error == 0, f"read {offset}+{length}: error {error}"
        return data

    def write(self, offset: int, data: bytes) -> None:
        error, _ = self.request(CMD_WRITE, offset, len(data), data)
        assert error == 0, f"write {offset}+{len(data)}: error {error}"

    def disconnect(self) -> None:
        self.send(CMD_DISC, 0, 0)
        # The server closes once what came before is served.
        assert self.s.recv(1) == b""
        self.s.close()

    def close(self) -> None:
        self.s.close()
