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
from typing import Any, Optional

from iolab.cli.errors import UserError

SIZES = [256, 1024, 8192, 65536]
PRODUCERS = [1, 4, 16, 64]
PERSIST_QUEUE = "persist-queue"
# Bench bounds: a message the size of a segment's data, threads a machine can start.
MAX_SIZE = 64 << 20
MAX_PRODUCERS = 4096


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("queue", help="FastQueue: benchmark, check, stats, repair")
    qs = p.add_subparsers(dest="queue_command", metavar="ACTION")
    qs.required = True

    b = qs.add_parser("bench", help="compare FastQueue with its peers (prints a table)")
    b.add_argument("--dir", help="directory on the disk to measure (default: a temporary one)")
    b.add_argument("--sizes", default=",".join(map(str, SIZES)), help="message sizes in bytes")
    b.add_argument("--producers", default=",".join(map(str, PRODUCERS)), help="producer thread counts")
    b.add_argument("--peers", help="comma-separated peers (default: all)")
    b.add_argument("--seconds", type=float, default=1.0, help="seconds of writing per case (default 1)")
    b.add_argument("--max-mib", type=int, default=256, help="most MiB written per case (default 256)")
    b.add_argument("--batch-delay", type=float, default=0.001, help="FastQueue batch timer, seconds")
    b.add_argument("--recovery-mib", type=int, default=0, help="also time the open of a queue of this many MiB")
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


