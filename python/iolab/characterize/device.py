"""What `iolab characterize` measures: a device it only ever reads.

:func:`open_device` takes a block device, an image file or an NBD address
and gives a :class:`Device`: ``read(lbn, sectors)`` returns the monotonic
time (ns) at which the read completed, as the host saw it. Block devices and
files are opened ``O_RDONLY | O_DIRECT`` (so the page cache is not in the
way) and nothing opens them for writing; an NBD export is read with
iolab's own client (:mod:`iolab.characterize.nbd`), which sends reads only.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import stat
import struct
import threading
import time
from dataclasses import dataclass

from iolab.characterize.nbd import NbdClient, NbdError

SECTOR = 512
BLKGETSIZE64 = 0x80081272
BLKSSZGET = 0x1268
MAX_BYTES = 8 << 20  # the largest read a probe makes


class DeviceError(Exception):
    """The device cannot be opened read-only, or a read failed."""


@dataclass
class Device:
    """A device under measurement. ``sectors`` of 512 bytes; ``rotational``
    is what the device says of itself (sysfs, or NBD's ROTATIONAL flag),
    which virtual disks often get wrong: the measurements decide."""

    name: str
    sectors: int
    rotational: bool | None
    kind: str  # "block", "file", "nbd"
    reads: int = 0
    sectors_read: int = 0
    _nbd: NbdClient | None = None
    _fd: int = -1
    _buf: mmap.mmap | None = None

    def now_ns(self) -> int:
        """The host's clock, in which replies are stamped."""
        return time.monotonic_ns()

    def advance_to(self, t_ns: int) -> None:
        """Wait until ``t_ns`` (spinning: a sleep wakes tens of us late)."""
        while time.monotonic_ns() < t_ns:
            pass

    def _count(self, lbn: int, count: int) -> None:
        """Refuse a read outside the device; count one inside it."""
        if lbn < 0 or count < 1 or lbn + count > self.sectors:
            raise DeviceError(f"{self.name}: read of {count} sector(s) at {lbn} is outside the device "
                              f"({self.sectors} sectors)")
        self.reads += 1
        self.sectors_read += count

    def read(self, lbn: int, count: int = 1) -> int:
        """Read ``count`` sectors at ``lbn``; the monotonic ns it completed."""
        self._count(lbn, count)
        if self._nbd is not None:
            try:
                return self._nbd.read(lbn * SECTOR, count * SECTOR)
            except (NbdError, OSError) as e:
                raise DeviceError(str(e)) from None
        assert self._buf is not None
        try:
            n = os.preadv(self._fd, [memoryview(self._buf)[: count * SECTOR]], lbn * SECTOR)
        except OSError as e:
            raise DeviceError(f"{self.name}: read of {count} sector(s) at {lbn}: {e.strerror}") from None
        t = time.monotonic_ns()
        if n != count * SECTOR:
            raise DeviceError(f"{self.name}: short read at sector {lbn} ({n} of {count * SECTOR} bytes)")
        return t

    def host_round_trip_ns(self) -> float | None:
        """The median cost of a request that reaches no disk: a zero-length
        NBD read (refused at once); None for block devices and files,
        whose system call costs a few microseconds."""
        if self._nbd is None:
            return None
        samples = sorted(self._nbd.null_round_trip() for _ in range(41))
        return float(samples[len(samples) // 2])

    def parallel_reads(self, offsets: list[int], count: int, depth: int) -> list[int]:
        """Read ``count`` sectors at each of ``offsets`` (sector numbers) with
        ``depth`` in flight at once; each read's latency in ns."""
        if self._nbd is not None:
            return self._nbd_parallel(offsets, count, depth)
        return self._threads_parallel(offsets, count, depth)

    def _nbd_parallel(self, offsets: list[int], count: int, depth: int) -> list[int]:
        nbd = self._nbd
        assert nbd is not None
        sent: dict[int, int] = {}
        lat: list[int] = []
        it = iter(offsets)
        inflight = 0
        for _ in range(depth):
            lbn = next(it, None)
            if lbn is None:
                break
            sent[nbd.send_read(lbn * SECTOR, count * SECTOR)] = time.monotonic_ns()
            inflight += 1
        while inflight:
            err, cookie = nbd.recv_reply(count * SECTOR)
            now = time.monotonic_ns()
            if err:
                raise DeviceError(f"{self.name}: a read failed (NBD error {err})")
            lat.append(now - sent.pop(cookie))
            inflight -= 1
            lbn = next(it, None)
            if lbn is not None:
                sent[nbd.send_read(lbn * SECTOR, count * SECTOR)] = time.monotonic_ns()
                inflight += 1
        self.reads += len(offsets)
        return lat

    def _threads_parallel(self, offsets: list[int], count: int, depth: int) -> list[int]:
        lock = threading.Lock()
        todo = list(offsets)
        lat: list[int] = []
        errors: list[str] = []

        def worker() -> None:
            buf = mmap.mmap(-1, max(count * SECTOR, mmap.PAGESIZE))
            try:
                while True:
                    with lock:
                        if not todo or errors:
                            return
                        lbn = todo.pop()
                    t0 = time.monotonic_ns()
                    try:
                        os.preadv(self._fd, [memoryview(buf)[: count * SECTOR]], lbn * SECTOR)
                    except OSError as e:
                        with lock:
                            errors.append(f"{self.name}: read at sector {lbn}: {e.strerror}")
                        return
                    dt = time.monotonic_ns() - t0
                    with lock:
                        lat.append(dt)
            finally:
                buf.close()

        threads = [threading.Thread(target=worker, daemon=True) for _ in range(depth)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise DeviceError(errors[0])
        self.reads += len(offsets)
        return lat

    def close(self) -> None:
        if self._nbd is not None:
            self._nbd.close()
            self._nbd = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._buf is not None:
            self._buf.close()
            self._buf = None

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _sysfs_rotational(st: os.stat_result) -> bool | None:
    major, minor = os.major(st.st_rdev), os.minor(st.st_rdev)
    base = f"/sys/dev/block/{major}:{minor}"
    for path in (f"{base}/queue/rotational", f"{base}/../queue/rotational"):
        try:
            with open(path) as f:
                return f.read().strip() == "1"
        except OSError:
            continue
    return None


def open_device(target: str) -> Device:
    """Open ``target`` for timed reads: ``nbd://HOST:PORT``,
    ``nbd+unix:///?socket=PATH``, a block device or an image file."""
    if target.startswith(("nbd://", "nbd+unix://")):
        try:
            nbd = NbdClient(target)
        except NbdError as e:
            raise DeviceError(str(e)) from None
        assert nbd.size is not None
        if nbd.size < 64 * SECTOR:
            nbd.close()
            raise DeviceError(f"{target}: the export has {nbd.size} bytes; too small to characterize")
        return Device(name=target, sectors=nbd.size // SECTOR, rotational=nbd.rotational, kind="nbd", _nbd=nbd)
    try:
        st = os.stat(target)
    except OSError as e:
        raise DeviceError(f"{target}: {e.strerror}") from None
    is_block = stat.S_ISBLK(st.st_mode)
    if not (is_block or stat.S_ISREG(st.st_mode)):
        raise DeviceError(f"{target}: neither a block device, an image file nor an NBD address")
    try:
        fd = os.open(target, os.O_RDONLY | os.O_DIRECT)
    except OSError as e:
        raise DeviceError(f"{target}: cannot open it read-only with O_DIRECT: {e.strerror} "
                          "(characterize only reads; run as a user who may read the device)") from None
    try:
        if is_block:
            size = struct.unpack("Q", fcntl.ioctl(fd, BLKGETSIZE64, b"\0" * 8))[0]
            lbs = struct.unpack("i", fcntl.ioctl(fd, BLKSSZGET, b"\0" * 4))[0]
        else:
            size, lbs = st.st_size, SECTOR
        if size < 64 * SECTOR:
            raise DeviceError(f"{target}: {size} bytes; too small to characterize")
        if lbs != SECTOR:
            # A 4 KiB-sector device refuses 512-byte O_DIRECT reads.
            raise DeviceError(f"{target}: logical block size {lbs} bytes; only 512-byte devices are measured")
        buf = mmap.mmap(-1, MAX_BYTES)  # page-aligned, as O_DIRECT wants
        dev = Device(name=target, sectors=size // SECTOR, rotational=_sysfs_rotational(st) if is_block else None,
                     kind="block" if is_block else "file", _fd=fd, _buf=buf)
        # One read to learn now whether O_DIRECT reads work here (tmpfs refuses them).
        try:
            dev.read(0, 1)
        except DeviceError:
            buf.close()
            raise
        return dev
    except DeviceError:
        os.close(fd)
        raise
    except OSError as e:
        os.close(fd)
        raise DeviceError(f"{target}: {e.strerror}") from None
