"""What the anticipating elevators saw, in the kernel and in the simulator
(docs/kernel.md, "The anticipating rows by the elevator's own counters").

The module (kernel/as-wait.c) and the simulator
(crates/iolab-sim/src/sched/anticipatory/wait.rs) keep the same counters: how
many anticipations started, succeeded (the target's next request came) and
failed (the timer, or anything else, ended the wait), and the time waited
in each, counted from entering WAIT_NEXT, the moment the disk sits idle for
the target. The kernel's come from the compared runs, which are untraced,
by the guest's own clock: unlike the emulator's log (whose host-time
stamps carry QEMU's alignment under ``-icount``) and unlike a trace (which
costs the guest time), they see the untraced guest exactly as its elevator
did. A successful wait is the target's own time from the completion of its
request to the next one's arrival, below the elevator's window, so its mean
is the part of a process's think time that an anticipating elevator turns
into idle disk time; WPCAS also steers by it (its ``T_as``,
kernel/wpcas-policy.c).

Beside them, the calibration boot's traced run of the same workload under
the same elevator (``--think workload``): one run of the calibration's
length, its counters and its throughput, which show what the tracer did to
the guest the simulator's per-process times were read from.
"""

from __future__ import annotations

import math
from pathlib import Path

from iolab.kernel.guest import fio_summary, stats_file
from iolab.kernel.significance import mean_ci

# The elevators whose counters these are: the module's two (their
# simulator counterparts keep the same ones).
ANTICIPATING = ("anticipatory", "wpcas")


# The module's bins of successful waits (kernel/as-iosched.h AS_WAIT_BINS,
# AS_WAIT_BIN_NS): the simulator's result documents carry their own width.
WAIT_BINS = 32
WAIT_BIN_MS = 0.25
# The percentiles of a successful wait the table gives.
WAIT_PERCENTILES = (10, 50, 90)


def counters(started: float, succeeded: float, failed: float, ok_ns: float, fail_ns: float,
             bins: list[int] | None = None, bin_ms: float = WAIT_BIN_MS) -> dict[str, float]:
    """One run's counters as the table gives them; with the successful
    waits' ``bins``, their percentiles too (NaN without them)."""
    out = {"started": started, "succeeded": succeeded, "failed": failed,
           "success_share": succeeded / started if started else math.nan,
           "ok_wait_ms": ok_ns / succeeded / 1e6 if succeeded else math.nan,
           "fail_wait_ms": fail_ns / failed / 1e6 if failed else math.nan}
    for q in WAIT_PERCENTILES:
        out[f"ok_wait_p{q}_ms"] = binned_percentile(bins, bin_ms, q) if bins else math.nan
    return out


def binned_percentile(bins: list[int], bin_ms: float, q: float) -> float:
    """The q-th percentile of the waits counted in ``bins`` (bin i: [i, i+1)
    x ``bin_ms``), linear within its bin; NaN when it falls in the last,
    open bin or nothing was counted."""
    total = sum(bins)
    if total <= 0:
        return math.nan
    want, seen = total * q / 100, 0
    for i, n in enumerate(bins):
        if n and seen + n >= want:
            return math.nan if i == len(bins) - 1 else (i + (want - seen) / n) * bin_ms
        seen += n
    return math.nan


def _bins_of(text: str) -> list[int] | None:
    """The ``antic_success_wait_bins`` line of a stats file (None before the
    module counted them, or if the line is not WAIT_BINS counts)."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "antic_success_wait_bins":
            try:
                bins = [int(x) for x in parts[1:]]
            except ValueError:
                return None
            return bins if len(bins) == WAIT_BINS and min(bins) >= 0 else None
    return None


def kernel_run(stats: Path) -> dict[str, float] | None:
    """A kernel run's counters from its ``N.stats`` (None if it has none)."""
    st = stats_file(stats)
    if "antic_started" not in st:
        return None
    return counters(st["antic_started"], st.get("antic_succeeded", 0), st.get("antic_failed", 0),
                    st.get("antic_success_wait_ns", 0), st.get("antic_failure_wait_ns", 0),
                    _bins_of(stats.read_text()))


