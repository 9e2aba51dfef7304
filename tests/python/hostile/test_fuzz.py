"""Generated hostile inputs (hypothesis): specs of every workload kind with
fields set to hostile values, traces of every format with hostile fields,
and `iolab compare` with hostile options. Every case must be refused with
one clear line or run; none may crash, abort, hang or print a traceback.

Specs and traces run in a worker process (`worker.py`, the native core in
process, fast); `compare` runs as the command. The runs are derandomized
(the same cases every time, so CI is repeatable); set IOLAB_FUZZ_EXAMPLES
to explore more.
"""

from __future__ import annotations

import copy
import json
import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .harness import OUTCOMES, ROOT, TALLY, check_answer, check_clean, run_cli, to_toml

EXAMPLES = int(os.environ.get("IOLAB_FUZZ_EXAMPLES", "0"))


def fuzz_settings(n: int):
    return settings(max_examples=EXAMPLES or n, deadline=None, database=None, derandomize=not EXAMPLES,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


NUMBERS = [0, 1, -1, 2, 3, 7, 64, 4096, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**53, 2**62, 2**63 - 1, -2**63,
           0.0, -0.0, 0.5, 1e-7, 1e-300, 1e300, -1e300, 2.5, 4.7, float("nan"), float("inf"), float("-inf")]
OTHERS = ["", "x", "random", "sequential", "strided", "fixed", "mix", "direct", "closed", "wrap", "scale", "one",
          "\n", "é" * 50, True, False, [], [1, 1], [0.5, 1e300], {}, {"dist": "constant", "ms": 1e300},
          {"dist": "samples", "ms": []}, {"dist": "uniform", "min_ms": 2, "max_ms": 1}, {"dist": "exponential"}]
HOSTILE = st.one_of(st.sampled_from(NUMBERS + OTHERS), st.integers(-2**63, 2**63 - 1),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                    # Plausible values too, so that mutated specs also run.
                    st.integers(0, 100), st.floats(0, 100))

RUN = {"seed": 1, "repetitions": 1, "max_requests": 3000}
DISKS = [{"preset": "fixed", "fixed_ms": 1.0}, {"preset": "hp97560"}, {"preset": "modern7200", "queue_depth": 4,
                                                                     "device_order": "sptf"}]
BASES = {
    "processes": {"workload": {"kind": "processes", "placement": "spread", "group": [
        {"count": 3, "pattern": "strided", "op": "mix", "request_kb": 8, "file_mb": 4, "stride": 3,
         "think": {"dist": "exponential", "mean_ms": 1}, "start_ms": 0, "stop_ms": 5000, "passes": 1,
         "sync": False, "max_outstanding": 4, "read_fraction": 0.5}]}},
    "iozone": {"workload": {"kind": "iozone", "processes": 3, "mode": "random", "record_kb": 4, "file_kb": 64,
                            "direct": False, "max_outstanding": 4, "think": {"dist": "constant", "ms": 0.5},
                            "placement": "packed"}},
    "postmark": {"workload": {"kind": "postmark", "processes": 2, "files": 40, "size_min_bytes": 500,
                              "size_max_bytes": 9000, "transactions": 60, "subdirectories": 3,
                              "read_block_bytes": 512, "write_block_bytes": 512, "read_bias": 5, "create_bias": 5,
                              "io": "direct", "sync_metadata": True, "max_outstanding": 8, "inode_cache": 16,
                              "pacing": {"rate_per_s": 200, "burst_every_s": 1, "burst_peak_per_s": 500,
                                         "burst_cool_s": 0.2},
                              "fs": {"group_mb": 64, "inodes_per_group": 2048, "max_request_kb": 64}}},
    "web": {"workload": {"kind": "web", "workers": 3, "files": 300, "directories": 10, "hot_files": 4,
                         "zipf_exponent": 0.8, "duration_s": 3, "backlog": 64, "inode_cache": 32,
                         "size": {"dist": "uniform", "min_bytes": 100, "max_bytes": 20000},
                         "cpu": {"dist": "exponential", "mean_ms": 0.5},
                         "arrivals": {"rate_per_s": 50, "burst_times_s": [0.5, 1.5], "burst_peak_per_s": 400,
                                      "burst_cool_s": 0.3}}},
    "trace": {"workload": {"kind": "trace", "file": "data/traces/sample.disksim.ascii", "format": "disksim",
                           "mode": "closed", "speed": 2, "fit": "scale", "streams": "each", "max_records": 50}},
}


def _paths(d, prefix=()):
    """Every field path of a spec dict (into tables and list entries)."""
    for k, v in d.items():
        yield prefix + (k,)
        if isinstance(v, dict):
            yield from _paths(v, prefix + (k,))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for i, x in enumerate(v):
                yield from _paths(x, prefix + (k, i))


def _set(d, path, value):
    for k in path[:-1]:
        d = d[k]
    if value is _DELETE:
        if isinstance(d, dict):
            d.pop(path[-1], None)
    else:
        d[path[-1]] = value


_DELETE = object()


@st.composite
def hostile_specs(draw):
    kind = draw(st.sampled_from(sorted(BASES)))
    sched = draw(st.sampled_from([{"name": "as", "antic_expire": 6}, {"name": "cfq", "quantum": 4},
                                  {"name": "wpcas", "gamma": 0.5}, {"name": "deadline", "fifo_batch": 16},
                                  {"name": "as95", "percentile": 95}, {"name": "noop"}]))
    spec = {"disk": copy.deepcopy(draw(st.sampled_from(DISKS))), "scheduler": [sched],
            **copy.deepcopy(BASES[kind]), "run": dict(RUN)}
    paths = sorted(set(_paths(spec)), key=str)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths))
        value = draw(st.one_of(HOSTILE, st.just(_DELETE)))
        try:
            _set(spec, path, value)
        except (KeyError, IndexError, TypeError):
            pass  # an earlier mutation replaced a table above this path
    fmt = draw(st.sampled_from(["toml", "toml", "toml", "json"]))
    return kind, fmt, spec


