"""The FastQueue paper's experiments (Wei, Lu, Zhou; seed 002), run on this
machine: what is run, in which order, and where the queues live.

Two parts, each in repetitions, and within a repetition every
configuration once, in an order shuffled with a recorded seed (drift over
the run then falls on every configuration alike, and each repetition's
ratios are paired):

- **the mail server** (Figures 3 and 8, the headline): `iolab mail serve`
  relaying to Postfix's `smtp-sink`, loaded by `smtp-source` with `users`
  concurrent sessions of one message each (as SPECmail2000's simulated
  users) and 1 kB bodies, with the file-per-message queue and with
  FastQueue, each with its queue on a fresh ext4 (a loop device) and again
  on tmpfs (the machine's ceiling), through `iolab.mail.bench.run_once`,
  the run `iolab mail bench` makes. The server times each SMTP command and
  each delivery itself (`--stats`: `commands`);
- **the queues alone** (Figures 9 and 10): FastQueue's own benchmark
  (`fastqueue::bench`, what `iolab queue bench` runs): producers enqueue
  durably in a closed loop, then one consumer reads everything back and
  deletes it, half from the page cache (warm) and half after the files
  were evicted from it (cold), for a grid of message sizes and producer
  counts; both queues on the same ext4, and again on tmpfs.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional

# The two queues behind the same server (`iolab mail serve --queue`), and
# the same two in FastQueue's benchmark.
SYSTEMS = ("filedir", "fastqueue")
QUEUE_PEERS = {"filedir": "file-per-message", "fastqueue": "fastqueue"}
CEILING = "@tmpfs"
# Both queues read into one reused buffer (`--read-api batch`): the
# paper's grouped prefetch reads several messages into one buffer
# (section 4.5); the baseline gets the same buffer, so the ratio compares
# the stores, not their consumers' allocators.
READ_API = "batch"
# FastQueue's batch timer (its default): the paper's Lazy Gathering Write
# waits for "the buffer full or the timer" (section 4.4).
BATCH_DELAY = 0.001


@dataclass(frozen=True)
class Plan:
    """How much to run."""

    mail_reps: int
    users: int
    messages: int
    size: int
    probe_sessions: int
    queue_reps: int
    sizes: tuple[int, ...]
    producers: tuple[int, ...]
    seconds: float
    max_mib: int
    loop_bytes: int
    timeout: float
    # fdatasync calls of the sync probe taken before each repetition of the
    # queue benchmark (what one sync costs on the queues' disk then).
    probe_syncs: int = 200


# The paper's load (section 5): SPECmail2000 simulating 5,000 users, 1 kB
# messages on average. Here: 5,000 concurrent smtp-source sessions, 20,000
# messages of 1,024 B per run.
FULL = Plan(mail_reps=10, users=5000, messages=20000, size=1024, probe_sessions=4,
            queue_reps=5, sizes=(1024, 4096, 16384, 65536), producers=(1, 16, 64), seconds=1.0, max_mib=64,
            loop_bytes=3 << 30, timeout=900.0)
# For CI: every step of the full run, a few seconds each.
QUICK = Plan(mail_reps=2, users=20, messages=200, size=1024, probe_sessions=2,
             queue_reps=2, sizes=(1024, 16384), producers=(4,), seconds=0.2, max_mib=4,
             loop_bytes=320 << 20, timeout=120.0)


@dataclass
class Results:
    """Everything measured, as the report and its JSON use it."""

    plan: dict[str, Any]
    seed: int
    environment: dict[str, Any]
    mail: list[dict[str, Any]] = field(default_factory=list)
    queue: list[dict[str, Any]] = field(default_factory=list)
    sync_probes: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False
    wall_s: float = 0.0
    load_end: str = ""
    # The command that measured these results.
    command: str = ""


def load_average() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def environment() -> dict[str, Any]:
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu_model": model, "kernel": platform.release(),
            "python": platform.python_version(), "load_start": load_average(), "root": os.geteuid() == 0,
            "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}


class Runner:
    """Runs a plan; `progress` gets one line per run."""

    def __init__(self, plan: Plan, seed: int, progress: Callable[[str], None]):
        self.plan, self.seed, self.progress = plan, seed, progress
        self.rng = random.Random(seed)
        self.results = Results(asdict(plan), seed, environment())

    def run(self) -> Results:
        from iolab.mail import bench as mail_bench
        from iolab.mail.tools import require

        t0 = time.monotonic()
        tools = require("smtp-source", "smtp-sink")
        mail_bench._raise_nofile(self.plan.users + 1000)
        work = tempfile.mkdtemp(prefix="iolab-paper-fastqueue-", dir="/var/tmp")
        os.chmod(work, 0o755)
        shm: Optional[str] = None
        disk = None
        try:
            shm = mail_bench._tmpfs_dir()
            if os.geteuid() == 0:
                from iolab.mail.disk import LoopDisk

                self.progress(f"preparing a fresh ext4 on a {self.plan.loop_bytes >> 20} MiB loop device ...")
                disk = LoopDisk(work, self.plan.loop_bytes)
                on_disk = str(disk.mnt)
                self.results.environment["queues_on"] = (
                    f"a fresh ext4 on a loop device ({self.plan.loop_bytes >> 20} MiB file in /var/tmp, direct I/O "
                    "to it)")
            else:
                on_disk = os.path.join(work, "disk")
                os.makedirs(on_disk)
                self.results.environment["queues_on"] = f"{on_disk} (not root: no loop device)"
            self.results.environment["tmpfs"] = shm
            self._mail(mail_bench, tools, on_disk, shm, disk)
            self._queues(on_disk, shm)
        except KeyboardInterrupt:
            self.results.interrupted = True
            self.progress("interrupted: the report covers the runs that finished")
        finally:
            if disk is not None:
                disk.close()
            if shm:
                shutil.rmtree(shm, ignore_errors=True)
            shutil.rmtree(work, ignore_errors=True)
        self.results.wall_s = time.monotonic() - t0
        self.results.load_end = load_average()
        return self.results

    def _configs(self) -> list[tuple[str, bool]]:
        configs = [(s, tmpfs) for tmpfs in (False, True) for s in SYSTEMS]
        self.rng.shuffle(configs)
        return configs

    def _mail(self, mail_bench: Any, tools: dict[str, str], on_disk: str, shm: str, disk: Any) -> None:
        p = self.plan
        args = argparse.Namespace(mix=False, size=p.size, users=p.users, messages=p.messages,
                                  probe_sessions=p.probe_sessions, timeout=p.timeout)
        total, done = p.mail_reps * 2 * len(SYSTEMS), 0
        for rep in range(p.mail_reps):
            for pos, (name, tmpfs) in enumerate(self._configs()):
                done += 1
                label = name + (CEILING if tmpfs else "")
                self.progress(f"[mail {done}/{total}] rep {rep + 1}: {label}, {p.users} sessions, {p.messages} × "
                              f"{p.size} B, load {load_average()}")
                base = os.path.join(shm if tmpfs else on_disk, f"mail-{rep}-{name}")
                os.makedirs(base)
                os.chmod(base, 0o755)
                started = time.time()
                try:
                    row = mail_bench.run_once(name, args, tools, base, rep, None if tmpfs else disk)
                finally:
                    # A run's queue can hold hundreds of MiB (FastQueue's
                    # preallocated segments); tmpfs is memory.
                    shutil.rmtree(base, ignore_errors=True)
                row.update(system=label, queue=name, tmpfs=tmpfs, position=pos, started=started)
                self.results.mail.append(row)
                cmds = row.get("server_commands") or {}
                data = cmds.get("data", {}).get("mean_ms", float("nan"))
                deliver = cmds.get("deliver", {}).get("mean_ms", float("nan"))
                self.progress(f"    end to end {row['delivered_per_s']:.0f} msg/s, accepted {row['accepted_per_s']:.0f}; "
                              f"server DATA {data:.2f} ms, Deliver {deliver:.2f} ms (means)"
                              + (f"; ERRORS: {row['errors']}" if row["errors"] else ""))

    def _queues(self, on_disk: str, shm: str) -> None:
        from iolab import _iolab

        p = self.plan
        cells = [(size, prod) for size in p.sizes for prod in p.producers]
        total, done = p.queue_reps * len(cells) * 2 * len(SYSTEMS), 0
        for rep in range(p.queue_reps):
            p50, p99 = _iolab.fastqueue_sync_probe(os.path.join(on_disk, "probe"), p.probe_syncs)
            shutil.rmtree(os.path.join(on_disk, "probe"), ignore_errors=True)
            self.results.sync_probes.append({"rep": rep, "p50_us": p50, "p99_us": p99, "load": load_average()})
            for size, prod in cells:
                for pos, (name, tmpfs) in enumerate(self._configs()):
                    done += 1
                    peer = QUEUE_PEERS[name]
                    label = name + (CEILING if tmpfs else "")
                    self.progress(f"[queue {done}/{total}] rep {rep + 1}: {label}, {size} B × {prod} producers")
                    started = time.time()
                    r = dict(_iolab.fastqueue_bench(peer, size, prod, p.seconds, p.max_mib << 20,
                                                    os.path.join(shm if tmpfs else on_disk, f"q-{peer}"),
                                                    BATCH_DELAY, READ_API))
                    self.results.queue.append({"rep": rep, "system": label, "queue": name, "tmpfs": tmpfs,
                                               "size": size, "producers": prod, "position": pos,
                                               "started": started, "load": load_average(), **r})


def progress_printer(quiet: bool) -> Callable[[str], None]:
    def say(line: str) -> None:
        if not quiet:
            print(line, file=sys.stderr, flush=True)

    return say
