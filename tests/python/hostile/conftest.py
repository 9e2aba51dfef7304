"""The hostile-input suite: cases per command and input format are
counted and printed at the end of the run (docs/hardening.md)."""

import pytest

from .harness import OUTCOMES, TALLY, Worker


@pytest.fixture(scope="session")
def worker():
    w = Worker()
    yield w
    w.close()


def pytest_terminal_summary(terminalreporter):
    if not TALLY:
        return
    terminalreporter.section("hostile inputs: cases per command or input format")
    for what, n in sorted(TALLY.items()):
        terminalreporter.write_line(f"{n:6d}  {what}")
    terminalreporter.write_line(f"{sum(TALLY.values()):6d}  in all")
    if OUTCOMES:
        terminalreporter.write_line("generated cases: " + ", ".join(f"{n} {k}" for k, n in sorted(OUTCOMES.items())))
