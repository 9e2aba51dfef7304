"""Proof on known disks: serve a model with `iolab emu`, characterize it
over NBD, and compare what was extracted with the model's own figures.

The true figures come from the model itself (``_iolab.EmuModel``, the code
the emulator charges requests with), never from the extraction: the seek
time of a read whose arm moves ``d`` cylinders, the controller overhead of
a miss, the head switch, sectors per track (one revolution over one
sector's media time), the rotation, the number of zones.

    python -m iolab.characterize.prove hp97560 --budget 2 [-o DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from iolab.characterize.device import open_device
from iolab.characterize.run import Result, characterize, set_floor


@dataclass
class Truth:
    describe: str
    rpm: float
    cylinders: int
    surfaces: int
    zones: int
    overhead_ns: float  # read miss, less one block's bus time
    hit_overhead_ns: float  # a one-sector read hit's service, less one block's bus time
    head_switch_ns: float | None
    spt_at: dict[int, int]  # LBN -> sectors per track
    seek_at: dict[int, float]  # cylinders -> ns


def _disk_json(disk: str) -> str:
    if disk.endswith((".parv", ".diskspecs")) or "#" in disk:
        return json.dumps({"diskspecs": str(Path(disk.split("#")[0]).resolve()) + ("#" + disk.split("#")[1] if "#" in disk else "")})
    return json.dumps({"preset": disk})


def truth(disk: str, lbns: list[int], distances: list[int]) -> Truth:
    """The model's own figures at the LBNs and seek distances asked for."""
    from iolab._iolab import EmuModel

    dj = _disk_json(disk)
    m = EmuModel(dj)
    d = m.describe
    mt = re.search(r"(\d+) cylinders x (\d+) surfaces, (\d+) zone\(s\), ([\d.]+) rpm", d)
    if not mt:
        raise ValueError(f"cannot read the model's description: {d}")
    cyls, heads, nz, rpm = int(mt[1]), int(mt[2]), int(mt[3]), float(mt[4])
    period = 60e9 / rpm
    sectors = m.capacity_bytes // 512

    def fresh(lbn: int) -> tuple:
        # A new model: arm at cylinder 0, head 0, empty cache, time 0.
        # (service, seek, rotation, transfer, overhead, seek_cylinders, cache)
        return EmuModel(dj).charge("read", lbn * 512, 512, False, 0)

    spt_at = {x: round(period / fresh(x)[3]) for x in lbns}
    seek_at: dict[int, float] = {}
    overhead = math.nan
    for dist in distances:
        lo, hi = 0, sectors - 1  # first LBN whose cylinder is >= dist
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if fresh(mid)[5] < dist:
                lo = mid
            else:
                hi = mid
        r = fresh(hi)
        if r[5] == dist:
            seek_at[dist] = float(r[1])
            overhead = float(r[4])
    # The overhead column holds the controller's overhead and the last
    # block's bus time; the bus per block from two hits of 1 and 8 sectors.
    hits = []
    for n in (1, 8):
        mm = EmuModel(dj)
        first = mm.charge("read", 0, 512 * n, False, 0)
        r = mm.charge("read", 0, 512 * n, False, first[0] + 1_000_000)
        if r[6] != "hit":
            raise ValueError(f"{disk}: a repeated read is not a hit ({r[6]}); cannot separate the bus time")
        hits.append(r[0])
    bus = (hits[1] - hits[0]) / 7
    overhead -= bus
    hs = None
    for k in range(1, 1 << 14):
        r = fresh(k * 8)
        if r[5] == 0 and r[1] > 0:
            hs = float(r[1])
            break
        if r[5] > 0:
            break
    return Truth(d, rpm, cyls, heads, nz, overhead, hits[0] - bus, hs, spt_at, seek_at)


