"""The disk the benchmark's queues live on: a fresh ext4 on a file-backed
loop device (direct I/O to its backing file), so that the bytes every
system writes, file-system metadata and journal included, can be read off
the device's own counter (/sys/block/loopN/stat, sectors written) with no
other process's writes mixed in. /proc/PID/io ``write_bytes`` is no help
here: it is charged when a page-cache folio turns dirty, whole folio at a
time, so a 1-byte write into a large folio counts as up to megabytes
(seen: 144 kB "written" per 1 kB message by FastQueue, whose own count
was 1.35 kB).

Reuses the real-kernel bench's loop sandbox steps (iolab.bench.sandbox)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from iolab.bench import sandbox

SIZE = 3 * 2**30


class LoopDisk:
    def __init__(self, base: str, size: int = SIZE):
        self.backing = Path(base) / "mail-bench-disk.img"
        self.mnt = Path(base) / "mnt"
        self.device = ""
        sandbox.create_backing_file(self.backing, size)
        try:
            # Write every block once: the backing file's holes would
            # otherwise be allocated (host metadata) during the runs.
            chunk = b"\0" * (8 << 20)
            with open(self.backing, "r+b") as f:
                f.writelines(chunk for _ in range(size // len(chunk)))
                f.flush()
                os.fsync(f.fileno())
            self.device = sandbox.attach(self.backing)
            sandbox.make_fs(self.device)
            sandbox.mount(self.device, self.mnt)
            os.chmod(self.mnt, 0o755)  # Postfix's daemons run as user postfix
        except BaseException:
            self.close()
            raise

    def sectors_written(self) -> int:
        """Sectors written to the device so far, after a sync of everything
        dirty (so that journal commits and metadata are counted)."""
        os.sync()
        stat = (Path("/sys/block") / os.path.basename(self.device) / "stat").read_text().split()
        return int(stat[6])

    def close(self) -> None:
        if self.device:
            for attempt in range(20):  # a stopping daemon may still hold a file
                try:
                    sandbox.unmount(self.device, self.mnt)
                    break
                except Exception:
                    if attempt == 19:
                        raise
                    time.sleep(0.5)
            sandbox.detach(self.device, self.backing)
            self.device = ""
        try:
            self.backing.unlink()
        except OSError:
            pass
