"""The extracted model as files the simulator loads.

For a rotating disk: ``NAME.diskspecs`` (a DiskSim 4.0 ``disksim_disk``
block), ``NAME.model`` (its ``dm_disk``: layout g1, mechanics g1 with the
seek table), ``NAME.seek`` (DiskSim's extracted-seek table: distance, ms),
``NAME.parv`` (the disk on a bus, as DiskSim's validation runs place
theirs: :mod:`parv`) and ``NAME.toml``, whose ``[disk]`` names the
.diskspecs -- what ``iolab compare --disk NAME.toml``, ``iolab recommend
--disk NAME.toml`` and ``iolab run`` take. A .diskspecs carries no bus, so
the measured bus time per block is its "Bulk sector transfer time"; in the
.parv the bus carries it and the disk's is 0.

For a disk that does not rotate: ``NAME.toml`` with ``preset = "fixed"``
and the measured 4 KiB latency at depth 1 (the one device the simulator has
whose parameters a host can measure; the ``ssd`` preset's flash timings are
not visible from the host), the measured figures in comments.

Every file says what measured it and when; ``NAME.json`` holds every
figure with its spread.
"""

from __future__ import annotations

import datetime
import json
import math
from pathlib import Path

from iolab.characterize import parv
from iolab.characterize.run import Result
from iolab.characterize.solid import at_4k

def write_model(res: Result, out: Path, command: str) -> list[Path]:
    """Write the model files for ``res`` as ``out`` with suffixes; returns the files."""
    out.parent.mkdir(parents=True, exist_ok=True)
    stem = out.name
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = f"extracted by `{command}` on {when} ({res.reads} reads, {res.elapsed_s:.0f} s)"
    files: list[Path] = []
    jpath = out.with_suffix(".json")
    jpath.write_text(json.dumps(to_json(res), indent=1) + "\n")
    files.append(jpath)
    toml = out.with_suffix(".toml")
    if res.rotating and res.layout is not None and res.seeks and res.v0 is not None:
        files += _write_diskspecs(res, out, head)
        lines = [f"# {stem}: {head}", "# every figure with its spread: " + jpath.name, "[disk]",
                 f'diskspecs = "{stem}.diskspecs"', "queue_depth = 1"]
    elif res.solid is not None and at_4k(res.solid) is not None:
        s = res.solid
        lat4k = at_4k(s)
        assert lat4k is not None
        what = ("a rotating disk that caches whole tracks on a miss (not measurable by this method)"
                if res.track_caching else "a disk that does not rotate")
        lines = [f"# {stem}: {head}", f"# {what}: modelled as a fixed-time device",
                 f"# 4 KiB random read at depth 1: {lat4k.value / 1e6:.4f} ms (+- {lat4k.spread / 1e6:.4f})"]
        for depth, iops, lat in s.by_depth:
            lines.append(f"# depth {depth}: {iops:.0f} IOPS, median latency {lat.value / 1e6:.4f} ms")
        if s.saturation_depth:
            lines.append(f"# throughput saturates at depth {s.saturation_depth} (90% of the best)")
        if res.ssd is not None:
            f = res.ssd
            lines.append(f"# ssd fit (docs/characterize.md): tR {f.read_ns / 1e3:.1f} us, "
                         f"{f.small_ns_per_byte:.3f} ns/byte small, "
                         + (f"{f.large_ns_per_byte:.3f} ns/byte large" if f.large_ns_per_byte is not None
                            else "large sizes not measured")
                         + "; the [disk] table takes no ssd parameters, so the model is the fixed device")
        lines += ["[disk]", 'preset = "fixed"', f"fixed_ms = {lat4k.value / 1e6:.6f}", "queue_depth = 1"]
    else:
        raise ValueError("nothing measured that makes a model (see the notes)")
    toml.write_text("\n".join(lines) + "\n")
    files.append(toml)
    return files


