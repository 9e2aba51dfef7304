"""The session's plan: every repetition runs every unit once, in a fresh shuffled order."""

from __future__ import annotations

import os
import signal
import time

import pytest

from iolab.bench import session
from iolab.bench.configs import Config
from iolab.bench.workloads import Variant


def test_every_repetition_runs_every_unit_once_in_a_fresh_order():
    configs = [Config(s) for s in ("none", "mq-deadline", "kyber", "bfq")]
    variants = [Variant("reclen=32k", {"reclen": "32k"}), Variant("reclen=1m", {"reclen": "1m"})]
    plan = session.plan(configs, variants, reps=6, seed=1)
    units = {(c.label, v.label) for c in configs for v in variants}
    labels = [[(c.label, v.label) for c, v in rep] for rep in plan]
    assert len(plan) == 6
    for rep in labels:
        assert len(rep) == len(units) and set(rep) == units
    assert len({tuple(rep) for rep in labels}) > 1  # shuffled afresh, not one order repeated
    assert session.plan(configs, variants, reps=6, seed=1) == plan  # the seed reproduces it
    assert session.plan(configs, variants, reps=6, seed=2) != plan


@pytest.mark.parametrize("signum,raised", [(signal.SIGTERM, session.Interrupted),
                                           (signal.SIGHUP, session.Interrupted),
                                           (signal.SIGINT, KeyboardInterrupt)])
def test_a_signal_while_a_run_is_recorded_takes_effect_after_it(signum, raised):
    previous = {s: signal.signal(s, session._on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.default_int_handler)
    steps = []
    try:
        with pytest.raises(raised) as caught:
            with session.signals_held():
                steps.append("log")
                os.kill(os.getpid(), signum)
                time.sleep(0.05)  # the handler would run here, between the two
                steps.append("session")
            steps.append("after")  # not reached: the signal is raised as the block ends
        # The session's handlers are back in place.
        assert signal.getsignal(signal.SIGTERM) is session._on_signal
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    assert steps == ["log", "session"]
    if raised is session.Interrupted:
        assert caught.value.signum == signum


def test_without_a_signal_nothing_is_raised():
    with session.signals_held():
        pass
