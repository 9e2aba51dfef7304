"""`iolab recommend`: which of today's Linux schedulers (and which setting of
their main tunables) suits a recorded block trace on a given disk.

The trace is replayed (``kind = "trace"``) under every configuration of a
small grid, on the same seeds, and the configurations are compared on one
metric with the statistics `iolab bench` uses on real runs
(:mod:`iolab.bench.stats`): a blocked ANOVA over seeds, paired t-tests
between every two configurations with Holm's correction, and a winner only
when the best configuration is significantly better than every other one.

What a seed varies: a trace fixes every request's time, place and size, so
a plain replay is the same on every seed. Each request is issued later than
recorded by a delay drawn uniformly from [0, ``jitter_ms``) with the seed
(``workload.jitter_ms`` of the trace workload): the timing noise between
two runs of the same program, which changes how requests of different
processes interleave and so what the schedulers see. Paired tests across
seeds then ask whether a configuration wins whatever that noise does. With
``jitter_ms = 0`` the replay is deterministic, one seed is run, and the
answer says so.

When no configuration is significantly best, a paired equivalence test
(two one-sided t-tests, Bonferroni-corrected over the configurations
tested) against a stated margin decides whether the choice does not matter
(every configuration within the margin of the best) or whether the runs
cannot tell (a difference larger than the margin is not ruled out).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from iolab.cli.errors import UserError

# Today's schedulers: those a Linux 6.1 kernel offers for a blk-mq device.
MODERN = ("none", "mq-deadline", "kyber", "bfq")

# The main tunables tried besides each scheduler's defaults (one at a time,
# not as a product, to keep the grid small): mq-deadline serving one
# request per batch (latency); Kyber with a read target an HDD can meet
# (its 2 ms default is below one seek); BFQ without idling and without
# low_latency's weight raising. `--tunables` replaces a scheduler's list.
DEFAULT_GRID: dict[str, list[dict[str, float]]] = {
    "none": [{}],
    "mq-deadline": [{}, {"fifo_batch": 1}],
    "kyber": [{}, {"read_lat_nsec": 10_000_000}],
    "bfq": [{}, {"slice_idle": 0}, {"low_latency": 0}],
}

ALPHA = 0.05


@dataclass(frozen=True)
class Metric:
    name: str
    title: str
    unit: str
    higher_is_better: bool
    get: Callable[[dict], float]


def _read_p99(run: dict) -> float:
    return float(run["read_latency_ms"]["p99"])


def _fairness(run: dict) -> float:
    """Jain's index of the processes' mean latencies, (Σx)² / (n·Σx²): 1
    when every process waits as long as every other, 1/n when one process
    does all the waiting. (Under an open-loop replay a process's throughput
    is the rate the trace offers unless the disk is saturated, so the
    schedulers' fairness shows in the waiting, not in the bytes.)"""
    x = [float(p["latency_ms"]["mean"]) for p in run["per_process"] if p["requests"] > 0]
    if len(x) < 2:
        return 1.0
    s2 = sum(v * v for v in x)
    return (sum(x) ** 2) / (len(x) * s2) if s2 > 0 else 1.0


METRICS = {
    "throughput": Metric("throughput", "throughput", "MB/s", True, lambda r: float(r["throughput_mb_s"])),
    "read-p99": Metric("read-p99", "p99 read latency", "ms", False, _read_p99),
    "fairness": Metric("fairness", "fairness (Jain's index of per-process mean latency)", "", True, _fairness),
}


@dataclass(frozen=True)
class Config:
    scheduler: str
    tunables: tuple[tuple[str, float], ...] = ()

    @property
    def label(self) -> str:
        if not self.tunables:
            return self.scheduler
        return self.scheduler + " " + ",".join(f"{k}={_num(v)}" for k, v in self.tunables)

    def spec_entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.scheduler}
        if self.tunables:
            entry["label"] = self.label
        entry.update(dict(self.tunables))
        return entry

    def sysfs_lines(self, dev: str) -> list[str]:
        lines = [f"echo {self.scheduler} > /sys/block/{dev}/queue/scheduler"]
        lines += [f"echo {_num(v)} > /sys/block/{dev}/queue/iosched/{k}" for k, v in self.tunables]
        return lines

    def bench_config(self, name: str) -> str:
        """As `iolab bench --config NAME=SCHED:K=V,...` takes it."""
        tun = ",".join(f"{k}={_num(v)}" for k, v in self.tunables)
        return f"{name}={self.scheduler}" + (f":{tun}" if tun else "")


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def parse_tunables(items: Sequence[str]) -> dict[str, dict[str, list[float]]]:
    """``["bfq.slice_idle=0,8"]`` -> ``{"bfq": {"slice_idle": [0, 8]}}``."""
    out: dict[str, dict[str, list[float]]] = {}
    for item in items:
        key, eq, values = item.partition("=")
        sched, dot, name = key.strip().partition(".")
        if not eq or not dot or not sched or not name:
            raise UserError(f"--tunables {item!r}: expected SCHED.NAME=V1,V2, e.g. bfq.slice_idle=0,8")
        if sched not in MODERN:
            raise UserError(f"--tunables {item!r}: '{sched}' is not one of {', '.join(MODERN)}")
        vals = []
        for v in values.split(","):
            try:
                x = float(v)
            except ValueError:
                raise UserError(f"--tunables {item!r}: '{v}' is not a number") from None
            if not math.isfinite(x):
                raise UserError(f"--tunables {item!r}: '{v}' is not a finite number")
            vals.append(x)
        if name in out.setdefault(sched, {}):
            raise UserError(f"--tunables {sched}.{name}: given twice; put every value in one list")
        out[sched][name] = vals
    return out


