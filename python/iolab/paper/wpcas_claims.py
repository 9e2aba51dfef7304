"""The WPCAS paper's claims, checked against what iolab measured.

Each check returns a :class:`Verdict`: the paper's figure, ours, and one of
``agrees``, ``direction only`` (same sign, significant, but a magnitude far
from the paper's), ``not distinguishable`` (no significant difference at
p < 0.05), ``disagrees``. Throughput differences are tested with Welch's t
test over seeds (scipy); orderings need each step to hold in the means.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

ALPHA = 0.05


@dataclass
class Verdict:
    claim: str
    paper: str
    iolab: str
    verdict: str
    note: str = ""


def _values(df: pd.DataFrame, sched: str, col: str = "throughput_mb_s") -> np.ndarray:
    return df.loc[df["scheduler"] == sched, col].to_numpy(dtype=float)


def gain(df: pd.DataFrame, a: str, b: str, col: str = "throughput_mb_s") -> tuple[float, float]:
    """Relative gain of `a` over `b` in the means, and Welch's p value."""
    x, y = _values(df, a, col), _values(df, b, col)
    if len(x) == 0 or len(y) == 0 or y.mean() == 0:
        return float("nan"), float("nan")
    g = x.mean() / y.mean() - 1
    if len(x) < 2 or len(y) < 2 or (x.std() == 0 and y.std() == 0):
        p = 0.0 if x.mean() != y.mean() else 1.0
    else:
        p = float(stats.ttest_ind(x, y, equal_var=False).pvalue)
    return float(g), p


def _gain_verdict(gains: list[tuple[float, float]], expected: float) -> str:
    sig_pos = sum(1 for g, p in gains if g > 0 and p < ALPHA)
    sig_neg = sum(1 for g, p in gains if g < 0 and p < ALPHA)
    mean_gain = float(np.nanmean([g for g, _ in gains]))
    if sig_neg > len(gains) / 2:
        return "disagrees"
    if sig_pos <= len(gains) / 2:
        return "not distinguishable" if sig_neg == 0 else "disagrees"
    return "agrees" if expected / 2 <= mean_gain <= expected * 2 else "direction only"


def wpcas_over_as(iozone: pd.DataFrame, mode: str, expected: float) -> Verdict:
    gains = []
    parts = []
    for classes, g in iozone[iozone["mode"] == mode].groupby("classes"):
        gi, p = gain(g, "wpcas", "as")
        gains.append((gi, p))
        parts.append(f"{classes}: {gi:+.1%} (p={p:.2g})")
    mean_gain = float(np.nanmean([g for g, _ in gains])) if gains else float("nan")
    return Verdict(
        claim=f"WPCAS beats AS on {mode} IOzone loads",
        paper=f"{expected:+.1%}",
        iolab=f"mean {mean_gain:+.1%}; by classes " + ", ".join(parts),
        verdict=_gain_verdict(gains, expected) if gains else "not run",
    )


def cfq_best_random(iozone: pd.DataFrame) -> Verdict:
    parts, ok, sig = [], 0, 0
    groups = list(iozone[iozone["mode"] == "random"].groupby("classes"))
    for classes, g in groups:
        means = g.groupby("scheduler")["throughput_mb_s"].mean().sort_values(ascending=False)
        best, runner = means.index[0], means.index[1]
        _, p = gain(g, best, runner)
        parts.append(f"{classes}: best {best} ({means.iloc[0]:.3f} MB/s), then {runner} (p={p:.2g})")
        if best == "cfq":
            ok += 1
            sig += p < ALPHA
    verdict = ("agrees" if ok == len(groups) and sig == len(groups) else
               "not distinguishable" if ok == len(groups) else "disagrees")
    return Verdict("CFQ has the highest random-load throughput (Figures 6–8)", "CFQ highest at 10, 40, 80",
                   "; ".join(parts), verdict if groups else "not run")


