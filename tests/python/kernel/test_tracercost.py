"""The blk tracer's own cost, measured from the calibration's traced and
untraced one-process runs and taken back from the times read from traces
(iolab.kernel.tracercost)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iolab.kernel import calibration, queueruns, tracercost

from .emulogs import calibration_boot


def _event(t_s: float, comm: str, act: str, sector: int) -> str:
    return f" {comm:>24} [000] d..1. {t_s:12.6f}: 254,0    {act}  RS {sector} + 8 [x]"


def _message(t_s: float, comm: str, text: str) -> str:
    return f" {comm:>24} [000] d..1. {t_s:12.6f}: 254,0   1,0  m   N {text}"


def test_two_kinds_of_line_are_fitted_where_some_pairs_write_messages():
    """Block events at 60 µs and messages at 160 µs: five block events a
    request without messages (the module's one-process runs), five and 12
    messages (bfq's), recovered exactly; with one kind only, one cost."""
    pairs = [(5 * 60.0, {"block": 5.0, "message": 0.0}), (4 * 60.0, {"block": 4.0, "message": 0.0}),
             (5 * 60.0 + 12 * 160.0, {"block": 5.0, "message": 12.0}),
             (5 * 60.0 + 13 * 160.0, {"block": 5.0, "message": 13.0})]
    fit = tracercost.fit_costs(pairs)
    assert fit["block_us"] == pytest.approx(60.0) and fit["message_us"] == pytest.approx(160.0)
    assert not fit["message_assumed"] and fit["n"] == 4
    one = tracercost.fit_costs([(250.0, {"block": 5.0, "message": 0.0}), (350.0, {"block": 5.0, "message": 0.0})])
    assert one["block_us"] == one["message_us"] == pytest.approx(60.0) and one["message_assumed"]
    # noise that makes the traced run faster is not a negative cost; no pairs, nothing taken back
    assert tracercost.fit_costs([(-100.0, {"block": 5.0, "message": 0.0})])["block_us"] == 0.0
    assert tracercost.fit_costs([(math.nan, {"block": 5.0, "message": 0.0})])["block_us"] == 0.0


def test_a_window_loses_the_lines_written_while_its_process_could_run(tmp_path):
    """A process's completion at 0, its think time 1,000 µs, its next
    insertion at 1,500 µs: its own completion line and the two lines written
    after it woke count, the one written while it slept does not, nor the
    insertion that ends the window."""
    lines = [_event(10.000000, "<idle>-0", "C", 100),
             _event(10.000400, "kworker/0:1H-39", "D", 900),    # while it sleeps
             _message(10.001100, "kworker/0:1H-39", "as start"),  # after it woke
             _event(10.001200, "fio-201", "Q", 108),
             _event(10.001500, "fio-201", "I", 108)]
    f = tmp_path / "t.trace"
    f.write_text("# tracer: nop\n" + "\n".join(lines) + "\n")
    times = tracercost.line_times_us(f)
    assert len(times["block"]) == 4 and len(times["message"]) == 1
    back = tracercost.TakeBack(times, {"block_us": 50.0, "message_us": 150.0})
    start, end = 10.0e6, 10.0015e6
    assert back.lines("block", start, end, 1_000.0) == 2 and back.lines("message", start, end, 1_000.0) == 1
    assert back.window(start, end, 1_000.0) == pytest.approx(1_500.0 - 2 * 50.0 - 150.0)
    # without a think time every line in the window counts
    assert back.window(start, end) == pytest.approx(1_500.0 - 3 * 50.0 - 150.0)
    # a think time longer than the window: only the opening line is the process's
    assert back.lines("block", start, end, 5_000.0) == 1
    assert tracercost.lines_per_request(f) == {"block": 4.0, "message": 1.0}
    # nothing measured: nothing taken back
    assert tracercost.TakeBack(times, {}).window(start, end) == pytest.approx(1_500.0)


def test_queue_run_delays_lose_the_tracers_lines_within_them(tmp_path):
    """An insertion on an idle device issued 550 µs later, a message of
    the worker's own between: 550 less the insertion's line and the
    message, not the issue's line that ends it."""
    lines = [_event(1.000000, "fio-128", "I", 100), _message(1.000300, "fio-128", "wpcas as st 0"),
             _event(1.000550, "kworker/0:1H-39", "D", 100)]
    f = tmp_path / "q.trace"
    f.write_text("\n".join(lines) + "\n")
    back = tracercost.TakeBack(tracercost.line_times_us(f), {"block_us": 40.0, "message_us": 100.0})
    assert queueruns.queue_run_delays_us(f)["insert"] == pytest.approx([550.0])
    assert queueruns.queue_run_delays_us(f, take_back=back)["insert"] == pytest.approx([550.0 - 40.0 - 100.0])


def test_the_calibration_measures_the_cost_and_takes_it_back(tmp_path):
    """zlt0 under anticipatory: untraced, 2,000 µs between a reply and the
    next request at the disk; traced, 2,240 µs, and its trace writes three
    block events a request (C, Q, D): 80 µs a line. The guest's C→Q gap of
    900 µs holds one of them (the completion's; the queueing ends it), so
    the think extra is 820 µs, and the charge to every request grows by the
    same 80 µs: one process's total is unchanged."""
    d = tmp_path / "cal"
    calibration_boot(d, [("zlt0", "anticipatory", [2_000_000] * 40, None),
                         ("zlaio8", "anticipatory", [200_000] * 40, None),
                         ("zlt0", "anticipatory", [2_240_000] * 40, [900] * 40)])
    host = calibration.measure_host(d)["anticipatory"]
    t = host["tracer"]
    assert t["pairs"]["anticipatory"]["0"]["lines_per_request"] == {"block": 3.0, "message": 0.0}
    assert t["block_us"] == pytest.approx(80.0) and t["message_assumed"] and t["taken_back"]
    g = host["think_guest_us"]["0"]
    assert np.mean(g) == pytest.approx(900.0 - 80.0)
    assert host["guest_device_us"]["mean"] == pytest.approx(2_000.0 - 820.0)
    kept = calibration.measure_host(d, take_back=False)["anticipatory"]
    assert np.mean(kept["think_guest_us"]["0"]) == pytest.approx(900.0)
    assert not kept["tracer"]["taken_back"] and kept["tracer"]["block_us"] == pytest.approx(80.0)
    # only the elevators asked for
    assert calibration.measure_host(d, elevators=["wpcas"]) == {}


def test_the_report_gives_the_fit_and_every_pair():
    from iolab.kernel.compare import tracer_cost_table

    tracer = {"block_us": 59.6, "message_us": 161.2, "n": 2, "message_assumed": False, "residual_sd_us": 91.0,
              "taken_back": True,
              "pairs": {"anticipatory": {"0": {"extra_us": 278.0}}, "bfq": {"1": {"extra_us": 2107.0}}}}
    meta = {"disks": ["modern7200"], "host_by_disk": {"modern7200": {"anticipatory": {"tracer": tracer}}}}
    row = [x for x in tracer_cost_table(meta) if x.startswith("| modern7200")]
    assert row == ["| modern7200 | 2 | 59.6 | 161.2 | 91 | taken back | anticipatory 0 ms +278; bfq 1 ms +2107 |"]
    kept = {**tracer, "taken_back": False, "message_assumed": True}
    meta["host_by_disk"]["modern7200"]["anticipatory"]["tracer"] = kept
    assert "(as a block event) | 91 | kept |" in tracer_cost_table(meta)[-2]
    assert tracer_cost_table({"disks": ["hp97560"], "host_by_disk": {"hp97560": {"wpcas": {}}}}) == []