def _write_diskspecs(res: Result, out: Path, head: str) -> list[Path]:
    lay = res.layout
    assert lay is not None and res.rot is not None and res.rot.period is not None and res.v0 is not None
    stem = out.name
    rpm = 60e9 / res.rot.period.value
    seek_path = out.with_suffix(".seek")
    rows = [(0, 0.0)] + [(d, max(0.0, f.value / 1e6)) for d, f in res.seeks]
    # DiskSim's table must rise with distance no faster than it was measured;
    # a dip below the previous point (noise) is kept as measured.
    seek_path.write_text(f"Seek distances measured: {len(rows)}\n"
                         + "".join(f"{d}, {ms:.6f}\n" for d, ms in rows))
    zones = []
    for z in lay.zones:
        zones.append(
            "         dm_layout_g1_zone {\n"
            f"            First cylinder number = {z.first_cyl},\n"
            f"            Last cylinder number = {z.last_cyl},\n"
            f"            Blocks per track = {z.spt + z.track_spares()},\n"
            "            Offset of first block = 0,\n"
            "            Empty space at zone front = 0,\n"
            f"            Skew for track switch = {z.track_skew},\n"
            f"            Skew for cylinder switch = {z.cyl_skew},\n"
            f"            Number of spares = {z.spares},\n"
            "            slips = [],\n"
            "            defects = []\n"
            "         }")
    hs_ms = res.head_switch.value / 1e6 if res.head_switch else 0.0
    model_path = out.with_suffix(".model")
    model_path.write_text(
        f"# {head}\n"
        f"dm_disk {stem}_model {{\n"
        f"   Number of data surfaces = {lay.heads},\n"
        f"   Number of cylinders = {lay.cylinders},\n"
        f"   Block count = {lay.sectors},\n"
        "   Layout Model = dm_layout_g1 {\n"
        "      LBN-to-PBN mapping scheme = 0,\n"
        f"      Sparing scheme used = {8 if lay.range_cyls else 3 if any(z.spares for z in lay.zones) else 0},\n"
        f"      Rangesize for sparing = {lay.range_cyls or 1},\n"
        "      Zones = [\n" + ",\n".join(zones) + "\n      ]\n"
        "   },\n"
        "   Mechanical Model = dm_mech_g1 {\n"
        "      Access time type = trackSwitchPlusRotation,\n"
        "      Seek type = extracted,\n"
        f"      Full seek curve = {seek_path.name},\n"
        "      Add. write settling delay = 0.000000,\n"
        f"      Head switch time = {max(hs_ms, 0.0):.6f},\n"
        f"      Rotation speed (in rpms) = {rpm:.4f},\n"
        "      Percent error in rpms = 0.000000\n"
        "   }\n"
        f"}} # end of {stem}_model\n")
    c = res.cache
    over = max(res.overhead.value / 1e6, 0.0) if res.overhead else 0.0
    hit_over = max(res.hit_overhead.value / 1e6, 0.0) if res.hit_overhead else over
    bus = c.bus_per_block.value / 1e6 if c else 0.0
    segments = c.segments if c and c.segments else 1
    ra = c.read_ahead if c and c.read_ahead is not None else 0
    # The segment as measured; else the extent seen after a one-sector read.
    seg_size = c.segment_size if c and c.segment_size else max(ra + 1, 1)
    continuous = 1 if c and c.to_track_end else 3
    enable = 1 if (c is None or c.segments != 0) else 0
    if not enable:  # no cache seen: no read-ahead either (DiskSim refuses one without the other)
        continuous, ra = 0, 0
    # A drive seen to wait for part of a multi-sector miss before it sends
    # disconnects and reconnects at that watermark (by request size).
    w = res.transfer.watermark if res.transfer is not None else None
    never_disconnect = 1 if w is None else 0
    spec_path = out.with_suffix(".diskspecs")
    def block(bulk: float) -> str:
        return (
        f"disksim_disk {stem} {{\n"
        f"   Model = source {model_path.name},\n"
        "   Per-request overhead time = 0.000000,\n"
        "   Time scale for overheads = 1.000000,\n"
        f"   Bulk sector transfer time = {bulk:.6f},\n"
        "   Hold bus entire read xfer = 1,\n"
        "   Hold bus entire write xfer = 1,\n"
        "   Allow almost read hits = 1,\n"
        "   Allow sneaky full read hits = 0,\n"
        "   Allow sneaky partial read hits = 0,\n"
        "   Allow sneaky intermediate read hits = 0,\n"
        "   Allow read hits on write data = 1,\n"
        "   Allow write prebuffering = 0,\n"
        "   Preseeking level = 0,\n"
        f"   Never disconnect = {never_disconnect},\n"
        "   Print stats = 1,\n"
        f"   Avg sectors per cylinder = {lay.zones[0].spt * lay.heads},\n"
        "   Max queue length = 1,\n"
        "   Scheduler = disksim_ioqueue {\n"
        "      Scheduling policy = 1,\n"
        "      Cylinder mapping strategy = 0,\n"
        "      Write initiation delay = 0.000000,\n"
        "      Read initiation delay = 0.000000,\n"
        "      Sequential stream scheme = 0,\n"
        "      Maximum concat size = 0,\n"
        "      Overlapping request scheme = 0,\n"
        "      Sequential stream diff maximum = 0,\n"
        "      Scheduling timeout scheme = 0,\n"
        "      Timeout time/weight = 0,\n"
        "      Timeout scheduling = 0,\n"
        "      Scheduling priority scheme = 0,\n"
        "      Priority scheduling = 0\n"
        "   },\n"
        f"   Number of buffer segments = {max(segments, 1)},\n"
        "   Maximum number of write segments = 1,\n"
        f"   Segment size (in blks) = {seg_size},\n"
        "   Use separate write segment = 0,\n"
        "   Low (write) water mark = 0.000000,\n"
        f"   High (read) water mark = {w or 0.0:.6f},\n"
        "   Set watermark by reqsize = 1,\n"
        "   Calc sector by sector = 1,\n"
        f"   Enable caching in buffer = {enable},\n"
        f"   Buffer continuous read = {continuous},\n"
        "   Minimum read-ahead (blks) = 0,\n"
        f"   Maximum read-ahead (blks) = {ra},\n"
        "   Read-ahead over requested = 1,\n"
        "   Read-ahead on idle hit = 1,\n"
        "   Read any free blocks = 0,\n"
        "   Fast write level = 0,\n"
        "   Immediate buffer read = 0,\n"
        "   Immediate buffer write = 0,\n"
        "   Combine seq writes = 1,\n"
        "   Stop prefetch in sector = 1,\n"
        "   Disconnect write if seek = 0,\n"
        "   Write hit stop prefetch = 1,\n"
        "   Read directly to buffer = 1,\n"
        "   Immed transfer partial hit = 1,\n"
        f"   Read hit over. after read = {hit_over:.6f},\n"
        f"   Read hit over. after write = {hit_over:.6f},\n"
        f"   Read miss over. after read = {over:.6f},\n"
        f"   Read miss over. after write = {over:.6f},\n"
        f"   Write hit over. after read = {over:.6f},\n"
        f"   Write hit over. after write = {over:.6f},\n"
        f"   Write miss over. after read = {over:.6f},\n"
        f"   Write miss over. after write = {over:.6f},\n"
        "   Read completion overhead = 0.000000,\n"
        "   Write completion overhead = 0.000000,\n"
        "   Data preparation overhead = 0.000000,\n"
        "   First reselect overhead = 0.000000,\n"
        "   Other reselect overhead = 0.000000,\n"
        "   Read disconnect afterread = 0.000000,\n"
        "   Read disconnect afterwrite = 0.000000,\n"
        "   Write disconnect overhead = 0.000000,\n"
        "   Extra write disconnect = 0,\n"
        "   Extradisc command overhead = 0.000000,\n"
        "   Extradisc disconnect overhead = 0.000000,\n"
        "   Extradisc inter-disconnect delay = 0.000000,\n"
        "   Extradisc 2nd disconnect overhead = 0.000000,\n"
        "   Extradisc seek delta = 0.000000,\n"
        "   Minimum seek delay = 0.000000\n"
        f"}} # end of {stem}\n")

    spec_path.write_text(
        f"# {head}\n"
        "# segment size: the run of sectors still held after a read of twice the read-ahead and its\n"
        "# read-ahead (or, when that was not measured, the extent cached after a one-sector read).\n"
        "# No bus: the bus time per block measured is the disk's own 'Bulk sector transfer time'.\n"
        + block(bus))
    # The same disk on a bus, as DiskSim's validation runs place theirs:
    # the block time on the bus, none in the disk.
    parv_path = out.with_suffix(".parv")
    parv_path.write_text(parv.text(stem, head, block(0.0), bus, lay.sectors))
    return [seek_path, model_path, spec_path, parv_path]


