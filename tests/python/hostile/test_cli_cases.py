"""Hand-written hostile inputs for every simulator command (`run`,
`compare`, `presets`, `sweep`, `paper`) and input format (TOML and JSON
specs, `--set`, `--grid`, options, the five trace formats), each with the
answer it must get. Most are the cases of issue 12; each must be refused
with one line naming the file, line or field and the limit, or give the
right result. None may crash, hang or pass as nonsense.
"""

from __future__ import annotations

import copy
import json
import os

import pytest

from .harness import TALLY, check_clean, run_cli, to_toml

BASE = {
    "name": "hostile",
    "disk": {"preset": "fixed", "fixed_ms": 2.0},
    "scheduler": [{"name": "noop"}],
    "workload": {"kind": "processes", "group": [{"count": 2, "file_mb": 1, "request_kb": 8, "passes": 1}]},
    "run": {"seed": 1, "repetitions": 2},
}
WEB = {**BASE, "workload": {"kind": "web", "files": 200, "directories": 10, "duration_s": 2}}
POSTMARK = {**BASE, "workload": {"kind": "postmark", "files": 50, "transactions": 50}}
IOZONE = {**BASE, "workload": {"kind": "iozone", "processes": 2, "file_kb": 64}}


def spec(base: dict = BASE, **edits) -> dict:
    """`base` with dotted-path edits: spec(run__seeds=[5]) sets run.seeds;
    a value of `...` deletes the field."""
    d = copy.deepcopy(base)
    for path, v in edits.items():
        keys = path.split("__")
        cur = d
        for k in keys[:-1]:
            cur = cur[int(k)] if k.isdigit() else cur.setdefault(k, {})
        if v is ...:
            cur.pop(keys[-1], None)
        elif keys[-1].isdigit():
            cur[int(keys[-1])] = v
        else:
            cur[keys[-1]] = v
    return d


def trace_spec(fmt: str, **workload) -> dict:
    return {**BASE, "workload": {"kind": "trace", "file": "trace.txt", "format": fmt, **workload}}


