"""A read-only NBD client: the fixed newstyle handshake, NBD_OPT_GO, and
NBD_CMD_READ with simple replies -- enough to time reads on an NBD export
(`iolab emu`, nbdkit, qemu-nbd) with no kernel or guest in the way.

Written from the protocol document (NetworkBlockDevice/nbd doc/proto.md):
the client never sends a write, trim, write-zeroes or flush. One request is
in flight at a time unless the caller pipelines with :meth:`send_read` and
:meth:`recv_reply` (the queue-depth probes do).
"""

from __future__ import annotations

import socket
import struct
import time
from urllib.parse import parse_qs, urlparse

NBDMAGIC = b"NBDMAGIC"
IHAVEOPT = 0x49484156454F5054
OPT_REPLY_MAGIC = 0x3E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_REPLY_MAGIC = 0x67446698

FLAG_FIXED_NEWSTYLE = 1 << 0  # server handshake flag
FLAG_NO_ZEROES = 1 << 1
CLIENT_FIXED_NEWSTYLE = 1 << 0
CLIENT_NO_ZEROES = 1 << 1

OPT_GO = 7
REP_ACK = 1
REP_INFO = 3
REP_ERR_BIT = 1 << 31
INFO_EXPORT = 0
INFO_BLOCK_SIZE = 3

TFLAG_READ_ONLY = 1 << 1
TFLAG_ROTATIONAL = 1 << 4

CMD_READ = 0
CMD_DISC = 2
MAX_READ = 32 << 20


class NbdError(Exception):
    """The server refused the handshake or a request, or broke the protocol."""


def parse_url(url: str) -> tuple[str, object]:
    """``nbd://host:port[/name]`` -> ("tcp", (host, port)); ``nbd+unix:///?socket=PATH``
    (or ``nbd+unix://PATH``) -> ("unix", PATH)."""
    u = urlparse(url)
    if u.scheme == "nbd":
        if not u.hostname:
            raise NbdError(f"{url}: no host (expected nbd://HOST:PORT)")
        try:
            port = u.port or 10809
        except ValueError:
            raise NbdError(f"{url}: the port is not a number in 0..65535") from None
        return "tcp", (u.hostname, port)
    if u.scheme == "nbd+unix":
        sock = parse_qs(u.query).get("socket", [None])[0] or (u.netloc + u.path if u.netloc else None)
        if not sock:
            raise NbdError(f"{url}: no socket (expected nbd+unix:///?socket=PATH)")
        return "unix", sock
    raise NbdError(f"{url}: not an NBD address (nbd://HOST:PORT or nbd+unix:///?socket=PATH)")


