"""`iolab characterize`: the steps in order, each within its share of the
budget, and the result every figure of which carries its spread.

1. the host's own round trip (NBD only);
2. rotation (:mod:`rotation`): a rotating disk, or the solid-state path;
3. geometry (:mod:`geometry`): sectors per track, skews, surfaces;
4. zones (:mod:`zones`);
5. overhead, head switch and seek curve (:mod:`seek`);
6. the cache (:mod:`cache`);
or, for a disk that does not rotate, latency by size and queue depth
(:mod:`solid`).
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass, field
from typing import Callable

from iolab.characterize import cache as cache_mod
from iolab.characterize import geometry, rotation, seek, solid, ssdfit, transfer, zones
from iolab.characterize.device import Device
from iolab.characterize.layout import Layout, build
from iolab.characterize.probe import BudgetExhausted, Figure, Prober, median, robust_sd, se_median

# Shares of the budget each step may use, cumulative (of the whole).
SHARES = {"geometry": 0.30, "zones": 0.45, "cache": 0.55, "seek": 0.92, "gaps": 1.0}


@dataclass
class Result:
    device: str
    kind: str
    sectors: int
    budget_s: float
    rotating: bool = False
    host_rtt_ns: float | None = None
    miss_floor_ns: float | None = None  # the floor at the V0 pairs' waits, when measured apart
    floor_by_size: dict[int, float] | None = None  # sectors -> the floor of a read of that size
    rot: rotation.Rotation | None = None
    scan: geometry.Scan | None = None
    surf: geometry.Surfaces | None = None
    zone_samples: list[zones.Sample] = field(default_factory=list)
    zones_complete: bool = False
    layout: Layout | None = None
    v0: seek.Threshold | None = None  # V of a miss on the arm's track
    base: seek.Threshold | None = None  # V0 less its sector time: what every V has besides the move
    base_sd: float = 0.0
    v0_samples: list[float] = field(default_factory=list)
    transfer: transfer.Transfer | None = None
    head_switch: Figure | None = None
    seeks: list[tuple[int, Figure]] = field(default_factory=list)
    seek_failed: list[int] = field(default_factory=list)
    seek_checked: list[int] = field(default_factory=list)  # measured three times: out of line with neighbours
    overhead: Figure | None = None  # read miss
    hit_overhead: Figure | None = None
    cache: cache_mod.CacheResult | None = None
    solid: solid.SolidResult | None = None
    ssd: ssdfit.SsdFit | None = None
    track_caching: bool = False  # rotates, but caches whole tracks on a miss (not measurable here)
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    reads: int = 0
    interrupted: bool = False
    realtime: bool = False
    floor_note: str = ""
    spares: int = 0
    ranges: tuple[int, int] = (0, 0)  # spares at each range's end: (cylinders, sectors)
    sector_time: Figure | None = None  # ns, from reads a track apart less one sector

    @property
    def spt(self) -> int | None:
        return self.scan.spt() if self.scan else None


def set_floor(res: Result, floor_ns: float, how: str = "measured on an emulated fixed-time device",
              miss_floor_ns: float | None = None, by_size: dict[int, float] | None = None) -> None:
    """The command overheads again, above a host floor measured apart
    (``miss_floor_ns``: the floor for the miss overhead, when the host's
    own time differs at the V0 pairs' longer waits; ``by_size``: the floor
    of a read of each size, sectors to ns, for the latency curves)."""
    res.host_rtt_ns = floor_ns
    res.miss_floor_ns = miss_floor_ns
    res.floor_by_size = by_size
    res.floor_note = f"{floor_ns / 1e3:.0f} us, {how}" + (
        f"; {miss_floor_ns / 1e3:.0f} us at the V0 pairs' waits" if miss_floor_ns is not None else "")
    _overheads(res)
    _fit_ssd(res)


def _track_caching(res: Result, rot: rotation.Rotation) -> None:
    """A drive that reads a track whole into its cache on a miss (a
    zero-latency read: DiskSim's "Read any free blocks", the Quantum Atlas
    10K's and IBM 18ES's) answers every descending read from the cache:
    they come as fast as hits, while random reads take milliseconds. Such
    a drive rotates, but the method here, which needs a miss on a track
    just read, cannot see it: say so rather than call it solid-state."""
    lat = solid.at_4k(res.solid) if res.solid is not None else None
    if lat is None or not rot.intervals1:
        return
    desc = median(rot.intervals1)
    if lat.value > 2e6 and desc < lat.value / 4:
        res.track_caching = True
        res.notes.append(
            f"descending reads took {desc / 1e6:.3f} ms, random 4 KiB reads {lat.value / 1e6:.3f} ms: the "
            "descending reads were cache hits, so the drive reads whole tracks into its cache on a miss "
            "(zero-latency reads). It rotates, but the rotation, layout and seeks are measured here from misses "
            "on a track already read, which such a drive never gives: modelled as the fixed device at the "
            "random read's latency")


def _fit_ssd(res: Result) -> None:
    """The `ssd` preset's parameters the latency curves tell (ssdfit)."""
    s = res.solid
    if s is None or not s.by_size:
        return
    if res.floor_by_size:
        sizes = [(n * 512, f.value - res.floor_by_size.get(n, res.host_rtt_ns or 0.0)) for n, f, _ in s.by_size]
        floor = 0.0
    else:
        sizes, floor = [(n * 512, f.value) for n, f, _ in s.by_size], res.host_rtt_ns or 0.0
    res.ssd = ssdfit.fit(sizes, floor, [(d, iops) for d, iops, _ in s.by_depth])


