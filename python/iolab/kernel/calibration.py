"""The guest's own time per request, measured before ``iolab kernel compare``
and given to the simulator as inputs (docs/kernel.md, "The guest's own
time, a measured input").

One boot per compared disk (``--calibrate idle``, the default) or one on a
zero-latency disk (``--calibrate zero``) runs the ``MEASURE`` workloads
under every compared elevator. Every gap is taken from the emulator's reply
to the next request's arrival, so whatever the disk's latency, that time is
the guest's. How it reaches the simulator is the think model (``--think``):

* ``mean``: the gap with 8 requests in flight (the device part) is charged
  to every request as service, and the rest of a one-process gap, its mean,
  is added to the process's think time;
* ``samples``: the same, but the think extra drawn from the gaps as the
  disk saw them. Under ``-icount`` those carry QEMU's alignment sleeps (the
  guest's clock may run 3 ms ahead of the host's), a tail the guest's own
  decisions never see;
* ``guest``: split where the elevator in the guest splits it. A traced copy
  of each one-process run gives, by the guest's own clock, the time from a
  completion to the next request's insertion into the elevator (the blk
  tracer's C to I): what an anticipating elevator measures as the process's
  think time, and what the simulator adds to it, drawn from that
  distribution. The rest of the one-process gap at the disk (untraced: its
  mean less that time) is the way through the guest's submission, QEMU, NBD
  and the completion interrupt, which the guest's elevator sees as part of
  the request's service: the simulator charges it to every request.
* ``workload``: as ``guest``, but the think extra of each compared
  workload's processes is measured in that workload (a traced run of it in
  the calibration boot, each process's gaps told apart by the region its
  requests fall in): with several processes sharing the guest's one CPU a
  process's own time per request is longer and spreads more than one
  process alone shows (seqreaders on the HP 97560 under AS, by the guest's
  clock: median 1.72 ms beyond the think time, p90 3.05 ms, against 1.00 and
  1.39 ms alone).
* ``cpu``: as ``guest``, but the one-process extra is CPU time: the
  simulator runs it on the guest's CPUs (``[host] cpus``: one under
  ``--icount``, two otherwise), where a process's burst waits for the
  others' (engine::cpu, first come first served), so the longer time per
  request of several processes is the model's outcome rather than its
  input; the workloads are traced as under ``workload``, to compare.

Whatever these models read from a trace is the traced guest's, and the
tracer costs the guest time (60 µs a block event and 160 a message on
modern7200 under ``-icount 6``): the calibration measures that cost per line
in pairs of untraced and traced one-process runs and takes it back from
every gap and queue-run delay for the lines written inside it
(:mod:`iolab.kernel.tracercost`; ``--tracer-cost keep`` leaves it in).
When BFQ, whose one-process runs write messages, is not among the compared
elevators, its one-process runs are calibrated too, for the message's cost.
"""

from __future__ import annotations

import math
from pathlib import Path

from iolab.cli.errors import UserError
from iolab.kernel import testbed
from iolab.kernel.emulog import GAP_PERCENTILES, GAP_QUANTILES, cut_log, marker_sector, off_clock
from iolab.kernel.guest import MARKER_SECTORS, Plan, make_plan, run_disk, run_side_by_side
from iolab.kernel.workloads import WORKLOADS, layout

MEASURE = ["zlt0", "zlt1", "zlt2", "zlaio8"]
# The calibration runs whose traced copies give the guest's own distribution.
TRACED_MEASURE = ["zlt0", "zlt1", "zlt2"]
# The elevator whose one-process runs write messages (bfq: 12-13 a request
# on 6.1), calibrated beside the compared ones when none of them is, so
# that a message's cost to the tracer is measured, not assumed
# (iolab.kernel.tracercost).
MESSAGE_WRITER = "bfq"
CALIBRATION_RUNTIME_S = 8


