"""`iolab run`, `iolab compare` and `iolab presets`: the simulator."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from iolab.cli.errors import UserError


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a spec field (workload.processes=40) or a tunable (as.antic_expire=4)")
    p.add_argument("-o", "--output", metavar="DIR", help="write results.json, CSVs, report.md/.html and plots here")
    p.add_argument("--json", metavar="FILE", help="write the result document (JSON) to FILE")
    p.add_argument("--csv", metavar="FILE", help="write one CSV row per run to FILE")
    p.add_argument("-j", "--jobs", type=int, default=None, help="parallel jobs (default: all cores)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots in --output")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run an experiment spec (TOML)", description="Run every scheduler of a spec on every seed.")
    p.add_argument("spec", help="experiment spec (.toml, or .json)")
    _add_output_options(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("compare", help="compare schedulers on a disk preset and a named workload",
                       description="Build a spec from the options and run it (see `iolab presets`).")
    p.add_argument("--disk", default="hp97560", help="disk preset (default hp97560)")
    p.add_argument("--workload", default="iozone", help="named workload (default iozone)")
    p.add_argument("--schedulers", default="noop,deadline,as", help="comma-separated scheduler names")
    p.add_argument("--seeds", type=int, default=3, help="repetitions with seeds 1..N (default 3)")
    p.add_argument("--duration", type=float, default=None, metavar="S", help="simulated seconds per run")
    p.add_argument("--max-requests", type=int, default=None, metavar="N", help="stop each run after N requests")
    _add_output_options(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("presets", help="list disks, workloads and schedulers with their tunables")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(func=cmd_presets)


def _console():
    from rich.console import Console

    return Console(stderr=False)


def _execute(exp, args, base_dir: str = "") -> int:
    from iolab import _iolab, report
    from iolab.cli.progress import run_with_progress
    from rich.markup import escape

    console = _console()
    if not args.quiet:
        # Which disk was built, from which file (disk, model, bus, controller).
        disk = json.dumps(json.loads(exp.spec_json())["disk"])
        for line in _iolab.disk_report(disk, base_dir):
            console.print(escape(line), soft_wrap=True, highlight=False)
    outcome = run_with_progress([exp], workers=args.jobs, quiet=args.quiet)[0]
    doc = outcome.document
    if doc["runs"]:
        report.print_summary(doc, console)
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    if args.csv:
        report.runs_frame(doc).to_csv(args.csv, index=False, float_format="%.6g")
    if args.output:
        files = report.write_outputs(doc, Path(args.output), plots=not args.no_plots)
        console.print(f"wrote {len(files)} files to {args.output}/ (report.md, report.html, results.json, ...)")
    if outcome.interrupted:
        print(f"iolab: interrupted; kept {len(doc['runs'])} finished run(s)", file=sys.stderr)
        return 130
    return 0


def cmd_run(args) -> int:
    from iolab.simulate import load_spec, parse_overrides

    exp = load_spec(args.spec, parse_overrides(args.overrides))
    return _execute(exp, args, str(Path(args.spec).parent))


def cmd_compare(args) -> int:
    from iolab import _iolab
    from iolab.simulate import parse_overrides, spec_from_dict

    names = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    if not names:
        raise UserError("--schedulers: give at least one scheduler name")
    if args.seeds < 1:
        raise UserError("--seeds: must be at least 1")
    run: dict = {"seed": 1, "repetitions": args.seeds}
    if args.duration is not None:
        run["duration_s"] = args.duration
    if args.max_requests is not None:
        run["max_requests"] = args.max_requests
    spec = {
        "name": f"{args.workload} on {args.disk}",
        "disk": {"preset": args.disk},
        "scheduler": [{"name": n} for n in names],
        "workload": json.loads(_iolab.workload_preset(args.workload)),
        "run": run,
    }
    exp = spec_from_dict(spec, "<iolab compare>", parse_overrides(args.overrides))
    return _execute(exp, args)


def cmd_presets(args) -> int:
    from iolab import _iolab

    data = json.loads(_iolab.presets())
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    from rich.table import Table

    console = _console()
    t = Table(title="disks")
    t.add_column("preset")
    t.add_column("description")
    for d in data["disks"]:
        t.add_row(d["name"], d["summary"])
    console.print(t)
    t = Table(title="workloads (iolab compare --workload NAME)")
    t.add_column("name")
    t.add_column("description")
    for w in data["workloads"]:
        t.add_row(w["name"], w["summary"])
    console.print(t)
    t = Table(title="schedulers and tunables (--set SCHED.TUNABLE=VALUE)")
    for col in ("scheduler", "tunable", "default", "unit", "range", "meaning"):
        t.add_column(col)
    for s in data["schedulers"]:
        alias = f" ({', '.join(s['aliases'])})" if s["aliases"] else ""
        if not s["tunables"]:
            t.add_row(s["name"] + alias, "-", "", "", "", s["summary"])
        for i, tun in enumerate(s["tunables"]):
            t.add_row(s["name"] + alias if i == 0 else "", tun["name"], f"{tun['default']:g}", tun["unit"],
                      f"{tun['min']:g}..{tun['max']:g}", tun["help"])
    console.print(t)
    return 0
