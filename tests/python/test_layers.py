"""The layering of docs/architecture.md holds in the code (scripts/layers.py), and the checker
catches what it is there to catch."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def layers():
    spec = importlib.util.spec_from_file_location("layers", ROOT / "scripts" / "layers.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["layers"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_the_code_follows_the_layering(layers):
    problems = layers.check_simulator() + layers.check_acyclic()
    assert problems == [], "\n".join(problems)


def test_the_architecture_page_states_the_checked_tiers(layers):
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text.split("<!-- tiers")[1].split("<!-- /tiers -->")[0]
    rows = [line.split("|") for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    tiers = [(cells[1].strip(), re.findall(r"`([a-z_]+)`", cells[2])) for cells in rows[1:]]
    assert tiers == [(name, rooms) for name, rooms in layers.SIM_TIERS]


def _sim(tmp: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp / "crates" / "iolab-sim" / "src" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp


def test_an_upward_import_is_named_with_its_line(layers, tmp_path):
    root = _sim(tmp_path, {
        "lib.rs": "pub mod blk;\npub mod pagecache;\n",
        "pagecache/mod.rs": "pub const RA: u32 = 128;\n",
        "blk/mod.rs": "pub mod merge;\n",
        "blk/merge.rs": "// crate::pagecache in a comment is no import\nfn f() -> u32 {\n    crate::pagecache::RA\n}\n",
    })
    problems = layers.check_simulator(root)
    assert problems == [
        "crates/iolab-sim/src/blk/merge.rs:3 (crate::pagecache::RA): blk (block layer) imports pagecache, "
        "a tier above it"
    ]


def test_an_elevator_may_not_see_the_drive(layers, tmp_path):
    root = _sim(tmp_path, {
        "sched/mod.rs": "use crate::{disk::Disk, request::Request};\n",
        "disk/mod.rs": "pub trait Disk {}\n",
        "request.rs": "pub struct Request;\n",
    })
    assert layers.check_simulator(root) == [
        "crates/iolab-sim/src/sched/mod.rs:1 (crate::disk::Disk): sched imports disk, beside it in the tier "
        "'elevators and drives'"
    ]


def test_test_code_may_reach_up_but_a_room_must_be_declared(layers, tmp_path):
    root = _sim(tmp_path, {
        "sched/mod.rs": "#[cfg(test)]\nmod tests {\n    use crate::engine::run;\n}\n#[cfg(test)]\nmod util;\n",
        "sched/util.rs": "use crate::engine::run;\n",
        "engine/mod.rs": "use super::sched;\npub fn run() {}\n",
        "gadget.rs": "",
    })
    assert layers.check_simulator(root) == [
        "crates/iolab-sim/src/gadget: a room no tier of scripts/layers.py names"
    ]


def test_a_circle_in_another_crate_or_in_python_is_found(layers, tmp_path):
    src = tmp_path / "crates" / "iolab-mail" / "src"
    src.mkdir(parents=True)
    (src / "lib.rs").write_text("pub mod a;\npub mod b;\npub mod c;\n")
    (src / "a.rs").write_text("use crate::b::B;\npub struct A;\n")
    (src / "b.rs").write_text("use crate::{c::C};\npub struct B;\n")
    (src / "c.rs").write_text("pub struct C(super::a::A);\n")
    for crate in layers.ACYCLIC_CRATES[1:]:
        (tmp_path / crate / "src").mkdir(parents=True)
    pkg = tmp_path / "python" / "iolab" / "bench"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "record.py").write_text("def load():\n    from iolab.bench.session import Run\n")
    (pkg / "session.py").write_text("from iolab.bench import record\n")
    (pkg / "report.py").write_text("from . import record\n")
    problems = layers.check_acyclic(tmp_path)
    assert len(problems) == 2, problems
    assert problems[0].startswith("crates/iolab-mail: import circle a ↔ b ↔ c: ")
    assert "crates/iolab-mail/src/c.rs:1 (super::a::A)" in problems[0]
    assert problems[1].startswith("python/iolab: import circle iolab.bench.record ↔ iolab.bench.session: ")
    assert "python/iolab/bench/record.py:2 (iolab.bench.session.Run)" in problems[1]