def calibration_plan(disk: str, elevators: list[str], think_model: str,
                     workloads: list[str] = ()) -> tuple[Plan, list[int]]:
    """The calibration boot's runs, and the ids of those to trace: under the
    ``guest`` and ``workload`` think models every one-process run again,
    traced; under ``workload`` also each of ``workloads`` whose processes'
    own gaps can be told apart (:func:`traceable`), traced."""
    plan = make_plan(disk, MEASURE, elevators, 1)
    traced: list[int] = []
    if think_model in ("guest", "workload", "cpu"):
        extra = TRACED_MEASURE + ([w for w in workloads if traceable(w)] if think_model != "guest" else [])
        n = len(plan.runs)
        for el in elevators:
            for wl in extra:
                plan.runs.append((n, wl, el, 1))
                traced.append(n)
                n += 1
        if MESSAGE_WRITER not in elevators:
            # one untraced and one traced run of it: the tracer's message cost
            for wl in TRACED_MEASURE:
                plan.runs.append((n, wl, MESSAGE_WRITER, 0))
                plan.runs.append((n + 1, wl, MESSAGE_WRITER, 1))
                traced.append(n + 1)
                n += 2
    return plan, traced


def traceable(name: str) -> bool:
    """A workload whose processes each have a region of their own (so a
    request's sector tells whose it is) and at least one of them waits for
    each request before the next (a gap from completion to the next
    request is its own time)."""
    w = WORKLOADS[name]
    return w.placement == "spread" and any(g.iodepth == 1 and g.direct and not g.fsync for g, _ in w.processes())


def workload_gaps_us(path: Path, marker: int, workload: str, capacity: int,
                     take_back=None) -> dict[float, list[float]]:
    """A traced run of ``workload``: each synchronous process's own gaps
    (completion to next insertion, guest clock) less its think time, by
    think time (:func:`iolab.kernel.timing.traced_windows_by_process`; whose
    process a pid is, from the region its first request falls in); with
    ``take_back`` (:class:`iolab.kernel.tracercost.TakeBack`), each gap
    without the tracer's lines written in it while its process could run."""
    from iolab.kernel.timing import traced_windows_by_process

    regions = layout(WORKLOADS[workload], capacity)
    out: dict[float, list[float]] = {}
    for windows, first in traced_windows_by_process(path, marker).values():
        group = next((g for g, _, start, size in regions if start <= first < start + size), None)
        if group is None or group.iodepth != 1 or not group.direct or group.fsync:
            continue
        think = group.think_ms * 1000
        out.setdefault(group.think_ms, []).extend(
            (take_back.window(a, b, think) if take_back else b - a) - think for a, b in windows)
    return out


def _quantiles(xs, n: int = GAP_QUANTILES) -> list[float]:
    import numpy as np

    return [float(x) for x in np.quantile(np.asarray(xs, dtype=float), (np.arange(n) + 0.5) / n)] if len(xs) else []