def _overheads(res: Result) -> None:
    """Hit and miss overheads above the host's floor: a one-sector hit is
    the round trip, the hit overhead and one block's bus time; the base of
    the seeks (V0 less its sector time) the round trip, the miss overhead
    and the bus."""
    if res.cache is None:
        return
    hit, bus = res.cache.hit_1, res.cache.bus_per_block
    rtt = res.host_rtt_ns or 0.0
    res.hit_overhead = Figure(hit.value - rtt - bus.value, math.hypot(hit.spread, bus.spread), hit.n, "ns")
    if res.base is None or res.v0 is None or not res.v0.ok:
        res.overhead = res.hit_overhead
        return
    miss_rtt = res.miss_floor_ns if res.miss_floor_ns is not None else rtt
    res.overhead = Figure(res.base.value_ns - miss_rtt - bus.value,
                          math.sqrt(res.base.resolution_ns**2 + bus.spread**2 + res.base_sd**2 / 2),
                          res.v0.pairs, "ns")


def _set_base(res: Result, v0: seek.Threshold, tau0: float, tau: float, reads_ahead: bool) -> None:
    """The base every move is measured above. From V0 when it was found:
    V0 less its sector time. Otherwise from the one-sector hit, taking the
    miss overhead equal to the hit's (and, on a drive that reads ahead,
    half a sector for the read-ahead's sector the drive finishes first)."""
    assert res.cache is not None
    res.v0 = v0
    # A drive that reads ahead is reading a sector when the command comes;
    # one that finishes it before it moves (DiskSim's "Stop prefetch in
    # sector" off) adds up to a sector the host cannot tell apart: a fixed
    # part of a sector in V0 (whose target is on that sector grid), a
    # uniform one in a seek's V.
    if v0.ok:
        res.base = seek.Threshold(v0.value_ns - tau0, v0.resolution_ns, v0.i0_spread_ns, v0.pairs, True)
        res.base_sd = tau / math.sqrt(6) if reads_ahead else 0.0
    else:
        hit = res.cache.hit_1
        less = tau / 2 if reads_ahead else 0.0
        res.base = seek.Threshold(hit.value + less, hit.spread, 0.0, hit.n, True)
        res.base_sd = tau / math.sqrt(12) if reads_ahead else 0.0
        res.notes.append(f"miss overhead: no threshold for a miss on the arm's track ({v0.why}); "
                         "taken equal to the hit overhead, the base of every seek the one-sector hit")
    _overheads(res)


