"""The ``meta.json`` of an ``iolab kernel compare`` directory, read and checked.

``--report DIR`` and ``--resim -o DIR`` read a comparison written earlier,
perhaps by another version, perhaps edited or cut short. Every field the
report and the simulator side use is checked here, before anything runs, so
that a damaged file gets one line naming the file and the field instead of
a KeyError or TypeError from deep inside the analysis.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from iolab.cli.errors import UserError

# The models of the guest's time the simulator is given (`--think`;
# iolab.kernel.calibration says what each is).
THINK_MODELS = ("mean", "samples", "guest", "workload", "cpu")


def _bad(path: Path, field: str, expected: str, got: Any) -> UserError:
    shown = json.dumps(got)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return UserError(f"{path}: field `{field}`: expected {expected}, got {shown}")


def _names(path: Path, meta: dict, field: str, known: Iterable[str] | None) -> list[str]:
    v = meta.get(field)
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
        raise _bad(path, field, "a non-empty list of names", v)
    if known is not None:
        known = list(known)
        unknown = [x for x in v if x not in known]
        if unknown:
            raise _bad(path, field, f"names among {', '.join(known)}", unknown)
    if len(set(v)) != len(v):
        raise _bad(path, field, "names without repeats", v)
    return v


def load(out: Path, disks: Iterable[str], workloads: Iterable[str], elevators: Iterable[str] | None) -> dict:
    """``out/meta.json``, with every field the report reads checked.

    ``disks`` and ``workloads`` are the names this iolab compares;
    ``elevators`` likewise, or None to accept any name (a researcher's own)."""
    path = out / "meta.json"
    if not path.is_file():
        raise UserError(f"{out}: no meta.json (not a finished `iolab kernel compare` directory)")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: cannot read it ({e})") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{path}:{e.lineno}: not JSON ({e.msg})") from None
    if not isinstance(meta, dict):
        raise _bad(path, "(top level)", "an object", meta)
    ds = _names(path, meta, "disks", disks)
    wls = _names(path, meta, "workloads", workloads)
    els = _names(path, meta, "elevators", elevators)
    reps = meta.get("reps")
    if not isinstance(reps, int) or isinstance(reps, bool) or not 1 <= reps <= 1000:
        raise _bad(path, "reps", "a whole number of repetitions from 1 to 1000", reps)
    runtime = meta.get("runtime")
    if not isinstance(runtime, (int, float)) or isinstance(runtime, bool) or not math.isfinite(runtime) \
            or not 2 <= runtime <= 86400:
        raise _bad(path, "runtime", "seconds from 2 to 86400", runtime)
    for key in ("kernel", "load_before", "load_after"):
        if not isinstance(meta.get(key, ""), str):
            raise _bad(path, key, "text", meta.get(key))
    plans, capacity = meta.get("plans"), meta.get("capacity")
    if not isinstance(plans, dict):
        raise _bad(path, "plans", "an object of run plans by disk", plans)
    if not isinstance(capacity, dict):
        raise _bad(path, "capacity", "an object of sector counts by disk", capacity)
    for d in ds:
        runs = plans.get(d)
        if not isinstance(runs, list):
            raise _bad(path, f"plans.{d}", "a list of runs", runs)
        for i, r in enumerate(runs):
            ok = (isinstance(r, list) and len(r) == 4 and isinstance(r[0], int) and not isinstance(r[0], bool)
                  and r[0] >= 0 and r[1] in wls and r[2] in els and isinstance(r[3], int) and not isinstance(r[3], bool))
            if not ok:
                raise _bad(path, f"plans.{d}[{i}]", "[run id, workload, elevator, repetition] of this comparison", r)
        cap = capacity.get(d)
        if not isinstance(cap, int) or isinstance(cap, bool) or cap <= 0:
            raise _bad(path, f"capacity.{d}", "a positive number of sectors", cap)
    for key in ("notes", "host_by_disk", "host", "calibration_load"):
        if key in meta and not isinstance(meta[key], dict):
            raise _bad(path, key, "an object", meta[key])
    if "calibration" in meta and not isinstance(meta["calibration"], str):
        raise _bad(path, "calibration", "text", meta["calibration"])
    if meta.get("think_model", "mean") not in THINK_MODELS:
        raise _bad(path, "think_model", ", ".join(THINK_MODELS[:-1]) + " or " + THINK_MODELS[-1],
                   meta["think_model"])
    icount = meta.get("icount")
    if icount is not None and (not isinstance(icount, int) or isinstance(icount, bool) or not 0 <= icount <= 10):
        raise _bad(path, "icount", "QEMU's instruction-counter shift, 0 to 10, or null", icount)
    for d, host in meta.get("host_by_disk", {}).items():
        _host(path, f"host_by_disk.{d}", host)
    if "host" in meta:
        _host(path, "host", meta["host"])
    return meta


