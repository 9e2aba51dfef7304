"""Track boundaries, sectors per track, skews and surfaces, from the phase
at which single-sector reads complete.

A read of one sector completes when that sector has passed under the head
(plus a constant: the bus, the reply), so between two reads of sectors k
apart on one track the replies are k sector-times apart modulo the
revolution T. Across a track boundary the first sector of the upper track
starts ``skew`` sectors after the lower track's last one ends, so the
phase jumps by ``skew`` sector-times: the boundary shows as the phase
residual ``eps`` leaving zero.

The scan reads fresh sectors in descending order only (read-ahead runs
forward, so none is ever in the drive's cache): a coarse step until a
boundary shows between two reads, then, on the tracks below, windows
predicted from the bounds on sectors per track, read at an eighth of their
width, until two consecutive boundaries are known to the sector; from there
two reads per track (the first sector of each track and the sector before
it) give every boundary's skew. Skews of two sizes are track and cylinder
switches; the period of the larger is the number of surfaces.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from iolab.characterize.probe import BudgetExhausted, Figure, Prober, median, se_median


def wrap(x: float, period: float) -> float:
    """x modulo period, in (-period/2, period/2]."""
    return x - period * math.floor(x / period + 0.5)


@dataclass
class Track:
    """A boundary known to the sector: ``first`` is the first LBN of the
    upper track; ``skew`` the sectors between the lower track's end and its
    start (the phase jump)."""

    first: int
    skew: int
    jump_ns: float


@dataclass
class Scan:
    top: int
    tracks: list[Track] = field(default_factory=list)  # descending `first`
    reads: int = 0
    tau_ns: float = 0.0
    tol: float = 1.0  # sectors: how far one boundary's skew may be off

    def spts(self) -> list[int]:
        """Sectors per track between consecutive exact boundaries."""
        return [a.first - b.first for a, b in zip(self.tracks, self.tracks[1:])]

    def spt(self) -> int | None:
        c = Counter(self.spts())
        return c.most_common(1)[0][0] if c else None


class _Scanner:
    def __init__(self, prober: Prober, period: float, tau: float, jitter: float) -> None:
        self.p = prober
        self.T = period
        self.tau = tau
        self.tau0 = tau
        self.steps: list[tuple[int, int]] = []
        self.exact = False
        self.thr = min(period / 16, max(150_000.0, 8 * jitter))

    def eps(self, k: int, dt: int) -> float:
        return wrap(dt + k * self.tau, self.T)

    def learn(self, k: int, dt: int) -> bool:
        """The sector time here, from the steps of 8 sectors or more: each
        is k t apart (mod T) but for the few that cross a boundary, which the
        median leaves out. The rotation step measured t elsewhere on the
        disk; a zone has its own."""
        if self.exact or k < 8:
            return False
        self.steps.append((k, dt))
        if len(self.steps) >= 3:
            self.tau = self.tau0 - median([wrap(d + j * self.tau0, self.T) / j for j, d in self.steps])
            return True
        return False


def scan(prober: Prober, top: int, period: float, tau: float, jitter: float, tracks: int,
         until: float | None = None, bottom: int = 0, enough: Callable[[Scan], bool] | None = None,
         max_reads: int | None = None) -> Scan:
    """Scan down from ``top`` until ``tracks`` boundaries are known to the
    sector, or ``enough(scan)`` says so, or the step's time ``until`` passes
    (what was found is kept), or ``bottom``."""
    try:
        return _scan(prober, top, period, tau, jitter, tracks, until, bottom, enough, max_reads)
    except BudgetExhausted as e:
        if e.args and isinstance(e.args[0], Scan):
            return e.args[0]
        raise


def _scan(prober: Prober, top: int, period: float, tau: float, jitter: float, tracks: int,
          until: float | None, bottom: int, enough: Callable[[Scan], bool] | None,
          max_reads: int | None) -> Scan:
    s = _Scanner(prober, period, tau, jitter)
    out = Scan(top)
    out.tol = max(1.5, 4 * jitter / tau)
    spt0 = period / tau
    spt_lo, spt_hi = int(spt0 * 0.7), int(math.ceil(spt0 * 1.45)) + 1
    bounds0 = (spt_lo, spt_hi)
    pos = top
    tprev = prober.read(pos)
    out.reads += 1
    last: tuple[int, int] | None = None  # the last boundary B lies in (lo, hi]
    exact_prev: int | None = None
    while len(out.tracks) < tracks and not (enough and enough(out)) and (max_reads is None or out.reads < max_reads):
        try:
            prober.check(until)
        except BudgetExhausted:
            out.tau_ns = s.tau
            raise BudgetExhausted(out) from None
        if last is None:
            nxt = pos - max(1, spt_lo // 6)
        else:
            lo, hi = last
            wlo, whi = lo - spt_hi, hi - spt_lo  # next boundary in (wlo, whi]
            if pos > whi:
                nxt = whi
            else:
                nxt = pos - max(1, math.ceil((whi - wlo) / 8))
                if pos <= wlo:  # passed the window with nothing: start over
                    # (once sectors per track are known exactly they stay known)
                    last = None
                    if not s.exact:
                        spt_lo, spt_hi = bounds0
                    exact_prev = None
                    nxt = pos - max(1, spt_lo // 6)
        if nxt < bottom:
            break
        t = prober.read(nxt)
        out.reads += 1
        k, dt = pos - nxt, t - tprev
        if s.learn(k, dt) and last is None:
            # The sector time here is known better now: so is sectors per track.
            spt0 = period / s.tau
            bounds0 = spt_lo, spt_hi = int(spt0 * 0.85), int(math.ceil(spt0 * 1.18)) + 1
        e = s.eps(k, dt)
        if abs(e) <= s.thr:
            pos, tprev = nxt, t
            continue
        # A boundary in (nxt, pos], or a reply the host saw late. A point is
        # trusted when the sector below it agrees with it (the next read of
        # the same track, T - t later); try a few sectors down.
        cand, tc = nxt, t
        trusted = None
        for _ in range(4):
            t2 = prober.read(cand - 1)
            out.reads += 1
            if abs(s.eps(1, t2 - tc)) <= s.thr:
                trusted = (cand, tc, cand - 1, t2)
                break
            cand, tc = cand - 1, t2
        if trusted is None:  # four disagreeing reads: start over from the last one
            pos, tprev = cand, tc
            last, exact_prev = None, None
            if not s.exact:
                spt_lo, spt_hi = bounds0
            continue
        x, tx, below, tb = trusted
        k = pos - x
        e = s.eps(k, tx - tprev)
        if abs(e) > s.thr:
            if last is not None:
                lo_p, hi_p = last
                a, b = lo_p + 1 - pos, hi_p - x - 1
                if max(a, spt_lo) <= min(b, spt_hi):
                    spt_lo, spt_hi = max(a, spt_lo), min(b, spt_hi)
                elif not s.exact:
                    spt_lo, spt_hi = bounds0
            last = (x, pos)
            if k == 1:
                skew_ns = (-e) % s.T
                out.tracks.append(Track(pos, int(round(skew_ns / s.tau)), skew_ns))
                if exact_prev is not None and spt_lo <= exact_prev - pos <= spt_hi and not s.exact:
                    spt_lo = spt_hi = exact_prev - pos
                    # Sectors per track are LBNs; the sector time stays the
                    # one measured (a track may hold spare sectors too).
                    s.exact = True
                exact_prev = pos
        pos, tprev = below, tb
    out.tau_ns = s.tau
    return out


@dataclass
class Surfaces:
    """What the skews say: ``track_skew``/``cyl_skew`` in sectors, ``heads``
    (None when every boundary has the same skew: then the cylinders cannot
    be told from the skews), and the LBN of a cylinder's first sector."""

    track_skew: int
    cyl_skew: int | None
    heads: int | None
    cylinder_start: int | None
    why: str
    support: int = 0  # switch_period's score for `heads`
    runner_up: int = 0  # and the best other period's


