"""The workloads of the simulator-against-kernel comparison, written once and
turned into both a fio job (for the guest) and a simulator spec, so the two
sides run the same processes on the same sectors.

Each workload is a list of groups of identical processes, the simulator's
``kind = "processes"`` (docs/spec.md). On the kernel side every process is one
fio job: ``psync`` with O_DIRECT by default (so every request is synchronous,
as ``op_is_sync`` sees an O_DIRECT write too, and nothing is cached or read
ahead), its own region of the disk placed exactly as the simulator's
``placement = "spread"`` places files (or every process on the same region,
``"shared"``), ``thinktime`` after each completion, and uniform random offsets
with replacement (``norandommap``) as the simulator draws them. A group may
instead be buffered (``direct=0``: the page cache and write-back), keep
``iodepth`` requests in flight with libaio (an O_DIRECT write stays REQ_SYNC:
``rq_sync`` in the simulator), ``fsync`` after each write (a flush), run at an
I/O priority (fio's ``prioclass``/``prio``: ``ioprio_set``, as ``ionice``), or
start its processes ``start_interval_ms`` apart (fio's ``startdelay``, each
job's runtime shortened by as much so that all end together, as the
simulator's run does).
"""

from __future__ import annotations

from dataclasses import dataclass

from iolab.cli.errors import UserError

SECTOR = 512
# The simulator aligns file starts to 4 KiB (workload/mod.rs, `place`).
ALIGN_SECTORS = 8


@dataclass(frozen=True)
class Group:
    name: str
    count: int
    pattern: str  # "sequential" | "random"
    op: str  # "read" | "write" | "mix"
    request_kb: int
    file_mb: int
    think_ms: float = 0.0
    read_fraction: float = 0.7  # for op = "mix"
    # > 1: fio's libaio with this many in flight (the simulator's
    # max_outstanding, with REQ_SYNC kept for O_DIRECT)
    iodepth: int = 1
    direct: bool = True
    fsync: bool = False
    ioprio: str | None = None  # "rt/0", "be/4", "idle" (ionice)
    start_interval_ms: float = 0.0


@dataclass(frozen=True)
class Workload:
    name: str
    summary: str
    groups: tuple[Group, ...]
    placement: str = "spread"  # "spread" | "shared"

    def processes(self) -> list[tuple[Group, int]]:
        return [(g, i) for g in self.groups for i in range(g.count)]

    @property
    def buffered_writes(self) -> bool:
        """A process writes through the page cache: fio then counts the bytes
        of its write(2) calls, most of which a short run leaves in the
        guest's memory, while the simulator counts what the disk completed;
        such a workload is compared by the disk's bytes on both sides."""
        return any(g.op in ("write", "mix") and not g.direct for g in self.groups)


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in [
        Workload(
            "seqreaders",
            "(a) 4 synchronous sequential readers, 16 KiB, 2 ms think time: deceptive idleness",
            (Group("seq", 4, "sequential", "read", 16, 64, think_ms=2.0),),
        ),
        Workload(
            "randseq",
            "(b) 2 random readers (4 KiB, no think) and 2 sequential readers (16 KiB, 1 ms think)",
            (Group("rand", 2, "random", "read", 4, 512),
             Group("seq", 2, "sequential", "read", 16, 64, think_ms=1.0)),
        ),
        # The guest's own time per request, measured on a zero-latency disk
        # (compare.measure_host): one process per think time the compared
        # workloads use, and eight processes (a queue at the device).
        *[Workload(f"zlt{t}", f"zero-latency: one synchronous random reader, {t} ms think",
                   (Group("rand", 1, "random", "read", 4, 512, think_ms=float(t)),)) for t in (0, 1, 2)],
        Workload("zlaio8", "zero-latency: one process keeping 8 random reads in flight (libaio)",
                 (Group("rand", 1, "random", "read", 4, 512, iodepth=8),)),
        Workload(
            "rwmix",
            "(c) 2 random 70/30 read/write processes (4 KiB, O_DIRECT: synchronous writes) "
            "and 2 sequential readers (16 KiB, 2 ms think)",
            # the large regions first: spread placement then keeps every
            # region apart on the 1.3 GB HP 97560
            (Group("mix", 2, "random", "mix", 4, 512),
             Group("seq", 2, "sequential", "read", 16, 64, think_ms=2.0)),
        ),
        # Issue 25: workloads that reach what blk-mq does around the
        # elevator (merging, plugging, tag hand-off, queue runs, flushes,
        # BFQ's cooperators).
        Workload(
            "bufwrite",
            "(d) a buffered sequential writer (64 KiB write(2)s: the page cache and write-back, "
            "plugged and merged) beside 2 synchronous sequential readers (16 KiB, 2 ms think)",
            (Group("wb", 1, "sequential", "write", 64, 512, direct=False),
             Group("seq", 2, "sequential", "read", 16, 64, think_ms=2.0)),
        ),
        Workload(
            "aiowrite",
            "(e) 2 processes keeping 8 random 4 KiB O_DIRECT writes in flight each (libaio; "
            "REQ_SYNC writes)",
            (Group("aio", 2, "random", "write", 4, 512, iodepth=8),),
        ),
        Workload(
            "coop",
            "(f) 4 synchronous sequential readers of one 64 MiB region (16 KiB), started 250 ms "
            "apart: BFQ's close cooperators (later than its 180 ms burst window)",
            (Group("seq", 4, "sequential", "read", 16, 64, start_interval_ms=250.0),),
            placement="shared",
        ),
        Workload(
            "rtbe",
            "(g) a real-time sequential reader with no think time (16 KiB, ionice -c1) beside 3 "
            "best-effort random readers (4 KiB)",
            # the large regions first (see rwmix)
            (Group("be", 3, "random", "read", 4, 256),
             Group("rt", 1, "sequential", "read", 16, 64, ioprio="rt/0")),
        ),
        Workload(
            "fsync",
            "(h) an fsync-heavy writer (4 KiB O_DIRECT writes, fsync after each: a write and a "
            "flush, a mail queue's pattern) beside 2 synchronous random readers (4 KiB)",
            (Group("rand", 2, "random", "read", 4, 512),
             Group("fsync", 1, "sequential", "write", 4, 64, fsync=True)),
        ),
    ]
}


