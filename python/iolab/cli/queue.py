"""``iolab queue``: FastQueue's benchmark, check, stats and repair."""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional

from iolab.cli.errors import UserError

SIZES = [256, 1024, 8192, 65536]
PRODUCERS = [1, 4, 16, 64]
PERSIST_QUEUE = "persist-queue"
FIO = "fio"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("queue", help="FastQueue: benchmark, check, stats, repair")
    qs = p.add_subparsers(dest="queue_command", metavar="ACTION")
    qs.required = True

    b = qs.add_parser("bench", help="compare FastQueue with its peers (prints a table)")
    b.add_argument(
        "--dir",
        help="directory on the disk to measure: the bench works in a new subdirectory of it, "
        "iolab-queue-bench-*, and removes only that (default: the current directory)",
    )
    b.add_argument("--sizes", default=",".join(map(str, SIZES)), help="message sizes in bytes")
    b.add_argument("--producers", default=",".join(map(str, PRODUCERS)), help="producer thread counts")
    b.add_argument("--peers", help="comma-separated peers (default: all)")
    b.add_argument("--seconds", type=float, default=1.0, help="seconds of writing per case (default 1)")
    b.add_argument("--max-mib", type=int, default=256, help="most MiB written per case (default 256)")
    b.add_argument("--batch-delay", type=float, default=0.001, help="FastQueue batch timer, seconds")
    b.add_argument("--recovery-mib", type=int, default=0, help="also time the open of a queue of this many MiB (0: no)")
    b.add_argument(
        "--read-api",
        choices=sorted(READ_APIS),
        default="mapped",
        help="how FastQueue and the file-per-message baseline read back (default mapped: "
        "FastQueue without a copy against the baseline's best read; batch: both into one reused buffer; "
        "vec: both into a fresh buffer per message)",
    )
    b.add_argument("--quick", action="store_true", help="a short run: 1 KiB messages, 1 and 16 producers, 0.5 s")
    b.add_argument("--json", help="also write the results to this JSON file")
    b.set_defaults(func=cmd_bench)

    c = qs.add_parser("check", help="read a queue and report problems (changes nothing)")
    c.add_argument("path")
    c.set_defaults(func=cmd_check)

    s = qs.add_parser("stats", help="open a queue and print its counters")
    s.add_argument("path")
    s.set_defaults(func=cmd_stats)

    r = qs.add_parser("repair", help="salvage a damaged queue (asks first)")
    r.add_argument("path")
    r.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    r.set_defaults(func=cmd_repair)


def _ints(text: str, what: str, limit: int) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--{what}: expected comma-separated integers, got '{text}'") from None
    if not values:
        raise UserError(f"--{what}: expected positive integers, got '{text}'")
    for v in values:
        if not 1 <= v <= limit:
            raise UserError(f"--{what}: {v} is not between 1 and {limit}")
    return values


def _number(value: float, what: str, low: float, high: float, low_open: bool = True) -> float:
    """``value`` if it is a finite number in (low, high] (or [low, high])."""
    ok = math.isfinite(value) and (value > low if low_open else value >= low) and value <= high
    if not ok:
        bound = "above" if low_open else "at least"
        raise UserError(f"--{what}: {value} is not a number {bound} {low:g} and at most {high:g}")
    return value


def _existing_queue(path: str) -> str:
    """``path`` if it holds a FastQueue (so that no command creates one by
    mistake in another directory)."""
    if not os.path.isdir(path):
        raise UserError(f"{path}: no such queue directory")
    names = os.listdir(path)
    if "MANIFEST" not in names and not any(n.startswith("seg-") and n.endswith(".fq") for n in names):
        raise UserError(f"{path}: not a FastQueue directory (no MANIFEST, no seg-*.fq segment files)")
    return path


