"""The session's plan: every repetition runs every unit once, in a fresh shuffled order."""

from __future__ import annotations

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
