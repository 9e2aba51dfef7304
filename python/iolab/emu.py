"""The emulated disk's request log: read it, and check it against the model.

``iolab emu`` serves an image over NBD with the timing of a disk model and,
with ``--log``, writes one CSV row per request (docs/emu.md, "The request
log"). :func:`read_log` reads a log into its header (a dict) and a
:class:`pandas.DataFrame` of requests; :func:`check_log` replays the log
through the same disk model and reports, request by request, whether the
emulator charged what the model charges, whether each request started when
the one-at-a-time rule says, and how late the replies left.

>>> log = read_log("run.csv")                      # doctest: +SKIP
>>> log.requests[["op", "sector", "service_ns"]]   # doctest: +SKIP
>>> report = check_log("run.csv")                  # doctest: +SKIP
>>> report.summary["model_agreement"]              # doctest: +SKIP
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["LOG_COLUMNS", "EmuLog", "CheckReport", "read_log", "check_log", "lateness_summary", "write_trace"]

MAGIC = "iolab-emu-log"
FORMAT_VERSION = 1

# Columns of the log, in order (crates/iolab-emu/src/log.rs, COLUMNS).
LOG_COLUMNS = [
    "seq", "conn", "op", "flags", "offset", "length", "sector", "nr_sectors",
    "arrival_ns", "start_ns", "complete_ns", "reply_ns", "service_ns", "seek_ns",
    "rotation_ns", "transfer_ns", "overhead_ns", "seek_cylinders", "cache", "error",
]
_TEXT = {"op", "flags", "cache", "error"}
# Operations the model charges (the others are refused with EINVAL).
MODEL_OPS = {"read", "write", "flush", "trim", "write_zeroes"}
# The model's answer, in EmuModel.charge's order.
_BREAKDOWN = ["service_ns", "seek_ns", "rotation_ns", "transfer_ns", "overhead_ns", "seek_cylinders", "cache"]


@dataclass
class EmuLog:
    """A request log: its first line's header and one row per request."""

    path: str
    header: dict[str, Any]
    requests: pd.DataFrame


def read_log(path: str) -> EmuLog:
    """Read an ``iolab emu --log`` file; ValueError names the line at fault."""
    with open(path, encoding="utf-8") as f:
        first = f.readline()
        columns = f.readline().strip()
    parts = first.rstrip("\n").split(" ", 3)
    if len(parts) < 4 or parts[0] != "#" or parts[1] != MAGIC:
        raise ValueError(f"{path}:1: not an iolab emu log (expected '# {MAGIC} {FORMAT_VERSION} {{...}}')")
    if parts[2] != str(FORMAT_VERSION):
        raise ValueError(f"{path}:1: log format version {parts[2]}; this iolab reads version {FORMAT_VERSION}")
    try:
        header = json.loads(parts[3])
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:1: header is not JSON: {e}") from None
    if columns.split(",") != LOG_COLUMNS:
        raise ValueError(f"{path}:2: expected the columns {','.join(LOG_COLUMNS)}")
    dtypes = {c: (str if c in _TEXT else "int64") for c in LOG_COLUMNS}
    # A client may send any 64-bit offset; a refused one past 2^63 is logged as sent.
    dtypes["offset"] = "uint64"
    try:
        df = pd.read_csv(path, skiprows=1, dtype=dtypes, keep_default_na=False, na_filter=False)
    except (ValueError, pd.errors.ParserError) as e:
        raise ValueError(f"{path}: malformed row: {e}") from None
    return EmuLog(path=path, header=header, requests=df)


def lateness_summary(late_ns: np.ndarray) -> dict[str, float]:
    """Mean, percentiles and maximum (ns) of a set of delays (reply −
    model completion, or the client's gaps)."""
    if len(late_ns) == 0:
        return {"count": 0}
    q = np.percentile(late_ns, [50, 90, 99, 99.9])
    return {
        "count": int(len(late_ns)),
        "mean_ns": float(np.mean(late_ns)),
        "p50_ns": float(q[0]),
        "p90_ns": float(q[1]),
        "p99_ns": float(q[2]),
        "p999_ns": float(q[3]),
        "max_ns": float(np.max(late_ns)),
        "within_100us": float(np.mean(late_ns <= 100_000)),
        "within_1ms": float(np.mean(late_ns <= 1_000_000)),
    }