# (id, spec dict or raw text or None, trace text, extra args, exit code, substrings of stderr)
RUN_CASES = [
    ("repetitions-1e9", spec(run__repetitions=1_000_000_000), None, [], 2, ["run.repetitions", "10000"]),
    ("seeds-1e5", spec(run__seeds=list(range(10_001)), run__seed=..., run__repetitions=...), None, [], 2,
     ["run.seeds", "10000"]),
    ("processes-4e9", spec(IOZONE, workload__processes=4_000_000_000), None, [], 2, ["workload.processes", "65536"]),
    ("count-1e8", spec(workload__group__0__count=100_000_000), None, [], 2, ["workload.group", "65536"]),
    ("shared-buffered", spec(workload__placement="shared", workload__group__0__direct=False), None, [], 2,
     ["workload.placement", "direct = true"]),
    ("shared-larger-than-disk", spec(workload__placement="shared", workload__group__0__file_mb=10_000_000), None, [],
     2, ["shared file", "does not fit"]),
    ("shared-iozone", spec(IOZONE, workload__placement="shared"), None, [], 2, ["workload.placement", "process groups"]),
    ("shared-direct", spec(workload__placement="shared"), None, [], 0, []),
    ("web-workers-1e6", spec(WEB, workload__workers=1_000_000), None, [], 2, ["workload.workers", "65536"]),
    ("postmark-processes-1e6", spec(POSTMARK, workload__processes=1_000_000), None, [], 2, ["65536"]),
    ("fixed-ms-1e-7", spec(disk__fixed_ms=1e-7), None, [], 2, ["disk.fixed_ms", "rounds to 0 ns", "1 ns"]),
    ("fixed-ms-1e300", spec(disk__fixed_ms=1e300), None, [], 2, ["disk.fixed_ms", "horizon"]),
    ("fixed-ms-nan", spec(disk__fixed_ms=float("nan")), None, [], 2, ["disk.fixed_ms", "finite"]),
    ("duration-1e300", spec(run__duration_s=1e300), None, [], 2, ["run.duration_s", "1e300", "horizon", "1e9 s"]),
    ("duration-nan", spec(run__duration_s=float("nan")), None, [], 2, [":", "run.duration_s", "NaN is not a finite"]),
    ("duration-inf", spec(run__duration_s=float("inf")), None, [], 2, ["run.duration_s", "inf"]),
    ("duration-negative", spec(run__duration_s=-1.0), None, [], 2, ["run.duration_s", "positive"]),
    ("duration-string", spec(run__duration_s="10"), None, [], 2, ["run.duration_s", "invalid type"]),
    ("start-after-stop", spec(workload__group__0__start_ms=500, workload__group__0__stop_ms=100), None, [], 2,
     ["workload.group[0].stop_ms", "not after start_ms"]),
    ("stop-1e300", spec(workload__group__0__stop_ms=1e300), None, [], 2, ["stop_ms", "horizon"]),
    ("stride-0", spec(workload__group__0__pattern="strided", workload__group__0__stride=0), None, [], 2,
     ["workload.group[0].stride", "at least 1"]),
    ("stride-longer-than-file", spec(workload__group__0__pattern="strided", workload__group__0__stride=10**9),
     None, [], 2, ["stride", "longer than the file"]),
    ("label-empty", spec(scheduler=[{"name": "noop", "label": ""}]), None, [], 2,
     ["scheduler[0].label", "must not be empty"]),
    ("label-newline", spec(scheduler=[{"name": "noop", "label": "a\nb"}]), None, [], 2, ["label", "one line"]),
    ("label-number", spec(scheduler=[{"name": "noop", "label": 5}]), None, [], 2, ["label", "expected a string"]),
    ("cfq-quantum-4.7", spec(scheduler=[{"name": "cfq", "quantum": 4.7}]), None, [], 2,
     ["scheduler[0].quantum", "not a whole number"]),
    ("deadline-fifo-batch-2.5", spec(scheduler=[{"name": "deadline", "fifo_batch": 2.5}]), None, [], 2,
     ["fifo_batch", "whole number"]),
    ("as-antic-expire-1e300", spec(scheduler=[{"name": "as", "antic_expire": 1e300}]), None, [], 2,
     ["antic_expire", "1e300", "outside"]),
    ("tunable-string", spec(scheduler=[{"name": "as", "antic_expire": "six"}]), None, [], 2,
     ["scheduler[0].antic_expire", "a tunable takes a number"]),
    ("tunable-unknown", spec(scheduler=[{"name": "as", "quantum": 4}]), None, [], 2, ["no tunable 'quantum'"]),
    ("tunable-bool", spec(scheduler=[{"name": "deadline", "front_merges": False}]), None, [], 0, []),
    ("scheduler-name-number", spec(scheduler=[{"name": 5}]), None, [], 2, ["scheduler[0].name", "scheduler name"]),
    ("scheduler-missing-name", spec(scheduler=[{"label": "x"}]), None, [], 2, ["scheduler[0]", "missing field"]),
    ("scheduler-unknown", spec(scheduler=[{"name": "nosuch"}]), None, [], 2, ["unknown scheduler 'nosuch'"]),
    ("scheduler-none", spec(scheduler=[]), None, [], 2, ["scheduler"]),
    ("scheduler-not-table", spec(scheduler=[5]), None, [], 2, ["scheduler[0]", "expected a table"]),
    ("seeds-repeated", spec(run__seeds=[5, 5, 5], run__seed=..., run__repetitions=...), None, [], 2,
     ["run.seeds", "seed 5 appears twice"]),
    ("seeds-and-repetitions", spec(run__seeds=[5, 6]), None, [], 2, ["run.", "not both"]),
    ("seeds-empty", spec(run__seeds=[], run__seed=..., run__repetitions=...), None, [], 2, ["run.repetitions"]),
    ("seed-overflow", json.dumps(spec(run__seed=2**64 - 1)), None, ["json"], 2, ["run.seed", "64 bits"]),
    ("seed-negative", spec(run__seed=-1), None, [], 2, ["run.seed", "invalid value"]),
    ("seed-beyond-i64", spec(run__seed=2**64), None, [], 2, ["line"]),
    ("alias-duplicates", spec(scheduler=[{"name": "noop"}, {"name": "fifo"}]), None, [], 2,
     ["scheduler[1]", "names of one scheduler"]),
    ("same-scheduler-twice", spec(scheduler=[{"name": "as"}, {"name": "as"}]), None, [], 2, ["appears twice", "label"]),
    ("label-equals-other-name", spec(scheduler=[{"name": "noop"}, {"name": "as", "label": "noop"}]), None, [], 2,
     ["scheduler[1]", "noop"]),
    ("count-float", spec(workload__group__0__count=2.5), None, [], 2,
     ["workload.group[0].count", "floating point", "whole number"]),
    ("count-string", spec(workload__group__0__count="two"), None, [], 2, ["workload.group[0].count", "string"]),
    ("count-negative", spec(workload__group__0__count=-1), None, [], 2, ["workload.group[0].count"]),
    ("count-zero", spec(workload__group__0__count=0), None, [], 2, ["workload.group[0].count", "at least 1"]),
    ("unknown-field", spec(workload__group__0__colour=1), None, [], 2, ["unknown field `colour`"]),
    ("unknown-kind", spec(workload={"kind": "nosuch"}), None, [], 2, ["workload", "unknown variant"]),
    ("missing-kind", spec(workload={"processes": 3}), None, [], 2, ["workload", "missing field `kind`"]),
    ("kind-number", spec(workload={"kind": 3}), None, [], 2, ["workload.kind"]),
    ("workload-number", spec(workload=5), None, [], 2, ["workload", "expected a table"]),
    ("no-workload", spec(workload=...), None, [], 2, ["workload"]),
    ("group-empty", spec(workload={"kind": "processes", "group": []}), None, [], 2, ["workload.group"]),
    ("never-ends", spec(workload__group__0__passes=0), None, [], 2, ["never ends"]),
    ("read-fraction-2", spec(workload__group__0__op="mix", workload__group__0__read_fraction=2.0), None, [], 2,
     ["read_fraction"]),
    ("request-beyond-file", spec(workload__group__0__request_kb=1e9), None, [], 2, ["request_kb"]),
    ("request-nan", spec(workload__group__0__request_kb=float("nan")), None, [], 2, ["request_kb", "finite"]),
    ("file-bigger-than-disk", spec(workload__group__0__file_mb=1e12), None, [], 2, ["workload"]),
    ("think-exponential-0", spec(workload__group__0__think={"dist": "exponential", "mean_ms": 0}), None, [], 2,
     ["think.mean_ms"]),
    ("think-samples-empty", spec(workload__group__0__think={"dist": "samples", "ms": []}), None, [], 2, ["think.ms"]),
    ("think-1e300", spec(workload__group__0__think={"dist": "constant", "ms": 1e300}), None, [], 2,
     ["think.ms", "horizon"]),
    ("think-uniform-reversed", spec(workload__group__0__think={"dist": "uniform", "min_ms": 3, "max_ms": 1}),
     None, [], 2, ["think.max_ms"]),
    ("think-unknown-dist", spec(workload__group__0__think={"dist": "gauss"}), None, [], 2, ["think"]),
    ("queue-depth-4e9", spec(disk__queue_depth=4_000_000_000), None, [], 2, ["disk.queue_depth", "65536"]),
    ("queue-depth-0", spec(disk__queue_depth=0), None, [], 2, ["disk.queue_depth", "at least 1"]),
    ("device-order-unknown", spec(disk__device_order="elevator"), None, [], 2, ["disk.device_order"]),
    ("preset-unknown", spec(disk__preset="floppy"), None, [], 2, ["disk.preset", "unknown disk preset 'floppy'"]),
    ("diskspecs-empty", spec(disk={"diskspecs": ""}), None, [], 2, ["disk.diskspecs", "empty"]),
    ("diskspecs-directory", spec(disk={"diskspecs": "."}), None, [], 2, ["disk.diskspecs", "not a regular file"]),
    ("max-requests-0", spec(run__max_requests=0), None, [], 2, ["run.max_requests", "at least 1"]),
    ("max-requests-huge", spec(run__max_requests=2**62), None, [], 0, []),
    ("iozone-record-beyond-file", spec(IOZONE, workload__record_kb=128), None, [], 2, ["record_kb"]),
    ("iozone-record-1e300", spec(IOZONE, workload__record_kb=1e300), None, [], 2, ["record_kb"]),
    ("iozone-files-beyond-disk", spec(IOZONE, workload__file_kb=1e15), None, [], 2, ["workload"]),
    ("web-rate-1e12", spec(WEB, workload__arrivals={"rate_per_s": 1e12}), None, [], 2,
     ["workload.arrivals.rate_per_s", "1e12", "1e6"]),
    ("web-burst-every-tiny", spec(WEB, workload__arrivals={"burst_every_s": 1e-300}), None, [], 2,
     ["burst_every_s", "at least 0.001"]),
    ("web-burst-peak-1e12", spec(WEB, workload__arrivals={"burst_peak_per_s": 1e12}), None, [], 2, ["burst_peak"]),
    ("web-burst-cool-0", spec(WEB, workload__arrivals={"burst_cool_s": 0}), None, [], 2, ["burst_cool_s"]),
    ("web-burst-times-unordered", spec(WEB, workload__arrivals={"burst_times_s": [5, 1]}), None, [], 2,
     ["burst_times_s", "increasing"]),
    ("web-burst-times-1e300", spec(WEB, workload__arrivals={"burst_times_s": [1e300]}), None, [], 2, ["horizon"]),
    ("web-hot-files-beyond", spec(WEB, workload__hot_files=1000), None, [], 2,
     ["workload.hot_files", "do not fit one directory"]),
    ("web-files-4e9", spec(WEB, workload__files=4_000_000_000), None, [], 2, ["workload.files", "10000000"]),
    ("web-directories-beyond-files", spec(WEB, workload__directories=1000), None, [], 2, ["directories"]),
    ("web-duration-1e300", spec(WEB, workload__duration_s=1e300), None, [], 2, ["workload.duration_s", "horizon"]),
    ("web-zipf-nan", spec(WEB, workload__zipf_exponent=float("nan")), None, [], 2, ["zipf_exponent"]),
    ("web-backlog-4e9", spec(WEB, workload__backlog=4_294_967_295, run__max_requests=2000), None, [], 0, []),
    ("web-inode-cache-4e9", spec(WEB, workload__inode_cache=4_294_967_295, run__max_requests=2000), None, [], 0, []),
    ("postmark-files-4e9", spec(POSTMARK, workload__files=4_000_000_000), None, [], 2, ["workload.files"]),
    ("postmark-inode-cache-4e9", spec(POSTMARK, workload__inode_cache=4_294_967_295), None, [], 0, []),
    ("postmark-bias-11", spec(POSTMARK, workload__read_bias=11), None, [], 2, ["workload.read_bias"]),
    ("postmark-size-reversed", spec(POSTMARK, workload__size_min_bytes=10, workload__size_max_bytes=5), None, [], 2,
     ["size_max_bytes"]),
    ("postmark-group-mb-0", spec(POSTMARK, workload__fs={"group_mb": 0}), None, [], 2, ["workload.fs.group_mb"]),
    ("postmark-max-request-4e9", spec(POSTMARK, workload__fs={"max_request_kb": 4_294_967_295}), None, [], 2,
     ["workload.fs.max_request_kb"]),
    ("postmark-pacing-rate-1e12", spec(POSTMARK, workload__pacing={"rate_per_s": 1e12}), None, [], 2,
     ["workload.pacing.rate_per_s"]),
    # Traces: the 2^64 sector wrap in every reader, and other hostile lines.
    ("disksim-sector-wrap", trace_spec("disksim"), "1.0 0 18446744073709551615 8 1\n", [], 2,
     ["trace.txt:1", "64-bit sector"]),
    ("blkparse-sector-wrap", trace_spec("blkparse"), "8,0 0 1 1.0 5 Q R 18446744073709551615 + 8 [x]\n", [], 2,
     ["trace.txt:1", "64-bit sector"]),
    ("spc-sector-wrap", trace_spec("spc"), "0,18446744073709551615,4096,R,1.0\n", [], 2, ["trace.txt:1", "64-bit"]),
    ("fiu-sector-wrap", trace_spec("fiu"), "1000 5 p 18446744073709551615 8 R 8 0 x\n", [], 2,
     ["trace.txt:1", "64-bit"]),
    ("msr-offset-wrap", trace_spec("msr"), "128166372000000000,h,1,Read,18446744073709551615,4096,1\n", [], 2,
     ["trace.txt:1", "2^64"]),
    ("msr-filetime-overflow", trace_spec("msr"), "18446744073709551615,h,1,Read,0,4096,1\n", [], 2,
     ["trace.txt:1", "Timestamp"]),
    ("disksim-time-1e300", trace_spec("disksim"), "1e300 0 8 8 1\n", [], 2, ["trace.txt:1", "too large"]),
    ("disksim-time-span", trace_spec("disksim"), "0 0 8 8 1\n2e12 0 8 8 1\n", [], 2, ["trace.txt:2", "horizon"]),
    ("disksim-blocks-4e9", trace_spec("disksim"), "0 0 8 4000000000 1\n", [], 2, ["trace.txt:1", "larger than the disk"]),
    ("disksim-beyond-disk", trace_spec("disksim"), "0 0 4000000000000 8 1\n", [], 2, ["trace.txt:1", "fit"]),
    ("disksim-beyond-disk-wrap", trace_spec("disksim", fit="wrap"), "0 0 4000000000000 8 1\n", [], 0, []),
    ("spc-negative-size", trace_spec("spc"), "0,100,-1,R,1.0\n", [], 2, ["trace.txt:1", "Size"]),
    ("fiu-bad-op", trace_spec("fiu"), "1000 5 p 100 8 X 8 0 x\n", [], 2, ["trace.txt:1", "op"]),
    ("blkparse-no-plus", trace_spec("blkparse"), "8,0 0 1 1.0 5 Q R 100 - 8 [x]\n", [], 2, ["trace.txt:1"]),
    ("trace-empty", trace_spec("disksim"), "", [], 2, ["no requests"]),
    ("trace-not-utf8", trace_spec("disksim"), b"1.0 0 8 8 1\n\xff\xfe\n", [], 2, ["trace.txt:2", "UTF-8"]),
    ("trace-missing", trace_spec("disksim", file="nosuch.txt"), None, [], 2, ["nosuch.txt"]),
    ("trace-directory", trace_spec("disksim", file="."), None, [], 2, ["not a regular file"]),
    ("trace-speed-1e-300", trace_spec("disksim", speed=1e-300), "1.0 0 8 8 1\n", [], 2,
     ["workload.speed", "1e-300", "1e-6"]),
    ("trace-speed-1e300", trace_spec("disksim", speed=1e300), "1.0 0 8 8 1\n", [], 2, ["workload.speed"]),
    ("trace-speed-slow-horizon", trace_spec("disksim", speed=1e-6), "0 0 8 8 1\n2e6 0 8 8 1\n", [], 2, ["horizon"]),
    ("trace-max-records-0", trace_spec("disksim", max_records=0), "1.0 0 8 8 1\n", [], 2, ["max_records"]),
    ("trace-unknown-format", trace_spec("pcap"), "x\n", [], 2, ["workload.format", "unknown variant"]),
    # Spec text itself.
    ("toml-syntax", "[run\n", None, [], 2, ["line 1, column"]),
    ("toml-date", 'name = 1979-05-27\n' + to_toml(BASE).split("\n", 1)[1], None, [], 2, ["name", "a date"]),
    ("toml-deep-nesting", "a = " + "[" * 5000 + "]" * 5000 + "\n", None, [], 2, ["line 1", "recursion limit"]),
    ("spec-not-a-table-json", "[1, 2]", None, ["json"], 2, ["a spec is a table"]),
    ("json-syntax", '{"name": ', None, ["json"], 2, ["line 1"]),
    ("json-number-out-of-range", json.dumps(spec(run__duration_s=1)).replace('"duration_s": 1', '"duration_s": 1e400'),
     None, ["json"], 2, ["line 1"]),
    ("json-deep-nesting", '{"a": ' + "[" * 5000 + "]" * 5000 + "}", None, ["json"], 2, ["recursion"]),
    ("json-good", json.dumps(BASE), None, ["json"], 0, []),
    # --set
    ("set-no-equals", BASE, None, ["--set", "run.seed"], 2, ["KEY=VALUE"]),
    ("set-empty-part", BASE, None, ["--set", "run..seed=1"], 2, ["dotted KEY"]),
    ("set-index-out-of-range", BASE, None, ["--set", "workload.group[5].count=1"], 2, ["has 1 entries"]),
    ("set-into-scalar", BASE, None, ["--set", "name.x=1"], 2, ["not a table"]),
    ("set-index", BASE, None, ["--set", "workload.group[0].count=3", "--set", "run.repetitions=1"], 0, []),
    ("set-nan", BASE, None, ["--set", "run.duration_s=nan"], 2, ["--set run.duration_s=nan", "invalid type"]),
    ("set-seeds-replaces-repetitions", BASE, None, ["--set", "run.seeds=[7]"], 0, []),
    ("set-processes-4e9", IOZONE, None, ["--set", "workload.processes=4000000000"], 2,
     ["--set workload.processes=4000000000", "65536"]),
    ("set-jobs-0", BASE, None, ["-j", "0"], 2, ["-j/--jobs", "at least 1"]),
    ("set-jobs-negative", BASE, None, ["-j", "-5"], 2, ["at least 1"]),
    ("set-jobs-text", BASE, None, ["-j", "many"], 2, ["whole number"]),
    # A buffered writer with no think time and no copy time: every call is
    # served by the cache at one instant, without end (it hung).
    ("buffered-calls-take-no-time",
     spec(workload__group__0__direct=False, workload__group__0__op="write", workload__group__0__passes=...,
          workload__group__0__think={"dist": "constant", "ms": 0}, vm={"copy_us_per_page": 0},
          run__duration_s=1, run__repetitions=1),
     None, [], 2, ["vm.copy_us_per_page", "without time passing", "think time"]),
]


