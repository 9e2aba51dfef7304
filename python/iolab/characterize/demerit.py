"""The issue's last goal: the extracted model's demerit on the drive's
DiskSim validation trace against the true model's, and where it comes
from.

Both models replay the whole trace (``_iolab.validate``, what `iolab
validate` runs); the demerit is then taken over all requests, and over the
reads and the writes alone (the same replay, split by direction: the RMS
distance between the measured and simulated access times' distributions,
as validate's "exact on the raw samples"). The characterization never
writes, so a drive whose writes cost other than its reads (other
overheads, a write-back cache) shows that in the writes' figure, not the
reads'.
"""

from __future__ import annotations

import csv
import json
import math
import tempfile
from pathlib import Path


def rms_distance(a: list[float], b: list[float]) -> float:
    """The RMS horizontal distance between the distributions of two samples
    of one size: their sorted values paired."""
    if len(a) != len(b) or not a:
        raise ValueError("two samples of one size are needed")
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(sorted(a), sorted(b))) / len(a))


def _replay(spec: str, trace: str, out: Path) -> tuple[float, dict[str, float]]:
    from iolab._iolab import validate

    report = json.loads(validate(spec, trace, False, str(out)))
    rows = list(csv.DictReader(out.open()))
    split = {}
    for d in ("R", "W"):
        m = [float(r["measured_ms"]) for r in rows if r["dir"] == d]
        s = [float(r["simulated_ms"]) for r in rows if r["dir"] == d]
        if m:
            split[d] = rms_distance(m, s)
    return float(report["demerit_ms"]), split


def compare(extracted: str, true: str, trace: str) -> list[tuple[str, str, str, str, str, bool | None]]:
    """Rows (as prove.table takes them): the demerit over all requests with
    the goal (at most 1.5 times the true model's), then over reads and
    writes alone."""
    with tempfile.TemporaryDirectory(prefix="iolab-demerit-") as tmp:
        dx, sx = _replay(extracted, trace, Path(tmp) / "x.csv")
        dt, st = _replay(true, trace, Path(tmp) / "t.csv")
    rows: list[tuple[str, str, str, str, str, bool | None]] = [
        ("demerit on the validation trace", f"{dt:.3f} ms", f"{dx:.3f} ms", f"{dx / dt:.2f}x",
         "at most 1.5x", dx <= 1.5 * dt)]
    for d, name in (("R", "reads"), ("W", "writes")):
        if d in sx and d in st:
            rows.append((f"  of its {name} alone (same replay)", f"{st[d]:.3f} ms", f"{sx[d]:.3f} ms",
                         f"{sx[d] / st[d]:.2f}x", "", None))
    return rows
