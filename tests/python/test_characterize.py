"""Tests of ``iolab characterize`` (python/iolab/characterize/): the NBD
client, refusing what it cannot read, and the proof on an emulated HP 97560
whose every parameter is known (docs/characterize.md).

The proof serves the model with ``iolab emu`` (the native emulator, on a
Unix socket of its own, read-only), characterizes it over NBD in under a
minute, checks the extraction against the model's own figures with the
goals of issue 29, and loads the written model into the simulator.
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading

import pytest

from iolab.characterize.device import DeviceError, open_device
from iolab.characterize.nbd import NbdError, parse_url
from iolab.cli import main


def test_nbd_addresses_are_parsed_or_refused_by_name():
    assert parse_url("nbd://127.0.0.1:10809") == ("tcp", ("127.0.0.1", 10809))
    assert parse_url("nbd://localhost") == ("tcp", ("localhost", 10809))
    assert parse_url("nbd+unix:///?socket=/tmp/x.sock") == ("unix", "/tmp/x.sock")
    for bad in ("nbd://", "nbd+unix:///", "http://x", "nbd://h:99999"):
        with pytest.raises(NbdError, match="nbd|NBD|port|socket|host"):
            parse_url(bad)


def test_a_server_that_is_not_nbd_is_named(tmp_path):
    path = tmp_path / "s.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)

    def serve() -> None:
        c, _ = srv.accept()
        c.sendall(b"HTTP/1.1 400 Bad\r\n\r\n")
        c.close()

    threading.Thread(target=serve, daemon=True).start()
    with pytest.raises(DeviceError, match="not an NBD server"):
        open_device(f"nbd+unix:///?socket={path}")
    srv.close()


def test_bad_devices_are_one_line_errors(tmp_path, capsys):
    cases = [
        (str(tmp_path / "missing.img"), "No such file"),
        (str(tmp_path), "neither a block device"),
        (f"nbd+unix:///?socket={tmp_path}/none.sock", "No such file|refused"),
    ]
    small = tmp_path / "small.img"
    small.write_bytes(b"\0" * 4096)
    cases.append((str(small), "too small"))
    for dev, expect in cases:
        assert main(["characterize", dev, "-o", str(tmp_path / "m"), "-q"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("iolab: error:"), err
        assert re.search(expect, err), err


@pytest.mark.parametrize("args, expect", [
    (["--budget", "0"], "--budget"),
    (["--budget", "nan"], "--budget"),
    (["--budget", "1e300"], "at most 1440 minutes"),
    (["-o", "/nonexistent-dir/m"], "does not exist"),
])
def test_bad_options_are_one_line(tmp_path, capsys, args, expect):
    img = tmp_path / "d.img"
    img.write_bytes(b"\0" * (1 << 20))
    with pytest.raises(SystemExit) if args[0] == "--budget" and args[1] in ("0", "nan") else _nothing():
        code = main(["characterize", str(img), "-q", *args])
        assert code == 2
    err = capsys.readouterr().err
    assert expect in err.strip().splitlines()[-1], err  # argparse's usage line, then the error


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_an_unreadable_device_is_refused_not_opened_for_writing(tmp_path, capsys):
    img = tmp_path / "d.img"
    img.write_bytes(b"\0" * (1 << 20))
    img.chmod(0o200)  # write-only: characterize must not fall back to it
    if os.geteuid() == 0:
        pytest.skip("root reads any file; the read-only open is checked by the next line's code path instead")
    assert main(["characterize", str(img), "-q"]) == 2
    assert "cannot open it read-only" in capsys.readouterr().err


def test_hp97560_on_the_emulator_is_extracted_within_the_goals(tmp_path):
    """The smallest proof of docs/characterize.md: hp97560 in --quick mode,
    a one-minute budget (about 35 s here)."""
    from iolab.characterize.model import write_model
    from iolab.characterize.prove import deciles, prove

    res, tr, rows = prove("hp97560", 1.0, True, None)
    by = {r[0]: r for r in rows}
    assert res.rotating
    for q in ("rotation", "zones", "sectors per track", "surfaces", "cylinders", "command overhead (read miss)"):
        assert by[q][5], by[q]
    tenths = {f"seek {d} cyl" for d in deciles(1962)}
    rows_at = [r for r in rows if r[0] in tenths]
    assert len(rows_at) == 10
    # One tenth of the stroke may miss on a loaded host (a late reply that
    # misleads a threshold); every other is within 5%.
    assert sum(1 for r in rows_at if r[5]) >= 9, [r for r in rows_at if not r[5]]
    assert res.cache is not None and res.cache.segments == 2 and res.cache.read_ahead is not None
    files = write_model(res, tmp_path / "hp", "test")
    toml = tmp_path / "hp.toml"
    assert toml in files
    # The simulator builds the disk from it, with the extracted geometry.
    from iolab._iolab import disk_report
    from iolab.diskfile import load_disk

    report = "\n".join(disk_report(json.dumps(load_disk(str(toml))), str(tmp_path)))
    assert "1962 cylinders x 19 surfaces, 1 zone(s)" in report, report


def test_compare_takes_a_disk_toml(tmp_path, capsys):
    (tmp_path / "d.toml").write_text('[disk]\npreset = "hp97560"\n')
    assert main(["compare", "--disk", str(tmp_path / "d.toml"), "--seeds", "1", "--max-requests", "200",
                 "--schedulers", "noop", "-q"]) == 0
    (tmp_path / "bad.toml").write_text("[disk]\nqueue_depth = 1\n")
    assert main(["compare", "--disk", str(tmp_path / "bad.toml"), "-q"]) == 2
    assert "exactly one of `preset` and `diskspecs`" in capsys.readouterr().err


def test_the_cylinder_period_survives_a_boundary_the_noise_moved():
    """A track boundary whose skew the timing noise moved looks like a
    cylinder switch off the period's lattice; a divisor of the period
    predicts switches that are not there (switch_period)."""
    from iolab.characterize.geometry import switch_period

    assert switch_period([0, 19, 38])[:2] == (19, 3)
    assert switch_period([0, 7, 19, 38])[0] == 19  # 7: a moved track boundary
    assert switch_period([0, 12, 31, 50])[0] == 19 and switch_period([0, 12, 31, 50])[3] == 12
    assert switch_period([0, 4, 8])[0] == 4  # not 2
    assert switch_period([0, 38, 57])[0] == 19  # one switch missed: not 57
    h, score, other, _ = switch_period([0, 7, 19])  # two of three: undecided
    assert score == other
