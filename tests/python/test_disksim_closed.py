"""scripts/disksim_closed.py (the third part of `make bench`): the DiskSim
configuration it writes and the `iolab run` spec it times describe the
same closed random load on the HP C3323A. The timing itself is a benchmark,
not a test; these check that both inputs stay valid as the code evolves."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from iolab.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("disksim_closed", ROOT / "scripts" / "disksim_closed.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_disksim_configuration_is_the_drives_with_eight_closed_readers():
    parv = _script().disksim_parv(1234)
    # The drive, bus and controller are the validation file's, unchanged.
    assert "source hp_c3323a_validate.diskspecs" in parv
    assert parv.count("disksim_synthgen {") == 8
    assert "Number of I/O requests to generate = 1234," in parv
    assert re.search(r"Number of processors\s*=\s*8,", parv)
    # Every generator: reads only, closed (time-critical), 8 blocks, whole disk.
    assert parv.count("Probability of read access = 1.0,") == 8
    assert parv.count("Probability of time-critical request = 1.0,") == 8
    assert parv.count("Sizes = [ uniform, 8.0, 8.0 ]") == 8
    assert parv.count("Storage capacity per device = 2056008,") == 8
    # Only the synthetic block was replaced: one Synthio block left.
    assert parv.count("disksim_synthio Synthio {") == 1


def test_the_iolab_spec_runs(tmp_path, capsys):
    mod = _script()
    spec = tmp_path / "closed.toml"
    spec.write_text(mod.SPEC.format(parv=mod.DATA / "hp_c3323a.parv", sched="as", requests=2000))
    assert main(["run", str(spec), "-q", "--json", str(tmp_path / "r.json")]) == 0
    out = (tmp_path / "r.json").read_text()
    assert '"as"' in out
