"""Running simulations from Python: load a spec, run its jobs on every core,
and collect a deterministic result document.

Each job (one scheduler configuration on one seed) runs in the native core
with the GIL released, so a thread pool spreads jobs over all cores. The
result document depends only on the spec and the seeds: jobs are sorted
back into spec order, and nothing time- or machine-dependent is recorded.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from iolab import _iolab
from iolab.cli.errors import UserError


def parse_overrides(items: Sequence[str]) -> list[tuple[str, str]]:
    """``["a.b=1", ...]`` to ``[("a.b", "1"), ...]``, with a clear error."""
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--set {item!r}: expected KEY=VALUE, e.g. workload.processes=40")
        out.append((key.strip(), value.strip()))
    return out


def load_spec(path: str | os.PathLike, overrides: Sequence[tuple[str, str]] = ()) -> "_iolab.Experiment":
    """Read and check a TOML (or ``.json``) spec file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{p}: no such spec file") from None
    except UnicodeDecodeError as e:
        raise UserError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    fmt = "json" if p.suffix == ".json" else "toml"
    return _iolab.Experiment.parse(text, str(p), fmt, list(overrides))


def spec_from_dict(spec: dict, name: str = "<command line>", overrides: Sequence[tuple[str, str]] = ()) -> "_iolab.Experiment":
    """Check a spec given as a dict (as `iolab compare` builds one)."""
    return _iolab.Experiment.parse(json.dumps(spec), name, "json", list(overrides))


@dataclass
class Outcome:
    """What a set of jobs produced."""

    document: dict[str, Any]
    interrupted: bool = False


def run_experiment(
    exp: "_iolab.Experiment",
    workers: Optional[int] = None,
    on_progress: Optional[Callable[[int, int, int], None]] = None,
) -> Outcome:
    """Run every job of ``exp`` and return the result document.

    ``on_progress(done_jobs, total_jobs, simulated_requests)`` is called
    about five times a second. Ctrl-C (KeyboardInterrupt) cancels the
    running jobs and returns what finished, with ``interrupted`` set.
    """
    return run_experiments([exp], workers, on_progress)[0]


def run_experiments(
    exps: Sequence["_iolab.Experiment"],
    workers: Optional[int] = None,
    on_progress: Optional[Callable[[int, int, int], None]] = None,
) -> list[Outcome]:
    """Run the jobs of several experiments in one pool (one progress count).

    Returns one :class:`Outcome` per experiment, in order. A job that fails
    (a ValueError from the core) stops everything and raises
    :class:`UserError`; Ctrl-C keeps what finished in every outcome.
    """
    jobs = [(k, sched, seed) for k, exp in enumerate(exps) for sched, seed in exp.jobs()]
    if not jobs:
        return [Outcome(document=document(exp, [], False)) for exp in exps]
    workers = max(1, min(workers or os.cpu_count() or 1, len(jobs)))
    controls = [_iolab.RunControl() for _ in jobs]
    results: dict[int, dict] = {}
    errors: list[str] = []
    finished_requests = 0
    stop = threading.Event()
    with _sigint_sets(stop), cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="iolab-sim") as pool:
        futures = {
            pool.submit(exps[k].run_job, sched, seed, controls[i]): i for i, (k, sched, seed) in enumerate(jobs)
        }
        pending = set(futures)
        while pending and not stop.is_set() and not errors:
            done, pending = cf.wait(pending, timeout=0.2)
            for f in done:
                i = futures[f]
                try:
                    results[i] = json.loads(f.result())
                    finished_requests += results[i]["requests"]["completed"]
                except KeyboardInterrupt:
                    stop.set()
                except ValueError as e:
                    errors.append(str(e))
            if on_progress:
                running = sum(controls[futures[f]].completed for f in pending)
                on_progress(len(results), len(jobs), finished_requests + running)
        interrupted = stop.is_set()
        if pending:
            # Ctrl-C or an error: stop the running jobs, drop the queued ones,
            # keep whatever finished meanwhile.
            for c in controls:
                c.cancel()
            for f in pending:
                f.cancel()
            for f in pending:
                try:
                    results[futures[f]] = json.loads(f.result())
                except (KeyboardInterrupt, ValueError, cf.CancelledError):
                    pass
    if errors:
        raise UserError(errors[0])
    outcomes = []
    for k, exp in enumerate(exps):
        runs = [results[i] for i in sorted(results) if jobs[i][0] == k]
        outcomes.append(Outcome(document=document(exp, runs, interrupted), interrupted=interrupted))
    return outcomes


@contextmanager
def _sigint_sets(stop: threading.Event):
    """While running, Ctrl-C sets `stop` instead of raising wherever the
    main thread happens to be, so finished results are always kept."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def document(exp: "_iolab.Experiment", runs: list[dict], interrupted: bool) -> dict[str, Any]:
    """The result document of `exp` holding `runs` (in spec order)."""
    return {
        "iolab_version": _iolab.__version__,
        "rng": _iolab.RNG_ALGORITHM,
        "spec": json.loads(exp.spec_json()),
        "seeds": sorted({seed for _, seed in exp.jobs()}),
        "interrupted": interrupted,
        "runs": runs,
    }