def compare(res: Result, tr: Truth) -> list[tuple[str, str, str, str, str, bool | None]]:
    """Rows: quantity, true, extracted, error, goal, met."""
    rows: list[tuple[str, str, str, str, str, bool | None]] = []
    if res.rot is None or not res.rot.rotating or res.rot.period is None:
        rows.append(("rotation", f"{tr.rpm:.1f} rpm", "not found", "", "within 0.5%", False))
        return rows
    rpm = res.rot.rpm
    err = rpm / tr.rpm - 1
    rows.append(("rotation", f"{tr.rpm:.1f} rpm", f"{rpm:.1f} rpm ± {rpm * res.rot.period.spread / res.rot.period.value:.1f}",
                 f"{err * 100:+.3f}%", "within 0.5%", abs(err) <= 0.005))
    lay = res.layout
    if lay is not None:
        rows.append(("zones", str(tr.zones), str(len(lay.zones)), "", "exact", len(lay.zones) == tr.zones))
        wrong = []
        for x, spt in tr.spt_at.items():
            # The model's sectors per track are physical: LBNs and spares.
            got = next((z.spt + z.track_spares() for z in reversed(lay.zones) if z.first_lbn <= x), None)
            if got != spt:
                wrong.append((x, spt, got))
        rows.append(("sectors per track", f"{len(tr.spt_at)} LBNs sampled",
                     "all equal" if not wrong else f"{len(wrong)} differ, e.g. LBN {wrong[0][0]}: {wrong[0][1]} vs {wrong[0][2]}",
                     "", "exact", not wrong))
        rows.append(("surfaces", str(tr.surfaces), str(lay.heads), "", "exact", lay.heads == tr.surfaces))
        rows.append(("cylinders", str(tr.cylinders), str(lay.cylinders), "", "exact", lay.cylinders == tr.cylinders))
    if res.overhead is not None and not math.isnan(tr.overhead_ns):
        e = res.overhead.value / tr.overhead_ns - 1 if tr.overhead_ns else math.inf
        rows.append(("command overhead (read miss)", f"{tr.overhead_ns / 1e6:.4f} ms",
                     f"{res.overhead.value / 1e6:.4f} ms ± {res.overhead.spread / 1e6:.4f}", f"{e * 100:+.1f}%",
                     "within 10%", abs(e) <= 0.10))
    if res.hit_overhead is not None:
        e = res.hit_overhead.value / tr.hit_overhead_ns - 1 if tr.hit_overhead_ns else math.inf
        rows.append(("read hit overhead", f"{tr.hit_overhead_ns / 1e6:.4f} ms",
                     f"{res.hit_overhead.value / 1e6:.4f} ms ± {res.hit_overhead.spread / 1e6:.4f}",
                     f"{e * 100:+.1f}%", "", None))
    if res.head_switch is not None and tr.head_switch_ns:
        e = res.head_switch.value / tr.head_switch_ns - 1
        rows.append(("head switch", f"{tr.head_switch_ns / 1e6:.4f} ms",
                     f"{res.head_switch.value / 1e6:.4f} ms ± {res.head_switch.spread / 1e6:.4f}",
                     f"{e * 100:+.1f}%", "", None))
    # The extracted table at each true distance. When the surfaces were not
    # found (the model has 1 surface: its cylinders are tracks), a move of d
    # cylinders is one of d x surfaces tracks in the model.
    scale = tr.surfaces / lay.heads if lay is not None and lay.heads else 1.0
    pts = sorted(res.seeks)
    for d, true_ns in sorted(tr.seek_at.items()):
        dx = d * scale
        label = f"seek {d} cyl" + (f" ({dx:g} tracks of the model)" if scale != 1 else "")
        f = _interp(pts, dx)
        if f is None:
            rows.append((label, f"{true_ns / 1e6:.3f} ms", "not measured", "", "within 5%", False))
            continue
        val, spread, exact = f
        e = val / true_ns - 1
        rows.append((label, f"{true_ns / 1e6:.3f} ms",
                     f"{val / 1e6:.3f} ms ± {spread / 1e6:.3f}" + ("" if exact else " (interpolated)"),
                     f"{e * 100:+.1f}%", "within 5%", abs(e) <= 0.05))
    return rows


