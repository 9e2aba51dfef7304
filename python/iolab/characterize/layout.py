"""The extracted layout: zones of whole cylinders, surfaces, skews; LBN of
(cylinder, surface, sector) as DiskSim's conventional mapping (scheme 0)
puts it, with spare sectors at each track's end (sparing scheme 3) or at
the end of each range of cylinders (scheme 8: the range's last track holds
that many fewer LBNs; ranges counted from the zone's first cylinder, a
partial range at the zone's end without spares, as DiskSim's layout and
crates/iolab-sim/src/disk/layout.rs place them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LZone:
    first_cyl: int
    last_cyl: int
    spt: int
    first_lbn: int
    track_skew: int
    cyl_skew: int
    spares: int = 0  # spare sectors at each track's end (scheme 3), or at each range's end (scheme 8)
    range_cyls: int = 0  # scheme 8: cylinders per range

    @property
    def cylinders(self) -> int:
        return self.last_cyl - self.first_cyl + 1

    def range_lbns(self, heads: int) -> int:
        """LBNs in a whole range (scheme 8)."""
        return self.range_cyls * heads * self.spt - self.spares

    def track_spares(self) -> int:
        """Spare sectors on every track (scheme 3)."""
        return 0 if self.range_cyls else self.spares


@dataclass
class Layout:
    heads: int
    zones: list[LZone]
    sectors: int

    @property
    def cylinders(self) -> int:
        return self.zones[-1].last_cyl + 1

    @property
    def range_cyls(self) -> int:
        return self.zones[0].range_cyls if self.zones else 0

    def full_cylinders(self) -> int:
        """Cylinders whose every sector is on the device (the last zone's
        last cylinder may be cut short by the capacity)."""
        z = self.zones[-1]
        c = z.last_cyl
        while c > z.first_cyl and self.last_lbn(c) >= self.sectors:
            c -= 1
        return c + 1

    def last_lbn(self, c: int) -> int:
        """The last LBN of cylinder ``c`` (its last track is short at a
        range's end)."""
        z = self.zone_of_cyl(c)
        short = z.range_cyls and (c - z.first_cyl + 1) % z.range_cyls == 0
        return self.lbn(c, self.heads - 1, 0) + z.spt - 1 - (z.spares if short else 0)

    def zone_of_cyl(self, c: int) -> LZone:
        for z in self.zones:
            if z.first_cyl <= c <= z.last_cyl:
                return z
        raise ValueError(f"cylinder {c} is outside the layout")

    def zone_of_lbn(self, lbn: int) -> LZone:
        return next(z for z in reversed(self.zones) if z.first_lbn <= lbn)

    def track_first(self, lbn: int) -> int:
        """The first LBN of the track holding ``lbn``."""
        z = self.zone_of_lbn(lbn)
        off = lbn - z.first_lbn
        if not z.range_cyls:
            return z.first_lbn + off // z.spt * z.spt
        per = z.range_lbns(self.heads)
        r, rem = divmod(off, per)
        # The range's last track is the short one, so this holds on it too.
        return z.first_lbn + r * per + rem // z.spt * z.spt

    def with_gaps(self, gaps: dict[int, int]) -> Layout:
        """The layout with ``gaps[i]`` cylinders no LBN maps to before zone
        i (spare tracks at the end of the zone before)."""
        zones, by = [], 0
        for i, z in enumerate(self.zones):
            by += gaps.get(i, 0)
            zones.append(_shifted(z, by))
        return Layout(self.heads, zones, self.sectors)

    def cylinder_of(self, lbn: int) -> int:
        """The cylinder holding ``lbn``."""
        z = self.zone_of_lbn(lbn)
        off = lbn - z.first_lbn
        spc = self.heads * z.spt
        if not z.range_cyls:
            return z.first_cyl + off // spc
        r, rem = divmod(off, z.range_lbns(self.heads))
        return z.first_cyl + r * z.range_cyls + rem // spc

    def lbn(self, c: int, h: int, j: int) -> int:
        z = self.zone_of_cyl(c)
        cz = c - z.first_cyl
        if not z.range_cyls:
            return z.first_lbn + (cz * self.heads + h) * z.spt + j
        r, within = divmod(cz, z.range_cyls)
        return z.first_lbn + r * z.range_lbns(self.heads) + (within * self.heads + h) * z.spt + j


def _shifted(z: LZone, by: int) -> LZone:
    return LZone(z.first_cyl + by, z.last_cyl + by, z.spt, z.first_lbn, z.track_skew, z.cyl_skew, z.spares,
                 z.range_cyls)


def _cylinders(span: int, spt: int, heads: int, ranges: tuple[int, int], last: bool) -> int:
    """Cylinders holding ``span`` LBNs (rounded to the nearest, or up for
    the last zone, which the capacity may cut short)."""
    spc = spt * heads
    rc, rs = ranges
    if not rc:
        return max(1, -(-span // spc) if last else round(span / spc))
    per = rc * spc - rs
    full, rem = divmod(span, per)
    part = -(-rem // spc) if last else round(rem / spc)
    return max(1, full * rc + part)


def build(zone_starts: list[tuple[int, int]], heads: int, sectors: int, skew_ns: tuple[float, float],
          period: float, spares: int = 0, ranges: tuple[int, int] = (0, 0)) -> Layout:
    """Zones from (first LBN, sectors per track) pairs, each start moved to
    the nearest cylinder boundary of the zone before; skews (track,
    cylinder) given in ns, turned into whole sectors of each zone;
    ``spares`` sectors at each track's end hold no LBN, or ``ranges`` =
    (cylinders, spares): that many at each range's end."""
    zones: list[LZone] = []
    first_lbn, first_cyl = 0, 0
    rc, rs = ranges
    for i, (_, spt) in enumerate(zone_starts):
        last = i + 1 == len(zone_starts)
        span = (sectors if last else zone_starts[i + 1][0]) - first_lbn
        cyls = _cylinders(span, spt, heads, ranges, last)
        tau = period / (spt + (0 if rc else spares))
        z = LZone(first_cyl, first_cyl + cyls - 1, spt, first_lbn, round(skew_ns[0] / tau),
                  round(skew_ns[1] / tau), rs if rc else spares, rc)
        zones.append(z)
        if rc:
            full, part = divmod(cyls, rc)
            first_lbn += full * z.range_lbns(heads) + part * heads * spt
        else:
            first_lbn += cyls * spt * heads
        first_cyl += cyls
    return Layout(heads, zones, sectors)
