"""Running simulations from Python: load a spec, run its jobs on every core,
and collect a deterministic result document.

Each job (one scheduler configuration on one seed) runs in the native core
with the GIL released, so a few threads spread jobs over all cores (a small
pool of our own: concurrent.futures would add its import, logging with it,
to every command's start-up). The
result document depends only on the spec and the seeds: jobs are sorted
back into spec order, and nothing time- or machine-dependent is recorded.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

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


# A spec is a page of text; a file far larger is not one (and reading a
# device such as /dev/zero would never end).
MAX_SPEC_BYTES = 16 << 20


def read_spec_text(p: Path) -> str:
    """The text of a spec file, or a one-line error: missing, not a regular
    file (a directory, a FIFO, a device), too large, or not UTF-8."""
    try:
        st = p.stat()
    except FileNotFoundError:
        raise UserError(f"{p}: no such spec file") from None
    except OSError as e:
        raise UserError(f"{p}: cannot read the spec ({e.strerror})") from None
    import stat

    if not stat.S_ISREG(st.st_mode):
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise UserError(f"{p}: is {what}; expected a spec file (.toml or .json)")
    if st.st_size > MAX_SPEC_BYTES:
        raise UserError(f"{p}: {st.st_size} bytes is too large for a spec (at most {MAX_SPEC_BYTES >> 20} MiB)")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise UserError(f"{p}: cannot read the spec ({e.strerror})") from None


def load_spec(path: str | os.PathLike, overrides: Sequence[tuple[str, str]] = (),
              progress: bool = False) -> "_iolab.Experiment":
    """Read and check a TOML (or ``.json``) spec file."""
    p = Path(path)
    text = read_spec_text(p)
    fmt = "json" if p.suffix == ".json" else "toml"
    return parse_spec(text, str(p), fmt, overrides, progress)


def spec_from_dict(spec: dict, name: str = "<command line>", overrides: Sequence[tuple[str, str]] = (),
                   progress: bool = False) -> "_iolab.Experiment":
    """Check a spec given as a dict (as `iolab compare` builds one)."""
    return parse_spec(json.dumps(spec), name, "json", overrides, progress)


# A trace read for longer than this gets a progress bar (bytes read and rate).
_READ_BAR_AFTER_S = 0.5


def parse_spec(text: str, name: str, fmt: str, overrides: Sequence[tuple[str, str]] = (),
               progress: bool = False) -> "_iolab.Experiment":
    """Check a spec (the text of a file, TOML or JSON), reading the trace
    it names once. With ``progress`` and stderr a terminal, a trace read
    that takes a while shows the bytes read on stderr; Ctrl-C stops it
    (KeyboardInterrupt) either way."""
    control = _iolab.RunControl()
    done: dict[str, Any] = {}
    finished = threading.Event()

    def work() -> None:
        try:
            done["exp"] = _iolab.Experiment.parse(text, name, fmt, list(overrides), control)
        except BaseException as e:  # noqa: BLE001 - handed back to the caller's thread
            done["error"] = e
        finally:
            finished.set()

    # The read runs in a thread (the native code releases the GIL), so
    # this one can draw the bar and hear Ctrl-C. It waits on an Event, not
    # Thread.join: a join that Ctrl-C interrupted may return at once after
    # it while the thread still runs (CPython before 3.13), and the thread
    # must end before the interpreter does.
    threading.Thread(target=work, name="iolab-parse", daemon=True).start()
    try:
        if not finished.wait(_READ_BAR_AFTER_S) and progress and sys.stderr.isatty():
            _read_bar(finished, control)
        while not finished.wait(0.2):
            pass
    except KeyboardInterrupt:
        control.cancel()
        # The read stops within 4096 lines; a second Ctrl-C must not leave
        # it running in native code while the interpreter shuts down.
        while True:
            try:
                if finished.wait(0.2):
                    break
            except KeyboardInterrupt:
                continue
        raise
    if "error" in done:
        raise done["error"]
    return done["exp"]


def _read_bar(finished: threading.Event, control: "_iolab.RunControl") -> None:
    from rich.console import Console
    from rich.progress import DownloadColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TransferSpeedColumn

    with Progress(SpinnerColumn(), TextColumn("[bold]reading the trace"), DownloadColumn(), TransferSpeedColumn(),
                  TimeElapsedColumn(), transient=True, console=Console(stderr=True)) as bar:
        task = bar.add_task("read", total=None)
        while not finished.wait(0.2):
            bar.update(task, completed=control.completed)


# Per-run detail left out of the summaries kept in memory.
DETAIL = ("per_process", "per_class")


class RunStore:
    """The finished runs of one experiment, spooled as JSON lines to an
    unnamed temporary file: memory holds only each run's summary (without
    per-process and per-class detail), so it stays flat in the number of
    runs and of processes. Runs come back in job (spec) order."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile("w+b")
        self._where: dict[int, tuple[int, int]] = {}
        self._slim: dict[int, dict[str, Any]] = {}

    def add(self, job: int, text: str) -> dict[str, Any]:
        """Keep run `job` (its JSON text); returns its summary."""
        data = text.encode()
        self._file.seek(0, os.SEEK_END)
        self._where[job] = (self._file.tell(), len(data))
        self._file.write(data)
        run = json.loads(text)
        slim = {k: v for k, v in run.items() if k not in DETAIL}
        self._slim[job] = slim
        return slim

    def __len__(self) -> int:
        return len(self._where)

    def close(self) -> None:
        """Drop the spooled runs (the temporary file goes with them)."""
        self._file.close()

    def summaries(self) -> list[dict[str, Any]]:
        return [self._slim[j] for j in sorted(self._slim)]

    def runs(self) -> Iterator[dict[str, Any]]:
        """Every run in full, read back one at a time."""
        for j in sorted(self._where):
            offset, size = self._where[j]
            self._file.seek(offset)
            yield json.loads(self._file.read(size))


