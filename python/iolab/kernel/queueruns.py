"""kblockd's queue runs in the guest, measured from the blk tracer: how long
after the block layer asks for a run kblockd's worker carries it out, by
what asked (the simulator's ``[host.queue_run_us]``, sched::kblockd).

On Linux 6.1 an insertion into an elevator, the elevator's own kick at a
completion and at its timer, and SCHED_RESTART all run the queue
asynchronously: the worker (``kworker/N:MH``, kblockd's high-priority
queue) asks the elevator for a request later. In the one-vCPU guest of
``iolab kernel compare --icount`` that is 0.5–0.75 ms, a large share of a
request's time on a fast disk, and the instant an anticipating elevator
decides at (docs/kernel.md, "What the elevators decided").

A sample is taken only where the trace leaves no doubt which ask a run
answers:

* ``insert``: a request inserted (``I``) by a process while the device
  holds none, to the worker's next act (an issue, ``D``, or one of the
  module's own lines), with no completion and no other insertion between;
* ``completion``: a completion (``C``) while requests wait in the
  elevator, to the worker's next act (an issue or one of the module's own
  lines, e.g. ``as start``), with no insertion between;
* ``timer``: an anticipation's expiry (the module's ``as end ... ok 0``
  written from the timer, not by the worker) to the worker's next issue,
  with no completion or insertion between.

What is left out is counted (``ambiguous``): a run that answers two asks
is nobody's sample.
"""

from __future__ import annotations

from pathlib import Path

CAUSES = ("insert", "completion", "timer")
# Fewer samples than this and a cause's distribution is not given (the
# simulator then runs the queue at once for it): a median of a handful of
# runs is not a measured distribution.
MIN_SAMPLES = 20


def _is_worker(comm: str) -> bool:
    return comm.startswith("kworker/")


def queue_run_delays_us(path: Path, marker: int | None = None, take_back=None) -> dict:
    """The delays of one traced run, µs, by cause, and the asks left out;
    with ``take_back`` (:class:`iolab.kernel.tracercost.TakeBack`), each
    delay without the tracer's lines written in it (the ask's own line
    among them)."""
    def delay(start: float, end: float) -> float:
        return take_back.window(start, end) if take_back else end - start

    from iolab.kernel.bfqlog import BLOCK_EVENT, MESSAGE, read_trace

    text = read_trace(path)
    out: dict = {c: [] for c in CAUSES}
    ambiguous = 0
    queued: set[int] = set()  # inserted, not yet issued (by sector)
    in_flight = 0
    ask = None  # (cause, time µs): the one ask the worker's next act answers
    for line in text.splitlines():
        b = BLOCK_EVENT.match(line)
        if b:
            act, t, sector = b["act"], float(b["t"]) * 1e6, int(b["sector"])
            if marker is not None and sector >= marker:
                ask = None
                continue
            worker = _is_worker(b["comm"])
            if act == "I":
                if ask is not None:
                    ambiguous += 1
                    ask = None
                elif not worker and in_flight == 0:
                    ask = ("insert", t)
                queued.add(sector)
            elif act == "D":
                queued.discard(sector)
                in_flight += 1
                if ask is not None and worker:
                    out[ask[0]].append(delay(ask[1], t))
                    ask = None
            elif act == "C":
                in_flight = max(in_flight - 1, 0)
                if ask is not None:
                    ambiguous += 1
                    ask = None
                elif queued:
                    ask = ("completion", t)
            continue
        m = MESSAGE.match(line)
        if not m:
            continue
        comm = line.split("[", 1)[0].strip().rsplit("-", 1)[0]
        t = float(m["t"]) * 1e6
        if _is_worker(comm):
            if ask is not None:
                out[ask[0]].append(delay(ask[1], t))
                ask = None
        elif m["text"].startswith("as end ") and " ok 0 " in f"{m['text']} ":
            if ask is not None:
                ambiguous += 1
            ask = ("timer", t)
    out["ambiguous"] = ambiguous
    return out


def merge(parts: list[dict]) -> dict:
    """Several runs' delays pooled."""
    out: dict = {c: [] for c in CAUSES}
    out["ambiguous"] = 0
    for p in parts:
        for c in CAUSES:
            out[c] += p.get(c, [])
        out["ambiguous"] += p.get("ambiguous", 0)
    return out


def summary(delays: dict, quantiles) -> dict:
    """What the calibration keeps of pooled delays: per cause with enough
    samples, ``quantiles`` of them (the simulator's equally likely values)
    and their count and mean; the asks left out."""
    import numpy as np

    out: dict = {"ambiguous": delays.get("ambiguous", 0)}
    for c in CAUSES:
        xs = delays.get(c, [])
        if len(xs) >= MIN_SAMPLES:
            out[c] = {"values_us": quantiles(xs), "n": len(xs), "mean_us": float(np.mean(xs)),
                      "p50_us": float(np.median(xs))}
    return out


def sim_table(measured: dict | None) -> dict:
    """The simulator's ``[host.queue_run_us]`` from :func:`summary`'s
    result (a cause without enough samples is left out: run at once)."""
    return {c: [round(max(v, 0.0), 3) for v in measured[c]["values_us"]]
            for c in CAUSES if measured and c in measured}
