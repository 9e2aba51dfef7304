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


def _hp97560_goals_missed(rows) -> list:
    """The decisions a late reply can mislead: the rotation (when it is not
    found, compare() stops there and gives no layout rows), the zones and the
    surfaces. A row that is absent is missed."""
    by = {r[0]: r for r in rows}
    return [q for q in ("rotation", "zones", "surfaces") if q not in by or not by[q][5]]


def test_hp97560_on_the_emulator_is_extracted_within_the_goals(tmp_path):
    """The smallest proof of docs/characterize.md: hp97560 in --quick mode,
    a one-minute budget (about 35 s here). It times replies in the host's
    real time, so a late reply can mislead one decision: of 8 runs on an
    idle host here (2026-12-02) one counted 2 zones (a false last sample,
    since re-checked) and one 1 cache segment for 2. The proof is taken
    again once when the zones, surfaces or segments miss; every goal must
    then hold on the run kept."""
    from iolab.characterize.model import write_model
    from iolab.characterize.prove import deciles, prove

    res, tr, rows = prove("hp97560", 1.0, True, None)
    if _hp97560_goals_missed(rows) or res.cache is None or res.cache.segments != 2:
        res, tr, rows = prove("hp97560", 1.0, True, None)
    by = {r[0]: r for r in rows}
    assert res.rotating
    assert not _hp97560_goals_missed(rows), rows
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


def _virtual(disk: str, late=None):
    """``disk`` served by the emulator's own model on a virtual clock: no
    host noise (or the noise ``late`` gives), no real time."""
    from iolab._iolab import EmuModel
    from iolab.characterize.prove import _disk_json
    from iolab.characterize.virtual import VirtualDevice

    return VirtualDevice(EmuModel(_disk_json(disk)), "virtual:" + disk, late=late)


def test_the_dec_rz26_miss_overhead_spare_sector_and_cache_are_told_on_a_virtual_clock(tmp_path):
    """The DEC RZ26's read-miss overhead (1.489 ms) is above its hit
    overhead (1.229 ms), its tracks hold a spare sector (58, 57 LBNs), and
    its read-ahead stops at the track's end, in 9 read segments of 57
    sectors (data/disksim/dec_rz26.diskspecs). On the model itself, with no
    host noise, each is told; and the written .parv replays the drive's
    validation trace within the issue's 1.5x of the true model's demerit."""
    from iolab.characterize.model import write_model
    from iolab.characterize.run import characterize

    res = characterize(_virtual("data/disksim/dec_rz26.parv"), 600)
    assert res.rotating and res.layout is not None
    assert abs(res.overhead.value / 1.4890e6 - 1) < 0.01, res.overhead
    assert abs(res.hit_overhead.value / 1.2290e6 - 1) < 0.01, res.hit_overhead
    assert res.spares == 1 and res.layout.zones[0].spt == 57
    c = res.cache
    # The segment: the run of sectors held after a read of 112 sectors and
    # the read-ahead to its track's end; on this drive the run comes out a
    # few sectors longer than the 57 of a segment (60 here).
    assert c.to_track_end and c.read_ahead == 56 and c.segments == 9 and 57 <= c.segment_size <= 61, c
    seeks = dict(res.seeks)
    # DiskSim's table for this drive (dec_rz26_validate.seek): 2569 cylinders 19.10 ms.
    assert abs(seeks[2569].value / 19.099e6 - 1) < 0.01
    files = write_model(res, tmp_path / "dec", "test")
    parv = tmp_path / "dec.parv"
    assert parv in files
    out = {}
    for name, spec in (("extracted", parv), ("true", "data/disksim/dec_rz26.parv")):
        j = tmp_path / f"{name}.json"
        assert main(["validate", "--diskspecs", str(spec), "--trace", "data/disksim/dec_rz26.trace",
                     "--json", str(j)]) == 0
        out[name] = json.loads(j.read_text())
    assert "BUS1" in out["extracted"]["build"]["bus"]
    assert out["extracted"]["demerit_ms"] <= 1.5 * out["true"]["demerit_ms"], out


def test_late_replies_do_not_mislead_the_base_of_the_seeks():
    """With one read in twenty answered up to a millisecond late (the host
    sending late or seeing the reply late), the miss overhead, the median
    of five thresholds, stays within 2%, and the seek curve's tenths
    within 5%."""
    from iolab.characterize.prove import _interp
    from iolab.characterize.run import characterize

    res = characterize(_virtual("data/disksim/dec_rz26.parv", late=(0.05, 1_000_000, 3)), 600)
    assert abs(res.overhead.value / 1.4890e6 - 1) < 0.02, res.v0_samples
    # dec_rz26_validate.seek at 257, 771, 1284, 1798, 2312 cylinders (a
    # distance whose threshold did not hold is read off the line between
    # its measured neighbours, as the simulator does).
    for d, ms in ((257, 7.333), (771, 10.417), (1284, 13.010), (1798, 15.305), (2312, 17.631)):
        got = _interp(sorted(res.seeks), d)
        assert got is not None and abs(got[0] / (ms * 1e6) - 1) < 0.05, (d, got)