def measure_host(share: Path, take_back: bool = True, elevators=None) -> dict[str, dict]:
    """The guest's own time per request, per elevator, from a run of the
    ``MEASURE`` workloads. On a zero-latency disk (``--calibrate zero``) the
    guest never idles; on the compared disk's own model (``--calibrate
    idle``, the default) it idles between requests as in the comparison,
    and its way back from idle (the halted virtual CPU woken by the
    completion interrupt, blk-mq's queue run) is then part of the gap:

    * ``device_us``: the mean gap while one process keeps 8 requests in
      flight (libaio), so that a request is always waiting and no process
      runs between two requests: QEMU and NBD, the completion interrupt,
      the block layer, the elevator, the next dispatch. The simulator
      charges it to every request (``[disk] host_overhead_us``).
    * ``think_us[t]``: for one process thinking ``t`` ms, the mean gap less
      ``t`` and ``device_us``: waking the process, fio's sleep overshooting
      its think time, the system calls. The simulator adds it to the think
      time of processes that think ``t`` ms.
    * ``think_samples_us[t]``: the same gap by gap, as the disk saw it
      (GAP_QUANTILES equally likely values; below zero where a gap was
      shorter than the mean device_us).
    * ``think_guest_us[t]``, where the boot has traced copies of the runs:
      the gaps from a completion to the next request's insertion by the
      guest's own clock (:func:`iolab.kernel.timing.traced_gaps_us`, to the
      tracer's I, or its Q under an elevator that inserts nothing), less
      ``t``; ``guest_gap_us[t]`` their percentiles and mean;
      ``guest_device_us[t]`` the untraced run's mean gap at the disk less
      that mean, and ``guest_device_us["mean"]`` over the think times: what
      the ``guest`` model charges to every request.

    * ``workload_think_us[wl][t]``, where the boot has traced runs of the
      compared workloads: each synchronous process's own gaps in ``wl`` less
      its think time ``t`` (:func:`workload_gaps_us`); ``workload_gap_us``
      their percentiles, mean and count.

    A traced run costs the guest the tracer's time, so the means always
    come from the untraced runs when there are any, and ``tracer`` holds
    that time per line the tracer writes (:func:`_tracer_cost`). With
    ``take_back`` (the default; ``--tracer-cost keep`` turns it off) every
    gap and queue-run delay read from a trace is shortened by it for the
    lines written inside it (:mod:`iolab.kernel.tracercost`), so that the
    distributions are the untraced guest's.
    """
    import numpy as np

    from iolab.kernel import tracercost
    from iolab.kernel.timing import traced_windows_us

    plan = [line.split() for line in (share / "plan.txt").read_text().splitlines() if line.strip()]
    marker = marker_sector(share)
    p = Plan("calibration", [(int(i), wl, el, 0) for i, wl, el, *_ in plan])
    cuts = cut_log(share, p)
    capacity = marker + MARKER_SECTORS
    by: dict[tuple[str, str], dict[str, list[int]]] = {}
    for rid, wl, el, _ in p.runs:
        if rid in cuts:
            kind = "traced" if (share / "runs" / f"{rid}.trace").exists() else "plain"
            by.setdefault((el, wl), {"plain": [], "traced": []})[kind].append(rid)
    gap: dict[tuple[str, str], float] = {}
    quantiles: dict[tuple[str, str], list[float]] = {}
    guest: dict[tuple[str, str], list[float]] = {}
    used: set[int] = set()
    tracer = _tracer_cost(share, by, cuts, marker)
    costs = {k: tracer[k] for k in ("block_us", "message_us")} if take_back else {}
    tracer["taken_back"] = bool(take_back and any(costs.values()))
    backs: dict[int, tracercost.TakeBack] = {}

    def back(rid: int) -> tracercost.TakeBack:
        if rid not in backs:
            backs[rid] = tracercost.TakeBack(tracercost.line_times_us(share / "runs" / f"{rid}.trace"), costs)
        return backs[rid]
    for key, kinds in by.items():
        # the disk's view from an untraced run, else a traced one (the tracer
        # is not free: 130-350 us more per request for one process at the
        # disk, and a compared workload's traced run was 3-17% slower than its
        # untraced runs on modern7200; docs/kernel.md, "36 rows again"), a run
        # on the disk's clock before one whose guest fell behind the host
        rid = min(kinds["plain"] + kinds["traced"],
                  key=lambda r: (off_clock(cuts[r]), r not in kinds["plain"], r))
        used.add(rid)
        gap[key] = cuts[rid]["mean_gap_us"]
        quantiles[key] = cuts[rid].get("gap_quantiles_us", [])
        if kinds["traced"]:
            t_rid = min(kinds["traced"], key=lambda r: (off_clock(cuts[r]), r))
            used.add(t_rid)
            path = share / "runs" / f"{t_rid}.trace"
            ws = traced_windows_us(path, marker, to="I") or traced_windows_us(path, marker, to="Q")
            think = WORKLOADS[key[1]].groups[0].think_ms * 1000  # a one-process run: one group
            if ws:
                guest[key] = [back(t_rid).window(a, b, think) for a, b in ws]
    out = {}
    for el in sorted({el for el, _ in gap}):
        if elevators is not None and el not in elevators:
            continue
        dev = gap.get((el, "zlaio8"), math.nan)
        ts = [t for t in (0, 1, 2) if (el, f"zlt{t}") in gap]
        think = {t: gap[(el, f"zlt{t}")] - t * 1000 - dev for t in ts}
        h = {"device_us": dev, "think_us": {str(t): v for t, v in think.items()},
             "think_samples_us": {str(t): [q - t * 1000 - dev for q in quantiles[(el, f"zlt{t}")]]
                                  for t in ts if quantiles[(el, f"zlt{t}")] and not math.isnan(dev)},
             "one_process_gap_us": {str(t): gap[(el, f"zlt{t}")] for t in ts}}
        g_ts = [t for t in ts if (el, f"zlt{t}") in guest]
        if g_ts:
            h["think_guest_us"], h["guest_gap_us"], h["guest_device_us"] = {}, {}, {}
            for t in g_ts:
                g = guest[(el, f"zlt{t}")]
                m = float(np.mean(g))
                h["think_guest_us"][str(t)] = [q - t * 1000 for q in _quantiles(g)]
                h["guest_gap_us"][str(t)] = {**{str(q): float(np.percentile(g, q)) for q in GAP_PERCENTILES},
                                             "mean": m, "n": len(g)}
                h["guest_device_us"][str(t)] = gap[(el, f"zlt{t}")] - m
            h["guest_device_us"]["mean"] = float(np.mean([h["guest_device_us"][str(t)] for t in g_ts]))
        # the runs measured from whose guest fell behind the disk's clock (only
        # where no run on the clock measured the same thing; the report names them)
        # the compared workloads' own traced runs (the ``workload`` model)
        shared = {}
        for (e, wl), kinds in by.items():
            if e == el and wl not in MEASURE and kinds["traced"] and wl in WORKLOADS:
                t_rid = min(kinds["traced"], key=lambda r: (off_clock(cuts[r]), r))
                used.add(t_rid)
                gaps = workload_gaps_us(share / "runs" / f"{t_rid}.trace", marker, wl, capacity, back(t_rid))
                shared[wl] = {str(t): _quantiles(g) for t, g in gaps.items() if g}
                h.setdefault("workload_gap_us", {})[wl] = {
                    str(t): {**{str(q): float(np.percentile(g, q)) for q in GAP_PERCENTILES},
                             "mean": float(np.mean(g)), "n": len(g)} for t, g in gaps.items() if g}
        if shared:
            h["workload_think_us"] = shared
        h["queue_runs"] = _queue_runs(share, marker, {
            wl: min(kinds["traced"], key=lambda r: (off_clock(cuts[r]), r))
            for (e, wl), kinds in by.items() if e == el and kinds["traced"]}, back)
        h["tracer"] = tracer
        h["off_clock_runs"] = sorted(r for r in used if off_clock(cuts[r])
                                     and any(r in k for (e, _), kk in by.items() if e == el for k in kk.values()))
        out[el] = h
    return out


