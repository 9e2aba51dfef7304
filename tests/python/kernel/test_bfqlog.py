"""`iolab kernel bfqlog`: BFQ's decisions read back from a blk tracer file.

The sample is cut from a real trace (`iolab kernel compare --disks hp97560
--workloads randseq --elevators bfq --trace bfq`, 2026-11-27): 0.54 s
around the moment the kernel merged fio's four queues.
"""

from pathlib import Path

import pytest

from iolab.cli.errors import UserError
from iolab.kernel import bfqlog

SAMPLE = Path(__file__).parent / "data" / "bfq-randseq.trace"


def test_the_sample_shows_the_merges_and_one_issue_per_turn():
    tr = bfqlog.parse(SAMPLE)
    assert [m for _, m in tr.merges] == ["bfq133S -> 134", "bfq135S -> -1"]
    assert tr.shared_messages > 0
    assert tr.expirations == {"budget timeout": 3}
    assert set(tr.raising_max_ms) == {300, 10500}
    runs = bfqlog.runs_per_process(tr.issues)
    assert sum(sum(r) for r in runs.values()) == len(tr.issues) == 15
    # Each process's request is issued by the shared queue in turn: no process
    # keeps the disk for two requests in a row.
    assert all(max(r) == 1 for p, r in runs.items() if p > 0)


def test_report_names_every_process_and_window():
    text = bfqlog.report(SAMPLE, window_s=0.25)
    assert "15 requests issued" in text
    assert "merges: 30.77 s bfq133S -> 134" in text
    assert "0-0.25" in text


def test_runs_count_consecutive_issues():
    issues = [(0.0, 1), (0.1, 1), (0.2, 2), (0.3, 1), (0.4, 2), (0.5, 2), (0.6, 2)]
    assert bfqlog.runs_per_process(issues) == {1: [2, 1], 2: [1, 3]}


def test_a_file_without_block_events_is_one_clear_error(tmp_path):
    f = tmp_path / "x.trace"
    f.write_text("# tracer: nop\n")
    with pytest.raises(UserError, match="no block-layer issue"):
        bfqlog.parse(f)
    with pytest.raises(UserError, match="No such file"):
        bfqlog.parse(tmp_path / "missing.trace")


def test_the_command_names_each_bad_path_for_what_it_is(tmp_path, capsys):
    from types import SimpleNamespace

    def run(path, window=5.0):
        with pytest.raises(UserError) as e:
            bfqlog.run_bfqlog(SimpleNamespace(paths=[str(path)], window=window))
        return str(e.value)

    assert "no such file" in run(tmp_path / "missing")
    assert "not a regular file" in run("/dev/null")
    assert "no runs/*.trace" in run(tmp_path)
    assert "--window" in run(SAMPLE, float("nan"))
    bfqlog.run_bfqlog(SimpleNamespace(paths=[str(SAMPLE)], window=0.1))
    assert "15 requests issued" in capsys.readouterr().out