# A Linux block device's name as sysfs shows it (sda, nvme0n1, dm-0, mmcblk0p1,
# cciss!c0d0): the recommendation prints it into shell commands, so anything
# else is refused rather than quoted (a newline in it injected a command).
_DEVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._!-]{0,31}")


def check_device_name(name: str) -> str:
    if not _DEVICE_NAME.fullmatch(name):
        raise UserError(f"--device-name {name!r}: not a block device name as /sys/block shows it "
                        "(letters, digits, '.', '_', '-', '!'; at most 32)")
    return name


def configs(schedulers: Sequence[str], tunables: dict[str, dict[str, list[float]]]) -> list[Config]:
    """The grid: per scheduler its default list, or with ``--tunables`` the
    product of the values given (each tunable left out keeps its default)."""
    out = []
    for s in schedulers:
        if s not in MODERN:
            raise UserError(f"--schedulers: '{s}' is not one of {', '.join(MODERN)}")
        if s in tunables:
            names = list(tunables[s])
            for combo in itertools.product(*(tunables[s][n] for n in names)):
                out.append(Config(s, tuple(zip(names, combo))))
        else:
            out += [Config(s, tuple(t.items())) for t in DEFAULT_GRID[s]]
    labels = [c.label for c in out]
    if len(set(labels)) != len(labels):
        raise UserError("the grid names a configuration twice")
    return out


def build_spec(trace: Path, fmt: str, disk: dict[str, Any], cfgs: Sequence[Config], seeds: int,
               jitter_ms: float, mode: str, speed: float, fit: str, max_records: Optional[int]) -> dict[str, Any]:
    workload: dict[str, Any] = {"kind": "trace", "file": str(trace.resolve()), "format": fmt, "mode": mode,
                                "speed": speed, "fit": fit, "jitter_ms": jitter_ms}
    if max_records is not None:
        workload["max_records"] = max_records
    return {
        "name": f"recommend: {trace.name}",
        "disk": disk,
        "scheduler": [c.spec_entry() for c in cfgs],
        "workload": workload,
        "run": {"seed": 1, "repetitions": seeds if jitter_ms > 0 else 1},
    }


@dataclass
class Margin:
    """Best minus runner-up (in the metric's unit), with its interval."""

    versus: str
    diff: float
    low: float
    high: float
    level: float
    p_holm: float


@dataclass
class Verdict:
    metric: Metric
    values: dict[str, list[float]]          # per configuration, in seed order
    deterministic: bool
    best: str
    winner: Optional[str] = None            # significantly best
    top: list[str] = field(default_factory=list)
    margin: Optional[Margin] = None
    anova_p: Optional[float] = None
    equivalent: Optional[bool] = None       # every configuration within the margin of the best
    equivalence_margin: float = 0.05
    widest: Optional[tuple[str, float, float]] = None  # (config, low, high) of the least certain pair, relative

    def mean(self, label: str) -> float:
        v = self.values[label]
        return sum(v) / len(v)


def _paired_interval(d: Sequence[float], level: float) -> tuple[float, float]:
    from scipy import stats as sps

    n = len(d)
    m = sum(d) / n
    if n < 2:
        return m, m
    sd = math.sqrt(sum((x - m) ** 2 for x in d) / (n - 1))
    half = sps.t.ppf(1 - (1 - level) / 2, n - 1) * sd / math.sqrt(n)
    return m - half, m + half