def track_indices(sc: Scan, spt: int) -> dict[int, int]:
    """Each exact boundary's track number, counting down from the scan's
    top: a gap of several tracks holds as many whole tracks as fit, and one
    more for a part of a track (a short track at a range's end) but not for
    a sector or two (a slipped defect)."""
    out = {}
    idx = 0
    prev = None
    for t in sc.tracks:
        if prev is not None:
            d = prev - t.first
            whole, rem = divmod(d, spt)
            idx += max(1, whole + (1 if rem > spt // 8 and rem < spt - spt // 8 else 0)
                       + (1 if rem >= spt - spt // 8 else 0))
        out[t.first] = idx
        prev = t.first
    return out


def found_cylinders(sc: Scan) -> bool:
    """Enough to tell the surfaces: three cylinder switches on one lattice of
    the period, and no other period explaining them as well."""
    s = surfaces(sc)
    return s.heads is not None and s.support >= 3 and s.support > s.runner_up


def enough_tracks(least: int = 64) -> Callable[[Scan], bool]:
    """When the scan may stop: ``least`` boundaries known, and the surfaces
    found or no cylinder switch shown by the skews (the switch times tell
    them apart then, if anything does). A scan that has seen switches but
    not three on one lattice goes on (to 128 boundaries): a switch a late
    reply hid would otherwise double the period. ``least`` boundaries let
    short tracks (spares at a range's end) recur."""

    def enough(sc: Scan) -> bool:
        if len(sc.tracks) < least:
            return False
        return found_cylinders(sc) or surfaces(sc).cyl_skew is None

    return enough


def switch_period(pos: list[int], observed: set[int] | None = None) -> tuple[int, int, int, int]:
    """The number of tracks between cylinder switches, from the track
    indices at which switches were seen: the period and anchor whose lattice
    explains the most of them, less the lattice points inside the scanned
    span where no switch was seen. A boundary whose skew the timing noise
    moved shows as a switch off the lattice (it splits a period into two
    gaps), and a divisor of the period predicts switches that are not there,
    so neither wins. ``observed``: the track indices of every boundary
    known to the sector; a lattice point with no known boundary (the scan
    lost it to a late reply) says nothing either way. Returns (period, its
    score, the best other period's, an index on its lattice)."""
    if len(pos) < 2:
        return 0, 0, 0, 0
    lo, hi = min(pos), max(pos)
    seen = set(pos)
    best: dict[int, tuple[int, int, int]] = {}
    for h in sorted({b - a for a in pos for b in pos if b > a}):
        for a in pos:
            lattice = range(a - ((a - lo) // h) * h, hi + 1, h)
            hit = sum(1 for x in lattice if x in seen)
            known = sum(1 for x in lattice if observed is None or x in observed)
            score = hit - (known - hit)
            if h not in best or (score, hit) > best[h][:2]:
                best[h] = (score, hit, a)
    # A tie goes to the period that puts more of the seen switches on its
    # lattice, then to the shorter one.
    ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))
    period, (score, _, anchor) = ranked[0]
    return period, score, ranked[1][1][0] if len(ranked) > 1 else -len(pos), anchor


def surfaces(sc: Scan) -> Surfaces:
    skews = [t.skew for t in sc.tracks]
    if not skews:
        return Surfaces(0, None, None, None, "no track boundary found")
    # One boundary's skew is known to the timing noise (sc.tol sectors): the
    # track skew is the median of those near the median of all; cylinder
    # switches are the boundaries clearly off it.
    mid = median(skews)
    tol = max(sc.tol, 0.03 * (sc.spt() or 0))
    track_skew = round(median([k for k in skews if abs(k - mid) <= tol]))
    cyl = [t for t in sc.tracks if abs(t.skew - track_skew) > tol]
    if len(cyl) < 2:
        if len(cyl) == 1:
            return Surfaces(track_skew, cyl[0].skew, None, cyl[0].first,
                            f"one cylinder switch among {len(skews)} boundaries: surfaces > {len(skews) // 2}")
        return Surfaces(track_skew, None, None, None,
                        f"all {len(skews)} boundaries have skew {track_skew}: track and cylinder switches "
                        "look alike")
    index = track_indices(sc, sc.spt() or 1)
    pos = [index[t.first] - index[cyl[0].first] for t in cyl]
    observed = {index[t.first] - index[cyl[0].first] for t in sc.tracks}
    heads, support, runner_up, anchor = switch_period(pos, observed)
    on = [t for t, p in zip(cyl, pos) if (p - anchor) % heads == 0] or cyl
    cyl_skew = round(median([t.skew for t in on]))
    return Surfaces(track_skew, cyl_skew, heads, on[-1].first,
                    f"{len(cyl)} cylinder switches (skew {cyl_skew}) every {heads} tracks "
                    f"(lattice score {support}, next best period {runner_up}) among {len(skews)} "
                    f"boundaries (skew {track_skew})", support, runner_up)


def sector_time(prober: Prober, track_at: Callable[[int], tuple[int, int]], period: float,
                tracks: int = 9) -> Figure | None:
    """The time one sector passes, to a small part of itself: on each of
    ``tracks`` tracks (``track_at(k)``: first LBN, LBNs), a read of the
    track's first LBN, then of its last; the replies are n - 1 sector times
    apart (a revolution more when that is shorter than the drive's
    overhead). The n - 1 sectors divide the host's noise."""
    taus = []
    for i in range(tracks):
        first, n = track_at(i)
        guess = period / n
        dt = prober.pair(first, first + n - 1)
        # The revolutions: whatever makes dt - r T nearest (n - 1) guess.
        r = round((dt - (n - 1) * guess) / period)
        taus.append((dt - r * period) / (n - 1))
    if len(taus) < 3:
        return None
    return Figure(median(taus), se_median(taus), len(taus), "ns")


@dataclass
class Ranges:
    """Spare sectors at the end of each range of cylinders (DiskSim's
    sparing scheme 8): the range's last track holds ``spares`` fewer LBNs;
    ``anchor`` is the first LBN of a range."""

    cylinders: int
    spares: int
    anchor: int
    seen: int  # short tracks seen

    def per_range(self, heads: int, spt: int) -> int:
        return self.cylinders * heads * spt - self.spares


def short_tracks(sc: Scan, spt: int) -> list[int]:
    """How many LBNs short the tracks between exact boundaries are, where
    one is: a gap of one track under ``spt``, or of several whose length
    is not a whole number of tracks (the scan lost the boundaries around
    a short track, whose position the next step tells)."""
    out = []
    for hi, lo in zip(sc.tracks, sc.tracks[1:]):
        rem = (hi.first - lo.first) % spt
        if spt // 8 <= rem < spt - 1:
            out.append(spt - rem)
    return out


def _fits(sc: Scan, spt: int, spares: int, per: int, anchor: int, slack: int = 2) -> bool:
    """Whether range starts at ``anchor`` + k ``per`` explain every gap
    between the scan's exact boundaries: each gap holds whole tracks less
    the spares of the range starts inside it (a slipped defect in a range
    gives its short track a sector more: ``slack``)."""
    for hi, lo in zip(sc.tracks, sc.tracks[1:]):
        d = hi.first - lo.first
        # Range starts x with the short track below them inside the gap.
        first = lo.first + spt - spares
        k0 = -(-(first - anchor) // per)
        n = 0
        x = anchor + k0 * per
        while x <= hi.first:
            n += 1
            x += per
        r = (d + n * spares) % spt
        if min(r, spt - r) > slack:
            return False
    return True


def ranges(sc: Scan, spt: int, heads: int, cylinder_start: int | None = None) -> Ranges | None:
    """Range sparing: spares at each range's end leave its last track short.
    Among the gaps between the scan's exact boundaries, those a part of a
    track too long hold a short track, whose place in the gap is not known;
    the range of the fewest cylinders (up to 24) and the one place of its
    starts that explain every gap (each whole tracks but for the short ones
    the starts put in it) is the sparing. None when no short track was seen
    or when no range, or more than one place, explains them all (then it is
    not modelled). A range starts on a cylinder: with ``cylinder_start``
    (an exact boundary that starts one), only the places a whole number of
    cylinders from it are tried."""
    shorts = short_tracks(sc, spt)
    if len(shorts) < 2 or heads < 1:
        return None
    spares = Counter(shorts).most_common(1)[0][0]
    gaps = [(hi.first, lo.first) for hi, lo in zip(sc.tracks, sc.tracks[1:])
            if abs((hi.first - lo.first) % spt - (spt - spares)) <= 2]
    if len(gaps) < 2:
        return None
    hi0, lo0 = gaps[-1]  # the lowest: a range start lies in it, after a short track
    places = list(range(lo0 + spt - spares, hi0 + 1, spt))
    index = track_indices(sc, spt)
    if cylinder_start is not None and cylinder_start in index:
        # A place x is (hi0 - x) / spt tracks below the gap's top boundary.
        places = [x for x in places if (index[hi0] + (hi0 - x) // spt - index[cylinder_start]) % heads == 0]
    for r in range(1, 25):
        per = r * heads * spt - spares
        fits = [x for x in places if _fits(sc, spt, spares, per, x)]
        if len(fits) == 1:
            return Ranges(r, spares, fits[0], len(gaps))
        if len(fits) > 1:
            return None
    return None


def tracks_below(sc: Scan, spt: int, heads: int, rng: Ranges | None) -> Callable[[int], tuple[int, int]]:
    """The k-th whole track (k = 0, 1, ...) below the scan's lowest exact
    boundary: (its first LBN, its LBNs), known from the boundary itself,
    so free of the layout's rounding; the short track at a range's end is
    passed over (its read-ahead leaves it early)."""
    assert sc.tracks
    found: list[tuple[int, int]] = []
    top = sc.tracks[-1].first
    per = rng.per_range(heads, spt) if rng else 0

    def at(k: int) -> tuple[int, int]:
        nonlocal top
        while len(found) <= k:
            short = rng is not None and (top - rng.anchor) % per == 0
            n = spt - rng.spares if short and rng is not None else spt
            top -= n
            if not short:
                found.append((top, n))
        return found[k]

    return at
