"""`iolab kernel decisions`: the module's blktrace lines read alike from a
guest's trace and from the simulator's run of the same C."""

from __future__ import annotations

import json
import math

import pytest

from iolab.cli.errors import UserError
from iolab.kernel import decisions
from iolab.kernel.compare import sim_spec
from iolab.kernel.guest import capacity_sectors
from iolab.kernel.workloads import WORKLOADS

DISK, WL = "hp97560", "randseq"


def test_lines_are_parsed_by_kind_and_others_ignored():
    assert decisions.parse_line("wpcas ste st 0 pos 8 ok 3 f 1 tas 900 p 2000 ts 7000 ta 10 w 1") == (
        "wpcas ste", {"st": 0, "pos": 8, "ok": 3, "f": 1, "tas": 900, "p": 2000, "ts": 7000, "ta": 10, "w": 1})
    assert decisions.parse_line("as end pos 16 ok 0 waited 2000") == ("as end", {"pos": 16, "ok": 0, "waited": 2000})
    # another elevator's line, a cut one, a word that is not a number
    assert decisions.parse_line("bfq134S set_in_service_queue") is None
    assert decisions.parse_line("as end pos 16 ok") is None
    assert decisions.parse_line("as end pos x ok 1") is None
    # a line without a field its kind carries (the summary would need it)
    assert decisions.parse_line("wpcas ste st 0 pos 8 ok 3") is None


def _compare_dir(tmp_path, lines_of=None):
    """A compare directory of one traced wpcas run whose trace holds the
    lines of the simulator's own run (seed 1) of the compared spec."""
    cap = capacity_sectors(DISK)
    spec, _ = sim_spec(DISK, WORKLOADS[WL], "wpcas", 3, 1, None)
    (tmp_path / "sim").mkdir()
    spec_path = tmp_path / "sim" / f"{DISK}-{WL}-wpcas.spec.json"
    spec_path.write_text(json.dumps(spec))
    meta = {"disks": [DISK], "workloads": [WL], "elevators": ["wpcas"], "reps": 1, "runtime": 3,
            "plans": {DISK: [[0, WL, "wpcas", 0]]}, "capacity": {DISK: cap}, "trace": ["wpcas"]}
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    run = decisions.sim_runs_with_lines(spec_path)[0]
    texts = lines_of(run) if lines_of else [m["text"] for m in run["elevator_messages"]]
    (tmp_path / DISK / "runs").mkdir(parents=True)
    # the blk tracer's text: block events between the module's lines
    trace = ["# tracer: blk"]
    # a completion 700 us before each line
    for i, t in enumerate(texts):
        at = 1 + i * 1e-2
        trace.append(f"             fio-201     [000] d..1.   {at:.6f}: 254,0    Q  RS 1000 + 8 [fio]")
        trace.append(f"          <idle>-0       [000] d.h1.   {at + 0.0003:.6f}: 254,0    C  RS 1000 + 8 [0]")
        trace.append(f"    kworker/0:1H-39      [000] d..1.   {at + 0.001:.6f}: 254,0   1,0  m   N {t}")
    (tmp_path / DISK / "runs" / "0.trace").write_text("\n".join(trace) + "\n")
    return run


def test_the_guests_lines_and_the_simulators_summarise_alike(tmp_path):
    run = _compare_dir(tmp_path)
    [found] = decisions.compare_dir(tmp_path)
    assert (found["kernel_runs"], found["sim_runs"]) == (1, 1)
    # the same lines on both sides: the same figures, group by group
    assert set(found["kernel"]) == {"rand", "seq"}
    for g in found["kernel"]:
        for k, v in found["kernel"][g].items():
            s = found["sim"][g][k]
            assert (math.isnan(v) and math.isnan(s)) or v == s, (g, k, v, s)
    # the sequential readers are waited for and the waits end as Table 1 counts them
    seq = found["kernel"]["seq"]
    assert seq["fresh_per_run"] > 100 and seq["fresh_wait_share"] > 0.5
    a = run["anticipation"]
    ends = sum(found["kernel"][g]["ends_per_run"] for g in found["kernel"])
    assert ends == a["succeeded"] + a["failed"]
    # every wait started after its target's completion, 700 us after a C
    d = found["kernel_decision_delay_us"]
    starts = sum(1 for m in run["elevator_messages"] if m["text"].startswith("as start ") and " req 0" in m["text"])
    assert d["n"] == starts and abs(d["p50"] - 700) < 1 and found["kernel_deciders"] == {"kworker/0:1H": starts}
    text = decisions.report([found])
    assert "STE: decisions to start a wait" in text and "seq kernel | sim" in text


def test_a_trace_without_the_modules_lines_is_refused(tmp_path):
    _compare_dir(tmp_path, lines_of=lambda run: ["bfq1S not ours"])
    with pytest.raises(UserError, match="no line of the module's"):
        decisions.compare_dir(tmp_path)


def test_a_directory_without_traced_runs_is_refused(tmp_path):
    _compare_dir(tmp_path)
    meta = json.loads((tmp_path / "meta.json").read_text())
    meta["trace"] = []
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(UserError, match="--trace wpcas"):
        decisions.compare_dir(tmp_path)
    meta["trace"] = "wpcas"
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(UserError, match="field `trace`"):
        decisions.compare_dir(tmp_path)


def test_a_workload_the_module_never_waited_in_is_left_out_by_name(tmp_path, capsys):
    _compare_dir(tmp_path)
    meta = json.loads((tmp_path / "meta.json").read_text())
    meta["workloads"].append("rwmix")
    meta["plans"][DISK].append([1, "rwmix", "wpcas", 0])
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    (tmp_path / DISK / "runs" / "1.trace").write_text("# tracer: blk\n")
    found = decisions.compare_dir(tmp_path)
    assert [f["workload"] for f in found] == [WL]
    assert "runs/1.trace: no line of the module's (it never waited there); left out" in capsys.readouterr().err