class NbdClient:
    """One connection, after NBD_OPT_GO; ``size`` in bytes, ``flags`` the
    transmission flags, ``block_min``/``block_pref`` from NBD_INFO_BLOCK_SIZE."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        self.url = url
        kind, addr = parse_url(url)
        family = socket.AF_UNIX if kind == "unix" else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(addr)  # type: ignore[arg-type]
            if family == socket.AF_INET:
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._handshake()
        except NbdError:
            self.sock.close()
            raise
        except (OSError, struct.error) as e:
            self.sock.close()
            raise NbdError(f"{url}: {e.strerror if isinstance(e, OSError) and e.strerror else e}") from None
        self.cookie = 0

    # -- handshake -----------------------------------------------------------
    def _recv(self, n: int) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self.sock.recv_into(view[got:])
            if k == 0:
                raise NbdError(f"{self.url}: the server closed the connection ({got} of {n} bytes)")
            got += k
        return bytes(buf)

    def _handshake(self) -> None:
        if self._recv(8) != NBDMAGIC:
            raise NbdError(f"{self.url}: not an NBD server (no NBDMAGIC)")
        if struct.unpack(">Q", self._recv(8))[0] != IHAVEOPT:
            raise NbdError(f"{self.url}: an oldstyle NBD server; only the fixed newstyle handshake is spoken")
        (hflags,) = struct.unpack(">H", self._recv(2))
        if not hflags & FLAG_FIXED_NEWSTYLE:
            raise NbdError(f"{self.url}: the server does not offer the fixed newstyle handshake")
        cflags = CLIENT_FIXED_NEWSTYLE | (CLIENT_NO_ZEROES if hflags & FLAG_NO_ZEROES else 0)
        self.sock.sendall(struct.pack(">I", cflags))
        # NBD_OPT_GO: export name "" (the default export), ask for the block sizes.
        data = struct.pack(">I", 0) + struct.pack(">HH", 1, INFO_BLOCK_SIZE)
        self.sock.sendall(struct.pack(">QII", IHAVEOPT, OPT_GO, len(data)) + data)
        self.size: int | None = None
        self.flags = 0
        self.block_min = 1
        self.block_pref = 4096
        while True:
            magic, _opt, kind, length = struct.unpack(">QIII", self._recv(20))
            if magic != OPT_REPLY_MAGIC:
                raise NbdError(f"{self.url}: bad option reply magic {magic:#x}")
            if length > 1 << 20:
                raise NbdError(f"{self.url}: option reply of {length} bytes")
            body = self._recv(length)
            if kind & REP_ERR_BIT:
                msg = body[:200].decode("utf-8", "replace")
                raise NbdError(f"{self.url}: NBD_OPT_GO refused (error {kind & 0x7FFFFFFF}{': ' + msg if msg else ''})")
            if kind == REP_INFO and len(body) >= 2:
                (info,) = struct.unpack(">H", body[:2])
                if info == INFO_EXPORT and len(body) >= 12:
                    self.size, self.flags = struct.unpack(">QH", body[2:12])
                elif info == INFO_BLOCK_SIZE and len(body) >= 14:
                    self.block_min, self.block_pref, _max = struct.unpack(">III", body[2:14])
            elif kind == REP_ACK:
                break
        if self.size is None:
            raise NbdError(f"{self.url}: the server gave no export size")

    @property
    def rotational(self) -> bool:
        return bool(self.flags & TFLAG_ROTATIONAL)

    # -- transmission --------------------------------------------------------
    def send_read(self, offset: int, length: int) -> int:
        """Send a READ; returns its cookie."""
        self.cookie += 1
        self.sock.sendall(struct.pack(">IHHQQI", REQUEST_MAGIC, 0, CMD_READ, self.cookie, offset, length))
        return self.cookie

    def recv_reply(self, length: int) -> tuple[int, int]:
        """A simple reply: (error, cookie); the payload of a successful read
        of ``length`` bytes is read and dropped."""
        magic, error, cookie = struct.unpack(">IIQ", self._recv(16))
        if magic != SIMPLE_REPLY_MAGIC:
            raise NbdError(f"{self.url}: bad reply magic {magic:#x}")
        if error == 0 and length:
            self._recv(length)
        return error, cookie

    def read(self, offset: int, length: int) -> int:
        """A timed read: returns the monotonic ns at which its reply arrived."""
        self.send_read(offset, length)
        error, _ = self.recv_reply(length)
        t = time.monotonic_ns()
        if error:
            raise NbdError(f"{self.url}: read of {length} bytes at {offset} failed (NBD error {error})")
        return t

    def null_round_trip(self) -> int:
        """A zero-length READ, which the protocol says a server refuses
        (EINVAL) without touching the disk: the round trip's cost in ns."""
        t0 = time.monotonic_ns()
        self.send_read(0, 0)
        self.recv_reply(0)
        return time.monotonic_ns() - t0

    def close(self) -> None:
        try:
            self.cookie += 1
            self.sock.sendall(struct.pack(">IHHQQI", REQUEST_MAGIC, 0, CMD_DISC, self.cookie, 0, 0))
        except OSError:
            pass
        self.sock.close()