def _queue_runs(share: Path, marker: int, traced: dict[str, int], back=None) -> dict:
    """kblockd's queue runs in the traced runs of one elevator
    (:mod:`iolab.kernel.queueruns`): ``one_process`` pooled over the
    one-process runs (where the ``guest_device_us`` rest is measured, so
    its insertion delay is part of that rest), and per compared workload;
    ``back(rid)``, where given, the run's :class:`~iolab.kernel.tracercost.TakeBack`."""
    from iolab.kernel import queueruns

    delays = {wl: queueruns.queue_run_delays_us(share / "runs" / f"{rid}.trace", marker,
                                                 back(rid) if back else None)
              for wl, rid in traced.items()}
    out = {"one_process": queueruns.summary(
        queueruns.merge([d for wl, d in delays.items() if wl in TRACED_MEASURE]), _quantiles)}
    workloads = {wl: queueruns.summary(d, _quantiles) for wl, d in delays.items() if wl not in MEASURE}
    if workloads:
        out["workload"] = workloads
    return out


def _tracer_cost(share: Path, by: dict, cuts: dict, marker: int) -> dict:
    """The tracer's cost per line in one calibration boot
    (:mod:`iolab.kernel.tracercost`): for every elevator and one-process
    think time with an untraced and a traced run on the disk's clock, the
    traced run's mean gap at the disk less the untraced one's and the traced
    run's lines per request; ``block_us`` and ``message_us`` the costs fitted
    to them (0 where no pair was measured: nothing is then taken back)."""
    from iolab.kernel import tracercost

    pairs: dict[str, dict[str, dict]] = {}
    for (el, wl), kinds in sorted(by.items()):
        plain = [r for r in kinds["plain"] if not off_clock(cuts[r])]
        traced = [r for r in kinds["traced"] if not off_clock(cuts[r])]
        if wl not in TRACED_MEASURE or not plain or not traced:
            continue
        p, t = min(plain), min(traced)
        pairs.setdefault(el, {})[wl[3:]] = {
            "extra_us": cuts[t]["mean_gap_us"] - cuts[p]["mean_gap_us"],
            "lines_per_request": tracercost.lines_per_request(share / "runs" / f"{t}.trace", marker),
            "plain_gap_us": cuts[p]["mean_gap_us"], "traced_gap_us": cuts[t]["mean_gap_us"]}
    fit = tracercost.fit_costs([(v["extra_us"], v["lines_per_request"])
                                for per in pairs.values() for v in per.values()])
    return {**fit, "pairs": pairs}


