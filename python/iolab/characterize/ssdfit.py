"""What the latency curves of a disk that does not rotate tell of the `ssd`
preset's parameters (crates/iolab-sim/src/disk/ssd.rs), and what they do
not.

At depth 1 a read of s bytes within one flash page costs, in that model,
the page read (``read_ns``, tR) on one die, the page's bytes over one
channel and the request's bytes over the host link:

    L(s) = floor + tR + s / channel + s / host          (s <= a page)

and a large read, its pages striped over the channels (channel first),
tR once, each channel's share of the pages, and the host link:

    L(s) ~ floor + tR + s / (C channel) + s / host      (s >> C pages)

So the sizes up to 4 KiB give tR (their line's intercept, less the host's floor)
and 1/channel + 1/host (its slope); the large sizes 1/host + 1/(C
channel). Three unknowns (channel, host, C) in two slopes: the split is
told only by assuming C; none of program time, write buffer (writes are
never made), page size, chips, dies or planes shows in depth-1 reads.
Deeper queues show the parallel units (saturating throughput times the
one-read service time, when the dies bound it), but only on a device that
serves several reads at once: `iolab emu` serves one at a time, so through
it the depth curve is flat whatever the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class SsdFit:
    read_ns: float  # tR (+ any fixed controller time), above the floor
    read_sd: float
    small_ns_per_byte: float  # 1/channel + 1/host
    large_ns_per_byte: float | None  # 1/host + 1/(C channel)
    parallel_units: float | None  # saturating IOPS x one read's service, if the device overlaps reads
    notes: list[str]

    def to_json(self) -> dict:
        return dict(vars(self))


def line(points: list[tuple[float, float]]) -> tuple[float, float, float]:
    """Least squares y = a + b x: (a, b, the standard error of a)."""
    n = len(points)
    xm = sum(x for x, _ in points) / n
    ym = sum(y for _, y in points) / n
    sxx = sum((x - xm) ** 2 for x, _ in points)
    b = sum((x - xm) * (y - ym) for x, y in points) / sxx
    a = ym - b * xm
    if n <= 2:
        return a, b, math.nan
    s2 = sum((y - a - b * x) ** 2 for x, y in points) / (n - 2)
    return a, b, math.sqrt(s2 * (1 / n + xm**2 / sxx))


def fit(by_size: list[tuple[int, float]], floor_ns: float, by_depth: list[tuple[int, float]] | None = None,
        small_max: int = 4096) -> SsdFit | None:
    """``by_size``: (bytes, median latency ns) at depth 1; ``floor_ns``: the
    host's own time per read; ``by_depth``: (depth, IOPS) of 4 KiB reads."""
    notes: list[str] = []
    # Small: within one flash page (no flash of today has pages under
    # 4 KiB, and the reads are 4 KiB-aligned). Large: 64 KiB and more.
    small = [(float(s), v) for s, v in by_size if s <= small_max]
    large = [(float(s), v) for s, v in by_size if s >= 16 * small_max]
    if len(small) < 2:
        return None
    a, b, a_se = line(small)
    large_b = line(large)[1] if len(large) >= 2 else None
    units = None
    if by_depth:
        iops1 = next((i for d, i in by_depth if d == 1), None)
        best = max(i for _, i in by_depth)
        if iops1 and best > 1.5 * iops1:
            # Reads overlap: as many at once as the best throughput holds
            # of one read's own time.
            units = best * (a - floor_ns + 4096 * b) / 1e9
        else:
            notes.append("throughput does not grow with depth: the device (or `iolab emu`, which serves one "
                         "request at a time) does not overlap reads; its parallel units are not seen")
    return SsdFit(a - floor_ns, a_se, b, large_b, units, notes)
