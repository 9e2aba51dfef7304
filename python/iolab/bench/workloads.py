"""The built-in workloads: a table of fio jobs and what each needs.

Each workload is a numbered fio job file in ``jobs/`` beside this module
(installed with the package as package data; its comment says
what it mirrors and which variables iolab sets) plus a row of
:data:`WORKLOADS` that lists its requirements -- does it write, does it need
a file system -- its parameters, and the measures the report analyses.

Every job names its target only through ``${IOLAB_DEV}`` (the block device)
or ``${IOLAB_DIR}`` (a file system iolab made on it); fio expands these from
the environment :meth:`Workload.env` builds. A job file given with ``--fio``
must do the same (:func:`custom` checks it), so no workload can reach a
device the user did not name. Whether a job writes is decided by fio itself
(``--parse-only --readonly``), and a read-only workload always runs under
fio's ``--readonly``, which makes fio refuse every write and trim.

A measure is a metric key ``JOB.DIR.STAT`` of :func:`iolab.bench.fio.metrics`.
The *primary* measures are what the recommendation ranks by: when there are
several (iozone's nine tests over several record lengths), each run's score
is their geometric mean.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from iolab.bench.sandbox import parse_size
from iolab.cli.errors import UserError

# The job files are package data. The package holds a compiled module, so it
# is always installed as files (never imported from a zip) and this is a real
# directory, in a wheel's install as in the source tree.
JOBS_DIR = Path(str(resources.files("iolab.bench").joinpath("jobs")))

ALIGN = 2**20  # regions handed to jobs are whole MiB

IOZONE_TESTS = (
    ("write", "write"), ("rewrite", "write"), ("read", "read"), ("reread", "read"),
    ("randread", "read"), ("randwrite", "write"), ("bkwdread", "read"),
    ("recrewrite", "write"), ("strideread", "read"),
)
IOZONE_RECLENS = "32k,64k,128k,256k,512k,1m,2m,4m,8m,16m"


@dataclass(frozen=True)
class Variant:
    """One setting of a workload's parameters (one fio run per configuration)."""

    label: str
    params: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Target:
    """Where a run's I/O goes: the device, the bytes it may use, a mounted directory."""

    device: str
    size: int
    directory: str = ""