@fuzz_settings(250)
@given(case=hostile_specs())
def test_hostile_specs(worker, case):
    kind, fmt, spec = case
    text = to_toml(spec) if fmt == "toml" else json.dumps(spec)
    c = {"text": text, "format": fmt, "file": str(ROOT / f"fuzz.{fmt}"), "overrides": [], "jobs": 1}
    TALLY[f"specs, generated: {kind} workload ({'TOML' if fmt == 'toml' else 'JSON'})"] += 1
    answer = worker.run(c)
    OUTCOMES[answer["status"]] += 1
    check_answer(answer, c)


FIELD = st.one_of(st.sampled_from(["0", "1", "-1", "8", "1.5", "nan", "inf", "-0", "1e400", "0x10", "",
                                   "18446744073709551615", "18446744073709551616", "4294967295", "4294967296",
                                   "9223372036854775807", "1e-300", "1e300", "R", "W", "r", "Write", "X"]),
                  st.integers(-2**64, 2**65).map(str), st.floats(allow_nan=True).map(repr),
                  st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\n\r"),
                          max_size=8))
LAYOUTS = {
    # format: (separator, field makers); each line's fields in the format's order.
    "blkparse": (" ", ["8,0", "0", "1", None, None, "Q", st.sampled_from(["R", "W", "WS", "RA", "N", "D"]),
                       None, "+", None, "[p]"]),
    "msr": (",", [None, "host", None, st.sampled_from(["Read", "Write", "X"]), None, None, "10"]),
    "spc": (",", [None, None, None, st.sampled_from(["r", "w", "R"]), None]),
    "fiu": (" ", [None, None, "proc", None, None, st.sampled_from(["R", "W"]), "8", "0", "md5"]),
    "disksim": (" ", [None, None, None, None, None]),
}
GOOD = {"blkparse": "8,0 0 1 0.5 7 Q R 1000 + 8 [p]", "msr": "128166372000000000,h,1,Read,4096,4096,1",
        "spc": "0,1000,4096,r,0.5", "fiu": "1000 5 p 1000 8 R 8 0 x", "disksim": "0.5 0 1000 8 1"}


