"""The emulated disk's request log (``emu.csv``, ``iolab emu --log``) cut
into a boot's runs at their marker reads, and what each run's cut says: the
requests, the disk's busy share, the guest's time between a reply and the
next request, and whether the guest and the disk kept one clock."""

from __future__ import annotations

import math
from pathlib import Path

from iolab.kernel.guest import MARKER_SECTORS, Plan
from iolab.kernel.workloads import WORKLOADS, layout

# Percentiles of the guest's time between a reply and the next request.
GAP_PERCENTILES = (10, 50, 90, 99)
# A run whose length by the guest's clock and by the disk's differ by more
# than this did not keep one clock (docs/kernel.md).
CLOCK_TOLERANCE = 0.01
# How finely the distribution of those gaps is kept for the simulator.
GAP_QUANTILES = 100

def cut_log(share: Path, plan: Plan, capacity: int | None = None) -> dict[int, dict]:
    """Per run, what the emulated disk saw between the run's two markers.
    A marker block read twice (the same run interrupted?) keeps its last."""
    import numpy as np
    import pandas as pd

    log = pd.read_csv(share / "emu.csv", comment="#")
    marker = marker_sector(share, capacity)
    # the (2*ID)th and (2*ID+1)th 4 KiB block from marker_sector on (a
    # boot's run ids need not start at 0: guests side by side share them out)
    last = max((rid for rid, *_ in plan.runs), default=0)
    is_mark = (log["op"] == "read") & (log["sector"] >= marker) & \
        (log["sector"] < marker + 8 * (2 * last + 2)) & ((log["sector"] - marker) % 8 == 0)
    marks = {int(s - marker) // 8: i for i, s in zip(log.index[is_mark], log["sector"][is_mark])}
    stamps = _clock_stamps(share)
    out = {}
    for rid, wl, *_ in plan.runs:
        a, b = marks.get(2 * rid), marks.get(2 * rid + 1)
        if a is None or b is None:
            continue
        rows = log.loc[a + 1:b - 1]
        rows = rows[rows["op"].isin(["read", "write"])]
        if rows.empty:
            continue
        span = rows["complete_ns"].max() - rows["arrival_ns"].min()
        # the run's own length: from the opening marker's reply to the
        # closing marker's arrival
        window = log.at[b, "arrival_ns"] - log.at[a, "complete_ns"]
        gaps = (rows["arrival_ns"].values[1:] - rows["reply_ns"].values[:-1]) / 1e3
        gaps = gaps[gaps >= 0]  # < 0: the next request came while this one was served
        out[rid] = {
            "requests": int(len(rows)),
            "mean_kb": float(rows["length"].mean() / 1024),
            "utilization": float(rows["service_ns"].sum() / span) if span > 0 else math.nan,
            "mean_service_ms": float(rows["service_ns"].mean() / 1e6),
            "mean_seek_cylinders": float(rows["seek_cylinders"].mean()),
            # the share of requests that begin where the one before ended: a
            # process's stream served on (anticipation, or the completing
            # process winning the freed tag), not another process's request
            "continued": float((rows["sector"].values[1:] == (rows["sector"].values[:-1]
                                                             + rows["nr_sectors"].values[:-1])).mean())
            if len(rows) > 1 else math.nan,
            "median_gap_us": float(pd.Series(gaps).median()) if len(gaps) else math.nan,
            "mean_gap_us": float(gaps.mean()) if len(gaps) else math.nan,
            # the spread of the guest's own time per request (docs/kernel.md:
            # under TCG it moves with the host's load, under -icount it should not)
            "gap_pct_us": {str(q): float(pd.Series(gaps).quantile(q / 100)) if len(gaps) else math.nan
                           for q in GAP_PERCENTILES},
            # the whole distribution, as GAP_QUANTILES equally likely values
            # (the simulator's `samples` think time, --think samples)
            "gap_quantiles_us": [float(x) for x in np.quantile(gaps, (np.arange(GAP_QUANTILES) + 0.5)
                                                               / GAP_QUANTILES)] if len(gaps) else [],
            "disk_mb_s": float(rows["length"].sum() / (window / 1e9) / 1e6) if window > 0 else math.nan,
            # the bytes the disk moved, from the first request's arrival to
            # the last completion (a run that ends when its work is done)
            "bytes": int(rows["length"].sum()),
            "span_s": float(span / 1e9),
            # the run's length by the guest's clock over its length by the
            # emulator's (the two markers' replies): 1 when guest and disk
            # keep one clock; NaN for runs made before the guest stamped
            # its markers
            "clock_ratio": _clock_ratio(stamps, 2 * rid, 2 * rid + 1,
                                        int(log.at[a, "reply_ns"]), int(log.at[b, "reply_ns"])),
            "group_mb_s": group_mb_s(rows, wl, capacity or marker + MARKER_SECTORS, span),
        }
    return out


def group_mb_s(rows, workload: str, capacity: int, window_ns: float) -> dict[str, float]:
    """The MB/s the disk moved for each process group of ``workload`` (the
    simulator's ``per_class``), told apart by the region a request's sector
    falls in, over ``window_ns`` (the run's span from its first request to
    its last completion: the marker-to-marker window also holds fio's start
    and exit, a third of it under ``-icount``); empty for a workload whose
    processes share their regions."""
    from iolab.cli.errors import UserError

    w = WORKLOADS.get(workload)
    if w is None or w.placement != "spread" or window_ns <= 0:
        return {}
    try:
        regions = layout(w, capacity)
    except UserError:  # a disk too small for the workload (a test's log): nobody's regions
        return {}
    out: dict[str, float] = {}
    for g, _, start, size in regions:
        inside = (rows["sector"] >= start) & (rows["sector"] < start + size)
        out[g.name] = out.get(g.name, 0.0) + float(rows["length"][inside].sum() / (window_ns / 1e9) / 1e6)
    return out


def marker_sector(share: Path, capacity: int | None = None) -> int:
    """The first marker block's sector, as the boot's ``disk.conf`` gave it
    to the guest (a boot written before that file: the last 2,048 sectors)."""
    conf = share / "disk.conf"
    if conf.exists():
        for line in conf.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "marker_sector" and parts[1].isdigit():
                return int(parts[1])
        raise ValueError(f"{conf}: no `marker_sector N` line")
    if capacity is None:
        raise ValueError(f"{share}: no disk.conf")
    return capacity - 2048


def _clock_stamps(share: Path) -> dict[int, int]:
    """``runs/clock.txt``: the guest's CLOCK_MONOTONIC (ns) after each marker read."""
    path = share / "runs" / "clock.txt"
    stamps = {}
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
                stamps[int(parts[0])] = int(parts[1])
    return stamps


def _clock_ratio(stamps: dict[int, int], a: int, b: int, reply_a: int, reply_b: int) -> float:
    if a not in stamps or b not in stamps or reply_b <= reply_a:
        return math.nan
    return (stamps[b] - stamps[a]) / (reply_b - reply_a)


def mean_of_cuts(cuts: list[dict]) -> dict[str, float]:
    """The mean of each figure of several runs' cuts (:func:`cut_log`);
    the gap percentiles and quantiles, a table or list per run, are left
    to ``iolab kernel timing`` and the calibration."""
    if not cuts:
        return {}
    return {key: sum(c[key] for c in cuts) / len(cuts) for key, v in cuts[0].items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and key != "clock_ratio"}


def off_clock(cut: dict | None) -> bool:
    """A run whose guest did not keep the disk's clock (its length by the
    two clocks differs by more than CLOCK_TOLERANCE): under -icount its
    guest fell behind the host, so every time the guest took is stretched
    by the host's load, which is what -icount is there to keep out."""
    ratio = (cut or {}).get("clock_ratio", math.nan)
    return not math.isnan(ratio) and abs(ratio - 1) > CLOCK_TOLERANCE