def cmd_check(args: argparse.Namespace) -> int:
    from iolab.fastqueue import check

    r = check(_existing_queue(args.path))
    print(
        f"{args.path}: {r['segments']} segments ({r['free_segments']} free), "
        f"{r['live_messages']} live messages ({r['live_bytes']} bytes), "
        f"{r['deleted_records']} deleted records, {r['bytes_scanned']} bytes scanned"
    )
    if not r["manifest"]:
        print(
            "note: no MANIFEST (the queue was last opened by an older version): a deleted segment or a cut "
            "tail cannot be told from a recycled segment or the end of the log; the next open writes one"
        )
    elif not r["closed_cleanly"]:
        print(
            "note: the queue was not closed cleanly (its process was killed or crashed): records lost "
            "at the end of the newest segment cannot be told from a crash's unsynced end"
        )
    if r["torn_tail"]:
        print(f"torn tail (never acknowledged; dropped at the next open): {r['torn_tail']}")
    for p in r["problems"]:
        print(f"problem: {p['message']}")
    if r["problems"]:
        print(f"{len(r['problems'])} problem(s); `iolab queue repair {args.path}` can salvage the rest")
        return 1
    print("ok")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from iolab.fastqueue import FastQueue, QueueLockedError

    path = _existing_queue(args.path)
    try:
        q = FastQueue(path)
    except QueueLockedError as e:
        # A running `iolab mail serve` holds its queues; its control socket
        # sits beside them (docs/mail.md, "Queue commands").
        parent = Path(path).resolve().parent
        if (parent / "control").exists():
            raise UserError(f"{e}: a mail server runs on it; use iolab mail queue list --queue-dir {parent}") from None
        raise
    with q:
        s = q.stats()
    width = max(len(k) for k in s)
    for k, v in s.items():
        if isinstance(v, float):
            v = f"{v:.6f}"
        print(f"{k:<{width}}  {v}")
    return 0


def cmd_repair(args: argparse.Namespace) -> int:
    from iolab.fastqueue import check, repair

    path = _existing_queue(args.path)
    r = check(path)
    if not r["problems"]:
        print(f"{path}: no problem to repair")
        return 0
    for p in r["problems"]:
        print(f"problem: {p['message']}")
    if not args.yes:
        if not sys.stdin.isatty():
            raise UserError("repair needs confirmation: run it in a terminal or pass --yes")
        answer = input(
            f"Repair {len(r['problems'])} problem(s)? Damaged bytes are moved to quarantine files "
            "and every valid record is kept. [y/N] "
        )
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing changed")
            return 1
    done = repair(path)
    for p in done["mended"]:
        print(f"mended: {p['message']}")
    for q in done["quarantined"]:
        print(f"saved damaged bytes: {q}")
    return 0