def sim_run(run: dict) -> dict[str, float] | None:
    """A simulator run's counters from its result document."""
    a = run.get("anticipation")
    if not a:
        return None
    return counters(a.get("started", 0), a.get("succeeded", 0), a.get("failed", 0),
                    a.get("success_wait_ms", 0.0) * 1e6, a.get("failure_wait_ms", 0.0) * 1e6,
                    a.get("success_wait_bins"), a.get("success_wait_bin_ms", WAIT_BIN_MS))


def traced_run(out: Path, disk: str, workload: str, elevator: str) -> dict | None:
    """The calibration boot's traced run of ``workload`` under ``elevator``:
    its counters and its throughput (fio's MB/s), or None."""
    share = out / f"calibration-{disk}"
    plan = share / "plan.txt"
    if not plan.exists():
        return None
    for line in plan.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == workload and parts[2] == elevator:
            rid = parts[0]
            if not (share / "runs" / f"{rid}.trace").exists() or not (share / "runs" / f"{rid}.json").exists():
                continue
            c = kernel_run(share / "runs" / f"{rid}.stats")
            if c is None:
                return None
            return {**c, "mb_s": fio_summary(share / "runs" / f"{rid}.json")["throughput_mb_s"], "run": int(rid)}
    return None


def summarize(runs: list[dict]) -> dict[str, list[float]]:
    """Mean and 95% half-width of every counter over runs."""
    return {k: list(mean_ci([r[k] for r in runs])) for k in runs[0]} if runs else {}


def row(out: Path, disk: str, workload: str, elevator: str, kernel_stats: list[Path],
        kernel_groups: list[dict[str, float]], sim_runs: list[dict]) -> dict | None:
    """The anticipation figures of one compared row, or None for an
    elevator that does not anticipate; ``kernel_groups``: each kernel run's
    MB/s by process group (:func:`iolab.kernel.emulog.group_mb_s`)."""
    if elevator not in ANTICIPATING:
        return None
    kern = [c for c in (kernel_run(p) for p in kernel_stats) if c is not None]
    sim = [c for c in (sim_run(r) for r in sim_runs) if c is not None]
    if not kern or not sim:
        return None
    return {"kernel": summarize(kern), "sim": summarize(sim), "kernel_runs": len(kern), "sim_runs": len(sim),
            "ok_wait_diff_ms": welch_ci([r["ok_wait_ms"] for r in kern], [r["ok_wait_ms"] for r in sim]),
            "failed_diff": welch_ci([r["failed"] for r in kern], [r["failed"] for r in sim]),
            "traced": traced_run(out, disk, workload, elevator),
            "groups": {name: {"kernel": list(mean_ci([g.get(name, math.nan) for g in kernel_groups])),
                              "sim": list(mean_ci([c["throughput_mb_s"] for r in sim_runs
                                                   for c in r.get("per_class", []) if c["name"] == name]))}
                       for name in sorted({n for g in kernel_groups for n in g})}}


def welch_ci(a: list[float], b: list[float]) -> list[float]:
    """mean(b) - mean(a) and its 95% Welch half-width (NaN below two runs a side)."""
    import numpy as np
    from scipy import stats

    a = [x for x in a if not math.isnan(x)]
    b = [x for x in b if not math.isnan(x)]
    if len(a) < 2 or len(b) < 2:
        return [math.nan, math.nan]
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    d = float(np.mean(b) - np.mean(a))
    se = math.sqrt(va + vb)
    if se == 0:
        return [d, 0.0]
    dof = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return [d, float(stats.t.ppf(0.975, dof) * se)]


def _pm(v: list[float] | None, fmt: str, pct: bool = False) -> str:
    if not v or math.isnan(v[0]):
        return "n/a"
    m, h = (v[0] * 100, v[1] * 100) if pct else (v[0], v[1])
    return f"{m:{fmt}}" + ("" if math.isnan(h) else f" ± {h:{fmt}}")