def _fig(f) -> dict | None:
    return f.to_json() if f is not None else None


def to_json(res: Result) -> dict:
    d: dict = {
        "device": res.device, "kind": res.kind, "sectors": res.sectors, "budget_s": res.budget_s,
        "elapsed_s": res.elapsed_s, "reads": res.reads, "interrupted": res.interrupted,
        "rotating": res.rotating, "host_round_trip_ns": res.host_rtt_ns, "notes": res.notes,
        "rotation": res.rot.to_json() if res.rot else None,
    }
    if res.scan is not None:
        d["tracks"] = [{"first_lbn": t.first, "skew": t.skew, "jump_ns": t.jump_ns} for t in res.scan.tracks]
        d["sectors_per_track"] = res.scan.spt()
    if res.surf is not None:
        s = res.surf
        d["surfaces"] = {"heads": s.heads, "track_skew": s.track_skew, "cyl_skew": s.cyl_skew, "why": s.why}
    d["zone_samples"] = [{"lbn": z.lbn, "spt": z.spt} for z in res.zone_samples]
    if res.layout is not None:
        d["layout"] = {"heads": res.layout.heads, "cylinders": res.layout.cylinders,
                       "zones": [vars(z) for z in res.layout.zones]}
    if res.v0 is not None:
        d["v0_ns"] = None if math.isnan(res.v0.value_ns) else res.v0.value_ns
        d["v0_samples_ns"] = res.v0_samples
    d["sector_time_ns"] = _fig(res.sector_time)
    d["spares_per_track"] = res.spares
    d["range_sparing"] = {"cylinders": res.ranges[0], "spares": res.ranges[1]} if res.ranges[0] else None
    d["transfer"] = res.transfer.to_json() if res.transfer is not None else None
    d["overhead_ns"] = _fig(res.overhead)
    d["hit_overhead_ns"] = _fig(res.hit_overhead)
    d["head_switch_ns"] = _fig(res.head_switch)
    d["seek_ns"] = [{"distance": dist, **f.to_json()} for dist, f in res.seeks]
    d["seek_failed"] = res.seek_failed
    if res.cache is not None:
        c = res.cache
        d["cache"] = {"hit_1_ns": c.hit_1.to_json(), "bus_per_block_ns": c.bus_per_block.to_json(),
                      "read_ahead": c.read_ahead, "read_ahead_mid": c.read_ahead_mid,
                      "to_track_end": c.to_track_end, "segment_size": c.segment_size,
                      "segments": c.segments, "notes": c.notes}
    if res.solid is not None:
        s = res.solid
        d["solid"] = {
            "by_size": [{"sectors": n, "median": f.to_json(), "p99_ns": p99} for n, f, p99 in s.by_size],
            "by_depth": [{"depth": q, "iops": iops, "median": f.to_json()} for q, iops, f in s.by_depth],
            "saturation_depth": s.saturation_depth, "notes": s.notes,
            "ssd_fit": res.ssd.to_json() if res.ssd is not None else None,
        }
    return d
