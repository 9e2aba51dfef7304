"""``iolab mail bench``: the FastQueue paper's comparison (seed 002, section 5:
FSmail under SPECmail2000, 5,000 users, 1 kB average) redone with a real
SMTP load: Postfix's ``smtp-source`` sends to the system under test, which
relays to ``smtp-sink``. Three systems, each in the same run and order
rotated per repetition: ``iolab mail serve --queue fastqueue``, the same
server with ``--queue filedir`` (the paper's baseline) and a private
Postfix 3.7 relaying to the same sink.

Measured per run: accepted msg/s (smtp-source's messages / time until the
last smtp-source exits), end-to-end msg/s (same messages / time until the
sink has counted them all), DATA latency p50/p99 (from our own small
client, :class:`iolab._iolab.MailLoad`, a few sessions beside smtp-source,
which cannot time single messages), disk bytes written per message
(/proc/PID/io ``write_bytes`` of the system's process tree) and fsyncs per
message (the server's own counters; with ``--strace``, ``strace -f -c`` of
the system's processes in a separate run, for all three)."""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

from iolab.cli.errors import UserError
from iolab.mail.tools import (
    Sink,
    free_port,
    io_delta,
    load_average,
    require,
    tree,
    tree_io,
    wait_port,
)

SYSTEMS = ["fastqueue", "filedir", "postfix"]

# The paper gives two facts about sizes: SPECmail2000's 1 kB average, and
# that 85% of FSmail's real messages were under 8 kB (its Figure 2, whose
# bins are not in the text). This mix keeps 85% under 8 kB; the bins and
# weights are our assumption, stated in docs/mail.md.
MIX = [(1024, 45.0), (2048, 20.0), (4096, 20.0), (16384, 10.0), (65536, 5.0)]

DURABILITY = {
    "fastqueue": "250 after the group commit's fdatasync; ack = 1-byte flag + fdatasync (grouped)",
    "filedir": "250 after fsync of the message file and of its directory; ack = unlink",
    "postfix": "Postfix default: 250 after the queue file is fsync'ed",
}
# `--ceiling` rows: the same system with its queue on tmpfs.
CEILING = "@tmpfs"
SYNC_CALLS = ("fsync", "fdatasync", "sync_file_range", "syncfs", "msync")


def register_bench(ms: argparse._SubParsersAction) -> None:
    b = ms.add_parser("bench", help="FastQueue vs one file per message vs Postfix, loaded by smtp-source")
    b.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated, of " + ",".join(SYSTEMS))
    b.add_argument("--users", type=int, default=5000,
                   help="concurrent smtp-source sessions (default 5000: the paper's simulated users)")
    b.add_argument("--messages", type=int, default=20000, help="messages per run (default 20000)")
    b.add_argument("--size", type=int, default=1024, help="message body bytes (default 1024)")
    b.add_argument("--mix", action="store_true", help="use the size mix (85%% under 8 kB) instead of --size")
    b.add_argument("--reps", type=int, default=3, help="repetitions of each system (default 3)")
    b.add_argument("--probe-sessions", type=int, default=4, help="sessions of the DATA-latency client (default 4)")
    b.add_argument("--strace", action="store_true",
                   help="also count fsyncs with strace -f -c in an extra, untimed run per system")
    b.add_argument("--dir", help="work directory (default: a temporary one in /var/tmp)")
    b.add_argument("--no-loop", action="store_true",
                   help="run the queues in --dir itself, not on a fresh ext4 loop device (no disk byte counts)")
    b.add_argument("--ceiling", action="store_true",
                   help="also run each system with its queue on tmpfs (/dev/shm: fsync costs nothing, no disk is "
                        "touched): the machine's ceiling for this load, hence the most any queue could gain here")
    b.add_argument("--out", default="mail-bench-out", help="directory for results.json, table.md, plot (default mail-bench-out)")
    b.add_argument("--timeout", type=float, default=900, help="seconds allowed per run (default 900)")
    b.set_defaults(func=cmd_bench)


