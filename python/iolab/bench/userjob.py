"""A user's own fio job (``iolab bench --fio FILE``): where it may do I/O, and whether it writes.

A job file for iolab names its target only as ``filename=${IOLAB_DEV}`` or
``directory=${IOLAB_DIR}``, so it cannot reach a device the user did not
name. The checks read the file the way fio 3.x reads it (``init.c``,
``__parse_jobs_ini``; ``parse.c``, ``strip_blank_end``): lines end at ``\\n``
only, text from the first ``;`` or ``#`` is a comment, a line that starts with
``include`` pulls in another file whatever follows the word, and ``${NAME}``
anywhere in an option -- its name too -- becomes the environment variable
``NAME`` (``options.c``, ``fio_option_dup_subs``). So iolab refuses:

- any ``include`` (the included file would escape these checks);
- any ``${NAME}`` but the variables iolab itself sets (a variable from the
  caller's environment could say ``write``, or name another device);
- options that name I/O targets iolab cannot check, run programs, write
  logs where they name, switch the scheduler under test, or lift fio's own
  guard against writing to a mounted device (:data:`REFUSED`);
- an engine other than fio's block I/O engines (:data:`ENGINES`; fio's
  ``exec`` engine runs a program, ``net`` reaches the network), and a
  buffer (``mem=mmap:FILE``) mapped from a file;
- a job section with no target of its own or from a ``[global]`` before it
  (fio would make files named after the job in the current directory);
- lines longer than fio reads as one line, and text that is not UTF-8.

Whether the job writes is not guessed from its text: fio is asked, with
``--parse-only --readonly`` (``options.c``, ``rw_verify``; ``init.c``,
``fixup_options``: every write or trim direction fails that parse). A job
that passes is read-only and always runs under ``--readonly``, so fio itself
refuses any write that the parse did not foresee; one that fails is a
writing workload, with the safety checks that implies.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess

from iolab.bench.fio import reason
from iolab.cli.errors import UserError

# The variables iolab sets for every job (Workload.env); a --fio job may read these only.
VARIABLES = ("IOLAB_DEV", "IOLAB_DIR", "IOLAB_SIZE", "IOLAB_HALF", "IOLAB_RUNTIME", "IOLAB_RAMP")
TARGETS = {"filename": "${IOLAB_DEV}", "directory": "${IOLAB_DIR}"}

# Options refused in a --fio job, with the reason (names from fio's options.c).
REFUSED = {
    "opendir": "adds every file under a directory as a target",
    "read_iolog": "replays I/O to the files an I/O log names",
    "replay_redirect": "sends a replayed log to another device",
    "merge_blktrace_file": "writes a merged trace to a file it names",
    "write_iolog": "writes an I/O log to a file it names",
    "exec_prerun": "runs a program",
    "exec_postrun": "runs a program",
    "ioscheduler": "switches the scheduler itself (iolab sets it for each configuration)",
    "allow_mounted_write": "lifts fio's own guard against writing to a mounted device",
    "profile": "runs a built-in profile with targets of its own",
    "write_bw_log": "writes log files where it names (iolab keeps fio's JSON)",
    "write_lat_log": "writes log files where it names (iolab keeps fio's JSON)",
    "write_iops_log": "writes log files where it names (iolab keeps fio's JSON)",
    "write_hist_log": "writes log files where it names (iolab keeps fio's JSON)",
    "cgroup": "creates a control group",
}

# The engines a --fio job may use: fio's block and file I/O engines. Others
# run programs (exec: program=, arguments=), reach the network (net, nbd,
# rdma, rbd, http), send raw SCSI commands (sg) or change files' layout
# (e4defrag, ftruncate, falloc, filedelete): none of that is a disk's
# scheduling, and the read-only checks above do not cover it.
ENGINES = ("sync", "psync", "vsync", "pvsync", "pvsync2", "libaio", "io_uring", "posixaio", "mmap", "splice",
           "null")

# fgets(string, OPT_LEN_MAX) in init.c reads at most 8191 characters as one line.
MAX_LINE = 4096
MAX_FILE = 2**20

_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_INCLUDE = re.compile(r"^[\s\x00-\x1f]*include")
_SECTION = re.compile(r"^\[(.+)\]$")


def _fail(path: str, number: int | None, message: str) -> UserError:
    where = f"{path}:{number}" if number else path
    return UserError(f"{where}: {message}")


def read(path: str) -> str:
    """The job file's text (UTF-8, no NUL byte)."""
    try:
        # Not a FIFO (its open blocks) or /dev/zero (never ends): a regular file of sane size.
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise UserError(f"--fio {path}: not a regular file")
        with open(path, "rb") as f:
            data = f.read(MAX_FILE + 1)
    except OSError as e:
        raise UserError(f"--fio {path}: {e.strerror or e}") from None
    if len(data) > MAX_FILE:
        raise UserError(f"--fio {path}: larger than {MAX_FILE // 2**20} MiB; a job file is a few lines")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _fail(path, data[: e.start].count(b"\n") + 1, "not UTF-8 text") from None
    if "\x00" in text:
        raise _fail(path, text[: text.index("\x00")].count("\n") + 1, "a NUL byte in a job file")
    return text


