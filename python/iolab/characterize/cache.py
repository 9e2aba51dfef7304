"""The drive's read cache: hit time, bus rate, read-ahead and segments.

- A read repeated at once is served from the buffer: its time is the round
  trip, the hit overhead and the bus transfer; the difference between hits
  of 1 and N sectors is N-1 blocks' bus time.
- Read-ahead: after a one-sector read and a long idle wait, a read j sectors
  further is a hit while j is within what the drive read ahead (bisection on
  j, a fresh place each step).
- Segments: after reads of N places far apart, the first is still a hit
  while N is at most the number of segments (least recently used
  replacement; bisection on N).

A read is called a hit when it takes less than the one-sector hit time plus
a margin (half a sector or four times the timing noise): a miss that
happens to find its sector just arriving can pass for one, once in
T / margin, so each decision is taken twice, and a third time when the two
disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from iolab.characterize.probe import Figure, Prober, figure, median


@dataclass
class CacheResult:
    hit_1: Figure  # ns, one-sector hit as the host sees it
    bus_per_block: Figure  # ns
    read_ahead: int | None  # sectors past the request
    segments: int | None
    notes: list[str]


class _Fresh:
    """Places never read: descending from ``top`` in strides of ``gap``."""

    def __init__(self, top: int, gap: int, bottom: int) -> None:
        self.next = top
        self.gap = gap
        self.bottom = bottom

    def take(self) -> int:
        x = self.next
        self.next -= self.gap
        if x < self.bottom:
            raise RuntimeError("cache probes ran out of fresh places")
        return x


def _majority(decide) -> bool:
    """Two of three: the first two, or a third when they disagree."""
    a, b = decide(), decide()
    return a if a == b else decide()


def _timed(prober: Prober, lbn: int, count: int = 1) -> int:
    t0 = prober.now_ns()
    t1 = prober.read(lbn, count)
    return t1 - t0


def measure(prober: Prober, top: int, bottom: int, period: float, tau: float, jitter: float,
            until: float, big: int = 32) -> CacheResult:
    notes: list[str] = []
    gap = 4096
    fresh = _Fresh(top, gap, bottom)
    h1, hn = [], []
    for _ in range(7):
        x = fresh.take()
        prober.read(x, 1)
        h1.append(_timed(prober, x, 1))
        y = fresh.take()
        prober.read(y, big)
        hn.append(_timed(prober, y, big))
    hit1 = figure(h1, "ns")
    busf = figure([(b - a) / (big - 1) for a, b in zip(h1, hn)], "ns")
    margin = max(tau / 2, 4 * jitter, 40_000)
    limit = median(h1) + margin

    def is_hit(x_first: int, j: int) -> bool:
        prober.read(x_first, 1)
        prober.wait(int(4 * period))
        return _timed(prober, x_first + j, 1) < limit

    read_ahead: int | None = None
    try:
        lo, hi = 0, 4096  # hit at lo (the sector itself), unknown above
        if is_hit(fresh.take(), hi) and is_hit(fresh.take(), hi):
            notes.append(f"read-ahead reaches {hi} sectors or more (not measured further)")
            read_ahead = hi
        else:
            while hi - lo > 1:
                prober.check(until)
                mid = (lo + hi) // 2
                h = _majority(lambda mid=mid: is_hit(fresh.take(), mid))
                lo, hi = (mid, hi) if h else (lo, mid)
            read_ahead = lo
    except RuntimeError as e:
        notes.append(str(e))

    segments: int | None = None
    try:
        def holds(n: int) -> bool:
            xs = [fresh.take() for _ in range(n)]
            for x in xs:
                prober.read(x, 1)
            return _timed(prober, xs[0], 1) < limit

        lo, hi = 0, 33  # hit with lo places, miss with hi
        if not _majority(lambda: holds(1)):
            notes.append("a sector read once is not held for the next read: no read cache seen")
            segments = 0
        else:
            lo = 1
            while hi - lo > 1:
                prober.check(until)
                mid = (lo + hi) // 2
                h = _majority(lambda mid=mid: holds(mid))
                lo, hi = (mid, hi) if h else (lo, mid)
            segments = lo
            if lo == 32:
                notes.append("32 places or more held: segments not measured further")
    except RuntimeError as e:
        notes.append(str(e))
    return CacheResult(hit1, busf, read_ahead, segments, notes)