@dataclass
class Outcome:
    """What a set of jobs produced."""

    exp: Any
    store: RunStore
    interrupted: bool = False

    @property
    def document(self) -> dict[str, Any]:
        """The whole result document (every run in full, in memory)."""
        return document(self.exp, list(self.store.runs()), self.interrupted)

    def summary_document(self) -> dict[str, Any]:
        """The result document with each run's summary only."""
        return document(self.exp, self.store.summaries(), self.interrupted)

    def write_json(self, path: Path) -> None:
        """The whole result document as JSON (the bytes of
        ``json.dumps(document, indent=1, sort_keys=True)``), written run by
        run so that memory never holds more than one run in full."""
        head = document(self.exp, [], self.interrupted)
        with open(path, "w") as f:
            f.write("{\n")
            keys = sorted(head)
            for n, key in enumerate(keys):
                sep = ",\n" if n < len(keys) - 1 else "\n"
                if key != "runs":
                    value = json.dumps(head[key], indent=1, sort_keys=True).replace("\n", "\n ")
                    f.write(f' "{key}": {value}{sep}')
                    continue
                if not len(self.store):
                    f.write(f' "runs": []{sep}')
                    continue
                f.write(' "runs": [\n')
                for i, run in enumerate(self.store.runs()):
                    text = json.dumps(run, indent=1, sort_keys=True).replace("\n", "\n  ")
                    f.write("  " + text + (",\n" if i < len(self.store) - 1 else "\n"))
                f.write(f" ]{sep}")
            f.write("}\n")


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
    meanwhile: Optional[Callable[[], None]] = None,
) -> list[Outcome]:
    """Run the jobs of several experiments in one pool (one progress count).

    Returns one :class:`Outcome` per experiment, in order. A job that fails
    (a ValueError from the core) stops everything and raises
    :class:`UserError`; Ctrl-C keeps what finished in every outcome.
    ``meanwhile`` is called once on this thread while the jobs run (they
    release the GIL): `iolab run` imports its report there, so on a second
    core that costs no time.
    """
    jobs = [(k, sched, seed) for k, exp in enumerate(exps) for sched, seed in exp.jobs()]
    stores = [RunStore() for _ in exps]
    if not jobs:
        return [Outcome(exp, store) for exp, store in zip(exps, stores)]
    workers = max(1, min(workers or os.cpu_count() or 1, len(jobs)))
    controls = [_iolab.RunControl() for _ in jobs]
    done_jobs = 0
    errors: list[str] = []
    finished_requests = 0
    stop = threading.Event()
    calls = [(lambda k=k, s=sched, d=seed, c=c: exps[k].run_job(s, d, c))
             for (k, sched, seed), c in zip(jobs, controls)]
    with _sigint_sets(stop), _Pool(calls, workers, cancel=lambda: [c.cancel() for c in controls]) as pool:
        pending = set(range(len(jobs)))
        if meanwhile:
            meanwhile()
        while pending and not stop.is_set() and not errors:
            for i, text, error in pool.finished(timeout=0.2):
                pending.discard(i)
                if error is None:
                    run = stores[jobs[i][0]].add(i, text)
                    finished_requests += run["requests"]["completed"]
                    done_jobs += 1
                elif isinstance(error, KeyboardInterrupt):
                    stop.set()
                elif isinstance(error, ValueError):
                    errors.append(str(error))
                else:
                    raise error
            if on_progress:
                running = sum(controls[i].completed for i in pending)
                on_progress(done_jobs, len(jobs), finished_requests + running)
        interrupted = stop.is_set()
        if pending:
            # Ctrl-C or an error: start no more jobs, stop the running ones,
            # keep whatever finished meanwhile.
            pool.close()
            for c in controls:
                c.cancel()
            pool.join()
            for i, text, error in pool.finished(timeout=0):
                if error is None:
                    stores[jobs[i][0]].add(i, text)
                elif not isinstance(error, (KeyboardInterrupt, ValueError)):
                    raise error
    if errors:
        raise UserError(errors[0])
    return [Outcome(exp, store, interrupted) for exp, store in zip(exps, stores)]