def _number(v: Any) -> bool:
    """A measured figure: a number, or NaN where the calibration had none (not ±inf)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isinf(v)


# what a calibration's gap summary holds (percentiles, mean, count)
wanted_gap = {"10", "50", "90", "99", "mean", "n"}


def _host(path: Path, field: str, host: Any) -> None:
    """A calibration: per elevator, the device time and the think-time extras (µs)."""
    if not isinstance(host, dict):
        raise _bad(path, field, "an object of calibrations by elevator", host)
    for el, h in host.items():
        if not isinstance(h, dict):
            raise _bad(path, f"{field}.{el}", "an object", h)
        dev = h.get("device_us", 0)
        if not _number(dev):
            raise _bad(path, f"{field}.{el}.device_us", "a number of µs", dev)
        think = h.get("think_us", {})
        if not isinstance(think, dict) or not all(_number(v) for v in think.values()):
            raise _bad(path, f"{field}.{el}.think_us", "an object of µs by think time", think)
        for t in think:
            try:
                ok = math.isfinite(float(t)) and float(t) >= 0
            except ValueError:
                ok = False
            if not ok:
                raise _bad(path, f"{field}.{el}.think_us", "think times in ms as keys", t)
        for key in ("think_samples_us", "think_guest_us"):
            samples = h.get(key, {})
            if not isinstance(samples, dict) or not all(
                    isinstance(v, list) and len(v) <= 10_000 and all(_number(x) and not math.isnan(x) for x in v)
                    for v in samples.values()) or not set(samples) <= set(think):
                raise _bad(path, f"{field}.{el}.{key}",
                           "lists of µs (at most 10,000) for the think times of think_us", "…")
        shared = h.get("workload_think_us", {})
        if not isinstance(shared, dict) or not all(
                isinstance(by, dict) and all(isinstance(v, list) and len(v) <= 10_000
                                             and all(_number(x) and not math.isnan(x) for x in v) for v in by.values())
                for by in shared.values()):
            raise _bad(path, f"{field}.{el}.workload_think_us", "lists of µs by workload and think time", "…")
        wgaps = h.get("workload_gap_us", {})
        if not isinstance(wgaps, dict) or not all(
                isinstance(by, dict) and all(isinstance(g, dict) and wanted_gap <= set(g)
                                             and all(_number(x) for x in g.values()) for g in by.values())
                for by in wgaps.values()):
            raise _bad(path, f"{field}.{el}.workload_gap_us",
                       "percentiles 10/50/90/99, mean and n by workload and think time", "…")
        off = h.get("off_clock_runs", [])
        if not isinstance(off, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in off):
            raise _bad(path, f"{field}.{el}.off_clock_runs", "a list of run ids", off)
        rest = h.get("guest_device_us", {})
        if not isinstance(rest, dict) or not all(_number(v) for v in rest.values()):
            raise _bad(path, f"{field}.{el}.guest_device_us", "an object of µs by think time", rest)
        gaps = h.get("guest_gap_us", {})
        wanted = {"10", "50", "90", "99", "mean", "n"}
        if not isinstance(gaps, dict) or not set(gaps) <= set(think) or not all(
                isinstance(g, dict) and wanted <= set(g) and all(_number(x) for x in g.values())
                for g in gaps.values()):
            raise _bad(path, f"{field}.{el}.guest_gap_us",
                       "percentiles 10/50/90/99, mean and n by think time of think_us", "…")
