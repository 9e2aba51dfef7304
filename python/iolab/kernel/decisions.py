"""What the anticipatory elevators decided, and from what, in both homes:
``iolab kernel decisions DIR`` over an ``iolab kernel compare --trace
wpcas`` (or ``anticipatory``) directory.

The module writes one blktrace line per decision (kernel/wpcas-policy.c:
``wpcas ste`` for STE's weighing of an experienced process, ``wpcas as``
for AS's rule while it is not; kernel/as-wait.c: ``as start`` and ``as
end`` for every wait started and ended, both elevators). In the guest they are in the blk tracer's text of each traced
run (``DISK/runs/ID.trace``); in the simulator the same C writes the same
lines (``kernel:NAME`` with ``run.elevator_messages``), so the compared
run's spec (``sim/DISK-WL-EL.spec.json``) is run again under the module's
C with its lines kept. A line names its target by where the target's last
request ended, so the region of the workload's layout tells whose it was
(:func:`iolab.kernel.workloads.layout`); the summary is per group of the
workload (``seq``, ``rand``, ...): the decisions and their inputs (p_s =
ok / (ok + f), T_as, P, the two seeks), the waits and how they ended.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from iolab.cli.errors import UserError
from iolab.kernel.bfqlog import MESSAGE
from iolab.kernel.workloads import WORKLOADS, layout

# The most lines the simulator keeps of one run (its bound,
# limits::MAX_ELEVATOR_MESSAGES): a 20 s run writes some 10^4-10^5.
SIM_MAX_LINES = 1_000_000

_NUMBER = re.compile(r"^-?\d+$")
# each line's kind and the fields it must carry (kernel/wpcas-policy.c, as-wait.c)
KINDS = {
    "wpcas ste": {"st", "pos", "ok", "f", "tas", "p", "ts", "ta", "w"},
    "wpcas as": {"st", "pos", "w"},
    "as start": {"pos", "req"},
    "as end": {"pos", "ok", "waited"},
}


def parse_line(text: str) -> tuple[str, dict[str, int]] | None:
    """(kind, fields) of one of the module's lines, or None for any other
    text (another elevator's, a line the tracer cut short)."""
    kind = next((k for k in KINDS if text.startswith(k + " ")), None)
    if kind is None:
        return None
    words = text[len(kind) + 1:].split()
    if len(words) % 2 or not all(_NUMBER.match(v) for v in words[1::2]):
        return None
    fields = {k: int(v) for k, v in zip(words[::2], words[1::2])}
    return (kind, fields) if KINDS[kind] <= fields.keys() else None


def kernel_trace(trace: Path) -> tuple[list[tuple[str, dict[str, int]]], list[float], Counter]:
    """A traced guest run, read once: the module's lines in order; how long
    after the last completion (the tracer's ``C``) each wait that started
    after its target's request had completed was started (µs); and the
    tasks that started them (a line's ``comm``). In the guest the queue run
    that decides follows the completion from kblockd's worker, in the
    simulator at the completion's instant (the engine runs the queue after
    every event)."""
    from iolab.kernel.bfqlog import BLOCK_EVENT, read_trace

    text = read_trace(trace)
    lines: list[tuple[str, dict[str, int]]] = []
    delays: list[float] = []
    who: Counter = Counter()
    last_c = None
    # a module from before the "as start" lines: WPCAS's fresh decisions
    starts = "as start pos " in text

    def started(p) -> bool:
        if starts:
            return p[0] == "as start" and p[1]["req"] == 0
        return p[0] in ("wpcas ste", "wpcas as") and p[1].get("st") == 0

    for line in text.splitlines():
        b = BLOCK_EVENT.match(line)
        if b:
            if b["act"] == "C":
                last_c = float(b["t"])
            continue
        m = MESSAGE.match(line)
        if not m or (p := parse_line(m["text"])) is None:
            continue
        lines.append(p)
        if last_c is not None and started(p):
            delays.append((float(m["t"]) - last_c) * 1e6)
            who[line.split("[", 1)[0].strip().rsplit("-", 1)[0]] += 1
    return lines, delays, who


def sim_lines(run: dict) -> list[tuple[str, dict[str, int]]]:
    """The module's lines of a simulated run's result."""
    return [p for m in run.get("elevator_messages", []) if (p := parse_line(m["text"])) is not None]


@dataclass
class Group:
    """One group's decisions over the runs summarised."""

    fresh: int = 0          # STE decisions whether to start a wait (st 0)
    fresh_wait: int = 0
    during: int = 0         # STE asked again while a wait ran (st 1, 2)
    during_break: int = 0
    as_rule: int = 0        # decisions by AS's rule (fewer than min_samples)
    as_rule_wait: int = 0
    starts: int = 0         # waits started (both elevators)
    starts_in_flight: int = 0  # ... while the target's request was in flight
    ends: int = 0
    ends_ok: int = 0
    ok_waited_us: int = 0
    failed_waited_us: int = 0
    ps: list[float] = field(default_factory=list)
    tas: list[int] = field(default_factory=list)
    period: list[int] = field(default_factory=list)
    ts: list[int] = field(default_factory=list)
    ta: list[int] = field(default_factory=list)

    def row(self, runs: int) -> dict:
        n = max(runs, 1)
        return {
            "fresh_per_run": self.fresh / n, "fresh_wait_share": _share(self.fresh_wait, self.fresh),
            "during_per_run": self.during / n, "during_break_share": _share(self.during_break, self.during),
            "as_rule_per_run": self.as_rule / n, "as_rule_wait_share": _share(self.as_rule_wait, self.as_rule),
            "starts_per_run": self.starts / n,
            "started_in_flight_share": _share(self.starts_in_flight, self.starts),
            "ends_per_run": self.ends / n, "success_share": _share(self.ends_ok, self.ends),
            "mean_success_wait_us": _share(self.ok_waited_us, self.ends_ok),
            "mean_failure_wait_us": _share(self.failed_waited_us, self.ends - self.ends_ok),
            "p_s": _median(self.ps), "t_as_us": _median(self.tas), "p_us": _median(self.period),
            "t_s_us": _median(self.ts), "t_a_us": _median(self.ta),
        }


def _share(a: int, b: int) -> float:
    return a / b if b else math.nan


def _median(xs: list) -> float:
    return float(statistics.median(xs)) if xs else math.nan


def summarise(lines_per_run: list[list[tuple[str, dict[str, int]]]], workload: str,
              capacity: int) -> dict[str, dict]:
    """Per group of ``workload``: its decisions over the runs (mean per
    run) and the medians of STE's inputs at the fresh decisions."""
    regions = layout(WORKLOADS[workload], capacity)

    def whose(pos: int) -> str:
        # a request's end may be its region's end exactly
        return next((g.name for g, _, start, size in regions if start <= pos <= start + size), "other")

    groups: dict[str, Group] = {}
    for lines in lines_per_run:
        for kind, f in lines:
            g = groups.setdefault(whose(f.get("pos", -1)), Group())
            if kind == "wpcas ste":
                if f["st"] == 0:
                    g.fresh += 1
                    g.fresh_wait += f["w"]
                    g.ps.append(f["ok"] / max(f["ok"] + f["f"], 1))
                    g.tas.append(f["tas"])
                    g.period.append(f["p"])
                    g.ts.append(f["ts"])
                    g.ta.append(f["ta"])
                else:
                    g.during += 1
                    g.during_break += 1 - f["w"]
            elif kind == "wpcas as":
                g.as_rule += 1
                g.as_rule_wait += f["w"]
            elif kind == "as start":
                g.starts += 1
                g.starts_in_flight += f["req"]
            else:
                g.ends += 1
                g.ends_ok += f["ok"]
                if f["ok"]:
                    g.ok_waited_us += f["waited"]
                else:
                    g.failed_waited_us += f["waited"]
    return {name: g.row(len(lines_per_run)) for name, g in sorted(groups.items())}


def sim_runs_with_lines(spec_path: Path) -> list[dict]:
    """The compared simulator spec again, under the module's own C
    (``kernel:NAME``: its figures are the Rust elevator's, docs/kernel.md)
    with its lines kept."""
    from iolab.kernel.compare import run_sim

    try:
        spec = json.loads(spec_path.read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"{spec_path}: {getattr(e, 'strerror', None) or e}") from None
    for s in spec.get("scheduler", []):
        if not str(s.get("name", "")).startswith("kernel:"):
            s["name"] = "kernel:" + {"as": "anticipatory"}.get(s["name"], s["name"])
    spec.setdefault("run", {})["elevator_messages"] = SIM_MAX_LINES
    return run_sim(spec)


# (key, heading, format) of the report's rows, kernel and simulator side by side
ROWS = [
    ("fresh_per_run", "STE: decisions to start a wait, per run", "{:,.0f}"),
    ("fresh_wait_share", "  of them: wait", "{:.1%}"),
    ("during_per_run", "STE: asked again during a wait, per run", "{:,.0f}"),
    ("during_break_share", "  of them: break the wait", "{:.1%}"),
    ("as_rule_per_run", "AS's rule (inexperienced), per run", "{:,.0f}"),
    ("starts_per_run", "waits started, per run", "{:,.0f}"),
    ("started_in_flight_share", "  of them: before the target's request completed", "{:.1%}"),
    ("ends_per_run", "waits ended, per run", "{:,.0f}"),
    ("success_share", "  of them: succeeded", "{:.1%}"),
    ("mean_success_wait_us", "  mean successful wait, us", "{:,.0f}"),
    ("mean_failure_wait_us", "  mean failed wait, us", "{:,.0f}"),
    ("p_s", "p_s at a decision (median)", "{:.3f}"),
    ("t_as_us", "T_as, us (median)", "{:,.0f}"),
    ("p_us", "P, us (median)", "{:,.0f}"),
    ("t_s_us", "T_seek to the candidate, us (median)", "{:,.0f}"),
    ("t_a_us", "T_seek of the target's mean seek, us (median)", "{:,.0f}"),
]


def _fmt(fmt: str, v) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


def compare_dir(out: Path, disks=None, workloads=None) -> list[dict]:
    """Every traced (disk, workload, elevator) of a compare directory, both
    homes summarised."""
    from iolab.kernel.compare import load_meta

    meta = load_meta(out)
    traced = meta.get("trace", [])
    if not isinstance(traced, list) or not all(isinstance(e, str) for e in traced):
        raise UserError(f"{out / 'meta.json'}: field `trace`: expected a list of elevator names, got {traced!r}")
    traced = [e for e in traced if e in ("wpcas", "anticipatory")]
    if not traced:
        raise UserError(f"{out}: no traced anticipatory or wpcas runs (run `iolab kernel compare` with "
                        "--trace wpcas,anticipatory)")
    found, silent = [], []
    for disk in meta["disks"]:
        if disks and disk not in disks:
            continue
        plan = [tuple(r) for r in meta["plans"][disk]]
        for wl in meta["workloads"]:
            if workloads and wl not in workloads:
                continue
            for el in traced:
                traces = [out / disk / "runs" / f"{rid}.trace" for rid, w, e, _ in plan if w == wl and e == el]
                traces = [t for t in traces if t.exists()]
                if not traces:
                    continue
                read = [kernel_trace(t) for t in traces]
                kernel = [r[0] for r in read]
                if not any(kernel):
                    # a workload it never waited in (or a module older than its lines)
                    silent.append(traces[0])
                    continue
                sim = [sim_lines(r) for r in sim_runs_with_lines(out / "sim" / f"{disk}-{wl}-{el}.spec.json")]
                cap = meta["capacity"][disk]
                delays = [d for r in read for d in r[1]]
                who = sum((r[2] for r in read), Counter())
                spec = json.loads((out / "sim" / f"{disk}-{wl}-{el}.spec.json").read_text())
                found.append({"disk": disk, "workload": wl, "elevator": el,
                              "sim_queue_runs": bool(spec.get("host", {}).get("queue_run_us")),
                              "kernel_runs": len(kernel), "sim_runs": len(sim),
                              "kernel": summarise(kernel, wl, cap), "sim": summarise(sim, wl, cap),
                              "kernel_decision_delay_us": _percentiles(delays),
                              "kernel_deciders": dict(who.most_common(3))})
    if not found and silent:
        raise UserError(f"{silent[0]}: no line of the module's (`wpcas ste`, `as end`): a module "
                        "built before they were written?")
    if not found:
        raise UserError(f"{out}: no traced run of the disks and workloads asked for")
    for t in silent:
        print(f"iolab kernel decisions: {t}: no line of the module's (it never waited there); left out",
              file=sys.stderr)
    return found


def _percentiles(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    s = sorted(xs)
    at = lambda q: s[min(len(s) - 1, int(q * len(s)))]  # noqa: E731
    return {"n": len(s), "p10": at(0.1), "p50": at(0.5), "p90": at(0.9), "mean": sum(s) / len(s)}


def report(found: list[dict]) -> str:
    parts = []
    for f in found:
        groups = sorted(set(f["kernel"]) | set(f["sim"]))
        head = f"{f['disk']} {f['workload']} {f['elevator']}: kernel {f['kernel_runs']} runs, " \
               f"simulator {f['sim_runs']} runs (kernel:{f['elevator']})"
        cols = [f"{g} kernel | sim" for g in groups]
        lines = [head, "", "| | " + " | ".join(cols) + " |", "|---|" + "---:|" * (2 * len(cols))]
        for key, name, fmt in ROWS:
            cells = [f"{_fmt(fmt, f['kernel'].get(g, {}).get(key))} | {_fmt(fmt, f['sim'].get(g, {}).get(key))}"
                     for g in groups]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        d = f.get("kernel_decision_delay_us") or {}
        if d:
            total = sum(f["kernel_deciders"].values())
            by = ", ".join(f"{c} {n / total:.0%}" for c, n in f["kernel_deciders"].items())
            lines += ["", f"In the guest the {d['n']:,} waits started after their target's completion started {d['p10']:,.0f} / {d['p50']:,.0f} / "
                          f"{d['p90']:,.0f} us (p10/p50/p90; mean {d['mean']:,.0f}) after the completion before "
                          f"them, by {by}; the simulator starts each "
                          + ("when kblockd's run it was given comes (`--queue-runs`)." if f.get("sim_queue_runs")
                             else "at the completion's instant.")]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def register(sub) -> None:
    d = sub.add_parser(
        "decisions",
        help="what the anticipatory elevators decided, and from what, in the guest and in the simulator",
        description="Read an `iolab kernel compare --trace wpcas,anticipatory` directory: per disk, "
                    "workload and group of processes, the module's decisions in the traced guest runs "
                    "(its blktrace lines) beside the same C's in the simulator on the compared spec: "
                    "waits started and broken, how they ended, and STE's inputs (p_s, T_as, P, seeks).",
    )
    d.add_argument("dir", metavar="DIR", help="an `iolab kernel compare` output directory")
    d.add_argument("--disks", default="", metavar="LIST", help="only these disks")
    d.add_argument("--workloads", default="", metavar="LIST", help="only these workloads")
    d.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    d.set_defaults(func=run_decisions)


def run_decisions(args) -> int:
    out = Path(args.dir)
    if not out.is_dir():
        raise UserError(f"{out}: no such directory")
    split = lambda s: [x for x in s.split(",") if x]  # noqa: E731
    found = compare_dir(out, split(args.disks), split(args.workloads))
    print(report(found), end="")
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(found, indent=2, default=float) + "\n")
        except OSError as e:
            raise UserError(f"{args.json}: cannot write the figures ({e.strerror})") from None
    return 0
