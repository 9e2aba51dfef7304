"""Tests of iolab.fastqueue (python/iolab/fastqueue.py) and `iolab queue`."""

from __future__ import annotations

import glob
import json
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
    # The same process: said so (issue 26; it said "locked by another process").
    assert isinstance(e.value, OSError) and "already open in this process" in str(e.value)
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
        assert err.count("\n") == 1 and "already open in this process" in err


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
    argv += ["--seconds", "0.05", "--max-mib", "1", "--peers", "fastqueue,file-per-message,device,fio"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    for peer in ("fastqueue", "file-per-message", "device", "fio"):
        assert peer in out
    # The fio row comes first in its group: the later rows show their share.
    fq = next(line for line in out.splitlines() if " fastqueue " in line and not line.startswith("#"))
    assert fq.rstrip().endswith("%"), fq
    assert "sync p50" in out and "load" in out
    # Each store's read-back is shown twice: warm (its own row) and, in a
    # row of its own under it, after its files left the page cache.
    lines = out.splitlines()
    for peer in ("fastqueue", "file-per-message"):
        i = next(i for i, line in enumerate(lines) if line.split()[2:3] == [peer])
        cold = lines[i + 1].split()
        assert cold[2:4] == ["cold", "read"] and float(cold[8]) > 0, lines[i + 1]
    assert main(["queue", "bench", "--peers", "nosuch"]) == 2
    # By default FastQueue reads without a copy, the baseline its best way.
    assert "# read API (mapped): fastqueue without a copy" in out


@pytest.mark.parametrize("api", ["batch", "vec"])
def test_cli_bench_read_api(tmp_path: Path, capsys: pytest.CaptureFixture[str], api: str) -> None:
    argv = ["queue", "bench", "--dir", str(tmp_path), "--sizes", "4096", "--producers", "2", "--read-api", api]
    argv += ["--seconds", "0.05", "--max-mib", "1", "--peers", "fastqueue,file-per-message", "--json", str(tmp_path / "r.json")]
    assert main(argv) == 0
    assert f"# read API ({api}):" in capsys.readouterr().out
    rows = json.loads((tmp_path / "r.json").read_text())["results"]
    read = {r["peer"]: r["read_api"] for r in rows if r.get("peer") in ("fastqueue", "file-per-message")}
    assert read == {"fastqueue": api, "file-per-message": api}
    with pytest.raises(SystemExit) as e:
        main(["queue", "bench", "--read-api", "nosuch"])
    assert e.value.code == 2 and "invalid choice: 'nosuch'" in capsys.readouterr().err


def test_bench_goals_name_the_read_api() -> None:
    from iolab.cli.queue import _goals

    def row(peer: str, api: str) -> dict:
        return {"peer": peer, "size": 65536, "producers": 1, "read_msgs_per_s": 10.0, "read_api": api}

    (warm,) = _goals([row("file-per-message", "batch"), row("fastqueue", "mapped")], 0.001)
    assert "1 producers, fastqueue without a copy against the baseline's best read: 10 vs 10" in warm, warm


def test_bench_goals_judge_warm_and_cold_reads_separately() -> None:
    from iolab.cli.queue import _goals

    def row(peer: str, warm: float, cold: float) -> dict:
        return {"peer": peer, "size": 65536, "producers": 4, "read_msgs_per_s": warm, "cold_read_msgs_per_s": cold}

    goals = _goals([row("file-per-message", 1000.0, 100.0), row("fastqueue", 5000.0, 2500.0)], 0.001)
    warm = next(g for g in goals if "(warm)" in g)
    cold = next(g for g in goals if "(cold" in g)
    assert "5.0x" in warm and warm.endswith("NOT met"), warm
    assert "25.0x" in cold and cold.endswith(": met"), cold


def test_file_per_message_baseline(tmp_path: Path) -> None:
    with FilePerMessageQueue(tmp_path) as q:
        ids = [q.enqueue(b"%d" % i) for i in range(5)]
        m = q.dequeue()
        assert m is not None and m.id == ids[0] and m.payload == b"0"
        q.ack(m.id)
    with FilePerMessageQueue(tmp_path) as q:
        assert [m.id for m in q.dequeue_batch(10)] == ids[1:]


# --- issue 11, part 4: the queue used by a hostile user -------------------

ISSUE = dict(segment_size=65536, batch_delay=0.0)


def _issue_queue(path: Path) -> list[int]:
    """The issue's queue: 200 messages of 1,000 bytes, 64 KiB segments."""
    with FastQueue(path, **ISSUE) as q:
        return [q.enqueue(bytes([i % 251]) * 1000) for i in range(200)]


def _seg(path: Path, n: int) -> Path:
    return path / f"seg-{n:016x}.fq"


def _ids(path: Path) -> set[int]:
    with FastQueue(path, **ISSUE) as q:
        return {m.id for m in q.dequeue_batch(1000)}


def test_cli_repair_of_a_segment_cut_to_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _issue_queue(tmp_path)
    os.truncate(_seg(tmp_path, 2), 0)
    assert main(["queue", "check", str(tmp_path)]) == 1
    assert main(["queue", "repair", "--yes", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "message ids 58 to 114" in out and "Traceback" not in out
    # A second repair has nothing to do; the queue opens with the rest.
    assert main(["queue", "repair", "--yes", str(tmp_path)]) == 0
    assert "no problem to repair" in capsys.readouterr().out
    assert main(["queue", "check", str(tmp_path)]) == 0
    assert _ids(tmp_path) == set(ids[:57] + ids[114:])


def test_cli_check_fails_on_a_cut_tail_and_a_deleted_segment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _issue_queue(a)
    os.truncate(_seg(a, 4), 32768)
    assert main(["queue", "check", str(a)]) == 1
    out = capsys.readouterr().out
    assert "cut short" in out and "records were lost" in out and "\nok" not in out
    _issue_queue(b)
    os.remove(_seg(b, 2))
    assert main(["queue", "check", str(b)]) == 1
    out = capsys.readouterr().out
    assert "missing" in out and "message ids 58 to 114" in out


def test_cli_repair_of_swapped_names_keeps_every_message(tmp_path: Path) -> None:
    ids = _issue_queue(tmp_path)
    os.rename(_seg(tmp_path, 2), tmp_path / "x")
    os.rename(_seg(tmp_path, 3), _seg(tmp_path, 2))
    os.rename(tmp_path / "x", _seg(tmp_path, 3))
    assert main(["queue", "repair", "--yes", str(tmp_path)]) == 0
    assert not glob.glob(str(tmp_path / "quarantine-*"))
    assert _ids(tmp_path) == set(ids)


def test_a_segment_file_of_the_wrong_size_is_a_clear_error(tmp_path: Path) -> None:
    _issue_queue(tmp_path)
    os.truncate(_seg(tmp_path, 1), 100_000)
    with pytest.raises(QueueCorruptError, match="100000 bytes but its header says 65536"):
        FastQueue(tmp_path, **ISSUE)


def test_ack_and_nack_agree_on_a_never_dequeued_id(tmp_path: Path) -> None:
    with FastQueue(tmp_path, **SMALL) as q:
        mid = q.enqueue(b"waiting")
        for call in (q.ack, q.nack):
            with pytest.raises(ValueError, match="was not delivered"):
                call(mid)
        assert len(q) == 1 and q.stats()["ready"] == 1
        m = q.dequeue()
        assert m is not None and q.nack(m.id) == "retry"


def test_visibility_timeout(tmp_path: Path) -> None:
    with FastQueue(tmp_path, visibility_timeout=0.05, **SMALL) as q:
        mid = q.enqueue(b"slow")
        first = q.dequeue()
        assert first is not None and first.id == mid
        again = q.dequeue(timeout=10)
        assert again is not None and (again.id, again.attempts) == (mid, 1)
        q.extend_visibility(mid, 60)
        assert q.dequeue(timeout=0.2) is None
        q.ack(mid)
        assert q.stats()["expired"] == 1
        # Per call: 0 turns the timeout off for that delivery.
        q.enqueue(b"x")
        assert q.dequeue(visibility=0) is not None
        assert q.dequeue(timeout=0.2) is None
    with pytest.raises(ValueError, match="visibility_timeout"):
        FastQueue(tmp_path, visibility_timeout=-1.0)


def test_enqueue_in_a_fork_child_fails_clearly(tmp_path: Path) -> None:
    import signal
    import time

    q = FastQueue(tmp_path, **SMALL)
    q.enqueue(b"parent")
    pid = os.fork()
    if pid == 0:  # the child: must not hang, must say why
        code = 1
        try:
            q.enqueue(b"child")
        except QueueError as e:
            code = 3 if "fork() child" in str(e) else 2
        except BaseException:
            code = 4
        os._exit(code)
    deadline = time.monotonic() + 20
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("enqueue in a fork() child hung")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 3
    # The parent's queue still works.
    q.enqueue(b"parent again")
    assert len(q) == 2
    q.close()


def test_enqueue_into_a_deleted_directory_fails(tmp_path: Path) -> None:
    import shutil

    # No spare segments: the background allocator would race with rmtree.
    q = FastQueue(tmp_path / "q", spare_segments=0, **SMALL)
    q.enqueue(b"before")
    shutil.rmtree(tmp_path / "q")
    with pytest.raises(QueueError, match="deleted while the queue was open"):
        q.enqueue(b"after")
    # The queue stopped: close says why.
    with pytest.raises(QueueError, match="deleted"):
        q.close()


def test_bad_arguments_are_clear_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="empty path"):
        FastQueue("")
    assert os.listdir(tmp_path) == []
    with pytest.raises(ValueError, match="spare_segments"):
        FastQueue(tmp_path / "q", spare_segments=10**9)
    with pytest.raises(ValueError, match="segment_size"):
        FastQueue(tmp_path / "q", segment_size=-1)
    with pytest.raises(ValueError, match="spare_segments"):
        FastQueue(tmp_path / "q", spare_segments=10**30)
    with FastQueue(tmp_path / "q", **SMALL) as q:
        with pytest.raises(ValueError, match="count"):
            q.reserve_segments(10**12)
        with pytest.raises(ValueError, match="count"):
            q.reserve_segments(-5)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--seconds", "nan"], "--seconds"),
        (["--seconds", "inf"], "--seconds"),
        (["--seconds", "-1"], "--seconds"),
        (["--sizes", "999999999999"], "--sizes"),
        (["--producers", "100000"], "--producers"),
        (["--max-mib", "99999999999"], "--max-mib"),
        (["--batch-delay", "nan"], "--batch-delay"),
        (["--recovery-mib", "-3"], "--recovery-mib"),
    ],
)
def test_cli_bench_refuses_absurd_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["queue", "bench", "--dir", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
    assert os.listdir(tmp_path) == []


def test_native_bench_refuses_absurd_cases(tmp_path: Path) -> None:
    from iolab import _iolab

    with pytest.raises(ValueError, match="seconds"):
        _iolab.fastqueue_bench("fastqueue", 256, 1, float("nan"), 1 << 20, str(tmp_path), 0.001)
    with pytest.raises(ValueError, match="size"):
        _iolab.fastqueue_bench("fastqueue", 999999999999, 1, 1.0, 1 << 20, str(tmp_path), 0.001)
    with pytest.raises(ValueError, match="producers"):
        _iolab.fastqueue_bench("fastqueue", 256, 100000, 1.0, 1 << 20, str(tmp_path), 0.001)


def _read_only_bind(src: Path, dst: Path) -> bool:
    """A read-only bind mount of ``src`` at ``dst`` (root only)."""
    import subprocess

    dst.mkdir()
    if os.geteuid() != 0:
        return False
    ok = subprocess.run(["mount", "--bind", str(src), str(dst)], capture_output=True).returncode == 0
    if ok and subprocess.run(["mount", "-o", "remount,bind,ro", str(dst)], capture_output=True).returncode != 0:
        subprocess.run(["umount", str(dst)])
        ok = False
    return ok


def test_check_on_a_read_only_file_system(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess

    src, ro = tmp_path / "q", tmp_path / "ro"
    with FastQueue(src, **SMALL) as q:
        for i in range(30):
            q.enqueue(b"m%d" % i)
    os.remove(src / "LOCK")
    if not _read_only_bind(src, ro):
        if os.environ.get("CI"):
            pytest.fail("needs root to mount a read-only bind mount (CI runs as root)")
        pytest.skip("needs root (a read-only bind mount)")
    try:
        with pytest.raises(OSError):
            (ro / "probe").write_text("x")
        assert main(["queue", "check", str(ro)]) == 0
        out = capsys.readouterr().out
        assert "30 live messages" in out and out.rstrip().endswith("ok")
    finally:
        subprocess.run(["umount", str(ro)], check=True)


def test_r26_a_lone_nack_after_a_busy_round_returns(tmp_path: Path) -> None:
    """Issue 26, defect 1: 16 producers' round syncing while a nack's round
    closes, then a lone nack; it blocked until an unrelated enqueue (5 of 10
    trials hung before the fix)."""
    for trial in range(5):
        with FastQueue(tmp_path / str(trial), segment_size=1 << 20, spare_segments=0) as q:
            q.enqueue(b"m")
            m = q.dequeue()
            assert m is not None
            go = threading.Barrier(17)

            def producer(q: FastQueue = q, go: threading.Barrier = go) -> None:
                go.wait()
                q.enqueue(b"p" * 100)

            threads = [threading.Thread(target=producer) for _ in range(16)]
            for t in threads:
                t.start()
            go.wait()
            q.nack(m.id)
            for t in threads:
                t.join()
            assert m.id in [x.id for x in q.dequeue_batch(100)]
            done = threading.Event()
            lone = threading.Thread(target=lambda q=q, i=m.id, d=done: (q.nack(i), d.set()), daemon=True)
            lone.start()
            # A guard against a hang, not a measure of speed.
            returned = done.wait(30)
            if not returned:
                q.flush()  # releases it, so that the test ends
            assert returned, f"trial {trial}: a lone nack never returned"


def test_library_calls(tmp_path: Path) -> None:
    """enqueue_many, browse, delete, requeue_dead, iteration (issue 26)."""
    with FastQueue(tmp_path, max_attempts=1, **SMALL) as q:
        ids = q.enqueue_many([b"a", b"bb", b"ccc", b"dddd"])
        assert len(ids) == 4 and ids == sorted(ids)
        first = q.dequeue()
        assert first is not None and first.id == ids[0]
        assert q.nack(first.id) == "dead"
        listed = q.browse()
        assert [(m.id, m.size, m.state) for m in listed] == [
            (ids[0], 1, "dead"), (ids[1], 2, "ready"), (ids[2], 3, "ready"), (ids[3], 4, "ready")]
        q.delete([ids[1]])
        with pytest.raises(ValueError, match="not in the queue"):
            q.delete([ids[1]])
        assert q.requeue_dead() == [ids[0]]
        taken = [m.id for m in q]  # the requeued one first (retry), then the main queue
        assert taken == [ids[0], ids[2], ids[3]]
        assert [m.state for m in q.browse()] == ["in-flight"] * 3
        assert list(q) == []
        q.ack_many(taken)
        assert len(q) == 0 and q.stats()["deleted"] == 1


def test_a_second_open_in_one_process_says_so(tmp_path: Path) -> None:
    with FastQueue(tmp_path, **SMALL):
        with pytest.raises(QueueLockedError, match="already open in this process"):
            FastQueue(tmp_path, **SMALL)
        with pytest.raises(QueueLockedError, match="already open in this process"):
            check(tmp_path)
    with FastQueue(tmp_path, **SMALL):
        pass


def test_r27_bench_never_deletes_the_users_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`iolab queue bench --dir D` deleted D/recovery, D/fastqueue and
    D/file-per-message with the user's files in them. It now works in a new
    subdirectory of D of its own, and removes only that."""
    mine = {name: tmp_path / name / "notes.txt" for name in ("recovery", "fastqueue", "file-per-message", "probe")}
    for p in mine.values():
        p.parent.mkdir()
        p.write_text("mine")
    argv = ["queue", "bench", "--dir", str(tmp_path), "--sizes", "256", "--producers", "1", "--seconds", "0.05"]
    argv += ["--max-mib", "1", "--peers", "fastqueue,file-per-message", "--recovery-mib", "1"]
    assert main(argv) == 0
    assert "iolab-queue-bench-" in capsys.readouterr().out
    for p in mine.values():
        assert p.read_text() == "mine"
    assert sorted(os.listdir(tmp_path)) == sorted(mine), "the bench left its own directory behind"


def test_r27_native_bench_refuses_a_directory_with_files(tmp_path: Path) -> None:
    """The native entry points refuse a directory they did not make (they
    delete it afterwards)."""
    from iolab import _iolab

    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(QueueError, match="not empty"):
        _iolab.fastqueue_bench("fastqueue", 256, 1, 0.05, 1 << 20, str(tmp_path), 0.0)
    with pytest.raises(QueueError, match="not empty"):
        _iolab.fastqueue_recovery(str(tmp_path), 1 << 20)
    with pytest.raises(QueueError, match="not empty"):
        _iolab.fastqueue_sync_probe(str(tmp_path), 10)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "keep.txt")
    with pytest.raises(QueueError, match="not a directory"):
        _iolab.fastqueue_bench("fastqueue", 256, 1, 0.05, 1 << 20, str(link), 0.0)
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_dequeue_batch_into_reuses_one_buffer(tmp_path: Path) -> None:
    from iolab.fastqueue import MessageBatch

    with FastQueue(tmp_path, **SMALL) as q:
        ids = q.enqueue_many([b"x" * 10_000, b"small", b"y" * 20_000])
        batch = MessageBatch()
        assert q.dequeue_batch_into(batch, 2) == 2
        assert batch.ids() == ids[:2] and [bytes(m.payload) for m in batch] == [b"x" * 10_000, b"small"]
        buf = batch.buffer
        view = batch[1].payload
        with pytest.raises(BufferError, match="still viewed"):
            q.dequeue_batch_into(batch, 10)
        assert len(q.browse()) == 3 and q.stats()["in_flight"] == 2, "a refused refill takes nothing"
        del view
        assert q.dequeue_batch_into(batch, 10) == 1
        assert batch.buffer is buf and bytes(batch[0].payload) == b"y" * 20_000
        assert (batch[0].id, batch[0].attempts, batch[0].kind) == (ids[2], 0, "main")
        q.ack_many(ids)
        assert q.dequeue_batch_into(batch, 10, timeout=0.01) == 0 and len(batch) == 0
