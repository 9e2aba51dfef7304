"""Numbers in running text: counts with their noun, percentages, p-values."""

from __future__ import annotations

import math


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``count(1, "variant")`` is "1 variant", ``count(3, "variant")`` "3 variants"."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def num(x: float | None) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    ax = abs(x)
    if ax >= 100:
        return f"{x:.0f}"
    if ax >= 10:
        return f"{x:.1f}"
    if ax >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def pct(x: float | None, signed: bool = False) -> str:
    """A fraction as a percentage: 0.1234 is "12.3%"; from 1000% on, no decimals."""
    if x is None or not math.isfinite(x):
        return "-"
    digits = 0 if abs(x) >= 10 else 1
    return f"{x * 100:+.{digits}f}%" if signed else f"{x * 100:.{digits}f}%"


def about(x: float | None) -> str:
    """An estimated fraction in a sentence: "about 12.3%", or "more than
    1000%" where the estimate says only that it is huge."""
    if x is None or not math.isfinite(x):
        return "an unknown amount"
    return "more than 1000%" if x > 10 else f"about {pct(x)}"


def pval(p: float | None) -> str:
    if p is None or not math.isfinite(p):
        return "-"
    return "< 0.0001" if p < 1e-4 else f"{p:.2g}" if p < 0.01 else f"{p:.3f}"


def interval(low: float, high: float) -> str:
    """A confidence interval, "975–1025": an en dash, so a negative bound
    reads as one; an overflowed upper end is "∞"."""
    if not (math.isfinite(low) or math.isfinite(high)):
        return "-"
    return f"{num(low)}–{'∞' if high == math.inf else num(high)}"
