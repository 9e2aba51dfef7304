"""``iolab emu``: serve an image file over NBD with a disk model's timing,
or check a request log it wrote (``--check LOG``)."""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from typing import Any

from iolab.cli.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "emu",
        help="an emulated disk: serve an image over NBD with a disk model's timing",
        description=(
            "Serve FILE as a block device over NBD, one request at a time in arrival order, each "
            "completed after the disk model's service time on the model's clock (real time since "
            "the start). QEMU: -drive file=nbd:unix:PATH,format=raw,if=virtio. See docs/emu.md."
        ),
    )
    disk = p.add_argument_group("the disk")
    disk.add_argument("--disk", metavar="NAME", help="a built-in disk model (hp97560, modern7200, fixed)")
    disk.add_argument("--diskspecs", metavar="FILE", help="a disk from a DiskSim parameter file")
    disk.add_argument("--fixed-ms", type=float, metavar="MS", help="service time of --disk fixed (default 5)")
    disk.add_argument("--zero-latency", action="store_true",
                      help="serve every request in 0 ns (the capacity stays the model's): measures a client's own cost")
    serve = p.add_argument_group("serving")
    serve.add_argument("--image", metavar="FILE",
                       help="the data; created (sparse) or extended to the disk's capacity, never truncated")
    serve.add_argument("--socket", metavar="PATH", help="listen on this Unix socket")
    serve.add_argument("--port", type=int, metavar="N", help="listen on TCP 127.0.0.1:N (0: any free port)")
    serve.add_argument("--log", metavar="FILE", help="write every request to this CSV log")
    serve.add_argument("--read-only", action="store_true", help="refuse writes (EPERM)")
    serve.add_argument("--no-sync", action="store_true",
                       help="do not fdatasync the image on FLUSH and FUA writes (faster, not crash-safe)")
    serve.add_argument("--no-realtime", action="store_true",
                       help="do not ask for real-time priority (SCHED_FIFO) for the serving threads")
    serve.add_argument("--verbose", action="store_true", help="print connections as they open and close")
    chk = p.add_argument_group("checking a log")
    chk.add_argument("--check", metavar="LOG", help="replay LOG through its disk model and report agreement")
    chk.add_argument("--out", metavar="CSV", help="with --check: write the per-request comparison here")
    chk.add_argument("--json", metavar="FILE", help="with --check: write the summary as JSON here")
    chk.add_argument("--trace", metavar="FILE",
                     help="with --check: write the reads and writes as an FIU trace that `iolab run` replays")
    p.set_defaults(func=cmd_emu)


def cmd_emu(args: argparse.Namespace) -> int:
    if args.check:
        serving = [o for o in ("image", "socket", "port", "log", "disk", "diskspecs") if getattr(args, o) is not None]
        if serving:
            raise UserError(f"--check reads a log; it takes no --{serving[0].replace('_', '-')}")
        return _check(args)
    checking = [o for o in ("out", "json", "trace") if getattr(args, o) is not None]
    if checking:
        raise UserError(f"--{checking[0]} goes with --check LOG")
    return _serve(args)


def _disk_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    if args.disk and args.diskspecs:
        raise UserError("give either --disk NAME or --diskspecs FILE, not both")
    if not args.disk and not args.diskspecs:
        raise UserError("give the disk to emulate: --disk NAME (hp97560, modern7200, fixed) or --diskspecs FILE")
    if args.fixed_ms is not None and args.disk != "fixed":
        raise UserError("--fixed-ms is the service time of --disk fixed")
    # 1 ns to 1000 s: below, the time rounds to 0 ns (--zero-latency is that); above, no client waits.
    if args.fixed_ms is not None and not (math.isfinite(args.fixed_ms) and 1e-6 <= args.fixed_ms <= 1e6):
        raise UserError(f"--fixed-ms {args.fixed_ms:g}: expected 1e-06 (1 ns) to 1e+06 ms")
    if args.diskspecs:
        _regular_file("--diskspecs", args.diskspecs)
    return {"preset": args.disk, "diskspecs": args.diskspecs, "fixed_ms": args.fixed_ms}


