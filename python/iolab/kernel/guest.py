"""The guest's side of ``iolab kernel compare`` and ``iolab paper wpcas
--kernel``: an ``iolab emu`` disk for the guest, the plan of runs one boot
makes, the files ``testbed/guest/compare.sh`` reads, the boot itself, and the
files each run leaves (fio's JSON, the module's counters)."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from iolab.cli.errors import UserError
from iolab.kernel import testbed
from iolab.kernel.workloads import WORKLOADS, fio_job

# ---------------------------------------------------------------- emulator


class Emulator:
    """``iolab emu`` serving one disk to the guest, its log in ``log``."""

    def __init__(self, disk: str, image: Path, socket: Path, log: Path, zero_latency: bool = False,
                 nice: int | None = None):
        self.socket = socket
        self.log = log
        # IOLAB_EMU: another iolab executable whose `emu` serves the disk
        base = [os.environ["IOLAB_EMU"]] if os.environ.get("IOLAB_EMU") else [sys.executable, "-m", "iolab"]
        if nice is not None:
            # every thread of the emulator at the guest's priority (testbed/run.sh)
            base = ["nice", "-n", str(nice), *base]
        cmd = [*base, "emu", "--disk", disk, "--image", str(image),
               "--socket", str(socket), "--log", str(log), "--no-sync"]
        if zero_latency:
            cmd.append("--zero-latency")
        if socket.exists():
            socket.unlink()
        self.out = open(log.with_suffix(".emu.txt"), "w")
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not socket.exists():
            if self.proc.poll() is not None:
                raise UserError(f"iolab emu exited at start: {log.with_suffix('.emu.txt').read_text().strip()}")
            if time.monotonic() > deadline:
                self.stop()
                raise UserError("iolab emu did not open its socket within 60 s")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()


def capacity_sectors(disk: str) -> int:
    from iolab import _iolab

    return int(json.loads(_iolab.wpcas_seek_tunables(disk))["capacity_sectors"])


@dataclass
class Plan:
    disk: str
    runs: list[tuple[int, str, str, int]]  # id, workload, elevator, rep


def make_plan(disk: str, workloads: list[str], elevators: list[str], reps: int) -> Plan:
    runs, n = [], 0
    for rep in range(reps):
        for wl in workloads:
            for el in elevators:
                runs.append((n, wl, el, rep))
                n += 1
    return Plan(disk, runs)


# The runs' marker reads: two 4 KiB blocks per run id in the disk's last
# 4,096 sectors (testbed/guest/compare.sh; disk.conf says where they
# start), so a boot holds ids 0..255: a whole comparison of one disk at the
# defaults is 8 workloads x 6 elevators x 3 repetitions = 144 runs.
MARKER_SECTORS = 4096
MAX_RUN_ID = MARKER_SECTORS // 8 // 2 - 1


def check_run_ids(ids) -> None:
    """Refuse a boot whose run ids would read past the marker blocks."""
    top = max(ids, default=0)
    if top > MAX_RUN_ID:
        raise UserError(f"{top + 1} runs in one boot: the marker blocks hold {MAX_RUN_ID + 1} "
                        "(fewer repetitions, or more guests side by side)")


def write_share(share: Path, plan: Plan, runtime: int, capacity: int, wpcas: dict[str, int],
                trace: list[str] = (), trace_runs: list[int] = ()) -> None:
    """The files guest/compare.sh reads. ``trace``: elevators whose runs
    the guest traces; ``trace_runs``: runs it traces whatever the elevator."""
    check_run_ids(r[0] for r in plan.runs)
    (share / "jobs").mkdir(parents=True, exist_ok=True)
    for wl in sorted({r[1] for r in plan.runs}):
        (share / "jobs" / f"{wl}.fio").write_text(fio_job(WORKLOADS[wl], capacity, runtime))
    (share / "plan.txt").write_text("".join(f"{i} {wl} {el}\n" for i, wl, el, _ in plan.runs))
    (share / "disk.conf").write_text(f"marker_sector {capacity - MARKER_SECTORS}\n")
    (share / "wpcas.conf").write_text("".join(f"{k} {v}\n" for k, v in wpcas.items()))
    (share / "trace.conf").unlink(missing_ok=True)
    if trace or trace_runs:
        (share / "trace.conf").write_text("".join(f"{el}\n" for el in trace)
                                          + "".join(f"run:{i}\n" for i in trace_runs))


def run_disk(repo: Path, out: Path, disk: str, plan: Plan, runtime: int, zero_latency: bool = False,
             share_name: str | None = None, trace: list[str] = (), icount: int | None = None,
             trace_runs: list[int] = ()) -> Path:
    """One boot on an emulated ``disk``; returns the guest's run directory
    (``out/share_name``, by default the disk's name or ``zero-latency``)."""
    from iolab import _iolab

    seek = json.loads(_iolab.wpcas_seek_tunables(disk))
    share = out / (share_name or ("zero-latency" if zero_latency else disk))
    share.mkdir(parents=True, exist_ok=True)
    write_share(share, plan, runtime, seek["capacity_sectors"], seek["tunables"], trace, trace_runs)
    boot_on_emulator(repo, share, disk, len(plan.runs) * (runtime + 15), zero_latency=zero_latency, icount=icount)
    return share


def boot_on_emulator(repo: Path, share: Path, disk: str, runs_s: float, zero_latency: bool = False,
                     icount: int | None = None) -> None:
    """Boot the guest once with ``guest/compare.sh`` over the files already
    in ``share`` (:func:`write_share` or its like), on an ``iolab emu``
    disk of model ``disk`` whose log goes to ``share/emu.csv``. ``runs_s``:
    the runs' expected length in all, for the timeout (twice it, plus the
    boot)."""
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"iolab-compare-{os.getpid()}"
    work.mkdir(parents=True, exist_ok=True)
    # named by the share, not the disk: guests booted side by side (run_side_by_side)
    # may serve the same model, each from an image and a socket of its own
    image = work / f"{share.name}.img"
    emu = Emulator(disk, image, work / f"{share.name}.sock", share / "emu.csv", zero_latency=zero_latency,
                   nice=testbed.guest_nice() if icount is not None else None)
    try:
        run = testbed.boot(repo, share, "compare.sh", [], nbd=emu.socket,
                           timeout_s=int((900 if icount is not None else 300) + runs_s * 2),
                           icount=icount)
    finally:
        emu.stop()
        image.unlink(missing_ok=True)
    if not run.ok:
        raise UserError(f"the guest run on {disk} failed: {'; '.join(run.failures)} (see {share})")


# ---------------------------------------------------------------- results


def fio_summary(path: Path) -> dict:
    """Throughput (MB/s, 10^6 bytes) and total-latency percentiles of a run."""
    data = json.loads(path.read_text())
    job = data["jobs"][0]
    bw = sum(job[d]["bw_bytes"] for d in ("read", "write"))
    ios = sum(job[d]["total_ios"] for d in ("read", "write"))
    pct = {}
    for key, q in (("p50", "50.000000"), ("p99", "99.000000")):
        vals = [(job[d]["total_ios"], job[d].get("lat_ns", {}).get("percentile", {}).get(q))
                for d in ("read", "write") if job[d]["total_ios"]]
        vals = [(n, v) for n, v in vals if v is not None]
        # two directions: the larger percentile (a bound; reads dominate every workload here)
        pct[key] = max(v for _, v in vals) / 1e6 if vals else math.nan
    return {"throughput_mb_s": bw / 1e6, "iops": ios / (job["job_runtime"] / 1e3),
            "p50_ms": pct["p50"], "p99_ms": pct["p99"]}


def stats_file(path: Path) -> dict:
    out = {}
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2:
                out[parts[0]] = int(parts[1])
    return out


# At most this many guests side by side: each is a QEMU under -icount (about
# a tenth of a host core while its disk keeps it waiting, and up to a core
# when busy) with its emulator, and 1 GiB of memory.
MAX_GUESTS = 8


def run_side_by_side(tasks: list, what: str) -> list:
    """Run each of ``tasks`` (callables, one guest boot each) in a thread of
    its own and wait for all; their results in order. The first failure is
    raised once every boot has ended, so that no guest is left running; on
    Ctrl-C (or SIGTERM) every boot still running is stopped, and each
    task's own clean-up (its emulator) runs before this returns, within
    testbed.STOP_GRACE_S and a few seconds."""
    import threading

    with _terminate_as_interrupt():
        if len(tasks) == 1:
            return [tasks[0]()]
        results: list = [None] * len(tasks)
        errors: list[BaseException | None] = [None] * len(tasks)

        def work(i: int) -> None:
            try:
                results[i] = tasks[i]()
            except BaseException as e:  # noqa: B036 - handed to the caller below
                errors[i] = e

        threads = [threading.Thread(target=work, args=(i,), name=f"{what}-{i}", daemon=True)
                   for i in range(len(tasks))]
        for t in threads:
            t.start()
        try:
            for t in threads:
                # a timed join: Ctrl-C reaches this thread between the waits
                while t.is_alive():
                    t.join(0.5)
        except BaseException:
            testbed.stop_all()
            for t in threads:
                t.join(testbed.STOP_GRACE_S + 150)  # the emulator's own stop is bounded (Emulator.stop)
            raise
        for e in errors:
            if e is not None:
                raise e
        return results


class _terminate_as_interrupt:
    """While guests run, SIGTERM (a CI timeout, `kill`) stops them as Ctrl-C
    does, instead of leaving QEMU and the emulators behind."""

    def __enter__(self):
        import threading

        self.old = None
        if threading.current_thread() is threading.main_thread():
            self.old = signal.signal(signal.SIGTERM, _raise_interrupt)
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            signal.signal(signal.SIGTERM, self.old)
        return False


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")
