"""iolab: a laboratory for disk I/O scheduling and disk-bound storage.

The simulator core is native (Rust, ``iolab._iolab``); this package holds the
``iolab`` command, reports, plots and the real-kernel bench.
"""

from iolab._iolab import __version__

__all__ = ["__version__"]
