"""Reading, writing, snapshotting and restoring a queue in sysfs (on loop devices the test owns)."""

from __future__ import annotations


import pytest

from iolab.bench import sysfs
from iolab.cli.errors import UserError

from .conftest import MiB


def test_resolve_names_a_loop_device(loops):
    dev = sysfs.resolve(loops.make())
    assert dev.name.startswith("loop") and dev.sysdir.is_dir()
    names, active = sysfs.schedulers(dev)
    assert active in names and "mq-deadline" in names


def test_resolve_refuses_partitions_and_other_files(loops, tmp_path, monkeypatch):
    # This machine's kernel parses no partition tables on loop devices, so the
    # partition is a fake sysfs entry for a real device node.
    dev = sysfs.resolve(loops.make())
    fake = tmp_path / "sys-dev-block"
    part = fake / "loop-parent" / "loop-parent1"
    part.mkdir(parents=True)
    (part / "partition").write_text("1\n")
    (fake / dev.devno).symlink_to(part)
    monkeypatch.setattr(sysfs, "SYS_DEV_BLOCK", fake)
    with pytest.raises(UserError, match="is a partition of /dev/loop-parent"):
        sysfs.resolve(dev.path)
    monkeypatch.undo()
    with pytest.raises(UserError, match="not a block device"):
        sysfs.resolve("/dev/null")
    with pytest.raises(UserError, match="No such file"):
        sysfs.resolve(str(tmp_path / "nothing"))


def test_snapshot_and_restore_bring_back_every_setting(loops):
    dev = sysfs.resolve(loops.make())
    # An original state that is not the default one.
    sysfs.set_scheduler(dev, "mq-deadline")
    # In ms, stored in jiffies: 123 would read back as 124 at HZ=250; 100 is exact.
    assert sysfs.set_tunable(dev, "read_expire", "100") == "100"
    sysfs.set_queue_attr(dev, "nr_requests", "64")
    sysfs.set_queue_attr(dev, "read_ahead_kb", "512")
    original = sysfs.snapshot(dev)
    assert original.scheduler == "mq-deadline" and original.iosched["read_expire"] == "100"

    sysfs.set_scheduler(dev, "bfq")
    sysfs.set_tunable(dev, "slice_idle", "0")
    sysfs.set_queue_attr(dev, "read_ahead_kb", "128")
    assert sysfs.read_attr(dev, "wbt_lat_usec") == "0"  # BFQ turns writeback throttling off

    assert sysfs.restore(dev, original) == []
    assert sysfs.snapshot(dev) == original


def test_restore_reports_what_it_cannot_restore(loops):
    dev = sysfs.resolve(loops.make())
    state = sysfs.snapshot(dev)
    state.queue["nr_requests"] = "0"  # the kernel refuses 0
    problems = sysfs.restore(dev, state)
    assert problems and any("nr_requests" in p for p in problems)


def test_refusals_name_the_setting(loops):
    dev = sysfs.resolve(loops.make())
    sysfs.set_scheduler(dev, "kyber")
    with pytest.raises(sysfs.SysfsError, match="no tunable 'slice_idle'.*read_lat_nsec"):
        sysfs.set_tunable(dev, "slice_idle", "0")
    with pytest.raises(sysfs.SysfsError, match="scheduler"):
        sysfs.set_scheduler(dev, "cfq")
    with pytest.raises(sysfs.SysfsError, match="does not change queue/rotational"):
        sysfs.set_queue_attr(dev, "rotational", "0")


def test_settings_record_what_each_run_needs(loops):
    dev = sysfs.resolve(loops.make(size=16 * MiB))
    sysfs.set_scheduler(dev, "bfq")
    s = sysfs.settings(dev)
    for key in ("scheduler", "nr_requests", "rotational", "wbt_lat_usec", "iosched.slice_idle"):
        assert key in s
    facts = sysfs.describe(dev)
    assert facts["model"].startswith("loop over ") and facts["size_bytes"] == str(16 * MiB)
    assert facts["kernel"]