@st.composite
def hostile_traces(draw):
    fmt = draw(st.sampled_from(sorted(LAYOUTS)))
    sep, makers = LAYOUTS[fmt]
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            lines.append(GOOD[fmt])
            continue
        fields = [draw(FIELD) if m is None else m if isinstance(m, str) else draw(m) for m in makers]
        if draw(st.booleans()):
            fields = fields[: draw(st.integers(0, len(fields)))]
        lines.append(sep.join(fields))
    workload = {"kind": "trace", "file": "t.txt", "format": fmt,
                "mode": draw(st.sampled_from(["open", "closed"])),
                "fit": draw(st.sampled_from(["error", "wrap", "scale"])),
                "streams": draw(st.sampled_from(["each", "one"])),
                "speed": draw(st.sampled_from([1.0, 1e-3, 1e3, 1e-6, 1e6]))}
    return fmt, "\n".join(lines) + "\n", workload


@fuzz_settings(150)
@given(case=hostile_traces())
def test_hostile_traces(worker, tmp_path, case):
    fmt, text, workload = case
    (tmp_path / "t.txt").write_text(text)
    spec = {"disk": {"preset": "hp97560"}, "scheduler": [{"name": "noop"}], "workload": workload, "run": dict(RUN)}
    c = {"text": to_toml(spec), "format": "toml", "file": str(tmp_path / "spec.toml"), "overrides": [], "jobs": 1}
    TALLY[f"traces, generated: {fmt}"] += 1
    answer = worker.run(c)
    OUTCOMES[answer["status"]] += 1
    check_answer(answer, {**c, "trace": text})
    m = re.search(r"t\.txt:(\d+):", answer.get("message", ""))
    if m:
        # A line error names a line of the file.
        assert 1 <= int(m.group(1)) <= text.count("\n"), answer


OPTION_VALUES = st.sampled_from(["0", "-5", "1", "3", "1e9", "1000000000", "nan", "inf", "-inf", "0.5", "x", "",
                                 "1e300", "99999999999999999999"])


@st.composite
def compare_args(draw):
    args = ["compare", "-q", "--max-requests", "2000"]
    for opt in draw(st.lists(st.sampled_from(["--seeds", "--duration", "--max-requests", "-j"]), max_size=3,
                             unique=True)):
        args += [opt, draw(OPTION_VALUES)]
    names = st.sampled_from(["noop", "none", "fifo", "deadline", "as", "anticipatory", "cfq", "as95", "95%",
                             "wpcas", "mq-deadline", "bfq", "kyber", "nosuch", "", "AS", " noop "])
    args += ["--schedulers", ",".join(draw(st.lists(names, min_size=0, max_size=3)))]
    args += ["--disk", draw(st.sampled_from(["hp97560", "fixed", "modern7200", "floppy", ""]))]
    args += ["--workload", draw(st.sampled_from(["iozone", "iozone-random", "deceptive-idleness", "postmark",
                                                 "web", "nosuch"]))]
    for _ in range(draw(st.integers(0, 2))):
        key = draw(st.sampled_from(["workload.processes", "workload.file_kb", "run.seeds", "disk.queue_depth",
                                    "as.antic_expire", "cfq.quantum", "workload.think", "run.duration_s"]))
        args += ["--set", f"{key}={draw(OPTION_VALUES)}"]
    return args


@fuzz_settings(40)
@given(args=compare_args())
def test_hostile_compare_options(args):
    TALLY["compare (options), generated"] += 1
    proc = run_cli(args, timeout=120)
    check_clean(proc, " ".join(args))