def _persist_queue_case(size: int, producers: int, seconds: float, max_bytes: int, root: str) -> dict[str, Any]:
    """persist-queue's SQLiteQueue (commit per put), driven from Python threads."""
    import persistqueue  # type: ignore[import-untyped]

    path = os.path.join(root, "persist-queue")
    shutil.rmtree(path, ignore_errors=True)
    # Held in a list so that the connection can be dropped before the files
    # are removed (a `del q` left `q` unbound for the producers' closure).
    held = [persistqueue.SQLiteQueue(path, auto_commit=True, multithreading=True)]
    budget = max(1, max_bytes // size)
    payload = b"x" * size
    lock = threading.Lock()
    taken = [0]
    lats: list[list[float]] = [[] for _ in range(producers)]
    start = time.perf_counter()

    def producer(i: int) -> None:
        while True:
            with lock:
                if taken[0] >= budget or time.perf_counter() - start >= seconds:
                    return
                taken[0] += 1
            t0 = time.perf_counter()
            held[0].put(payload)
            lats[i].append(time.perf_counter() - t0)

    threads = [threading.Thread(target=producer, args=(i,)) for i in range(producers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.perf_counter() - start
    lat = sorted(x for per in lats for x in per)
    n = len(lat)
    t0 = time.perf_counter()
    read = 0
    while held[0].qsize() > 0:
        held[0].get(block=False)
        read += 1
    read_secs = time.perf_counter() - t0
    held.clear()
    shutil.rmtree(path, ignore_errors=True)
    if read != n:
        raise UserError(f"persist-queue: wrote {n} messages, read back {read}")

    def pct(p: float) -> float:
        return lat[round((n - 1) * p)] * 1e6 if n else 0.0

    return {
        "messages": n,
        "write_seconds": secs,
        "write_msgs_per_s": n / secs,
        "write_mb_per_s": n * size / secs / 1e6,
        "p50_us": pct(0.5),
        "p99_us": pct(0.99),
        "read_msgs_per_s": read / read_secs if read_secs > 0 else 0.0,
    }


def _fio_case(size: int, seconds: float, max_bytes: int, root: str) -> dict[str, Any]:
    """The device's sequential-write bandwidth, measured by fio in the same
    run: 1 MiB direct writes (no page cache), libaio, 16 in flight, over a
    file written once before (as FastQueue's preallocated segments are),
    fsync at the end. Its "msg/s" is the bandwidth in messages of ``size``."""
    import subprocess

    from iolab.bench.fio import find_fio, parse

    path = os.path.join(root, FIO)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    mib = max(16, max_bytes >> 20)
    cmd = [
        find_fio(), "--name=seqwrite", f"--directory={path}", "--rw=write", "--bs=1M", f"--size={mib}M",
        "--ioengine=libaio", "--iodepth=16", "--direct=1", "--overwrite=1", "--end_fsync=1",
        f"--runtime={max(1, round(seconds * 1000))}ms", "--lat_percentiles=1", "--output-format=json",
    ]  # fmt: skip
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    finally:
        shutil.rmtree(path, ignore_errors=True)
    if out.returncode != 0:
        raise UserError(f"fio failed ({' '.join(cmd)}): {out.stderr.strip()[:400]}")
    st = parse(out.stdout).jobs[0].stats["write"]
    return {
        "messages": st.io_bytes // size,
        "write_seconds": st.runtime_ms / 1e3,
        "write_msgs_per_s": st.bw_bytes / size,
        "write_mb_per_s": st.bw_bytes / 1e6,
        "p50_us": st.percentiles.get(50.0, 0.0) / 1e3,
        "p99_us": st.percentiles.get(99.0, 0.0) / 1e3,
        "read_msgs_per_s": 0.0,
    }


# `iolab queue bench --read-api`: how FastQueue and the file-per-message
# baseline read their messages back (fastqueue::bench::ReadApi).
READ_APIS = {
    "mapped": "fastqueue without a copy (dequeue_batch_mapped: payloads borrowed from the segments' "
    "mappings), file-per-message with its best read (each file read into one reused MessageBatch)",
    "batch": "fastqueue and file-per-message read into one reused buffer (dequeue_batch_into a "
    "MessageBatch: no allocation per message, the same for both)",
    "vec": "fastqueue and file-per-message read each message into a fresh buffer (dequeue_batch)",
}
# The same, as the goal lines say it.
_READ_HOW = {
    "mapped": ", fastqueue without a copy against the baseline's best read",
    "batch": ", both into a reused batch",
    "vec": ", both into a fresh buffer per message",
}


def _load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def _goals(results: list[dict[str, Any]], batch_delay: float) -> list[str]:
    """The speed goals of issue 11 (part 5), judged on this run's rows."""
    rows = {(r["peer"], r["size"], r["producers"]): r for r in results if "size" in r}
    out = []
    timer = batch_delay * 1e6
    for size in (256, 8192):
        fq = rows.get(("fastqueue", size, 16))
        if fq and fq.get("sync_p99_us"):
            # "One sync": FastQueue's own fdatasync calls in this very case,
            # tail against tail (p99 against p99), and the median too.
            bound = timer + fq["sync_p99_us"]
            verdict = "met" if fq["p99_us"] <= bound else "NOT met"
            median = "within" if fq["p99_us"] <= timer + fq["sync_p50_us"] else "above"
            out.append(
                f"p99 enqueue latency, {size} B x 16 producers: {fq['p99_us']:.0f} us; goal <= batch timer "
                f"{timer:.0f} us + one sync (its own syncs in this case: p50 {fq['sync_p50_us']:.0f}, "
                f"p99 {fq['sync_p99_us']:.0f} us) = {bound:.0f} us: {verdict} "
                f"({median} timer + the median sync, {timer + fq['sync_p50_us']:.0f} us)"
            )
    for key, label in (("read_msgs_per_s", "warm"), ("cold_read_msgs_per_s", "cold, files evicted from the page cache")):
        for (peer, size, prod), fq in sorted(rows.items()):
            base = rows.get(("file-per-message", size, prod))
            if peer == "fastqueue" and size >= 65536 and base and base.get(key) and fq.get(key):
                ratio = fq[key] / base[key]
                verdict = "met" if ratio >= 10 else "NOT met"
                how = _READ_HOW.get(fq.get("read_api", ""), "")
                out.append(
                    f"reading {size} B messages ({label}), {prod} producers{how}: "
                    f"{fq[key]:.0f} vs {base[key]:.0f} msg/s = {ratio:.1f}x the file-per-message baseline; "
                    f"goal >= 10x: {verdict}"
                )
    for (peer, size, prod), fq in sorted(rows.items()):
        dev = rows.get((FIO, size, prod))
        if peer == "fastqueue" and prod == 64 and dev and dev["write_mb_per_s"]:
            share = fq["write_mb_per_s"] / dev["write_mb_per_s"]
            verdict = "met" if share >= 0.7 else "NOT met"
            out.append(
                f"bandwidth, {size} B x 64 producers: {fq['write_mb_per_s']:.0f} MB/s = {share:.0%} of fio's "
                f"sequential writes ({dev['write_mb_per_s']:.0f} MB/s) in the same group; goal >= 70%: {verdict}"
            )
    return out


def _have_persist_queue() -> bool:
    try:
        import persistqueue  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return False
    return True


def cmd_bench(args: argparse.Namespace) -> int:
    from iolab import _iolab

    # The baseline and fio first, so that every row can show its ratio to
    # them.
    rust_peers = ["file-per-message"] + [p for p in _iolab.FASTQUEUE_PEERS if p != "file-per-message"]
    all_peers = rust_peers[:1] + [FIO] + rust_peers[1:4] + [PERSIST_QUEUE] + rust_peers[4:]
    limits = _iolab.FASTQUEUE_BENCH_LIMITS
    _number(args.seconds, "seconds", 0, limits["seconds"])
    _number(args.batch_delay, "batch-delay", 0, 10, low_open=False)
    _ints(str(args.max_mib), "max-mib", limits["bytes"] >> 20)
    if args.recovery_mib:
        _ints(str(args.recovery_mib), "recovery-mib", limits["bytes"] >> 20)
    if args.quick:
        sizes, producers, seconds = [1024], [1, 16], min(args.seconds, 0.5)
    else:
        sizes = _ints(args.sizes, "sizes", limits["size"])
        producers = _ints(args.producers, "producers", limits["producers"])
        seconds = args.seconds
    peers = all_peers if not args.peers else [p.strip() for p in args.peers.split(",") if p.strip()]
    for p in peers:
        if p not in all_peers:
            raise UserError(f"--peers: unknown peer '{p}'; expected one of: {', '.join(all_peers)}")
    peers = [p for p in all_peers if p in peers]
    if args.dir and os.path.exists(args.dir) and not os.path.isdir(args.dir):
        raise UserError(f"--dir {args.dir}: not a directory")
    if PERSIST_QUEUE in peers and not _have_persist_queue():
        print(f"note: {PERSIST_QUEUE} is not installed (pip install persist-queue); its rows are skipped")
        peers = [p for p in peers if p != PERSIST_QUEUE]
    if FIO in peers and shutil.which("fio") is None:
        print("note: fio is not installed (`make deps`, or apt-get install fio); its rows are skipped")
        peers = [p for p in peers if p != FIO]

    tmp: Optional[tempfile.TemporaryDirectory[str]] = None
    # Always a fresh directory of the bench's own, removed afterwards, under
    # --dir if given: the bench never deletes what it did not make (issue 27:
    # it deleted the user's D/fastqueue, D/file-per-message and D/recovery).
    parent = args.dir or os.getcwd()
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.TemporaryDirectory(prefix="iolab-queue-bench-", dir=parent)
    except OSError as e:
        raise UserError(f"--dir {parent}: cannot make the benchmark's directory in it: {e.strerror or e}") from None
    root = tmp.name
    print(
        f"# iolab queue bench: durable writes (each call returns after the data is synced), "
        f"{seconds:g} s or {args.max_mib} MiB per case, batch timer {args.batch_delay * 1e3:g} ms, in {root}"
    )
    print(
        "# vs fpm: write rate / the file-per-message baseline's; vs fio: MB/s / fio's sequential writes "
        "(1 MiB direct, 16 in flight); sync: p50/p99 of a 4 KiB write + fdatasync, taken at the start of each group"
    )
    print(
        "# read msg/s: the first half of the messages read back and deleted from the page cache (warm); "
        "'cold read' rows (under their peer's row): the second half, after the store's files were evicted "
        "(posix_fadvise DONTNEED), vs fpm = / the baseline's cold read"
    )
    print(f"# read API ({args.read_api}): {READ_APIS[args.read_api]}; the other peers allocate each message")
    head = (
        f"{'size':>6} {'prod':>4}  {'peer':<17} {'msg/s':>10} {'MB/s':>8} {'p50 us':>9} {'p99 us':>9} "
        f"{'read msg/s':>11} {'vs fpm':>7} {'vs fio':>7}"
    )
    print(head)
    print("-" * len(head))
    results: list[dict[str, Any]] = []
    try:
        for size in sizes:
            for prod in producers:
                p50, p99 = _iolab.fastqueue_sync_probe(os.path.join(root, "probe"), 200)
                print(f"# {size} B x {prod} producers: sync p50 {p50:.0f} us, p99 {p99:.0f} us; {_load()}", flush=True)
                results.append({"peer": "sync-probe", "size": size, "producers": prod, "p50_us": p50, "p99_us": p99})
                baseline = device = cold_base = None
                for peer in peers:
                    if peer == PERSIST_QUEUE:
                        r = _persist_queue_case(size, prod, seconds, args.max_mib << 20, root)
                    elif peer == FIO:
                        r = _fio_case(size, seconds, args.max_mib << 20, root)
                        device = r["write_mb_per_s"]
                    else:
                        r = dict(
                            _iolab.fastqueue_bench(
                                peer,
                                size,
                                prod,
                                seconds,
                                args.max_mib << 20,
                                os.path.join(root, peer),
                                args.batch_delay,
                                args.read_api,
                            )
                        )
                    if peer == "file-per-message":
                        baseline = r["write_msgs_per_s"]
                    ratio = f"{r['write_msgs_per_s'] / baseline:6.1f}x" if baseline else ""
                    share = f"{r['write_mb_per_s'] / device:6.0%}" if device else ""
                    read = f"{r['read_msgs_per_s']:11.0f}" if r["read_msgs_per_s"] else f"{'-':>11}"
                    if peer == "device":
                        lat = f"{'(sync/MiB)':>9} {r['p99_us']:9.0f}"
                    elif peer == FIO:
                        lat = f"{'(per MiB)':>9} {r['p99_us']:9.0f}"
                    else:
                        lat = f"{r['p50_us']:9.0f} {r['p99_us']:9.0f}"
                    print(
                        f"{size:>6} {prod:>4}  {peer:<17} {r['write_msgs_per_s']:10.0f} "
                        f"{r['write_mb_per_s']:8.1f} {lat} {read} {ratio:>7} {share:>7}",
                        flush=True,
                    )
                    results.append({"peer": peer, "size": size, "producers": prod, "load": os.getloadavg()[0], **r})
                    cold = r.get("cold_read_msgs_per_s")
                    if cold:
                        # Its own row: the second half of the messages, read
                        # after the store's files left the page cache.
                        cold_base = cold if peer == "file-per-message" else cold_base
                        vs = f"{cold / cold_base:6.1f}x" if cold_base else ""
                        label = "  cold read"
                        dash = "-"
                        print(
                            f"{size:>6} {prod:>4}  {label:<17} {dash:>10} {dash:>8} {dash:>9} {dash:>9} "
                            f"{cold:11.0f} {vs:>7} {'':>7}",
                            flush=True,
                        )
        if args.recovery_mib:
            rec = dict(_iolab.fastqueue_recovery(os.path.join(root, "recovery"), args.recovery_mib << 20))
            print(
                f"recovery: open of a {rec['bytes'] / 2**20:.0f} MiB queue ({rec['messages']} messages, "
                f"page cache evicted): {rec['seconds']:.2f} s ({rec['bytes'] / rec['seconds'] / 1e6:.0f} MB/s)"
            )
            results.append({"peer": "recovery", **rec})
        goals = _goals(results, args.batch_delay)
        if goals:
            print("goals (issue 11, part 5), judged on this run:")
            for line in goals:
                print(f"  {line}")
    finally:
        if tmp is not None:
            tmp.cleanup()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seconds": seconds, "max_mib": args.max_mib, "results": results}, f, indent=1)
    return 0
