"""CPU cost per request of each elevator, from ``testbed/guest/overhead.sh``.

One guest boot runs every elevator ``reps`` times in a rotated order on a
null_blk device; each run measures the guest's busy CPU time over a window
inside the fio run and the requests the device completed in it. The cost of
a request is busy time / requests (the whole path: fio's system calls, the
block layer, the elevator, null_blk's completion).

Two ratios against mq-deadline, both paired by repetition (the elevators of
one repetition ran back to back):

* ``total``: cost(elevator) / cost(mq-deadline);
* ``elevator``: (cost(elevator) - cost(none)) / (cost(mq-deadline) - cost(none)),
  the part of the cost the elevator adds over issuing without one.

Each is summarised by the geometric mean of the per-repetition ratios with
a 95% t-interval on their logarithms (``elevator`` ratios that are not
positive are reported as such and left out of its interval).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from scipy import stats

from iolab.cli.errors import UserError

REFERENCE = "mq-deadline"
BASELINE = "none"


@dataclass
class Run:
    rep: int
    elevator: str
    busy_ns: int
    requests: int

    @property
    def ns_per_request(self) -> float:
        return self.busy_ns / self.requests


@dataclass
class Ratio:
    """Geometric mean of paired ratios with a 95% interval."""

    mean: float
    low: float
    high: float
    n: int

    def fmt(self) -> str:
        if self.n == 0:
            return "n/a"
        if self.n == 1:
            return f"{self.mean:.2f} (1 rep)"
        return f"{self.mean:.2f} [{self.low:.2f}, {self.high:.2f}]"


def parse_runs(path: Path) -> list[Run]:
    """Read ``runs.txt`` (a header, then ``rep elevator busy_ns requests``)."""
    runs = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: cannot read it ({e})") from None
    for i, line in enumerate(lines[1:], start=2):
        parts = line.split()
        if len(parts) < 4:
            raise UserError(f"{path}:{i}: expected 'rep elevator busy_ns requests', got {line!r}")
        try:
            run = Run(int(parts[0]), parts[1], int(parts[2]), int(parts[3]))
        except ValueError:
            raise UserError(f"{path}:{i}: numbers expected in {line!r}") from None
        if run.requests <= 0:
            raise UserError(f"{path}:{i}: no requests completed under {run.elevator} "
                            "(the measuring window missed the run)")
        runs.append(run)
    if not runs:
        raise UserError(f"{path}: no runs")
    return runs


def geo_interval(ratios: list[float]) -> Ratio:
    """Geometric mean and 95% t-interval of positive ratios."""
    pos = [r for r in ratios if r > 0]
    if not pos:
        return Ratio(math.nan, math.nan, math.nan, 0)
    logs = [math.log(r) for r in pos]
    m = sum(logs) / len(logs)
    if len(logs) == 1:
        return Ratio(math.exp(m), math.nan, math.nan, 1)
    sd = statistics.stdev(logs)
    half = stats.t.ppf(0.975, len(logs) - 1) * sd / math.sqrt(len(logs))
    return Ratio(math.exp(m), math.exp(m - half), math.exp(m + half), len(logs))


@dataclass
class Summary:
    elevators: list[str]
    ns_per_request: dict[str, list[float]]
    total: dict[str, Ratio]
    elevator: dict[str, Ratio]
    nonpositive: dict[str, int]


def summarize(runs: list[Run]) -> Summary:
    by_rep: dict[int, dict[str, Run]] = {}
    order: list[str] = []
    for r in runs:
        by_rep.setdefault(r.rep, {})[r.elevator] = r
        if r.elevator not in order:
            order.append(r.elevator)
    if REFERENCE not in order:
        raise UserError(f"the runs have no {REFERENCE}: nothing to compare against")
    per = {e: [by_rep[k][e].ns_per_request for k in sorted(by_rep) if e in by_rep[k]] for e in order}
    total, elev, nonpos = {}, {}, {}
    for e in order:
        t, d = [], []
        for k in sorted(by_rep):
            reps = by_rep[k]
            if e not in reps or REFERENCE not in reps:
                continue
            ref = reps[REFERENCE].ns_per_request
            t.append(reps[e].ns_per_request / ref)
            if BASELINE in reps:
                base = reps[BASELINE].ns_per_request
                d.append((reps[e].ns_per_request - base) / (ref - base) if ref != base else math.nan)
        total[e] = geo_interval(t)
        elev[e] = geo_interval([x for x in d if not math.isnan(x)])
        nonpos[e] = sum(1 for x in d if not math.isnan(x) and x <= 0)
    return Summary(order, per, total, elev, nonpos)


def table(s: Summary) -> str:
    """A Markdown table of the summary."""
    lines = [
        "| elevator | ns per request (mean over reps) | × mq-deadline, whole path | × mq-deadline, elevator's own part |",
        "|---|---|---|---|",
    ]
    for e in s.elevators:
        vals = s.ns_per_request[e]
        mean = sum(vals) / len(vals)
        own = s.elevator[e].fmt() if e != BASELINE else "—"
        if s.nonpositive.get(e):
            own += f" ({s.nonpositive[e]} reps ≤ 0)"
        lines.append(f"| {e} | {mean:,.0f} | {s.total[e].fmt()} | {own} |")
    return "\n".join(lines)
