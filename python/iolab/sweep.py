"""Parameter sweeps: the Cartesian product of `--grid KEY=V1,V2,...`
settings over a spec, run on this machine's cores or on a Dask cluster.

Each point of the grid is the spec with those `--set` overrides; each job
(point, scheduler, seed) is independent, so a sweep spreads over as many
workers as there are. On Dask, a job is a task that ships the spec text and
the overrides and runs :func:`run_point_job` on a worker (every worker needs
iolab installed); results come back as the same JSON the local run makes,
so a sweep's output does not depend on where it ran.

Every point is checked before any job runs (a bad value, a repeated key,
a grid too large), and an interrupted sweep keeps the jobs that finished
and says which points are incomplete.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from iolab import _iolab, report
from iolab.cli.errors import UserError
from iolab.simulate import document, parse_spec


@dataclass(frozen=True)
class Point:
    """One point of the grid: the overrides that define it."""

    settings: tuple[tuple[str, str], ...]

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.settings)


@dataclass
class SweepResult:
    """Rows (one per run, with the point's settings first) and documents."""

    rows: list[dict[str, Any]]
    docs: dict[str, dict[str, Any]]
    interrupted: bool = False
    # Points with fewer finished runs than jobs: (label, finished, jobs).
    incomplete: list[tuple[str, int, int]] = field(default_factory=list)


def parse_grid(items: Sequence[str], fixed: Sequence[tuple[str, str]] = ()) -> list[tuple[str, list[str]]]:
    """``["as.antic_expire=2,4,6"]`` → ``[("as.antic_expire", ["2", "4", "6"])]``.

    A key given twice (or also fixed by ``--set``) and a value given twice
    for one key are errors: either would make two points the same."""
    grid: list[tuple[str, list[str]]] = []
    fixed_keys = {k for k, _ in fixed}
    for item in items:
        key, sep, values = item.partition("=")
        vals = [v.strip() for v in values.split(",") if v.strip()]
        key = key.strip()
        if not sep or not key or not vals:
            raise UserError(f"--grid {item!r}: expected KEY=V1,V2,..., e.g. as.antic_expire=2,4,6")
        if any(k == key for k, _ in grid):
            raise UserError(f"--grid {key}: the key is given twice; put every value in one --grid {key}=V1,V2,...")
        if key in fixed_keys:
            raise UserError(f"--grid {key}: also fixed by --set {key}=...; give it in one place")
        dup = next((v for i, v in enumerate(vals) if v in vals[:i]), None)
        if dup is not None:
            raise UserError(f"--grid {key}: the value {dup} is given twice")
        grid.append((key, vals))
    return grid


def points(grid: Sequence[tuple[str, list[str]]]) -> list[Point]:
    keys = [k for k, _ in grid]
    return [Point(tuple(zip(keys, combo))) for combo in itertools.product(*(v for _, v in grid))]


def run_point_job(spec_text: str, spec_name: str, fmt: str, settings: Sequence[tuple[str, str]],
                  scheduler: int, seed: int) -> str:
    """Run one job of one grid point (a Dask task; also used locally)."""
    exp = _iolab.Experiment.parse(spec_text, spec_name, fmt, list(settings))
    return exp.run_job(scheduler, seed, _iolab.RunControl())


def check_points(spec_text: str, spec_name: str, fmt: str, base: Sequence[tuple[str, str]],
                 grid: Sequence[tuple[str, list[str]]], progress: bool = False) -> tuple[list[Point], list]:
    """Every point parsed and checked, and the sweep's size bounded, before
    anything runs."""
    n_points = math.prod(len(v) for _, v in grid)
    if n_points > _iolab.MAX_JOBS:
        raise UserError(f"--grid: {n_points} points is more than {_iolab.MAX_JOBS}, the most runs one sweep makes")
    pts = points(grid)
    exps = []
    jobs = 0
    for p in pts:
        try:
            # The points share one read of a trace (the native core keeps it
            # while any point holds it); the first read may show a bar.
            exp = parse_spec(spec_text, spec_name, fmt, list(base) + list(p.settings), progress)
        except ValueError as e:
            raise UserError(f"grid point {p.label()}: {e}") from None
        jobs += len(exp.jobs())
        if jobs > _iolab.MAX_JOBS:
            raise UserError(f"--grid: the sweep makes more than {_iolab.MAX_JOBS} runs (points × schedulers × seeds)")
        exps.append(exp)
    return pts, exps


def run_sweep(spec_text: str, spec_name: str, fmt: str, base: Sequence[tuple[str, str]],
              grid: Sequence[tuple[str, list[str]]], dask_address: Optional[str] = None,
              workers: Optional[int] = None, quiet: bool = False,
              on_progress: Optional[Callable[[int, int], None]] = None) -> SweepResult:
    """Run every point; return one row per run and the result documents."""
    pts, exps = check_points(spec_text, spec_name, fmt, base, grid, progress=not quiet)
    if dask_address:
        docs, interrupted = _run_on_dask(spec_text, spec_name, fmt, base, pts, exps, dask_address, on_progress)
    else:
        from iolab.cli.progress import run_with_progress

        outcomes = run_with_progress(exps, workers=workers, quiet=quiet, label="sweep")
        docs = [o.document for o in outcomes]
        interrupted = any(o.interrupted for o in outcomes)
    result = SweepResult(rows=[], docs={}, interrupted=interrupted)
    for p, exp, doc in zip(pts, exps, docs):
        result.docs[p.label()] = doc
        for row in report.runs_rows(doc):
            result.rows.append({**dict(p.settings), **row})
        if len(doc["runs"]) < len(exp.jobs()):
            result.incomplete.append((p.label(), len(doc["runs"]), len(exp.jobs())))
    return result


def summary_rows(result: SweepResult, keys: Sequence[str]) -> list[dict[str, Any]]:
    """Per point and scheduler: runs, mean and 95% CI of the main figures."""
    cols = ["throughput_mb_s", "lat_p99_ms", "deceptive_idleness_ms"]
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in result.rows:
        groups.setdefault(tuple(r[k] for k in keys) + (r["scheduler"],), []).append(r)
    out = []
    for key, rows in groups.items():
        row: dict[str, Any] = dict(zip(list(keys) + ["scheduler"], key))
        row["runs"] = len(rows)
        for c in cols:
            v = [float(r[c]) for r in rows]
            row[f"{c}_mean"] = sum(v) / len(v)
            row[f"{c}_ci95"] = report.ci95(v)
        out.append(row)
    return out


def _run_on_dask(spec_text, spec_name, fmt, base, pts, exps, address, on_progress) -> tuple[list[dict], bool]:
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
    results: dict[tuple, dict] = {}
    interrupted = False
    try:
        futures = {}
        for k, (p, exp) in enumerate(zip(pts, exps)):
            settings = list(base) + list(p.settings)
            for sched, seed in exp.jobs():
                f = client.submit(run_point_job, spec_text, spec_name, fmt, settings, sched, seed, pure=False)
                futures[f] = (k, sched, seed)
        try:
            for n, f in enumerate(as_completed(list(futures)), 1):
                results[futures[f]] = json.loads(f.result())
                if on_progress:
                    on_progress(n, len(futures))
        except KeyboardInterrupt:
            interrupted = True
            client.cancel(list(futures))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    docs = [document(exp, [results[(k, s, seed)] for s, seed in exp.jobs() if (k, s, seed) in results], interrupted)
            for k, exp in enumerate(exps)]
    return docs, interrupted
