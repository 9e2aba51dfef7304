"""A worker process for the hostile-input suite: reads one case per line
(JSON) on stdin, parses it as a spec and runs its first jobs in this
process, and answers one JSON line per case. The parent (`harness.py`)
watches it: a case that kills it (a Rust abort) or never answers (a hang)
is a bug the parent reports, with the case.

A case: {"text": spec text, "format": "toml"|"json", "file": name,
         "overrides": [[key, value], ...], "jobs": how many jobs to run}.
An answer: {"status": "ok"|"error"|"bug", "kind": exception type,
            "message": text, "runs": runs done, "cut": runs stopped by the clock}.
"""

from __future__ import annotations

import json
import sys
import threading

from iolab import _iolab

# Wall-clock budget of one job: a valid but long run is stopped through its
# RunControl (what Ctrl-C does), which also proves it can be stopped.
JOB_SECONDS = 4.0


def run_case(case: dict) -> dict:
    try:
        exp = _iolab.Experiment.parse(case["text"], case["file"], case["format"],
                                      [tuple(o) for o in case.get("overrides", [])])
    except (ValueError, OSError) as e:
        return {"status": "error", "kind": type(e).__name__, "message": str(e)}
    except BaseException as e:  # a PanicException, a TypeError: bugs
        return {"status": "bug", "kind": type(e).__name__, "message": str(e)}
    runs = cut = 0
    for sched, seed in exp.jobs()[: case.get("jobs", 1)]:
        control = _iolab.RunControl()
        timer = threading.Timer(JOB_SECONDS, control.cancel)
        timer.start()
        try:
            out = json.loads(exp.run_job(sched, seed, control))
            runs += 1
            if out["requests"]["completed"] > out["requests"]["inserted"]:
                return {"status": "bug", "kind": "result", "message": "more completions than requests"}
        except KeyboardInterrupt:
            cut += 1
        except (ValueError, OSError) as e:
            return {"status": "error", "kind": type(e).__name__, "message": str(e), "runs": runs}
        except BaseException as e:
            return {"status": "bug", "kind": type(e).__name__, "message": str(e)}
        finally:
            timer.cancel()
    return {"status": "ok", "runs": runs, "cut": cut}


def main() -> None:
    for line in sys.stdin:
        answer = run_case(json.loads(line))
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
