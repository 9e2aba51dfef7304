"""Parameter sweeps: the Cartesian product of `--grid KEY=V1,V2,...`
settings over a spec, run on this machine's cores or on a Dask cluster.

Each point of the grid is the spec with those `--set` overrides; each job
(point, scheduler, seed) is independent, so a sweep spreads over as many
workers as there are. On Dask, a job is a task that ships the spec text and
the overrides and runs :func:`run_point_job` on a worker (every worker needs
iolab installed); results come back as the same JSON the local run makes,
so a sweep's output does not depend on where it ran.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import pandas as pd

from iolab import _iolab, report
from iolab.cli.errors import UserError
from iolab.simulate import document


@dataclass(frozen=True)
class Point:
    """One point of the grid: the overrides that define it."""

    settings: tuple[tuple[str, str], ...]

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.settings)


def parse_grid(items: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``["as.antic_expire=2,4,6"]`` → ``[("as.antic_expire", ["2", "4", "6"])]``."""
    grid = []
    for item in items:
        key, sep, values = item.partition("=")
        vals = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not key.strip() or not vals:
            raise UserError(f"--grid {item!r}: expected KEY=V1,V2,..., e.g. as.antic_expire=2,4,6")
        grid.append((key.strip(), vals))
    return grid


def points(grid: Sequence[tuple[str, list[str]]]) -> list[Point]:
    keys = [k for k, _ in grid]
    return [Point(tuple(zip(keys, combo))) for combo in itertools.product(*(v for _, v in grid))]


def run_point_job(spec_text: str, spec_name: str, fmt: str, settings: Sequence[tuple[str, str]],
                  scheduler: int, seed: int) -> str:
    """Run one job of one grid point (a Dask task; also used locally)."""
    exp = _iolab.Experiment.parse(spec_text, spec_name, fmt, list(settings))
    return exp.run_job(scheduler, seed, _iolab.RunControl())


def run_sweep(spec_text: str, spec_name: str, fmt: str, base: Sequence[tuple[str, str]],
              grid: Sequence[tuple[str, list[str]]], dask_address: Optional[str] = None,
              workers: Optional[int] = None, quiet: bool = False,
              on_progress: Optional[Callable[[int, int], None]] = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Run every point; return one row per run and the result documents."""
    pts = points(grid)
    exps = []
    for p in pts:
        settings = list(base) + list(p.settings)
        try:
            exps.append(_iolab.Experiment.parse(spec_text, spec_name, fmt, settings))
        except ValueError as e:
            raise UserError(f"grid point {p.label()}: {e}") from None
    if dask_address:
        outcomes = _run_on_dask(spec_text, spec_name, fmt, base, pts, exps, dask_address, on_progress)
    else:
        from iolab.cli.progress import run_with_progress

        outcomes = [o.document for o in run_with_progress(exps, workers=workers, quiet=quiet, label="sweep")]
    frames = []
    docs = {}
    for p, doc in zip(pts, outcomes):
        docs[p.label()] = doc
        if doc["runs"]:
            df = report.runs_frame(doc)
            for k, v in p.settings:
                df.insert(0, k, v)
            frames.append(df)
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), docs


def _run_on_dask(spec_text, spec_name, fmt, base, pts, exps, address, on_progress) -> list[dict]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise UserError("--dask needs the distributed package: pip install 'dask[distributed]'") from None
    cluster = None
    if address == "local":
        cluster = LocalCluster(processes=False, dashboard_address=None)
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout="10s")
        except OSError as e:
            raise UserError(f"--dask {address}: cannot reach the scheduler ({e})") from None
    try:
        futures = {}
        for k, (p, exp) in enumerate(zip(pts, exps)):
            settings = list(base) + list(p.settings)
            for sched, seed in exp.jobs():
                f = client.submit(run_point_job, spec_text, spec_name, fmt, settings, sched, seed, pure=False)
                futures[f] = (k, sched, seed)
        results: dict[tuple, dict] = {}
        for n, f in enumerate(as_completed(list(futures)), 1):
            results[futures[f]] = json.loads(f.result())
            if on_progress:
                on_progress(n, len(futures))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return [document(exp, [results[(k, s, seed)] for s, seed in exp.jobs()], False) for k, exp in enumerate(exps)]