class _Terminated(Exception):
    """SIGTERM arrived."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated()


def _serve(args: argparse.Namespace) -> int:
    from iolab._iolab import Emulator

    kw = _disk_kwargs(args)
    if not args.image:
        raise UserError("--image FILE is required (the file that holds the disk's data)")
    if (args.socket is None) == (args.port is None):
        raise UserError("give where to listen: --socket PATH or --port N (one of them)")
    if args.port is not None and not 0 <= args.port <= 65535:
        raise UserError(f"--port {args.port}: expected 0..65535")
    if args.log and os.path.isdir(args.log):
        raise UserError(f"--log {args.log}: is a directory")
    emu = Emulator(
        args.image, socket=args.socket, port=args.port, zero_latency=args.zero_latency, log=args.log,
        read_only=args.read_only, sync=not args.no_sync, verbose=args.verbose, realtime=not args.no_realtime, **kw,
    )
    how, before = emu.image_opened
    what = {"created": "created, sparse", "extended": f"extended from {before} bytes", "existing": "existing"}[how]
    print(f"iolab emu: {emu.describe}")
    print(f"  image    {args.image} ({emu.capacity_bytes} bytes, {what}){' read-only' if args.read_only else ''}")
    print(f"  serving  {emu.address}")
    if args.socket:
        sock = os.path.abspath(args.socket)
        print(f"           QEMU:    -drive file=nbd:unix:{sock},format=raw,if=virtio")
        print(f"           qemu-io: qemu-io -f raw 'nbd+unix:///?socket={sock}'")
    else:
        port = emu.address.rsplit(":", 1)[1]
        print(f"           QEMU:    -drive file=nbd:127.0.0.1:{port},format=raw,if=virtio")
    if args.log:
        print(f"  log      {args.log}")
    if emu.realtime:
        print("  timing   real-time priority (SCHED_FIFO)")
    else:
        why = "--no-realtime" if args.no_realtime else "not permitted: needs root or CAP_SYS_NICE"
        print(f"  timing   normal priority ({why}); replies may be late on a loaded host")
    print("Ctrl-C or SIGTERM stops it.", flush=True)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    # A job started with `&` by a script inherits SIGINT ignored; a server
    # should still stop on it.
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    code = 0
    try:
        _run_until_stopped(emu)
    except KeyboardInterrupt:
        code = 130
    except _Terminated:
        code = 0
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        emu.stop()
        try:
            while not emu.wait(0.5):
                pass
        finally:
            signal.signal(signal.SIGTERM, previous)
            signal.signal(signal.SIGINT, previous_int)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    _print_summary(json.loads(emu.stats()), args)
    return code


def _run_until_stopped(emu: Any) -> None:
    """Waits (GIL released) until a signal; shows a status line on a TTY."""
    tty = sys.stderr.isatty()
    last, last_t = 0, time.monotonic()
    while not emu.wait(0.25):
        now = time.monotonic()
        if tty and now - last_t >= 1.0:
            s = json.loads(emu.stats())
            rate = (s["requests"] - last) / (now - last_t)
            last, last_t = s["requests"], now
            late = s["late"]
            print(
                f"\r{s['requests']} requests ({s['reads']} reads, {s['writes']} writes, {s['errors']} errors), "
                f"{rate:.0f}/s, late p99 {late['p99_ns'] / 1000:.0f} us   ",
                end="", file=sys.stderr, flush=True,
            )
    # It stopped by itself: only a failed log write does that.
    raise UserError("the emulator stopped on an error (see above)")


def _us(ns: float) -> str:
    return f"{ns / 1000:.0f} us" if ns < 10_000_000 else f"{ns / 1e6:.1f} ms"


def _print_summary(s: dict[str, Any], args: argparse.Namespace) -> None:
    late = s["late"]
    print(
        f"stopped: {s['requests']} requests ({s['reads']} reads, {s['writes']} writes, {s['flushes']} flushes, "
        f"{s['trims']} trims, {s['write_zeroes']} write-zeroes, {s['errors']} refused) on {s['connections']} "
        f"connection(s); {s['bytes_read']} bytes read, {s['bytes_written']} written"
    )
    if late["count"]:
        print(
            f"timing error (reply - model completion): p50 {_us(late['p50_ns'])}, p90 {_us(late['p90_ns'])}, "
            f"p99 {_us(late['p99_ns'])}, max {_us(late['max_ns'])}"
        )
    done = ["image synced"] + (["log flushed"] if args.log else [])
    print(f"{', '.join(done)}.")


def _regular_file(flag: str, path: str) -> None:
    """A file option names a regular file; say what it is when it is not."""
    if os.path.isfile(path):
        return
    if not os.path.exists(path):
        raise UserError(f"{flag} {path}: no such file")
    what = "a directory" if os.path.isdir(path) else "not a regular file (a device, FIFO or socket)"
    raise UserError(f"{flag} {path}: is {what}")


def _check(args: argparse.Namespace) -> int:
    from iolab.emu import check_log

    _regular_file("--check", args.check)
    try:
        r = check_log(args.check)
    except UnicodeDecodeError as e:
        raise UserError(f"--check {args.check}: not a request log (not UTF-8 text at byte {e.start})") from None
    s = r.summary
    print(f"log {s['log']}: {s['disk']}")
    ops = ", ".join(f"{n} {op}" for op, n in s["by_op"].items()) or "none"
    print(f"  {s['requests']} requests: {s['served']} served by the model ({ops}), {s['refused']} refused")
    print(
        f"  model agreement: {s['model_agreement']}/{s['served']} charged exactly as a fresh model "
        f"charges them on replay ({s['model_disagreements']} differ)"
    )
    print(
        f"  schedule: {s['schedule_violations']} request(s) not started at max(arrival, previous completion)"
    )
    late = s["late"]
    if late["count"]:
        print(
            f"  timing error (reply - model completion): mean {_us(late['mean_ns'])}, p50 {_us(late['p50_ns'])}, "
            f"p90 {_us(late['p90_ns'])}, p99 {_us(late['p99_ns'])}, p99.9 {_us(late['p999_ns'])}, "
            f"max {_us(late['max_ns'])}; {late['within_100us']:.1%} within 100 us"
        )
    gap = s["idle_gap"]
    if gap["count"]:
        print(
            f"  client's gap (reply to next arrival, disk idle): {gap['count']} gaps, mean {_us(gap['mean_ns'])}, "
            f"p50 {_us(gap['p50_ns'])}, p90 {_us(gap['p90_ns'])}, p99 {_us(gap['p99_ns'])}"
        )
    print(f"  model busy {s['busy_ns'] / 1e9:.3f} s over {s['span_ns'] / 1e9:.3f} s; mean service "
          f"{s['mean_service_ms']:.3f} ms")
    if args.out:
        r.requests.to_csv(args.out, index=False)
        print(f"  per-request comparison: {args.out}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(s, f, indent=2)
        print(f"  summary: {args.json}")
    if args.trace:
        from iolab.emu import read_log, write_trace

        n = write_trace(read_log(args.check), args.trace)
        print(f"  trace: {args.trace} ({n} requests, FIU format)")
    if not r.ok:
        print("  DISAGREEMENT: see the rows with agree=False or start_ok=False", file=sys.stderr)
        return 1
    return 0
