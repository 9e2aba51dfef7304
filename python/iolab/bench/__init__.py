"""``iolab bench``: the kernel's real I/O schedulers, measured and compared.

Brief overview -- how a session flows, one module per concept:

- :mod:`~iolab.bench.safety` checks root, the device's scheduler choice, and
  whether a writing workload may touch the device;
- :mod:`~iolab.bench.sandbox` makes the ``--loop`` sandbox (a file-backed
  loop device with direct I/O) and the scratch file system;
- :mod:`~iolab.bench.sysfs` reads and writes ``/sys/block/DEV/queue``,
  snapshots it and restores it; :mod:`~iolab.bench.statefile` keeps the
  record that lets ``iolab bench --restore`` undo a killed session;
- :mod:`~iolab.bench.configs` turns ``--tunables``/``--config`` into
  configurations and puts one in place;
- :mod:`~iolab.bench.workloads` is the table of fio jobs in ``jobs/`` (package data);
  :mod:`~iolab.bench.fio` runs one and reads its JSON;
- :mod:`~iolab.bench.session` runs every configuration in every repetition
  in a shuffled order, then restores;
- :mod:`~iolab.bench.stats` (scipy, statsmodels) and
  :mod:`~iolab.bench.analysis` compare the configurations;
  :mod:`~iolab.bench.report` writes JSON, CSV, Markdown, HTML and plots.
"""

import importlib

# The names below are loaded on first use (PEP 562): every `iolab` command
# imports this package (through iolab.bench.words and the CLI's registration),
# and importing the session machinery eagerly cost a simulator run about a
# tenth of a second of start-up.
_LAZY = {
    "Config": "iolab.bench.configs",
    "Options": "iolab.bench.session",
    "Session": "iolab.bench.session",
    "run": "iolab.bench.session",
    "WORKLOADS": "iolab.bench.workloads",
    "Workload": "iolab.bench.workloads",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'iolab.bench' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