def table(rows: list[dict], runtime_s: int, calibration_s: int) -> list[str]:
    """The report's table over the compared rows that anticipate."""
    have = [r for r in rows if r.get("anticipation")]
    if not have:
        return []
    lines = [
        "The anticipating rows by the elevator's own counters (kernel/as-wait.c and its simulator twin: a "
        "wait counts from the disk going idle for the target; per run, mean ± 95% half-width; `ok`: the "
        "share of anticipations that succeeded; `ok wait`: a successful wait's mean, the target's own time "
        "from its completion to its next request, ms). The kernel's runs are untraced; `traced`: the "
        f"calibration's traced run of the same workload ({calibration_s} s, one run), whose per-process "
        "times the simulator was given, with its throughput over the untraced runs' mean. "
        "`sim − kernel`: Welch 95% intervals:",
        "",
        "| disk | workload | elevator | ok k / s / traced | failed k / s / traced | ok wait ms k / s / traced "
        "| sim − kernel: ok wait µs, failed | traced MB/s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in have:
        a = r["anticipation"]
        k, s, t = a["kernel"], a["sim"], a.get("traced")
        share = (f"{_pm(k['success_share'], '.1f', True)}% / {_pm(s['success_share'], '.1f', True)}% / "
                 + (f"{t['success_share'] * 100:.1f}%" if t else "-"))
        failed = (f"{_pm(k['failed'], '.0f')} / {_pm(s['failed'], '.0f')} / "
                  + (f"{t['failed'] * runtime_s / calibration_s:.0f}" if t else "-"))
        wait = (f"{_pm(k['ok_wait_ms'], '.3f')} / {_pm(s['ok_wait_ms'], '.3f')} / "
                + (f"{t['ok_wait_ms']:.3f}" if t else "-"))
        dw, df = a["ok_wait_diff_ms"], a["failed_diff"]
        diff = (f"{dw[0] * 1e3:+.0f} ± {dw[1] * 1e3:.0f}, " if not math.isnan(dw[0]) else "n/a, ") + \
            (f"{df[0]:+.0f} ± {df[1]:.0f}" if not math.isnan(df[0]) else "n/a")
        km = r["kernel_mb_s"][0]
        traced = f"{t['mb_s']:.2f} ({t['mb_s'] / km - 1:+.1%})" if t and km else "-"
        lines.append(f"| {r['disk']} | {r['workload']} | {r['elevator']} | {share} | {failed} | {wait} | "
                     f"{diff} | {traced} |")
    lines += ["", "(The traced run's failures are scaled to the compared runs' length.)", ""]
    spread = [r for r in have if not math.isnan(r["anticipation"]["kernel"]["ok_wait_p50_ms"][0])]
    if spread:
        lines += [
            "The successful waits' spread: percentiles of a successful wait (ms; from the "
            f"{WAIT_BIN_MS * 1000:.0f}-µs bins both homes count, `antic_success_wait_bins`; per run, mean ± "
            "95% half-width), kernel / sim / traced:",
            "",
            "| disk | workload | elevator | " + " | ".join(f"p{q}" for q in WAIT_PERCENTILES) + " |",
            "|---|---|---|" + "---|" * len(WAIT_PERCENTILES),
        ]
        for r in spread:
            a = r["anticipation"]
            t = a.get("traced") or {}
            cells = [f"{_pm(a['kernel'][f'ok_wait_p{q}_ms'], '.2f')} / {_pm(a['sim'][f'ok_wait_p{q}_ms'], '.2f')} / "
                     + (f"{t[f'ok_wait_p{q}_ms']:.2f}" if not math.isnan(t.get(f"ok_wait_p{q}_ms", math.nan))
                        else "-") for q in WAIT_PERCENTILES]
            lines.append(f"| {r['disk']} | {r['workload']} | {r['elevator']} | " + " | ".join(cells) + " |")
        lines.append("")
    split = [r for r in have if len(r["anticipation"].get("groups", {})) > 1]
    if split:
        lines += [
            "Who had the disk in those rows: MB/s by process group (the kernel's from the emulator's log, each "
            "request's group told by its region; the simulator's `per_class`), kernel / sim:",
            "",
            "| disk | workload | elevator | " + " | ".join(["group", "kernel", "sim", "sim / kernel − 1"]) + " |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in split:
            for name, g in r["anticipation"]["groups"].items():
                k, s = g["kernel"], g["sim"]
                rel = f"{s[0] / k[0] - 1:+.1%}" if k[0] and not math.isnan(k[0]) and not math.isnan(s[0]) else "n/a"
                lines.append(f"| {r['disk']} | {r['workload']} | {r['elevator']} | {name} | {_pm(k, '.3f')} | "
                             f"{_pm(s, '.3f')} | {rel} |")
        lines.append("")
    return lines

