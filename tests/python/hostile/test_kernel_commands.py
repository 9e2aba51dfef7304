"""Hostile inputs for `iolab kernel` (issue 27): options that must be refused
before anything is booted, installed or written, and comparison or overhead
directories whose files are damaged in every way an edit or a cut-short run
leaves them. None may boot a guest: every case is refused, or (``--report``)
analysed without one.
"""

from __future__ import annotations

import json

import pytest

from .harness import TALLY, check_clean, run_cli

# A meta.json as `iolab kernel compare` writes it, for one disk, workload and elevator.
META = {
    "kernel": "6.1.0-56-amd64", "disks": ["hp97560"], "workloads": ["seqreaders"], "elevators": ["none"],
    "reps": 1, "runtime": 4, "trace": [], "load_before": "1 1 1", "load_after": "1 1 1",
    "started": "2026-11-28 00:00:00", "plans": {"hp97560": [[0, "seqreaders", "none", 0]]},
    "capacity": {"hp97560": 2684016}, "calibration": "given",
    "host_by_disk": {"hp97560": {"none": {"device_us": 0.0, "think_us": {}}}}, "notes": {},
}


def _with(**changes) -> dict:
    m = json.loads(json.dumps(META))
    for key, value in changes.items():
        if value is _DROP:
            m.pop(key)
        else:
            m[key] = value
    return m


_DROP = object()

# (id, meta.json's text, substrings of the error)
META_CASES = [
    ("not-json", "{", ["meta.json:1: not JSON"]),
    ("not-utf8", b"\xff\xfe{}", ["meta.json: cannot read it"]),
    ("a-list", "[]", ["field `(top level)`: expected an object"]),
    ("no-disks", _with(disks=_DROP), ["field `disks`: expected a non-empty list of names, got null"]),
    ("disks-empty", _with(disks=[]), ["field `disks`"]),
    ("disks-number", _with(disks=7), ["field `disks`"]),
    ("disk-unknown", _with(disks=["floppy"]), ["field `disks`: expected names among hp97560, modern7200"]),
    ("disks-repeat", _with(disks=["hp97560", "hp97560"]), ["without repeats"]),
    ("workload-unknown", _with(workloads=["nosuch"]), ["field `workloads`"]),
    ("elevators-null", _with(elevators=None), ["field `elevators`"]),
    ("elevator-not-text", _with(elevators=[1]), ["field `elevators`"]),
    ("reps-text", _with(reps="3"), ["field `reps`"]),
    ("reps-0", _with(reps=0), ["field `reps`"]),
    ("reps-bool", _with(reps=True), ["field `reps`"]),
    ("reps-huge", _with(reps=10**12), ["field `reps`"]),
    ("runtime-nan", '{"runtime": NaN}', ["field `disks`"]),
    ("runtime-text", _with(runtime="4"), ["field `runtime`"]),
    ("runtime-negative", _with(runtime=-4), ["field `runtime`"]),
    ("runtime-inf", json.dumps(_with(runtime=1)).replace('"runtime": 1', '"runtime": Infinity'),
     ["field `runtime`"]),
    ("kernel-number", _with(kernel=6), ["field `kernel`"]),
    ("plans-missing", _with(plans=_DROP), ["field `plans`"]),
    ("plan-of-disk-missing", _with(plans={}), ["field `plans.hp97560`"]),
    ("plan-row-short", _with(plans={"hp97560": [[0, "seqreaders"]]}), ["field `plans.hp97560[0]`"]),
    ("plan-row-other-elevator", _with(plans={"hp97560": [[0, "seqreaders", "bfq", 0]]}),
     ["field `plans.hp97560[0]`"]),
    ("plan-row-negative-id", _with(plans={"hp97560": [[-1, "seqreaders", "none", 0]]}),
     ["field `plans.hp97560[0]`"]),
    ("capacity-missing", _with(capacity={}), ["field `capacity.hp97560`"]),
    ("capacity-0", _with(capacity={"hp97560": 0}), ["field `capacity.hp97560`"]),
    ("capacity-float", _with(capacity={"hp97560": 1.5}), ["field `capacity.hp97560`"]),
    ("notes-list", _with(notes=[]), ["field `notes`"]),
    ("host-by-disk-list", _with(host_by_disk=[]), ["field `host_by_disk`"]),
    ("host-device-text", _with(host_by_disk={"hp97560": {"none": {"device_us": "x"}}}),
     ["field `host_by_disk.hp97560.none.device_us`"]),
    ("host-think-key", _with(host_by_disk={"hp97560": {"none": {"device_us": 1, "think_us": {"x": 1}}}}),
     ["field `host_by_disk.hp97560.none.think_us`"]),
    ("calibration-number", _with(calibration=1), ["field `calibration`"]),
    ("think-model-unknown", _with(think_model="median"), ["field `think_model`: expected mean, samples, guest, workload or cpu"]),
    ("icount-11", _with(icount=11), ["field `icount`"]),
    ("icount-text", _with(icount="6"), ["field `icount`"]),
    ("think-samples-text", _with(host_by_disk={"hp97560": {"none": {
        "device_us": 1, "think_us": {"0": 1}, "think_samples_us": {"0": ["x"]}}}}),
     ["field `host_by_disk.hp97560.none.think_samples_us`"]),
    ("think-samples-other-key", _with(host_by_disk={"hp97560": {"none": {
        "device_us": 1, "think_us": {"0": 1}, "think_samples_us": {"5": [1.0]}}}}),
     ["field `host_by_disk.hp97560.none.think_samples_us`"]),
    ("think-guest-nan", _with(host_by_disk={"hp97560": {"none": {
        "device_us": 1, "think_us": {"0": 1}, "think_guest_us": {"0": [float("nan")]}}}}),
     ["field `host_by_disk.hp97560.none.think_guest_us`"]),
    ("guest-gaps-missing-percentile", _with(host_by_disk={"hp97560": {"none": {
        "device_us": 1, "think_us": {"0": 1}, "guest_gap_us": {"0": {"mean": 1, "n": 3}}}}}),
     ["field `host_by_disk.hp97560.none.guest_gap_us`"]),
    # meta.json is sound; the results it points to are missing.
    ("results-missing", META, ["the comparison's results are incomplete or damaged"]),
]


