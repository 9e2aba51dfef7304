"""The session's state file: what a bench changed, so it can always be undone.

A session writes ``<state dir>/bench-<pid>.json`` before it changes anything
and updates it before each further change (backing file, loop device,
original queue settings, mount). The same :func:`undo` puts things back at
the end of a session, after Ctrl-C or an error, and -- when the process was
killed or the machine's Python crashed -- from ``iolab bench --restore``.

The state directory is ``/run/iolab/bench`` (a tmpfs: after a reboot there is
nothing left to restore), or ``$IOLAB_STATE_DIR``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from iolab.bench import sandbox, sysfs
from iolab.cli.errors import UserError

STATE_DIR_ENV = "IOLAB_STATE_DIR"
DEFAULT_STATE_DIR = Path("/run/iolab/bench")
VERSION = 1


def state_dir() -> Path:
    return Path(os.environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR)


class Journal:
    """One session's state file."""

    def __init__(self, path: Path, data: dict):
        self.path = path
        self.data = data

    @classmethod
    def begin(cls, directory: Path | None = None) -> "Journal":
        directory = directory or state_dir()
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"bench-{os.getpid()}.json"
        data = {
            "version": VERSION,
            "pid": os.getpid(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "device": None,
            "identity": None,
            "queue": None,
            "loop": None,
            "mount": None,
        }
        journal = cls(path, data)
        journal.save()
        return journal

    def record(self, **fields) -> None:
        self.data.update(fields)
        self.save()

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def finish(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


def pending(directory: Path | None = None) -> list[Path]:
    directory = directory or state_dir()
    if not directory.is_dir():
        return []
    return sorted(directory.glob("bench-*.json"))


def load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read state file {path}: {e}") from None
    if data.get("version") != VERSION:
        raise UserError(f"state file {path} has version {data.get('version')}, expected {VERSION}")
    return data


def alive(pid: int) -> bool:
    """True if ``pid`` is a running iolab (not merely a process that reused the id)."""
    if pid == os.getpid():
        return True
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"iolab" in cmdline


def claimed(devno: str, directory: Path | None = None) -> Path | None:
    """The state file of another session that holds device ``devno``, if any."""
    for path in pending(directory):
        try:
            data = load(path)
        except UserError:
            continue
        device = data.get("device") or {}
        if device.get("devno") == devno and data.get("pid") != os.getpid():
            return path
    return None


def undo(data: dict) -> tuple[list[str], list[str]]:
    """Undoes what ``data`` records, in reverse order of doing it.

    Returns ``(done, problems)``: one line per action taken, and one per
    thing that could not be restored.
    """
    done: list[str] = []
    problems: list[str] = []
    mount = data.get("mount")
    if mount:
        try:
            if sandbox.unmount(mount["device"], Path(mount["dir"])):
                done.append(f"unmounted {mount['dir']}")
        except UserError as e:
            problems.append(str(e))
    device = data.get("device")
    if device and data.get("queue"):
        dev = sysfs.BlockDevice.from_json(device)
        if not dev.sysdir.exists():
            done.append(f"{dev.path} is gone; nothing to restore on it")
        elif sysfs.identity(dev) != data.get("identity"):
            problems.append(
                f"{dev.path} is no longer the device the bench changed "
                f"(was {data.get('identity')}, now {sysfs.identity(dev)}); left as it is"
            )
        else:
            state = sysfs.QueueState.from_json(data["queue"])
            failed = sysfs.restore(dev, state)
            problems.extend(failed)
            if not failed:
                done.append(f"restored {dev.path}: scheduler {state.scheduler}, "
                            f"{len(state.iosched)} tunables, {len(state.queue)} queue settings")
    loop = data.get("loop")
    if loop:
        backing = Path(loop["backing_file"])
        if loop.get("device"):
            try:
                if sandbox.detach(loop["device"], backing):
                    done.append(f"detached {loop['device']}")
            except UserError as e:
                problems.append(str(e))
        if backing.exists():
            still = loop.get("device") and sandbox.loop_backing_file(loop["device"])
            if still and os.path.realpath(still) == os.path.realpath(backing):
                problems.append(f"{backing} is still attached to {loop['device']}; not removed")
            else:
                backing.unlink()
                done.append(f"removed {backing}")
    return done, problems


def restore_pending(directory: Path | None = None) -> tuple[list[str], list[str]]:
    """``iolab bench --restore``: undoes every session that did not finish."""
    done: list[str] = []
    problems: list[str] = []
    for path in pending(directory):
        data = load(path)
        pid = int(data.get("pid", 0))
        if alive(pid):
            problems.append(f"bench process {pid} is still running ({path}); stop it and it restores itself")
            continue
        did, failed = undo(data)
        done.extend(did)
        problems.extend(failed)
        if not failed:
            path.unlink()
            done.append(f"removed state file {path}")
    return done, problems
