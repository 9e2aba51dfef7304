"""Guests side by side (kernel.guest.run_side_by_side): results in order,
a failure raised once all have ended, and Ctrl-C or SIGTERM stopping every
boot still running (testbed.stop_all) with nothing left behind."""

import os
import signal
import subprocess
import threading
import time

import pytest

from iolab.kernel import guest, testbed


def _fake_boot(seconds: float):
    """A stand-in for testbed.boot: a process group registered as a live
    boot, as run.sh's is; returns its exit status."""
    proc = subprocess.Popen(["sleep", str(seconds)], start_new_session=True)
    with testbed._LIVE_LOCK:
        testbed._LIVE.add(proc)
    try:
        return proc.wait()
    finally:
        with testbed._LIVE_LOCK:
            testbed._LIVE.discard(proc)


def test_results_come_back_in_order():
    assert guest.run_side_by_side([lambda i=i: i * i for i in range(4)], "t") == [0, 1, 4, 9]


def test_a_failure_is_raised_after_every_boot_has_ended():
    ended = []

    def slow():
        time.sleep(0.5)
        ended.append("slow")
        return 1

    def bad():
        raise RuntimeError("boot 2 failed")

    with pytest.raises(RuntimeError, match="boot 2 failed"):
        guest.run_side_by_side([slow, bad], "t")
    assert ended == ["slow"]


def test_sigterm_stops_every_boot_and_leaves_no_process():
    pids = []

    def boot():
        proc_start = len(pids)
        t = threading.Thread(target=lambda: pids.append(_fake_boot(600)))
        t.start()
        t.join()
        return proc_start

    def kill_us():
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)
        return 0

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        guest.run_side_by_side([boot, boot, kill_us], "t")
    # both 600 s boots were stopped (SIGTERM: exit -15), well within the grace
    assert sorted(pids) == [-signal.SIGTERM, -signal.SIGTERM]
    assert time.monotonic() - started < testbed.STOP_GRACE_S
    assert not testbed._LIVE
    # SIGTERM's own handler is back
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_stop_kills_a_group_that_ignores_sigterm(monkeypatch):
    monkeypatch.setattr(testbed, "STOP_GRACE_S", 1)
    proc = subprocess.Popen(["bash", "-c", "trap '' TERM; sleep 600 & wait"], start_new_session=True)
    time.sleep(0.3)
    testbed._stop(proc)
    assert proc.returncode == -signal.SIGKILL