def place_spread(sizes: list[int], capacity: int) -> list[int]:
    """Start sectors of files of ``sizes`` sectors, as the simulator's
    ``place(Placement::Spread, ...)``: file i of n at i/n of the disk, 4 KiB
    aligned, never overlapping the previous one, never past the end."""
    total = sum(sizes)
    if total > capacity:
        raise UserError(f"the workload needs {total * SECTOR >> 20} MiB but the disk holds "
                        f"{capacity * SECTOR >> 20} MiB")
    starts, next_free, n = [], 0, len(sizes)
    for i, size in enumerate(sizes):
        wanted = (capacity // max(n, 1) * i) // ALIGN_SECTORS * ALIGN_SECTORS
        start = min(max(wanted, next_free), capacity - size)
        starts.append(start)
        next_free = -(-(start + size) // ALIGN_SECTORS) * ALIGN_SECTORS
    return starts


def place_shared(sizes: list[int], capacity: int) -> list[int]:
    """The simulator's ``placement = "shared"``: every file from sector 0."""
    if max(sizes, default=0) > capacity:
        raise UserError(f"a shared file of {max(sizes) * SECTOR >> 20} MiB does not fit the disk's "
                        f"{capacity * SECTOR >> 20} MiB")
    return [0] * len(sizes)


def layout(w: Workload, capacity: int) -> list[tuple[Group, int, int, int]]:
    """(group, index, start sector, size in sectors) of every process."""
    procs = w.processes()
    sizes = [g.file_mb * 2048 for g, _ in procs]
    place = {"spread": place_spread, "shared": place_shared}[w.placement]
    starts = place(sizes, capacity)
    return [(g, i, s, n) for (g, i), s, n in zip(procs, starts, sizes)]


# fio's prioclass numbers (include/uapi/linux/ioprio.h)
PRIOCLASS = {"rt": 1, "be": 2, "idle": 3}


def fio_job(w: Workload, capacity: int, runtime_s: int, device: str = "/dev/vda") -> str:
    """The fio job file of ``w`` on a disk of ``capacity`` sectors."""
    lines = [
        f"# iolab kernel compare: {w.name} -- {w.summary}",
        "[global]",
        f"filename={device}",
        "ioengine=psync",
        "direct=1",
        "time_based=1",
        f"runtime={runtime_s}",
        "norandommap=1",
        "randrepeat=0",
        "invalidate=0",
        "group_reporting=1",
        "lat_percentiles=1",
        "percentile_list=50:99",
        "",
    ]
    rw = {("sequential", "read"): "read", ("random", "read"): "randread",
          ("sequential", "write"): "write", ("random", "write"): "randwrite",
          ("random", "mix"): "randrw", ("sequential", "mix"): "rw"}
    for g, i, start, size in layout(w, capacity):
        lines += [
            f"[{g.name}-{i}]",
            f"rw={rw[(g.pattern, g.op)]}",
            f"bs={g.request_kb}k",
            f"offset={start * SECTOR}",
            f"size={size * SECTOR}",
        ]
        if g.op == "mix":
            lines.append(f"rwmixread={round(g.read_fraction * 100)}")
        if g.think_ms > 0:
            lines.append(f"thinktime={round(g.think_ms * 1000)}")
        if g.iodepth > 1:
            lines += ["ioengine=libaio", f"iodepth={g.iodepth}"]
        if not g.direct:
            lines.append("direct=0")
        if g.fsync:
            lines.append("fsync=1")
        if g.ioprio:
            cls, _, level = g.ioprio.partition("/")
            lines.append(f"prioclass={PRIOCLASS[cls]}")
            if level:
                lines.append(f"prio={level}")
        if g.start_interval_ms > 0 and i > 0:
            delay_ms = round(g.start_interval_ms * i)
            lines += [f"startdelay={delay_ms}ms", f"runtime={runtime_s * 1000 - delay_ms}ms"]
        lines.append("")
    return "\n".join(lines)


def sim_workload(w: Workload, extra_think_ms: dict[float, float | list[float]] | None = None,
                 extra_as_cpu: bool = False) -> dict:
    """The simulator's ``[workload]`` table of ``w``. ``extra_think_ms``
    maps a group's think time to the guest's measured time on top of it
    (between a completion and the process's next request): one value, or
    equally likely values (the think time is then drawn from them, each
    think + value taken as at least zero). ``extra_as_cpu``: the measured
    values are the group's CPU time per request instead (``cpu``, spent
    before the think time on the run's ``[host] cpus``)."""
    groups = []
    extra_think_ms = extra_think_ms or {}
    for g in w.groups:
        if g.iodepth > 1 and (g.op == "read" or not g.direct):
            raise ValueError(f"{w.name}: a group with iodepth {g.iodepth} has no simulator counterpart")
        grp = {
            "name": g.name,
            "count": g.count,
            "pattern": g.pattern,
            "op": g.op,
            "sync": True,
            "request_kb": g.request_kb,
            "file_mb": g.file_mb,
        }
        if g.op == "mix":
            grp["read_fraction"] = g.read_fraction
        if g.iodepth > 1:
            # libaio keeps iodepth in flight; an O_DIRECT write is REQ_SYNC
            grp.update(sync=False, max_outstanding=g.iodepth, rq_sync=True)
        if not g.direct:
            grp["direct"] = False
        if g.fsync:
            grp["fsync"] = True
        if g.ioprio:
            grp["ioprio"] = g.ioprio
        if g.start_interval_ms > 0:
            grp["start_interval_ms"] = g.start_interval_ms
        # The guest's time between a completion and the process's next
        # request: a synchronous O_DIRECT process's (fio refills a libaio
        # queue at once; a buffered writer's calls cost what the page cache
        # model charges).
        extra = extra_think_ms.get(g.think_ms, 0.0) if g.direct and g.iodepth == 1 else 0.0
        if extra_as_cpu and isinstance(extra, list):
            if g.think_ms > 0:
                grp["think"] = {"dist": "constant", "ms": g.think_ms}
            grp["cpu"] = {"dist": "samples", "ms": [round(max(x, 0.0), 4) for x in extra]}
        elif isinstance(extra, list):
            grp["think"] = {"dist": "samples", "ms": [round(max(g.think_ms + x, 0.0), 4) for x in extra]}
        elif g.think_ms + extra > 0:
            grp["think"] = {"dist": "constant", "ms": round(g.think_ms + extra, 4)}
        groups.append(grp)
    return {"kind": "processes", "placement": w.placement, "group": groups}