def _directory(tmp_path, meta):
    out = tmp_path / "cmp"
    out.mkdir()
    data = meta if isinstance(meta, (str, bytes)) else json.dumps(meta)
    (out / "meta.json").write_bytes(data.encode() if isinstance(data, str) else data)
    return out


@pytest.mark.parametrize("case", META_CASES, ids=[c[0] for c in META_CASES])
def test_kernel_compare_report_reads_a_damaged_directory_cleanly(tmp_path, case):
    """In process (the command's own function, as --report calls it): one
    UserError line for every damage."""
    from iolab.cli.errors import UserError
    from iolab.kernel import compare

    name, meta, needles = case
    out = _directory(tmp_path, meta)
    TALLY["kernel compare --report/--resim on damaged directories"] += 1
    with pytest.raises(UserError) as e:
        compare.analyse(out, compare.load_meta(out))
    text = str(e.value)
    assert "\n" not in text
    for n in needles:
        assert n in text, f"{name}: {n!r} not in {text!r}"


# Through the command as a user runs it: --report and --resim (which would
# calibrate, booting a guest, once meta.json passed: only refusals run here).
CLI_META_CASES = [c for c in META_CASES if c[0] in ("not-json", "not-utf8", "disk-unknown", "plan-row-short",
                                                     "host-device-text", "results-missing")]


@pytest.mark.parametrize("case", CLI_META_CASES, ids=[c[0] for c in CLI_META_CASES])
@pytest.mark.parametrize("how", ["report", "resim"])
def test_kernel_compare_command_on_a_damaged_directory(tmp_path, case, how):
    name, meta, needles = case
    if how == "resim" and name == "results-missing":
        return
    out = _directory(tmp_path, meta)
    TALLY["kernel compare --report/--resim on damaged directories"] += 1
    if how == "report":
        args = ["kernel", "compare", "--report", str(out)]
    else:
        args = ["kernel", "compare", "--resim", "-o", str(out), "--overhead-us", "0"]
    proc = run_cli(args, cwd=tmp_path, timeout=120)
    check_clean(proc, name)
    assert proc.returncode == 2, f"{name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    for n in needles:
        assert n in proc.stderr, f"{name}: {n!r} not in {proc.stderr!r}"


