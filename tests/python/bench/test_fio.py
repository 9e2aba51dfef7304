"""fio's JSON, read from real fio 3.33 output captured on these machines."""

from __future__ import annotations

import json

import pytest

from iolab.bench import fio
from iolab.cli.errors import UserError

from .conftest import data


def load(name: str) -> fio.FioResult:
    return fio.parse(data(name).read_text())


def test_sequential_read_uses_bw_bytes_and_lat_ns_percentiles():
    result = load("fio-3.33-hdparm-direct.json")
    raw = json.loads(data("fio-3.33-hdparm-direct.json").read_text())["jobs"][0]["read"]
    assert result.version == "fio-3.33"
    [job] = result.jobs
    assert job.name == "seqread" and job.error == 0
    read = job.stats["read"]
    assert read.bw_bytes == raw["bw_bytes"]
    assert read.iops == raw["iops"]
    assert read.lat_source == "lat_ns"
    assert read.percentiles[99.0] == raw["lat_ns"]["percentile"]["99.000000"]
    m = fio.metrics(result)
    assert m["seqread.read.bw"] == raw["bw_bytes"]
    assert m["seqread.read.lat_p99"] == raw["lat_ns"]["percentile"]["99.000000"]
    assert m["seqread.read.lat_mean"] == pytest.approx(raw["lat_ns"]["mean"])
    assert m["all.read.bw"] == raw["bw_bytes"]
    assert not any(k.startswith("seqread.write") for k in m)  # no I/O, no keys


def test_group_reporting_mixed_job_has_both_directions():
    result = load("fio-3.33-oltp.json")
    raw = json.loads(data("fio-3.33-oltp.json").read_text())["jobs"]
    assert len(raw) == 1  # numjobs=2 with group_reporting: one entry
    m = fio.metrics(result)
    assert m["oltp.read.iops"] == raw[0]["read"]["iops"]
    assert m["oltp.write.iops"] == raw[0]["write"]["iops"]
    assert m["oltp.write.lat_p99"] == raw[0]["write"]["lat_ns"]["percentile"]["99.000000"]


def test_iozone_sections_become_one_key_each():
    result = load("fio-3.33-iozone.json")
    names = [j.name for j in result.jobs]
    assert names == ["write", "rewrite", "read", "reread", "randread", "randwrite",
                     "bkwdread", "recrewrite", "strideread"]
    m = fio.metrics(result)
    for name in names:
        direction = "write" if "write" in name else "read"
        assert m[f"{name}.{direction}.bw"] > 0
    assert m["all.read.bw"] == pytest.approx(sum(m[f"{n}.read.bw"] for n in names if "write" not in n))


def test_notes_before_json_and_jobs_sharing_a_name():
    text = data("fio-3.33-numjobs-note.json").read_text()
    assert text.startswith("note:")
    result = fio.parse(text)
    raw = [j["read"] for j in json.loads(text[text.index("\n{") + 1:])["jobs"]]
    assert [j.name for j in result.jobs] == ["clat", "clat"]
    # No lat_percentiles=1 in this job: percentiles come from clat_ns.
    assert result.jobs[0].stats["read"].lat_source.startswith("lat_ns (percentiles from clat_ns")
    m = fio.metrics(result)
    assert m["clat.read.bw"] == pytest.approx(raw[0]["bw_bytes"] + raw[1]["bw_bytes"])
    assert m["clat.read.iops"] == pytest.approx(raw[0]["iops"] + raw[1]["iops"])
    assert m["clat.read.lat_p99"] == max(r["clat_ns"]["percentile"]["99.000000"] for r in raw)
    weighted = sum(r["lat_ns"]["mean"] * r["lat_ns"]["N"] for r in raw) / sum(r["lat_ns"]["N"] for r in raw)
    assert m["clat.read.lat_mean"] == pytest.approx(weighted)


def test_fio2_microseconds_and_kib_are_converted():
    # Synthetic, in fio 2.x's layout (bw in KiB/s, clat/lat in microseconds).
    doc = {"fio version": "fio-2.2.10", "jobs": [{"jobname": "old", "error": 0, "read": {
        "io_bytes": 4096, "bw": 100, "iops": 25.0, "runtime": 1000, "total_ios": 25,
        "lat": {"min": 1, "max": 9, "mean": 4.0, "stddev": 1.0},
        "clat": {"min": 1, "max": 9, "mean": 3.5, "stddev": 1.0, "percentile": {"99.000000": 8}},
    }}]}
    m = fio.metrics(fio.parse(json.dumps(doc)))
    assert m["old.read.bw"] == 100 * 1024
    assert m["old.read.lat_mean"] == 4000.0
    assert m["old.read.lat_p99"] == 8000.0


def test_no_percentiles_when_nothing_completed():
    doc = json.loads(data("fio-3.33-hdparm-direct.json").read_text())
    section = doc["jobs"][0]["read"]
    section["lat_ns"] = {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
    section["io_bytes"] = 0
    m = fio.metrics(fio.parse(json.dumps(doc)))
    assert m == {}


@pytest.mark.parametrize("text", ["", "fio: no such file\n", "{not json"])
def test_garbage_is_a_one_line_error(text):
    with pytest.raises(fio.FioError):
        fio.parse(text)


def test_missing_fio_says_how_to_install(monkeypatch):
    monkeypatch.setattr(fio.shutil, "which", lambda name: None)
    with pytest.raises(UserError, match="apt-get install fio"):
        fio.find_fio()


def test_split_key_keeps_dots_in_job_names():
    assert fio.split_key("job.v2.read.lat_p99") == ("job.v2", "read", "lat_p99")


def test_reason_says_a_line_fio_repeated_once():
    # fio writes "size too small" both on stderr and into --output: iolab read both.
    line = "fio: size too small, must not be less than minimum block size: 67108864 < 1099511627776"
    assert fio.reason([line, line]) == line
    assert fio.reason(["fio: a", "fio: b", "fio: a"]) == "fio: a; fio: b"
