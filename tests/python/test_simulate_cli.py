"""The simulator's command: run, compare, presets, errors, determinism, Ctrl-C."""

import json
import signal
import subprocess
import sys
import time

import pytest

SPEC = """
name = "tiny"
[disk]
preset = "fixed"
fixed_ms = 2
[[scheduler]]
name = "noop"
[workload]
kind = "processes"
[[workload.group]]
count = 3
pattern = "random"
request_kb = 8
file_mb = 4
think = { dist = "exponential", mean_ms = 1 }
passes = 1
[run]
seed = 3
repetitions = 3
"""


@pytest.fixture
def spec(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(SPEC)
    return p


def test_presets_lists_schedulers_disks_and_workloads(iolab):
    out = iolab("presets", "--json", check=True)
    data = json.loads(out.stdout)
    assert "noop" in [s["name"] for s in data["schedulers"]]
    assert "fixed" in [d["name"] for d in data["disks"]]
    assert {"iozone", "deceptive-idleness"} <= {w["name"] for w in data["workloads"]}


def test_run_writes_every_output_and_is_deterministic(iolab, spec, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    iolab("run", str(spec), "-o", str(a), check=True)
    iolab("run", str(spec), "-o", str(b), "-j", "1", check=True)
    for name in ("results.json", "runs.csv", "summary.csv", "report.md", "report.html", "throughput.png"):
        assert (a / name).is_file(), name
    assert (a / "results.json").read_bytes() == (b / "results.json").read_bytes()
    doc = json.loads((a / "results.json").read_text())
    assert doc["seeds"] == [3, 4, 5] and doc["rng"] == "ChaCha8" and doc["iolab_version"]
    assert doc["spec"]["workload"]["group"][0]["count"] == 3
    run = doc["runs"][0]
    for key in ("scheduler", "throughput_mb_s", "iops", "latency_ms", "anticipation"):
        assert key in run
    assert set(run["latency_ms"]) >= {"mean", "p50", "p95", "p99", "max"}
    assert set(run["anticipation"]) >= {"started", "succeeded", "failed", "success_wait_ms", "failure_wait_ms",
                                        "deceptive_idleness_ms", "mean_success_wait_ms"}
    # 3 processes × 512 records of 8 KiB, each completed once.
    assert run["requests"]["completed"] == 3 * 512 == run["requests"]["inserted"]
    # 2 ms per request, one at a time: the disk is busy 2 ms per completion,
    # and at most 500 IOPS (less when every process is thinking).
    assert run["disk"]["busy_ms"] == pytest.approx(2 * run["requests"]["completed"], rel=1e-9)
    assert 400 < run["iops"] <= 500


def test_set_overrides_fields(iolab, spec, tmp_path):
    out = tmp_path / "r.json"
    iolab("run", str(spec), "--set", "run.repetitions=1", "--set", "workload.group=[{\"count\": 2, \"passes\": 1, \"file_mb\": 1}]",
          "--json", str(out), check=True)
    doc = json.loads(out.read_text())
    assert len(doc["runs"]) == 1 and len(doc["runs"][0]["per_process"]) == 2


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda s: s.replace("count = 3", "count = 3\ncolour = 1"), "unknown field `colour`"),
        (lambda s: s.replace('name = "noop"', 'name = "nosuch"'), "unknown scheduler 'nosuch'"),
        (lambda s: s.replace("passes = 1", "passes = 0"), "never ends"),
        (lambda s: s.replace("fixed_ms = 2", "fixed_ms = -2"), "disk.fixed_ms"),
        (lambda s: s + "\n[run\n", "line"),
    ],
)
def test_bad_specs_give_one_line_errors(iolab, tmp_path, mutate, expected):
    p = tmp_path / "bad.toml"
    p.write_text(mutate(SPEC))
    proc = iolab("run", str(p))
    assert proc.returncode == 2
    assert expected in proc.stderr, proc.stderr
    assert str(p) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_spec_and_bad_override(iolab, spec):
    proc = iolab("run", "/nonexistent/x.toml")
    assert proc.returncode == 2 and "no such spec file" in proc.stderr
    proc = iolab("run", str(spec), "--set", "noequals")
    assert proc.returncode == 2 and "KEY=VALUE" in proc.stderr
    proc = iolab("compare", "--disk", "fixed", "--schedulers", "noop", "--set", "noop.quantum=3")
    assert proc.returncode == 2 and "no tunable 'quantum'" in proc.stderr


def test_compare_builds_a_spec_from_options(iolab, tmp_path):
    out = tmp_path / "c.json"
    iolab("compare", "--disk", "fixed", "--workload", "iozone", "--schedulers", "noop", "--seeds", "2",
          "--set", "workload.processes=3", "--json", str(out), check=True)
    doc = json.loads(out.read_text())
    assert doc["spec"]["workload"]["kind"] == "iozone" and doc["spec"]["workload"]["processes"] == 3
    assert [r["seed"] for r in doc["runs"]] == [1, 2]


def test_ctrl_c_keeps_finished_runs(tmp_path):
    spec = tmp_path / "long.toml"
    spec.write_text(SPEC.replace("passes = 1", "passes = 0").replace("repetitions = 3", "repetitions = 300\nmax_requests = 300000"))
    out = tmp_path / "r.json"
    proc = subprocess.Popen([sys.executable, "-m", "iolab", "run", str(spec), "-j", "1", "--json", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Wait for the first run to finish (its result is kept), then interrupt.
    deadline = time.monotonic() + 120
    time.sleep(6)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=max(1, deadline - time.monotonic()))
    assert proc.returncode == 130, err
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True
    assert 0 < len(doc["runs"]) < 300
    assert "interrupted" in err and "Traceback" not in err
