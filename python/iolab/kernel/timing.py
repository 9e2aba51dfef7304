"""``iolab kernel timing DIR``: the guest's own time per request in the runs of
an ``iolab kernel compare`` directory, and whether the guest and the emulated
disk kept one clock.

For every guest boot under DIR (the compared disks, the calibration boots)
and every run: the number of requests the disk served, the distribution of
the gap between the emulator's reply and the next request's arrival (the
guest's own time, whatever the disk's latency: the percentiles and the mean,
µs of the host's clock), and the run's length by the guest's clock over its
length by the emulator's. Under plain TCG the gaps move with the host's load;
under ``--icount`` they are a count of the guest's instructions, and the
ratio says whether the guest kept up with the host (1: one clock; above 1:
the guest fell behind, and the disk saw gaps longer than the guest did).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from iolab.cli.errors import UserError


def register(sub) -> None:
    t = sub.add_parser(
        "timing",
        help="the guest's time per request and its clock against the emulator's, per run",
        description="Read an `iolab kernel compare` directory: per guest boot and run, the "
                    "distribution of the guest's time between a reply and the next request "
                    "(from the emulator's log), and the run's length by the guest's clock over "
                    "its length by the disk's.",
    )
    t.add_argument("dir", metavar="DIR", help="an `iolab kernel compare` output directory")
    t.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    t.set_defaults(func=run_timing)


def boots(root: Path) -> list[Path]:
    """The guest boots under ``root``: directories with a plan and an emulator log."""
    return sorted(p.parent for p in root.glob("*/emu.csv") if (p.parent / "plan.txt").exists())


def boot_timing(share: Path) -> list[dict]:
    """Per run of one boot: its workload, elevator, gaps and clock ratio."""
    import numpy as np

    from iolab.kernel.emulog import GAP_PERCENTILES, cut_log, marker_sector
    from iolab.kernel.guest import Plan

    try:
        plan_lines = [ln.split() for ln in (share / "plan.txt").read_text().splitlines() if ln.strip()]
        marker = marker_sector(share)
        plan = Plan(share.name, [(int(i), wl, el, 0) for i, wl, el, *_ in plan_lines])
    except (OSError, ValueError, IndexError) as e:
        raise UserError(f"{share}: not a guest run of `iolab kernel compare` ({e})") from None
    try:
        cuts = cut_log(share, plan)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        # a log cut short or edited (pandas' parser errors are ValueErrors)
        raise UserError(f"{share / 'emu.csv'}: not an `iolab emu` request log "
                        f"({type(e).__name__}: {e})") from None
    out = []
    for rid, wl, el, _ in plan.runs:
        if rid not in cuts:
            continue
        c = cuts[rid]
        trace = share / "runs" / f"{rid}.trace"
        guest = traced_gaps_us(trace, marker) if trace.exists() else []
        out.append({
            "guest_gap_pct_us": {str(q): float(np.percentile(guest, q)) for q in GAP_PERCENTILES} if guest else {},
            "guest_mean_gap_us": float(np.mean(guest)) if guest else math.nan,
            "boot": share.name, "run": rid, "workload": wl, "elevator": el,
            "requests": c["requests"], "mean_gap_us": c["mean_gap_us"],
            "gap_pct_us": c.get("gap_pct_us", {str(q): math.nan for q in GAP_PERCENTILES}),
            "clock_ratio": c["clock_ratio"],
        })
    return out


def traced_gaps_us(path: Path, marker: int | None = None, to: str = "D") -> list[float]:
    """From a blk tracer text (``runs/ID.trace``, ``iolab kernel compare
    --trace``), the guest's own time from each completion (C) to the next
    issue (D, or with ``to="Q"`` the next request's queueing, where a
    process's own time ends), by the guest's clock: at queue depth 1 what
    the emulator sees as reply to arrival, less QEMU's and NBD's transit.
    Requests at or past ``marker`` (the run's two marker reads) end a gap
    unmeasured: the gap from the opening marker to fio's first request is
    fio's start."""
    return [end - start for start, end in traced_windows_us(path, marker, to)]


def traced_windows_us(path: Path, marker: int | None = None, to: str = "D") -> list[tuple[float, float]]:
    """:func:`traced_gaps_us`'s gaps as (start, end), µs of the guest's clock."""
    from iolab.kernel.bfqlog import BLOCK_EVENT, read_trace

    windows, last_c = [], None
    lines = read_trace(path).splitlines()
    for line in lines:
        m = BLOCK_EVENT.match(line)
        if not m or m["act"] not in ("C", to):
            continue
        t = float(m["t"]) * 1e6
        if marker is not None and int(m["sector"]) >= marker:
            last_c = None
            continue
        if m["act"] == "C":
            last_c = t
        elif last_c is not None:
            windows.append((last_c, t))
            last_c = None
    return windows


def traced_process_gaps_us(path: Path, marker: int | None = None) -> list[float]:
    """From a blk tracer text, each process's own time from the completion
    of its request to its next request's insertion (I; Q where nothing is
    inserted), by the guest's clock: what an anticipating elevator measures
    as that process's think time, with several processes sharing the guest.
    A completion's process is the one that queued the request (Q's pid,
    by sector); requests at or past ``marker`` are left out."""
    return [g for gaps, _ in traced_gaps_by_process(path, marker).values() for g in gaps]


def traced_gaps_by_process(path: Path, marker: int | None = None) -> dict[int, tuple[list[float], int]]:
    """:func:`traced_process_gaps_us` by process: pid -> (its gaps, the
    sector of its first request, which tells which of a workload's
    processes it is)."""
    return {pid: ([end - start for start, end in ws], first)
            for pid, (ws, first) in traced_windows_by_process(path, marker).items()}


def traced_windows_by_process(path: Path, marker: int | None = None
                              ) -> dict[int, tuple[list[tuple[float, float]], int]]:
    """:func:`traced_gaps_by_process`'s gaps as (start, end), µs of the guest's clock."""
    from iolab.kernel.bfqlog import BLOCK_EVENT, read_trace

    lines = read_trace(path).splitlines()
    events = [m for m in map(BLOCK_EVENT.match, lines) if m and m["act"] in ("Q", "I", "C")
              and (marker is None or int(m["sector"]) < marker)]
    arrive = "I" if any(m["act"] == "I" for m in events) else "Q"
    owner: dict[int, int] = {}
    done: dict[int, float] = {}
    out: dict[int, tuple[list[tuple[float, float]], int]] = {}
    for m in events:
        act, sector, pid, t = m["act"], int(m["sector"]), int(m["pid"]), float(m["t"]) * 1e6
        if act == "Q":
            owner[sector] = pid
            out.setdefault(pid, ([], sector))
        if act == "C":
            who = owner.get(sector)
            if who is not None:
                done[who] = t
        elif act == arrive and pid in done:
            out.setdefault(pid, ([], sector))[0].append((done.pop(pid), t))
    return out


def run_timing(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from iolab.kernel.emulog import GAP_PERCENTILES

    root = Path(args.dir)
    if not root.is_dir():
        raise UserError(f"{root}: no such directory")
    found = boots(root)
    if not found:
        raise UserError(f"{root}: no guest runs (no */emu.csv with a plan.txt)")
    meta = {}
    if (root / "meta.json").exists():
        try:
            meta = json.loads((root / "meta.json").read_text())
        except (OSError, ValueError):
            meta = {}
    rows = [r for share in found for r in boot_timing(share)]
    icount = meta.get("icount")
    title = (f"guest under -icount shift={icount} (2**{icount} ns per instruction)" if icount is not None
             else "guest under plain TCG" if meta else "guest")
    table = Table(title=f"{root}: {title}; gaps in µs of the host's clock")
    for col in ["boot", "run", "workload", "elevator", "requests",
                *[f"p{q}" for q in GAP_PERCENTILES], "mean", "guest/emu clock"]:
        table.add_column(col, justify="left" if col in ("boot", "workload", "elevator") else "right")
    for r in rows:
        table.add_row(r["boot"], str(r["run"]), r["workload"], r["elevator"], str(r["requests"]),
                      *[_us(r["gap_pct_us"].get(str(q), math.nan)) for q in GAP_PERCENTILES],
                      _us(r["mean_gap_us"]),
                      "n/a" if math.isnan(r["clock_ratio"]) else f"{r['clock_ratio']:.5f}")
    Console(width=160).print(table)
    traced = [r for r in rows if r["guest_gap_pct_us"]]
    if traced:
        t2 = Table(title="traced runs: the same gaps by the guest's own clock (blk tracer, completion to "
                         "next issue), µs")
        for col in ["boot", "run", "workload", "elevator", *[f"p{q}" for q in GAP_PERCENTILES], "mean"]:
            t2.add_column(col, justify="left" if col in ("boot", "workload", "elevator") else "right")
        for r in traced:
            t2.add_row(r["boot"], str(r["run"]), r["workload"], r["elevator"],
                       *[_us(r["guest_gap_pct_us"][str(q)]) for q in GAP_PERCENTILES], _us(r["guest_mean_gap_us"]))
        Console(width=160).print(t2)
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": {"icount": icount, "load": meta.get("load_before")},
                                               "runs": rows}, indent=2, default=float) + "\n")
    return 0


def _us(v: float) -> str:
    return "n/a" if math.isnan(v) else f"{v:,.0f}"
