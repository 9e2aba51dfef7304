"""The drive's read cache: hit time, bus rate, read-ahead and segments.

- A read repeated at once is served from the buffer: its time is the round
  trip, the hit overhead and the bus transfer; the difference between hits
  of 1 and N sectors is N-1 blocks' bus time.
- Read-ahead: after a one-sector read and a long idle wait, a read j sectors
  further is a hit while j is within what the drive read ahead (bisection on
  j, a fresh place each step), from a track's first sector and from its
  middle: a drive that reads to the track's end (DiskSim's "Buffer
  continuous read" 1) reads half a track less from the middle, one that
  reads a fixed count (3, "Maximum read-ahead") the same.
- Segment size: after a read of N sectors (twice the read-ahead) and a wait
  for the read-ahead to end, the offsets from its start that still hit are
  one run: its length (bisection on both ends).
- Segments: after reads of N places far apart, the first is still a hit
  while N is at most the number of segments (least recently used
  replacement; bisection on N).

A read is called a hit when it takes less than the one-sector hit time plus
a margin (half a sector or four times the timing noise): a miss that
happens to find its sector just arriving can pass for one, once in
T / margin, and a hit the host sees late for a miss, so each decision is
taken twice, and three more times when the two disagree (three of five).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from iolab.characterize.probe import Figure, Prober, figure, median


@dataclass
class CacheResult:
    hit_1: Figure  # ns, one-sector hit as the host sees it
    bus_per_block: Figure  # ns
    read_ahead: int | None  # sectors past the request (from a track's first sector)
    segments: int | None
    notes: list[str]
    read_ahead_mid: int | None = None  # from the middle of a track
    to_track_end: bool = False  # the read-ahead stops at the track's end
    segment_size: int | None = None  # sectors


# The largest read-ahead and segment probed (sectors): 4 MiB.
MAX_PROBE = 8192


class _Fresh:
    """Places never read, each below the last: ``take(need)`` gives the
    start of ``need`` sectors nobody has read (the drive reads ahead
    upwards, into places already used), optionally at a track's start."""

    def __init__(self, top: int, bottom: int, track_first: Callable[[int], int] | None) -> None:
        self.next = top
        self.bottom = bottom
        self.track_first = track_first

    def take(self, need: int = 1, at_track: bool = False, plus: int = 0) -> int:
        x = self.next - need - plus
        if at_track and self.track_first is not None:
            x = self.track_first(x)
        x += plus
        if x - plus < self.bottom:
            raise RuntimeError("cache probes ran out of fresh places")
        self.next = x - plus - 64
        return x


def _majority(decide) -> bool:
    """The first two when they agree; else three of five. A loaded host
    answers a hit late now and then (one read in ten or twenty), and one
    wrong decision stops a doubling search early."""
    votes = [decide(), decide()]
    if votes[0] == votes[1]:
        return votes[0]
    votes += [decide(), decide(), decide()]
    return votes.count(True) >= 3


def _timed(prober: Prober, lbn: int, count: int = 1) -> int:
    t0 = prober.now_ns()
    t1 = prober.read(lbn, count)
    return t1 - t0


def _largest(test: Callable[[int], bool], lo: int, hi: int, prober: Prober, until: float) -> tuple[int, bool]:
    """The largest n in [lo, hi] with test(n) true, test(lo) being true:
    doubling from lo, then bisection; each decision a majority (_majority).
    The first failure of the doubling is checked at twice its size: a
    hit there too means the failure was the host's noise, and the doubling
    goes on (twice at most). Returns (n, whether hi itself held)."""
    top = hi
    n = max(1, lo)
    again = 2
    while n < top:
        prober.check(until)
        m = min(top, 2 * n)
        if _majority(lambda m=m: test(m)):
            n = m
            continue
        if again and 2 * m <= top and _majority(lambda m=m: test(2 * m)):
            again -= 1
            n = 2 * m
            continue
        hi = m
        break
    else:
        return n, True
    return _edge(test, n, hi, True, prober, until), False


def _edge(test: Callable[[int], bool], lo: int, hi: int, lo_answer: bool, prober: Prober, until: float) -> int:
    """Bisection between lo, where test answers ``lo_answer``, and hi, where
    it answers the other (each decision a majority): the last index with
    lo's answer."""
    while hi - lo > 1:
        prober.check(until)
        mid = (lo + hi) // 2
        if _majority(lambda mid=mid: test(mid)) == lo_answer:
            lo = mid
        else:
            hi = mid
    return lo


