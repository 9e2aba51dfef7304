"""`iolab recommend`: the grid, the statistics of the verdict, and the
command end to end on the sample traces."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from iolab import recommend as rc
from iolab.cli.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "traces" / "sample.blkparse.txt"


def doc_of(values: dict[str, list[float]]) -> dict:
    """A result document with one run per (configuration, seed)."""
    runs = []
    for label, vals in values.items():
        for seed, v in enumerate(vals, 1):
            runs.append({"scheduler": label, "seed": seed, "throughput_mb_s": v,
                         "read_latency_ms": {"p99": v}, "requests": {"completed": 10},
                         "per_process": [{"requests": 5, "latency_ms": {"mean": v}},
                                         {"requests": 5, "latency_ms": {"mean": 2 * v}}]})
    return {"runs": runs}


def noisy(mean: float, n: int, sd: float, rng: random.Random, shared: list[float]) -> list[float]:
    # A per-seed effect shared by every configuration (what pairing removes) plus a little noise.
    return [mean + shared[i] + rng.gauss(0, sd) for i in range(n)]


def paired(means: dict[str, float], n: int, sd: float, seed: int) -> dict[str, list[float]]:
    """Values of configurations with these means on `n` seeds sharing a ±20 per-seed effect."""
    rng = random.Random(seed)
    shared = [rng.gauss(0, 20) for _ in range(n)]
    return {k: noisy(m, n, sd, rng, shared) for k, m in means.items()}


def test_grid_defaults_and_tunables():
    cfgs = rc.configs(list(rc.MODERN), {})
    labels = [c.label for c in cfgs]
    assert labels[0] == "none" and "bfq slice_idle=0" in labels and "mq-deadline fifo_batch=1" in labels
    assert len(labels) == len(set(labels)) == sum(len(v) for v in rc.DEFAULT_GRID.values())
    grid = rc.parse_tunables(["bfq.slice_idle=0,8", "bfq.low_latency=0,1"])
    cfgs = rc.configs(["bfq"], grid)
    assert [c.label for c in cfgs] == ["bfq slice_idle=0,low_latency=0", "bfq slice_idle=0,low_latency=1",
                                       "bfq slice_idle=8,low_latency=0", "bfq slice_idle=8,low_latency=1"]
    c = cfgs[0]
    assert c.sysfs_lines("sdb") == ["echo bfq > /sys/block/sdb/queue/scheduler",
                                    "echo 0 > /sys/block/sdb/queue/iosched/slice_idle",
                                    "echo 0 > /sys/block/sdb/queue/iosched/low_latency"]
    assert c.spec_entry() == {"name": "bfq", "label": c.label, "slice_idle": 0.0, "low_latency": 0.0}
    assert c.bench_config("recommended") == "recommended=bfq:slice_idle=0,low_latency=0"
    for bad, msg in ((["bfq.slice_idle"], "expected SCHED.NAME"), (["cfq.slice_idle=1"], "not one of"),
                     (["bfq.slice_idle=x"], "not a number"), (["bfq.a=1", "bfq.a=2"], "given twice")):
        with pytest.raises(UserError, match=msg):
            rc.parse_tunables(bad)
    with pytest.raises(UserError, match="not one of"):
        rc.configs(["deadline"], {})


def test_a_clear_winner_is_named_with_its_margin():
    values = paired({"a": 100, "b": 90, "c": 80}, 10, 1, seed=1)
    v = rc.analyse(doc_of(values), rc.METRICS["throughput"])
    assert v.winner == "a" and not v.deterministic
    assert v.margin.versus == "b"
    assert v.margin.low < 10 < v.margin.high and v.margin.low > 5  # pairing removes the shared ±20
    assert v.margin.level == pytest.approx(1 - 0.05 / 3)
    text = "\n".join(rc.explain(v, {k: rc.Config("bfq") for k in values}, "sdb"))
    assert "significantly better than every other" in text and "echo bfq > /sys/block/sdb/queue/scheduler" in text
    # Lower is better for read p99: the smallest value wins.
    v = rc.analyse(doc_of(values), rc.METRICS["read-p99"])
    assert v.winner == "c"


def test_no_difference_is_said_only_with_an_equivalence_test():
    rng = random.Random(2)
    shared = [rng.gauss(0, 20) for _ in range(12)]
    same = {k: noisy(100, 12, 0.5, rng, shared) for k in ("a", "b", "c")}
    v = rc.analyse(doc_of(same), rc.METRICS["throughput"], equivalence_margin=0.05)
    assert v.winner is None and v.equivalent
    text = " ".join(rc.explain(v, {k: rc.Config("none") for k in same}, "sdb"))
    assert "does not matter" in text and "echo" not in text
    # Too noisy to tell either way: neither a winner nor "does not matter".
    wild = {k: noisy(100, 3, 30, rng, shared) for k in ("a", "b")}
    v = rc.analyse(doc_of(wild), rc.METRICS["throughput"], equivalence_margin=0.05)
    assert v.winner is None and v.equivalent is False
    text = " ".join(rc.explain(v, {k: rc.Config("none") for k in wild}, "sdb"))
    assert "No configuration is significantly better than any other" in text and "More seeds" in text


def test_deterministic_runs_are_said_to_be():
    v = rc.analyse(doc_of({"a": [5.0], "b": [4.0]}), rc.METRICS["throughput"])
    assert v.deterministic and v.winner == "a"
    assert "deterministic" in rc.explain(v, {"a": rc.Config("kyber"), "b": rc.Config("none")}, "sda")[0]
    v = rc.analyse(doc_of({"a": [5.0, 5.0], "b": [5.0, 5.0]}), rc.METRICS["throughput"])
    assert v.deterministic and v.winner is None and v.top == ["a", "b"]
    assert "does not matter" in rc.explain(v, {}, "sda")[1]
    v = rc.analyse(doc_of({"a": [5.0], "b": [5.0], "c": [4.0]}), rc.METRICS["throughput"])
    text = rc.explain(v, {"a": rc.Config("bfq"), "b": rc.Config("none"), "c": rc.Config("kyber")}, "sda")
    assert "tied: a, b" in text[1] and "echo bfq" in text[-1]


def test_a_significant_best_group_is_named_and_applied():
    values = paired({"a": 100, "b": 99.5, "c": 60}, 10, 2, seed=3)
    v = rc.analyse(doc_of(values), rc.METRICS["throughput"])
    assert v.winner is None and set(v.top) == {"a", "b"} and v.equivalent is None
    text = " ".join(rc.explain(v, {k: rc.Config("mq-deadline") for k in values}, "sdb"))
    assert "every configuration outside the best group is significantly worse" in text
    assert "echo mq-deadline > /sys/block/sdb/queue/scheduler" in text


def test_fairness_is_jains_index_of_mean_latency():
    run = {"per_process": [{"requests": 1, "latency_ms": {"mean": 1.0}},
                           {"requests": 1, "latency_ms": {"mean": 3.0}},
                           {"requests": 0, "latency_ms": {"mean": 0.0}}]}
    assert rc.METRICS["fairness"].get(run) == pytest.approx(16 / (2 * 10))


def test_verify_runs_bench_with_the_recommended_and_the_default(tmp_path):
    cmd = rc.verify_command("loop:64M", rc.Config("bfq", (("slice_idle", 0.0),)), rc.default_config("loop:64M"),
                            3, tmp_path, "sync-readers")
    assert cmd[1:] == ["-m", "iolab", "bench", "--loop", "64M", "--config", "default=mq-deadline",
                       "--config", "recommended=bfq:slice_idle=0", "--reps", "3", "-o", str(tmp_path),
                       "--workload", "sync-readers"]
    assert rc.verify_command("/dev/sdz", rc.Config("none"), rc.Config("bfq"), 2, tmp_path, None)[3:5] == \
        ["bench", "--device"]


def iolab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "iolab", "recommend", "-q", *args],
                          capture_output=True, text=True, cwd=ROOT)


def test_recommend_on_the_sample_trace(tmp_path):
    out = tmp_path / "rec"
    p = iolab(str(SAMPLE), "--disk", "modern7200", "--seeds", "4", "--metric", "read-p99",
              "--device-name", "sdb", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "p99 read latency" in p.stdout and "mq-deadline fifo_batch=1" in p.stdout
    verdict = json.loads((out / "recommend.json").read_text())
    assert verdict["metric"] == "read-p99" and not verdict["deterministic"]
    assert set(verdict["values"]) == {c.label for c in rc.configs(list(rc.MODERN), {})}
    assert all(len(v) == 4 for v in verdict["values"].values())
    doc = json.loads((out / "results.json").read_text())
    assert doc["spec"]["workload"]["jitter_ms"] == 1.0 and doc["seeds"] == [1, 2, 3, 4]
    if verdict["winner"]:
        assert "echo " in p.stdout and "/sys/block/sdb/queue/scheduler" in p.stdout
    else:
        assert "does not matter" in p.stdout or "No " in p.stdout


def test_recommend_without_jitter_is_deterministic_and_other_formats_read():
    p = iolab(str(ROOT / "data/traces/sample.msr.csv"), "--format", "msr", "--disk", "ssd", "--jitter-ms", "0",
              "--schedulers", "none,kyber", "--metric", "throughput")
    assert p.returncode == 0, p.stderr
    assert "deterministic" in p.stdout and "queue depth 32" in p.stdout


@pytest.mark.parametrize("args,msg", [
    (["nosuch.txt"], "no such trace file"),
    (["/dev/zero"], "/dev/zero: is not a regular file"),
    (["/"], "/: is a directory"),
    ([str(SAMPLE), "--tunables", "bfq.nosuch=1"], "has no tunable 'nosuch'"),
    ([str(SAMPLE), "--tunables", "bfq.slice_idle=-1"], "outside"),
    ([str(SAMPLE), "--margin", "0"], "--margin"),
    ([str(SAMPLE), "--format", "msr"], "sample.blkparse.txt:"),
])
def test_bad_input_is_one_line(args, msg):
    p = iolab(*args)
    assert p.returncode == 2 and msg in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_a_recorded_trace_with_one_request_outstanding_leaves_nothing_to_choose(tmp_path):
    # DiskSim's HP C2247A trace (measured on the drive, one request
    # outstanding at a time) as DiskSim ASCII input, as docs/schedulers.md does it.
    src = ROOT / "data" / "disksim" / "hp_c2247a.trace"
    lines, t_us = [], 0.0
    for line in src.read_text().splitlines()[:400]:
        rw, _, lbn, blocks, access_us, delay_us = line.split()
        lines.append(f"{t_us / 1000:.3f} 0 {lbn} {blocks} {1 if rw == 'R' else 0}")
        t_us += float(access_us) + float(delay_us)
    trace = tmp_path / "c2247a.disksim.txt"
    trace.write_text("\n".join(lines) + "\n")
    out = tmp_path / "rec"
    p = iolab(str(trace), "--format", "disksim", "--diskspecs", str(ROOT / "data/disksim/hp_c2247a.diskspecs"),
              "--seeds", "3", "--metric", "read-p99", "-o", str(out))
    assert p.returncode == 0, p.stderr
    values = json.loads((out / "recommend.json").read_text())["values"]
    per_seed = list(zip(*values.values()))
    assert len(per_seed) == 3 and all(len(set(v)) == 1 for v in per_seed), values
    assert "does not matter" in p.stdout


def test_dask_gives_the_same_values_as_a_local_run(tmp_path):
    args = [str(SAMPLE), "--disk", "modern7200", "--seeds", "2", "--schedulers", "none,kyber"]
    local, dask = tmp_path / "local", tmp_path / "dask"
    assert iolab(*args, "-o", str(local)).returncode == 0
    p = iolab(*args, "--dask", "local", "-o", str(dask))
    assert p.returncode == 0, p.stderr
    read = lambda d: json.loads((d / "recommend.json").read_text())["values"]  # noqa: E731
    assert read(local) == read(dask)
