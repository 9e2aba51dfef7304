"""The loop sandbox and the scratch file system."""

from __future__ import annotations

import pytest

from iolab.bench import sandbox
from iolab.cli.errors import UserError

from .conftest import MiB


@pytest.mark.parametrize("text,expected", [
    ("1G", 2**30), ("512M", 512 * MiB), ("1GiB", 2**30), ("64m", 64 * MiB), ("4096", 4096),
    ("1.5G", 3 * 2**29), ("2T", 2 * 2**40),
])
def test_parse_size(text, expected):
    assert sandbox.parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "G", "1X", "-1G", "one"])
def test_parse_size_refuses_nonsense(text):
    with pytest.raises(UserError, match="cannot read size"):
        sandbox.parse_size(text)


def test_sandbox_lifecycle_and_detach_checks_the_backing_file(loops, tmp_path):
    backing = tmp_path / "sandbox.img"
    sandbox.create_backing_file(backing, 32 * MiB)
    device = sandbox.attach(backing)
    loops.devices.append((device, backing))  # detached by the fixture if the test fails
    assert sandbox.loop_backing_file(device) == str(backing)
    assert not sandbox.detach(device, tmp_path / "other.img")  # not ours: left alone
    assert sandbox.loop_backing_file(device) == str(backing)
    assert sandbox.detach(device, backing)
    assert sandbox.loop_backing_file(device) is None


def test_backing_file_is_never_overwritten_and_size_is_checked(tmp_path):
    backing = tmp_path / "x.img"
    backing.write_bytes(b"keep")
    with pytest.raises(FileExistsError):
        sandbox.create_backing_file(backing, 32 * MiB)
    assert backing.read_bytes() == b"keep"
    with pytest.raises(UserError, match="at least"):
        sandbox.create_backing_file(tmp_path / "y.img", MiB)
    with pytest.raises(UserError, match="does not fit"):
        sandbox.create_backing_file(tmp_path / "z.img", 2**60)


def test_scratch_file_system(loops, tmp_path):
    device = loops.make(size=64 * MiB)
    mnt = tmp_path / "mnt"
    loops.mount_fs(device, mnt)
    assert sandbox.mounted_device(mnt) == device
    assert not sandbox.unmount("/dev/loop-nothing", mnt)  # a different source: left mounted
    assert sandbox.unmount(device, mnt)
    assert sandbox.mounted_device(mnt) is None and not mnt.exists()
