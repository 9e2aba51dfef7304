"""A disk that does not rotate (an SSD, a virtual disk): read latency by
request size at queue depth 1, and throughput and latency by queue depth
for 4 KiB random reads; the depth at which throughput saturates is the
device's internal parallelism as the host sees it (the smallest depth
reaching 90% of the best throughput measured)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from iolab.characterize.probe import Figure, Prober, figure, quantile

# Sectors: 0.5, 2, 4, 16, 64, 256, 1024 KiB. The sizes below 4 KiB lie in
# one flash page (ssdfit), 4 KiB is the figure the model is written at.
SIZES = [1, 4, 8, 32, 128, 512, 2048]
KIB4 = 8
DEPTHS = [1, 2, 4, 8, 16, 32, 64]


@dataclass
class SolidResult:
    by_size: list[tuple[int, Figure, float]] = field(default_factory=list)  # sectors, median latency, p99 (ns)
    by_depth: list[tuple[int, float, Figure]] = field(default_factory=list)  # depth, IOPS, median latency
    saturation_depth: int | None = None
    notes: list[str] = field(default_factory=list)


def _offsets(rng: random.Random, sectors: int, size: int, n: int) -> list[int]:
    top = max(1, (sectors - size) // 8)
    return [rng.randrange(0, top) * 8 for _ in range(n)]


def at_4k(out: SolidResult) -> Figure | None:
    """The depth-1 latency of a 4 KiB read."""
    return next((f for n, f, _ in out.by_size if n == KIB4), None)


def measure(prober: Prober, quick: bool, until: float) -> SolidResult:
    dev = prober.dev
    rng = random.Random(29)
    out = SolidResult()
    n = 60 if quick else 300
    share = (until - time.monotonic()) / 2
    t_end = time.monotonic() + share
    for size in SIZES:
        if size * 8 > dev.sectors:
            out.notes.append(f"sizes from {size * 512 / 1024:g} KiB on not measured: the device is too small")
            break
        if time.monotonic() > t_end:
            out.notes.append(f"sizes from {size * 512 / 1024:g} KiB on not measured: the budget ran out")
            break
        lats = dev.parallel_reads(_offsets(rng, dev.sectors, size, n), size, 1)
        out.by_size.append((size, figure(lats, "ns"), quantile(lats, 0.99)))
    best = 0.0
    for depth in DEPTHS:
        if time.monotonic() > until:
            out.notes.append(f"depths from {depth} on not measured: the budget ran out")
            break
        count = max(n, depth * 20)
        t0 = dev.now_ns()
        lats = dev.parallel_reads(_offsets(rng, dev.sectors, 8, count), 8, depth)
        dt = dev.now_ns() - t0
        iops = count / (dt / 1e9)
        out.by_depth.append((depth, iops, figure(lats, "ns")))
        best = max(best, iops)
    for depth, iops, _ in out.by_depth:
        if iops >= 0.9 * best:
            out.saturation_depth = depth
            break
    return out
