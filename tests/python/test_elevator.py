"""`iolab elevator new NAME` (issue 23): the scaffold, end to end in the
simulator. Generated into a copy of kernel/, simulated as kernel:NAME (the
simulator compiles the new module at first use, and again after an edit),
every workload and the report; the guest half (build, boot, run) is in
make test-kernel (testbed/test-kernel.sh)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from iolab.cli.errors import UserError
from iolab.elevator import check_name, new, render

REPO = Path(__file__).resolve().parents[2]
IOLAB = REPO / ".venv" / "bin" / "iolab"


@pytest.fixture
def kdir(tmp_path):
    """A copy of kernel/'s sources (not its build products)."""
    d = tmp_path / "kernel"
    d.mkdir()
    for f in (REPO / "kernel").iterdir():
        if f.is_file() and (f.suffix in (".c", ".h") or f.name == "Makefile"):
            shutil.copy(f, d / f.name)
    return d


def iolab(*args, kernel_dir: Path, cache: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, IOLAB_KERNEL_DIR=str(kernel_dir), IOLAB_CACHE=str(cache))
    p = subprocess.run([str(IOLAB), *args], capture_output=True, text=True, env=env, timeout=600)
    if check:
        assert p.returncode == 0, p.stderr
    return p


@pytest.mark.parametrize("name,why", [
    ("9lives", "lower-case letters"),
    ("Big", "lower-case letters"),
    ("has-dash", "lower-case letters"),
    ("a" * 16, "at most 15"),
    ("int", "C keyword"),
    ("blk", "namespaces"),
    ("blk_mq", "namespaces"),
    ("wpcas", "already"),
    ("as", "already"),
    ("mq-deadline", "lower-case letters"),
    ("bfq", "already"),
    ("sstf", "already"),
])
def test_bad_names_are_refused_and_nothing_is_written(kdir, name, why):
    before = sorted(p.name for p in kdir.iterdir()), (kdir / "Makefile").read_text()
    with pytest.raises(UserError, match=why):
        new(name, kdir)
    assert (sorted(p.name for p in kdir.iterdir()), (kdir / "Makefile").read_text()) == before


def test_an_existing_file_is_never_overwritten(kdir):
    (kdir / "mine-iosched.c").write_text("/* my work */\n")
    with pytest.raises(UserError, match="never overwrites"):
        new("mine", kdir)
    assert (kdir / "mine-iosched.c").read_text() == "/* my work */\n"
    assert "mine-iosched.o" not in (kdir / "Makefile").read_text()


def test_the_template_is_filled_and_aligned():
    text = render("zz")
    assert "@" not in text.replace("@NAME", "")
    assert '.elevator_name\t= "zz"' in text and "zz_dispatch_request" in text
    # continued parameter lists line up under the open parenthesis
    lines = text.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith("static void zz_insert_requests("))
    assert lines[i + 1].expandtabs(8).index("struct") == lines[i].index("(") + 1
    check_name("zz", REPO / "kernel")


def _figures(run: dict) -> dict:
    return {k: v for k, v in run.items() if k not in ("scheduler", "tunables")}


def test_scaffold_end_to_end_in_the_simulator(kdir, tmp_path):
    cache = tmp_path / "cache"
    out = iolab("elevator", "new", "scaffold_t", "--kernel-dir", str(kdir), kernel_dir=kdir, cache=cache)
    assert "kernel:scaffold_t" in out.stdout
    assert "obj-m += scaffold_t-iosched.o" in (kdir / "Makefile").read_text()
    # compiled at first use: the template is first come, first served, so
    # where no bio merges (O_DIRECT random reads) it is noop, run by run
    res = tmp_path / "r.json"
    iolab("compare", "--workload", "iozone-random", "--schedulers", "noop,kernel:scaffold_t", "--seeds", "2",
          "--duration", "5", "--json", str(res), "-q", kernel_dir=kdir, cache=cache)
    runs = json.loads(res.read_text())["runs"]
    by = {(r["scheduler"], r["seed"]): r for r in runs}
    for seed in (1, 2):
        assert _figures(by[("noop", seed)]) == _figures(by[("kernel:scaffold_t", seed)])
    assert by[("kernel:scaffold_t", 1)]["tunables"] == {"depth": 0.0}
    assert list(cache.glob("kshim/scaffold_t-iosched-*.so")), "compiled into the cache"
    # every workload and the report
    presets = json.loads(iolab("presets", "--json", kernel_dir=kdir, cache=cache).stdout)
    assert any(s["name"] == "kernel:scaffold_t" for s in presets["schedulers"])
    for w in presets["workloads"]:
        iolab("compare", "--workload", w["name"], "--schedulers", "kernel:scaffold_t", "--seeds", "1",
              "--duration", "1", "-q", kernel_dir=kdir, cache=cache)
    iolab("compare", "--workload", "web", "--schedulers", "noop,kernel:scaffold_t", "--seeds", "1",
          "--duration", "2", "-o", str(tmp_path / "rep"), "--no-plots", "-q", kernel_dir=kdir, cache=cache)
    assert "kernel:scaffold_t" in (tmp_path / "rep" / "report.md").read_text()
    # its tunable goes through the module's store: refused and clamped
    bad = iolab("compare", "--schedulers", "kernel:scaffold_t", "--set", "kernel:scaffold_t.depth=1.5",
                "--seeds", "1", "--duration", "1", "-q", kernel_dir=kdir, cache=cache, check=False)
    assert bad.returncode == 2 and "refuses '1.5'" in bad.stderr


def test_an_edit_is_picked_up_and_a_c_error_is_named(kdir, tmp_path):
    cache = tmp_path / "cache"
    new("scaffold_e", kdir)
    src = kdir / "scaffold_e-iosched.c"
    # serve the newest instead of the oldest: no longer noop
    src.write_text(src.read_text().replace(
        "return list_first_entry_or_null(&nd->fifo, struct request, queuelist);",
        "return list_empty(&nd->fifo) ? NULL : list_last_entry(&nd->fifo, struct request, queuelist);"))
    res = tmp_path / "r.json"
    iolab("compare", "--workload", "iozone-random", "--schedulers", "noop,kernel:scaffold_e", "--seeds", "1",
          "--duration", "5", "--json", str(res), "-q", kernel_dir=kdir, cache=cache)
    by = {r["scheduler"]: r for r in json.loads(res.read_text())["runs"]}
    assert by["noop"]["latency_ms"] != by["kernel:scaffold_e"]["latency_ms"]
    src.write_text(src.read_text().replace("static bool scaffold_e_has_work", "static bool scaffold_e_has_work("))
    bad = iolab("compare", "--schedulers", "kernel:scaffold_e", "--seeds", "1", "--duration", "1", "-q",
                kernel_dir=kdir, cache=cache, check=False)
    assert bad.returncode == 2
    assert "scaffold_e-iosched does not compile" in bad.stderr and "scaffold_e-iosched.c:" in bad.stderr
