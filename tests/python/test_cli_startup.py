"""The `iolab` command registers its subcommands lazily (python/iolab/cli/__init__.py):
the help must read exactly as with every module registered, and a command must
import only its own module."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from iolab import cli


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    for name, sub in _subparsers(parser).items():
        out += _paths(sub, prefix + (name,))
    return out


def _at(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> argparse.ArgumentParser:
    for name in path:
        parser = _subparsers(parser)[name]
    return parser


FULL_PATHS = _paths(cli.build_parser(full=True))


def test_every_module_is_listed_with_the_commands_and_help_it_registers():
    missing = [m for m in cli.SUBCOMMANDS if m not in cli.COMMANDS]
    assert not missing, f"add the commands of {missing} and their help to COMMANDS in iolab/cli/__init__.py"
    assert list(cli.COMMANDS) == cli.SUBCOMMANDS
    full = cli.build_parser(full=True)
    action = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
    registered = [(c.dest, c.help) for c in action._choices_actions]
    listed = [pair for name in cli.SUBCOMMANDS for pair in cli.COMMANDS[name]]
    assert listed == registered


def test_the_tree_is_walked():
    # run, compare, presets ... and the nested ones (kernel compare, mail bench, queue check).
    assert len(FULL_PATHS) >= 20
    assert ("kernel", "compare") in FULL_PATHS and ("mail", "bench") in FULL_PATHS


@pytest.mark.parametrize("path", FULL_PATHS, ids=lambda p: " ".join(p) or "iolab")
def test_help_is_the_same_as_with_every_module_registered(path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    lazy = cli.build_parser(cli.command_of(list(path) + ["--help"]))
    full = cli.build_parser(full=True)
    assert _at(lazy, path).format_help() == _at(full, path).format_help()
    assert _at(lazy, path).format_usage() == _at(full, path).format_usage()
    if path:
        # `iolab COMMAND ...` is parsed without the other commands' placeholders.
        argv = list(path) + ["--help"]
        assert cli.alone(argv)
        only = cli.build_parser(cli.command_of(argv), only=True)
        assert _at(only, path).format_help() == _at(full, path).format_help()
        assert _at(only, path).format_usage() == _at(full, path).format_usage()


@pytest.mark.parametrize("argv,alone", [
    (["run", "x.toml", "-q"], True),
    (["kernel", "compare", "-h"], True),
    (["--version"], True),
    (["-h", "run"], False),  # the top-level help, which lists every command
    (["nosuch"], False),  # refused with every command's name
    ([], False),
])
def test_alone(argv, alone):
    assert cli.alone(argv) == alone


def test_version_is_the_same_without_placeholders(capsys):
    for argv in (["--version"], ["--version", "run"]):
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        assert e.value.code == 0
        assert capsys.readouterr().out == f"iolab {cli_version()}\n"


def cli_version() -> str:
    from iolab import __version__

    return __version__


@pytest.mark.parametrize("argv,command", [
    (["run", "x.toml", "-q"], "run"),
    (["--version"], None),
    (["-h"], None),
    ([], None),
    (["-h", "kernel", "compare"], "kernel"),
])
def test_command_of(argv, command):
    assert cli.command_of(argv) == command


PROBE = """
import json, sys
from iolab.cli import main
code = main(sys.argv[1:])
mods = sorted(m for m in sys.modules if m.startswith("iolab.cli.") or m.split(".")[0] in
              ("pandas", "numpy", "scipy", "matplotlib", "statsmodels", "dask"))
print(json.dumps({"code": code, "modules": mods}))
"""


def _probe(*argv: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_command_imports_its_own_module_only_and_no_heavy_library(tmp_path):
    spec = tmp_path / "tiny.toml"
    spec.write_text('[disk]\npreset = "hp97560"\n[[scheduler]]\nname = "noop"\n'
                    '[workload]\nkind = "processes"\n[[workload.group]]\ncount = 2\npattern = "random"\n'
                    'request_kb = 4\nfile_mb = 10\n[run]\nmax_requests = 100\n')
    got = _probe("run", str(spec), "-q")
    assert got["code"] == 0
    assert got["modules"] == ["iolab.cli.errors", "iolab.cli.progress", "iolab.cli.simulate"]
    got = _probe("presets", "--json")
    assert got["modules"] == ["iolab.cli.errors", "iolab.cli.simulate"]


def test_top_level_help_imports_no_subcommand_module():
    proc = subprocess.run([sys.executable, "-c", "import sys\nfrom iolab.cli import main\n"
                           "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
                           "print(sorted(m for m in sys.modules if m.startswith('iolab.cli.')))"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "['iolab.cli.errors']"
    assert "recommend" in proc.stdout and "validate" in proc.stdout


def test_an_unknown_command_is_refused_with_every_name():
    proc = subprocess.run([sys.executable, "-m", "iolab", "nosuch"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "invalid choice: 'nosuch'" in proc.stderr
    for name in ("run", "validate", "bench", "kernel", "mail", "recommend"):
        assert f"'{name}'" in proc.stderr