@dataclass
class CheckReport:
    """What :func:`check_log` found: a summary and one row per request
    (the log's columns plus ``model_*`` columns, ``agree``, ``start_ok``
    and ``late_ns``). ``summary["idle_gap"]`` describes the client's gaps
    from a reply to the next arrival when nothing else was outstanding: on
    a zero-latency run, the client's own cost per request."""

    summary: dict[str, Any]
    requests: pd.DataFrame

    @property
    def ok(self) -> bool:
        s = self.summary
        return s["model_disagreements"] == 0 and s["schedule_violations"] == 0


def check_log(path: str) -> CheckReport:
    """Replay a log through its disk model and compare request by request.

    Each request the model served is charged again, on a fresh model, at
    the logged start instant, in the logged order: the emulator and the
    model must agree exactly (the model is deterministic given the same
    requests at the same instants). Each start must be
    ``max(arrival, previous completion)`` (one request at a time in arrival
    order). The timing error is ``reply_ns - complete_ns``.
    """
    from iolab._iolab import EmuModel

    log = read_log(path)
    h = log.header
    model = EmuModel(json.dumps(h["disk"]), bool(h.get("zero_latency", False)))
    df = log.requests.copy()
    served = (df["error"] == "") & df["op"].isin(MODEL_OPS)
    model_cols = {f"model_{c}": [] for c in _BREAKDOWN}
    start_ok = []
    free = 0
    for row in df.itertuples(index=False):
        if row.error == "" and row.op in MODEL_OPS:
            out = model.charge(row.op, row.offset, row.length, "fua" in row.flags.split("|"), row.start_ns)
            start_ok.append(row.start_ns == max(row.arrival_ns, free))
            free = row.start_ns + out[0]
        else:
            out = (0, 0, 0, 0, 0, 0, "")
            start_ok.append(row.start_ns >= row.arrival_ns)
        for c, v in zip(_BREAKDOWN, out):
            model_cols[f"model_{c}"].append(v)
    for c, v in model_cols.items():
        df[c] = v
    agree = np.ones(len(df), dtype=bool)
    for c in _BREAKDOWN:
        agree &= (df[c] == df[f"model_{c}"]).to_numpy()
    df["agree"] = agree
    df["start_ok"] = start_ok
    df["late_ns"] = df["reply_ns"] - df["complete_ns"]
    sv = df[served]
    # The client's own time: from a reply to the next request's arrival,
    # where nothing else was outstanding (the disk sat idle meanwhile).
    arr = df["arrival_ns"].to_numpy()
    rep = df["reply_ns"].to_numpy()
    idle = arr[1:] - rep[:-1]
    idle = idle[idle >= 0]
    span_ns = int(sv["complete_ns"].max() - sv["start_ns"].min()) if len(sv) else 0
    summary: dict[str, Any] = {
        "log": path,
        "disk": h.get("describe", ""),
        "zero_latency": bool(h.get("zero_latency", False)),
        "requests": int(len(df)),
        "served": int(served.sum()),
        "refused": int((~served).sum()),
        "by_op": {str(k): int(v) for k, v in sv["op"].value_counts().sort_index().items()},
        "model_agreement": int(agree[served.to_numpy()].sum()),
        "model_disagreements": int((~agree[served.to_numpy()]).sum()),
        "schedule_violations": int((~df["start_ok"]).sum()),
        "busy_ns": int(sv["service_ns"].sum()),
        "span_ns": span_ns,
        "mean_service_ms": float(sv["service_ns"].mean() / 1e6) if len(sv) else 0.0,
        "iops": float(len(sv) / (span_ns / 1e9)) if span_ns > 0 else 0.0,
        "late": lateness_summary(sv["late_ns"].to_numpy()),
        "idle_gap": lateness_summary(idle),
    }
    return CheckReport(summary=summary, requests=df)


def write_trace(log: EmuLog, path: str) -> int:
    """Write the log's served reads and writes as a block trace in the FIU
    format (``ts_ns pid process lba size_512B R|W major minor md5``) that
    ``iolab run`` replays (``[workload] kind = "trace"``, ``format =
    "fiu"``): the arrival instant, the connection as the stream, sectors.
    Returns the number of requests written. The simulator rebases times to
    the first request, so its platters start at another angle: the replay
    agrees with the log in distribution, not request by request (the
    ``--check`` replay is the exact one)."""
    df = log.requests
    rw = df[(df["error"] == "") & df["op"].isin(["read", "write"])]
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"# from {log.path} (iolab emu): {log.header.get('describe', '')}\n")
        for r in rw.itertuples(index=False):
            f.write(f"{r.arrival_ns} {r.conn} emu {r.sector} {r.nr_sectors} {'R' if r.op == 'read' else 'W'} 0 0 -\n")
    return len(rw)
