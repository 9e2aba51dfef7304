"""kblockd's queue runs measured from a guest's blk tracer text
(iolab.kernel.queueruns) and given to the simulator (`--queue-runs`)."""

from __future__ import annotations

import argparse

import pytest

from iolab.cli.errors import UserError
from iolab.kernel import queueruns
from iolab.kernel.calibration import queue_run_inputs
from iolab.kernel.compare import check_options, run_sim, sim_spec
from iolab.kernel.workloads import WORKLOADS


def _event(t_s: float, comm: str, act: str, sector: int, rwbs: str = "RS") -> str:
    return f" {comm:>24} [000] d..1. {t_s:12.6f}: 254,0    {act}  {rwbs} {sector} + 8 [{comm.rsplit('-', 1)[0]}]"


def _message(t_s: float, comm: str, text: str) -> str:
    return f" {comm:>24} [000] d..1. {t_s:12.6f}: 254,0   1,0  m   N {text}"


FIO_A, FIO_B, WORKER, IDLE = "ld-linux-x86-64-128", "ld-linux-x86-64-129", "kworker/0:1H-39", "<idle>-0"


def _trace(tmp_path, lines):
    p = tmp_path / "run.trace"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_each_cause_is_timed_to_the_workers_next_act(tmp_path):
    lines = [
        # an insertion on an idle device: the worker issues it 550 µs later
        _event(1.000000, FIO_A, "I", 100), _event(1.000550, WORKER, "D", 100),
        # B queues while A's request is served: no ask is timed (the device is busy)
        _event(1.001000, FIO_B, "I", 9000),
        # A's completion with B's request waiting: the worker decides 740 µs later
        _event(1.004000, IDLE, "C", 100),
        _message(1.004740, WORKER, "as start pos 108 req 0"),
        # the wait times out (the timer's line, not the worker's): the worker issues B's 430 µs later
        _message(1.010000, IDLE, "as end pos 108 ok 0 waited 5260"),
        _event(1.010430, WORKER, "D", 9000),
    ]
    d = queueruns.queue_run_delays_us(_trace(tmp_path, lines))
    assert d["insert"] == pytest.approx([550.0])
    assert d["completion"] == pytest.approx([740.0])
    assert d["timer"] == pytest.approx([430.0])
    assert d["ambiguous"] == 0


def test_a_run_that_may_answer_two_asks_is_nobodys_sample(tmp_path):
    lines = [
        _event(1.000000, FIO_A, "I", 100), _event(1.000500, WORKER, "D", 100),
        _event(1.001000, FIO_B, "I", 9000),
        _event(1.004000, IDLE, "C", 100),
        # A inserts again before the worker ran for the completion
        _event(1.004300, FIO_A, "I", 200),
        _event(1.004800, WORKER, "D", 200),
        # a worker's own success line is not a timer's expiry
        _message(1.005000, WORKER, "as end pos 208 ok 0 waited 10"),
    ]
    d = queueruns.queue_run_delays_us(_trace(tmp_path, lines))
    assert d["completion"] == [] and d["timer"] == []
    assert d["insert"] == pytest.approx([500.0])
    assert d["ambiguous"] == 1


def test_the_marker_reads_are_not_timed_and_a_missing_trace_is_named(tmp_path):
    lines = [_event(1.0, FIO_A, "I", 10_000), _event(1.0005, WORKER, "D", 10_000)]
    assert queueruns.queue_run_delays_us(_trace(tmp_path, lines), marker=10_000)["insert"] == []
    with pytest.raises(UserError, match="nope.trace"):
        queueruns.queue_run_delays_us(tmp_path / "nope.trace")


def test_a_cause_with_few_samples_is_left_to_run_at_once():
    s = queueruns.summary({"insert": [500.0] * 30, "completion": [700.0] * 5, "timer": []},
                          lambda xs: sorted(xs)[:3])
    assert s["insert"]["n"] == 30 and s["insert"]["mean_us"] == 500.0
    assert "completion" not in s and "timer" not in s
    assert queueruns.sim_table(s) == {"insert": [500.0, 500.0, 500.0]}


def _host():
    one = {"insert": {"values_us": [400.0, 600.0], "n": 40, "mean_us": 500.0, "p50_us": 500.0}}
    own = {"completion": {"values_us": [700.0, 800.0], "n": 40, "mean_us": 750.0, "p50_us": 750.0}}
    return {"device_us": 2000.0, "think_us": {"0": 100.0},
            "think_guest_us": {"0": [100.0, 200.0]}, "guest_device_us": {"0": 1200.0, "mean": 1200.0},
            "queue_runs": {"one_process": one, "workload": {"randseq": own}}}


def test_the_spec_gets_the_delays_and_the_insertion_leaves_the_charge():
    host = _host()
    runs, split = queue_run_inputs(host, "randseq")
    assert runs == {"insert": [400.0, 600.0], "completion": [700.0, 800.0]} and split == 500.0
    spec, _ = sim_spec("hp97560", WORKLOADS["randseq"], "wpcas", 2, 1, host, "guest", queue_runs=True)
    assert spec["host"]["queue_run_us"] == runs
    assert spec["disk"]["host_overhead_us"] == pytest.approx(700.0)
    plain, _ = sim_spec("hp97560", WORKLOADS["randseq"], "wpcas", 2, 1, host, "guest")
    assert "host" not in plain and plain["disk"]["host_overhead_us"] == pytest.approx(1200.0)
    # the spec runs, and the worker's delays change the run
    assert run_sim(spec)[0]["throughput_mb_s"] != run_sim(plain)[0]["throughput_mb_s"]


def test_queue_runs_need_a_traced_calibration():
    with pytest.raises(UserError, match="no traced runs"):
        queue_run_inputs({"device_us": 1.0}, "randseq")
    args = argparse.Namespace(reps=1, runtime=5, icount=None, guests=1, overhead_us=None,
                              queue_runs=True, think="mean")
    with pytest.raises(UserError, match="--queue-runs"):
        check_options(args)
    args.think = "workload"
    check_options(args)
    args.overhead_us = 100.0
    with pytest.raises(UserError, match="--overhead-us"):
        check_options(args)
