"""A session on disk: the log written while it runs, and reading it back.

``runs.jsonl`` is written as the session goes: its first line is the setup
(``{"meta": ...}``, the same ``meta`` as ``runs.json``), then one line per
finished run, flushed at once. ``runs.json`` is written at the end. So a
session killed with SIGKILL (or by a power cut) still leaves enough for
``iolab bench --report DIR`` to analyse: the setup, every run logged, and
fio's own JSON of each (``fio/run-NNNN.json``), from which a run's metrics
are read again. A torn last line (the kill came mid-write) is skipped.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from pathlib import Path
from typing import TextIO

from iolab.bench import fio
from iolab.bench import workloads as wl
from iolab.bench.configs import Config
from iolab.bench.runs import Options, Run, Session
from iolab.bench.workloads import Variant, Workload
from iolab.cli.errors import UserError

LOG = "runs.jsonl"
DOC = "runs.json"


def holds_session(outdir: Path) -> bool:
    return (outdir / LOG).exists() or (outdir / DOC).exists()


def start_log(outdir: Path, meta: dict) -> TextIO:
    log = open(outdir / LOG, "w")
    log.write(json.dumps({"meta": meta}) + "\n")
    log.flush()
    return log


def append(log: TextIO, run: Run) -> None:
    log.write(json.dumps(asdict(run)) + "\n")
    log.flush()


def _workload(meta: dict) -> Workload:
    """The workload a session ran, from its setup (a --fio job's file may be gone)."""
    builtin = meta.get("builtin", meta.get("mirrors") != "user's job")
    if builtin:
        return wl.get(meta["workload"])
    job = Path(meta["job_file"])
    return Workload(name=meta["workload"], job=job.name, summary=meta.get("workload_summary", ""),
                    mirrors=meta.get("mirrors", "user's job"), writes=bool(meta.get("writes")),
                    needs_fs=bool(meta.get("file_system")), measures=("*.bw",), primary=("*.bw",), path=job)


def _session(outdir: Path, meta: dict, runs: list[Run], doc: dict) -> Session:
    try:
        workload = _workload(meta)
        opts = Options(workload=workload, reps=meta["reps"], runtime=meta["runtime_s"], ramp=meta["ramp_s"],
                       outdir=outdir)
        configs = [Config(label.split()[0], name=label) for label in meta["configs"]]
        variants = []
        for v in meta["variants"]:
            if isinstance(v, str):  # written by the first version: the label only
                params = {**meta.get("params", {}), **dict(w.split("=", 1) for w in v.split())}
                v = {"label": v, "params": params}
            variants.append(Variant(v["label"], v["params"]))
    except (KeyError, TypeError, ValueError) as e:
        raise UserError(f"{outdir}: the session's setup is incomplete ({type(e).__name__}: {e})") from None
    return Session(opts, meta, configs, variants, runs, interrupted=doc.get("interrupted"),
                   restored=doc.get("restored", []), restore_problems=doc.get("restore_problems", []))


def _run(data: dict) -> Run:
    known = {f.name for f in fields(Run)}
    return Run(**{k: v for k, v in data.items() if k in known})


def load(outdir: Path) -> Session:
    """A session read back: from ``runs.json`` when it finished, else rebuilt
    from ``runs.jsonl`` and the fio JSON files (a killed session)."""
    if not outdir.is_dir():
        raise UserError(f"--report {outdir}: no such directory")
    doc_path = outdir / DOC
    if doc_path.exists():
        try:
            doc = json.loads(doc_path.read_text())
            return _session(outdir, doc["meta"], [_run(r) for r in doc["runs"]], doc)
        except (OSError, ValueError, KeyError, TypeError) as e:
            if not (outdir / LOG).exists():
                raise UserError(f"cannot read {doc_path}: {e}") from None
    return rebuild(outdir)


def rebuild(outdir: Path) -> Session:
    """A killed session from its log: the setup line, the runs logged, their
    metrics read again from fio's JSON where it is there."""
    path = outdir / LOG
    try:
        lines = path.read_text(errors="replace").split("\n")
    except OSError as e:
        raise UserError(f"cannot read {outdir / DOC} or {path}: {e.strerror or e}") from None
    meta, runs, torn = None, [], 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            torn += 1
            continue
        if number == 1:
            if not isinstance(item, dict) or "meta" not in item:
                raise UserError(f"{path}:1: no setup line; the session was written by an older iolab, "
                                f"whose log cannot be analysed without its runs.json")
            meta = item["meta"]
            continue
        try:
            run = _run(item)
        except TypeError as e:
            raise UserError(f"{path}:{number}: not a run ({e})") from None
        fio_json = outdir / run.fio_json
        try:
            result = fio.parse(fio_json.read_text(errors="replace"))
            run.metrics = fio.metrics(result)
        except (OSError, fio.FioError):
            pass  # the metrics logged with the run stand
        runs.append(run)
    if meta is None:
        raise UserError(f"{path}: empty; the session finished no run")
    session = _session(outdir, meta, runs, {})
    planned = meta["reps"] * session.runs_per_rep
    if len(runs) < planned:
        session.interrupted = "killed"
    session.meta = {**meta, "rebuilt_from_log": True, "torn_lines": torn}
    return session