def _write_case(tmp_path, content, trace, fmt_args):
    suffix = ".json" if "json" in fmt_args else ".toml"
    path = tmp_path / f"spec{suffix}"
    if isinstance(content, dict):
        path.write_text(json.dumps(content) if suffix == ".json" else to_toml(content))
    else:
        path.write_text(content)
    if trace is not None:
        t = tmp_path / "trace.txt"
        t.write_bytes(trace if isinstance(trace, bytes) else trace.encode())
    return path


@pytest.mark.parametrize("case", RUN_CASES, ids=[c[0] for c in RUN_CASES])
def test_run(tmp_path, case):
    name, content, trace, extra, code, needles = case
    path = _write_case(tmp_path, content, trace, extra)
    args = ["run", str(path), "-q"] + [a for a in extra if a != "json"]
    TALLY["run (TOML/JSON spec, --set, traces)"] += 1
    proc = run_cli(args, cwd=tmp_path)
    check_clean(proc, name)
    assert proc.returncode == code, f"{name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    for n in needles:
        assert n in proc.stderr, f"{name}: {n!r} not in: {proc.stderr}"
    if code == 2:
        # The error names the file (the spec, or the trace it reads) or
        # the option at fault.
        assert str(tmp_path) in proc.stderr or "--set" in proc.stderr or "argument" in proc.stderr, proc.stderr


