"""What `iolab characterize` prints: every figure with its spread."""

from __future__ import annotations

from iolab.characterize.probe import Figure
from iolab.characterize.run import Result


def _ms(f: Figure | None) -> str:
    if f is None:
        return "not measured"
    return f"{f.value / 1e6:.4f} ms ± {f.spread / 1e6:.4f}"


def summary(res: Result) -> list[str]:
    out = [f"{res.device}: {res.sectors} sectors ({res.sectors * 512 / 2**30:.2f} GiB), {res.kind}; "
           f"{res.reads} reads in {res.elapsed_s:.1f} s (budget {res.budget_s / 60:g} min)"]
    if res.host_rtt_ns is not None:
        out.append(f"  host round trip (zero-length NBD read): {res.host_rtt_ns / 1e3:.0f} us")
    rot = res.rot
    if rot is not None and rot.rotating and rot.period is not None and rot.sector_time is not None:
        p = rot.period
        out.append(f"  rotation: {p.value / 1e6:.4f} ms ± {p.spread / 1e6:.4f} ({rot.rpm:.1f} rpm)")
    elif rot is not None:
        out.append(f"  not rotating: {rot.why}")
    if res.scan is not None:
        spts = res.scan.spts()
        out.append(f"  sectors per track here: {res.spt} ({len(res.scan.tracks)} boundaries to the sector, "
                   f"{sum(1 for s in spts if s == res.spt)}/{len(spts)} tracks agree)")
    if res.surf is not None:
        s = res.surf
        out.append(f"  skews: track {s.track_skew}, cylinder {s.cyl_skew if s.cyl_skew is not None else '?'} "
                   f"sectors; surfaces {s.heads if s.heads else '?'} ({s.why})")
    if res.layout is not None:
        lay = res.layout
        out.append(f"  layout: {lay.cylinders} cylinders x {lay.heads} surfaces, {len(lay.zones)} zone(s)"
                   + ("" if res.zones_complete else " (zone search incomplete)"))
        for z in lay.zones:
            out.append(f"    cylinders {z.first_cyl}-{z.last_cyl}: {z.spt} sectors/track, skews "
                       f"{z.track_skew}/{z.cyl_skew}")
    if res.overhead is not None:
        how = ("V0 less the sector, the host's floor and the bus" if res.v0 is not None and res.v0.ok
               else "taken equal to the hit's")
        out.append(f"  read miss overhead ({how}): {_ms(res.overhead)}; floor: {res.floor_note}")
    if res.hit_overhead is not None:
        out.append(f"  read hit overhead (one-sector hit less the floor and the bus): {_ms(res.hit_overhead)}")
    if res.v0 is not None and res.v0.ok:
        out.append(f"  V0 (a miss on the arm's track): {res.v0.value_ns / 1e6:.4f} ms ± {res.v0.resolution_ns / 1e6:.4f}")
    if res.transfer is not None:
        t = res.transfer
        out.append(f"  multi-sector misses (V at {', '.join(map(str, t.sizes))} sectors): {t.why}")
    if res.head_switch is not None:
        out.append(f"  head switch: {_ms(res.head_switch)}")
    if res.seeks:
        pts = ", ".join(f"{d}: {f.value / 1e6:.3f}" for d, f in res.seeks)
        out.append(f"  seek (cylinders: ms): {pts}")
    if res.seek_failed:
        out.append(f"  seek distances not measured (no threshold that held when checked): {res.seek_failed}")
    if res.cache is not None:
        c = res.cache
        out.append(f"  cache: one-sector hit {_ms(c.hit_1)} as the host sees it; bus {c.bus_per_block.value / 1e3:.1f} "
                   f"us/block; read-ahead {c.read_ahead} sectors"
                   + (f" from a track's start, {c.read_ahead_mid} from its middle"
                      + (" (to the track's end)" if c.to_track_end else "") if c.read_ahead_mid is not None else "")
                   + f"; segments {c.segments} of {c.segment_size if c.segment_size else '?'} sectors")
        out += [f"    {n}" for n in c.notes]
    if res.solid is not None:
        s = res.solid
        for n, f, p99 in s.by_size:
            out.append(f"  {n * 512 / 1024:g} KiB random read, depth 1: median {_ms(f)}, p99 {p99 / 1e6:.4f} ms")
        for q, iops, f in s.by_depth:
            out.append(f"  4 KiB random reads at depth {q}: {iops:.0f} IOPS, median latency {_ms(f)}")
        if s.saturation_depth:
            out.append(f"  throughput saturates at depth {s.saturation_depth} (90% of the best)")
        out += [f"  {n}" for n in s.notes]
    if res.ssd is not None:
        f = res.ssd
        out.append(f"  ssd fit: page read (tR) {f.read_ns / 1e3:.1f} us ± {f.read_sd / 1e3:.1f} above the floor; "
                   f"{f.small_ns_per_byte:.3f} ns/byte up to 4 KiB (1/channel + 1/host)"
                   + (f", {f.large_ns_per_byte:.3f} ns/byte from 64 KiB (1/host + 1/(channels x channel))"
                      if f.large_ns_per_byte is not None else "")
                   + (f"; about {f.parallel_units:.1f} reads served at once" if f.parallel_units else ""))
        out += [f"  ssd fit: {n}" for n in f.notes]
    out += [f"  note: {n}" for n in res.notes]
    return out
