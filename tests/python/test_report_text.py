"""What the summary says (issue 12): the title promises only what the table
shows, a small interval never reads ±0.000, deterministic runs are named,
and `-o` reports the files it wrote."""

import json

from iolab import report


def _doc(values_by_sched, seeds):
    runs = []
    for name, values in values_by_sched.items():
        for seed, v in zip(seeds, values):
            runs.append({"scheduler": name, "seed": seed, "elapsed_ms": 1.0, "requests": {"completed": 10},
                         "throughput_mb_s": v, "iops": 1.0, "anticipates": False,
                         "latency_ms": {"mean": 1.0, "p50": 1.0, "p95": 1.0, "p99": 1.0, "max": 1.0},
                         "seek": {"mean_cylinders": 0.0}, "disk": {"utilization": 1.0},
                         "anticipation": {"started": 0, "succeeded": 0, "failed": 0, "deceptive_idleness_ms": 0.0,
                                          "mean_success_wait_ms": 0.0}})
    return {"seeds": seeds, "runs": runs, "spec": {"name": "t"}}


def test_title_matches_what_the_table_shows():
    varied = _doc({"noop": [1.0, 1.1, 1.2]}, [1, 2, 3])
    assert "± 95% CI" in report.table_title(varied, report.summarize(varied), compact=True)
    one = _doc({"noop": [1.0]}, [1])
    assert "no interval" in report.table_title(one, report.summarize(one), compact=True)
    same = _doc({"noop": [1.0, 1.0], "as": [2.0, 2.0]}, [1, 2])
    summary = report.summarize(same)
    assert "deterministic" in report.table_title(same, summary, compact=True)
    note = report.deterministic_note(summary)
    assert note and "noop, as" in note and "deterministic" in note


def test_small_intervals_keep_two_significant_digits():
    doc = _doc({"noop": [0.2051, 0.2052, 0.2053]}, [1, 2, 3])
    header, cells = report.summary_rows(report.summarize(doc), anticipation=False)
    mb = cells[0][header.index("MB/s")]
    assert mb == "0.205 ±0.00025", mb
    assert report._fmt_ci(12345.0) == "12345" and report._fmt_ci(3e-6) == "3.0e-06"


def test_ci95_matches_the_t_distribution():
    # t(0.975, 2) = 4.302652729749464; sd of (1, 2, 3) = 1.
    assert abs(report.ci95([1, 2, 3]) - 4.302652729749464 / 3 ** 0.5) < 1e-9
    assert report.ci95([5.0]) == 0.0 and report.ci95([2.0, 2.0]) == 0.0


def test_outputs_are_counted_and_named(iolab, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('[disk]\npreset = "fixed"\n[[scheduler]]\nname = "noop"\n[workload]\nkind = "iozone"\n'
                    'processes = 2\nfile_kb = 64\n[run]\nrepetitions = 2\n')
    out = tmp_path / "o"
    proc = iolab("run", str(spec), "-o", str(out), "-q", check=True)
    files = sorted(p.name for p in out.iterdir())
    assert f"wrote {len(files)} files" in proc.stdout, proc.stdout
    assert all(name in proc.stdout for name in files)
    # IOzone's sequential test on a fixed disk draws nothing random.
    assert "deterministic" in proc.stdout
    doc = json.loads((out / "results.json").read_text())
    assert doc["runs"][0]["per_process"], "the file keeps per-process detail"
    assert (out / "results.json").read_text() == json.dumps(doc, indent=1, sort_keys=True) + "\n"


def test_buffered_calls_are_told_apart_from_disk_requests(iolab, tmp_path):
    """A writer that only dirties cached pages makes no disk request of its
    own: the console and report.md say what its calls were, the JSON has
    them per run, class and process; a direct-only run says nothing."""
    spec = tmp_path / "b.toml"
    spec.write_text('[disk]\npreset = "hp97560"\n[[scheduler]]\nname = "noop"\n[workload]\nkind = "processes"\n'
                    '[[workload.group]]\nname = "writer"\ncount = 2\nop = "write"\ndirect = false\n'
                    'request_kb = 8\nfile_mb = 1\nthink = { dist = "constant", ms = 0 }\n'
                    '[run]\nduration_s = 0.05\n')
    out = tmp_path / "o"
    proc = iolab("run", str(spec), "-o", str(out), check=True)
    assert "buffered read/write calls" in proc.stdout and "calls/s" in proc.stdout, proc.stdout
    run = json.loads((out / "results.json").read_text())["runs"][0]
    writer = next(c for c in run["per_class"] if c["name"] == "writer")
    assert writer["requests"] == 0
    # Two writers, a 4 µs call each every 4 µs for 50 ms.
    assert writer["buffered"]["calls"] == run["buffered"]["calls"] == 2 * 12_501
    assert abs(writer["buffered"]["latency_ms"]["mean"] - 0.004) < 1e-9
    assert "Buffered read/write calls" in (out / "report.md").read_text()
    direct = report.buffered_note(_doc({"noop": [1.0]}, [1]))
    assert direct is None


def test_runs_that_never_reached_the_disk_are_named_not_called_deterministic():
    """Postmark's defaults run in the page cache and end in milliseconds:
    every figure is 0 on every seed. That is not a workload without random
    draws; the note says no request reached the disk."""
    doc = _doc({"noop": [0.0, 0.0], "as": [1.0, 1.0]}, [1, 2])
    for r in doc["runs"]:
        if r["scheduler"] == "noop":
            r["iops"] = 0.0
    summary = report.summarize(doc)
    idle = report.no_request_note(summary)
    assert idle and idle.startswith("noop:") and "no request reached the disk" in idle
    same = report.deterministic_note(summary)
    assert same and same.startswith("as:") and "noop" not in same
    assert report.no_request_note(report.summarize(_doc({"noop": [1.0]}, [1]))) is None


def test_report_paragraphs_keep_scheduler_names_and_end_once():
    """report.md's notes are sentences as written: a scheduler's name keeps
    its case, and no sentence ends with two periods."""
    doc = _doc({"mq-deadline": [1.0, 1.0]}, [1, 2])
    doc["runs"][0]["buffered"] = {"calls": 10, "calls_per_s": 5.0, "throughput_mb_s": 1.0,
                                  "latency_ms": {"mean": 0.004}}
    notes = report.summary_notes(doc, report.summarize(doc), paragraphs=True)
    assert [n.split(":")[0].split(" ")[0] for n in notes] == ["mq-deadline", "Buffered"], notes
    assert all(n.endswith(".") and not n.endswith("..") for n in notes), notes
    console = report.summary_notes(doc, report.summarize(doc))
    assert console[1].startswith("buffered read/write calls")