def test_a_retried_threshold_never_reads_a_pair_again():
    """A reference read again is a cache hit that leaves the arm where the
    last target put it (a seek of 0 ms passed its check so): every attempt
    of robust_threshold goes on to fresh pairs."""
    from iolab.characterize import seek

    class Flat:  # every pair answers alike: I0 never flips, no threshold holds
        def pair(self, a, b, delay_ns=0, count=1, count_b=None):
            return 5_000_000

    seen = []

    def pair_at(k, s):
        seen.append(k)
        return 1000 - k, 2000 - k

    t = seek.robust_threshold(Flat(), pair_at, 10e6, 8)
    assert not t.ok and len(seen) == len(set(seen)) == t.pairs


def test_a_seek_out_of_line_with_its_neighbours_is_suspected():
    from iolab.characterize.seek import suspects

    d = [1, 2, 3, 5, 8, 12]
    assert suspects([1.0, 1.3, 1.6, 2.2, 3.1, 4.3], d) == []  # on a smooth curve
    assert suspects([1.0, 1.3, 1.6, 0.7, 3.1, 4.3], d) == [2, 3, 4]  # misled low: it and its neighbours
    assert suspects([2.0, 2.1, 9.6, 2.3, 2.4, 2.5], d) == [1, 2, 3]  # misled high
    # The HP 97560 run's 20 cylinders, 12.9% high between 15 and 26.
    assert suspects([4.884, 5.679, 5.316], [15, 20, 26]) == [1]
    assert suspects([0.3, 2.0, 2.1]) == [0, 1]  # an end point under half its neighbour (and that one)


def test_a_cylinder_switch_the_scan_lost_does_not_double_the_period():
    """Switches seen at tracks 0 and 38 only: a boundary never found to the
    sector at 19 is no evidence against a period of 19 (a scan that goes on
    finds the third); one seen there with a track switch's skew is."""
    from iolab.characterize.geometry import switch_period

    everywhere = set(range(0, 40))
    assert switch_period([0, 38], everywhere)[0] == 38
    assert switch_period([0, 19, 38], everywhere)[:2] == (19, 3)
    # Observed lattice points only count against a period.
    assert switch_period([0, 12, 31, 50], everywhere - {69})[0] == 19


def test_the_ssd_page_read_is_told_from_latency_by_size():
    """The `ssd` preset on a virtual clock: the depth-1 latency line over
    small sizes has the page read (75 us, MQSim's) as its intercept above
    the host's floor; the emulator's one-at-a-time service shows no
    parallelism, and the fit says so."""
    from iolab.characterize.run import characterize

    dev = _virtual("ssd")
    res = characterize(dev, 600, quick=True)
    assert not res.rotating and res.ssd is not None
    # The model adds its channel and host transfer of 4 KiB on top of tR:
    # the line's intercept is tR itself.
    assert abs(res.ssd.read_ns / 75_000 - 1) < 0.05, res.ssd
    # 1/channel + 1/host: 333 MB/s and 1.6 GB/s (ssd.rs) = 3.628 ns per byte.
    assert abs(res.ssd.small_ns_per_byte / 3.628 - 1) < 0.05, res.ssd
    assert res.ssd.parallel_units is None and res.ssd.notes


def test_range_sparing_maps_lbns_to_the_cylinders_the_simulator_does():
    """The Seagate Barracuda keeps 88 spare sectors at the end of each
    range of 6 cylinders (data/disksim/barracuda.model, sparing scheme 8):
    the extracted layout with that scheme puts every LBN of its first zone
    (186 sectors per track, 5 surfaces) on the cylinder the simulator's own
    layout does, a slipped sector's neighbours aside."""
    from iolab._iolab import EmuModel
    from iolab.characterize.layout import build
    from iolab.characterize.prove import _disk_json

    dj = _disk_json("data/disksim/barracuda.parv")
    lay = build([(0, 186), (1032496, 185)], 5, 4110000, (0.0, 0.0), 60e9 / 7200, 0, (6, 88))
    assert lay.zones[0].last_cyl == 1127
    off = 0
    for x in range(0, 1032496, 9973):
        true_cyl = EmuModel(dj).charge("read", x * 512, 512, False, 0)[5]  # a seek from cylinder 0
        off += lay.cylinder_of(x) != true_cyl
    assert off <= 2, off
    # A range's last track is short: its first LBN and the next range's.
    assert lay.track_first(5491) == 5492 - 98 and lay.track_first(5492) == 5492


