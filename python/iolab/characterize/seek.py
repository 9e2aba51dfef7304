"""Per-command overhead, head switch and the seek curve, by the smallest
host delay that costs a revolution.

A pair: a reference read ``a``, then a target read ``b`` sent ``D`` ns after
``a``'s reply. With ``D = 0`` the replies are ``I0`` apart. As ``D`` grows,
the drive reaches ``b`` later, and at ``D*`` it arrives just after ``b``'s
first sector has passed: the interval jumps by a revolution. At that
instant the host's send, the command overhead, the arm's move and the
sector's own pass exactly fill the time from ``a``'s reply, so

    V = I0 - D* = round trip + overhead + move + sector time + bus

whatever the angle between ``a`` and ``b``. With ``b`` on ``a``'s own track
(behind it, so the drive waits for it) the move is nothing: ``V0``. With
``b`` on the next surface of the cylinder it is the head switch; ``d``
cylinders away, the seek: ``seek(d) = V(d) - V0``. ``D*`` is found by
bisection over one revolution (10 steps: T/1024), each step with a fresh
pair moved so that its angle is the same (every read of a sector below all
read so far in its neighbourhood, never in the drive's cache).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from iolab.characterize.probe import Figure, Prober, median

STEPS = 10
BASE = 3  # pairs measuring I0


@dataclass
class Threshold:
    value_ns: float  # V
    resolution_ns: float
    i0_spread_ns: float
    pairs: int
    ok: bool
    why: str = ""
    i0_ns: float = math.nan  # the interval with no delay (what the target's reply waited for)


# The pair indices each attempt of robust_threshold may use: more than
# one threshold reads (BASE + 2 x (STEPS + 2)).
BLOCK = 32


def threshold(prober: Prober, pair_at: Callable[[int], tuple[int, int]], period: float,
              count: int = 1, drift_ns: float = 0.0) -> Threshold:
    """V for the pairs ``pair_at(0)``, ``pair_at(1)``... (each one fresh and,
    but for ``drift_ns`` per pair, at the same angle: pair k's target comes
    round k drift_ns later relative to its reference than pair 0's: its
    delay is that much longer and its interval that much less); the target
    read is of
    ``count`` sectors."""
    i0s = [prober.pair(*pair_at(k), count_b=count) - k * drift_ns for k in range(BASE)]
    spread = max(i0s) - min(i0s)
    if spread > period / 2:
        return Threshold(math.nan, math.nan, spread, BASE, False, "I0 straddles a revolution")
    i0 = median(i0s)
    k = BASE

    def flipped(delay: float) -> bool:
        nonlocal k
        i = prober.pair(*pair_at(k), delay_ns=int(max(0.0, delay + k * drift_ns)), count_b=count)
        i -= k * drift_ns
        k += 1
        return i > i0 + period / 2

    # A reply the host sees late flips one step the wrong way; the result is
    # checked a few resolutions either side and the search done again once
    # if the check fails.
    res = period / 2 ** (STEPS + 1)
    for _attempt in range(2):
        lo, hi = 0.0, period
        for _ in range(STEPS):
            mid = (lo + hi) / 2
            if flipped(mid):
                hi = mid
            else:
                lo = mid
        d_star = (lo + hi) / 2
        if not flipped(max(0.0, d_star - 8 * res)) and flipped(min(period, d_star + 8 * res)):
            return Threshold(i0 - d_star, res, spread, k, True, i0_ns=i0)
    return Threshold(i0 - d_star, res, spread, k, False, "the threshold did not hold when checked", i0)


def robust_threshold(prober: Prober, pair_at: Callable[[int, int], tuple[int, int]], period: float,
                     shift: int, count: int = 1, drift_ns: float = 0.0) -> Threshold:
    """``threshold`` with ``pair_at(k, s)``; if the base pairs straddle a
    revolution, again with the target ``shift`` sectors further round.
    Each attempt starts on the next block of BLOCK pair indices: a
    reference read again would be a cache hit, which leaves the arm where
    the last target put it."""
    used = 0
    for j, s in enumerate((0, shift, shift // 2, shift + shift // 2)):
        start = j * BLOCK
        t = threshold(prober, lambda k, s=s, start=start: pair_at(k + start, s), period, count, drift_ns)
        used += t.pairs
        if t.ok:
            break
    t.pairs = used
    return t


def same_track_pairs(track_at: Callable[[int], tuple[int, int]]) -> Callable[[int, int], tuple[int, int]]:
    """Pairs for V0, the threshold of a read that misses on the track the
    arm is on: the target ``b`` is a track's first LBN, the reference ``a``
    half a track after it (``s`` sectors nearer ``b``), pair ``k`` on the
    track ``track_at(k)`` gives (first LBN, LBNs; a track never read, below
    the last pair's). ``b`` comes round half a revolution after ``a``, once
    the drive's read-ahead after ``a`` has reached the track's end, so at
    the threshold the read-ahead is still on the track (it stops at the
    track's end only if the miss overhead were under a sector) and the arm
    does not move: V0 = round trip + miss overhead + sector + bus."""

    def pair(k: int, s: int) -> tuple[int, int]:
        b, spt = track_at(k)
        return b + max(1, spt // 2 - s), b

    return pair


def seek_distances(cylinders: int, quick: bool) -> list[int]:
    """Distances for the seek table: 1..10 (1, 2, 3, 5, 8 with ``quick``),
    every tenth of the stroke, and geometric steps between."""
    full = cylinders - 1
    ds = set(range(1, 11)) if not quick else {1, 2, 3, 5, 8}
    ds |= {max(1, round(full * q / 10)) for q in range(1, 11)}
    n = 6 if quick else 12
    lo, hi = 12, max(13, full // 10)
    for i in range(n):
        ds.add(round(lo * (hi / lo) ** (i / max(1, n - 1))))
    return sorted(d for d in ds if 1 <= d <= full)


def as_figure(v: Threshold, base: Threshold, less: float = 0.0, sd: float = 0.0) -> Figure:
    """The move's time: V less the base (the constant part: round trip,
    miss overhead, bus) and ``less`` (the target's own sector time, and
    any expected wait the base leaves out); ``sd``: the spread of what
    the host cannot see (the part of a sector the drive may finish
    reading ahead before it moves)."""
    return Figure(v.value_ns - base.value_ns - less,
                  math.sqrt(v.resolution_ns**2 + base.resolution_ns**2 + sd**2), v.pairs, "ns")


def switch_times(prober: Prober, firsts: list[int], spt: int, period: float,
                 until: float | None = None) -> list[tuple[int, float]]:
    """V across each track boundary (``firsts``: the first LBN of the upper
    track): a read near the start of the upper track, then one on the lower
    track. Between two surfaces of a cylinder the arm does not move (a head
    switch); between cylinders it seeks one. Where the skews are alike these
    times tell them apart. The reference read is near its track's start, so
    the drive's read-ahead after it stays on that track for most of a
    revolution."""
    out: list[tuple[int, float]] = []
    for b in firsts:
        if until is not None:
            prober.check(until)

        def pair(k: int, s: int, b: int = b) -> tuple[int, int]:
            # Each attempt's block of pairs further from the boundary on
            # both tracks, so that no sector is read twice.
            block, j = divmod(k, BLOCK)
            return b + 40 + BLOCK * block - j, b - spt + spt // 2 - j - BLOCK * block - s

        t = robust_threshold(prober, pair, period, spt // 4)
        if t.ok:
            out.append((b, t.value_ns))
    return out


def split_two(values: list[float], least: float) -> float | None:
    """The cut between two clusters of ``values`` (the widest gap in the
    sorted values), when that gap is over ``least``; else None."""
    v = sorted(values)
    if len(v) < 3:
        return None
    gaps = [(b - a, (a + b) / 2) for a, b in zip(v, v[1:])]
    gap, cut = max(gaps)
    return cut if gap > least else None


def suspects(values: list[float], distances: list[int] | None = None, tol: float = 0.05) -> list[int]:
    """Indices of seek times (in order of distance) out of line with their
    neighbours: more than ``tol`` off the line between the two (by
    distance, when ``distances`` are given), or, at either end, more than
    twice or under half the one neighbour. A seek curve is smooth but for
    a few per cent (DiskSim's extracted tables dip and bump now and then;
    such a point is measured again to no harm), so a point well off the
    line is a threshold a late reply misled."""
    out = []
    n = len(values)
    xs = distances if distances is not None else list(range(n))
    for i, v in enumerate(values):
        if 0 < i < n - 1:
            w = (xs[i] - xs[i - 1]) / (xs[i + 1] - xs[i - 1])
            line = values[i - 1] + w * (values[i + 1] - values[i - 1])
            if abs(v - line) > tol * line:
                out.append(i)
        elif n > 1:
            nb = values[1] if i == 0 else values[-2]
            if not nb / 2 <= v <= 2 * nb:
                out.append(i)
    return out


def distance_for(table: list[tuple[int, float]], t_ns: float) -> float | None:
    """The distance at which the seek table (distance, ns; by distance)
    first reaches ``t_ns``, on the line between its points; None beyond it."""
    for (d0, t0), (d1, t1) in zip(table, table[1:]):
        if t0 <= t_ns <= t1 and t1 > t0:
            return d0 + (t_ns - t0) / (t1 - t0) * (d1 - d0)
    return None


def relabel(seeks: list[tuple[int, Figure]], places: dict[int, tuple[int, int]], gaps: dict[int, int],
            zone_firsts: list[int]) -> list[tuple[int, Figure]]:
    """The seek table's distances once cylinders are left out between
    zones: each point's two cylinders (in the layout before; ``places``:
    id of the figure -> them) are as many further apart as the gaps
    between them. ``zone_firsts``: the zones' first cylinders in the
    layout before; ``gaps``: zone index -> the cylinders left out before
    it."""
    def moved(c: int) -> int:
        return c + sum(g for zi, g in gaps.items() if zone_firsts[zi] <= c)

    out: dict[int, Figure] = {}
    for d, f in seeks:
        ca, cb = places.get(id(f), (0, d))
        out.setdefault(moved(cb) - moved(ca), f)
    return sorted(out.items())
