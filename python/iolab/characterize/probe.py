"""The timing engine: single timed reads, timed pairs with a host delay
between them, a time budget, and the statistics every figure is given with.

Every probe is a read. The host's clock (CLOCK_MONOTONIC) stamps each
reply; a *pair* is a reference read then a target read sent ``delay`` ns
after the reference's reply arrived (the host spins, so the delay is exact
to a few microseconds), and its result is the time between the two
replies. What the host sees includes its own round trip (for NBD, the TCP
or Unix socket); the extractors subtract what they can measure of it and
say so.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Sequence

from iolab.characterize.device import Device


class BudgetExhausted(Exception):
    """The time budget ran out; what was measured so far is kept."""


@dataclass
class Figure:
    """A measured value with its spread: ``value`` (the median of the
    samples, or the estimate built from them), ``spread`` (the standard
    error of that estimate, from the samples' interquartile range, so one
    slow reply does not inflate it), ``n`` samples, and the unit."""

    value: float
    spread: float
    n: int
    unit: str

    def __str__(self) -> str:
        return f"{fmt(self.value)} ± {fmt(self.spread)} {self.unit} (n={self.n})"

    def to_json(self) -> dict:
        return {"value": self.value, "spread": self.spread, "n": self.n, "unit": self.unit}


def fmt(x: float) -> str:
    """Four significant digits, no exponent for the magnitudes we print."""
    if x == 0 or not math.isfinite(x):
        return str(x)
    digits = max(0, 3 - int(math.floor(math.log10(abs(x)))))
    return f"{x:.{digits}f}"


def median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    if n == 0:
        raise ValueError("median of no samples")
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def quantile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        raise ValueError("quantile of no samples")
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def robust_sd(xs: Sequence[float]) -> float:
    """The standard deviation a normal sample with this interquartile range has."""
    return (quantile(xs, 0.75) - quantile(xs, 0.25)) / 1.349 if len(xs) > 1 else 0.0


def se_median(xs: Sequence[float]) -> float:
    """Standard error of the median (1.2533 sd / sqrt(n))."""
    return 1.2533 * robust_sd(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0


def figure(xs: Sequence[float], unit: str, scale: float = 1.0) -> Figure:
    """The median of ``xs`` times ``scale``, with its standard error."""
    return Figure(median(xs) * scale, se_median(xs) * scale, len(xs), unit)


class Prober:
    """Reads on ``dev`` within ``budget_s`` seconds (steps check their share
    with :meth:`check`)."""

    def __init__(self, dev: Device, budget_s: float) -> None:
        self.dev = dev
        self.t0 = time.monotonic()
        self.budget_s = budget_s
        self.deadline = self.t0 + budget_s

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def check(self, until: float | None = None) -> None:
        """Raise BudgetExhausted past the whole budget (or ``until``, a
        monotonic instant a step was given)."""
        now = time.monotonic()
        if now > self.deadline or (until is not None and now > until):
            raise BudgetExhausted()

    def read(self, lbn: int, count: int = 1) -> int:
        return self.dev.read(lbn, count)

    def pair(self, a: int, b: int, delay_ns: int = 0, count: int = 1, count_b: int | None = None) -> int:
        """Read ``a`` then, ``delay_ns`` after its reply, ``b`` (``count_b``
        sectors, else ``count``): the ns between the two replies."""
        ta = self.dev.read(a, count)
        if delay_ns > 0:
            self.dev.advance_to(ta + delay_ns)
        tb = self.dev.read(b, count if count_b is None else count_b)
        return tb - ta

    def now_ns(self) -> int:
        return self.dev.now_ns()

    def wait(self, ns: int) -> None:
        until = self.dev.now_ns() + ns
        if ns > 2_000_000 and self.dev.kind != "virtual":
            time.sleep((ns - 1_000_000) / 1e9)
        self.dev.advance_to(until)