@dataclass(frozen=True)
class Workload:
    name: str
    job: str
    summary: str
    mirrors: str
    writes: bool
    needs_fs: bool
    measures: tuple[str, ...]
    primary: tuple[str, ...]
    params: dict[str, str] = field(default_factory=dict)
    sections: int = 1  # timed fio jobs run one after the other (for the estimate)
    path: Path | None = None  # a --fio job file
    text: str | None = None   # its text as checked, which is what runs (see session.run)

    @property
    def jobfile(self) -> Path:
        return self.path if self.path is not None else JOBS_DIR / self.job

    def variants(self, overrides: dict[str, str] | None = None) -> list[Variant]:
        """The product of the parameters' values (``reclen=32k,1m`` gives two)."""
        overrides = overrides or {}
        unknown = sorted(set(overrides) - set(self.params))
        if unknown:
            have = ", ".join(self.params) or "none"
            raise UserError(f"workload {self.name} has no parameter {unknown[0]!r} (it has: {have})")
        names = list(self.params)
        choices = []
        for name in names:
            values = [v.strip() for v in overrides.get(name, self.params[name]).split(",") if v.strip()]
            if not values:
                raise UserError(f"--param {name}= needs at least one value")
            choices.append(values)
        several = [n for n, c in zip(names, choices) if len(c) > 1]
        out = []
        for combo in itertools.product(*choices):
            params = dict(zip(names, combo))
            label = " ".join(f"{n}={params[n]}" for n in several)
            out.append(Variant(label=label, params=params))
        return out

    def env(self, variant: Variant, target: Target, runtime: float, ramp: float) -> dict[str, str]:
        """The variables the job file reads."""
        size = max(ALIGN, target.size // ALIGN * ALIGN)
        env = {
            "IOLAB_DEV": target.device,
            "IOLAB_DIR": target.directory,
            "IOLAB_SIZE": str(size),
            "IOLAB_HALF": str(max(ALIGN, size // 2 // ALIGN * ALIGN)),
            "IOLAB_RUNTIME": f"{round(runtime * 1000)}ms",
            "IOLAB_RAMP": f"{round(ramp * 1000)}ms",
        }
        for name, value in variant.params.items():
            env[f"IOLAB_{name.upper()}"] = value
        if "reclen" in variant.params:
            reclen = parse_size(variant.params["reclen"])
            env["IOLAB_BACK"] = str(-2 * reclen)
            env["IOLAB_STRIDE"] = str(16 * reclen)
        if "readers" in variant.params:
            readers = int(variant.params["readers"])
            if readers < 1:
                raise UserError("--param readers= must be at least 1")
            env["IOLAB_REGION"] = str(max(ALIGN, size // readers // ALIGN * ALIGN))
        return env

    def seconds_per_run(self, runtime: float, ramp: float) -> float:
        """A rough wall time of one fio run, for the estimate shown before starting."""
        return self.sections * (runtime + ramp + 0.4) + 1.0


def _iozone_measures() -> tuple[str, ...]:
    return tuple(f"{test}.{direction}.bw" for test, direction in IOZONE_TESTS)


WORKLOADS: tuple[Workload, ...] = (
    Workload(
        name="hdparm-buffered",
        job="0001-hdparm-buffered.fio",
        summary="sequential 2 MiB reads through the page cache",
        mirrors="hdparm -t 'Timing buffered disk reads' (seed 004)",
        writes=False, needs_fs=False,
        measures=("seqread.read.bw", "seqread.read.lat_p99"),
        primary=("seqread.read.bw",),
    ),
    Workload(
        name="hdparm-direct",
        job="0002-hdparm-direct.fio",
        summary="sequential 2 MiB reads with O_DIRECT",
        mirrors="hdparm --direct -t",
        writes=False, needs_fs=False,
        measures=("seqread.read.bw", "seqread.read.lat_p99"),
        primary=("seqread.read.bw",),
    ),
    Workload(
        name="iozone",
        job="0003-iozone.fio",
        summary="iozone's nine tests for each record length, direct I/O",
        mirrors="iozone -a matrix (seed 003)",
        writes=True, needs_fs=False,
        measures=_iozone_measures(),
        primary=_iozone_measures(),
        params={"reclen": IOZONE_RECLENS},
        sections=len(IOZONE_TESTS),
    ),
    Workload(
        name="copy",
        job="0004-copy.fio",
        summary="large-file copy: a buffered reader and a buffered writer, fsync at the end",
        mirrors="time cp bigfile bigfile2 (seed 001)",
        writes=True, needs_fs=False,
        measures=("copy.write.bw", "source.read.bw"),
        primary=("copy.write.bw",),
    ),
    Workload(
        name="sync-readers",
        job="0005-sync-readers.fio",
        summary="synchronous sequential readers with think time, each on its own region",
        mirrors="anticipation and BFQ idling (Iyer & Druschel 2001; BFQ's suite)",
        writes=False, needs_fs=False,
        measures=("readers.read.bw", "readers.read.lat_p99"),
        primary=("readers.read.bw",),
        params={"readers": "4", "think": "1ms"},
    ),
    Workload(
        name="oltp",
        job="0006-oltp.fio",
        summary="random 8 KiB, 70% reads, 2 workers x QD16, direct",
        mirrors="OLTP databases (seed 001's Oracle/MySQL; BENCH.md workload B)",
        writes=True, needs_fs=False,
        measures=("oltp.read.iops", "oltp.write.iops", "oltp.read.lat_p99", "oltp.write.lat_p99"),
        primary=("oltp.read.iops", "oltp.write.iops"),
    ),
    Workload(
        name="smallfiles",
        job="0007-smallfiles.fio",
        summary="create many 4-64 KiB files, then random reads and appends",
        mirrors="Postmark (mail and news servers)",
        writes=True, needs_fs=True,
        measures=("transactions.read.iops", "transactions.write.iops", "create.write.bw"),
        primary=("transactions.read.iops", "transactions.write.iops"),
        params={"files": "2000"},
        sections=2,
    ),
)

DEFAULT_WORKLOAD = "hdparm-direct"


def get(name: str) -> Workload:
    for w in WORKLOADS:
        if w.name == name:
            return w
    raise UserError(f"unknown workload {name!r}; choose one of: {', '.join(w.name for w in WORKLOADS)}")


def custom(path: str) -> Workload:
    """A workload from the user's job file, after the checks of :mod:`iolab.bench.userjob`.

    fio decides whether it writes (a writing workload gets the safety checks
    that implies); the text checked is the text run (:attr:`Workload.text`).
    """
    from iolab.bench import fio, userjob

    text = userjob.read(path)
    sections, needs_fs = userjob.check_text(path, text)
    jobfile = Path(path)
    return Workload(
        name=jobfile.stem,
        job=jobfile.name,
        summary=f"the job file {jobfile}",
        mirrors="user's job",
        writes=userjob.writes(fio.find_fio(), path, text),
        needs_fs=needs_fs,
        measures=("*.bw",),
        primary=("*.bw",),
        path=jobfile.resolve(),
        sections=len(sections),
        text=text,
    )


def expand(patterns: tuple[str, ...], keys) -> list[str]:
    """Measures named by ``patterns`` among the metric ``keys`` of the runs.

    ``*.STAT`` stands for every ``JOB.DIR.STAT`` except the ``all.*`` sums.
    """
    keys = list(keys)
    out = []
    for pattern in patterns:
        if pattern.startswith("*."):
            stat = pattern[2:]
            out += sorted(k for k in keys if k.endswith(f".{stat}") and not k.startswith("all."))
        elif pattern in keys:
            out.append(pattern)
    return list(dict.fromkeys(out))
