"""`iolab validate`: replay measured disk traces against disk models."""

from __future__ import annotations

import argparse
import json
import stat
import time
from pathlib import Path

from iolab.cli.errors import UserError

DESCRIPTION = """\
Replay a DiskSim validation trace (requests measured one at a time on a real
drive) against the drive's DiskSim 4.0 parameter files, and compare the
measured and simulated access times: statistics side by side, a breakdown by
what the drive did (trace column 2), and the demerit figure (RMS horizontal
distance between the two CDFs, computed as DiskSim's validation computes it).

With --all DIR, every NAME.parv in DIR that has a NAME.trace beside it is
validated and one table compares them, with DiskSim 4.0's own demerit on each
drive of its validation suite.
"""

EPILOG = """\
examples:
  iolab validate --diskspecs data/disksim/hp_c2247a.parv --trace data/disksim/hp_c2247a.trace
  iolab validate --all data/disksim/
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="replay measured DiskSim traces against disk models and compare",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--diskspecs", metavar="FILE",
                      help="DiskSim parameter file: the .parv (with its bus) or a .diskspecs; "
                           "FILE#NAME picks one disk of several")
    what.add_argument("--all", metavar="DIR", dest="all_dir",
                      help="validate every NAME.parv in DIR that has a NAME.trace")
    p.add_argument("--trace", metavar="FILE",
                   help="DiskSim validation trace (R|W Miss|Hit|Doub|Trip LBN blocks access_us delay_us)")
    p.add_argument("--json", metavar="OUT", help="also write the report(s) as JSON to OUT")
    p.add_argument("--requests", metavar="CSV",
                   help="also write one row per request (measured and simulated ms, model cache outcome)")
    p.add_argument("--zero-latency", action="store_true",
                   help="do zero-latency access where a file asks for it ('Immediate buffer read/write'), "
                        "which DiskSim 4.0 itself never does")
    p.set_defaults(func=run)


def check_file(option: str, path: str) -> None:
    """One clear line for a path that is not a readable regular file."""
    if not path:
        raise UserError(f"{option}: the path is empty")
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise UserError(f"{option} {path}: no such file") from None
    except OSError as e:
        raise UserError(f"{option} {path}: {e.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{option} {path}: is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{option} {path}: is not a regular file (a device, FIFO or socket)")


def run(args: argparse.Namespace) -> int:
    if args.all_dir is not None:
        if args.trace or args.requests:
            raise UserError("--all takes the traces from DIR: give neither --trace nor --requests")
        return run_all(args)
    if not args.trace:
        raise UserError("--trace: give the measured trace to replay")
    from iolab._iolab import validate

    spec_file = args.diskspecs.rsplit("#", 1)[0] if "#" in args.diskspecs else args.diskspecs
    check_file("--diskspecs", spec_file)
    check_file("--trace", args.trace)
    text, elapsed = _while_loading_rich(lambda: validate(args.diskspecs, args.trace, args.zero_latency,
                                                         args.requests))
    report = json.loads(text)
    print_report(report, elapsed)
    write_json(args.json, report)
    return 0


def _while_loading_rich(replay):
    """``replay()``'s result and the seconds it took. It runs on a thread of
    its own while this one imports the report's library (rich, a few tens of
    ms): the native replay releases the GIL, so on a second core the two
    overlap."""
    import threading

    done: dict = {}

    def work() -> None:
        start = time.perf_counter()
        try:
            done["value"] = replay(), time.perf_counter() - start
        except BaseException as e:  # raised again on the calling thread
            done["error"] = e

    worker = threading.Thread(target=work, name="iolab-validate", daemon=True)
    worker.start()
    import rich.console  # noqa: F401
    import rich.table  # noqa: F401

    worker.join()
    if "error" in done:
        raise done["error"]
    return done["value"]


def write_json(path: str | None, doc) -> None:
    if not path:
        return
    try:
        Path(path).write_text(json.dumps(doc, indent=2) + "\n")
    except OSError as e:
        raise UserError(f"--json {path}: {e.strerror}") from e


def print_report(r: dict, elapsed_s: float) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False)
    for line in build_lines(r["build"]):
        console.print(escape(line), soft_wrap=True)
    console.print(f"trace       {escape(r['trace'])} ({r['requests']} requests, "
                  f"replayed in {elapsed_s * 1e3:.0f} ms)", soft_wrap=True)
    t = Table(title="Access time (ms)")
    t.add_column("")
    for col in ("mean", "sd", "p10", "p50", "p90", "p99"):
        t.add_column(col, justify="right")
    for name in ("measured", "simulated"):
        s = r[name]
        t.add_row(name, *(f"{s[k + '_ms']:.3f}" for k in ("mean", "sd", "p10", "p50", "p90", "p99")))
    console.print(t)
    c = Table(title="By the drive's outcome (trace column 2)")
    for col in ("class", "count", "measured mean", "simulated mean", "model hit", "partial", "miss"):
        c.add_column(col, justify="right" if col != "class" else "left")
    for row in r["classes"]:
        c.add_row(row["class"], str(row["count"]), f"{row['measured_mean_ms']:.3f}",
                  f"{row['simulated_mean_ms']:.3f}", str(row["model_hits"]),
                  str(row["model_partial_hits"]), str(row["model_misses"]))
    console.print(c)
    ref = r.get("disksim_demerit_ms")
    versus = f"; DiskSim 4.0 on this drive: {ref:.6f} ms" if ref is not None else ""
    console.print(f"[bold]demerit[/bold] {r['demerit_ms']:.6f} ms "
                  f"({r['demerit_percent_of_mean']:.2f}% of the measured mean; DiskSim's binned method{versus}); "
                  f"exact on the raw samples: {r['demerit_exact_ms']:.6f} ms", soft_wrap=True)
    if r.get("rounded_to_ns"):
        # Only for traces whose times almost never repeat (memory stays bounded).
        console.print(f"note: more distinct access times than are kept exactly; the figures above are "
                      f"to {r['rounded_to_ns']} ns", soft_wrap=True)


def build_lines(b: dict) -> list[str]:
    lines = [f"disk        {b['disk']}", f"model       {b['model']}", f"cache       {b['cache']}",
             f"bus         {b['bus']}", f"controller  {b['controller']}"]
    lines += [f"warning     {w}" for w in b["warnings"]]
    lines += [f"note        {n}" for n in b["notes"]]
    return lines


def run_all(args: argparse.Namespace) -> int:
    from iolab._iolab import validate

    d = Path(args.all_dir)
    if not d.exists():
        raise UserError(f"--all {args.all_dir}: no such directory")
    if not d.is_dir():
        raise UserError(f"--all {args.all_dir}: is not a directory")
    pairs = [(p, p.with_suffix(".trace")) for p in sorted(d.glob("*.parv"))]
    pairs = [(p, t) for p, t in pairs if t.is_file()]
    if not pairs:
        raise UserError(f"--all {args.all_dir}: no NAME.parv with a NAME.trace beside it")
    reports = []
    start = time.perf_counter()
    for parv, trace in pairs:
        reports.append(json.loads(validate(str(parv), str(trace), args.zero_latency, None)))
    elapsed = time.perf_counter() - start
    print_table(reports, elapsed)
    write_json(args.json, reports)
    return 0


def print_table(reports: list[dict], elapsed_s: float) -> None:
    from rich import box
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False)
    if not console.is_terminal:
        # Piped or captured: keep each drive on one row rather than wrap.
        console = Console(highlight=False, width=max(console.width, 180))
    t = Table(title=f"iolab and DiskSim 4.0 against the measured drives ({len(reports)} drives, "
                    f"{elapsed_s:.1f} s); times in ms, measured/simulated", box=box.SIMPLE_HEAD)
    for col in ("drive", "requests", "demerit", "DiskSim", "difference", "mean", "p10", "p50", "p90", "p99",
                "reads hit/part/miss", "writes buffered/media"):
        t.add_column(col, justify="left" if col == "drive" else "right", no_wrap=True)
    for r in reports:
        m, s, c = r["measured"], r["simulated"], r["cache"]
        ref = r.get("disksim_demerit_ms")
        pair = lambda k, m=m, s=s: f"{m[k]:.2f}/{s[k]:.2f}"  # noqa: E731
        t.add_row(escape(Path(r["diskspecs"]).stem), str(r["requests"]), f"{r['demerit_ms']:.6f}",
                  f"{ref:.6f}" if ref is not None else "-",
                  f"{r['demerit_ms'] - ref:+.6f}" if ref is not None else "-",
                  pair("mean_ms"), pair("p10_ms"), pair("p50_ms"),
                  pair("p90_ms"), pair("p99_ms"),
                  f"{c['read_hits']}/{c['read_partial_hits']}/{c['read_misses']}",
                  f"{c['writes_buffered']}/{c['writes_to_media']}")
    console.print(t)
    for r in reports:
        for w in r["build"]["warnings"]:
            console.print(f"warning ({escape(Path(r['diskspecs']).stem)}): {escape(w)}", soft_wrap=True)
    console.print("demerit: DiskSim's binned method (as its runvalid computes it); DiskSim: DiskSim 4.0's own "
                  "figure on the same trace. Per-drive details: iolab validate --diskspecs NAME.parv --trace NAME.trace",
                  soft_wrap=True)
