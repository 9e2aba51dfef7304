"""The statistics of ``iolab kernel compare``: means with intervals, the
equivalence test (two one-sided Welch tests, margin ±5%), and the rankings
of elevators the kernel tells apart, ordered again by the simulator."""

from __future__ import annotations

import math
import warnings

MARGIN = 0.05

def mean_ci(xs: list[float]) -> tuple[float, float]:
    """Mean and 95% t half-width (NaN for fewer than two values)."""
    import numpy as np

    from iolab.report import ci95

    xs = [x for x in xs if not math.isnan(x)]
    if not xs:
        return math.nan, math.nan
    m = sum(xs) / len(xs)
    return m, (ci95(np.array(xs)) if len(xs) > 1 else math.nan)


def tost(a: list[float], b: list[float], margin: float = MARGIN) -> float:
    """p-value of two one-sided Welch tests that mean(b)/mean(a) - 1 lies
    within ±margin (relative to a's mean). Small p: equivalent."""
    from scipy import stats

    if len(a) < 2 or len(b) < 2:
        return math.nan
    ma = sum(a) / len(a)
    delta = margin * ma
    with warnings.catch_warnings():
        # the simulator's repetitions can be identical (a deterministic
        # workload): scipy warns about the zero variance, the test stands
        warnings.simplefilter("ignore", RuntimeWarning)
        lo = stats.ttest_ind([x + delta for x in b], a, equal_var=False, alternative="greater").pvalue
        hi = stats.ttest_ind([x - delta for x in b], a, equal_var=False, alternative="less").pvalue
    return float(max(lo, hi))


def welch_p(a: list[float], b: list[float]) -> float:
    """Two-sided Welch test p-value (NaN for fewer than two values a side)."""
    from scipy import stats

    if len(a) < 2 or len(b) < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p = stats.ttest_ind(a, b, equal_var=False).pvalue
    return float(p) if not math.isnan(p) else (0.0 if sum(a) / len(a) != sum(b) / len(b) else 1.0)


def holm(ps: list[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (NaN stays NaN)."""
    order = sorted((p, i) for i, p in enumerate(ps) if not math.isnan(p))
    out = [math.nan] * len(ps)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * p))
        out[i] = running
    return out


# The built-in elevators of Linux 6.1 (issue 13 asks for their ranking), and
# every elevator of the run.
BUILTIN = ["none", "mq-deadline", "bfq", "kyber"]


def ranking_sets(elevators: list[str]) -> dict[str, list[str]]:
    sets = {}
    builtin = [e for e in elevators if e in BUILTIN]
    if len(builtin) >= 2:
        sets["6.1 built-in"] = builtin
    if len(elevators) > len(builtin) and len(elevators) >= 2:
        sets["all"] = list(elevators)
    return sets


def rankings(rows: list[dict], elevators: list[str]) -> list[dict]:
    """Per disk and workload: the elevators ordered by the kernel's mean
    throughput and by the simulator's, and for every pair the kernel tells
    apart (Welch, Holm-corrected over the workload's pairs, p < 0.05)
    whether the simulator orders it the same way. Pairs the kernel cannot
    tell apart are not counted either way: their order is noise."""
    out = []
    groups: dict[tuple[str, str], dict[str, dict]] = {}
    for r in rows:
        if r["elevator"] in elevators:
            groups.setdefault((r["disk"], r["workload"]), {})[r["elevator"]] = r
    for (disk, wl), by_el in groups.items():
        els = [e for e in elevators if e in by_el]
        km = {e: by_el[e]["kernel_mb_s"][0] for e in els}
        sm = {e: by_el[e]["sim_mb_s"][0] for e in els}
        pairs = [(a, b) for i, a in enumerate(els) for b in els[i + 1:]]
        kp = holm([welch_p(by_el[a]["kernel_runs_mb_s"], by_el[b]["kernel_runs_mb_s"]) for a, b in pairs])
        sp = holm([welch_p(by_el[a]["sim_runs_mb_s"], by_el[b]["sim_runs_mb_s"]) for a, b in pairs])
        separated, alike, unlike = [], [], []
        for (a, b), p, q in zip(pairs, kp, sp):
            if math.isnan(p) or p >= 0.05:
                continue
            hi, lo = (a, b) if km[a] > km[b] else (b, a)
            separated.append((hi, lo))
            if sm[hi] > sm[lo]:
                alike.append((hi, lo))
            else:
                unlike.append((hi, lo, "tie" if not q < 0.05 else "reversed"))
        korder = sorted(els, key=lambda e: -km[e] if not math.isnan(km[e]) else math.inf)
        sorder = sorted(els, key=lambda e: -sm[e] if not math.isnan(sm[e]) else math.inf)
        out.append({"disk": disk, "workload": wl, "kernel_order": korder, "sim_order": sorder,
                    "same_order": korder == sorder, "separated": separated, "alike": alike,
                    "unlike": unlike})
    return out
