"""A block device's queue settings in sysfs: read, write, snapshot, restore.

Everything iolab changes on a device goes through :func:`write_attr`, and
:func:`snapshot` / :func:`restore` bracket a session: the snapshot holds the
scheduler, every writable tunable of that scheduler (``queue/iosched/*``) and
the queue settings in :data:`QUEUE_ATTRS`.

Facts this module relies on (Linux 5.x and 6.x):

- ``queue/scheduler`` lists the offered schedulers with the active one in
  brackets; writing a name switches, and switching resets the scheduler's
  tunables to their defaults and may change ``nr_requests``;
- BFQ turns writeback throttling off (``wbt_lat_usec`` 0) while it runs;
- a partition has no queue of its own: schedulers are set on the whole disk.
"""

from __future__ import annotations

import os
import platform
import stat
from dataclasses import dataclass, field
from pathlib import Path

from iolab.cli.errors import UserError

SYS_BLOCK = Path("/sys/block")
SYS_DEV_BLOCK = Path("/sys/dev/block")

# Queue settings iolab may change (through `--tunables queue.NAME=...`), and
# therefore snapshots and restores. `rotational` is recorded, never written.
QUEUE_ATTRS = (
    "nr_requests",
    "wbt_lat_usec",
    "read_ahead_kb",
    "max_sectors_kb",
    "nomerges",
    "rq_affinity",
)
RECORDED_ATTRS = QUEUE_ATTRS + ("rotational", "logical_block_size")


class SysfsError(UserError):
    """The kernel refused a setting, or a device is not what it should be."""


@dataclass(frozen=True)
class BlockDevice:
    """A whole block device that has a request queue.

    ``name`` is the kernel's name (``loop3``), ``path`` the device node the
    user named, ``devno`` ``major:minor``.
    """

    name: str
    path: str
    devno: str

    @property
    def sysdir(self) -> Path:
        return SYS_BLOCK / self.name

    @property
    def queue(self) -> Path:
        return self.sysdir / "queue"

    def to_json(self) -> dict:
        return {"name": self.name, "path": self.path, "devno": self.devno}

    @classmethod
    def from_json(cls, data: dict) -> "BlockDevice":
        return cls(data["name"], data["path"], data["devno"])


def resolve(path: str) -> BlockDevice:
    """The whole-disk device behind ``path``; refuses partitions and non-devices."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise UserError(f"{path}: {e.strerror}") from None
    if not stat.S_ISBLK(st.st_mode):
        raise UserError(f"{path} is not a block device")
    devno = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    real = (SYS_DEV_BLOCK / devno).resolve()
    name = real.name
    if (real / "partition").exists():
        parent = real.parent.name
        raise UserError(
            f"{path} is a partition of /dev/{parent}; a partition has no I/O scheduler "
            f"of its own: name the whole disk (--device /dev/{parent}) if you mean it"
        )
    return BlockDevice(name=name, path=path, devno=devno)


def identity(dev: BlockDevice) -> dict:
    """What tells this device from another that later gets the same name."""
    ident = {"devno": read_sys(dev.sysdir / "dev") or dev.devno}
    backing = read_sys(dev.sysdir / "loop" / "backing_file")
    if backing is not None:
        ident["backing_file"] = backing
    for key in ("model", "serial", "wwid"):
        value = read_sys(dev.sysdir / "device" / key)
        if value:
            ident[key] = value
    return ident


def read_sys(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def read_attr(dev: BlockDevice, name: str) -> str | None:
    """A file of ``queue/`` (``None`` when the kernel does not have it)."""
    return read_sys(dev.queue / name)


def write_attr(path: Path, value: str, what: str) -> None:
    """Writes one sysfs file; the kernel's refusal becomes a :class:`SysfsError`."""
    try:
        with open(path, "w") as f:
            f.write(f"{value}\n")
    except OSError as e:
        raise SysfsError(f"cannot set {what} to {value!r}: {e.strerror}") from None


def schedulers(dev: BlockDevice) -> tuple[list[str], str | None]:
    """The schedulers the device offers, and the active one."""
    text = read_attr(dev, "scheduler")
    if text is None:
        return [], None
    names, active = [], None
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            word = word[1:-1]
            active = word
        names.append(word)
    return names, active


def set_scheduler(dev: BlockDevice, name: str) -> None:
    """Switches the scheduler and checks the bracketed entry (as BFQ's suite does)."""
    write_attr(dev.queue / "scheduler", name, f"{dev.name} scheduler")
    _, active = schedulers(dev)
    if active != name:
        raise SysfsError(f"{dev.name}: asked for scheduler {name}, the kernel runs {active}")


def tunables(dev: BlockDevice) -> dict[str, str]:
    """The active scheduler's writable tunables (``queue/iosched``), sorted by name."""
    out = {}
    iosched = dev.queue / "iosched"
    if not iosched.is_dir():
        return out
    for path in sorted(iosched.iterdir()):
        try:
            writable = path.stat().st_mode & stat.S_IWUSR
        except OSError:
            continue
        value = read_sys(path)
        if writable and value is not None:
            out[path.name] = value
    return out


