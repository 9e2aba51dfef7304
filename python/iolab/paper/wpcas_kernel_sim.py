"""The simulator's side of `iolab paper wpcas --kernel`: the same IOzone
experiments on the same disk and sectors, as `iolab paper wpcas` runs them
(no guest time), and again with the guest's own time per request as
`iolab kernel compare` measures it (a calibration boot: the part charged
to every request and the time from a completion to the next insertion, by
the guest's clock), so that the kernel's MB/s can be set beside a
simulation that pays what the guest pays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from iolab.paper.wpcas_kernel_plan import DISK, FILE_KB, SCHEDULERS, KPlan, expected_requests, job_name, workload

def sim_spec(mode: str, classes: int, plan: KPlan) -> dict[str, Any]:
    from iolab.kernel.compare import GUEST_NR_REQUESTS, sim_counterpart, sim_scheduler_names

    known = sim_scheduler_names()
    scheds = []
    for s in SCHEDULERS:
        name, _ = sim_counterpart(s.elevator, known)
        entry: dict[str, Any] = {"name": name, "label": s.label, **dict(s.sim_tunables)}
        if s.elevator == "mq-deadline":
            entry["nr_requests"] = GUEST_NR_REQUESTS  # as the guest sets after each switch
        scheds.append(entry)
    seeds = plan.sim_seq_seeds if mode == "sequential" else plan.sim_random_seeds
    return {
        "name": f"IOzone {mode}, {classes} classes ({plan.placement}), the kernel's schedulers",
        "disk": {"preset": DISK, "queue_depth": 1},
        "scheduler": scheds,
        "workload": workload(mode, classes, plan.placement, plan.file_kb),
        "run": {"seed": 1, "repetitions": seeds},
    }


def sim_rows(doc: dict[str, Any], mode: str, classes: int, file_kb: int = FILE_KB) -> list[dict[str, Any]]:
    rows = []
    for r in doc["runs"]:
        a = r.get("anticipation") or {}
        rows.append({
            "side": "simulator", "scheduler": r["scheduler"], "seed": r["seed"], "mode": mode, "classes": classes,
            "throughput_mb_s": r["throughput_mb_s"], "elapsed_s": r["elapsed_ms"] / 1000,
            "requests": r["requests"]["completed"], "expected_requests": expected_requests(mode, classes, file_kb),
            "antic_started": a.get("started", 0), "antic_succeeded": a.get("succeeded", 0),
            "antic_failed": a.get("failed", 0), "mean_seek_cylinders": r["seek"]["mean_cylinders"],
            "phases": [{"name": p["phase"], "mb_s": p["children_mb_s"], "runtime_ms": p["elapsed_ms"]}
                       for p in r.get("phases", [])],
        })
    return rows


def run_sim(plan: KPlan, out: Path) -> list[dict[str, Any]]:
    from iolab.simulate import run_experiment, spec_from_dict

    (out / "sim").mkdir(parents=True, exist_ok=True)
    rows = []
    for mode in plan.modes:
        for c in plan.classes:
            spec = sim_spec(mode, c, plan)
            outcome = run_experiment(spec_from_dict(spec, spec["name"]))
            try:
                doc = outcome.document
            finally:
                outcome.store.close()
            slim = {**doc, "runs": [{k: v for k, v in r.items() if k not in ("per_process", "per_class")}
                                    for r in doc["runs"]]}
            (out / "sim" / f"{job_name(mode, c)}.json").write_text(json.dumps({"spec": spec, **slim}, indent=1) + "\n")
            rows += sim_rows(doc, mode, c, plan.file_kb)
    return rows


# The side names of the rows: the kernel's, the simulator's as `iolab paper
# wpcas` runs it, and the simulator's with the guest's measured time.
SIM = "simulator"
SIM_GUEST = "simulator+guest"


def guest_time(calibration: Path, take_back: bool = True) -> dict[str, dict]:
    """The guest's time per request by elevator from a calibration boot of
    `iolab kernel compare` on this disk (``DIR/calibration-hp97560``, with
    traced copies: ``--think guest``), as :func:`iolab.kernel.calibration.
    measure_host` reads it."""
    from iolab.cli.errors import UserError
    from iolab.kernel.calibration import measure_host

    if not (calibration / "plan.txt").is_file() or not (calibration / "emu.csv").is_file():
        raise UserError(f"--calibration {calibration}: not a calibration boot of `iolab kernel compare` "
                        "(no plan.txt and emu.csv; e.g. DIR/calibration-hp97560)")
    try:
        host = measure_host(calibration, take_back=take_back)
    except (OSError, ValueError, KeyError, IndexError) as e:
        raise UserError(f"--calibration {calibration}: {type(e).__name__}: {e}") from None
    missing = sorted({s.elevator for s in SCHEDULERS} - {el for el, h in host.items() if h.get("think_guest_us")})
    if missing:
        raise UserError(f"--calibration {calibration}: no traced calibration of {', '.join(missing)} there "
                        "(calibrate with `iolab kernel compare --think guest --elevators "
                        "none,mq-deadline,anticipatory,wpcas`)")
    return host


def with_guest_time(spec: dict[str, Any], host: dict[str, dict]) -> list[dict[str, Any]]:
    """One spec per scheduler (each elevator costs the guest its own time):
    the guest model's charge per request as ``[disk] host_overhead_us``, and
    its distribution of a completion to the next insertion at no think time
    (IOzone's processes do not think) as each request's ``cpu`` time."""
    from iolab.kernel.calibration import sim_inputs

    out = []
    for entry in spec["scheduler"]:
        elevator = next(s.elevator for s in SCHEDULERS if s.label == entry.get("label", entry["name"]))
        dev, extra = sim_inputs(host[elevator], "guest")
        cpu = extra.get(0.0)
        one = {**spec, "name": f"{spec['name']}, {entry['label']} with the guest's time",
               "disk": {**spec["disk"], "host_overhead_us": round(dev, 3)}, "scheduler": [entry],
               "workload": {**spec["workload"], "cpu": {"dist": "samples", "ms": cpu}} if cpu else spec["workload"]}
        out.append(one)
    return out


def run_sim_guest(plan: KPlan, out: Path, host: dict[str, dict]) -> list[dict[str, Any]]:
    """The simulator's runs again, each scheduler paying the guest's time."""
    from iolab.simulate import run_experiment, spec_from_dict

    (out / "sim-guest").mkdir(parents=True, exist_ok=True)
    rows = []
    for mode in plan.modes:
        for c in plan.classes:
            docs = []
            for spec in with_guest_time(sim_spec(mode, c, plan), host):
                outcome = run_experiment(spec_from_dict(spec, spec["name"]))
                try:
                    doc = outcome.document
                finally:
                    outcome.store.close()
                docs.append({"spec": spec, "runs": [{k: v for k, v in r.items() if k not in ("per_process", "per_class")}
                                                    for r in doc["runs"]]})
                rows += [{**r, "side": SIM_GUEST} for r in sim_rows(doc, mode, c, plan.file_kb)]
            (out / "sim-guest" / f"{job_name(mode, c)}.json").write_text(json.dumps(docs, indent=1) + "\n")
    return rows


def read_sim_guest(out: Path, plan: KPlan) -> list[dict[str, Any]]:
    """The rows of :func:`run_sim_guest` from its files (none if it did not run)."""
    rows = []
    for mode in plan.modes:
        for c in plan.classes:
            path = out / "sim-guest" / f"{job_name(mode, c)}.json"
            if path.exists():
                for doc in json.loads(path.read_text()):
                    rows += [{**r, "side": SIM_GUEST} for r in sim_rows(doc, mode, c, plan.file_kb)]
    return rows