class _Pool:
    """``calls`` run on ``workers`` threads, in order; each result comes back
    as ``(index, value, None)`` or ``(index, None, exception)``. Leaving it
    by an exception calls ``cancel`` (which stops the running calls) and
    waits for them."""

    def __init__(self, calls: Sequence[Callable[[], str]], workers: int, cancel: Callable[[], Any]) -> None:
        self._cancel = cancel
        self._todo = iter(enumerate(calls))
        self._lock = threading.Lock()
        self._closed = False
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"iolab-sim-{n}", daemon=True)
                         for n in range(workers)]
        for t in self._threads:
            t.start()

    def _work(self) -> None:
        while True:
            with self._lock:
                item = None if self._closed else next(self._todo, None)
            if item is None:
                return
            i, call = item
            try:
                self._done.put((i, call(), None))
            except BaseException as e:  # handed to the caller, as a future's result() would
                self._done.put((i, None, e))

    def finished(self, timeout: float) -> list[tuple[int, Any, Optional[BaseException]]]:
        """The results ready now; waits up to ``timeout`` s for the first."""
        out = []
        try:
            out.append(self._done.get(timeout=timeout) if timeout > 0 else self._done.get_nowait())
            while True:
                out.append(self._done.get_nowait())
        except queue.Empty:
            return out

    def close(self) -> None:
        """Start no more calls (the running ones finish)."""
        with self._lock:
            self._closed = True

    def join(self) -> None:
        for t in self._threads:
            t.join()

    def __enter__(self) -> "_Pool":
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is not None:
            self.close()
            self._cancel()
        self.join()


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
