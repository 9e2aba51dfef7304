"""How a miss of several sectors reaches the host: the drive's read
watermark.

The threshold V of a miss on the arm's own track (seek.same_track_pairs)
is the time from the moment its first sector comes under the head, less
one sector, to its reply. For a read of n sectors it grows with n: a drive
that sends each block as the media gives it (DiskSim's "Never disconnect",
or a watermark of 0 on a bus faster than the media) by max(sector, bus
block) a sector; one that disconnects and reconnects once a fraction w of
the request is buffered ("High (read) water mark", set by request size)
by w sectors of media and then n blocks of bus:

    dV/dn = w tau + bus      (when that exceeds max(tau, bus))

so w = (dV/dn - bus) / tau. A slope within the noise of max(tau, bus),
and the host's own cost per block of the reply, is the drive that does
not wait: no watermark is written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from iolab.characterize import seek
from iolab.characterize.probe import Prober, median


@dataclass
class Transfer:
    sizes: list[int]  # sectors
    v_ns: list[float]  # V at each size (median of the thresholds that held)
    slope_ns: float  # dV/dn per sector
    slope_sd: float
    watermark: float | None  # fraction of the request, when the drive waits for one
    why: str

    def to_json(self) -> dict:
        return dict(vars(self))


def _slope(xs: list[float], ys: list[float]) -> float:
    xm, ym = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - xm) * (y - ym) for x, y in zip(xs, ys)) / sum((x - xm) ** 2 for x in xs)


def measure(prober: Prober, fresh_tracks: Callable[[], Callable[[int], tuple[int, int]]], period: float, spt: int,
            tau: float, bus_ns: float, v1: seek.Threshold, resolution_ns: float,
            host_block_ns: float = 0.0) -> Transfer | None:
    """V for targets of spt/8 and spt/4 sectors (three thresholds each, on
    tracks ``fresh_tracks()`` gives), with ``v1`` (V0, one sector) beside
    them."""
    sizes, vs = [1], [v1.value_ns]
    for n in sorted({max(2, spt // 8), max(3, spt // 4)}):
        if n > 5 * spt // 16 - 2:  # the target must lie before the reference on its track
            continue
        got = []
        for _ in range(3):
            t = seek.robust_threshold(prober, seek.same_track_pairs(fresh_tracks()), period, max(2, spt // 8), n)
            if t.ok:
                got.append(t.value_ns)
        if len(got) >= 2:
            sizes.append(n)
            vs.append(median(got))
    if len(sizes) < 2:
        return None
    slope = _slope([float(n) for n in sizes], vs)
    # The spread: the thresholds' resolution over the span of sizes.
    sd = math.sqrt(2) * resolution_ns / (sizes[-1] - sizes[0])
    # The host's own cost per block of a reply (the socket, the client's
    # copy: up to ``host_block_ns``) is in the measured bus time and, in
    # full, in the slope of a drive that does not wait: the margin allows it.
    plain = max(tau, bus_ns)
    if slope > plain + 3 * sd + 0.05 * plain + host_block_ns:
        w = min(1.0, max(0.0, (slope - bus_ns) / tau))
        why = (f"{slope / 1e3:.1f} us per sector against max(sector {tau / 1e3:.1f}, bus {bus_ns / 1e3:.1f}): "
               f"the drive waits for {w:.2f} of the request before it sends")
        return Transfer(sizes, vs, slope, sd, w, why)
    why = f"{slope / 1e3:.1f} us per sector, max(sector, bus) {plain / 1e3:.1f}: sent as the media gives it"
    return Transfer(sizes, vs, slope, sd, None, why)