def analyse(doc: dict[str, Any], metric: Metric, equivalence_margin: float = 0.05) -> Verdict:
    """Compare the configurations of a result document on ``metric``."""
    import pandas as pd

    from iolab.bench import stats

    values: dict[str, list[float]] = {}
    rows = []
    for order, run in enumerate(doc["runs"]):
        v = metric.get(run)
        values.setdefault(run["scheduler"], []).append(v)
        rows.append({"config": run["scheduler"], "rep": run["seed"], "order": order, "value": v})
    labels = list(values)
    if metric.name == "read-p99" and all(
            r["read_latency_ms"]["p99"] == 0 and r["requests"]["completed"] > 0 for r in doc["runs"]):
        raise UserError("--metric read-p99: the trace has no reads; choose throughput or fairness")
    deterministic = all(len(set(v)) == 1 for v in values.values())
    pick = max if metric.higher_is_better else min
    means = {k: sum(v) / len(v) for k, v in values.items()}
    best = pick(labels, key=lambda k: means[k])
    verdict = Verdict(metric, values, deterministic, best, equivalence_margin=equivalence_margin)
    n_seeds = min(len(v) for v in values.values())
    if deterministic or n_seeds < 2:
        verdict.deterministic = True
        ordered = sorted(labels, key=lambda k: means[k], reverse=metric.higher_is_better)
        verdict.top = [k for k in ordered if means[k] == means[best]]
        verdict.winner = best if len(verdict.top) == 1 else None
        return verdict
    comp = stats.compare(pd.DataFrame(rows), metric.higher_is_better, configs=labels)
    verdict.anova_p = comp.anova.p if comp.anova else None
    verdict.winner = comp.winner
    verdict.top = sorted(comp.top, key=lambda k: means[k], reverse=metric.higher_is_better)
    n_pairs = len(comp.pairs)
    others = [k for k in labels if k != best]
    if others:
        runner = pick(others, key=lambda k: means[k])
        d = [a - b for a, b in zip(values[best], values[runner])]
        level = 1 - ALPHA / max(1, n_pairs)
        low, high = _paired_interval(d, level)
        pair = comp.pair(best, runner)
        verdict.margin = Margin(runner, sum(d) / len(d), low, high, level, pair.p_holm if pair else math.nan)
    if verdict.winner is None and len(verdict.top) == len(labels):
        # Nothing separated: does the choice not matter, or can the runs not tell?
        verdict.equivalent, verdict.widest = _equivalence(values, best, others, equivalence_margin)
    return verdict


def _equivalence(values: dict[str, list[float]], best: str, others: Sequence[str],
                 margin: float) -> tuple[bool, Optional[tuple[str, float, float]]]:
    """TOST on paired differences: every other configuration is within
    ±margin (relative to the best's mean) when the 1 - 2·alpha/k interval of
    its difference from the best lies inside the margin (k = configurations
    tested, Bonferroni). Returns that verdict and the widest relative
    interval."""
    ref = sum(values[best]) / len(values[best])
    if not others or ref == 0:
        return True, None
    level = 1 - 2 * ALPHA / len(others)
    all_in = True
    widest = None
    for k in others:
        d = [a - b for a, b in zip(values[k], values[best])]
        low, high = _paired_interval(d, level)
        rel = (low / abs(ref), high / abs(ref))
        if not (-margin < rel[0] and rel[1] < margin):
            all_in = False
        if widest is None or max(abs(rel[0]), abs(rel[1])) > max(abs(widest[1]), abs(widest[2])):
            widest = (k, rel[0], rel[1])
    return all_in, widest


def _fmt(x: float) -> str:
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    digits = max(0, 3 - int(math.floor(math.log10(abs(x)))) - 1)
    return f"{x:.{min(digits, 6)}f}"