def host_floor(dev, n: int = 151, count: int = 1) -> float:
    """Median time of reads of ``count`` sectors at random places (at
    real-time priority, as the characterization runs)."""
    import random
    import time

    from iolab.characterize.run import Result, _realtime

    rng = random.Random(1)
    lat = []
    restore = _realtime(Result("", "", 0, 0))
    try:
        for _ in range(n):
            x = rng.randrange(dev.sectors - count)
            t0 = time.monotonic_ns()
            lat.append(dev.read(x, count) - t0)
    finally:
        restore()
    lat.sort()
    return float(lat[n // 2])


def _interp(pts: list, x: float) -> tuple[float, float, bool] | None:
    """The seek table at distance x: the measured point, or the line between
    the two measured points around it."""
    for d, f in pts:
        if d == x:
            return f.value, f.spread, True
    lo = [(d, f) for d, f in pts if d < x]
    hi = [(d, f) for d, f in pts if d > x]
    if not lo or not hi:
        return None
    (d0, f0), (d1, f1) = lo[-1], hi[0]
    w = (x - d0) / (d1 - d0)
    return f0.value + w * (f1.value - f0.value), max(f0.spread, f1.spread), False


def deciles(cylinders: int) -> list[int]:
    return [max(1, round((cylinders - 1) * q / 10)) for q in range(1, 11)]


def table(rows: list) -> list[str]:
    out = ["| quantity | true | extracted | error | goal | met |", "|---|---|---|---|---|---|"]
    for q, t, x, e, g, ok in rows:
        out.append(f"| {q} | {t} | {x} | {e} | {g} | {'' if ok is None else ('yes' if ok else '**no**')} |")
    return out


def prove(disk: str, budget_min: float, quick: bool, outdir: Path | None) -> tuple[Result, Truth | None, list]:
    from iolab._iolab import Emulator

    with tempfile.TemporaryDirectory(prefix="iolab-char-") as tmp:
        sock = Path(tmp) / "nbd.sock"
        kw: dict = {"socket": str(sock), "read_only": True, "sync": False}
        if disk.endswith((".parv", ".diskspecs")) or "#" in disk:
            kw["diskspecs"] = disk
        else:
            kw["preset"] = disk
        from iolab._iolab import EmuModel

        image = Path(tmp) / "disk.img"
        with open(image, "wb") as f:  # sparse, of the model's capacity
            f.truncate(EmuModel(_disk_json(disk)).capacity_bytes)
        with Emulator(str(image), **kw):
            dev = open_device(f"nbd+unix:///?socket={sock}")
            with dev:
                res = characterize(dev, budget_min * 60, quick)
        # The apparatus: what a one-sector read costs the client and the
        # server besides the disk's own time, on an emulated device whose
        # every request takes what the hit took the drive (the server's
        # timer is later after a longer sleep), less that time. The command
        # overhead is then measured above this floor.
        # The miss overhead comes from V0, whose target's reply waited
        # about I0: its floor is measured at that service time.
        served = (res.cache.hit_1.value if res.cache is not None else
                  solid_at_4k(res))
        if served is not None and res.host_rtt_ns is not None:
            fimage = Path(tmp) / "fixed.img"
            with open(fimage, "wb") as f:
                f.truncate(1 << 40)

            def floor_at(service: float, count: int = 1) -> float:
                with Emulator(str(fimage), socket=str(sock), read_only=True, sync=False, preset="fixed",
                              fixed_ms=service / 1e6):
                    with open_device(f"nbd+unix:///?socket={sock}") as dev:
                        return host_floor(dev, count=count) - service

            floor = floor_at(served - res.host_rtt_ns)
            miss_floor = None
            if res.v0 is not None and res.v0.ok and math.isfinite(res.v0.i0_ns):
                miss_floor = floor_at(res.v0.i0_ns - res.host_rtt_ns)
            by_size = None
            if res.solid is not None:
                # A larger read costs the host (the socket, the client's
                # copy) more: its floor is measured at each size.
                by_size = {n: floor_at(f.value - floor, n) for n, f, _ in res.solid.by_size}
            set_floor(res, floor, miss_floor_ns=miss_floor, by_size=by_size)
    if outdir is not None:
        from iolab.characterize.model import write_model

        try:
            write_model(res, outdir / Path(disk).stem.replace("#", "_"), f"python -m iolab.characterize.prove {disk}")
        except ValueError as e:
            res.notes.append(f"no model written: {e}")
    from iolab._iolab import EmuModel

    if not res.rotating and not res.track_caching and res.ssd is not None \
            and " rpm" not in EmuModel(_disk_json(disk)).describe:
        return res, None, ssd_rows(res, disk)
    sectors = res.sectors
    lbns = [int(sectors * (i + 0.5) / 16) for i in range(16)]
    tr0 = truth(disk, [], [])
    same_units = res.layout is not None and res.layout.heads == tr0.surfaces
    dists = sorted(set(deciles(tr0.cylinders)) | {1} | ({d for d, _ in res.seeks} if same_units else set()))
    tr = truth(disk, lbns, [d for d in dists if d < tr0.cylinders])
    rows = compare(res, tr)
    # The drive's validation trace beside its .parv: the demerit goal.
    trace = Path(disk).with_suffix(".trace")
    written = outdir / (Path(disk).stem.replace("#", "_") + ".parv") if outdir is not None else None
    if disk.endswith(".parv") and trace.is_file() and written is not None and written.is_file():
        from iolab.characterize import demerit

        try:
            rows += demerit.compare(str(written), disk, str(trace))
        except ValueError as e:
            rows.append(("demerit on the validation trace", "", f"not replayed: {e}", "", "at most 1.5x", False))
    return res, tr, rows


def solid_at_4k(res: Result) -> float | None:
    from iolab.characterize.solid import at_4k

    f = at_4k(res.solid) if res.solid is not None else None
    return f.value if f is not None else None


def ssd_rows(res: Result, disk: str) -> list[tuple[str, str, str, str, str, bool | None]]:
    """The ssd fit against the same fit of the model's own latencies (each
    size read at 21 places, each on a fresh model: depth 1, nothing before
    it), and tR against the model's description."""
    import random

    from iolab._iolab import EmuModel
    from iolab.characterize import solid, ssdfit

    dj = _disk_json(disk)
    m0 = EmuModel(dj)
    sectors = m0.capacity_bytes // 512
    rng = random.Random(7)
    lat = []
    for n in solid.SIZES:
        xs = sorted(EmuModel(dj).charge("read", rng.randrange(sectors // 8 - n) * 4096, n * 512, False, 0)[0]
                    for _ in range(21))
        lat.append((n * 512, float(xs[10])))
    tr = ssdfit.fit(lat, 0.0)
    got = res.ssd
    assert tr is not None and got is not None
    mt = re.search(r"read (\d+) us", m0.describe)
    rows: list[tuple[str, str, str, str, str, bool | None]] = []

    def row(q: str, t: float, x: float, sd: float | None, unit: str, scale: float) -> None:
        e = x / t - 1 if t else math.inf
        rows.append((q, f"{t / scale:.3f} {unit}", f"{x / scale:.3f} {unit}" + (f" ± {sd / scale:.3f}" if sd else ""),
                     f"{e * 100:+.1f}%", "", None))

    row("page read tR + fixed time (fit of the model's latencies)", tr.read_ns, got.read_ns, got.read_sd, "us", 1e3)
    if mt:
        rows.append(("page read tR (the model's parameter)", f"{mt[1]} us", f"{got.read_ns / 1e3:.3f} us",
                     f"{(got.read_ns / 1e3 / float(mt[1]) - 1) * 100:+.1f}%", "", None))
    row("ns per byte up to 4 KiB (1/channel + 1/host)", tr.small_ns_per_byte, got.small_ns_per_byte, None, "ns/B", 1)
    if tr.large_ns_per_byte and got.large_ns_per_byte:
        row("ns per byte from 64 KiB (1/host + 1/(C channel))", tr.large_ns_per_byte, got.large_ns_per_byte, None,
            "ns/B", 1)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m iolab.characterize.prove", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("disk", help="a preset (hp97560, modern7200) or a DiskSim .parv/.diskspecs")
    ap.add_argument("--budget", type=float, default=2.0, help="minutes")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("-o", "--output", metavar="DIR", help="write the extracted model here")
    a = ap.parse_args(argv)
    from iolab.characterize.report import summary

    res, tr, rows = prove(a.disk, a.budget, a.quick, Path(a.output) if a.output else None)
    print(f"true: {tr.describe}" if tr is not None else f"true: {a.disk} (a disk that does not rotate)")
    for line in summary(res):
        print(line)
    for line in table(rows):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