def measure(prober: Prober, top: int, bottom: int, period: float, tau: float, jitter: float,
            until: float, big: int = 32, track_first: Callable[[int], int] | None = None,
            spt: int | None = None) -> CacheResult:
    """``track_first(lbn)``: the first LBN of the track holding ``lbn`` (the
    extracted layout's), ``spt`` sectors per track there: read-ahead from a
    track's start and middle."""
    notes: list[str] = []
    fresh = _Fresh(top, bottom, track_first)
    h1, hn = [], []
    for _ in range(7):
        x = fresh.take(big + 1)
        prober.read(x, 1)
        h1.append(_timed(prober, x, 1))
        y = fresh.take(big + 1)
        prober.read(y, big)
        hn.append(_timed(prober, y, big))
    hit1 = figure(h1, "ns")
    busf = figure([(b - a) / (big - 1) for a, b in zip(h1, hn)], "ns")
    margin = max(tau / 2, 4 * jitter, 40_000)
    limit = median(h1) + margin
    out = CacheResult(hit1, busf, None, None, notes)

    def ra_hit(j: int, plus: int) -> bool:
        x = fresh.take(j + 1, at_track=True, plus=plus)
        prober.read(x, 1)
        prober.wait(int(4 * period))
        return _timed(prober, x + j, 1) < limit

    try:
        if not _majority(lambda: ra_hit(1, 0)):
            out.read_ahead = 0
        else:
            out.read_ahead, top_held = _largest(lambda j: ra_hit(j, 0), 1, MAX_PROBE, prober, until)
            if top_held:
                notes.append(f"read-ahead reaches {MAX_PROBE} sectors or more (not measured further)")
        if track_first is not None and spt and out.read_ahead:
            half = spt // 2
            out.read_ahead_mid = (_largest(lambda j: ra_hit(j, half), 1, out.read_ahead, prober, until)[0]
                                  if _majority(lambda: ra_hit(1, half)) else 0)
            # To the track's end: from the start about spt - 1 sectors, from
            # the middle half a track fewer; a fixed count reads as many from
            # either. Whichever the middle's figure is nearer (each figure
            # can be a few sectors short: a late reply stops a search early).
            out.to_track_end = (abs(out.read_ahead - (spt - 1)) <= max(1, spt // 10)
                                and abs(out.read_ahead_mid - (out.read_ahead - half))
                                < abs(out.read_ahead_mid - out.read_ahead))
    except RuntimeError as e:
        notes.append(str(e))

    # Segment size: after a read of n sectors and a wait long enough for
    # the read-ahead to end, the segment holds one run of sectors; which
    # offsets from the read's start still hit shows its two ends (a drive
    # whose read-ahead replaces the request's data drops the front, one
    # that keeps it stops reading ahead when full). n is twice the
    # read-ahead, so that one or the other shows within the run.
    ra = out.read_ahead or 0
    n = min(MAX_PROBE, max(64, 2 * ra))
    settle = int(4 * period + 1.5 * (n + ra) * tau)

    def held_at(j: int) -> bool:
        x = fresh.take(n + ra + (spt or 0) + 2)
        prober.read(x, n)
        prober.wait(settle)
        return _timed(prober, x + j, 1) < limit

    try:
        # A sector surely held: the read-ahead's last, else the read's last.
        anchor = next((j for j in (n + ra - 1, n - 1) if _majority(lambda j=j: held_at(j))), None)
        if anchor is not None:
            reach = n + ra + (spt or 0) + 1  # past any read-ahead's end (to a track's end at most)
            # The run's top: held at the anchor, not at reach.
            last = _edge(held_at, anchor, reach, True, prober, until)
            # Its bottom: not held before offset 0, held at the anchor.
            first = 0 if _majority(lambda: held_at(0)) else _edge(held_at, -1, anchor, False, prober, until) + 1
            out.segment_size = last - first + 1
            notes.append(f"segment: after a read of {n} sectors and the read-ahead, offsets {first}-{last} "
                         "from its start still hit")
            if first == 0:
                notes.append(f"the segment holds {out.segment_size} sectors or more (the read's first still held)")
    except RuntimeError as e:
        notes.append(str(e))

    # Segments: places further apart than the read-ahead, so that none is
    # read ahead into another's segment.
    gap = (out.read_ahead or 0) + 64
    try:
        def holds(n: int) -> bool:
            xs = [fresh.take(gap) for _ in range(n)]
            for x in xs:
                prober.read(x, 1)
            return _timed(prober, xs[0], 1) < limit

        if not _majority(lambda: holds(1)):
            notes.append("a sector read once is not held for the next read: no read cache seen")
            out.segments = 0
        else:
            out.segments, top_held = _largest(holds, 1, 32, prober, until)
            if top_held:
                notes.append("32 places or more held: segments not measured further")
    except RuntimeError as e:
        notes.append(str(e))
    return out
