"""The extracted layout: zones of whole cylinders, surfaces, skews; LBN of
(cylinder, surface, sector) as DiskSim's conventional mapping (scheme 0)
without spares puts it."""

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
    spares: int = 0  # spare sectors at each track's end (DiskSim sparing scheme 3)

    @property
    def cylinders(self) -> int:
        return self.last_cyl - self.first_cyl + 1


@dataclass
class Layout:
    heads: int
    zones: list[LZone]
    sectors: int

    @property
    def cylinders(self) -> int:
        return self.zones[-1].last_cyl + 1

    def full_cylinders(self) -> int:
        """Cylinders whose every sector is on the device (the last zone's
        last cylinder may be cut short by the capacity)."""
        z = self.zones[-1]
        c = z.last_cyl
        while c > z.first_cyl and self.lbn(c, self.heads - 1, z.spt - 1) >= self.sectors:
            c -= 1
        return c + 1

    def zone_of_cyl(self, c: int) -> LZone:
        for z in self.zones:
            if z.first_cyl <= c <= z.last_cyl:
                return z
        raise ValueError(f"cylinder {c} is outside the layout")

    def track_first(self, lbn: int) -> int:
        """The first LBN of the track holding ``lbn``."""
        z = next(z for z in reversed(self.zones) if z.first_lbn <= lbn)
        return z.first_lbn + (lbn - z.first_lbn) // z.spt * z.spt

    def lbn(self, c: int, h: int, j: int) -> int:
        z = self.zone_of_cyl(c)
        return z.first_lbn + ((c - z.first_cyl) * self.heads + h) * z.spt + j


def build(zone_starts: list[tuple[int, int]], heads: int, sectors: int, skew_ns: tuple[float, float],
          period: float, spares: int = 0) -> Layout:
    """Zones from (first LBN, sectors per track) pairs, each start moved to
    the nearest cylinder boundary of the zone before; skews (track,
    cylinder) given in ns, turned into whole sectors of each zone;
    ``spares`` sectors at each track's end hold no LBN."""
    zones: list[LZone] = []
    first_lbn, first_cyl = 0, 0
    for i, (_, spt) in enumerate(zone_starts):
        spc = spt * heads
        if i + 1 < len(zone_starts):
            raw_next = zone_starts[i + 1][0]
            cyls = max(1, round((raw_next - first_lbn) / spc))
        else:
            cyls = max(1, -(-(sectors - first_lbn) // spc))
        tau = period / (spt + spares)
        zones.append(LZone(first_cyl, first_cyl + cyls - 1, spt, first_lbn,
                           round(skew_ns[0] / tau), round(skew_ns[1] / tau), spares))
        first_lbn += cyls * spc
        first_cyl += cyls
    return Layout(heads, zones, sectors)