def explain(v: Verdict, cfg_by_label: dict[str, Config], dev: str) -> list[str]:
    """The recommendation as lines of text."""
    m = v.metric
    unit = f" {m.unit}" if m.unit else ""
    better = "higher" if m.higher_is_better else "lower"
    lines = []
    if v.deterministic:
        lines.append("The replay is deterministic (jitter 0, or no seed changed anything): one value per "
                     "configuration, no interval; a difference is exact for this replay but says nothing "
                     "about run-to-run noise.")
        if v.winner:
            ordered = sorted(v.values, key=v.mean, reverse=m.higher_is_better)
            nxt = ordered[1] if len(ordered) > 1 else None
            diff = f" ({_fmt(v.mean(v.winner) - v.mean(nxt))}{unit} against {nxt})" if nxt else ""
            lines.append(f"Best for {m.title} ({better} is better): {v.winner}{diff}.")
        elif len(v.top) == len(v.values):
            lines.append(f"The choice does not matter for {m.title}: every configuration gives the same value.")
            return lines
        else:
            lines.append(f"Best for {m.title} ({better} is better), tied: {', '.join(v.top)}; the others are worse.")
        rec = v.winner or v.top[0]
    elif v.winner:
        mg = v.margin
        rel = mg.diff / abs(v.mean(mg.versus)) if v.mean(mg.versus) else math.nan
        lines.append(
            f"Best for {m.title} ({better} is better): {v.winner}, significantly better than every other "
            f"configuration (paired t-tests over {len(v.values[v.best])} seeds, Holm-corrected; "
            f"ANOVA p = {v.anova_p:.2g}).")
        lines.append(
            f"Margin over the runner-up {mg.versus}: {_fmt(mg.diff)}{unit} ({rel:+.1%}), "
            f"{mg.level:.1%} interval [{_fmt(mg.low)}, {_fmt(mg.high)}]{unit} "
            f"(Bonferroni over the pairs), Holm p = {mg.p_holm:.2g}.")
        rec = v.winner
    else:
        n = len(v.values[v.best])
        if v.equivalent:
            lines.append(
                f"The choice does not matter for {m.title} on this workload: no configuration is "
                f"significantly best, and every one is within ±{v.equivalence_margin:.0%} of the best "
                f"({v.best}) by a paired equivalence test over {n} seeds.")
            return lines
        if len(v.top) == len(v.values):
            lines.append(f"No configuration is significantly better than any other for {m.title} over {n} seeds"
                         + (f" (ANOVA p = {v.anova_p:.2g})." if v.anova_p is not None else "."))
            if v.widest:
                k, lo, hi = v.widest
                lines.append(f"Nor is it established that the choice does not matter: {k} against {v.best} "
                             f"lies within [{lo:+.1%}, {hi:+.1%}], wider than ±{v.equivalence_margin:.0%}. "
                             f"More seeds (--seeds) would tell.")
            return lines
        rec = v.best
        lines.append(f"No single configuration is significantly best for {m.title} over {n} seeds "
                     f"(ANOVA p = {v.anova_p:.2g}), but every configuration outside the best group is "
                     f"significantly worse (Holm-corrected paired t-tests). The best group: {', '.join(v.top)}; "
                     f"{rec} has the best mean, and more seeds may separate the group.")
    lines.append("To apply it:")
    lines += ["  " + s for s in cfg_by_label[rec].sysfs_lines(dev)]
    return lines


def table(v: Verdict) -> list[tuple[str, str, str]]:
    """(configuration, mean ± 95% CI, seeds) rows, best first."""
    from iolab.report import ci95

    out = []
    for k in sorted(v.values, key=v.mean, reverse=v.metric.higher_is_better):
        vals = v.values[k]
        ci = ci95(vals)
        out.append((k, _fmt(v.mean(k)) + (f" ± {_fmt(ci)}" if ci > 0 else ""), str(len(vals))))
    return out


def verify_command(dev: str, recommended: Config, default: Config, reps: int, out: Path,
                   workload: Optional[str], runtime: Optional[float] = None) -> list[str]:
    """The `iolab bench` command that checks the recommendation on a real
    device: the recommended and the default configuration, interleaved."""
    import sys

    target = ["--loop", dev[len("loop:"):]] if dev.startswith("loop:") else ["--device", dev]
    cmd = [sys.executable, "-m", "iolab", "bench", *target,
           "--config", default.bench_config("default"), "--config", recommended.bench_config("recommended"),
           "--reps", str(reps), "-o", str(out)]
    if workload:
        cmd += ["--workload", workload]
    if runtime is not None:
        cmd += ["--runtime", repr(float(runtime))]
    return cmd


def default_config(dev: str) -> Config:
    """The configuration the device runs now (its active scheduler, default
    tunables); for a loop sandbox, the 6.1 kernel's own default for a
    single-queue device, mq-deadline (block/elevator.c,
    elevator_get_default)."""
    if dev.startswith("loop:"):
        return Config("mq-deadline")
    from iolab.bench import sysfs

    _, active = sysfs.schedulers(sysfs.resolve(dev))
    if not active:
        raise UserError(f"--verify {dev}: cannot read its scheduler")
    return Config(active)


def dump(v: Verdict, path: Path) -> None:
    path.write_text(json.dumps({
        "metric": v.metric.name, "deterministic": v.deterministic, "best": v.best, "winner": v.winner,
        "top": v.top, "anova_p": v.anova_p, "equivalent": v.equivalent,
        "equivalence_margin": v.equivalence_margin,
        "margin": None if v.margin is None else vars(v.margin),
        "values": v.values,
    }, indent=1) + "\n")