def _deciles_within(res, disk: str, goal: float = 0.05) -> list:
    """The seek table against the model's own at each tenth of the stroke
    the extracted layout spans: the ones off by more than ``goal``."""
    from iolab.characterize.prove import _interp, truth

    cyls = res.layout.full_cylinders()
    tenths = [max(1, round((cyls - 1) * q / 10)) for q in range(1, 11)]
    tr = truth(disk, [], tenths)
    off = []
    for d, ns in tr.seek_at.items():
        got = _interp(sorted(res.seeks), d)
        if got is None or abs(got[0] / ns - 1) > goal:
            off.append((d, ns, got))
    return off


def test_the_barracuda_layout_with_range_sparing_on_a_virtual_clock():
    """The Seagate Barracuda (data/disksim/barracuda.model): 11 zones, the
    first of 1128 cylinders, 88 spare sectors at the end of each range of 6
    cylinders, 3 cache segments of 281 sectors; a drive that finishes the
    sector it is reading ahead before it moves ("Stop prefetch in sector"
    0), which the host cannot tell: the miss overhead comes out up to a
    sector (47 us) high."""
    from iolab.characterize.run import characterize

    res = characterize(_virtual("data/disksim/barracuda.parv"), 600)
    assert res.ranges == (6, 88)
    assert len(res.layout.zones) == 11 and res.layout.zones[0].last_cyl == 1127
    c = res.cache
    # The segment: the longest read still held plus what was read ahead by
    # the re-read, which varies a few sectors with where the read lies.
    assert c.segments == 3 and abs(c.segment_size / 281 - 1) <= 0.02 and c.read_ahead == 281, c
    assert 0 <= res.overhead.value - 0.6131e6 <= 60_000, res.overhead
    # The tenths of the stroke it measures (its cylinders: LBNs' cylinders,
    # without those the drive leaves out between zones) within 5%.
    assert not _deciles_within(res, "data/disksim/barracuda.parv")


def test_the_read_watermark_is_told_from_misses_of_several_sectors():
    """HP drives disconnect and reconnect at a watermark: the C2247A at
    0.75 of the request, the C3323A at all of it; the C2490A does not wait
    (their .diskspecs' "High (read) water mark")."""
    from iolab.characterize.run import characterize

    for disk, w in (("hp_c2247a", 0.75), ("hp_c3323a", 1.0), ("hp_c2490a", None)):
        res = characterize(_virtual(f"data/disksim/{disk}.parv"), 600, quick=True)
        got = res.transfer.watermark
        assert (got is None) if w is None else (got is not None and abs(got - w) <= 0.05), (disk, res.transfer)


def test_long_seeks_across_zones_of_unlike_sectors_per_track_are_measured():
    """modern7200's seeks run past a revolution and cross zones whose
    sectors differ in time: each pair's target drifts against its reference
    by the difference, which the threshold corrects (before, no threshold
    beyond 290,000 tracks held). Its cylinders are tracks here (surfaces
    cannot be told apart), so the model's seek at 4 tracks a cylinder."""
    from iolab.characterize.prove import _interp, truth
    from iolab.characterize.run import characterize

    res = characterize(_virtual("modern7200"), 240)
    assert res.layout.heads == 1 and len(res.layout.zones) == 16
    tr = truth("modern7200", [], [72_677, 145_353, 218_030, 290_706])
    for cyl, ns in tr.seek_at.items():
        got = _interp(sorted(res.seeks), 4 * cyl)
        assert got is not None and abs(got[0] / ns - 1) <= 0.05, (cyl, ns, got)


def test_spare_cylinders_between_zones_are_told_by_the_move_across():
    """The HP C2247A keeps spare tracks at the end of each zone (sparing
    scheme 1): its first zone's 325 are 25 cylinders no LBN maps to, which
    the move across the boundary shows (the seek of 26 cylinders, not 1);
    with them in the layout the seek table's distances are the drive's."""
    from iolab.characterize.run import characterize

    res = characterize(_virtual("data/disksim/hp_c2247a.parv"), 600)
    z = res.layout.zones
    assert 23 <= z[1].first_cyl - z[0].last_cyl - 1 <= 27, [(x.first_cyl, x.last_cyl) for x in z]
    assert not _deciles_within(res, "data/disksim/hp_c2247a.parv")


def test_a_seek_table_is_inverted_and_relabelled_across_gaps():
    from iolab.characterize.probe import Figure
    from iolab.characterize.seek import distance_for, relabel

    table = [(1, 2.0e6), (2, 3.0e6), (10, 4.0e6), (26, 5.5e6)]
    assert distance_for(table, 5.0e6) == 10 + (1.0 / 1.5) * 16
    assert distance_for(table, 6.0e6) is None
    f1, f2 = Figure(2.0e6, 0, 1, "ns"), Figure(9.0e6, 0, 1, "ns")
    # Zones start at cylinders 0 and 100; 25 cylinders left out before the second.
    places = {id(f1): (40, 41), id(f2): (90, 190)}
    assert relabel([(1, f1), (100, f2)], places, {1: 25}, [0, 100]) == [(1, f1), (125, f2)]
