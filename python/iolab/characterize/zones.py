"""Zones: sectors per track by LBN.

Sectors per track is the media's transfer rate in sectors per revolution;
:func:`geometry.scan` measures it exactly (two track boundaries known to the
sector) at any LBN in a dozen reads. It is sampled at points spread over the
disk, and where two neighbouring samples differ the zone boundary between
them is found by bisection on LBN, down to half a cylinder (then it is
rounded to the cylinder boundary the layout puts it on).
"""

from __future__ import annotations

from dataclasses import dataclass

from iolab.characterize.geometry import scan
from iolab.characterize.probe import BudgetExhausted, Prober


@dataclass
class Sample:
    lbn: int  # where the scan found its tracks (the lowest exact boundary)
    spt: int | None
    skew: int | None


def spt_at(prober: Prober, top: int, period: float, tau: float, jitter: float, until: float | None = None) -> Sample:
    """Sectors per track just below ``top``: the value two or more of three
    consecutive tracks agree on (a boundary a late reply hid makes one
    track look twice as long)."""
    sc = scan(prober, top, period, tau, jitter, tracks=4, until=until, max_reads=400)
    spts = sc.spts()
    best = max(set(spts), key=spts.count) if spts else None
    if best is not None and spts.count(best) >= 2:
        return Sample(sc.tracks[-1].first, best, sc.tracks[-1].skew)
    return Sample(top, None, None)


@dataclass
class Zone:
    first_lbn: int
    spt: int


def find_zones(prober: Prober, sectors: int, period: float, spt0: int, jitter: float, points: int,
               resolution: int, until: float) -> tuple[list[Zone], list[Sample], bool]:
    """Zones from ``points`` samples and bisection between differing ones to
    ``resolution`` sectors. Returns the zones (by first LBN), the samples,
    and whether it finished within ``until``."""
    samples: list[Sample] = []
    complete = True
    try:
        # Spread over the disk, and the very end too: a last zone the
        # capacity cuts short can be narrower than the spacing.
        tops = [min(sectors - 1, int(sectors * (i + 0.5) / points)) for i in range(points)] + [sectors - 1]
        for top in tops:
            tau = period / spt0 if not samples or samples[-1].spt is None else period / samples[-1].spt
            s = spt_at(prober, top, period, tau, jitter, until)
            samples.append(s)
    except BudgetExhausted:
        complete = False
    try:
        _recheck_lone(prober, samples, period, spt0, jitter, until)
    except BudgetExhausted:
        complete = False
    good = [s for s in samples if s.spt is not None]
    if not good:
        return [], samples, False
    zones = [Zone(0, good[0].spt)]  # type: ignore[arg-type]
    for a, b in zip(good, good[1:]):
        if a.spt == b.spt:
            continue
        lo, hi = a.lbn, b.lbn  # spt(lo) = a.spt, spt(hi) = b.spt
        try:
            while hi - lo > resolution:
                mid = (lo + hi) // 2
                s = spt_at(prober, mid, period, period / (a.spt or spt0), jitter, until)
                if s.spt == a.spt:
                    lo = mid
                elif s.spt == b.spt:
                    hi = mid
                else:
                    break  # a zone between, or a failed sample: leave the bound here
            # A sample reads the tracks below where it starts, so the
            # bisection knows the boundary to a few tracks only: the exact
            # one is where a scan across the window finds the sectors per
            # track change.
            exact = _exact_boundary(prober, lo, hi, a.spt, b.spt, period, jitter, until)  # type: ignore[arg-type]
            if exact is not None:
                lo = hi = exact
        except BudgetExhausted:
            complete = False
        zones.append(Zone((lo + hi + (lo != hi)) // 2, b.spt))  # type: ignore[arg-type]
    return zones, samples, complete


def _recheck_lone(prober: Prober, samples: list[Sample], period: float, spt0: int, jitter: float,
                  until: float) -> None:
    """A sample unlike both its neighbours, which agree with each other (or,
    at either end, unlike its one neighbour), is a zone of its own or a
    boundary a late reply hid (which doubles the track): two more samples
    nearby, and the value two of the three give (or none) is kept."""
    for i in range(len(samples)):
        s = samples[i]
        # Its nearest neighbours that gave a value.
        a = next((x for x in reversed(samples[:i]) if x.spt is not None), None)
        b = next((x for x in samples[i + 1:] if x.spt is not None), None)
        if a is None or b is None:
            # The first or the last sample: unlike its one neighbour, it is
            # checked too (a false last sample made a second zone on the HP
            # 97560 in CI; a real last zone is wider than the 8 tracks the
            # re-samples reach below).
            a = a or b
            b = a
        if s.spt is None or a is None or a.spt != b.spt or s.spt == a.spt:
            continue
        step = 4 * (s.spt or a.spt)
        got = [s.spt] + [spt_at(prober, s.lbn - k * step, period, period / (a.spt or spt0), jitter, until).spt
                         for k in (1, 2)]
        best = max(set(got), key=got.count)
        samples[i] = Sample(s.lbn, best if got.count(best) >= 2 else None, s.skew)


def _exact_boundary(prober: Prober, lo: int, hi: int, spt_a: int, spt_b: int, period: float, jitter: float,
                    until: float) -> int | None:
    """The first LBN of the zone above (``spt_b`` sectors per track): a
    scan down from above ``hi`` finds zone b's track boundaries exactly,
    each in the window its sectors per track predict, down to the zone's
    first one; below it the windows no longer fit. The lowest boundary with
    a track of spt_b sectors above it is the zone's start, when the scan
    went on below it (else it stopped short: None)."""
    top = hi + 3 * spt_b
    tracks = (top - lo) // spt_b + 12
    sb = scan(prober, top, period, period / spt_b, jitter, tracks=tracks, until=until,
              bottom=max(0, lo - 8 * spt_a), max_reads=40 * tracks)
    ok = [lo_.first for up, lo_ in zip(sb.tracks, sb.tracks[1:]) if up.first - lo_.first == spt_b]
    if not ok or sb.tracks[-1].first >= min(ok) or min(ok) < lo - 2 * spt_a:
        return None
    return min(ok)
