"""`iolab run`, `iolab compare` and `iolab presets`: the simulator."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from iolab.cli.errors import UserError, finite_positive, positive_int


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a spec field (workload.processes=40) or a tunable (as.antic_expire=4)")
    p.add_argument("-o", "--output", metavar="DIR", help="write results.json, CSVs, report.md/.html and plots here")
    p.add_argument("--json", metavar="FILE", help="write the result document (JSON) to FILE")
    p.add_argument("--csv", metavar="FILE", help="write one CSV row per run to FILE")
    p.add_argument("-j", "--jobs", type=positive_int, default=None, help="parallel jobs (default: all cores)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots in --output")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run an experiment spec (TOML)", description="Run every scheduler of a spec on every seed.")
    p.add_argument("spec", help="experiment spec (.toml, or .json)")
    _add_output_options(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("compare", help="compare schedulers on a disk preset and a named workload",
                       description="Build a spec from the options and run it (see `iolab presets`).")
    p.add_argument("--disk", default="hp97560",
                   help="disk preset (default hp97560), or a TOML file with a [disk] table (iolab characterize writes one)")
    p.add_argument("--workload", default="iozone", help="named workload (default iozone)")
    p.add_argument("--schedulers", default="noop,deadline,as", help="comma-separated scheduler names")
    p.add_argument("--seeds", type=positive_int, default=3, metavar="N", help="repetitions with seeds 1..N (default 3)")
    p.add_argument("--duration", type=finite_positive, default=None, metavar="S", help="simulated seconds per run")
    p.add_argument("--max-requests", type=positive_int, default=None, metavar="N", help="stop each run after N requests")
    _add_output_options(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("presets", help="list disks, workloads and schedulers with their tunables")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(func=cmd_presets)


def _console():
    from rich.console import Console

    return Console(stderr=False)


def _import_report() -> None:
    """The modules the report needs (rich's console and table, about 50 ms
    of imports), imported while the simulation runs."""
    import rich.console  # noqa: F401
    import rich.table  # noqa: F401

    from iolab import report  # noqa: F401


def _execute(exp, args, base_dir: str = "") -> int:
    from iolab import _iolab
    from iolab.cli.progress import run_with_progress

    if not args.quiet:
        from rich.markup import escape

        console = _console()
        # Which disk was built, from which file (disk, model, bus, controller).
        disk = json.dumps(json.loads(exp.spec_json())["disk"])
        for line in _iolab.disk_report(disk, base_dir):
            console.print(escape(line), soft_wrap=True, highlight=False)
    outcome = run_with_progress([exp], workers=args.jobs, quiet=args.quiet, meanwhile=_import_report)[0]
    if args.quiet:
        console = _console()
    try:
        return _report(outcome, args, console)
    finally:
        outcome.store.close()


def _report(outcome, args, console) -> int:
    from iolab import report

    # Summaries only in memory; the files get every run in full, streamed.
    doc = outcome.summary_document()
    if doc["runs"]:
        report.print_summary(doc, console)
    if args.json:
        outcome.write_json(Path(args.json))
    if args.csv:
        report.write_runs_csv(doc, args.csv)
    if args.output:
        files = report.write_outputs(doc, Path(args.output), plots=not args.no_plots,
                                     write_json=outcome.write_json)
        names = ", ".join(f.name for f in files)
        console.print(f"wrote {len(files)} files to {args.output}/: {names}", highlight=False)
    if outcome.interrupted:
        print(f"iolab: interrupted; kept {len(doc['runs'])} finished run(s)", file=sys.stderr)
        return 130
    return 0


def cmd_run(args) -> int:
    from iolab.simulate import load_spec, parse_overrides

    exp = load_spec(args.spec, parse_overrides(args.overrides), progress=not args.quiet)
    return _execute(exp, args, str(Path(args.spec).parent))


def cmd_compare(args) -> int:
    from iolab import _iolab
    from iolab.simulate import parse_overrides, spec_from_dict

    names = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    if not names:
        raise UserError("--schedulers: give at least one scheduler name")
    if args.seeds > _iolab.MAX_SEEDS:
        raise UserError(f"--seeds {args.seeds}: at most {_iolab.MAX_SEEDS} seeds")
    run: dict = {"seed": 1, "repetitions": args.seeds}
    if args.duration is not None:
        run["duration_s"] = args.duration
    if args.max_requests is not None:
        run["max_requests"] = args.max_requests
    disk = _disk_arg(args.disk)
    spec = {
        "name": f"{args.workload} on {args.disk}",
        "disk": disk,
        "scheduler": [{"name": n} for n in names],
        "workload": json.loads(_iolab.workload_preset(args.workload)),
        "run": run,
    }
    exp = spec_from_dict(spec, "<iolab compare>", parse_overrides(args.overrides), progress=not args.quiet)
    return _execute(exp, args)


def _disk_arg(arg: str) -> dict:
    """--disk: a preset name, or a TOML file's [disk] table."""
    from iolab.diskfile import DiskFileError, is_disk_file, load_disk

    if not is_disk_file(arg):
        return {"preset": arg}
    try:
        return load_disk(arg)
    except DiskFileError as e:
        raise UserError(str(e)) from None


def _num(x: float) -> str:
    """A tunable's number as sysfs would show it: 2147483647, not 2.14748e+09."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _wrapped(left: str, text: str, width: int, indent: int) -> list[str]:
    """`left` then `text`, wrapped with a hanging indent; when too little
    room is left beside `left`, `text` goes on the lines below it."""
    import textwrap

    room = width - len(left)
    if room >= 32 or room >= len(text):
        lines = textwrap.wrap(text, max(room, 20)) or [""]
        return [left + lines[0]] + [" " * len(left) + line for line in lines[1:]]
    return [left.rstrip()] + textwrap.wrap(text, width - indent, initial_indent=" " * indent,
                                           subsequent_indent=" " * indent)


def cmd_presets(args) -> int:
    import shutil

    from iolab import _iolab

    data = json.loads(_iolab.presets())
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    width = max(60, shutil.get_terminal_size((100, 24)).columns)
    out: list[str] = ["disks ([disk] preset = NAME, iolab compare --disk NAME)"]
    for d in data["disks"]:
        out += _wrapped(f"  {d['name']:<12} ", d["summary"], width, 6)
    out += ["", "workloads (iolab compare --workload NAME)"]
    for w in data["workloads"]:
        out += _wrapped(f"  {w['name']:<19} ", w["summary"], width, 6)
    out += ["", "schedulers and tunables ([[scheduler]] fields, or --set SCHEDULER.TUNABLE=VALUE)"]
    for s in data["schedulers"]:
        alias = f" (also {', '.join(s['aliases'])})" if s["aliases"] else ""
        out += [""] + _wrapped(f"  {s['name']}{alias}: ", s["summary"], width, 6)
        for t in s["tunables"]:
            value = f"{_num(t['default'])} {t['unit']}".strip()
            left = f"    {t['name']:<19} {value:<12} {_num(t['min'])}..{_num(t['max'])}"
            out += _wrapped(f"{left:<56} ", t["help"], width, 8)
    print("\n".join(out))
    return 0
