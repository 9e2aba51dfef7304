"""Rotation period, and the time one sector takes to pass under the head.

Descending single-sector reads: after a read of sector s completes, a read
of s-k must wait until s-k comes round again, so the replies are one
revolution less k sectors apart, T - k t, whatever the host's own cost (as
long as it is below that). Each read is of a sector never read before and
below every sector read so far, so it is never in the drive's cache
(read-ahead runs forward). Runs at strides 1, 2, 4... and a line through
their medians give T and t; a track boundary between two reads shifts that
one interval by the skew, which the median ignores.

A device whose intervals do not cluster (an SSD, a virtual disk, a page
cache) is not rotating: its descending reads take what a random read takes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from iolab.characterize.probe import Figure, Prober, median, robust_sd, se_median


@dataclass
class Rotation:
    rotating: bool
    period: Figure | None  # ns
    sector_time: Figure | None  # ns
    intervals1: list[int]
    intervals2: list[int]
    why: str

    @property
    def rpm(self) -> float:
        assert self.period is not None
        return 60e9 / self.period.value

    def to_json(self) -> dict:
        return {
            "rotating": self.rotating,
            "why": self.why,
            "period_ns": self.period.to_json() if self.period else None,
            "sector_time_ns": self.sector_time.to_json() if self.sector_time else None,
            "rpm": self.rpm if self.period else None,
        }


def descending(prober: Prober, top: int, stride: int, n: int) -> list[int]:
    """Times between the replies of n single-sector reads at top, top-stride, ..."""
    out: list[int] = []
    prev = prober.read(top)
    for i in range(1, n):
        t = prober.read(top - i * stride)
        out.append(t - prev)
        prev = t
    return out


def measure(prober: Prober, top: int, n: int = 30) -> Rotation:
    """Rotation from runs of ``n`` descending reads at strides 1, 2, 4, 8...
    (each run below the last), until a stride's interval is an eighth of a
    revolution shorter than stride 1's: I_k = T - k t, fitted by least
    squares over the strides up to there (a larger stride crosses track
    boundaries too often for its median to be clean)."""
    runs: dict[int, list[int]] = {1: descending(prober, top, 1, n)}
    m1 = median(runs[1])
    sd1 = robust_sd(runs[1])
    pos = top - n - 64
    k = 2
    while k <= 1 << 16 and pos - k * n > 0:
        runs[k] = descending(prober, pos, k, n)
        pos -= k * n + 64
        if m1 - median(runs[k]) > m1 / 8 or not m1 > 1_000_000:
            break
        k *= 2
    # A run the busy host spread wide (one stride of many) is left out of
    # the fit, and the rotating verdict rests on stride 1 and those left.
    limit = max(0.02 * m1, 50_000)
    used = {k: r for k, r in runs.items() if m1 - median(r) <= m1 / 8 and robust_sd(r) < limit}
    tight = 1 in used
    ks = sorted(used)
    i1 = runs[1]
    i2 = runs.get(2, [])
    if len(ks) < 2 or not (m1 > 1_000_000 and tight):
        why = (f"descending reads took {m1 / 1e6:.3f} ms (stride 1), spread {sd1 / 1e3:.0f} us: "
               "no revolution to wait for")
        return Rotation(False, None, None, i1, i2, why)
    # Least squares of median interval on stride: slope -t, intercept T.
    xs = [float(k) for k in ks]
    ys = [median(used[k]) for k in ks]
    ses = [se_median(used[k]) for k in ks]
    xm, ym = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - xm) ** 2 for x in xs)
    slope = sum((x - xm) * (y - ym) for x, y in zip(xs, ys)) / sxx
    t = -slope
    period = ym - slope * xm
    if not (0 < t < 0.25 * m1):
        why = f"intervals do not shorten with the stride (slope {slope / 1e3:.2f} us per sector): not rotating"
        return Rotation(False, None, None, i1, i2, why)
    # Spread: the medians' standard errors carried through the fit.
    se_t = math.sqrt(sum(((x - xm) / sxx) ** 2 * e**2 for x, e in zip(xs, ses)))
    se_p = math.sqrt(sum((1 / len(xs) - xm * (x - xm) / sxx) ** 2 * e**2 for x, e in zip(xs, ses)))
    nsamp = sum(len(r) for r in used.values())
    why = (f"descending reads {m1 / 1e6:.4f} ms apart at stride 1, shorter by {t / 1e3:.3f} us per sector "
           f"of stride (strides {', '.join(map(str, ks))})")
    return Rotation(True, Figure(period, se_p, nsamp, "ns"), Figure(t, se_t, nsamp, "ns"), i1, i2, why)
