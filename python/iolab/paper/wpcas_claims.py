"""The WPCAS paper's claims, decided by paired statistics over seeds.

Every scheduler of an experiment runs on the same seeds (the same workload,
file placement and random choices), so every comparison is paired: for a
claim that scheduler A's figure exceeds B's, the per-seed relative
difference ``A/B - 1``, its mean and a Student-t interval over the seeds.

One fixed set of labels, with an equivalence margin of ±MARGIN (2%):

- ``reproduced``: the whole 95% interval lies beyond +MARGIN in the claimed
  direction (a difference of the paper's sign, larger than the margin);
- ``refuted``: the whole 95% interval lies beyond MARGIN the other way;
- ``not distinguishable``: equivalence within ±MARGIN by two one-sided tests
  at 5% (the 90% interval lies inside ±MARGIN): no difference worth the name;
- ``inconclusive``: none of these (the interval reaches across a margin).

A claim about an order of three (A > B > C) holds step by step: reproduced
if every step is, refuted if any step is, not distinguishable if every step
is, else inconclusive. When every seed gives the same difference the run is
deterministic (nothing in it is random: sequential IOzone with no think
time), the interval has width 0 and one run decides; the verdict says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np
import pandas as pd
from scipy import stats

MARGIN = 0.02
LABELS = ("reproduced", "refuted", "not distinguishable", "inconclusive")


@dataclass
class Paired:
    """A paired relative difference ``a/b - 1`` over seeds."""

    a: str
    b: str
    n: int
    mean: float
    lo95: float
    hi95: float
    lo90: float
    hi90: float
    deterministic: bool

    def text(self) -> str:
        if self.n == 0:
            return "not run"
        if self.n == 1:
            return f"{self.mean:+.1%} (one run: no interval)"
        if self.deterministic:
            return f"{self.mean:+.1%} (deterministic: every seed the same)"
        return f"{self.mean:+.1%} [{self.lo95:+.1%}, {self.hi95:+.1%}]"


def paired(df: pd.DataFrame, a: str, b: str, col: str = "throughput_mb_s",
           by: Sequence[str] = ("seed",)) -> Paired:
    """The per-seed relative difference of scheduler `a` over `b` in `col`."""
    x = df[df["scheduler"] == a].set_index(list(by))[col]
    y = df[df["scheduler"] == b].set_index(list(by))[col]
    both = pd.concat([x, y], axis=1, keys=["a", "b"]).dropna()
    both = both[both["b"] != 0]
    d = (both["a"] / both["b"] - 1).to_numpy(dtype=float)
    n = len(d)
    if n == 0:
        nan = float("nan")
        return Paired(a, b, 0, nan, nan, nan, nan, nan, False)
    mean = float(d.mean())
    if n < 2 or np.allclose(d, d[0], rtol=0, atol=1e-12):
        return Paired(a, b, n, mean, mean, mean, mean, mean, True)
    sem = float(stats.sem(d))
    t95, t90 = stats.t.ppf(0.975, n - 1), stats.t.ppf(0.95, n - 1)
    return Paired(a, b, n, mean, mean - t95 * sem, mean + t95 * sem, mean - t90 * sem, mean + t90 * sem, False)


def label(p: Paired, margin: float = MARGIN) -> str:
    """The verdict for a claim that `a` exceeds `b` (see the module doc)."""
    if p.n == 0:
        return "inconclusive"
    if p.lo95 > margin:
        return "reproduced"
    if p.hi95 < -margin:
        return "refuted"
    if -margin < p.lo90 and p.hi90 < margin:
        return "not distinguishable"
    return "inconclusive"


def combine(labels: Sequence[str]) -> str:
    """Several steps or points of one claim."""
    if not labels:
        return "inconclusive"
    if all(x == "reproduced" for x in labels):
        return "reproduced"
    if any(x == "refuted" for x in labels):
        return "refuted"
    if all(x == "not distinguishable" for x in labels):
        return "not distinguishable"
    return "inconclusive"


@dataclass
class Verdict:
    claim: str
    paper: str
    iolab: str
    verdict: str
    reading: str = "paper"
    # WPCAS's start-up rule in this verdict ("as-rule" or "ste").
    startup: str = "as-rule"
    note: str = ""
    steps: list[Paired] = field(default_factory=list)


def _means(df: pd.DataFrame, col: str) -> pd.Series:
    return df.groupby("scheduler")[col].mean()


def paired_mean_over(df: pd.DataFrame, a: str, b: str, over: str, col: str = "throughput_mb_s") -> Paired:
    """Per seed, the mean over the values of `over` (the class counts) of
    the relative difference of `a` over `b`: the paper's "about +x%" for a
    load as a whole."""
    per = []
    for _, g in df.groupby(over):
        x = g[g["scheduler"] == a].set_index("seed")[col]
        y = g[g["scheduler"] == b].set_index("seed")[col]
        per.append(x / y - 1)
    if not per:
        nan = float("nan")
        return Paired(a, b, 0, nan, nan, nan, nan, nan, False)
    d = pd.concat(per, axis=1).dropna().mean(axis=1)
    frame = pd.DataFrame({"scheduler": ["a"] * len(d) + ["b"] * len(d), "seed": list(d.index) * 2,
                          "v": list(d + 1) + [1.0] * len(d)})
    p = paired(frame, "a", "b", "v")
    return Paired(a, b, p.n, p.mean, p.lo95, p.hi95, p.lo90, p.hi90, p.deterministic)


def gain_claim(iozone: pd.DataFrame, mode: str, a: str, b: str, paper: str, claim: str, reading: str) -> Verdict:
    """`a` beats `b` on IOzone `mode`: decided on the mean gain over the
    class counts (the paper gives one figure per load), each class count
    shown with its own interval and label."""
    io = iozone[iozone["mode"] == mode]
    parts, steps = [], []
    for classes, g in io.groupby("classes"):
        p = paired(g, a, b)
        steps.append(p)
        parts.append(f"{classes}: {p.text()} {label(p)}")
    overall = paired_mean_over(io, a, b, "classes")
    text = f"mean over class counts {overall.text()}; " + "; ".join(parts) if parts else "not run"
    return Verdict(claim, paper, text, label(overall), reading, steps=[overall] + steps)


def best_of(df: pd.DataFrame, scheds: Sequence[str], col: str, best: bool) -> Optional[str]:
    m = _means(df, col)
    m = m[[s for s in scheds if s in m.index]]
    if m.empty:
        return None
    return str(m.idxmax() if best else m.idxmin())


def cfq_best_random(iozone: pd.DataFrame, reading: str) -> Verdict:
    parts, labels, steps = [], [], []
    for classes, g in iozone[iozone["mode"] == "random"].groupby("classes"):
        others = [s for s in set(g["scheduler"]) if s != "cfq"]
        runner = best_of(g, others, "throughput_mb_s", best=True)
        if runner is None or "cfq" not in set(g["scheduler"]):
            continue
        p = paired(g, "cfq", runner)
        steps.append(p)
        labels.append(label(p))
        parts.append(f"{classes}: CFQ over {runner} {p.text()}")
    return Verdict("CFQ has the highest random-load throughput (Figures 6–8)", "CFQ highest at 10, 40, 80",
                   "; ".join(parts) or "not run", combine(labels), reading, steps=steps)


def noop_deadline_sequential(iozone: pd.DataFrame, reading: str) -> Verdict:
    """At 10 and 40 classes both work-conserving schedulers beat every
    other; at 80 both trail every other (Figures 3–5)."""
    parts, labels, steps = [], [], []
    wc, others = ["noop", "deadline"], ["cfq", "as", "wpcas"]
    for classes, g in iozone[iozone["mode"] == "sequential"].groupby("classes"):
        lead = classes in (10, 40)
        if lead:
            a, b = best_of(g, wc, "throughput_mb_s", False), best_of(g, others, "throughput_mb_s", True)
        else:
            a, b = best_of(g, others, "throughput_mb_s", False), best_of(g, wc, "throughput_mb_s", True)
        if a is None or b is None:
            continue
        p = paired(g, a, b)
        steps.append(p)
        labels.append(label(p))
        parts.append(f"{classes}: {a} over {b} {p.text()}" + (" (NOOP/Deadline should lead)" if lead else
                                                            " (NOOP/Deadline should trail)"))
    return Verdict("NOOP and Deadline lead on sequential loads at 10 and 40 classes, trail at 80 (Figures 3–5)",
                   "lead at 10, 40; behind at 80", "; ".join(parts) or "not run", combine(labels), reading,
                   steps=steps)


def order_claim(df: pd.DataFrame, col: str, order: Sequence[str], claim: str, paper: str, reading: str,
                fmt: Callable[[float], str] = lambda v: f"{v:.3f}") -> Verdict:
    """`order[0]` > `order[1]` > ... in `col`, step by step."""
    means = _means(df, col)
    shown = " > ".join(f"{s} {fmt(means[s])}" for s in order if s in means.index)
    steps = [paired(df, a, b, col) for a, b in zip(order, order[1:])]
    labels = [label(p) for p in steps]
    detail = "; ".join(f"{p.a} over {p.b} {p.text()}" for p in steps)
    return Verdict(claim, paper, f"{shown} ({detail})", combine(labels), reading, steps=steps)


def table1_claims(t1: pd.DataFrame, reading: str) -> list[Verdict]:
    if t1.empty:
        return []
    out = [
        order_claim(t1, "deceptive_idleness_ms", ["as95", "as", "wpcas"],
                    "Deceptive idleness (ms): 95% > AS > WPCAS on the web-server load (Table 1)",
                    "0.238 > 0.113 > 0.047", reading),
        order_claim(t1, "throughput_mb_s", ["wpcas", "as", "as95"],
                    "Throughput: WPCAS > AS > 95% on the web-server load (Table 1)",
                    "45 238 > 34 231 > 27 415 kbit/s (text: +24% over AS, +40% over 95%)", reading,
                    fmt=lambda v: f"{v * 8000:,.0f} kbit/s"),
    ]
    steps = [paired(t1, "as", "wpcas", "mean_success_wait_ms"), paired(t1, "as95", "wpcas", "mean_success_wait_ms")]
    means = _means(t1, "mean_success_wait_ms")
    out.append(Verdict(
        "Mean wait of a successful anticipation is smallest for WPCAS (Table 1)",
        "WPCAS 0.39 ms (140 768 ms / 356 694); AS 0.59; 95% 0.92",
        ", ".join(f"{s} {means[s]:.3f} ms" for s in ("as95", "as", "wpcas") if s in means.index)
        + " (" + "; ".join(f"{p.a} over {p.b} {p.text()}" for p in steps) + ")",
        combine([label(p) for p in steps]), reading, steps=steps))
    return out


def iozone_claims(iozone: pd.DataFrame, reading: str) -> list[Verdict]:
    if iozone.empty:
        return []
    return [
        gain_claim(iozone, "sequential", "wpcas", "as", "+10.9%", "WPCAS beats AS on sequential IOzone (Figures 3–5)",
                   reading),
        gain_claim(iozone, "random", "wpcas", "as", "about +5%", "WPCAS beats AS on random IOzone (Figures 6–8)",
                   reading),
        cfq_best_random(iozone, reading),
        noop_deadline_sequential(iozone, reading),
    ]


def interval(values: np.ndarray) -> tuple[float, float]:
    """Mean and half-width of the 95% t interval (0 for one value or none)."""
    v = np.asarray(values, dtype=float)
    if len(v) == 0:
        return float("nan"), float("nan")
    if len(v) < 2 or np.allclose(v, v[0]):
        return float(v.mean()), 0.0
    return float(v.mean()), float(stats.t.ppf(0.975, len(v) - 1) * stats.sem(v))


# The paper's Table 1, for the side-by-side table (A-ST and A-FT in ms).
PAPER_TABLE1 = {
    "as95": {"A-T": 384630, "A-S": 362706, "A-F": 21924, "A-ST ms": 335140, "A-FT ms": 86536,
             "deceptive idleness ms": 0.238, "throughput kbit/s": 27415},
    "as": {"A-T": 371464, "A-S": 364590, "A-F": 6874, "A-ST ms": 214014, "A-FT ms": 41244,
           "deceptive idleness ms": 0.113, "throughput kbit/s": 34231},
    "wpcas": {"A-T": 361268, "A-S": 356694, "A-F": 4574, "A-ST ms": 140768, "A-FT ms": 16250,
              "deceptive idleness ms": 0.047, "throughput kbit/s": 45238},
}


def paper_ratios(s: str) -> dict[str, float]:
    """What the paper's Table 1 implies for scheduler `s` (ratios do not
    depend on the run's unstated length)."""
    t = PAPER_TABLE1[s]
    return {
        "success share": t["A-S"] / t["A-T"],
        "mean success wait ms": t["A-ST ms"] / t["A-S"],
        "mean failure wait ms": t["A-FT ms"] / t["A-F"],
        "A-FT/A-T ms": t["A-FT ms"] / t["A-T"],
        "A-FT/A-S ms": t["A-FT ms"] / t["A-S"],
    }
