"""Hand-written hostile inputs for the commands beyond the simulator:
`iolab bench` (options, targets, tunables, --fio job files, --report),
`iolab queue` (check/stats/repair on what is not a queue, bench options),
`iolab emu` (disk, serving and --check options, hostile request logs) and
`iolab mail` (serve and bench options). Each must be refused with one line
naming the option, file or line and the limit, or give the right result;
none may crash, hang, or leave a loop device, a state file or an output
directory behind.

The bench cases that reach a device use a 32 MiB loop sandbox and need root
(CI runs as root); the others are refused before any device is touched.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from .harness import TALLY, check_clean, run_cli

SHORT = ["--reps", "1", "--runtime", "0.2", "--ramp", "0"]
LOOP = ["--loop", "32M", *SHORT]

# (id, args, exit code, substrings of stderr)
BENCH_CASES = [
    ("reps-0", ["--reps", "0", "--loop", "32M"], 2, ["--reps 0", "1 to 10,000"]),
    ("reps-negative", ["--reps", "-1", "--loop", "32M"], 2, ["--reps -1"]),
    ("reps-text", ["--reps", "abc", "--loop", "32M"], 2, ["--reps", "invalid int"]),
    ("reps-1e9", ["--reps", "1000000000", "--loop", "32M"], 2, ["--reps 1000000000", "10,000"]),
    ("runtime-0", ["--runtime", "0", "--loop", "32M"], 2, ["--runtime 0", "above 0"]),
    ("runtime-negative", ["--runtime", "-1", "--loop", "32M"], 2, ["--runtime -1"]),
    ("runtime-nan", ["--runtime", "nan", "--loop", "32M"], 2, ["--runtime nan"]),
    ("runtime-inf", ["--runtime", "inf", "--loop", "32M"], 2, ["--runtime inf"]),
    ("runtime-1e300", ["--runtime", "1e300", "--loop", "32M"], 2, ["--runtime 1e+300", "a day"]),
    ("ramp-negative", ["--ramp", "-1", "--loop", "32M"], 2, ["--ramp -1"]),
    ("ramp-nan", ["--ramp", "nan", "--loop", "32M"], 2, ["--ramp nan"]),
    ("ramp-1e300", ["--ramp", "1e300", "--loop", "32M"], 2, ["--ramp 1e+300"]),
    ("seed-text", ["--seed", "abc", *LOOP], 2, ["--seed", "invalid int"]),
    ("detect-0", ["--detect", "0", "--loop", "32M"], 2, ["--detect 0", "above 0"]),
    ("detect-negative", ["--detect", "-5", "--loop", "32M"], 2, ["--detect -5"]),
    ("detect-nan", ["--detect", "nan", "--loop", "32M"], 2, ["--detect nan"]),
    ("detect-1e300", ["--detect", "1e300", "--loop", "32M"], 2, ["at most 1000"]),
    ("no-target", SHORT, 2, ["name a target"]),
    ("loop-0", ["--loop", "0", *SHORT], 2, ["--loop needs at least 16M"]),
    ("loop-empty", ["--loop", "", *SHORT], 2, ["--loop: the size is empty"]),
    ("loop-blank", ["--loop", "  ", *SHORT], 2, ["--loop: the size is empty"]),
    ("loop-unit", ["--loop", "1X", *SHORT], 2, ["--loop: cannot read size '1X'"]),
    ("loop-peta", ["--loop", "1P", *SHORT], 2, ["cannot read size '1P'"]),
    ("loop-1e300", ["--loop", "1e300", *SHORT], 2, ["cannot read size '1e300'"]),
    ("loop-and-device", ["--loop", "32M", "--device", "/dev/loop0", *SHORT], 2, ["not allowed with"]),
    ("size-0", ["--size", "0", *LOOP], 2, ["--size 0", "leave --size out"]),
    ("size-negative", ["--size", "-5", *LOOP], 2, ["--size: cannot read size '-5'"]),
    ("size-empty", ["--size", "", *LOOP], 2, ["--size: the size is empty"]),
    ("size-beyond-device", ["--size", "1T", "--schedulers", "none", *LOOP], 2, ["larger than"]),
    ("device-null", ["--device", "/dev/null", *SHORT], 2, ["/dev/null is not a block device"]),
    ("device-zero", ["--device", "/dev/zero", *SHORT], 2, ["/dev/zero is not a block device"]),
    ("device-directory", ["--device", "/tmp", *SHORT], 2, ["/tmp is not a block device"]),
    ("device-missing", ["--device", "/dev/nosuch", *SHORT], 2, ["/dev/nosuch", "No such file"]),
    ("device-empty", ["--device", "", *SHORT], 2, ["--device: the path is empty"]),
    ("schedulers-cfq", ["--schedulers", "cfq", *LOOP], 2, ["does not offer scheduler 'cfq'"]),
    ("schedulers-empty", ["--schedulers", "", *LOOP], 2, ["--schedulers is empty"]),
    ("schedulers-commas", ["--schedulers", ",,,", *LOOP], 2, ["nothing to compare"]),
    ("schedulers-shell", ["--schedulers", "bfq;rm", *LOOP], 2, ["does not offer scheduler 'bfq;rm'"]),
    ("tunable-unknown", ["--tunables", "bfq.nosuch=1", *LOOP], 2, ["has no tunable 'nosuch'"]),
    ("tunable-scheduler-unknown", ["--tunables", "nosuch.x=1", *LOOP], 2, ["nosuch is not among the schedulers"]),
    ("tunable-of-absent-scheduler", ["--schedulers", "none", "--tunables", "bfq.slice_idle=0", *LOOP], 2,
     ["bfq is not among the schedulers compared"]),
    ("tunable-no-equals", ["--tunables", "x", *LOOP], 2, ["cannot read --tunables 'x'"]),
    ("tunable-no-value", ["--tunables", "bfq.slice_idle=", *LOOP], 2, ["cannot read --tunables"]),
    ("tunable-path-queue", ["--tunables", "queue.../../../../proc/sys/vm/drop_caches=3", *LOOP], 2,
     ["cannot read --tunables"]),
    ("tunable-path-iosched", ["--tunables", "bfq.../../scheduler=none", *LOOP], 2, ["cannot read --tunables"]),
    ("tunable-queue-scheduler", ["--tunables", "queue.scheduler=none", *LOOP], 2,
     ["iolab changes only nr_requests"]),
    ("tunable-kernel-refuses", ["--tunables", "bfq.slice_idle=-1", *LOOP], 2,
     ["cannot set loop", "slice_idle to '-1'", "Invalid argument"]),
    # Refused before the sandbox is made (issue 27: they passed every check).
    ("tunable-not-a-number", ["--tunables", "bfq.slice_idle=0 1", *LOOP], 2,
     ["--tunables bfq.slice_idle: '0 1' is not a whole number"]),
    ("tunable-nan", ["--tunables", "bfq.slice_idle=nan", *LOOP], 2, ["'nan' is not a whole number"]),
    ("tunable-float", ["--tunables", "bfq.slice_idle=0.5", *LOOP], 2, ["'0.5' is not a whole number"]),
    ("tunable-queue-nan", ["--tunables", "queue.nr_requests=nan", *LOOP], 2, ["'nan' is not a whole number"]),
    ("config-nan", ["--config", "bfq:slice_idle=nan", *LOOP], 2, ["slice_idle: 'nan' is not a whole number"]),
    ("grid-a-million-runs", ["--tunables", "bfq.slice_idle=" + ",".join(map(str, range(1000))),
                             "bfq.fifo_expire_sync=" + ",".join(map(str, range(1000))), *LOOP], 2,
     ["the grid makes at least 1,000,000 runs", "more than 100,000"]),
    ("size-beyond-loop", ["--size", "64M", *LOOP], 2, ["--size 64M is larger than the --loop sandbox (32M)"]),
    ("config-no-value", ["--config", "bfq:slice_idle", *LOOP], 2, ["'slice_idle' is not NAME=VALUE"]),
    ("config-no-name", ["--config", "bfq:=1", *LOOP], 2, ["bad tunable name ''"]),
    ("config-path", ["--config", "bfq:../x=1", *LOOP], 2, ["bad tunable name '../x'"]),
    ("config-scheduler-unknown", ["--config", "nosuch", *LOOP], 2, ["does not offer scheduler 'nosuch'"]),
    ("workload-unknown", ["--workload", "nosuch", *LOOP], 2, ["unknown workload 'nosuch'"]),
    ("param-unknown", ["--param", "nosuch=1", *LOOP], 2, ["has no parameter 'nosuch'"]),
    ("param-not-a-size", ["--workload", "iozone", "--param", "reclen=abc", *LOOP], 2, ["cannot read size 'abc'"]),
    ("param-empty", ["--workload", "iozone", "--param", "reclen=", *LOOP], 2, ["needs at least one value"]),
    ("fio-missing", ["--fio", "/nonexistent.fio", *LOOP], 2, ["--fio /nonexistent.fio", "No such file"]),
    ("fio-directory", ["--fio", "/tmp", *LOOP], 2, ["--fio /tmp", "not a regular file"]),
    ("fio-dev-zero", ["--fio", "/dev/zero", *LOOP], 2, ["--fio /dev/zero: not a regular file"]),
    ("fio-dev-null", ["--fio", "/dev/null", *LOOP], 2, ["not a regular file"]),
    ("fio-and-workload", ["--fio", "/dev/null", "--workload", "iozone", *LOOP], 2, ["not allowed with"]),
    ("report-missing", ["--report", "/nonexistent"], 2, ["--report /nonexistent: no such directory"]),
    ("report-not-a-directory", ["--report", "/dev/null"], 2, ["no such directory"]),
    ("report-empty-directory", ["--report", "{tmp}"], 2, ["cannot read", "runs.jsonl"]),
    ("loop-dir-not-a-directory", ["--loop-dir", "/dev/null", *LOOP], 2, ["--loop-dir /dev/null: not a directory"]),
    ("output-not-a-directory", ["-o", "/dev/null", *LOOP], 2, ["-o /dev/null: not a directory"]),
    ("param-beyond-device", ["--workload", "iozone", "--param", "reclen=1T", "--schedulers", "none", *LOOP], 2,
     ["fio failed", "size too small"]),
    # Accepted: they run (one short run on the sandbox) and clean up.
    ("seed-negative", ["--seed", "-1", "--schedulers", "none", *LOOP], 0, []),
    ("seed-beyond-64-bits", ["--seed", str(2**70), "--schedulers", "none", *LOOP], 0, []),
    ("restore-nothing", ["--restore"], 0, []),
    ("list-workloads", ["--list-workloads"], 0, []),
]


PROGRESS_FIRST = {"param-beyond-device", "param-not-a-size"}
# What must be said exactly once (fio says "size too small" on stderr and in its output file).
ONCE = {"param-beyond-device": "size too small"}


def _attached_under(directory) -> list[str]:
    out = subprocess.run(["losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE"],
                         capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(directory) in line]


@pytest.mark.parametrize("case", BENCH_CASES, ids=[c[0] for c in BENCH_CASES])
def test_bench(tmp_path, case):
    name, args, code, needles = case
    assert os.geteuid() == 0, "the bench cases need root (CI runs as root)"
    state, out = tmp_path / "state", tmp_path / "out"
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "-o" not in args and "--report" not in args:
        args += ["-o", str(out)]
    TALLY["bench (options, targets, tunables, --report)"] += 1
    proc = run_cli(["bench", "--no-progress", *args], cwd=tmp_path, timeout=180,
                   env={"IOLAB_STATE_DIR": str(state)})
    if name in PROGRESS_FIRST:
        # Refused by fio once the sandbox is made: the progress lines come first, the error last.
        check_clean(subprocess.CompletedProcess(proc.args, 0, proc.stdout, proc.stderr), name)
        assert proc.stderr.strip().splitlines()[-1].startswith("iolab: error: ")
    else:
        check_clean(proc, name)
    assert proc.returncode == code, f"{name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    for n in needles:
        assert n in proc.stderr, f"{name}: {n!r} not in: {proc.stderr}"
    if name in ONCE:
        assert proc.stderr.count(ONCE[name]) == 1, f"{name}: said more than once: {proc.stderr}"
    assert not _attached_under(tmp_path), f"{name}: a loop device was left attached"
    assert not list(state.glob("*.json")) if state.exists() else True, f"{name}: a state file was left"
    if code == 2 and name not in PROGRESS_FIRST:  # those measured: their output stays
        assert not out.exists(), f"{name}: a refused setup left {out}"
        assert not (tmp_path / "bench-out").exists()


# (id, job file body, substrings of the error). Each is refused before any device is touched.
FIO_JOBS = [
    ("env-variable", "[x]\nfilename=${IOLAB_DEV}\nrw=${MODE}\n", ["job.fio:3", "${MODE}"]),
    ("env-variable-name", "[x]\nfilename=${IOLAB_DEV}\n${WHAT}=write\n", ["${WHAT}"]),
    ("env-in-target", "[x]\nfilename=${IOLAB_DEV}${SUFFIX}\n", ["${SUFFIX}"]),
    ("include-tab", "include\tother.fio\n[x]\nfilename=${IOLAB_DEV}\n", ["job.fio:1", "include others"]),
    ("include-indented", "  include other.fio\n[x]\nfilename=${IOLAB_DEV}\n", ["include others"]),
    ("include-glued", "[x]\nfilename=${IOLAB_DEV}\nincludeXother.fio\n", ["include others"]),
    ("exec-prerun", "[x]\nfilename=${IOLAB_DEV}\nexec_prerun=touch /tmp/owned\n", ["exec_prerun", "runs a program"]),
    ("exec-postrun", "[x]\nfilename=${IOLAB_DEV}\nexec_postrun=true\n", ["runs a program"]),
    ("engine-exec", "[x]\nfilename=${IOLAB_DEV}\nioengine=exec\nprogram=/bin/touch\narguments=/tmp/owned\n",
     ["ioengine=exec", "block I/O engines"]),
    ("engine-external", "[x]\nfilename=${IOLAB_DEV}\nioengine=external:/tmp/e.so\n", ["ioengine=external"]),
    ("engine-path", "[x]\nfilename=${IOLAB_DEV}\nioengine=/tmp/e.so\n", ["ioengine=/tmp/e.so"]),
    ("engine-net", "[x]\nfilename=${IOLAB_DEV}\nioengine=net\nhostname=example.org\n", ["ioengine=net"]),
    ("engine-sg", "[x]\nfilename=${IOLAB_DEV}\nioengine=sg\n", ["ioengine=sg"]),
    ("engine-filedelete", "[x]\ndirectory=${IOLAB_DIR}\nioengine=filedelete\n", ["ioengine=filedelete"]),
    ("mem-from-file", "[x]\nfilename=${IOLAB_DEV}\nmem=mmap:/etc/passwd\n", ["mem=mmap:/etc/passwd"]),
    ("iomem-from-file", "[x]\nfilename=${IOLAB_DEV}\niomem=mmaphuge:/tmp/x\n", ["iomem=mmaphuge"]),
    ("bw-log", "[x]\nfilename=${IOLAB_DEV}\nwrite_bw_log=/etc/cron.d/x\n", ["write_bw_log", "log files"]),
    ("lat-log", "[x]\nfilename=${IOLAB_DEV}\nwrite_lat_log=lat\n", ["write_lat_log"]),
    ("iops-log", "[x]\nfilename=${IOLAB_DEV}\nwrite_iops_log=iops\n", ["write_iops_log"]),
    ("hist-log", "[x]\nfilename=${IOLAB_DEV}\nwrite_hist_log=h\n", ["write_hist_log"]),
    ("iolog", "[x]\nfilename=${IOLAB_DEV}\nwrite_iolog=/tmp/log\n", ["write_iolog"]),
    ("read-iolog", "[x]\nfilename=${IOLAB_DEV}\nread_iolog=trace.log\n", ["replays I/O"]),
    ("replay-redirect", "[x]\nfilename=${IOLAB_DEV}\nreplay_redirect=/dev/sda\n", ["another device"]),
    ("cgroup", "[x]\nfilename=${IOLAB_DEV}\ncgroup=x\n", ["control group"]),
    ("opendir", "[x]\nfilename=${IOLAB_DEV}\nopendir=/\n", ["adds every file"]),
    ("ioscheduler", "[x]\nfilename=${IOLAB_DEV}\nioscheduler=bfq\n", ["switches the scheduler"]),
    ("mounted-write", "[x]\nfilename=${IOLAB_DEV}\nallow_mounted_write=1\n", ["mounted device"]),
    ("profile", "[x]\nfilename=${IOLAB_DEV}\nprofile=tiobench\n", ["profile"]),
    ("filename-format-path", "[x]\ndirectory=${IOLAB_DIR}\nfilename_format=/dev/sd$jobnum\n", ["a plain name"]),
    ("filename-format-up", "[x]\ndirectory=${IOLAB_DIR}\nfilename_format=../../$jobnum\n", ["a plain name"]),
    ("filename-other", "[x]\nfilename=/dev/sda\n", ["filename=/dev/sda", "never touches a device"]),
    ("filename-two", "[x]\nfilename=${IOLAB_DEV}:/dev/sda\n", ["never touches a device"]),
    ("directory-root", "[x]\ndirectory=/\n", ["directory=${IOLAB_DIR}"]),
    ("no-target", "[x]\nrw=read\n", ["job [x] names no target"]),
    ("no-section", "filename=${IOLAB_DEV}\n", ["no job section"]),
    ("empty", "", ["no job section"]),
    ("long-line", "[x]\nfilename=${IOLAB_DEV}\n" + "x" * 5000 + "\n", ["job.fio:3", "5000 characters"]),
    ("nul-byte", "[x]\nfilename=${IOLAB_DEV}\nrw=read\x00\n", ["job.fio:3", "NUL byte"]),
    ("not-utf8", b"[x]\nfilename=${IOLAB_DEV}\nrw=read\xff\n", ["job.fio:3", "not UTF-8"]),
    ("too-large", "[x]\nfilename=${IOLAB_DEV}\n" + ";" * (2**20 + 1), ["larger than 1 MiB"]),
    ("bad-option", "[x]\nfilename=${IOLAB_DEV}\nbogus=1\n", ["fio cannot parse the job", "bogus=1"]),
    ("bad-direction", "[x]\nfilename=${IOLAB_DEV}\nrw=sideways\n", ["fio cannot parse the job"]),
]


@pytest.mark.parametrize("case", FIO_JOBS, ids=[c[0] for c in FIO_JOBS])
def test_bench_fio_job(tmp_path, case):
    name, body, needles = case
    job = tmp_path / "job.fio"
    job.write_bytes(body if isinstance(body, bytes) else body.encode())
    TALLY["bench --fio job files"] += 1
    proc = run_cli(["bench", "--no-progress", "--fio", str(job), "-o", str(tmp_path / "out"), *LOOP],
                   cwd=tmp_path, timeout=120, env={"IOLAB_STATE_DIR": str(tmp_path / "state")})
    check_clean(proc, name)
    assert proc.returncode == 2, f"{name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    for n in needles:
        assert n in proc.stderr, f"{name}: {n!r} not in: {proc.stderr}"
    assert not (tmp_path / "out").exists() and not (tmp_path / "owned").exists()
    assert not _attached_under(tmp_path)


def _queue_dirs(tmp_path) -> dict[str, str]:
    """Directories that are not good queues: empty, junk segments, a segment that is a directory."""
    empty = tmp_path / "empty"
    empty.mkdir()
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "seg-0000000000000000.fq").write_bytes(os.urandom(5000))
    zero = tmp_path / "zero"
    zero.mkdir()
    (zero / "seg-0000000000000000.fq").write_bytes(b"")
    dirseg = tmp_path / "dirseg"
    (dirseg / "seg-0000000000000000.fq").mkdir(parents=True)
    return {"empty": str(empty), "junk": str(junk), "zero": str(zero), "dirseg": str(dirseg)}


# (id, args, allowed exit codes, substrings of stdout + stderr)
QUEUE_CASES = [
    ("check-missing", ["check", "/nonexistent"], (2,), ["/nonexistent: no such queue directory"]),
    ("check-dev-null", ["check", "/dev/null"], (2,), ["no such queue directory"]),
    ("check-empty", ["check", "{empty}"], (2,), ["not a FastQueue directory"]),
    ("stats-empty", ["stats", "{empty}"], (2,), ["not a FastQueue directory"]),
    ("repair-empty", ["repair", "--yes", "{empty}"], (2,), ["not a FastQueue directory"]),
    ("check-junk-segment", ["check", "{junk}"], (1, 2), []),
    ("check-empty-segment", ["check", "{zero}"], (0, 1, 2), []),
    ("check-segment-is-a-directory", ["check", "{dirseg}"], (1, 2), []),
    ("stats-junk-segment", ["stats", "{junk}"], (0, 2), []),
    ("repair-asks-without-a-terminal", ["repair", "{junk}"], (1, 2), []),
    ("bench-sizes-text", ["bench", "--sizes", "abc"], (2,), ["--sizes", "comma-separated integers"]),
    ("bench-sizes-0", ["bench", "--sizes", "0"], (2,), ["--sizes", "between 1 and"]),
    ("bench-sizes-huge", ["bench", "--sizes", str(2**40), "--peers", "fastqueue"], (2,), ["--sizes"]),
    ("bench-producers-0", ["bench", "--producers", "0"], (2,), ["--producers", "between 1 and"]),
    ("bench-producers-huge", ["bench", "--producers", "1000000", "--peers", "fastqueue"], (2,), ["--producers"]),
    ("bench-peers-unknown", ["bench", "--peers", "nosuch"], (2,), ["unknown peer 'nosuch'"]),
    ("bench-seconds-0", ["bench", "--seconds", "0"], (2,), ["--seconds"]),
    ("bench-seconds-nan", ["bench", "--seconds", "nan"], (2,), ["--seconds"]),
    ("bench-seconds-inf", ["bench", "--seconds", "inf"], (2,), ["--seconds"]),
    ("bench-max-mib-0", ["bench", "--max-mib", "0"], (2,), ["--max-mib"]),
    ("bench-batch-delay-negative", ["bench", "--batch-delay", "-1"], (2,), ["--batch-delay"]),
    ("bench-batch-delay-nan", ["bench", "--batch-delay", "nan"], (2,), ["--batch-delay"]),
    ("bench-recovery-negative", ["bench", "--recovery-mib", "-1"], (2,), ["--recovery-mib"]),
    ("bench-dir-dev-null", ["bench", "--dir", "/dev/null", "--quick"], (2,), ["--dir /dev/null"]),
]


@pytest.mark.parametrize("case", QUEUE_CASES, ids=[c[0] for c in QUEUE_CASES])
def test_queue(tmp_path, case):
    name, args, codes, needles = case
    dirs = _queue_dirs(tmp_path)
    args = [a.format(**dirs) if a.startswith("{") else a for a in args]
    TALLY["queue (check/stats/repair on bad directories, bench options)"] += 1
    proc = run_cli(["queue", *args], cwd=tmp_path, timeout=60, stdin="")
    check_clean(proc if proc.returncode != 1 else subprocess.CompletedProcess(proc.args, 0, proc.stdout, proc.stderr),
                name)
    assert proc.returncode in codes, f"{name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    for n in needles:
        assert n in proc.stdout + proc.stderr, f"{name}: {n!r} not in: {proc.stderr}"



EMU_CASES = [
    ("no-disk", ["--image", "{tmp}/i.img", "--socket", "{tmp}/s"], 2, ["give the disk to emulate"]),
    ("disk-and-diskspecs", ["--disk", "fixed", "--diskspecs", "/dev/null", "--image", "{tmp}/i", "--port", "0"], 2,
     ["not both"]),
    ("disk-unknown", ["--disk", "floppy", "--image", "{tmp}/i.img", "--port", "0"], 2, ["floppy"]),
    ("fixed-ms-other-disk", ["--disk", "hp97560", "--fixed-ms", "3", "--image", "{tmp}/i", "--port", "0"], 2,
     ["--fixed-ms is the service time of --disk fixed"]),
    ("fixed-ms-nan", ["--disk", "fixed", "--fixed-ms", "nan", "--image", "{tmp}/i.img", "--port", "0"], 2,
     ["fixed"]),
    ("fixed-ms-negative", ["--disk", "fixed", "--fixed-ms", "-1", "--image", "{tmp}/i.img", "--port", "0"], 2,
     ["fixed"]),
    ("fixed-ms-1e300", ["--disk", "fixed", "--fixed-ms", "1e300", "--image", "{tmp}/i.img", "--port", "0"], 2,
     ["fixed"]),
    ("fixed-ms-tiny", ["--disk", "fixed", "--fixed-ms", "1e-9", "--image", "{tmp}/i.img", "--port", "0"], 2,
     ["fixed"]),
    ("diskspecs-missing", ["--diskspecs", "/nonexistent", "--image", "{tmp}/i", "--port", "0"], 2,
     ["--diskspecs /nonexistent"]),
    ("diskspecs-dev-zero", ["--diskspecs", "/dev/zero", "--image", "{tmp}/i", "--port", "0"], 2,
     ["--diskspecs /dev/zero"]),
    ("diskspecs-junk", ["--diskspecs", "{tmp}/junk.parv", "--image", "{tmp}/i", "--port", "0"], 2, ["junk.parv"]),
    ("no-image", ["--disk", "fixed", "--port", "0"], 2, ["--image FILE is required"]),
    ("image-directory", ["--disk", "fixed", "--image", "{tmp}", "--port", "0"], 2, ["{tmp}"]),
    ("image-dev-zero", ["--disk", "fixed", "--image", "/dev/zero", "--port", "0"], 2, ["/dev/zero"]),
    ("no-listener", ["--disk", "fixed", "--image", "{tmp}/i.img"], 2, ["--socket PATH or --port N"]),
    ("socket-and-port", ["--disk", "fixed", "--image", "{tmp}/i.img", "--socket", "{tmp}/s", "--port", "0"], 2,
     ["one of them"]),
    ("port-70000", ["--disk", "fixed", "--image", "{tmp}/i.img", "--port", "70000"], 2, ["--port 70000"]),
    ("port-negative", ["--disk", "fixed", "--image", "{tmp}/i.img", "--port", "-1"], 2, ["--port -1"]),
    ("socket-in-missing-dir", ["--disk", "fixed", "--image", "{tmp}/i.img", "--socket", "/nonexistent/s"], 2,
     ["/nonexistent/s"]),
    ("log-directory", ["--disk", "fixed", "--image", "{tmp}/i.img", "--port", "0", "--log", "{tmp}"], 2,
     ["is a directory"]),
    ("out-without-check", ["--disk", "fixed", "--out", "x.csv"], 2, ["--out goes with --check LOG"]),
    ("check-with-image", ["--check", "{tmp}/log.csv", "--image", "x"], 2, ["--check reads a log; it takes no --image"]),
    ("check-missing", ["--check", "/nonexistent.csv"], 2, ["--check /nonexistent.csv"]),
    ("check-dev-zero", ["--check", "/dev/zero"], 2, ["--check /dev/zero"]),
    ("check-empty-log", ["--check", "{tmp}/empty.csv"], 2, ["empty.csv"]),
    ("check-junk-log", ["--check", "{tmp}/junk.csv"], 2, ["junk.csv"]),
    ("check-binary-log", ["--check", "{tmp}/binary.csv"], 2, ["binary.csv"]),
]


@pytest.mark.parametrize("case", EMU_CASES, ids=[c[0] for c in EMU_CASES])
def test_emu(tmp_path, case):
    name, args, code, needles = case
    (tmp_path / "junk.parv").write_text("disk {\n  this is not = a parameter file\n")
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "junk.csv").write_text("a,b,c\n1,2\nnot,a,log\n")
    (tmp_path / "binary.csv").write_bytes(os.urandom(4096))
    (tmp_path / "log.csv").write_text("")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    TALLY["emu (disk, serving, --check logs)"] += 1
    proc = run_cli(["emu", *args], cwd=tmp_path, timeout=60)
    check_clean(proc, name)
    assert proc.returncode == code, f"{name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    for n in needles:
        n = n.replace("{tmp}", str(tmp_path))
        assert n in proc.stderr, f"{name}: {n!r} not in: {proc.stderr}"


SERVE = ["serve", "--queue-dir", "{tmp}/q", "--maildir", "{tmp}/md", "--listen", "127.0.0.1:0"]
MAIL_CASES = [
    ("serve-no-queue-dir", ["serve", "--maildir", "{tmp}/md"], 2, ["--queue-dir"]),
    ("serve-no-target", ["serve", "--queue-dir", "{tmp}/q"], 2, ["--maildir", "--relay"]),
    ("serve-maildir-and-relay", [*SERVE, "--relay", "127.0.0.1:25"], 2, ["not allowed with"]),
    ("serve-queue-unknown", [*SERVE, "--queue", "mbox"], 2, ["invalid choice"]),
    ("serve-max-size-0", [*SERVE, "--max-size", "0"], 2, ["--max-size: expected 1 to 4294967295, got 0"]),
    ("serve-max-size-negative", [*SERVE, "--max-size", "-1"], 2, ["--max-size"]),
    ("serve-max-size-huge", [*SERVE, "--max-size", str(2**70)], 2, ["--max-size"]),
    ("serve-max-recipients-0", [*SERVE, "--max-recipients", "0"], 2, ["--max-recipients"]),
    ("serve-max-line-0", [*SERVE, "--max-line", "0"], 2, ["--max-line"]),
    # The server library's limits, named by the options (they said max_line_bytes, retry_base: issue 27).
    ("serve-max-line-5", [*SERVE, "--max-line", "5"], 2, ["--max-line: must be between 80 and 1 MiB"]),
    ("serve-retry-base-above-max", [*SERVE, "--retry-base", "10", "--retry-max", "5"], 2,
     ["--retry-base: must be above 0 and at most --retry-max"]),
    ("serve-in-flight-below-concurrency", [*SERVE, "--delivery-concurrency", "10", "--max-in-flight", "5"], 2,
     ["--max-in-flight: must be between --delivery-concurrency and"]),
    ("serve-idle-timeout-half-second", [*SERVE, "--idle-timeout", "0.5"], 2, ["--idle-timeout: must be at least 1 s"]),
    ("serve-max-size-1000", [*SERVE, "--max-size", "1000"], 2, ["--max-size: must be between 1024"]),
    ("serve-max-connections-0", [*SERVE, "--max-connections", "0"], 2, ["--max-connections"]),
    ("serve-concurrency-0", [*SERVE, "--delivery-concurrency", "0"], 2, ["--delivery-concurrency"]),
    ("serve-in-flight-0", [*SERVE, "--max-in-flight", "0"], 2, ["--max-in-flight"]),
    ("serve-attempts-0", [*SERVE, "--max-attempts", "0"], 2, ["--max-attempts"]),
    ("serve-idle-timeout-nan", [*SERVE, "--idle-timeout", "nan"], 2, ["--idle-timeout"]),
    ("serve-idle-timeout-negative", [*SERVE, "--idle-timeout", "-1"], 2, ["--idle-timeout"]),
    ("serve-data-timeout-inf", [*SERVE, "--data-timeout", "inf"], 2, ["--data-timeout"]),
    ("serve-drain-timeout-1e300", [*SERVE, "--drain-timeout", "1e300"], 2, ["--drain-timeout"]),
    ("serve-retry-base-nan", [*SERVE, "--retry-base", "nan"], 2, ["--retry-base"]),
    ("serve-retry-max-negative", [*SERVE, "--retry-max", "-5"], 2, ["--retry-max"]),
    ("serve-listen-junk", ["serve", "--queue-dir", "{tmp}/q", "--maildir", "{tmp}/md", "--listen", "nonsense"], 2,
     ["nonsense"]),
    ("serve-listen-port-99999", ["serve", "--queue-dir", "{tmp}/q", "--maildir", "{tmp}/md", "--listen",
                                 "127.0.0.1:99999"], 2, ["99999"]),
    ("serve-relay-junk", ["serve", "--queue-dir", "{tmp}/q", "--relay", "no-port", "--listen", "127.0.0.1:0"], 2,
     ["no-port"]),
    ("serve-queue-dir-is-a-file", ["serve", "--queue-dir", "/dev/null", "--maildir", "{tmp}/md", "--listen",
                                   "127.0.0.1:0"], 2, ["/dev/null"]),
    ("bench-systems-unknown", ["bench", "--systems", "sendmail"], 2, ["--systems: unknown sendmail"]),
    ("bench-systems-empty", ["bench", "--systems", ","], 2, ["--systems"]),
    ("bench-users-0", ["bench", "--users", "0"], 2, ["--users: must be positive"]),
    ("bench-messages-negative", ["bench", "--messages", "-1"], 2, ["--messages"]),
    ("bench-users-beyond-messages", ["bench", "--users", "10", "--messages", "5"], 2, ["more sessions"]),
    ("bench-size-0", ["bench", "--size", "0"], 2, ["--size"]),
    ("bench-reps-0", ["bench", "--reps", "0"], 2, ["--reps"]),
    ("bench-timeout-nan", ["bench", "--timeout", "nan"], 2, ["--timeout"]),
    ("bench-timeout-negative", ["bench", "--timeout", "-1"], 2, ["--timeout"]),
]


@pytest.mark.parametrize("case", MAIL_CASES, ids=[c[0] for c in MAIL_CASES])
def test_mail(tmp_path, case):
    name, args, code, needles = case
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    TALLY["mail (serve and bench options)"] += 1
    proc = run_cli(["mail", *args], cwd=tmp_path, timeout=60)
    check_clean(proc, name)
    assert proc.returncode == code, f"{name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    for n in needles:
        assert n in proc.stderr, f"{name}: {n!r} not in: {proc.stderr}"
