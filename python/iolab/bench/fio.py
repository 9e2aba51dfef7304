"""fio: finding it, running a job file, and reading its JSON.

Reading follows fio 3.x's ``--output-format=json`` (BENCH.md lists the
pitfalls): per job, ``read``/``write``/``trim`` hold ``bw_bytes`` (bytes/s),
``iops``, ``runtime`` (ms), ``io_bytes``, ``total_ios`` and the latencies
``lat_ns`` (total: submission + completion), ``clat_ns`` and ``slat_ns``
with ``percentile`` keyed by strings such as ``"99.000000"``.

- ``bw_bytes`` and ``iops`` are used, never the sampled ``bw_mean`` /
  ``iops_mean`` (with ``group_reporting`` those describe one job only);
- percentiles are taken from ``lat_ns`` when the job asked for them
  (``lat_percentiles=1``, as every built-in job does), otherwise from
  ``clat_ns``; they are absent when no I/O completed (``N`` 0);
- fio 2.x wrote ``clat``/``lat`` in microseconds and ``bw`` in KiB/s;
  those are converted.

:func:`metrics` flattens a result into ``JOB.DIR.STAT`` keys, the unit of
every later table: ``bw`` (bytes/s), ``iops``, ``lat_mean``, ``lat_p50``,
``lat_p95``, ``lat_p99`` (ns).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from iolab.cli.errors import UserError

DIRECTIONS = ("read", "write", "trim")
PERCENTILES = {"lat_p50": 50.0, "lat_p95": 95.0, "lat_p99": 99.0}

# Statistics of a metric key, with the direction that is better.
HIGHER_IS_BETTER = {"bw": True, "iops": True, "lat_mean": False,
                    "lat_p50": False, "lat_p95": False, "lat_p99": False}


class FioError(UserError):
    """fio failed, or wrote something that is not its JSON."""


def find_fio() -> str:
    path = shutil.which("fio")
    if path is None:
        raise UserError(
            "fio is not installed; iolab bench runs its workloads with fio: "
            "install it with `apt-get install fio` (or `make deps` in iolab's checkout)"
        )
    return path


def version(fio: str) -> str:
    out = subprocess.run([fio, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip() or "unknown"


@dataclass(frozen=True)
class IoStats:
    """One direction of one job."""

    io_bytes: int
    bw_bytes: float
    iops: float
    runtime_ms: float
    total_ios: int
    lat_mean_ns: float | None
    lat_stddev_ns: float | None
    lat_n: int
    percentiles: dict[float, float] = field(default_factory=dict)
    lat_source: str = "lat_ns"


@dataclass(frozen=True)
class JobResult:
    name: str
    error: int
    stats: dict[str, IoStats]


@dataclass(frozen=True)
class FioResult:
    version: str
    jobs: list[JobResult]
    disk_util: list[dict]
    messages: tuple[str, ...] = ()  # what fio printed besides its JSON: warnings, the reason it stopped


def _latency(section: dict) -> tuple[dict, float, str]:
    """The latency block to use, the factor to nanoseconds, and its name."""
    lat = section.get("lat_ns")
    if lat is not None:
        if lat.get("percentile"):
            return lat, 1.0, "lat_ns"
        clat = section.get("clat_ns") or {}
        if clat.get("percentile"):
            # Mean and spread of the total latency, percentiles of completion.
            merged = dict(lat)
            merged["percentile"] = clat["percentile"]
            return merged, 1.0, "lat_ns (percentiles from clat_ns)"
        return lat, 1.0, "lat_ns"
    # fio 2.x: microseconds, percentiles under clat.
    lat = dict(section.get("lat") or {})
    clat = section.get("clat") or {}
    if clat.get("percentile"):
        lat["percentile"] = clat["percentile"]
    return lat, 1000.0, "lat (fio 2.x, us)"


def _io_stats(section: dict) -> IoStats:
    lat, scale, source = _latency(section)
    n = int(lat.get("N", section.get("total_ios", 0)) or 0)
    percentiles = {}
    if n > 0:
        for key, value in (lat.get("percentile") or {}).items():
            try:
                percentiles[float(key)] = float(value) * scale
            except (TypeError, ValueError):
                continue
    bw = section.get("bw_bytes")
    if bw is None:  # fio 2.x: KiB/s
        bw = float(section.get("bw", 0)) * 1024
    mean = lat.get("mean")
    stddev = lat.get("stddev")
    return IoStats(
        io_bytes=int(section.get("io_bytes", section.get("io_kbytes", 0) * 1024)),
        bw_bytes=float(bw),
        iops=float(section.get("iops", 0)),
        runtime_ms=float(section.get("runtime", 0)),
        total_ios=int(section.get("total_ios", 0)),
        lat_mean_ns=float(mean) * scale if mean is not None and n > 0 else None,
        lat_stddev_ns=float(stddev) * scale if stddev is not None and n > 0 else None,
        lat_n=n,
        percentiles=percentiles,
        lat_source=source,
    )


def _message_lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


def reason(messages) -> str:
    """fio's own reason in a few of its lines: its ``fio: ...`` errors first
    (not the option help it prints after them, nor "job x dropped")."""
    # dict.fromkeys: fio may say the same line on stderr and in --output (it does
    # for "size too small"); say it once.
    lines = list(dict.fromkeys(m for m in messages if "dropped" not in m))
    errors = [m for m in lines if m.startswith("fio:") or "error" in m.lower()]
    return "; ".join((errors or lines[-3:])[:3])


def parse(text: str, stderr: str = "") -> FioResult:
    """Reads fio's JSON; what fio printed before or after it (notes, warnings,
    errors -- fio writes those into ``--output`` too) and on ``stderr`` are
    kept as its messages."""
    text = text.lstrip()
    start = 0 if text.startswith("{") else text.find("\n{") + 1
    messages = _message_lines(stderr)
    if start == 0 and not text.startswith("{"):
        said = reason(list(dict.fromkeys(messages + _message_lines(text))))
        raise FioError("fio wrote no JSON" + (f": {said}" if said else ""))
    try:
        data, end = json.JSONDecoder().raw_decode(text[start:])
    except ValueError as e:
        raise FioError(f"fio's JSON does not parse: {e}") from None
    if not isinstance(data, dict):
        raise FioError("fio's JSON is not an object")
    messages += _message_lines(text[:start]) + _message_lines(text[start + end:])
    if "jobs" not in data:
        raise FioError("fio's JSON has no 'jobs'")
    jobs = []
    for job in data["jobs"]:
        stats = {d: _io_stats(job[d]) for d in DIRECTIONS if isinstance(job.get(d), dict)}
        jobs.append(JobResult(name=str(job.get("jobname", "")), error=int(job.get("error", 0)), stats=stats))
    return FioResult(
        version=str(data.get("fio version", "")),
        jobs=jobs,
        disk_util=list(data.get("disk_util", [])),
        messages=tuple(dict.fromkeys(messages)),
    )


def metrics(result: FioResult) -> dict[str, float]:
    """``JOB.DIR.STAT`` -> value for each job and direction that did I/O.

    Jobs sharing a name (``numjobs`` without ``group_reporting``) are added up
    for ``bw`` and ``iops``; their latency mean is weighted by the number of
    samples, and of their percentiles the largest is kept (percentiles of
    separate jobs cannot be combined exactly). ``all.DIR.bw`` and
    ``all.DIR.iops`` sum over every job.
    """
    out: dict[str, float] = {}
    weights: dict[str, float] = {}
    for job in result.jobs:
        for direction, st in job.stats.items():
            if st.io_bytes <= 0:
                continue
            for prefix in (f"{job.name}.{direction}", f"all.{direction}"):
                out[f"{prefix}.bw"] = out.get(f"{prefix}.bw", 0.0) + st.bw_bytes
                out[f"{prefix}.iops"] = out.get(f"{prefix}.iops", 0.0) + st.iops
            prefix = f"{job.name}.{direction}"
            if st.lat_mean_ns is not None:
                w = weights.get(prefix, 0.0)
                old = out.get(f"{prefix}.lat_mean", 0.0)
                out[f"{prefix}.lat_mean"] = (old * w + st.lat_mean_ns * st.lat_n) / (w + st.lat_n)
                weights[prefix] = w + st.lat_n
            for key, pct in PERCENTILES.items():
                value = _percentile(st.percentiles, pct)
                if value is not None:
                    out[f"{prefix}.{key}"] = max(out.get(f"{prefix}.{key}", 0.0), value)
    return out


def _percentile(table: dict[float, float], pct: float) -> float | None:
    for key, value in table.items():
        if abs(key - pct) < 1e-9:
            return value
    return None


def split_key(key: str) -> tuple[str, str, str]:
    """``JOB.DIR.STAT`` -> its three parts (a job name may contain dots)."""
    job, direction, stat = key.rsplit(".", 2)
    return job, direction, stat


def run(fio: str, jobfile: Path, env: dict[str, str], output: Path, timeout: float,
        readonly: bool = False, text: str | None = None) -> FioResult:
    """Runs ``jobfile`` with ``env`` added to the environment; JSON goes to ``output``.

    ``readonly`` adds fio's ``--readonly``: fio then refuses every write and
    trim. ``text``, when given, is the job itself, handed to fio on its
    standard input (the text iolab checked, not a file that may have changed
    since). Variables named ``IOLAB_*`` reach fio only from ``env``.

    If anything interrupts the wait (Ctrl-C, a signal turned into an
    exception, a timeout), fio is stopped -- SIGINT first, which makes it
    finish cleanly, then SIGKILL -- before the exception goes on.
    """
    cmd = [fio, "--output-format=json", f"--output={output}", "--eta=never"]
    if readonly:
        cmd.append("--readonly")
    cmd.append("-" if text is not None else str(jobfile))
    base = {k: v for k, v in os.environ.items() if not k.startswith("IOLAB_")}
    proc = subprocess.Popen(
        cmd, env={**base, **env}, stdin=subprocess.PIPE if text is not None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        _, stderr = proc.communicate(input=text, timeout=timeout)
    except subprocess.TimeoutExpired:
        stop(proc)
        raise FioError(f"fio did not finish {jobfile.name} within {timeout:.0f} s") from None
    except BaseException:
        stop(proc)
        raise
    try:
        out_text = output.read_text(errors="replace")
    except OSError:
        out_text = ""
    if proc.returncode != 0:
        try:
            said = list(parse(out_text, stderr or "").messages)
        except FioError:
            said = _message_lines(stderr or "") + _message_lines(out_text)
        detail = reason(said) or f"exit status {proc.returncode}"
        raise FioError(f"fio failed on {jobfile.name}: {detail}")
    result = parse(out_text, stderr or "")
    failed = [j for j in result.jobs if j.error]
    if failed:
        said = f": {reason(result.messages)}" if result.messages else ""
        raise FioError(f"fio job {failed[0].name} of {jobfile.name} ended with error {failed[0].error} "
                       f"({os.strerror(failed[0].error)}){said}")
    return result


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
