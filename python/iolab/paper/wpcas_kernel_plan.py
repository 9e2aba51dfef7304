"""What `iolab paper wpcas --kernel` runs: the paper's schedulers as 6.1
elevators, the plan of guest runs (repetitions, experiments, guests side by
side), and each IOzone experiment as a fio job file on the simulator's own
file sectors (see :mod:`iolab.paper.wpcas_kernel`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from iolab.cli.errors import UserError
from iolab.paper.wpcas_experiments import FULL, QUICK, STARTUPS, WPCAS_LABEL, iozone_spec, reading

DISK = "hp97560"
DEVICE = "/dev/vda"
SECTOR = 512
# The reading of wpcas_experiments whose file placement the kernel runs:
# `packed` (files back to back from sector 0) by default; `paper` (ext3's
# layout of one directory, with its per-process goals) can be reproduced
# on the raw device too, since with direct I/O IOzone reads and writes only
# its files' sectors.
PLACEMENTS = {"packed": "packed", "ext3": "paper"}
MODES = ("sequential", "random")
CLASS_COUNTS = (10, 40, 80)
# IOzone's tests, as the simulator's iozone workload runs them
# (crates/iolab-sim/src/workload/iozone.rs) and names them in `phases`.
TESTS = {
    "sequential": [("initial write", "write"), ("rewrite", "write"), ("read", "read"), ("re-read", "read")],
    "random": [("random read", "randread"), ("random write", "randwrite")],
}
RECORD_KB = 4
FILE_KB = 512
ICOUNT = 6
CFQ_NOTE = ("CFQ is not in Linux 6.1 (it left with the legacy block layer in 5.0): not run on the kernel, "
            "so not decided on either side")


@dataclass(frozen=True)
class Sched:
    """One of the paper's schedulers: its label (the simulator's and the
    claims'), the 6.1 elevator standing for it, the elevator's tunables on
    top of the module's defaults, and the simulator's tunables."""

    label: str
    elevator: str
    tunables: tuple[tuple[str, str], ...] = ()
    sim_tunables: tuple[tuple[str, float], ...] = ()


SCHEDULERS = [
    Sched("noop", "none"),
    Sched("deadline", "mq-deadline"),
    Sched("as", "anticipatory"),
    # as-rule: the module's defaults are the simulator's (min_samples 4,
    # prior_ps 0; docs/kernel.md "Defaults equal in both homes")
    Sched(WPCAS_LABEL["as-rule"], "wpcas"),
    Sched(WPCAS_LABEL["ste"], "wpcas", tunables=(("min_samples", "0"), ("prior_ps", "1")),
          sim_tunables=tuple(STARTUPS["ste"].items())),
]


@dataclass
class KPlan:
    """What the kernel side runs, and how many seeds the simulator gets."""

    classes: tuple[int, ...]
    reps: int
    placement: str = "packed"
    modes: tuple[str, ...] = MODES
    sim_seq_seeds: int = QUICK.seq_seeds
    sim_random_seeds: int = QUICK.random_seeds
    icount: Optional[int] = ICOUNT
    guests: int = 1
    file_kb: int = FILE_KB
    # elevators whose guest runs the blk tracer records (runs/ID.trace): to
    # find out what the kernel did; tracing costs the guest time
    trace: tuple[str, ...] = ()


def plan_for(quick: bool, reps: Optional[int] = None, classes: Optional[list[int]] = None,
             placement: str = "packed", icount: Optional[int] = ICOUNT, guests: int = 1,
             file_kb: int = FILE_KB, trace: tuple[str, ...] = ()) -> KPlan:
    """Quick: 10 classes, one repetition (about 15 minutes in all).
    Full: 10, 40 and 80 classes, 3 repetitions (about 6 hours of disk time,
    shared out among ``guests`` booted side by side).
    The simulator gets the seeds of `iolab paper wpcas` (or --quick)."""
    base = QUICK if quick else FULL
    return KPlan(classes=tuple(classes or ((10,) if quick else CLASS_COUNTS)), reps=reps or (1 if quick else 3),
                 placement=placement, sim_seq_seeds=base.seq_seeds, sim_random_seeds=base.random_seeds,
                 icount=icount, guests=guests, file_kb=file_kb, trace=tuple(trace))


def workload(mode: str, classes: int, placement: str, file_kb: int = FILE_KB) -> dict[str, Any]:
    """The simulator's `[workload]` of one experiment: exactly `iolab paper
    wpcas`'s for the reading whose placement this is (at the paper's
    512 KiB files, or scaled down to ``file_kb``, on both sides alike)."""
    w = iozone_spec(reading(PLACEMENTS[placement]), mode, classes, 1)["workload"]
    return {**w, "file_kb": file_kb}


def file_starts(mode: str, classes: int, placement: str, capacity: int, file_kb: int = FILE_KB) -> list[int]:
    """Each process's first sector, from the simulator's own placement."""
    from iolab import _iolab

    try:
        return list(_iolab.iozone_file_starts(json.dumps(workload(mode, classes, placement, file_kb)), capacity))
    except ValueError as e:
        raise UserError(f"IOzone's files on {DISK}: {e}") from None


def job_name(mode: str, classes: int) -> str:
    return f"iozone-{mode}-{classes}"


def fio_job(mode: str, classes: int, placement: str, capacity: int, device: str = DEVICE,
            file_kb: int = FILE_KB) -> str:
    """The fio job file of one IOzone experiment on the raw device: per
    IOzone test one fio job per process on its file's sectors, psync with
    O_DIRECT (one synchronous request at a time; an O_DIRECT write is
    REQ_SYNC as the simulator's WRITE_SYNC), random offsets with
    replacement as the simulator draws them; `stonewall` on the first job
    of each test after the first: all processes of a test start together,
    the next test when all have ended (IOzone's throughput mode)."""
    size = file_kb * 1024
    starts = file_starts(mode, classes, placement, capacity, file_kb)
    from iolab.kernel.guest import MARKER_SECTORS

    marker = capacity - MARKER_SECTORS
    if any(s * SECTOR + size > marker * SECTOR for s in starts):
        raise UserError(f"an IOzone file reaches the marker blocks at sector {marker}")
    lines = [
        f"# iolab paper wpcas --kernel: IOzone {mode} ({' then '.join(t for t, _ in TESTS[mode])}), "
        f"{classes} processes, {RECORD_KB} KiB records, {file_kb} KiB files, placement {placement}",
        "[global]",
        f"filename={device}",
        "ioengine=psync",
        "direct=1",
        f"bs={RECORD_KB}k",
        f"size={size}",
        "norandommap=1",
        "randrepeat=0",
        "invalidate=0",
        "group_reporting=1",
        "",
    ]
    for t, (test, rw) in enumerate(TESTS[mode]):
        slug = test.replace(" ", "-")
        for i, start in enumerate(starts):
            lines.append(f"[{slug}-{i}]")
            if t > 0 and i == 0:
                lines.append("stonewall")
            lines += [f"rw={rw}", f"offset={start * SECTOR}", ""]
    return "\n".join(lines)


@dataclass
class Run:
    id: int
    mode: str
    classes: int
    label: str
    rep: int
    # the guest that runs it: its directory under the output (one guest: the disk's name)
    share: str = DISK

    @property
    def job(self) -> str:
        return job_name(self.mode, self.classes)

    @property
    def sched(self) -> Sched:
        return next(s for s in SCHEDULERS if s.label == self.label)


def make_runs(plan: KPlan) -> list[Run]:
    """Repetition-major; within a repetition every experiment, the
    schedulers' order rotated by one per repetition."""
    runs, n = [], 0
    for rep in range(plan.reps):
        order = SCHEDULERS[rep % len(SCHEDULERS):] + SCHEDULERS[:rep % len(SCHEDULERS)]
        for mode in plan.modes:
            for c in plan.classes:
                for s in order:
                    runs.append(Run(n, mode, c, s.label, rep))
                    n += 1
    return runs


def share_out(runs: list[Run], guests: int, seconds: dict[tuple[str, int, str], float]) -> list[list[Run]]:
    """Share the runs out among ``guests`` booted side by side: a block is
    one experiment (mode, classes) of one repetition, every scheduler in
    it, so that the schedulers a repetition pairs run in one boot, one
    after the other, as with one guest. The longest blocks first, each to
    the guest with the least work so far (by the simulator's run lengths);
    each guest's runs keep the plan's order. Every guest gets a block if
    there are enough."""
    if guests <= 1:
        return [runs]
    blocks: dict[tuple[int, str, int], list[Run]] = {}
    for r in runs:
        blocks.setdefault((r.rep, r.mode, r.classes), []).append(r)
    cost = {k: sum(seconds.get((r.mode, r.classes, r.label), 60.0) for r in b) for k, b in blocks.items()}
    load = [0.0] * min(guests, len(blocks))
    mine: list[list[tuple[int, str, int]]] = [[] for _ in load]
    for k in sorted(blocks, key=lambda k: (-cost[k], k)):
        g = min(range(len(load)), key=lambda i: (load[i], i))
        load[g] += cost[k]
        mine[g].append(k)
    out = []
    for g, keys in enumerate(mine):
        name = f"{DISK}-g{g + 1}"
        group = sorted((r for k in keys for r in blocks[k]), key=lambda r: r.id)
        for r in group:
            r.share = name
        out.append(group)
    return out


def write_share(share: Path, plan: KPlan, runs: list[Run], capacity: int, seek: dict[str, int]) -> None:
    """The files guest/compare.sh reads: jobs, plan (with each run's
    tunables file), markers, the module's seek curve."""
    from iolab.kernel.guest import MARKER_SECTORS, check_run_ids

    check_run_ids(r.id for r in runs)
    (share / "jobs").mkdir(parents=True, exist_ok=True)
    (share / "tunables").mkdir(exist_ok=True)
    for mode, c in sorted({(r.mode, r.classes) for r in runs}):
        (share / "jobs" / f"{job_name(mode, c)}.fio").write_text(
            fio_job(mode, c, plan.placement, capacity, file_kb=plan.file_kb))
    for s in SCHEDULERS:
        if s.tunables:
            (share / "tunables" / s.label).write_text("".join(f"{k} {v}\n" for k, v in s.tunables))
    (share / "plan.txt").write_text("".join(
        f"{r.id} {r.job} {r.sched.elevator}" + (f" {r.label}" if r.sched.tunables else "") + "\n" for r in runs))
    (share / "disk.conf").write_text(f"marker_sector {capacity - MARKER_SECTORS}\n")
    (share / "wpcas.conf").write_text("".join(f"{k} {v}\n" for k, v in seek.items()))
    (share / "trace.conf").unlink(missing_ok=True)
    if plan.trace:
        (share / "trace.conf").write_text("".join(f"{el}\n" for el in plan.trace))


def expected_requests(mode: str, classes: int, file_kb: int = FILE_KB) -> int:
    return classes * len(TESTS[mode]) * (file_kb // RECORD_KB)
