"""What every hostile case must hold to, and the processes that run them.

A hostile input may be refused or accepted, but never with a traceback, a
Rust panic or abort, a hang, or an error that is not one clear line. The
command runs as a user runs it (`python -m iolab`), under a 4 GiB address
space limit so that an attempt to allocate the impossible aborts here
instead of swapping the machine, and under a time limit.
"""

from __future__ import annotations

import json
import os
import resource
import select
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MEMORY_LIMIT = 4 << 30

# Cases run and bugs found, per command or input format (printed at the end
# of the session by conftest.py; docs/hardening.md records them).
TALLY: Counter = Counter()
# What the generated cases came to: "ok" (ran), "error" (refused cleanly).
OUTCOMES: Counter = Counter()

BAD_SIGNS = ("Traceback", "panicked", "RUST_BACKTRACE", "memory allocation", "core dumped", "PanicException")


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_cli(args: list[str], cwd: Path | None = None, timeout: float = 60, stdin: str | None = None,
            env: dict | None = None) -> subprocess.CompletedProcess:
    """`iolab ARGS` in a subprocess, limited in memory and time."""
    return subprocess.run([sys.executable, "-m", "iolab", *args], cwd=cwd or ROOT, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=_limit, input=stdin,
                          env={**os.environ, "COLUMNS": "100", **(env or {})})


def check_clean(proc: subprocess.CompletedProcess, what: str) -> None:
    """No traceback, panic or abort; a refusal is exit 2 with one error
    line (`iolab: error: ...`, or argparse's own after its usage lines)."""
    out = proc.stdout + proc.stderr
    assert not any(s in out for s in BAD_SIGNS), f"{what}: crashed:\n{out[-3000:]}"
    assert proc.returncode in (0, 2), f"{what}: exit {proc.returncode}:\n{out[-3000:]}"
    if proc.returncode == 2:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        errors = [ln for ln in lines if ": error: " in ln]
        assert len(errors) == 1 and lines[-1] == errors[0], f"{what}: expected one error line:\n{proc.stderr}"
        others = [ln for ln in lines[:-1] if not (ln.startswith("usage:") or ln.startswith(" "))]
        assert not others, f"{what}: stray lines before the error:\n{proc.stderr}"


def to_toml(spec: dict) -> str:
    """A spec dict as TOML: scalars first, then tables and arrays of tables;
    nested tables inside those inline. Floats keep nan and inf."""

    def value(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            if v != v:
                return "nan"
            if v in (float("inf"), float("-inf")):
                return "inf" if v > 0 else "-inf"
            return repr(v)
        if isinstance(v, int):
            return str(v)
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + " }"
        raise TypeError(type(v))

    def is_table(v) -> bool:
        return isinstance(v, dict)

    def is_aot(v) -> bool:
        return isinstance(v, list) and v != [] and all(isinstance(x, dict) for x in v)

    out = [f"{json.dumps(k)} = {value(v)}" for k, v in spec.items() if not (is_table(v) or is_aot(v))]

    def table(name: str, body: dict, header: str) -> None:
        out.append(f"\n{header}")
        subs = []
        for k, v in body.items():
            if is_aot(v):
                subs.append((k, v))
            else:
                out.append(f"{json.dumps(k)} = {value(v)}")
        for k, items in subs:
            for item in items:
                table(f"{name}.{k}", item, f"[[{name}.{json.dumps(k)}]]")

    for k, v in spec.items():
        if is_table(v):
            table(json.dumps(k), v, f"[{json.dumps(k)}]")
        elif is_aot(v):
            for item in v:
                table(json.dumps(k), item, f"[[{json.dumps(k)}]]")
    return "\n".join(out) + "\n"


class Worker:
    """A `worker.py` process that runs spec cases in-process, restarted
    after a case kills it or hangs."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, str(Path(__file__).with_name("worker.py"))],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, preexec_fn=_limit, cwd=ROOT)

    def run(self, case: dict, timeout: float = 60) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(case) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if line:
            return json.loads(line)
        status = "hang" if not ready else "crash"
        self.proc.kill()
        _, err = self.proc.communicate()
        self.proc = None
        return {"status": status, "message": err[-3000:]}

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.communicate()
            self.proc = None


def check_answer(answer: dict, case: dict) -> None:
    """A worker's answer to a case holds to the rules above."""
    what = json.dumps(case)[:1500]
    assert answer["status"] in ("ok", "error"), f"{answer['status']}: {answer.get('message')}\ncase: {what}"
    if answer["status"] == "error":
        msg = answer["message"]
        assert answer["kind"] in ("ValueError", "OSError"), f"{answer}\ncase: {what}"
        assert msg and "\n" not in msg, f"not one line: {msg!r}\ncase: {what}"
        assert len(msg) < 600, f"too long: {msg!r}\ncase: {what}"
        assert not any(s in msg for s in BAD_SIGNS), f"{msg}\ncase: {what}"
