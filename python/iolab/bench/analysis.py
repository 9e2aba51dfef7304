"""From a session's runs to comparisons: which measures, and the primary score.

Each measure of the workload (``JOB.DIR.STAT`` for each parameter variant)
becomes a table of one value per run -- configuration, repetition, run
order -- handed to :func:`iolab.bench.stats.compare`. The primary measure is
what the recommendation ranks by: the workload's primary metric itself, or,
when it has several cells (iozone's tests times record lengths; OLTP's read
and write IOPS), their geometric mean per configuration and repetition,
which weighs a 10% change in any cell alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
from scipy.stats import gmean
from statsmodels.stats.multitest import multipletests

from iolab.bench import fio
from iolab.bench.stats import Comparison, compare
from iolab.bench.words import count
from iolab.bench.workloads import expand
from iolab.cli.errors import UserError

UNITS = {
    "bw": ("MB/s", 1e6),
    "iops": ("IOPS", 1.0),
    "lat_mean": ("ms", 1e6),
    "lat_p50": ("ms", 1e6),
    "lat_p95": ("ms", 1e6),
    "lat_p99": ("ms", 1e6),
}
STAT_NAMES = {
    "bw": "throughput", "iops": "IOPS", "lat_mean": "mean latency",
    "lat_p50": "median latency", "lat_p95": "95th percentile latency",
    "lat_p99": "99th percentile latency",
}


@dataclass
class Measure:
    key: str            # JOB.DIR.STAT, or "score" for the geometric mean
    variant: str
    title: str
    stat: str
    data: pd.DataFrame  # config, rep, order, value (in the unit of `unit`)
    comparison: Comparison
    family_p: float = math.nan  # the ANOVA's p, Holm-corrected over all measures of the session

    @property
    def unit(self) -> str:
        return UNITS.get(self.stat, ("", 1.0))[0]


@dataclass
class Analysis:
    primary: Measure
    measures: list[Measure]
    configs: list[str]


def runs_frame(runs) -> pd.DataFrame:
    """One row per run and metric: run, rep, config, variant, key, value."""
    rows = [
        {"run": r.run, "rep": r.rep, "config": r.config, "variant": r.variant, "key": k, "value": v}
        for r in runs for k, v in r.metrics.items()
    ]
    return pd.DataFrame(rows, columns=["run", "rep", "config", "variant", "key", "value"])


def title(key: str, variant: str = "") -> str:
    job, direction, stat = fio.split_key(key)
    name = f"{job} {direction} {STAT_NAMES.get(stat, stat)}"
    return f"{name} ({variant})" if variant else name


def _measure(frame: pd.DataFrame, key: str, variant: str, configs: list[str],
             higher: bool, runs_per_rep: int, detect: float, stat: str, label: str) -> Measure:
    scale = UNITS.get(stat, ("", 1.0))[1]
    data = frame.rename(columns={"run": "order"})[["config", "rep", "order", "value"]].copy()
    data["value"] = data["value"] / scale
    data = data.sort_values("order").reset_index(drop=True)
    comparison = compare(data, higher, runs_per_rep=runs_per_rep, detect=detect, configs=configs)
    return Measure(key, variant, label, stat, data, comparison)


def _correct_family(measures: list[Measure]) -> None:
    """Holm over the measures' ANOVA p-values: many cells tested at 5% give false alarms.

    The primary measure is one planned test and keeps its own p-value; the
    others (iozone's 9 tests x record lengths, latencies...) are a family.
    """
    tested = [m for m in measures if m.comparison.anova is not None]
    if not tested:
        return
    _, corrected, _, _ = multipletests([m.comparison.anova.p for m in tested], method="holm")
    for m, p in zip(tested, corrected):
        m.family_p = float(p)


class NothingToCompare(UserError):
    """The runs hold nothing the analysis can use: no complete repetition, or
    none of the workload's primary metrics (fio's own messages say why)."""


def analyse(session, detect: float = 0.05) -> Analysis:
    """Compares the configurations over the complete repetitions only."""
    runs = session.complete_runs()
    if not runs:
        raise NothingToCompare(f"no repetition is complete ({count(len(session.runs), 'run')} of the "
                               f"{session.runs_per_rep} a repetition needs): nothing to compare")
    frame = runs_frame(runs)
    configs = [c.label for c in session.configs]
    workload = session.options.workload
    per_rep = session.runs_per_rep
    measures = []
    for key in expand(workload.measures, frame["key"].unique()):
        stat = fio.split_key(key)[2]
        higher = fio.HIGHER_IS_BETTER.get(stat, True)
        for variant in [v.label for v in session.variants]:
            cell = frame[(frame["key"] == key) & (frame["variant"] == variant)]
            if len(cell):
                measures.append(_measure(cell, key, variant, configs, higher, per_rep, detect,
                                         stat, title(key, variant)))
    _correct_family(measures)
    primary_keys = expand(workload.primary, frame["key"].unique())
    cells = frame[frame["key"].isin(primary_keys)]
    if not len(cells):
        said = fio.reason(list(dict.fromkeys(m for r in runs for m in r.fio_messages)))
        reason = f"; fio said: {said}" if said else (
            "; fio reported no error: did the job do I/O within the device and after the ramp time?")
        raise NothingToCompare(f"the runs measured none of the workload's primary metrics "
                               f"({', '.join(workload.primary)}){reason}")
    stat = fio.split_key(primary_keys[0])[2]
    higher = fio.HIGHER_IS_BETTER.get(stat, True)
    if len(primary_keys) == 1 and len(session.variants) == 1:
        primary = next(m for m in measures if m.key == primary_keys[0])
    else:
        n_cells = cells.groupby(["config", "rep"])["value"].transform("size")
        full = cells[n_cells == n_cells.max()]
        score = full.groupby(["config", "rep"], as_index=False).agg(
            value=("value", gmean), run=("run", "mean"))
        label = (f"geometric mean of {len(primary_keys) * len(session.variants)} "
                 f"{STAT_NAMES.get(stat, stat)} cells")
        primary = _measure(score, "score", "", configs, higher, per_rep, detect, stat, label)
    return Analysis(primary=primary, measures=measures, configs=configs)
