"""The blk tracer's own cost in the guest, measured and taken back.

The ``guest``, ``workload`` and ``cpu`` think models (and ``--queue-runs``)
read the guest's times from traced runs, and the tracer is not free: under
``--icount 6`` (64 ns of the guest's clock per instruction) a traced
one-process run's gap at the disk is 130–350 µs longer per request than
the untraced run's (modern7200, docs/kernel.md, "36 rows again"). With one
process the calibration's split cancels it (what the traced C→I gap holds
too much, the rest charged to every request holds too little); with four
processes on one vCPU a process's gap also holds the tracing of the others'
requests and of the elevator's messages, and nothing cancelled that: the
compared workloads' traced runs ran 3–17% slower than their untraced runs,
and the simulator followed the traced ones.

The cost is measured per line the tracer writes, in the calibration's own
pairs of runs (the same one-process workload under the same elevator, once
untraced and once traced): the traced run's mean gap at the disk less the
untraced run's is the cost of the traced run's lines per request. Two kinds
of line cost differently: a block event (Q, G, I, D, C: a record filled in)
and a message (an elevator's own line, formatted by ``vsnprintf``; BFQ's
one-process runs write 12 a request, the module's none). Where the pairs
hold both kinds (BFQ among the calibrated elevators) the two costs are the
least-squares fit over the pairs; where no pair writes messages a message
is taken to cost a block event (and the calibration says so). A window of
the guest's time is then shortened by that cost for every line written
inside it while the window's process could run: from the window's start,
through the end, except while the process sleeps its own think time (fio's
``thinktime``, taken as beginning at the completion; what the others trace
then does not delay it).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

# Any line the tracer wrote: "comm-pid [cpu] flags seconds: ..."
_LINE = re.compile(r"^\s*.+?-\d+\s+\[\d+\]\s+\S+\s+(?P<t>\d+\.\d+):")
KINDS = ("block", "message")


def line_times_us(path: Path) -> dict:
    """The guest-clock times (µs, sorted) of every line of a trace, by kind."""
    import numpy as np

    from iolab.kernel.bfqlog import BLOCK_EVENT, read_trace

    out: dict[str, list[float]] = {k: [] for k in KINDS}
    for line in read_trace(path).splitlines():
        m = _LINE.match(line)
        if m:
            out["block" if BLOCK_EVENT.match(line) else "message"].append(float(m["t"]) * 1e6)
    return {k: np.sort(np.asarray(v, dtype=float)) for k, v in out.items()}


def lines_per_request(path: Path, marker: int | None = None) -> dict[str, float]:
    """A traced run's lines of each kind over its completions (the run's
    two marker requests' lines left out): the tracer's calls a request
    costs."""
    from iolab.kernel.bfqlog import BLOCK_EVENT, read_trace

    n = {k: 0 for k in KINDS}
    completions = 0
    for line in read_trace(path).splitlines():
        if not _LINE.match(line):
            continue
        b = BLOCK_EVENT.match(line)
        if b and marker is not None and int(b["sector"]) >= marker:
            continue
        n["block" if b else "message"] += 1
        completions += bool(b and b["act"] == "C")
    return {k: (v / completions if completions else math.nan) for k, v in n.items()}


def fit_costs(pairs: list[tuple[float, dict[str, float]]]) -> dict:
    """The cost of a line of each kind, µs, from pairs of (the traced run's
    mean gap at the disk less the untraced one's, its lines per request by
    kind): least squares on both costs where some pairs write messages and
    some do not, else one cost for every line. Negative fits (noise on a
    pair or two) are taken as zero."""
    import numpy as np

    pairs = [(d, n) for d, n in pairs if not math.isnan(d) and not any(map(math.isnan, n.values()))
             and sum(n.values()) > 0]
    if not pairs:
        return {"block_us": 0.0, "message_us": 0.0, "n": 0, "message_assumed": True}
    d = np.array([p[0] for p in pairs])
    a = np.array([[p[1]["block"], p[1]["message"]] for p in pairs])
    if (a[:, 1] > 0).any() and (a[:, 1] == 0).any():
        (cb, cm), *_ = np.linalg.lstsq(a, d, rcond=None)
        assumed = False
    else:
        cb = cm = float(np.mean(d / a.sum(axis=1)))
        assumed = True
    resid = d - a @ np.array([cb, cm])
    return {"block_us": max(float(cb), 0.0), "message_us": max(float(cm), 0.0), "n": len(pairs),
            "message_assumed": assumed,
            "residual_sd_us": float(np.std(resid, ddof=1)) if len(pairs) > 2 else math.nan}


class TakeBack:
    """Shortens windows of one trace by the tracer's cost of the lines
    written inside them."""

    def __init__(self, times_us: dict, costs_us: dict):
        self.times = times_us
        self.costs = {k: costs_us.get(f"{k}_us", 0.0) for k in KINDS}

    def lines(self, kind: str, start: float, end: float, asleep_us: float = 0.0) -> int:
        """Lines of ``kind`` written in [start, end), less those in (start,
        start + asleep_us): the window's own first line (a completion, an
        insertion) is its process's, and costs it before it sleeps."""
        import numpy as np

        ts = self.times[kind]
        n = int(np.searchsorted(ts, end, "left") - np.searchsorted(ts, start, "left"))
        if asleep_us > 0:
            wake = min(start + asleep_us, end)
            n -= max(int(np.searchsorted(ts, wake, "left") - np.searchsorted(ts, start, "right")), 0)
        return n

    def window(self, start: float, end: float, asleep_us: float = 0.0) -> float:
        """The window's length, µs, without the tracer's part."""
        return (end - start) - sum(c * self.lines(k, start, end, asleep_us)
                                   for k, c in self.costs.items() if c)
