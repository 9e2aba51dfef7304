"""A progress bar (rate and ETA) around simulation jobs, on stderr."""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional, Sequence

from iolab.simulate import Outcome, run_experiments


def run_with_progress(exps: Sequence, workers: Optional[int] = None, quiet: bool = False,
                      label: str = "simulating", meanwhile: Optional[Callable[[], None]] = None) -> list[Outcome]:
    """Run experiments, showing runs done, simulated requests/s and ETA
    when stderr is a terminal (``meanwhile``: see :func:`run_experiments`)."""
    if quiet or not sys.stderr.isatty():
        return run_experiments(exps, workers=workers, meanwhile=meanwhile)
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    with Progress(
        TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TextColumn("runs"),
        TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TimeRemainingColumn(),
        transient=True, console=Console(stderr=True),
    ) as bar:
        task = bar.add_task(label, total=sum(len(e.jobs()) for e in exps), rate="")
        t0 = time.monotonic()

        def progress(done: int, total: int, requests: int) -> None:
            dt = max(time.monotonic() - t0, 1e-6)
            bar.update(task, completed=done, rate=f"{requests / dt / 1e6:.2f} M req/s")

        return run_experiments(exps, workers=workers, on_progress=progress, meanwhile=meanwhile)