def sim_inputs(host: dict | None, think_model: str,
               workload: str | None = None) -> tuple[float, dict[float, float | list[float]]]:
    """What the simulator is given of the guest's time: the µs charged to
    every request as service, and what is added to a process's think time
    (ms), by think time: the mean, or the distribution the think model
    names. A draw below zero, a gap shorter than the mean device time, is
    taken as zero."""
    if not host:
        return 0.0, {}
    dev = host.get("device_us", 0.0)
    extra: dict[float, float | list[float]] = {
        float(t): max(v, 0.0) / 1000 for t, v in host.get("think_us", {}).items() if not math.isnan(v)}
    if think_model == "samples":
        extra.update({float(t): [max(x, 0.0) / 1000 for x in v]
                      for t, v in host.get("think_samples_us", {}).items() if v})
    elif think_model in ("guest", "workload", "cpu"):
        given = host.get("think_guest_us", {})
        if not given:
            raise UserError(f"--think {think_model}: the calibration has no traced runs (calibrate again with "
                            f"--think {think_model}, which traces a copy of each one-process run)")
        dev = host.get("guest_device_us", {}).get("mean", dev)
        extra = {float(t): [max(x, 0.0) / 1000 for x in v] for t, v in given.items() if v}
        if think_model == "workload" and workload is not None:
            own = host.get("workload_think_us", {}).get(workload)
            if own is None and traceable(workload):
                raise UserError(f"--think workload: the calibration has no traced run of {workload} (calibrate "
                                "again with --think workload)")
            extra.update({float(t): [max(x, 0.0) / 1000 for x in v] for t, v in (own or {}).items() if v})
    return (0.0 if math.isnan(dev) else max(dev, 0.0)), extra


