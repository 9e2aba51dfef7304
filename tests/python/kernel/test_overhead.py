"""The CPU-cost analysis of `iolab kernel overhead`."""

import math

import pytest

from iolab.cli.errors import UserError
from iolab.kernel.overhead import Run, geo_interval, parse_runs, summarize, table


def runs(costs):
    """costs: {elevator: [ns per request per rep]} -> runs of 1000 requests."""
    out = []
    for e, per in costs.items():
        for rep, c in enumerate(per, start=1):
            out.append(Run(rep, e, int(c * 1000), 1000))
    return out


def test_ratios_are_paired_by_repetition():
    # mq-deadline drifts between reps; AS is 1.2x it in every rep
    s = summarize(runs({
        "none": [100, 200, 300],
        "mq-deadline": [150, 300, 450],
        "anticipatory": [180, 360, 540],
    }))
    assert s.total["anticipatory"].mean == pytest.approx(1.2)
    # identical paired ratios: a zero-width interval
    assert s.total["anticipatory"].low == pytest.approx(1.2)
    # elevator part: (180-100)/(150-100) = 1.6 in every rep
    assert s.elevator["anticipatory"].mean == pytest.approx(1.6)
    assert s.total["mq-deadline"].mean == pytest.approx(1.0)
    assert "anticipatory" in table(s)


def test_geometric_interval_and_nonpositive_ratios():
    r = geo_interval([1.0, 4.0])
    assert r.mean == pytest.approx(2.0) and r.low < 2.0 < r.high
    assert geo_interval([-1.0, 0.0]).n == 0
    s = summarize(runs({"none": [100, 100], "mq-deadline": [150, 150], "wpcas": [90, 160]}))
    assert s.nonpositive["wpcas"] == 1 and s.elevator["wpcas"].n == 1


def test_parse_runs_reports_the_line(tmp_path):
    f = tmp_path / "runs.txt"
    f.write_text("rep elevator busy_ns requests\n1 none 1000 10\n1 mq-deadline x 10\n")
    with pytest.raises(UserError, match="runs.txt:3"):
        parse_runs(f)
    f.write_text("rep elevator busy_ns requests\n1 none 1000 0\n")
    with pytest.raises(UserError, match="no requests"):
        parse_runs(f)
    f.write_text("rep elevator busy_ns requests\n1 none 1000 10\n")
    assert parse_runs(f)[0].ns_per_request == 100


def test_without_mq_deadline_there_is_nothing_to_compare():
    with pytest.raises(UserError, match="mq-deadline"):
        summarize(runs({"none": [1.0]}))
    assert math.isnan(geo_interval([]).mean)
