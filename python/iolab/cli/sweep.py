"""`iolab sweep`: a spec over a grid of settings, locally or on Dask."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from iolab.cli.errors import UserError


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
    p.add_argument("-j", "--jobs", type=int, default=None, help="parallel jobs without --dask (default: all cores)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from iolab import report
    from iolab.simulate import parse_overrides
    from iolab.sweep import parse_grid, run_sweep

    path = Path(args.spec)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such spec file") from None
    fmt = "json" if path.suffix == ".json" else "toml"
    grid = parse_grid(args.grid)
    runs, docs = run_sweep(text, str(path), fmt, parse_overrides(args.overrides), grid,
                           dask_address=args.dask, workers=args.jobs, quiet=args.quiet)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    runs.to_csv(out / "sweep-runs.csv", index=False, float_format="%.6g")
    (out / "sweep.json").write_text(json.dumps(docs, indent=1, sort_keys=True) + "\n")
    keys = [k for k, _ in grid]
    cols = ["throughput_mb_s", "lat_p99_ms", "deceptive_idleness_ms"]
    summary = runs.groupby(keys + ["scheduler"], sort=False)[cols].agg(["mean", lambda v: report.ci95(v.to_numpy(dtype=float))])
    summary.columns = [f"{c}_{'ci95' if s != 'mean' else 'mean'}" for c, s in summary.columns]
    summary.reset_index().to_csv(out / "sweep-summary.csv", index=False, float_format="%.6g")
    t = Table(title=f"sweep over {', '.join(keys)} (mean ± 95% CI)")
    for k in keys + ["scheduler", "MB/s", "p99 ms", "decept. idle ms"]:
        t.add_column(k)
    for idx, row in summary.iterrows():
        t.add_row(*map(str, idx), *(f"{row[c + '_mean']:.3f} ±{row[c + '_ci95']:.3f}" for c in cols))
    Console().print(t)
    print(f"wrote {out}/sweep-runs.csv, sweep-summary.csv, sweep.json")
    return 0