def _ints(text: str, what: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--{what}: expected comma-separated integers, got '{text}'") from None
    if not values or any(v <= 0 for v in values):
        raise UserError(f"--{what}: expected positive integers, got '{text}'")
    return values


def _existing_queue(path: str) -> str:
    """``path`` if it holds a FastQueue (so that no command creates one by
    mistake in another directory)."""
    if not os.path.isdir(path):
        raise UserError(f"{path}: no such queue directory")
    if not any(n.startswith("seg-") and n.endswith(".fq") for n in os.listdir(path)):
        raise UserError(f"{path}: not a FastQueue directory (no seg-*.fq segment files)")
    return path


def cmd_check(args: argparse.Namespace) -> int:
    from iolab.fastqueue import check

    r = check(_existing_queue(args.path))
    print(
        f"{args.path}: {r['segments']} segments ({r['free_segments']} free), "
        f"{r['live_messages']} live messages ({r['live_bytes']} bytes), "
        f"{r['deleted_records']} deleted records, {r['bytes_scanned']} bytes scanned"
    )
    if r["torn_tail"]:
        print(f"torn tail (dropped at the next open): {r['torn_tail']}")
    for p in r["problems"]:
        print(f"problem: {p['message']}")
    if r["problems"]:
        print(f"{len(r['problems'])} problem(s); `iolab queue repair {args.path}` can salvage the rest")
        return 1
    print("ok")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from iolab.fastqueue import FastQueue

    with FastQueue(_existing_queue(args.path)) as q:
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
    q = persistqueue.SQLiteQueue(path, auto_commit=True, multithreading=True)
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
            q.put(payload)
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
    while q.qsize() > 0:
        q.get(block=False)
        read += 1
    read_secs = time.perf_counter() - t0
    del q
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


def _have_persist_queue() -> bool:
    try:
        import persistqueue  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return False
    return True


def cmd_bench(args: argparse.Namespace) -> int:
    from iolab import _iolab

    # The baseline first, so that every row can show its ratio to it.
    rust_peers = ["file-per-message"] + [p for p in _iolab.FASTQUEUE_PEERS if p != "file-per-message"]
    all_peers = rust_peers[:4] + [PERSIST_QUEUE] + rust_peers[4:]
    if args.quick:
        sizes, producers, seconds = [1024], [1, 16], min(args.seconds, 0.5)
    else:
        sizes, producers, seconds = _ints(args.sizes, "sizes"), _ints(args.producers, "producers"), args.seconds
    peers = all_peers if not args.peers else [p.strip() for p in args.peers.split(",") if p.strip()]
    for p in peers:
        if p not in all_peers:
            raise UserError(f"--peers: unknown peer '{p}'; expected one of: {', '.join(all_peers)}")
    peers = [p for p in all_peers if p in peers]
    if not (math.isfinite(seconds) and 0 < seconds <= 86400) or args.max_mib <= 0:
        raise UserError(f"--seconds {seconds:g} --max-mib {args.max_mib}: expected seconds above 0 and at most "
                        f"86400, and a positive number of MiB")
    if max(sizes) > MAX_SIZE:
        raise UserError(f"--sizes {max(sizes)}: a message is at most {MAX_SIZE} bytes here")
    if max(producers) > MAX_PRODUCERS:
        raise UserError(f"--producers {max(producers)}: at most {MAX_PRODUCERS} threads")
    if not (math.isfinite(args.batch_delay) and 0 <= args.batch_delay <= 1):
        raise UserError(f"--batch-delay {args.batch_delay:g}: expected 0 to 1 second")
    if args.recovery_mib < 0:
        raise UserError(f"--recovery-mib {args.recovery_mib}: expected 0 or more")
    if args.dir and os.path.exists(args.dir) and not os.path.isdir(args.dir):
        raise UserError(f"--dir {args.dir}: not a directory")
    if PERSIST_QUEUE in peers and not _have_persist_queue():
        print(f"note: {PERSIST_QUEUE} is not installed (pip install persist-queue); its rows are skipped")
        peers = [p for p in peers if p != PERSIST_QUEUE]

    tmp: Optional[tempfile.TemporaryDirectory[str]] = None
    if args.dir:
        root = args.dir
        os.makedirs(root, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="iolab-queue-bench-", dir=os.getcwd())
        root = tmp.name
    print(
        f"# iolab queue bench: durable writes (each call returns after the data is synced), "
        f"{seconds:g} s or {args.max_mib} MiB per case, batch timer {args.batch_delay * 1e3:g} ms, in {root}"
    )
    head = f"{'size':>6} {'prod':>4}  {'peer':<17} {'msg/s':>10} {'MB/s':>8} {'p50 us':>9} {'p99 us':>9} {'read msg/s':>11} {'vs fpm':>7}"
    print(head)
    print("-" * len(head))
    results = []
    try:
        for size in sizes:
            for prod in producers:
                baseline = None
                for peer in peers:
                    if peer == PERSIST_QUEUE:
                        r = _persist_queue_case(size, prod, seconds, args.max_mib << 20, root)
                    else:
                        r = dict(
                            _iolab.fastqueue_bench(
                                peer, size, prod, seconds, args.max_mib << 20, os.path.join(root, peer), args.batch_delay
                            )
                        )
                    if peer == "file-per-message":
                        baseline = r["write_msgs_per_s"]
                    ratio = f"{r['write_msgs_per_s'] / baseline:6.1f}x" if baseline else ""
                    read = f"{r['read_msgs_per_s']:11.0f}" if r["read_msgs_per_s"] else f"{'-':>11}"
                    lat = (
                        f"{r['p50_us']:9.0f} {r['p99_us']:9.0f}"
                        if peer != "device"
                        else f"{'(sync/MiB)':>9} {r['p99_us']:9.0f}"
                    )
                    print(
                        f"{size:>6} {prod:>4}  {peer:<17} {r['write_msgs_per_s']:10.0f} "
                        f"{r['write_mb_per_s']:8.1f} {lat} {read} {ratio:>7}",
                        flush=True,
                    )
                    results.append({"peer": peer, "size": size, "producers": prod, **r})
        if args.recovery_mib:
            rec = dict(_iolab.fastqueue_recovery(os.path.join(root, "recovery"), args.recovery_mib << 20))
            print(
                f"recovery: open of a {rec['bytes'] / 2**20:.0f} MiB queue ({rec['messages']} messages, "
                f"page cache evicted): {rec['seconds']:.2f} s ({rec['bytes'] / rec['seconds'] / 1e6:.0f} MB/s)"
            )
            results.append({"peer": "recovery", **rec})
    finally:
        if tmp is not None:
            tmp.cleanup()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seconds": seconds, "max_mib": args.max_mib, "results": results}, f, indent=1)
    return 0