# (id, args, substrings of the error); each must be refused before any boot or apt.
OPTION_CASES = [
    ("compare-reps-0", ["compare", "--reps", "0"], ["--reps: 0 is outside 1..100"]),
    ("compare-reps-1e9", ["compare", "--reps", "1000000000"], ["--reps: 1000000000 is outside 1..100"]),
    ("compare-runtime-1", ["compare", "--runtime", "1"], ["--runtime: 1 s is outside 2..3600 s"]),
    ("compare-guests-9", ["compare", "--guests", "9"], ["--guests: 9 is outside 1..8"]),
    ("compare-reps-past-the-markers", ["compare", "--reps", "6"],
     ["288 runs in one boot: the marker blocks hold 256"]),
    ("compare-runtime-1e9", ["compare", "--runtime", "1000000000"], ["outside 2..3600 s"]),
    ("compare-overhead-nan", ["compare", "--overhead-us", "nan"], ["--overhead-us: nan"]),
    ("compare-overhead-negative", ["compare", "--overhead-us", "-50"], ["--overhead-us: -50"]),
    ("compare-overhead-inf", ["compare", "--overhead-us", "inf"], ["--overhead-us: inf"]),
    ("compare-overhead-1e300", ["compare", "--overhead-us", "1e300"], ["--overhead-us: 1e+300"]),
    ("compare-resim-reps-0", ["compare", "--resim", "--reps", "0"], ["--reps: 0"]),
    ("compare-disk-unknown", ["compare", "--disks", "floppy"], ["--disks: unknown floppy"]),
    ("compare-elevator-unknown", ["compare", "--elevators", "cfq"], ["--elevators: unknown cfq"]),
    ("compare-repo-missing", ["compare", "--repo", "/nonexistent/iolab"],
     ["--repo /nonexistent/iolab: no such directory"]),
    ("compare-repo-file", ["compare", "--repo", "/etc/hostname"], ["--repo /etc/hostname: not a directory"]),
    ("compare-repo-not-checkout", ["compare", "--repo", "/tmp"], ["--repo /tmp: not an iolab checkout"]),
    ("compare-icount-11", ["compare", "--icount", "11"], ["--icount: shift 11 is outside 0..10"]),
    ("compare-icount-negative", ["compare", "--icount", "-1"], ["--icount: shift -1 is outside 0..10"]),
    ("overhead-icount-11", ["overhead", "--icount", "11"], ["--icount: shift 11 is outside 0..10"]),
    ("overhead-reps-0", ["overhead", "--reps", "0"], ["--reps: 0 is outside 1..100"]),
    ("overhead-secs-1e9", ["overhead", "--secs", "1000000000"], ["--secs: 1000000000 is outside 1..3600"]),
    ("overhead-repo-missing", ["overhead", "--repo", "/nonexistent/iolab"], ["--repo /nonexistent/iolab"]),
    ("overhead-report-empty", ["overhead", "--report", "{tmp}"], ["no guest/overhead/runs.txt"]),
]


@pytest.mark.parametrize("case", OPTION_CASES, ids=[c[0] for c in OPTION_CASES])
def test_kernel_options_are_refused_before_anything_runs(tmp_path, case):
    name, args, needles = case
    out = tmp_path / "out"
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    TALLY["kernel options (refused before a boot)"] += 1
    proc = run_cli(["kernel", *args, *([] if "--report" in args else ["-o", str(out)])], cwd=tmp_path,
                   timeout=60)
    check_clean(proc, name)
    assert proc.returncode == 2, f"{name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    for n in needles:
        assert n in proc.stderr, f"{name}: {n!r} not in {proc.stderr!r}"
    assert not out.exists(), f"{name}: wrote {out} before refusing"


@pytest.mark.parametrize("content", [b"\xff\xfe", b"rep elevator busy_ns requests\n1 none x 5\n", b"", b"{"])
def test_kernel_overhead_report_on_damaged_files(tmp_path, content):
    runs = tmp_path / "guest" / "overhead" / "runs.txt"
    runs.parent.mkdir(parents=True)
    runs.write_bytes(content)
    (tmp_path / "overhead.json").write_bytes(content or b"[]")
    TALLY["kernel overhead --report on damaged files"] += 1
    proc = run_cli(["kernel", "overhead", "--report", str(tmp_path)], cwd=tmp_path, timeout=60)
    check_clean(proc, "overhead-report")
    assert proc.returncode == 2
