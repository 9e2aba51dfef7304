"""`iolab sweep`: a spec over a grid of settings, locally or on Dask."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from iolab.cli.errors import positive_int


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run a spec over a grid of settings (locally or on a Dask cluster)",
                       description="Every combination of the --grid values is a point; each point runs the "
                                   "spec's schedulers on its seeds.")
    p.add_argument("spec", help="experiment spec (.toml or .json)")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...", required=True,
                   help="a swept setting (repeat for a product), e.g. as.antic_expire=2,4,6")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="a fixed override for every point")
    p.add_argument("--dask", metavar="ADDRESS",
                   help="run on the Dask scheduler at ADDRESS (tcp://host:8786), or 'local' for an in-process cluster")
    p.add_argument("-o", "--output", default="sweep-out", metavar="DIR", help="output directory (default sweep-out)")
    p.add_argument("-j", "--jobs", type=positive_int, default=None,
                   help="parallel jobs without --dask (default: all cores)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from iolab import report
    from iolab.simulate import parse_overrides, read_spec_text
    from iolab.sweep import parse_grid, run_sweep, summary_rows

    path = Path(args.spec)
    text = read_spec_text(path)
    fmt = "json" if path.suffix == ".json" else "toml"
    fixed = parse_overrides(args.overrides)
    grid = parse_grid(args.grid, fixed)
    result = run_sweep(text, str(path), fmt, fixed, grid, dask_address=args.dask, workers=args.jobs,
                       quiet=args.quiet)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    keys = [k for k, _ in grid]
    summary = summary_rows(result, keys)
    report._write_csv(out / "sweep-runs.csv", result.rows)
    report._write_csv(out / "sweep-summary.csv", summary)
    docs = {**result.docs}
    (out / "sweep.json").write_text(json.dumps(docs, indent=1, sort_keys=True) + "\n")
    if summary:
        t = Table(title=f"sweep over {', '.join(keys)} (mean ± 95% CI)")
        for k in keys + ["scheduler", "runs", "MB/s", "p99 ms", "decept. idle ms"]:
            t.add_column(k)
        cols = ["throughput_mb_s", "lat_p99_ms", "deceptive_idleness_ms"]
        for row in summary:
            cells = [f"{report._fmt(row[c + '_mean'])}" + (f" ±{report._fmt_ci(row[c + '_ci95'])}"
                                                          if row[c + "_ci95"] > 0 else "") for c in cols]
            t.add_row(*(str(row[k]) for k in keys), str(row["scheduler"]), str(row["runs"]), *cells)
        Console().print(t)
    print(f"wrote {out}/sweep-runs.csv, sweep-summary.csv, sweep.json")
    if result.interrupted:
        missing = [f"{label} ({done} of {jobs} runs)" for label, done, jobs in result.incomplete]
        print(f"iolab: interrupted; kept {len(result.rows)} finished run(s). Incomplete points: "
              + ("; ".join(missing) if missing else "none"), file=sys.stderr)
        return 130
    return 0