def _realtime(res: Result) -> Callable[[], None]:
    """Real-time priority (SCHED_FIFO 5, below `iolab emu`'s 10) while
    measuring: a normal process on a busy host sees replies milliseconds
    late now and then. Without the right to it, carry on and say so.
    Returns what puts the old policy back."""
    try:
        old = os.sched_getscheduler(0), os.sched_getparam(0)
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(5))
    except (OSError, AttributeError):
        res.notes.append("real-time priority refused (needs root or CAP_SYS_NICE): timing at normal priority, "
                         "with more late replies")
        return lambda: None
    res.realtime = True
    # CPUs kept out of their idle states, as cyclictest does: a CPU that
    # halts wakes late for the reply (under a hypervisor, the halted virtual
    # CPU waits for the host to run it again). On an idle virtual machine
    # here that spread descending reads by ~0.2 ms and hid the rotation;
    # writing 0 to the PM QoS file holds the CPUs in polling idle while the
    # file stays open.
    qos = None
    try:
        qos = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
        os.write(qos, struct.pack("i", 0))
    except OSError:
        if qos is not None:
            os.close(qos)
            qos = None
        res.notes.append("/dev/cpu_dma_latency not writable: CPUs may idle deeply and reply late")

    def restore() -> None:
        if qos is not None:
            os.close(qos)
        try:
            os.sched_setscheduler(0, old[0], old[1])
        except OSError:
            pass

    return restore


def _surfaces_by_switch(prober: Prober, sc: geometry.Scan, spt: int, period: float,
                        surf: geometry.Surfaces) -> geometry.Surfaces:
    """Surfaces from the time of each switch when the skews are alike: the
    boundaries whose switch takes clearly another time than most are
    cylinder switches."""
    firsts = [t.first for t in sc.tracks][:24]
    try:
        v = seek.switch_times(prober, firsts, spt, period, until=_until(prober, "geometry") + 0.1 * prober.budget_s)
    except BudgetExhausted:
        return surf
    cut = seek.split_two([x for _, x in v], max(60_000.0, 8 * period / 2 ** (seek.STEPS + 1)))
    if cut is None:
        return geometry.Surfaces(surf.track_skew, surf.cyl_skew, None, None,
                                 surf.why + f"; the {len(v)} switch times measured form one cluster")
    lo = [b for b, x in v if x < cut]
    hi = [b for b, x in v if x >= cut]
    cyl = lo if len(lo) < len(hi) else hi
    gaps = [round((a - b) / spt) for a, b in zip(cyl, cyl[1:])]
    if not gaps:
        return surf
    heads = median(gaps)
    agree = sum(1 for g in gaps if g == heads)
    if agree < len(gaps) - 1:
        return geometry.Surfaces(surf.track_skew, surf.cyl_skew, None, None,
                                 surf.why + f"; switch times do not repeat regularly ({gaps})")
    return geometry.Surfaces(surf.track_skew, surf.track_skew, int(heads), cyl[-1],
                             surf.why + f"; by switch time: {len(cyl)} of {len(v)} boundaries are cylinder "
                             f"switches, every {int(heads)} tracks ({agree}/{len(gaps)} gaps agree)")


def _until(prober: Prober, step: str) -> float:
    return prober.t0 + prober.budget_s * SHARES[step]