def queue_run_inputs(host: dict | None, workload: str | None) -> tuple[dict, float]:
    """``--queue-runs``: the simulator's ``[host.queue_run_us]`` for
    ``workload`` (its own traced run's delays, the one-process runs' where it
    has too few), and the µs to take off the charge to every request: the
    one-process runs' mean insertion delay, which the ``guest_device_us``
    rest holds and the simulator now spends before the service instead."""
    from iolab.kernel.queueruns import CAUSES, sim_table

    q = (host or {}).get("queue_runs")
    if not q:
        raise UserError("--queue-runs: the calibration has no traced runs to measure kblockd's runs in "
                        "(calibrate with --think guest, workload or cpu)")
    one = q.get("one_process", {})
    own = q.get("workload", {}).get(workload, {}) if workload else {}
    measured = {c: own.get(c) or one.get(c) for c in CAUSES if own.get(c) or one.get(c)}
    return sim_table(measured), one.get("insert", {}).get("mean_us", 0.0)


def calibrate(repo: Path, out: Path, meta: dict, args) -> None:
    """Fill ``meta["host_by_disk"]``: per compared disk and elevator, the
    guest's own time per request (see :func:`measure_host`)."""
    disks, elevators = meta["disks"], meta["elevators"]
    think_model = meta.get("think_model", "mean")
    meta["calibration"] = "given" if args.overhead_us is not None else args.calibrate
    if args.overhead_us is not None:
        if think_model != "mean":
            raise UserError(f"--think {think_model} needs a calibration: it cannot go with --overhead-us")
        host = {el: {"device_us": args.overhead_us, "think_us": {}} for el in elevators}
        meta["host_by_disk"] = {d: host for d in disks}
        return
    meta["calibration_load"] = {}
    targets = [(disks[0], "zero-latency", True)] if args.calibrate == "zero" else \
        [(d, f"calibration-{d}", False) for d in disks]
    meta["host_by_disk"] = {}

    def one(disk: str, name: str, zero: bool) -> None:
        what = "zero-latency run" if zero else f"calibration on {disk}"
        print(f"iolab kernel compare: {what} (the guest's own time per request); load {testbed.host_load()}",
              flush=True)
        meta["calibration_load"][name if zero else disk] = testbed.host_load()
        plan, traced = calibration_plan(disk, elevators, think_model, meta.get("workloads", []))
        share = run_disk(repo, out, disk, plan, CALIBRATION_RUNTIME_S, zero_latency=zero, share_name=name,
                         icount=args.icount, trace=meta.get("trace", []), trace_runs=traced)
        host = measure_host(share, take_back=meta.get("tracer_cost", "take-back") == "take-back",
                            elevators=elevators)
        for d in (disks if zero else [disk]):
            meta["host_by_disk"][d] = host

    guests = getattr(args, "guests", 1) or 1
    for i in range(0, len(targets), guests):
        run_side_by_side([lambda t=t: one(*t) for t in targets[i:i + guests]], "calibration")


def device_us(meta: dict, disk: str, elevator: str) -> float:
    """The guest's time per request the simulator charged as service (µs)."""
    model = meta.get("think_model", "mean")
    host = host_of(meta, disk).get(elevator)
    dev, _ = sim_inputs(host, "guest" if model in ("workload", "cpu") else model)
    if takes_queue_runs(meta, elevator):
        dev = max(dev - queue_run_inputs(host, None)[1], 0.0)
    return dev


def takes_queue_runs(meta: dict, elevator: str) -> bool:
    """Whether the simulator side of ``elevator`` is given kblockd's runs:
    under ``--queue-runs``, every elevator but the simulator's own blk-mq
    ones (sched::mq models their runs, at once)."""
    from iolab.kernel.significance import BUILTIN

    return bool(meta.get("queue_runs")) and elevator not in BUILTIN


def host_of(meta: dict, disk: str) -> dict[str, dict]:
    """The calibration that applies to ``disk`` (older directories hold one
    zero-latency calibration for every disk under ``host``)."""
    return meta.get("host_by_disk", {}).get(disk) or meta.get("host", {})
