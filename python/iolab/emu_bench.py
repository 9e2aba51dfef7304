"""Benchmark of the emulated disk: random 4 KiB reads from QEMU's own NBD
client (``qemu-io``), one at a time, against what ``iolab run`` predicts
for one synchronous random reader on the same disk model.

    python -m iolab.emu_bench --disks hp97560,modern7200 --requests 500

For each disk it prints, with 95% intervals:
- the emulator's IOPS as the client got them (requests over the span from
  the first arrival to the last reply), and the mean model service time;
- the client's own gap per request (from a reply to the next request's
  arrival: qemu-io, QEMU's NBD client, the socket) and the emulator's
  lateness (reply after the model's completion), which together make the
  difference between the two rates;
- the simulator's IOPS and mean latency for the same load (3 seeds);
- ``iolab emu --check`` of the run's log (the model agrees request by
  request, every request started when it should).

It needs ``qemu-io`` (Debian: qemu-utils). Figures are measurements, not
tests: docs/emu.md quotes them with the load of the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np
from scipy import stats as st

from iolab.emu import check_log


def _t_interval(x: np.ndarray) -> tuple[float, float]:
    """Mean and half-width of its 95% t interval."""
    m = float(np.mean(x))
    if len(x) < 2:
        return m, float("nan")
    return m, float(st.t.ppf(0.975, len(x) - 1) * np.std(x, ddof=1) / np.sqrt(len(x)))


def _spec(disk: str, capacity_bytes: int, seconds: float, seeds: int) -> dict[str, Any]:
    return {
        "name": f"one synchronous random 4 KiB reader over the whole {disk}",
        "disk": {"preset": disk},
        "scheduler": [{"name": "noop"}],
        "workload": {
            "kind": "processes",
            "placement": "packed",
            "group": [{
                "name": "randreader", "count": 1, "pattern": "random", "op": "read", "sync": True,
                "request_kb": 4, "file_mb": capacity_bytes // (1 << 20),
            }],
        },
        "run": {"duration_s": seconds, "seed": 1, "repetitions": seeds},
    }


def simulate(disk: str, capacity_bytes: int, seconds: float, seeds: int) -> dict[str, Any]:
    from iolab.simulate import run_experiment, spec_from_dict

    doc = run_experiment(spec_from_dict(_spec(disk, capacity_bytes, seconds, seeds))).document
    iops = np.array([r["iops"] for r in doc["runs"]])
    lat = np.array([r["latency_ms"]["mean"] for r in doc["runs"]])
    return {"iops": _t_interval(iops), "latency_ms": _t_interval(lat), "seeds": len(iops)}


def emulate(disk: str, requests: int, seed: int, workdir: str, realtime: bool, zero_latency: bool = False) -> dict[str, Any]:
    from iolab._iolab import Emulator

    sock = os.path.join(workdir, f"{disk}.sock")
    log = os.path.join(workdir, f"{disk}{'-zero' if zero_latency else ''}.csv")
    emu = Emulator(os.path.join(workdir, f"{disk}.img"), socket=sock, preset=disk, log=log,
                   realtime=realtime, zero_latency=zero_latency)
    try:
        rng = random.Random(seed)
        blocks = emu.capacity_bytes // 4096
        script = "".join(f"read {rng.randrange(blocks) * 4096} 4k\n" for _ in range(requests))
        t0 = time.monotonic()
        proc = subprocess.run(["qemu-io", "-f", "raw", f"nbd+unix:///?socket={sock}"], input=script,
                              capture_output=True, text=True, timeout=3600)
        wall = time.monotonic() - t0
        if proc.returncode != 0 or proc.stdout.count("read 4096/4096") != requests:
            raise RuntimeError(f"qemu-io failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    finally:
        emu.stop()
        while not emu.wait(1.0):
            pass
    report = check_log(log)
    df = report.requests
    rd = df[(df["op"] == "read") & (df["error"] == "")].reset_index(drop=True)
    cycle = np.diff(rd["reply_ns"].to_numpy()) / 1e9  # one request per cycle, at QD 1
    gap = (rd["arrival_ns"].to_numpy()[1:] - rd["reply_ns"].to_numpy()[:-1]) / 1e6
    c_mean, c_half = _t_interval(cycle)
    return {
        "requests": len(rd),
        "iops": (1 / c_mean, (1 / (c_mean - c_half) - 1 / (c_mean + c_half)) / 2),
        "qemu_io_wall_s": wall,
        "service_ms": _t_interval(rd["service_ns"].to_numpy() / 1e6),
        "client_gap_ms": _t_interval(gap),
        "late_ms": _t_interval(rd["late_ns"].to_numpy() / 1e6),
        "check": report.summary,
        "realtime": emu.realtime,
    }


def _fmt(v: tuple[float, float], digits: int = 2) -> str:
    return f"{v[0]:.{digits}f} ± {v[1]:.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m iolab.emu_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--disks", default="hp97560,modern7200")
    ap.add_argument("--requests", type=int, default=500, help="random reads per disk (default 500)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sim-seconds", type=float, default=120.0, help="simulated time per seed")
    ap.add_argument("--no-realtime", action="store_true")
    ap.add_argument("--dir", help="keep images and logs here (default: a temporary directory)")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)
    if shutil.which("qemu-io") is None:
        print("emu_bench: qemu-io not found (Debian: apt-get install qemu-utils)", file=sys.stderr)
        return 2
    workdir = args.dir or tempfile.mkdtemp(prefix="iolab-emu-bench-")
    os.makedirs(workdir, exist_ok=True)
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores); {args.requests} random 4 KiB reads per disk")
    out: dict[str, Any] = {"load_start": os.getloadavg(), "requests": args.requests, "disks": {}}
    # The client's own cost per request, on a disk that costs nothing.
    zero = emulate("hp97560", args.requests, args.seed, workdir, not args.no_realtime, zero_latency=True)
    print(f"zero-latency disk: {_fmt(zero['iops'], 0)} IOPS; qemu-io's gap per request "
          f"{_fmt(zero['client_gap_ms'], 3)} ms; reply lateness {_fmt(zero['late_ms'], 3)} ms")
    out["zero_latency"] = zero
    for disk in args.disks.split(","):
        emu = emulate(disk, args.requests, args.seed, workdir, not args.no_realtime)
        sim = simulate(disk, _capacity(disk), args.sim_seconds, 3)
        diff = (emu["iops"][0] - sim["iops"][0]) / sim["iops"][0]
        # The simulator has no client: add the client's own gap, measured
        # on the zero-latency disk (an input, not fitted to this run).
        with_gap = 1000 / (sim["latency_ms"][0] + zero["client_gap_ms"][0])
        late = emu["check"]["late"]
        print(f"\n{disk}  ({'real-time' if emu['realtime'] else 'normal'} priority)")
        print(f"  emulated, qemu-io:   {_fmt(emu['iops'])} IOPS; mean service {_fmt(emu['service_ms'])} ms; "
              f"client gap {_fmt(emu['client_gap_ms'], 3)} ms; lateness {_fmt(emu['late_ms'], 3)} ms")
        print(f"  simulated (iolab run, {sim['seeds']} seeds): {_fmt(sim['iops'])} IOPS; "
              f"mean latency {_fmt(sim['latency_ms'])} ms")
        print(f"  simulated + qemu-io's gap from the zero-latency run: {with_gap:.2f} IOPS")
        print(f"  emulated/simulated IOPS: {diff:+.1%}; emulated/(simulated + gap): "
              f"{emu['iops'][0] / with_gap - 1:+.1%}")
        print(f"  timing error (reply - model completion): p50 {late['p50_ns'] / 1e3:.0f} us, "
              f"p90 {late['p90_ns'] / 1e3:.0f} us, p99 {late['p99_ns'] / 1e3:.0f} us, max {late['max_ns'] / 1e3:.0f} us")
        print(f"  log check: {emu['check']['model_agreement']}/{emu['check']['served']} agree with the model, "
              f"{emu['check']['schedule_violations']} schedule violations")
        out["disks"][disk] = {"emulated": emu, "simulated": sim, "iops_ratio": 1 + diff,
                              "simulated_with_gap_iops": with_gap}
    out["load_end"] = os.getloadavg()
    print(f"\nload average at end: {out['load_end'][0]:.2f}; logs in {workdir}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2, default=float)
    return 0


def _capacity(disk: str) -> int:
    from iolab._iolab import EmuModel

    return EmuModel(json.dumps({"preset": disk}), False).capacity_bytes


if __name__ == "__main__":
    sys.exit(main())
