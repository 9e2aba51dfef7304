"""Configurations: the --tunables grid, --config, and putting one in place."""

from __future__ import annotations

import pytest

from iolab.bench import configs, sysfs
from iolab.bench.configs import Config
from iolab.cli.errors import UserError

OFFERED = ["none", "mq-deadline", "kyber", "bfq"]


def test_grid_is_the_product_per_scheduler_times_queue_settings():
    grid = configs.parse_grid(["bfq.slice_idle=0,8", "bfq.low_latency=0,1", "queue.nr_requests=64,default"])
    out = configs.build(["mq-deadline", "bfq"], grid, [], OFFERED)
    labels = [c.label for c in out]
    assert len(out) == 2 + 4 * 2
    assert labels[:2] == ["mq-deadline nr_requests=64", "mq-deadline"]
    assert "bfq low_latency=0 slice_idle=0 nr_requests=64" in labels
    assert "bfq low_latency=1 slice_idle=8" in labels  # 'default' leaves nr_requests alone


def test_explicit_configs_with_labels_and_without_duplicates():
    seed = configs.parse_config("bfq-seed004=bfq:slice_idle=20,fifo_expire_async=150,"
                                "fifo_expire_sync=200,timeout_sync=160")
    assert seed.label == "bfq-seed004" and seed.scheduler == "bfq"
    assert dict(seed.tunables) == {"slice_idle": "20", "fifo_expire_async": "150",
                                   "fifo_expire_sync": "200", "timeout_sync": "160"}
    plain = configs.parse_config("bfq")
    same = configs.parse_config("bfq:slice_idle=default")
    out = configs.build([], {}, [plain, seed, same], OFFERED)
    assert [c.label for c in out] == ["bfq", "bfq-seed004"]
    q = configs.parse_config("none:queue.nr_requests=32")
    assert q.queue == (("nr_requests", "32"),) and q.label == "none nr_requests=32"


@pytest.mark.parametrize("items,message", [
    (["slice_idle=0"], "cannot read --tunables"),
    (["queue.scheduler=bfq"], "iolab changes only"),
    (["bfq.slice_idle=0", "bfq.slice_idle=8"], "twice"),
])
def test_grid_errors(items, message):
    with pytest.raises(UserError, match=message):
        configs.parse_grid(items)


@pytest.mark.parametrize("spec,message", [
    (":slice_idle=0", "cannot read --config"),
    ("=bfq", "cannot read --config"),
    ("bfq:slice_idle", "not NAME=VALUE"),
    ("bfq:queue.rotational=0", "iolab changes only"),
    ("bfq:../x=1", "bad tunable name"),
])
def test_config_errors(spec, message):
    with pytest.raises(UserError, match=message):
        configs.parse_config(spec)


def test_build_errors():
    with pytest.raises(UserError, match="not among the schedulers compared"):
        configs.build(["none"], configs.parse_grid(["bfq.slice_idle=0"]), [], OFFERED)
    with pytest.raises(UserError, match="does not offer scheduler 'cfq'"):
        configs.build(["cfq"], {}, [], OFFERED)
    with pytest.raises(UserError, match="labelled 'x'"):
        configs.build([], {}, [configs.parse_config("x=bfq"), configs.parse_config("x=kyber")], OFFERED)


def test_apply_starts_from_the_defaults_even_when_already_active(loops):
    dev = sysfs.resolve(loops.make())
    tuned = Config("bfq", (("slice_idle", "0"),))
    settings = configs.apply(dev, tuned, OFFERED)
    assert settings["scheduler"] == "bfq" and settings["iosched.slice_idle"] == "0"
    # bfq is active; applying plain bfq must not inherit slice_idle=0.
    settings = configs.apply(dev, Config("bfq"), OFFERED)
    assert settings["iosched.slice_idle"] == "8"


def test_apply_sets_queue_settings_after_the_switch_and_resets_others(loops):
    dev = sysfs.resolve(loops.make())
    original = sysfs.snapshot(dev).queue
    small = Config("mq-deadline", queue=(("nr_requests", "32"), ("read_ahead_kb", "64")))
    assert configs.apply(dev, small, OFFERED)["nr_requests"] == "32"
    reset = {"read_ahead_kb": original["read_ahead_kb"], "nr_requests": original["nr_requests"]}
    settings = configs.apply(dev, Config("mq-deadline"), OFFERED, reset)
    assert settings["read_ahead_kb"] == original["read_ahead_kb"]
    assert settings["nr_requests"] == "256"  # the switch's own default, not the 32 before


def test_a_refused_value_names_the_tunable(loops):
    dev = sysfs.resolve(loops.make())
    with pytest.raises(sysfs.SysfsError, match="iosched/low_latency"):
        configs.apply(dev, Config("bfq", (("low_latency", "maybe"),)), OFFERED)