def test_spec_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    for path, needle in ((fifo, "not a regular file"), (tmp_path, "is a directory"),
                         ("/dev/zero", "not a regular file"), (tmp_path / "none.toml", "no such spec file")):
        TALLY["run (TOML/JSON spec, --set, traces)"] += 1
        proc = run_cli(["run", str(path), "-q"], timeout=30)
        check_clean(proc, str(path))
        assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    bad = tmp_path / "latin1.toml"
    bad.write_bytes(b'name = "caf\xe9"\n')
    TALLY["run (TOML/JSON spec, --set, traces)"] += 1
    proc = run_cli(["run", str(bad), "-q"])
    assert proc.returncode == 2 and "not UTF-8" in proc.stderr


COMPARE = ["compare", "--disk", "fixed", "--workload", "iozone", "--set", "workload.processes=2",
           "--set", "workload.file_kb=64", "-q"]
COMPARE_CASES = [
    ("seeds-1e9", ["--seeds", "1000000000", "--duration", "1"], 2, ["--seeds", "10000"]),
    ("seeds-0", ["--seeds", "0"], 2, ["--seeds", "at least 1"]),
    ("seeds-negative", ["--seeds", "-3"], 2, ["at least 1"]),
    ("seeds-text", ["--seeds", "3.5"], 2, ["whole number"]),
    ("duration-nan", ["--duration", "nan"], 2, ["--duration", "finite"]),
    ("duration-inf", ["--duration", "inf"], 2, ["--duration", "finite"]),
    ("duration-zero", ["--duration", "0"], 2, ["above 0"]),
    ("duration-negative", ["--duration", "-1"], 2, ["above 0"]),
    ("duration-1e300", ["--duration", "1e300"], 2, ["run.duration_s", "horizon"]),
    ("duration-text", ["--duration", "soon"], 2, ["expected a number"]),
    ("max-requests-0", ["--max-requests", "0"], 2, ["at least 1"]),
    ("jobs-0", ["-j", "0"], 2, ["at least 1"]),
    ("jobs-negative", ["-j", "-5"], 2, ["at least 1"]),
    ("schedulers-empty", ["--schedulers", ""], 2, ["--schedulers"]),
    ("schedulers-commas", ["--schedulers", ",,,"], 2, ["--schedulers"]),
    ("schedulers-unknown", ["--schedulers", "noop,nosuch"], 2, ["unknown scheduler 'nosuch'"]),
    ("schedulers-aliases", ["--schedulers", "noop,fifo"], 2, ["names of one scheduler"]),
    ("schedulers-twice", ["--schedulers", "as,as"], 2, ["appears twice"]),
    ("disk-unknown", ["--disk", "floppy"], 2, ["floppy"]),
    ("workload-unknown", ["--workload", "nosuch"], 2, ["unknown workload 'nosuch'"]),
    ("cfq-quantum-4.7", ["--schedulers", "cfq", "--set", "cfq.quantum=4.7"], 2, ["whole number"]),
    ("tunable-nowhere", ["--schedulers", "noop", "--set", "noop.quantum=3"], 2, ["no tunable 'quantum'"]),
    ("processes-4e9", ["--set", "workload.processes=4000000000"], 2, ["65536"]),
]