def characterize(dev: Device, budget_s: float, quick: bool = False,
                 on_step: Callable[[str, float], None] | None = None,
                 host_floor_ns: float | None = None) -> Result:
    """Measure ``dev`` within ``budget_s`` seconds (the rotation step always
    runs to the end). ``on_step(text, fraction_of_budget)`` reports progress.
    ``host_floor_ns``: what a one-sector read costs the host and the server
    besides the disk, when it is known (measured on a zero-latency
    `iolab emu`); otherwise a zero-length NBD read's round trip stands for
    it, which leaves out the data's transfer and the server's timer."""
    step = on_step or (lambda text, frac: None)
    prober = Prober(dev, budget_s)
    res = Result(dev.name, dev.kind, dev.sectors, budget_s)
    restore = _realtime(res)
    try:
        _run(prober, res, step, quick, host_floor_ns)
    except KeyboardInterrupt:
        res.interrupted = True
        res.notes.append("interrupted: the steps after the interruption were not measured")
    finally:
        restore()
    res.elapsed_s = prober.elapsed()
    res.reads = dev.reads
    return res


def _run(prober: Prober, res: Result, step: Callable[[str, float], None], quick: bool,
         host_floor_ns: float | None) -> None:
    dev = prober.dev
    n = dev.sectors
    step("host round trip", 0.0)
    if host_floor_ns is not None:
        res.host_rtt_ns = host_floor_ns
        res.notes.append(f"host floor given: {host_floor_ns / 1e3:.0f} us per one-sector read")
    else:
        res.host_rtt_ns = dev.host_round_trip_ns()
    step("rotation", 0.01)
    rot = rotation.measure(prober, top=int(n * 0.35), n=24 if quick else 40)
    res.rot = rot
    res.rotating = rot.rotating
    if not rot.rotating:
        step("solid-state latency", 0.05)
        res.solid = solid.measure(prober, quick, until=prober.deadline)
        _fit_ssd(res)
        _track_caching(res, rot)
        return
    assert rot.period is not None and rot.sector_time is not None
    period = rot.period.value
    jitter = robust_sd(rot.intervals1)

    # -- geometry -------------------------------------------------------------
    step("track boundaries, skews, surfaces", prober.elapsed() / prober.budget_s)
    try:
        sc = geometry.scan(prober, int(n * 0.55), period, rot.sector_time.value, jitter,
                           tracks=128, until=_until(prober, "geometry"), bottom=int(n * 0.45),
                           enough=geometry.enough_tracks(32 if quick else 64))
    except BudgetExhausted:
        res.notes.append("geometry: the budget ran out before any track boundary was found")
        return
    res.scan = sc
    spt = sc.spt()
    if spt is None:
        res.notes.append("geometry: no two consecutive track boundaries found; nothing below is measured")
        return
    surf = geometry.surfaces(sc)
    if surf.heads is None and len(sc.tracks) >= 6:
        surf = _surfaces_by_switch(prober, sc, spt, period, surf)
    res.surf = surf
    heads = surf.heads
    if heads is None:
        res.notes.append(f"surfaces: {surf.why}; the model takes 1 surface (cylinders are tracks)")
        heads = 1
    tau = period / spt

    # -- zones ----------------------------------------------------------------
    step("zones", prober.elapsed() / prober.budget_s)
    pts = 8 if quick else 24
    zlist, samples, complete = zones.find_zones(prober, n, period, spt, jitter, pts,
                                                resolution=max(1, 2 * spt * heads),
                                                until=_until(prober, "zones"))
    res.zone_samples = samples
    res.zones_complete = complete
    if not zlist:
        res.notes.append("zones: no sample gave sectors per track")
        zlist = [zones.Zone(0, spt)]
    if not complete:
        res.notes.append("zones: the budget ran out; the zones are those the samples measured")
    tau_here = sc.tau_ns or tau
    skew_ns = (surf.track_skew * tau_here,
               (surf.cyl_skew if surf.cyl_skew is not None else surf.track_skew) * tau_here)
    # Spare sectors: a track whose sectors pass in T/(spt + s) holds s
    # sectors no LBN maps to. Told only where the sector time fixes the
    # physical count to well under one sector.
    # Spares at the end of each range of cylinders show as short tracks
    # recurring among the scan's boundaries.
    rng = geometry.ranges(sc, spt, heads, surf.cylinder_start)
    if rng is not None:
        res.ranges = (rng.cylinders, rng.spares)
        res.notes.append(f"{rng.seen} tracks {rng.spares} LBNs short among the boundaries, placed by one range: "
                         f"{rng.spares} spare sectors at the end of each range of {rng.cylinders} cylinders")
    else:
        shorts = geometry.short_tracks(sc, spt)
        if shorts:
            res.notes.append(f"{len(shorts)} short track(s) among the boundaries ({shorts} LBNs short), "
                             "placed by no one range: not modelled")
    # Tracks below the scan's lowest exact boundary, known to the sector:
    # where the sector time, V0 and the multi-sector misses are measured.
    below = geometry.tracks_below(sc, spt, heads, rng)
    used = [0]

    def fresh_tracks() -> Callable[[int], tuple[int, int]]:
        base = used[0]

        def at(k: int) -> tuple[int, int]:
            used[0] = max(used[0], base + k + 1)
            return below(base + k)

        return at

    res.sector_time = geometry.sector_time(prober, fresh_tracks(), period, tracks=5 if quick else 15)
    spares = 0
    if res.sector_time is not None:
        st = res.sector_time
        phys = period / st.value
        phys_sd = phys * st.spread / st.value
        if rng is None and abs(phys - round(phys)) < 0.25 and phys_sd < 0.25 and 0 <= round(phys) - spt <= 3:
            spares = round(phys) - spt
        res.notes.append(f"sectors pass in T/{phys:.2f} (± {phys_sd:.2f}) on tracks of {spt} LBNs: "
                         + (f"{spares} spare sector(s) per track" if spares else "no spare sector told"))
    res.spares = spares
    tau = period / (spt + spares)
    layout = build([(z.first_lbn, z.spt) for z in zlist], heads, n, skew_ns, period, spares,
                   res.ranges)
    res.layout = layout

    # -- cache (its one-sector hit is the base of every seek) -----------------
    step("cache", prober.elapsed() / prober.budget_s)
    try:
        res.cache = cache_mod.measure(prober, int(n * 0.98), int(n * 0.60), period, tau, jitter,
                                      until=_until(prober, "cache"), track_first=layout.track_first,
                                      spt=layout.zones[-1].spt)
    except BudgetExhausted:
        res.notes.append("cache: the budget ran out")
    if res.cache is None:
        return
    res.floor_note = "a zero-length NBD read's round trip" if res.kind == "nbd" else "nothing (a system call's cost)"
    cyls = layout.full_cylinders()
    reads_ahead = bool(res.cache.read_ahead)

    # -- the miss overhead: V0, a miss on the track the arm is on -------------
    step("miss overhead", prober.elapsed() / prober.budget_s)
    tau0 = period / (spt + spares)
    # It is the base of every move, and one threshold a late reply misled
    # can pass its check: the median of five, each on tracks of its own.
    found: list[seek.Threshold] = []
    why = "the budget ran out"
    try:
        for _ in range(7 if quick else 9):
            if len(found) >= 5:
                break
            t = seek.robust_threshold(prober, seek.same_track_pairs(fresh_tracks()), period, max(2, spt // 8))
            if t.ok:
                found.append(t)
            else:
                why = t.why
    except BudgetExhausted:
        pass
    res.v0_samples = [t.value_ns for t in found]
    if len(found) >= 3:
        vs = [t.value_ns for t in found]
        v0 = seek.Threshold(median(vs), math.hypot(found[0].resolution_ns, se_median(vs)), 0.0,
                            sum(t.pairs for t in found), True, i0_ns=median([t.i0_ns for t in found]))
    else:
        v0 = seek.Threshold(math.nan, math.nan, 0.0, sum(t.pairs for t in found), False,
                            f"{len(found)} of the thresholds held ({why})")
    _set_base(res, v0, tau0, tau, reads_ahead)
    if v0.ok:
        step("multi-sector misses", prober.elapsed() / prober.budget_s)
        try:
            # The host's cost per 512-byte block of a reply: about 1 us over
            # NBD here (modern7200's bus came out 1.7 us a block against
            # its model's 0.853), far less for a block device's DMA.
            res.transfer = transfer.measure(prober, fresh_tracks, period, spt, tau0, res.cache.bus_per_block.value,
                                            v0, found[0].resolution_ns,
                                            host_block_ns=1000.0 if dev.kind == "nbd" else 100.0)
        except BudgetExhausted:
            res.notes.append("multi-sector misses: the budget ran out")

    # -- head switch, seeks -----------------------------------------------------
    step("head switch, seek curve", prober.elapsed() / prober.budget_s)
    until = _until(prober, "seek")
    base, sd = res.base, res.base_sd
    assert base is not None
    base_cyl = cyls // 2
    # The reference read is never on a cylinder's last surface: the drive's
    # read-ahead after it may go on to the next track, and so stays on the
    # cylinder.
    usable = max(1, heads - 1)
    try:
        if heads > 2:
            def next_head(k: int, s: int) -> tuple[int, int]:
                c = base_cyl - k
                z = layout.zone_of_cyl(c)
                j = z.spt - 1
                return layout.lbn(c, 1, j), layout.lbn(c, 0, (j - s) % z.spt)

            hs = seek.robust_threshold(prober, next_head, period, spt // 2)
            if hs.ok:
                res.head_switch = seek.as_figure(hs, base, period / (layout.zone_of_cyl(base_cyl).spt
                                                                     + layout.zone_of_cyl(base_cyl).track_spares()), sd)
        fracs = [0.5, 0.25, 0.75, 0.1, 0.9, 0.4, 0.6, 0.2, 0.8, 0.3, 0.7]

        def seek_at(d: int, i: int) -> Figure | None:
            ca = int((cyls - 1 - d) * fracs[i % len(fracs)])
            cb = ca + d
            za, zb = layout.zone_of_cyl(ca), layout.zone_of_cyl(cb)
            h = i % usable

            def pair(k: int, s: int) -> tuple[int, int]:
                # Each attempt on a surface of its own; within it, both reads
                # a sector back each pair (fresh), the target's angle to
                # the reference drifting by the zones' sector times.
                block, j = divmod(k, seek.BLOCK)
                hh = (h + block) % usable
                return layout.lbn(ca, hh, za.spt - 1 - j), layout.lbn(cb, hh, (zb.spt - 1 - j - s) % zb.spt)

            tau_a = period / (za.spt + za.track_spares())
            tau_b = period / (zb.spt + zb.track_spares())
            t = seek.robust_threshold(prober, pair, period, zb.spt // 2, drift_ns=tau_a - tau_b)
            f = seek.as_figure(t, base, period / (zb.spt + zb.track_spares()), sd) if t.ok else None
            # No threshold, or one below the base: a late reply misled it.
            if f is None or f.value <= 0:
                return None
            places[id(f)] = (ca, cb)
            return f

        def cross_at(c: int, i: int) -> Figure | None:
            """The move from cylinder c's last track to c + 1's first (the
            next zone's), at surface i."""
            za, zb = layout.zone_of_cyl(c), layout.zone_of_cyl(c + 1)
            h = i % usable

            def pair(k: int, s: int) -> tuple[int, int]:
                block, j = divmod(k, seek.BLOCK)
                return (layout.lbn(c - block, h, za.spt - 1 - j),
                        layout.lbn(c + 1 + block, h, (zb.spt - 1 - j - s) % zb.spt))

            tau_a = period / (za.spt + za.track_spares())
            tau_b = period / (zb.spt + zb.track_spares())
            t = seek.robust_threshold(prober, pair, period, zb.spt // 2, drift_ns=tau_a - tau_b)
            return seek.as_figure(t, base, tau_b, sd) if t.ok else None

        places: dict[int, tuple[int, int]] = {}
        dists = seek.seek_distances(cyls, quick)
        for i, d in enumerate(dists):
            prober.check(until)
            step(f"seek curve: {d} cylinders", prober.elapsed() / prober.budget_s)
            f = seek_at(d, i)
            if f is not None:
                res.seeks.append((d, f))
            else:
                res.seek_failed.append(d)
        # A threshold a late reply misled and that still held its check
        # stands out from its neighbours: measured twice more elsewhere on
        # the stroke, the median of the three is kept.
        for j in seek.suspects([f.value for _, f in res.seeks], [d for d, _ in res.seeks]):
            d, f0 = res.seeks[j]
            prober.check(until)
            step(f"seek curve: {d} cylinders again", prober.elapsed() / prober.budget_s)
            # Elsewhere on the stroke (other fractions of it, other surfaces):
            # a place where the layout misleads the pair misleads it again.
            i0 = dists.index(d)
            again = [f for f in (seek_at(d, i0 + 4), seek_at(d, i0 + 7)) if f]
            if len(again) == 2:
                res.seeks[j] = (d, sorted([f0, *again], key=lambda f: f.value)[1])
            elif again:  # the suspect against one other: the other
                res.seeks[j] = (d, again[0])
            res.seek_checked.append(d)
    except BudgetExhausted:
        res.notes.append(f"seek: the budget ran out after {len(res.seeks)} distances")
    # Cylinders no LBN maps to between zones (spare tracks at a zone's end):
    # the move across each zone boundary, a cylinder in the extracted
    # layout, is the seek of as many cylinders as it takes. In the last
    # share of the budget, after the seek curve it reads them off.
    if len(layout.zones) > 1 and len(res.seeks) >= 8:
        step("zone boundaries: spare cylinders", prober.elapsed() / prober.budget_s)
        gaps = _zone_gaps(res, layout, cross_at, _until(prober, "gaps"), prober)
        if gaps:
            firsts = [z.first_cyl for z in layout.zones]
            res.seeks = seek.relabel(res.seeks, places, gaps, firsts)
            res.layout = layout.with_gaps(gaps)
    step("done", 1.0)


def _zone_gaps(res: Result, layout: Layout, cross_at: Callable[[int, int], Figure | None], until: float,
               prober: Prober) -> dict[int, int]:
    """Cylinders left out after each zone (index of the zone after them ->
    cylinders): the move across the boundary measured on two surfaces,
    the two agreeing within 15%, turned into a distance through the seek
    table; told only from two cylinders up and when the move is clearly
    longer than the table's one-cylinder seek (a gap of one costs the
    Barracuda 13 us, under the host's noise)."""
    one = dict(res.seeks).get(1)
    if one is None:
        return {}
    table = [(d, f.value) for d, f in res.seeks]
    gaps: dict[int, int] = {}
    for zi in range(1, len(layout.zones)):
        c = layout.zones[zi].first_cyl - 1
        try:
            prober.check(until)
            moves = [f.value for f in (cross_at(c, zi), cross_at(c, zi + 1)) if f is not None]
        except BudgetExhausted:
            res.notes.append(f"zone boundaries: the budget ran out after {zi - 1} of {len(layout.zones) - 1}")
            break
        if len(moves) < 2 or abs(moves[0] - moves[1]) > 0.15 * max(moves):
            continue
        move = sum(moves) / 2
        if move < one.value + max(100_000.0, 0.1 * one.value):
            continue
        d = seek.distance_for(table, move)
        if d is not None and round(d) - 1 >= 2:
            gaps[zi] = round(d) - 1
            res.notes.append(f"zone {zi + 1} starts {gaps[zi]} cylinders after the last LBN's: the move across "
                             f"its boundary takes {move / 1e6:.3f} ms, the seek of {d:.0f} cylinders")
    return gaps
