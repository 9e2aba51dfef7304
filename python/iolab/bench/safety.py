"""Checks made before iolab touches a device.

- root: switching a scheduler is a write to sysfs, which only root may do;
- a scheduler choice: bio-based devices (dm-crypt, LVM, md) and some
  virtual ones show no scheduler, or only ``none``;
- data: a workload that writes is refused on a device that is mounted,
  used as swap or by another block device (dm, md), whatever the options;
  and on a device that holds a file system, a partition table or any other
  signature ``blkid`` knows, unless ``--destroy-data`` is given. Read-only
  workloads are allowed everywhere.

Nothing here writes; :func:`inspect` only reads ``/proc`` and ``/sys`` and
runs ``blkid -p`` (a read-only probe).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from iolab.bench import sysfs
from iolab.cli.errors import UserError


def require_root() -> None:
    if os.geteuid() != 0:
        raise UserError(
            "iolab bench needs root: it switches schedulers in /sys/block/DEV/queue "
            "and drops the page cache (run it with sudo)"
        )


def require_scheduler_choice(dev: sysfs.BlockDevice) -> list[str]:
    """The schedulers ``dev`` offers; refuses a device with no choice."""
    names, active = sysfs.schedulers(dev)
    if len(names) < 2:
        shown = " ".join(names) or "no scheduler file"
        raise UserError(
            f"{dev.path} offers no choice of I/O scheduler ({shown}); device-mapper, md "
            f"and other bio-based devices schedule nothing: benchmark the disk under them"
        )
    return names


@dataclass
class Occupancy:
    """What a device holds or is used by."""

    mounts: list[str] = field(default_factory=list)
    swap: list[str] = field(default_factory=list)
    holders: list[str] = field(default_factory=list)
    partitions: list[str] = field(default_factory=list)
    signatures: list[str] = field(default_factory=list)

    def in_use(self) -> list[str]:
        """Reasons no write may ever go to the device."""
        reasons = [f"mounted on {m}" for m in self.mounts]
        reasons += [f"used as swap ({s})" for s in self.swap]
        reasons += [f"held by {h}" for h in self.holders]
        return reasons

    def holds_data(self) -> list[str]:
        """Reasons a write would destroy something."""
        reasons = [f"partition {p}" for p in self.partitions]
        reasons += self.signatures
        return reasons


def _devnos(dev: sysfs.BlockDevice) -> dict[str, str]:
    """``major:minor`` -> name, for the device and each of its partitions."""
    found = {dev.devno: dev.name}
    for child in sorted(dev.sysdir.iterdir()) if dev.sysdir.is_dir() else []:
        if (child / "partition").exists():
            devno = sysfs.read_sys(child / "dev")
            if devno:
                found[devno] = child.name
    return found


def inspect(dev: sysfs.BlockDevice) -> Occupancy:
    occ = Occupancy()
    devnos = _devnos(dev)
    occ.partitions = [name for devno, name in devnos.items() if devno != dev.devno]
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        mountinfo = []
    for line in mountinfo:
        fields = line.split()
        if len(fields) > 4 and fields[2] in devnos:
            occ.mounts.append(f"{fields[4]} (/dev/{devnos[fields[2]]})")
    try:
        swaps = Path("/proc/swaps").read_text().splitlines()[1:]
    except OSError:
        swaps = []
    for line in swaps:
        path = line.split()[0] if line.split() else ""
        try:
            st = os.stat(path)
        except OSError:
            continue
        if f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}" in devnos:
            occ.swap.append(path)
    for name in devnos.values():
        base = dev.sysdir if name == dev.name else dev.sysdir / name
        holders = base / "holders"
        if holders.is_dir():
            occ.holders += sorted(h.name for h in holders.iterdir())
    occ.signatures = probe_signatures(dev.path)
    return occ


def probe_signatures(path: str) -> list[str]:
    """What ``blkid -p`` finds on the device: file systems, partition tables, RAID members."""
    try:
        proc = subprocess.run(
            ["blkid", "-p", "-o", "export", path], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        return ["unknown content (blkid is not installed to check it)"]
    if proc.returncode == 2:  # nothing found
        return []
    if proc.returncode != 0:
        return [f"unknown content (blkid -p failed: {proc.stderr.strip() or proc.returncode})"]
    values = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    found = []
    if "TYPE" in values:
        found.append(f"{values['TYPE']} ({values.get('USAGE', 'data')})")
    if "PTTYPE" in values:
        found.append(f"a {values['PTTYPE']} partition table")
    return found or ["a signature blkid reports: " + ", ".join(sorted(values))]


def check_writes(dev: sysfs.BlockDevice, workload: str, destroy_data: bool,
                 occ: Occupancy | None = None) -> Occupancy:
    """Refuses a writing workload on ``dev`` unless it is safe or the user said so."""
    occ = occ or inspect(dev)
    busy = occ.in_use()
    if busy:
        raise UserError(
            f"refusing to run {workload} (it writes) on {dev.path}: it is "
            f"{'; '.join(busy)}; iolab never writes to a device in use, even with --destroy-data"
        )
    data = occ.holds_data()
    if data and not destroy_data:
        raise UserError(
            f"refusing to run {workload} (it writes) on {dev.path}: it holds "
            f"{'; '.join(data)}; add --destroy-data to overwrite it, or choose a read-only workload"
        )
    return occ