def _raise_nofile(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < need:
        raise UserError(f"--users {need - 1000}: the open-files limit is {hard}; raise it (ulimit -Hn) or use fewer users")


def _strace_counts(path: str) -> int:
    calls = 0
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if parts and parts[-1] in SYNC_CALLS:
                    # "% time seconds usecs/call calls [errors] syscall"
                    nums = [p for p in parts[:-1] if p.replace(".", "").isdigit()]
                    if len(nums) >= 4:
                        calls += int(nums[3])
    except OSError:
        pass
    return calls


class System:
    """A system under test: start, pid (root of its process tree), counters, stop."""

    def __init__(self, name: str, work: str, sink_port: int, strace: str | None, tools: dict[str, str],
                 log: str = ""):
        self.log = log
        self.name, self.work, self.sink_port, self.strace, self.tools = name, work, sink_port, strace, tools
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.postfix: Any = None
        self.tracer: subprocess.Popen | None = None
        self.stats_file = os.path.join(work, "server-stats.json")
        self.log_file = os.path.join(work, "server.log")

    def start(self) -> None:
        if self.name == "postfix":
            from iolab.mail.postfix import PrivatePostfix

            self.postfix = PrivatePostfix(os.path.join(self.work, "postfix"), self.port, self.sink_port,
                                          self.tools["postfix"], log=self.log)
            self.postfix.start()
            wait_port(self.port, 30)
            if self.strace:
                pids = tree(self.postfix.master_pid())
                cmd = [self.tools["strace"], "-f", "-c", "-e", "trace=" + ",".join(SYNC_CALLS), "-o", self.strace]
                for p in pids:
                    cmd += ["-p", str(p)]
                self.tracer = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
                time.sleep(1.0)
            return
        cmd = [sys.executable, "-m", "iolab", "mail", "serve", "--listen", f"127.0.0.1:{self.port}",
               "--queue", self.name, "--queue-dir", os.path.join(self.work, "queue"),
               "--relay", f"127.0.0.1:{self.sink_port}", "--stats", self.stats_file]
        if self.strace:
            cmd = [self.tools["strace"], "-f", "-c", "-e", "trace=" + ",".join(SYNC_CALLS), "-o", self.strace] + cmd
        # The server logs a line per event on stderr (as Postfix's mail
        # log): to a file, never to a pipe nobody reads, which would fill
        # and stop the server.
        with open(self.log_file, "w") as log:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "listening" not in line:
            self.proc.wait(30)
            with open(self.log_file) as f:
                err = f.read()[-2000:]
            raise UserError(f"iolab mail serve did not start: {line.strip()} {err.strip()}")

    def pid(self) -> int:
        if self.postfix is not None:
            return self.postfix.master_pid()
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> dict:
        stats: dict = {}
        if self.postfix is not None:
            if self.tracer is not None:
                self.tracer.send_signal(signal.SIGINT)
                self.tracer.wait(30)
            self.postfix.stop()
            return stats
        assert self.proc is not None
        if self.strace:
            # SIGTERM to strace would only detach it: stop the server itself.
            for child in tree(self.proc.pid)[1:2]:
                os.kill(child, signal.SIGTERM)
        else:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        try:
            with open(self.stats_file) as f:
                stats = json.load(f)
        except (OSError, ValueError):
            pass
        return stats


def _smtp_sources(tools: dict[str, str], port: int, users: int, messages: int,
                  sizes: list[tuple[int, float]]) -> list[subprocess.Popen]:
    total_w = sum(w for _, w in sizes)
    procs = []
    left_users, left_msgs = users, messages
    for i, (size, w) in enumerate(sizes):
        last = i == len(sizes) - 1
        u = left_users if last else max(1, round(users * w / total_w))
        m = left_msgs if last else max(1, round(messages * w / total_w))
        left_users, left_msgs = left_users - u, left_msgs - m
        cmd = [tools["smtp-source"], "-s", str(max(1, min(u, m))), "-m", str(m), "-l", str(size),
               "-f", "load@iolab.test", "-t", "sink@iolab.test", "-M", "iolab-bench", f"127.0.0.1:{port}"]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    return procs


def _percentile(sorted_vals: list[float], q: float) -> float:
    if not sorted_vals:
        return float("nan")
    k = min(len(sorted_vals) - 1, max(0, math.ceil(q * len(sorted_vals)) - 1))
    return sorted_vals[k]


def run_once(name: str, args: argparse.Namespace, tools: dict[str, str], base: str, rep: int,
             disk: Any = None, strace: bool = False) -> dict:
    from iolab._iolab import MailLoad

    work = os.path.join(base, f"{name}-{rep}{'-strace' if strace else ''}")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sizes = MIX if args.mix else [(args.size, 1.0)]
    sink = Sink(tools["smtp-sink"])
    trace_file = os.path.join(work, "strace.txt") if strace else None
    log = os.path.join(os.path.dirname(base) if disk else work, f"postfix-{rep}{'-strace' if strace else ''}.log")
    sut = System(name, work, sink.port, trace_file, tools, log=log)
    try:
        sut.start()
        time.sleep(0.5)
        before = tree_io(sut.pid())
        sectors_before = disk.sectors_written() if disk else 0
        load_before = load_average()
        t0 = time.monotonic()
        probe = MailLoad(f"127.0.0.1:{sut.port}", args.probe_sessions, 10**9, sizes, f"probe-{name}-{rep}",
                         per_connection=1, pause=0.05, timeout=120.0)
        sources = _smtp_sources(tools, sut.port, args.users, args.messages, sizes)
        errors = []
        for p in sources:
            try:
                p.wait(args.timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                errors.append("smtp-source timed out")
            if p.returncode:
                errors.append((p.stderr.read() if p.stderr else "").strip()[-300:] or f"exit {p.returncode}")
        t_acc = time.monotonic()
        probe.stop()
        _, _, sent = probe.result()
        lat = sorted(s[4] / 1000.0 for s in sent if s[2] == "accepted")
        expected = args.messages + len(lat)
        t_del = sink.wait_for(expected, args.timeout)
        after = tree_io(sut.pid())
        io = io_delta(before, after)
        sectors = (disk.sectors_written() - sectors_before) if disk else None
        load_after = load_average()
    finally:
        stats = sut.stop()
        sink.stop()
    if t_del is None:
        errors.append(f"sink counted {sink.count} of {expected} messages before the timeout")
    delivered_s = (t_del - t0) if t_del else float("nan")
    row = {
        "system": name, "rep": rep, "users": args.users, "messages": args.messages,
        "sizes": sizes, "accept_s": t_acc - t0, "deliver_s": delivered_s,
        "accepted_per_s": args.messages / (t_acc - t0),
        "delivered_per_s": args.messages / delivered_s if t_del else float("nan"),
        "probe_messages": len(lat), "data_ms_p50": _percentile(lat, 0.5), "data_ms_p99": _percentile(lat, 0.99),
        "proc_write_bytes_per_msg": io.write_bytes / expected, "sink_count": sink.count,
        "disk_bytes_per_msg": sectors * 512 / expected if sectors is not None else float("nan"),
        "load_before": load_before, "load_after": load_after, "durability": DURABILITY[name],
        "errors": errors,
    }
    if stats:
        row["server_syncs_per_msg"] = (stats.get("queue_syncs", 0) + stats.get("delivery_syncs", 0)) / expected
        row["server_commit_ms_p50"] = stats.get("commit_ms_p50")
        row["server_commit_ms_p99"] = stats.get("commit_ms_p99")
        # Processing time of each SMTP command and of delivery, as the
        # server timed them (`iolab paper fastqueue`: the paper's Figures 3
        # and 8).
        row["server_commands"] = stats.get("commands")
    if trace_file:
        row["strace_syncs_per_msg"] = _strace_counts(trace_file) / expected
    return row


def _mean_ci(vals: list[float]) -> tuple[float, float]:
    vals = [v for v in vals if not math.isnan(v)]
    if not vals:
        return float("nan"), float("nan")
    m = sum(vals) / len(vals)
    if len(vals) < 2:
        return m, float("nan")
    from scipy import stats as st

    sd = (sum((v - m) ** 2 for v in vals) / (len(vals) - 1)) ** 0.5
    return m, st.t.ppf(0.975, len(vals) - 1) * sd / len(vals) ** 0.5


def _geometric_ci(log_ratios: list[float]) -> tuple[float, float, float]:
    """Geometric mean of paired ratios, given as logs, with a 95%
    t-interval on the logs (nan where there are too few)."""
    if not log_ratios:
        return float("nan"), float("nan"), float("nan")
    m, h = _mean_ci(log_ratios)
    if math.isnan(h):
        return math.exp(m), float("nan"), float("nan")
    return math.exp(m), math.exp(m - h), math.exp(m + h)


def _ratio_ci(rows: list[dict], a: str, b: str, key: str) -> tuple[float, float, float]:
    """Geometric mean of the per-repetition ratio a/b with a 95% t-interval
    on the log ratios (runs of one repetition are paired: same load, back
    to back)."""
    pairs = []
    for rep in sorted({r["rep"] for r in rows}):
        ra = [r[key] for r in rows if r["rep"] == rep and r["system"] == a]
        rb = [r[key] for r in rows if r["rep"] == rep and r["system"] == b]
        if ra and rb and ra[0] > 0 and rb[0] > 0:
            pairs.append(math.log(ra[0] / rb[0]))
    return _geometric_ci(pairs)


def _durability(system: str) -> str:
    if system.endswith(CEILING):
        return "queue on tmpfs: fsync costs nothing, no disk is touched (the machine's ceiling)"
    return DURABILITY[system]


def _ceiling_note(rows: list[dict]) -> str | None:
    """The most any queue could gain over the file-per-message server on
    this machine: per repetition, the fastest system with its queue on
    tmpfs over the file-per-message server on disk (end to end), as a
    geometric mean with a 95% t-interval on the log ratios."""
    logs, best = [], []
    for rep in sorted({r["rep"] for r in rows}):
        top = [r["delivered_per_s"] for r in rows if r["rep"] == rep and r["system"].endswith(CEILING)]
        top = [v for v in top if not math.isnan(v) and v > 0]
        base = [r["delivered_per_s"] for r in rows if r["rep"] == rep and r["system"] == "filedir"]
        if top and base and not math.isnan(base[0]) and base[0] > 0:
            logs.append(math.log(max(top) / base[0]))
            best.append(max(top))
    if not logs:
        return None
    g, lo, hi = _geometric_ci(logs)
    ci = f" (95% CI {lo:.2f}–{hi:.2f})" if not math.isnan(lo) else ""
    return (f"- ceiling of this machine: the fastest system with its queue on tmpfs delivered "
            f"{sum(best) / len(best):.0f} msg/s end to end, {g:.2f}×{ci} the file-per-message server "
            f"on disk: about the most any queue could gain over it here")


def _tmpfs_dir() -> str:
    """A fresh directory on a tmpfs (/dev/shm), for `--ceiling`."""
    shm = "/dev/shm"
    with open("/proc/mounts") as f:
        kinds = {fields[1]: fields[2] for fields in (line.split() for line in f) if len(fields) > 2}
    if kinds.get(shm) != "tmpfs":
        raise UserError(f"--ceiling: {shm} is not a tmpfs here ({kinds.get(shm, 'not mounted')})")
    path = tempfile.mkdtemp(prefix="iolab-mail-ceiling-", dir=shm)
    os.chmod(path, 0o755)  # Postfix's daemons run as user postfix
    return path


def summarize(rows: list[dict], systems: list[str]) -> str:
    def cell(vals: list[float], fmt: str) -> str:
        m, h = _mean_ci(vals)
        if math.isnan(m):
            return "n/a"
        return f"{m:{fmt}}" + (f" ± {h:{fmt}}" if not math.isnan(h) else "")

    lines = ["| system | accepted msg/s | end-to-end msg/s | DATA p50 ms | DATA p99 ms | disk bytes/msg | fsyncs/msg | durability |",
             "|---|---|---|---|---|---|---|---|"]
    for s in systems:
        rs = [r for r in rows if r["system"] == s and not r.get("strace_only")]
        if not rs:
            continue
        traced = [r["strace_syncs_per_msg"] for r in rows if r["system"] == s and "strace_syncs_per_msg" in r]
        own = [r["server_syncs_per_msg"] for r in rs if "server_syncs_per_msg" in r]
        fs = []
        if own:
            fs.append(f"{sum(own) / len(own):.2f} (own count)")
        if traced:
            fs.append(f"{sum(traced) / len(traced):.2f} (strace)")
        lines.append(
            f"| {s} | {cell([r['accepted_per_s'] for r in rs], '.0f')} | {cell([r['delivered_per_s'] for r in rs], '.0f')} "
            f"| {cell([r['data_ms_p50'] for r in rs], '.1f')} | {cell([r['data_ms_p99'] for r in rs], '.1f')} "
            f"| {cell([r['disk_bytes_per_msg'] for r in rs], '.0f')} | {', '.join(fs) or 'n/a'} | {_durability(s)} |")
    notes = []
    timed = [r for r in rows if not r.get("strace_only")]
    for a, b in (("fastqueue", "filedir"), ("fastqueue", "postfix")):
        for key, label in (("accepted_per_s", "accepted"), ("delivered_per_s", "end to end")):
            g, lo, hi = _ratio_ci(timed, a, b, key)
            if not math.isnan(g):
                ci = f" (95% CI {lo:.2f}–{hi:.2f})" if not math.isnan(lo) else ""
                notes.append(f"- {a} / {b}, {label}: {g:.2f}×{ci}")
    ceiling = _ceiling_note(timed)
    if ceiling:
        notes.append(ceiling)
    return "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n"


def plot(rows: list[dict], systems: list[str], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timed = [r for r in rows if not r.get("strace_only")]
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.38
    for k, (key, label) in enumerate((("accepted_per_s", "accepted"), ("delivered_per_s", "end to end"))):
        means, errs = [], []
        for s in systems:
            m, h = _mean_ci([r[key] for r in timed if r["system"] == s])
            means.append(m)
            errs.append(0 if math.isnan(h) else h)
        xs = [i + (k - 0.5) * width for i in range(len(systems))]
        ax.bar(xs, means, width, yerr=errs, capsize=4, label=label)
    ax.set_xticks(range(len(systems)), systems)
    ax.set_ylabel("messages/s")
    r0 = timed[0]
    size = "size mix" if len(r0["sizes"]) > 1 else f"{r0['sizes'][0][0]} B"
    ax.set_title(f"SMTP relay to smtp-sink: {r0['users']} sessions, {size}, {len({r['rep'] for r in timed})} reps (95% CI)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def cmd_bench(args: argparse.Namespace) -> int:
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    bad = [s for s in systems if s not in SYSTEMS]
    if bad or not systems:
        raise UserError(f"--systems: unknown {', '.join(bad) or '(none)'}; choose from {', '.join(SYSTEMS)}")
    for name in ("users", "messages", "size", "reps", "probe_sessions"):
        if getattr(args, name) <= 0:
            raise UserError(f"--{name.replace('_', '-')}: must be positive")
    if args.users > args.messages:
        raise UserError("--users: more sessions than messages")
    if not (0 < args.timeout < 1e6):
        raise UserError("--timeout: must be a positive number of seconds")
    needed = ["smtp-source", "smtp-sink"] + (["postfix"] if "postfix" in systems else [])
    tools = require(*needed)
    if args.strace:
        tools.update(require("strace") if shutil.which("strace") else {})
        if "strace" not in tools:
            raise UserError("--strace: strace not found (apt-get install strace)")
    _raise_nofile(args.users + 1000)
    os.makedirs(args.out, exist_ok=True)
    base = args.dir or tempfile.mkdtemp(prefix="iolab-mail-bench-", dir="/var/tmp")
    os.makedirs(base, exist_ok=True)
    os.chmod(base, 0o755)  # Postfix's daemons run as user postfix
    rows: list[dict] = []
    disk = None
    shm = _tmpfs_dir() if args.ceiling else None
    shown = systems + ([name + CEILING for name in systems] if shm else [])
    interrupted = False
    try:
        if not args.no_loop:
            if os.geteuid() != 0:
                raise UserError("the loop-device disk needs root; run as root or with --no-loop")
            from iolab.mail.disk import LoopDisk

            print("preparing a fresh ext4 on a loop device ...", file=sys.stderr, flush=True)
            disk = LoopDisk(base)
        work = str(disk.mnt) if disk else base
        for rep in range(args.reps):
            order = systems[rep % len(systems):] + systems[:rep % len(systems)]
            for name in order:
                print(f"[rep {rep + 1}/{args.reps}] {name}: {args.users} sessions, {args.messages} messages, "
                      f"load {load_average()} ...", file=sys.stderr, flush=True)
                row = run_once(name, args, tools, work, rep, disk)
                rows.append(row)
                print(f"    accepted {row['accepted_per_s']:.0f} msg/s, end to end {row['delivered_per_s']:.0f} msg/s, "
                      f"DATA p50/p99 {row['data_ms_p50']:.1f}/{row['data_ms_p99']:.1f} ms"
                      + (f"  ERRORS: {row['errors']}" if row["errors"] else ""), file=sys.stderr, flush=True)
            for name in order if shm else []:
                print(f"[rep {rep + 1}/{args.reps}] {name}, queue on tmpfs (ceiling) ...", file=sys.stderr, flush=True)
                row = run_once(name, args, tools, shm, rep)
                row["system"], row["durability"] = name + CEILING, _durability(name + CEILING)
                rows.append(row)
                print(f"    accepted {row['accepted_per_s']:.0f} msg/s, end to end {row['delivered_per_s']:.0f} msg/s"
                      + (f"  ERRORS: {row['errors']}" if row["errors"] else ""), file=sys.stderr, flush=True)
        if args.strace:
            for name in systems:
                print(f"[strace] {name} ...", file=sys.stderr, flush=True)
                row = run_once(name, args, tools, work, 0, disk, strace=True)
                row["strace_only"] = True
                rows.append(row)
    except KeyboardInterrupt:
        interrupted = True
        print("iolab mail bench: interrupted; partial results follow", file=sys.stderr)
        if not rows:
            raise
    finally:
        if disk is not None:
            disk.close()
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
        if shm:
            shutil.rmtree(shm, ignore_errors=True)
    table = summarize(rows, shown)
    header = (f"iolab mail bench: {args.users} smtp-source sessions, {args.messages} messages/run, "
              f"{'size mix ' + str(MIX) if args.mix else str(args.size) + ' B bodies'}, {args.reps} reps; "
              f"mean ± 95% t-interval; load average at start of runs: "
              f"{', '.join(r['load_before'] for r in rows if not r.get('strace_only'))}\n\n")
    print(header + table)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(header + table)
    plot(rows, shown, os.path.join(args.out, "mail-bench.png"))
    print(f"wrote {args.out}/results.json, table.md, mail-bench.png", file=sys.stderr)
    return 130 if interrupted else 0