def check_text(path: str, text: str, variables=VARIABLES) -> tuple[list[str], bool]:
    """The static checks of ``text`` (read from ``path``); returns the job
    sections and whether one needs a file system. ``variables``: the
    ``${NAME}`` the job may read (a built-in job also reads its parameters)."""
    sections: list[str] = []
    global_target: set[str] = set()
    section_target: set[str] = set()
    current, header = None, 0
    targets: set[str] = set()

    def close() -> None:
        if current is not None and current != "global" and not (section_target or global_target):
            raise _fail(path, header, f"job [{current}] names no target: say filename=${{IOLAB_DEV}} "
                                      f"or directory=${{IOLAB_DIR}} (in it or in a [global] before it)")

    lines = text.split("\n")
    for number, raw in enumerate(lines, 1):
        if len(raw) > MAX_LINE:
            raise _fail(path, number, f"a line of {len(raw)} characters (at most {MAX_LINE})")
        line = raw.split(";", 1)[0].split("#", 1)[0].strip()
        if _INCLUDE.match(raw.split(";", 1)[0].split("#", 1)[0]):
            raise _fail(path, number, "iolab does not run job files that include others")
        if not line:
            continue
        for name in _VARIABLE.findall(line):
            if name not in variables:
                raise _fail(path, number, f"${{{name}}}: a job for iolab reads only the variables iolab sets "
                                          f"({', '.join(variables)}); write the value itself in the file")
        m = _SECTION.match(line)
        if m:
            close()
            current, header = m.group(1), number
            section_target = set()
            if current != "global":
                sections.append(current)
            continue
        key, eq, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if key in REFUSED:
            raise _fail(path, number, f"{key}: iolab refuses this option in a job ({REFUSED[key]})")
        if key == "filename_format" and "/" in value:
            raise _fail(path, number, f"filename_format={value}: a file name pattern for iolab is a plain "
                                      f"name (no '/'), which fio puts in directory=${{IOLAB_DIR}}")
        if key == "ioengine" and value not in ENGINES:
            raise _fail(path, number, f"ioengine={value}: iolab runs only fio's block I/O engines "
                                      f"({', '.join(ENGINES)})")
        if key in ("mem", "iomem") and ":" in value:
            raise _fail(path, number, f"{key}={value}: a buffer mapped from a file creates that file; "
                                      f"give the type alone ({value.split(':', 1)[0]})")
        if key in TARGETS:
            if value != TARGETS[key] or not eq:
                raise _fail(path, number, f"{key}={value}: a job for iolab names its target only as "
                                          f"{key}={TARGETS[key]} (iolab never touches a device you did not name)")
            targets.add(key)
            (global_target if current == "global" else section_target).add(key)
    close()
    if not sections:
        raise _fail(path, None, "no job section: a job file for iolab has at least one [name] with "
                                "filename=${IOLAB_DEV} or directory=${IOLAB_DIR}")
    return sections, "directory" in targets


# Values of iolab's variables for fio's parse; none of them is used to do I/O.
PARSE_ENV = {"IOLAB_DEV": "/dev/null", "IOLAB_DIR": "/nonexistent", "IOLAB_SIZE": str(64 << 20),
             "IOLAB_HALF": str(32 << 20), "IOLAB_RUNTIME": "1000ms", "IOLAB_RAMP": "0ms"}


def _fio_says(output: str) -> str:
    return reason([ln.strip() for ln in output.splitlines() if ln.strip() and not ln.startswith((" ", "\t"))]) \
        or "no reason given"


def writes(fio_path: str, path: str, text: str, variables: dict[str, str] | None = None) -> bool:
    """Asks fio whether the job ``text`` (read from ``path``) writes: its
    read-only parse fails if it does. ``variables``: the values of iolab's
    variables for the parse (default :data:`PARSE_ENV`)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **(variables or PARSE_ENV)}

    def parse(*flags: str) -> subprocess.CompletedProcess:
        # fio reads the job from its standard input when the file is "-".
        return subprocess.run([fio_path, "--parse-only", *flags, "-"], input=text, env=env,
                              capture_output=True, text=True, timeout=60)

    try:
        plain = parse()
        if plain.returncode != 0:
            raise _fail(path, None, f"fio cannot parse the job: {_fio_says(plain.stderr + plain.stdout)}")
        return parse("--readonly").returncode != 0
    except subprocess.TimeoutExpired:
        raise _fail(path, None, "fio did not finish parsing the job within 60 s") from None
