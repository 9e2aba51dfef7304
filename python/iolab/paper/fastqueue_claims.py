"""The FastQueue paper's claims (Wei, Lu, Zhou; seed 002), decided by paired
ratios over repetitions.

Every claim of the paper compares two things measured in the same
repetition (the two queues behind the same server under the same load, run
back to back in a shuffled order; or two commands of one run), so each is a
paired ratio ``a/b``: per repetition its logarithm, then the geometric mean
of the ratios with a Student-t interval on the logs (95% to decide, 90% for
the equivalence tests). A claim over several cells (message sizes and
producer counts, Figures 9 and 10) is decided on the per-repetition mean of
its cells' log ratios, each cell shown with its own interval.

The paper states magnitudes, not only directions, so a claim has a
:class:`Target`:

- ``at least k``: "成倍" (several-fold, k = 2: Figures 8, 9, 10), "an order
  of magnitude" (k = 10: the abstract), "明显多" (clearly more, k = 1 +
  EQUIVALENCE: Figure 3);
- ``about k``: "高出约230%" (about 230% higher, k = 3.3: section 1 and
  the conclusion), accepted within a band of ×/÷ (1 + ABOUT) around k.

One fixed set of labels:

- ``not distinguishable``: the two sides are equivalent within
  ±EQUIVALENCE (10%) by two one-sided tests at 5% (the 90% interval of the
  ratio lies inside [1/1.1, 1.1]): the claimed difference is absent
  altogether. Checked first: it is the most specific answer;
- ``reproduced``: ``at least k``: the whole 95% interval lies at or above
  k; ``about k``: the 90% interval lies inside the band (equivalent to the
  paper's figure within it);
- ``refuted``: the 95% interval excludes the claim: wholly below k, or
  wholly outside the band;
- ``inconclusive``: none of these.

One repetition gives no interval: inconclusive. When every repetition
gives the same ratio (nothing in the run varies) the interval has width 0
and the verdict says the run is deterministic; wall-clock measurements here
never are.

Beside each claim, the machine's ceiling: the same ratio with the
compared queue replaced by the best of both queues on tmpfs (where
``fsync`` costs nothing and no disk is touched), i.e. the most any queue
could gain over the baseline on this machine. A paper figure above the
whole ceiling interval cannot be reached here by any queue: the claim is
then bounded by the machine (two cores shared by the server and its load
generator), and the verdict's note says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional, Sequence

from scipy import stats

EQUIVALENCE = 0.10
ABOUT = 0.20
LABELS = ("reproduced", "refuted", "not distinguishable", "inconclusive")


@dataclass
class Ratio:
    """Geometric mean of paired ratios, with its 95% and 90% t-intervals."""

    n: int
    gmean: float
    lo95: float
    hi95: float
    lo90: float
    hi90: float
    deterministic: bool = False
    logs: list[float] = field(default_factory=list)

    def text(self) -> str:
        if self.n == 0:
            return "not measured"
        if self.deterministic:
            return f"{number(self.gmean)}× (deterministic: every repetition the same)"
        if self.n < 2:
            return f"{number(self.gmean)}× (one repetition: no interval)"
        return f"{number(self.gmean)}× [{number(self.lo95)}, {number(self.hi95)}] (n = {self.n})"

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("n", "gmean", "lo95", "hi95", "lo90", "hi90", "deterministic", "logs")}


NAN = float("nan")


def number(x: float) -> str:
    """Three significant digits, without exponents: 0.0123, 4.56, 789, 12,300."""
    if not math.isfinite(x):
        return "-"
    r = float(f"{x:.3g}")
    if r == 0:
        return "0"
    if abs(r) >= 1000:
        return f"{r:,.0f}"
    return f"{r:.{max(0, 2 - math.floor(math.log10(abs(r))))}f}"


def from_logs(logs: Sequence[float]) -> Ratio:
    """The ratio whose per-repetition logarithms are ``logs`` (NaNs dropped)."""
    v = [float(x) for x in logs if x is not None and math.isfinite(x)]
    n = len(v)
    if n == 0:
        return Ratio(0, NAN, NAN, NAN, NAN, NAN)
    m = sum(v) / n
    g = math.exp(m)
    if n < 2:
        return Ratio(n, g, NAN, NAN, NAN, NAN, logs=v)
    if max(v) - min(v) < 1e-12:
        return Ratio(n, g, g, g, g, g, True, v)
    sem = float(stats.sem(v))
    t95, t90 = float(stats.t.ppf(0.975, n - 1)), float(stats.t.ppf(0.95, n - 1))
    return Ratio(n, g, math.exp(m - t95 * sem), math.exp(m + t95 * sem), math.exp(m - t90 * sem),
                 math.exp(m + t90 * sem), False, v)


def log_ratio(a: float, b: float) -> float:
    """log(a/b), NaN when either is missing or not positive."""
    if a is None or b is None or not (a > 0 and b > 0) or not (math.isfinite(a) and math.isfinite(b)):
        return NAN
    return math.log(a / b)


def paired(pairs: Sequence[tuple[float, float]]) -> Ratio:
    """``a/b`` over repetitions, from one (a, b) pair per repetition."""
    return from_logs([log_ratio(a, b) for a, b in pairs])


def mean_over_cells(per_rep: Sequence[Sequence[float]]) -> Ratio:
    """A claim over several cells: per repetition the mean of its cells' log
    ratios (a repetition missing a cell is left out), then the interval."""
    logs = []
    for cells in per_rep:
        if cells and all(math.isfinite(x) for x in cells):
            logs.append(sum(cells) / len(cells))
    return from_logs(logs)


@dataclass(frozen=True)
class Target:
    """What the paper claims of a ratio: ``at least k`` or ``about k``."""

    kind: str
    k: float

    def __post_init__(self) -> None:
        if self.kind not in ("at least", "about") or not self.k > 0:
            raise ValueError(f"a target is 'at least' or 'about' a positive ratio, not {self.kind!r} {self.k!r}")

    def band(self, about: float = ABOUT) -> tuple[float, float]:
        """The ratios that satisfy the claim."""
        if self.kind == "at least":
            return self.k, math.inf
        return self.k / (1 + about), self.k * (1 + about)

    def text(self, about: float = ABOUT) -> str:
        if self.kind == "at least":
            return f"≥ {self.k:g}×"
        lo, hi = self.band(about)
        return f"about {self.k:g}× (accepted {number(lo)}–{number(hi)}×)"


def label(r: Ratio, target: Target, equivalence: float = EQUIVALENCE, about: float = ABOUT) -> str:
    """The verdict on ``r`` against ``target`` (see the module doc)."""
    if r.n == 0 or (r.n < 2 and not r.deterministic):
        return "inconclusive"
    if 1 / (1 + equivalence) < r.lo90 and r.hi90 < 1 + equivalence:
        return "not distinguishable"
    lo, hi = target.band(about)
    if target.kind == "at least":
        if r.lo95 >= lo:
            return "reproduced"
        if r.hi95 < lo:
            return "refuted"
        return "inconclusive"
    if lo <= r.lo90 and r.hi90 <= hi:
        return "reproduced"
    if r.hi95 < lo or r.lo95 > hi:
        return "refuted"
    return "inconclusive"


def ceiling_note(target: Target, ceiling: Optional[Ratio], about: float = ABOUT) -> str:
    """How the machine's ceiling bounds a claim: whether any queue could
    reach the paper's figure here. Judged against the lowest ratio the claim
    accepts (k, or the band's lower edge for "about k") and against k."""
    if ceiling is None or ceiling.n < 2 or not target.k > 1:
        return ""
    lo, _ = target.band(about)
    if ceiling.hi95 < lo:
        return (f"bounded by this machine: even a queue that costs nothing (tmpfs) reaches only "
                f"{ceiling.text()}, below the paper's {target.text(about)}")
    if ceiling.hi95 < target.k:
        return (f"at this machine's limit: a queue that costs nothing (tmpfs) reaches {ceiling.text()}, wholly below "
                f"the paper's {target.k:g}×; only the top of that interval reaches the lowest ratio the claim "
                f"accepts ({number(lo)}×)")
    if ceiling.lo95 >= lo:
        return f"within this machine's reach: a queue on tmpfs reaches {ceiling.text()}"
    return f"the ceiling ({ceiling.text()}) neither clearly reaches nor clearly misses the paper's figure"


@dataclass
class Verdict:
    """One claim of the paper and what the measurements say of it."""

    figure: str
    claim: str
    paper: str
    target: Target
    measured: Ratio
    verdict: str
    ceiling: Optional[Ratio] = None
    note: str = ""
    # (cell, ratio) for claims over several cells or commands.
    parts: list[tuple[str, Ratio]] = field(default_factory=list)
    # A few words for the terminal's table.
    short: str = ""

    def as_dict(self) -> dict:
        return {
            "figure": self.figure, "claim": self.claim, "paper": self.paper,
            "target": {"kind": self.target.kind, "k": self.target.k, "text": self.target.text()},
            "measured": self.measured.as_dict(), "measured_text": self.measured.text(), "verdict": self.verdict,
            "ceiling": self.ceiling.as_dict() if self.ceiling else None,
            "ceiling_text": self.ceiling.text() if self.ceiling else "", "note": self.note,
            "parts": [{"cell": c, **r.as_dict(), "text": r.text()} for c, r in self.parts], "short": self.short,
        }


def decide(figure: str, claim: str, paper: str, target: Target, measured: Ratio,
           ceiling: Optional[Ratio] = None, parts: Sequence[tuple[str, Ratio]] = (), note: str = "",
           short: str = "") -> Verdict:
    """A verdict with its label and, when a ceiling is given, how the machine
    bounds it."""
    bound = ceiling_note(target, ceiling)
    return Verdict(figure, claim, paper, target, measured, label(measured, target), ceiling,
                   "; ".join(x for x in (note, bound) if x), list(parts), short or claim)
