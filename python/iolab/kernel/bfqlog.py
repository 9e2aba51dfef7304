"""What the kernel's BFQ did in a traced run of ``iolab kernel compare
--trace bfq``: the blk tracer's text (``runs/ID.trace``) read back.

The trace holds the block layer's events (``Q`` queued by a process, ``D``
issued to the driver, ``C`` completed) and BFQ's own messages
(``bfq_log_bfqq``: ``bfq<pid><S|A>`` or ``bfqSHARED-S`` for a merged queue,
then the text). From them: which process each issued request belonged to
(the ``Q`` of the same sector), how long each process kept the disk (runs
of consecutive issues), the issues per process in time windows, the queue
merges, the expirations by reason and the weight-raising periods. This is
what found that the kernel's BFQ merges the queues of fio's jobs
(docs/schedulers.md).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from iolab.cli.errors import UserError

# `enum bfqq_expiration` (block/bfq-iosched.h, 6.1).
EXPIRE_REASONS = ["too idle", "budget timeout", "budget exhausted", "no more requests", "preempted"]

BLOCK_EVENT = re.compile(r"^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+\[\d+\]\s+\S+\s+(?P<t>[\d.]+):\s+\d+,\d+\s+"
                    r"(?P<act>[A-Z])\s+(?P<rwbs>[A-Z]+)\s+(?P<sector>\d+) \+ (?P<n>\d+)")
MESSAGE = re.compile(r"^\s*.+?-\d+\s+\[\d+\]\s+\S+\s+(?P<t>[\d.]+):\s+\d+,\d+\s+(?:\d+,\d+\s+)?m\s+N\s+"
                      r"(?P<text>.*)$")
_QUEUE = re.compile(r"^bfq(?P<q>\d+|SHARED-)(?P<kind>[SA]) (?P<text>.*)$")


@dataclass
class BfqTrace:
    """One traced run, summarised."""

    # (time, process) per D; process -1: its Q is not in the trace
    issues: list[tuple[float, int]] = field(default_factory=list)
    merges: list[tuple[float, str]] = field(default_factory=list)
    expirations: Counter = field(default_factory=Counter)  # reason -> count
    raising_max_ms: Counter = field(default_factory=Counter)  # wr_cur_max_time -> dispatches seen
    shared_messages: int = 0
    messages: int = 0


def read_trace(path: Path) -> str:
    """A blk tracer text file's contents (undecodable bytes replaced); a file
    that cannot be read is one error naming it."""
    try:
        return path.read_text(errors="replace")
    except OSError as e:
        raise UserError(f"{path}: {e.strerror}") from None


def parse(path: Path) -> BfqTrace:
    """Read a blk tracer text file; a file with no block events is refused."""
    text = read_trace(path)
    owner: dict[int, int] = {}
    out = BfqTrace()
    for line in text.splitlines():
        m = BLOCK_EVENT.match(line)
        if m:
            sector, pid = int(m["sector"]), int(m["pid"])
            if m["act"] == "Q":
                owner[sector] = pid
            elif m["act"] == "D":
                out.issues.append((float(m["t"]), owner.get(sector, -1)))
            continue
        m = MESSAGE.match(line)
        if not m:
            continue
        out.messages += 1
        q = _QUEUE.match(m["text"])
        if not q:
            continue
        if q["q"] == "SHARED-":
            out.shared_messages += 1
        body = q["text"]
        if body.startswith("scheduling merge with queue"):
            out.merges.append((float(m["t"]), f"bfq{q['q']}{q['kind']} -> {body.rsplit(' ', 1)[-1]}"))
        elif body.startswith("expire ("):
            reason = int(body[len("expire ("):].split(",")[0])
            out.expirations[EXPIRE_REASONS[reason] if 0 <= reason < len(EXPIRE_REASONS) else str(reason)] += 1
        elif body.startswith("raising period dur"):
            # "raising period dur D/M msec, old coeff C, ..."
            out.raising_max_ms[int(body.split()[3].split("/")[1])] += 1
    if not out.issues:
        raise UserError(f"{path}: no block-layer issue (D) events: not a blk tracer trace of a run")
    return out


def runs_per_process(issues: list[tuple[float, int]]) -> dict[int, list[int]]:
    """Lengths of the runs of consecutive issues of each process."""
    runs: dict[int, list[int]] = defaultdict(list)
    cur, n = None, 0
    for _, pid in issues:
        if pid == cur:
            n += 1
            continue
        if cur is not None:
            runs[cur].append(n)
        cur, n = pid, 1
    if cur is not None:
        runs[cur].append(n)
    return dict(runs)


def report(path: Path, window_s: float = 5.0) -> str:
    """A plain-text summary of one traced run."""
    tr = parse(path)
    runs = runs_per_process(tr.issues)
    # The run's own processes issue most requests; the two marker reads
    # that bracket a run come from `dd`, one each.
    pids = sorted(p for p, r in runs.items() if sum(r) >= max(2, len(tr.issues) // 100))
    lines = [f"{path}: {len(tr.issues)} requests issued, {tr.messages} BFQ messages "
             f"({tr.shared_messages} of a merged queue)"]
    lines.append("merges: " + ("; ".join(f"{t:.2f} s {m}" for t, m in tr.merges) or "none"))
    lines.append("expirations: " + (", ".join(f"{k} {v}" for k, v in tr.expirations.most_common()) or "none"))
    lines.append("raising periods seen at dispatch (max ms: count): "
                 + (", ".join(f"{k}: {v}" for k, v in sorted(tr.raising_max_ms.items())) or "none"))
    lines.append("process  issued  runs  mean run  longest run")
    for p in pids:
        r = runs[p]
        lines.append(f"{p if p >= 0 else '?':>7}  {sum(r):>6}  {len(r):>4}  {sum(r) / len(r):>8.2f}  {max(r):>11}")
    t0 = min(t for t, p in tr.issues if p in pids) if pids else tr.issues[0][0]
    per: dict[int, Counter] = defaultdict(Counter)
    for t, p in tr.issues:
        if p in pids:
            per[int((t - t0) // window_s)][p] += 1
    lines.append(f"issued per {window_s:g} s window: " + "  ".join(str(p) if p >= 0 else "?" for p in pids))
    for k in sorted(per):
        lines.append(f"  {k * window_s:>5g}-{(k + 1) * window_s:<5g} " + "  ".join(f"{per[k][p]:>4}" for p in pids))
    return "\n".join(lines)


def register(sub) -> None:
    b = sub.add_parser("bfqlog", help="what the kernel's BFQ did in runs traced by `kernel compare --trace bfq`",
                       description="Summarise blk tracer files (DIR/DISK/runs/ID.trace of `iolab kernel "
                                   "compare --trace bfq`, or files named directly): requests per process "
                                   "and how long each kept the disk, queue merges, expirations by "
                                   "reason, weight-raising periods.")
    b.add_argument("paths", nargs="+", metavar="PATH", help="a .trace file, or a compare directory")
    b.add_argument("--window", type=float, default=5.0, metavar="S", help="window of the per-process counts (default 5 s)")
    b.set_defaults(func=run_bfqlog)


def run_bfqlog(args) -> int:
    if not (0 < args.window < 1e6):
        raise UserError("--window must be a positive number of seconds under 10^6")
    files: list[Path] = []
    for p in map(Path, args.paths):
        if p.is_dir():
            found = sorted(p.glob("*/runs/*.trace")) + sorted(p.glob("runs/*.trace"))
            if not found:
                raise UserError(f"{p}: no runs/*.trace (was the comparison run with --trace bfq?)")
            files += found
        elif p.is_file():
            files.append(p)
        elif p.exists():
            raise UserError(f"{p}: not a regular file or a directory (a device or a FIFO?)")
        else:
            raise UserError(f"{p}: no such file or directory")
    print("\n\n".join(report(f, args.window) for f in files))
    return 0