def noop_deadline_sequential(iozone: pd.DataFrame) -> Verdict:
    parts, expect_ok = [], []
    for classes, g in iozone[iozone["mode"] == "sequential"].groupby("classes"):
        means = g.groupby("scheduler")["throughput_mb_s"].mean()
        work_conserving = min(means.get("noop", np.nan), means.get("deadline", np.nan))
        others = max(means.get(s, np.nan) for s in ("cfq", "as", "wpcas"))
        lead = work_conserving > others
        parts.append(f"{classes}: noop/deadline {'lead' if lead else 'trail'} "
                     f"(min {work_conserving:.3f} vs best other {others:.3f} MB/s)")
        expect_ok.append(lead if classes in (10, 40) else not lead)
    verdict = "agrees" if expect_ok and all(expect_ok) else "disagrees" if expect_ok else "not run"
    if expect_ok and not all(expect_ok) and any(expect_ok):
        verdict = "partly"
    return Verdict("NOOP and Deadline lead on sequential loads at 10 and 40 classes, fall behind at 80",
                   "lead at 10, 40; behind at 80", "; ".join(parts), verdict)


def _order(table1: pd.DataFrame, col: str, order: list[str]) -> tuple[str, bool]:
    means = table1.groupby("scheduler")[col].mean()
    shown = " > ".join(f"{s} {means.get(s, np.nan):.3f}" for s in order)
    holds = all(means.get(a, np.nan) > means.get(b, np.nan) for a, b in zip(order, order[1:]))
    return shown, holds


def table1_claims(table1: pd.DataFrame) -> list[Verdict]:
    if table1.empty:
        return []
    out = []
    shown, holds = _order(table1, "deceptive_idleness_ms", ["as95", "as", "wpcas"])
    out.append(Verdict("Deceptive idleness (ms): 95% > AS > WPCAS on the web-server load",
                       "0.238 > 0.113 > 0.047", shown, "agrees" if holds else "disagrees"))
    shown, holds = _order(table1, "throughput_mb_s", ["wpcas", "as", "as95"])
    g_as, p_as = gain(table1, "wpcas", "as")
    g_95, p_95 = gain(table1, "wpcas", "as95")
    g_a95, p_a95 = gain(table1, "as", "as95")
    steps_significant = p_as < ALPHA and p_a95 < ALPHA
    any_reversed = (g_as < 0 and p_as < ALPHA) or (g_a95 < 0 and p_a95 < ALPHA)
    out.append(Verdict("Throughput (MB/s): WPCAS > AS > 95% on the web-server load",
                       "45 238 > 34 231 > 27 415 kbit/s",
                       f"{shown} (WPCAS vs AS p={p_as:.2g}, AS vs 95% p={p_a95:.2g})",
                       "agrees" if holds and steps_significant else
                       "disagrees" if any_reversed else "not distinguishable"))
    out.append(Verdict(
        "WPCAS's throughput gain over AS and over 95% (the paper's text and its Table 1 disagree)",
        "text +24% / +40%; Table 1 +32% / +65%",
        f"over AS {g_as:+.1%} (p={p_as:.2g}); over 95% {g_95:+.1%} (p={p_95:.2g})",
        _gain_verdict([(g_as, p_as)], 0.28) + " / " + _gain_verdict([(g_95, p_95)], 0.5),
    ))
    means = table1.groupby("scheduler")["mean_success_wait_ms"].mean()
    smallest = means.idxmin() if len(means) else "-"
    out.append(Verdict("Mean wait of a successful anticipation is smallest for WPCAS",
                       "WPCAS 0.39 ms (140 768 ms / 356 694); AS 0.59; 95% 0.92",
                       ", ".join(f"{s} {means[s]:.3f} ms" for s in means.index),
                       "agrees" if smallest == "wpcas" else "disagrees"))
    return out


# The paper's Table 1, for the side-by-side table (A-ST and A-FT in ms).
PAPER_TABLE1 = {
    "as95": {"A-T": 384630, "A-S": 362706, "A-F": 21924, "A-ST ms": 335140, "A-FT ms": 86536,
             "deceptive idleness ms": 0.238, "throughput kbit/s": 27415},
    "as": {"A-T": 371464, "A-S": 364590, "A-F": 6874, "A-ST ms": 214014, "A-FT ms": 41244,
           "deceptive idleness ms": 0.113, "throughput kbit/s": 34231},
    "wpcas": {"A-T": 361268, "A-S": 356694, "A-F": 4574, "A-ST ms": 140768, "A-FT ms": 16250,
              "deceptive idleness ms": 0.047, "throughput kbit/s": 45238},
}
