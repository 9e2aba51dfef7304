"""The experiments of the WPCAS paper (Chen, Yao, Cai, Sun; seed 000) as
iolab specs: Figures 3–8 (IOzone, sequential and random, 10/40/80 process
classes), Table 1 (the web-server load), and a sensitivity sweep
of WPCAS's parameters and AS's antic_expire.

The paper ran `iozone -i 0 -i 1 -r 4096 -t N -s 100 -I` and `iozone -i 2
-r 4096 -t N -I` 50 times on Linux 2.6.20, and says the files were 512 KB.
We keep its process counts and its direct I/O, and take 512 KiB files with
4 KiB records (a 4096 KiB record cannot fit a 512 KB file: the command line
and the text disagree; `record_kb`/`file_kb` are parameters to try others).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Section 4.4: NOOP, Deadline, CFQ, AS and WPCAS at 10, 40 and 80 classes.
IOZONE_SCHEDULERS = ["noop", "deadline", "cfq", "as", "wpcas"]
CLASS_COUNTS = [10, 40, 80]
# Section 4.5, Table 1: the 95% heuristic, AS and WPCAS.
TABLE1_SCHEDULERS = ["as95", "as", "wpcas"]
DISKS = ["hp97560", "modern7200"]


@dataclass(frozen=True)
class Plan:
    """How much to run: the full reproduction or a quick look."""

    iozone_seeds: int
    table1_seeds: int
    sweep_seeds: int
    table1_duration_s: float
    sweep_duration_s: float
    sweep_disks: tuple[str, ...]


FULL = Plan(iozone_seeds=50, table1_seeds=30, sweep_seeds=10, table1_duration_s=300.0, sweep_duration_s=120.0,
            sweep_disks=tuple(DISKS))
QUICK = Plan(iozone_seeds=5, table1_seeds=5, sweep_seeds=3, table1_duration_s=60.0, sweep_duration_s=30.0,
             sweep_disks=tuple(DISKS))

# The sensitivity grid (DESIGN.md defaults in the middle of each range).
SWEEP: dict[str, tuple[str, list[float]]] = {
    "gamma": ("wpcas", [0.2, 0.35, 0.5, 0.65, 0.8, 0.95]),
    "hist_len": ("wpcas", [4, 8, 16, 32, 64]),
    "window_ms": ("wpcas", [1, 2, 3, 5, 8]),
    "antic_expire": ("as", [1, 2, 4, 6, 10, 20]),
}


def iozone_spec(mode: str, classes: int, seeds: int, disk: str = "hp97560") -> dict[str, Any]:
    return {
        "name": f"IOzone {mode}, {classes} classes",
        "disk": {"preset": disk},
        "scheduler": [{"name": s} for s in IOZONE_SCHEDULERS],
        "workload": {"kind": "iozone", "processes": classes, "mode": mode, "record_kb": 4, "file_kb": 512,
                     "direct": True},
        "run": {"seed": 1, "repetitions": seeds},
    }


# The web-server load of Table 1 (section 4.5): our `web` workload (Zipf
# popularity over many small files, hot-news bursts that cool), with
# arrivals raised so that the disk is saturated most of the time. Below
# saturation an open-loop load's throughput is its offered load whatever
# the scheduler, and the paper compares throughput. 20/s with bursts to
# 80/s keeps the HP 97560 about 100% busy; the paper gives no parameters.
WEB_RATE_PER_S = 20.0
WEB_BURST_PEAK_PER_S = 80.0


def web_workload(duration_s: float) -> dict[str, Any]:
    """The paper's web-server load, as the `web` preset with our rates."""
    import json

    from iolab import _iolab

    w = json.loads(_iolab.workload_preset("web"))
    w["arrivals"]["rate_per_s"] = WEB_RATE_PER_S
    w["arrivals"]["burst_peak_per_s"] = WEB_BURST_PEAK_PER_S
    w["duration_s"] = duration_s
    return w


def table1_spec(plan: Plan, disk: str = "hp97560") -> dict[str, Any]:
    return {
        "name": "web-server load (Table 1)",
        "disk": {"preset": disk},
        "scheduler": [{"name": s} for s in TABLE1_SCHEDULERS],
        "workload": web_workload(plan.table1_duration_s),
        "run": {"seed": 1, "repetitions": plan.table1_seeds, "duration_s": plan.table1_duration_s},
    }


def sweep_specs(plan: Plan) -> list[tuple[str, str, dict[str, Any]]]:
    """(parameter, disk, spec) for each parameter of the sweep and disk.

    Each spec holds every value of the parameter as a labelled scheduler,
    plus AS with its defaults as the reference WPCAS must beat."""
    out = []
    for param, (sched, values) in SWEEP.items():
        for disk in plan.sweep_disks:
            entries = [{"name": "as", "label": "as (default)"}] if sched != "as" else []
            entries += [{"name": sched, "label": f"{sched} {param}={v:g}", param: v} for v in values]
            out.append((param, disk, {
                "name": f"sensitivity of {sched} to {param} on {disk}",
                "disk": {"preset": disk},
                "scheduler": entries,
                "workload": web_workload(plan.sweep_duration_s),
                "run": {"seed": 1, "repetitions": plan.sweep_seeds, "duration_s": plan.sweep_duration_s},
            }))
    return out