@pytest.mark.parametrize("case", COMPARE_CASES, ids=[c[0] for c in COMPARE_CASES])
def test_compare(case):
    name, extra, code, needles = case
    TALLY["compare (options)"] += 1
    proc = run_cli(COMPARE + extra)
    check_clean(proc, name)
    assert proc.returncode == code, f"{name}: exit {proc.returncode}\n{proc.stderr}"
    for n in needles:
        assert n in proc.stderr, f"{name}: {n!r} not in: {proc.stderr}"


SWEEP_CASES = [
    ("grid-key-twice", ["--grid", "disk.fixed_ms=1,2", "--grid", "disk.fixed_ms=3"], 2, ["given twice"]),
    ("grid-value-twice", ["--grid", "disk.fixed_ms=1,2,1"], 2, ["the value 1 is given twice"]),
    ("grid-key-also-set", ["--grid", "disk.fixed_ms=1,2", "--set", "disk.fixed_ms=3"], 2, ["also fixed by --set"]),
    ("grid-explodes", [a for i in range(20) for a in ("--grid", f"k{i}.x=1,2")], 2, ["1048576 points", "100000"]),
    ("grid-bad-point", ["--grid", "workload.group[0].count=2,0"], 2, ["grid point", "count"]),
    ("grid-repetitions-1e9", ["--grid", "run.repetitions=1,1000000000"], 2, ["10000"]),
    ("grid-no-values", ["--grid", "disk.fixed_ms="], 2, ["KEY=V1,V2"]),
    ("grid-no-equals", ["--grid", "disk.fixed_ms"], 2, ["KEY=V1,V2"]),
    ("grid-jobs-0", ["--grid", "disk.fixed_ms=1", "-j", "0"], 2, ["at least 1"]),
    ("grid-too-many-runs", ["--grid", "run.repetitions=10000", "--grid", "disk.fixed_ms=" + ",".join(map(str, range(1, 12)))],
     2, ["more than 100000 runs"]),
    ("grid-good", ["--grid", "disk.fixed_ms=1,2"], 0, []),
]


