"""The data of a bench session: what it was asked to run (:class:`Options`), each
fio run's record (:class:`Run`) and the session as a whole (:class:`Session`).

Kept apart from :mod:`iolab.bench.session`, which runs a session, so that
:mod:`iolab.bench.record` can read a session back without importing the code
that runs one (and the two import one way only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from iolab.bench import configs as cfg
from iolab.bench.workloads import Variant, Workload


@dataclass
class Options:
    workload: Workload
    device: str | None = None
    loop_size: int | None = None
    loop_dir: Path | None = None
    size: int | None = None  # bytes of the device the jobs use (default: all of it)
    schedulers: list[str] | None = None
    grid: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    explicit: list[cfg.Config] = field(default_factory=list)
    params: dict[str, str] = field(default_factory=dict)
    reps: int = 3
    runtime: float = 5.0
    ramp: float = 1.0
    outdir: Path = Path("bench-out")
    destroy_data: bool = False
    seed: int | None = None
    state_dir: Path | None = None
    progress: bool = True


@dataclass
class Run:
    """One fio run: where it sat in the plan, the settings it ran with, what it measured."""

    run: int
    rep: int
    slot: int
    config: str
    variant: str
    started: str
    seconds: float
    settings: dict[str, str]
    facts: dict[str, str]
    metrics: dict[str, float]
    fio_json: str
    fio_messages: list[str] = field(default_factory=list)  # what fio printed besides its JSON


@dataclass
class Session:
    options: Options
    meta: dict
    configs: list[cfg.Config]
    variants: list[Variant]
    runs: list[Run]
    interrupted: str | None = None  # what stopped it early: "Ctrl-C", "SIGTERM", "SIGHUP", "killed"
    restored: list[str] = field(default_factory=list)
    restore_problems: list[str] = field(default_factory=list)
    signum: int | None = None  # the signal that stopped it (the exit status is 128 + signum)

    @property
    def runs_per_rep(self) -> int:
        return len(self.configs) * len(self.variants)

    def complete_runs(self) -> list[Run]:
        """The runs of the repetitions that ran every (configuration, variant)
        unit: an interrupted or killed session's last repetition is partial,
        and a partial repetition would favour the units that happened to run."""
        per_rep = self.runs_per_rep
        counts: dict[int, int] = {}
        for r in self.runs:
            counts[r.rep] = counts.get(r.rep, 0) + 1
        return [r for r in self.runs if counts[r.rep] == per_rep]