def set_tunable(dev: BlockDevice, name: str, value: str) -> str:
    """Sets ``queue/iosched/NAME`` and returns what the kernel reads back."""
    path = dev.queue / "iosched" / name
    if not path.exists():
        _, active = schedulers(dev)
        have = ", ".join(tunables(dev)) or "none"
        raise SysfsError(f"{active} on {dev.name} has no tunable {name!r} (it has: {have})")
    write_attr(path, value, f"{dev.name} iosched/{name}")
    return read_sys(path) or ""


def set_queue_attr(dev: BlockDevice, name: str, value: str) -> str:
    """Sets ``queue/NAME`` (one of :data:`QUEUE_ATTRS`) and returns the value read back."""
    if name not in QUEUE_ATTRS:
        raise SysfsError(f"iolab does not change queue/{name}; it changes: {', '.join(QUEUE_ATTRS)}")
    write_attr(dev.queue / name, value, f"{dev.name} queue/{name}")
    return read_attr(dev, name) or ""


@dataclass
class QueueState:
    """Everything iolab may change on a device, as the kernel reported it."""

    scheduler: str | None
    iosched: dict[str, str] = field(default_factory=dict)
    queue: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"scheduler": self.scheduler, "iosched": self.iosched, "queue": self.queue}

    @classmethod
    def from_json(cls, data: dict) -> "QueueState":
        return cls(data.get("scheduler"), dict(data.get("iosched", {})), dict(data.get("queue", {})))


def snapshot(dev: BlockDevice) -> QueueState:
    _, active = schedulers(dev)
    queue = {}
    for name in QUEUE_ATTRS:
        value = read_attr(dev, name)
        if value is not None:
            queue[name] = value
    return QueueState(scheduler=active, iosched=tunables(dev), queue=queue)


def settings(dev: BlockDevice) -> dict[str, str]:
    """The settings recorded with every run: scheduler, its tunables, queue attributes."""
    _, active = schedulers(dev)
    out = {"scheduler": active or ""}
    for name in RECORDED_ATTRS:
        value = read_attr(dev, name)
        if value is not None:
            out[name] = value
    for name, value in tunables(dev).items():
        out[f"iosched.{name}"] = value
    return out


def restore(dev: BlockDevice, state: QueueState) -> list[str]:
    """Puts ``state`` back; returns what could not be restored (empty when all is well).

    The scheduler goes first (a switch resets its tunables), then each tunable
    and queue setting whose value differs. Aliases such as BFQ's
    ``slice_idle``/``slice_idle_us`` are handled by writing only what still
    differs when its turn comes.
    """
    problems = []
    if state.scheduler:
        _, active = schedulers(dev)
        if active != state.scheduler:
            try:
                set_scheduler(dev, state.scheduler)
            except SysfsError as e:
                return [str(e)]
    for name, value in state.iosched.items():
        path = dev.queue / "iosched" / name
        if read_sys(path) != value:
            try:
                write_attr(path, value, f"{dev.name} iosched/{name}")
            except SysfsError as e:
                problems.append(str(e))
    for name, value in state.queue.items():
        if read_attr(dev, name) != value:
            try:
                write_attr(dev.queue / name, value, f"{dev.name} queue/{name}")
            except SysfsError as e:
                problems.append(str(e))
    after = snapshot(dev)
    if state.scheduler and after.scheduler != state.scheduler:
        problems.append(f"{dev.name} scheduler is {after.scheduler}, was {state.scheduler}")
    for group, want, have in (("iosched", state.iosched, after.iosched), ("queue", state.queue, after.queue)):
        for name, value in want.items():
            if have.get(name) != value:
                problems.append(f"{dev.name} {group}/{name} is {have.get(name)!r}, was {value!r}")
    return problems


def describe(dev: BlockDevice) -> dict[str, str]:
    """Facts about the device and machine that go into every record."""
    facts = {
        "device": dev.path,
        "kernel": platform.release(),
        "model": device_model(dev),
    }
    facts["size_bytes"] = str(size_bytes(dev))
    return facts


def device_model(dev: BlockDevice) -> str:
    """Vendor and model from sysfs; for a loop device, what it is backed by."""
    backing = read_sys(dev.sysdir / "loop" / "backing_file")
    if backing is not None:
        dio = read_sys(dev.sysdir / "loop" / "dio")
        return f"loop over {backing} (direct I/O {'on' if dio == '1' else 'off'})"
    parts = [read_sys(dev.sysdir / "device" / key) for key in ("vendor", "model")]
    words = [p for p in parts if p]
    if words:
        return " ".join(words)
    driver = (dev.sysdir / "device" / "driver")
    if driver.exists():
        return f"{driver.resolve().name} device"
    return "unknown"


def size_bytes(dev: BlockDevice) -> int:
    sectors = read_sys(dev.sysdir / "size")
    return int(sectors) * 512 if sectors and sectors.isdigit() else 0