@pytest.mark.parametrize("case", SWEEP_CASES, ids=[c[0] for c in SWEEP_CASES])
def test_sweep(tmp_path, case):
    name, extra, code, needles = case
    path = _write_case(tmp_path, BASE, None, [])
    TALLY["sweep (--grid)"] += 1
    proc = run_cli(["sweep", str(path), "-q", "-o", str(tmp_path / "out")] + extra, timeout=120)
    check_clean(proc, name)
    assert proc.returncode == code, f"{name}: exit {proc.returncode}\n{proc.stderr}"
    for n in needles:
        assert n in proc.stderr, f"{name}: {n!r} not in: {proc.stderr}"
    if code == 2:
        assert not (tmp_path / "out").exists(), "a refused sweep writes nothing"


def test_presets_fit_80_columns():
    TALLY["presets"] += 1
    proc = run_cli(["presets"], env={"COLUMNS": "80"})
    check_clean(proc, "presets")
    lines = proc.stdout.splitlines()
    assert max(map(len, lines)) <= 80, max(lines, key=len)
    # A bound against runaway output: twelve schedulers (six 2.6-era, four of
    # Linux 6.1 with 22 tunables between them, the module's two run from its
    # C with its sysfs tunables), three disks, the workloads: 257 lines.
    assert len(lines) < 320, len(lines)
    assert "e+0" not in proc.stdout and "2147483647" in proc.stdout
    TALLY["presets"] += 1
    data = json.loads(run_cli(["presets", "--json"]).stdout)
    assert {"disks", "workloads", "schedulers"} <= set(data)


def test_paper_rejects_bad_jobs():
    TALLY["paper"] += 1
    proc = run_cli(["paper", "wpcas", "--quick", "-j", "0"])
    check_clean(proc, "paper -j 0")
    assert proc.returncode == 2 and "at least 1" in proc.stderr
