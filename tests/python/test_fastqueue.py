"""Tests of iolab.fastqueue (python/iolab/fastqueue.py) and `iolab queue`."""

from __future__ import annotations

import glob
import os
import threading
from pathlib import Path

import pytest

from iolab.cli import main
from iolab.fastqueue import (
    FastQueue,
    FilePerMessageQueue,
    Message,
    QueueCorruptError,
    QueueError,
    QueueLockedError,
    check,
    repair,
)

SMALL = dict(segment_size=64 << 10, batch_delay=0.0)


def test_round_trip_and_reopen(tmp_path: Path) -> None:
    with FastQueue(tmp_path, **SMALL) as q:
        ids = [q.enqueue(b"m%d" % i) for i in range(50)]
        m = q.dequeue()
        assert isinstance(m, Message)
        assert (m.id, m.payload, m.attempts, m.kind) == (ids[0], b"m0", 0, "main")
        q.ack(m.id)
        batch = q.dequeue_batch(10)
        assert [x.id for x in batch] == ids[1:11]
        assert len(q) == 49
    # Delivered but not acknowledged: delivered again after the reopen.
    with FastQueue(tmp_path, **SMALL) as q:
        got = q.dequeue_batch(100)
        assert [x.id for x in got] == ids[1:]
        q.ack_many(x.id for x in got)
        assert len(q) == 0
        assert q.stats()["open_messages"] == 49


def test_nack_retry_and_dead_letter(tmp_path: Path) -> None:
    with FastQueue(tmp_path, max_attempts=2, **SMALL) as q:
        mid = q.enqueue(b"poison")
        assert q.dequeue().id == mid
        assert q.nack(mid, delay=0.0) == "retry"
        m = q.dequeue(timeout=5)
        assert (m.id, m.attempts, m.kind) == (mid, 1, "retry")
        assert q.nack(mid) == "dead"
        assert q.dequeue() is None
        dead = q.dequeue_dead(5)
        assert [(d.id, d.kind, d.attempts) for d in dead] == [(mid, "dead", 2)]
        q.ack(mid)


def test_threads_share_a_queue(tmp_path: Path) -> None:
    # A 2 ms timer so that the threads' messages share batches even on a
    # disk whose sync is nearly free.
    with FastQueue(tmp_path, segment_size=64 << 10, batch_delay=0.002) as q:
        out: list[int] = []
        lock = threading.Lock()

        def produce(t: int) -> None:
            for i in range(100):
                mid = q.enqueue(b"%d-%d" % (t, i))
                with lock:
                    out.append(mid)

        threads = [threading.Thread(target=produce, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(set(out)) == 800
        assert sorted(m.id for m in q.dequeue_batch(1000)) == sorted(out)
        assert q.stats()["rounds"] < 800


def test_errors_are_os_and_value_errors(tmp_path: Path) -> None:
    q = FastQueue(tmp_path, **SMALL)
    with pytest.raises(QueueLockedError) as e:
        FastQueue(tmp_path, **SMALL)
    assert isinstance(e.value, OSError) and "locked" in str(e.value)
    with pytest.raises(ValueError, match="not in the queue"):
        q.ack(424242)
    with pytest.raises(ValueError, match="larger than the maximum"):
        q.enqueue(b"x" * (64 << 10))
    q.close()
    with pytest.raises(QueueError, match="closed"):
        q.enqueue(b"late")
    with pytest.raises(ValueError, match="durability"):
        FastQueue(tmp_path, durability="maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="segment_size"):
        FastQueue(tmp_path, segment_size=1000)
    with pytest.raises(ValueError, match="batch_delay"):
        FastQueue(tmp_path, batch_delay=-1.0)
    # The lock was released by close().
    FastQueue(tmp_path, **SMALL).close()


def test_os_durability_mode(tmp_path: Path) -> None:
    with FastQueue(tmp_path, durability="os", **SMALL) as q:
        for i in range(20):
            q.enqueue(b"%d" % i)
        q.flush()
    with FastQueue(tmp_path, **SMALL) as q:
        assert len(q) == 20


def _damage(tmp_path: Path) -> str:
    with FastQueue(tmp_path, **SMALL) as q:
        for i in range(10):
            q.enqueue(b"payload-%d" % i * 20)
    seg = sorted(glob.glob(str(tmp_path / "seg-*.fq")))[0]
    with open(seg, "r+b") as f:
        f.seek(4096 + 100)
        b = f.read(1)
        f.seek(4096 + 100)
        f.write(bytes([b[0] ^ 0x01]))
    return seg


def test_bit_flip_is_reported_with_segment_and_offset(tmp_path: Path) -> None:
    seg = _damage(tmp_path)
    with pytest.raises(QueueCorruptError) as e:
        FastQueue(tmp_path, **SMALL)
    assert isinstance(e.value, ValueError)
    assert f"{seg}: offset 4096: payload checksum mismatch" in str(e.value)
    report = check(tmp_path)
    assert [p["offset"] for p in report["problems"]] == [4096]
    done = repair(tmp_path)
    assert len(done["mended"]) == 1 and os.path.exists(done["quarantined"][0])
    with FastQueue(tmp_path, **SMALL) as q:
        assert len(q) == 9


def test_cli_check_repair_stats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _damage(tmp_path)
    assert main(["queue", "check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "offset 4096" in out and "1 problem(s)" in out
    # Without a terminal, repair refuses unless told --yes.
    assert main(["queue", "repair", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("iolab: error:") and "--yes" in err and "Traceback" not in err
    assert main(["queue", "repair", "--yes", str(tmp_path)]) == 0
    assert "mended" in capsys.readouterr().out
    assert main(["queue", "check", str(tmp_path)]) == 0
    assert main(["queue", "stats", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "open_messages" in out and "9" in out


def test_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["queue", "check", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such queue directory" in err
    with FastQueue(tmp_path, **SMALL):
        assert main(["queue", "stats", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "locked" in err


def test_cli_refuses_a_directory_that_is_not_a_queue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("x")
    for action in ("check", "stats", "repair"):
        assert main(["queue", action, str(tmp_path)]) == 2
        assert "not a FastQueue directory" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]


def test_second_process_gets_a_clear_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from iolab.fastqueue import FastQueue, QueueLockedError\n"
        "try:\n"
        "    FastQueue(sys.argv[1])\n"
        "except QueueLockedError as e:\n"
        "    print(e)\n"
        "    sys.exit(3)\n"
    )
    with FastQueue(tmp_path, **SMALL):
        r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 3, r.stderr
    assert "locked by another process" in r.stdout


def test_cli_bench_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["queue", "bench", "--dir", str(tmp_path), "--sizes", "256", "--producers", "2"]
    argv += ["--seconds", "0.05", "--max-mib", "1", "--peers", "fastqueue,file-per-message,device"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    for peer in ("fastqueue", "file-per-message", "device"):
        assert peer in out
    assert main(["queue", "bench", "--peers", "nosuch"]) == 2


def test_file_per_message_baseline(tmp_path: Path) -> None:
    with FilePerMessageQueue(tmp_path) as q:
        ids = [q.enqueue(b"%d" % i) for i in range(5)]
        m = q.dequeue()
        assert m is not None and m.id == ids[0] and m.payload == b"0"
        q.ack(m.id)
    with FilePerMessageQueue(tmp_path) as q:
        assert [m.id for m in q.dequeue_batch(10)] == ids[1:]
