"""A bench session: checks, sandbox, configurations in shuffled order, restore.

Method (BENCH.md, "Practice that makes a comparison valid"):

1. check root, fio, the device and the workload's safety (:mod:`safety`);
2. write the state file, then create the sandbox, snapshot the device's
   queue settings, and put every configuration in place once to find
   refused values before any measurement;
3. precondition (write the device once) when it is a sandbox, or when the
   user gave ``--destroy-data`` to a writing workload; make and mount a file
   system for workloads that need one;
4. for every repetition, shuffle all (configuration, variant) units afresh
   and, for each, apply the configuration (switch, then tunables), sync and
   drop the page cache, and run fio with its ramp time; record the settings
   as read back, the kernel, the device model and fio's metrics;
5. restore everything (:func:`iolab.bench.statefile.undo`) -- at the end,
   after Ctrl-C, SIGTERM, SIGHUP or an error. Ctrl-C is ignored while
   restoring, so a second one cannot leave things half done.
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import random
import signal
import socket
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.text import Text

from iolab.bench import configs as cfg
from iolab.bench import fio, record, safety, sandbox, statefile, sysfs, workloads
from iolab.bench.workloads import Target, Variant, Workload
from iolab.bench.runs import Options, Run, Session
from iolab.bench.words import count
from iolab.cli.errors import UserError

DROP_CACHES = Path("/proc/sys/vm/drop_caches")


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the session is so it can clean up."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class RateColumn(ProgressColumn):
    """Runs per minute, from rich's own speed estimate."""

    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("-- runs/min" if speed is None else f"{speed * 60:.1f} runs/min")


def drop_caches() -> None:
    """``sync; echo 3 > /proc/sys/vm/drop_caches``."""
    os.sync()
    DROP_CACHES.write_text("3\n")


def _on_signal(signum, frame):
    raise Interrupted(signum)


HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def signals_held():
    """Ctrl-C, SIGTERM and SIGHUP that arrive inside take effect when it ends
    (raised again in this process, so that their own handlers act then): a
    finished run is recorded in runs.jsonl and in the session, hence in
    runs.json, whole or not at all. Main thread only."""
    held: list[int] = []
    previous = {s: signal.signal(s, lambda signum, frame: held.append(signum)) for s in HELD}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if held:
        signal.raise_signal(held[0])


def _backing_device(path: Path) -> str:
    """The block device holding ``path`` and its scheduler (never changed)."""
    st = os.stat(path)
    devno = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    real = (sysfs.SYS_DEV_BLOCK / devno).resolve()
    if not real.exists():
        return f"device {devno}"
    disk = real.parent if (real / "partition").exists() else real
    _, active = sysfs.schedulers(sysfs.BlockDevice(disk.name, f"/dev/{disk.name}", devno))
    return f"{real.name} (scheduler {active or 'n/a'})"


def _configs(dev: sysfs.BlockDevice, opts: Options, offered: list[str]) -> list[cfg.Config]:
    schedulers = opts.schedulers
    if schedulers is None:
        schedulers = [] if (opts.explicit and not opts.grid) else list(offered)
    return cfg.build(schedulers, opts.grid, opts.explicit, offered)


def _probe(dev: sysfs.BlockDevice, configs: list[cfg.Config], offered: list[str]) -> dict:
    """Applies every configuration once (refusals surface now) and records defaults."""
    defaults = {}
    for name in dict.fromkeys(c.scheduler for c in configs):
        cfg.apply(dev, cfg.Config(name), offered)
        defaults[name] = {**sysfs.tunables(dev), **{
            k: v for k, v in sysfs.settings(dev).items() if k in sysfs.QUEUE_ATTRS}}
    for config in configs:
        cfg.apply(dev, config, offered)
    return defaults


def plan(configs: list[cfg.Config], variants: list[Variant], reps: int,
         seed: int) -> list[list[tuple[cfg.Config, Variant]]]:
    """Every repetition runs every unit once, in a freshly shuffled order."""
    rng = random.Random(seed)
    units = [(c, v) for c in configs for v in variants]
    out = []
    for _ in range(reps):
        order = list(units)
        rng.shuffle(order)
        out.append(order)
    return out


# A session's bounds: beyond them a run is a typing mistake, not a plan (a
# billion repetitions started measuring, with an ETA of centuries).
MAX_REPS = 10_000
MAX_RUNS = 100_000
MAX_SECONDS = 86_400.0  # one fio job's --runtime or --ramp


def check_limits(reps: int, runtime: float, ramp: float) -> None:
    """Refuses repetitions and times that cannot make a session."""
    if not 1 <= reps <= MAX_REPS:
        raise UserError(f"--reps {reps}: expected 1 to {MAX_REPS:,}")
    if not (math.isfinite(runtime) and 0 < runtime <= MAX_SECONDS):
        raise UserError(f"--runtime {runtime:g}: expected seconds above 0 and at most {MAX_SECONDS:g} (a day)")
    if not (math.isfinite(ramp) and 0 <= ramp <= MAX_SECONDS):
        raise UserError(f"--ramp {ramp:g}: expected seconds from 0 to {MAX_SECONDS:g} (a day)")


def run(opts: Options, console: Console | None = None) -> Session:
    """Runs a session; returns its runs (also when interrupted) after restoring the device."""
    console = console or Console(stderr=True)
    safety.require_root()
    fio_path = fio.find_fio()
    workload = opts.workload
    variants = workload.variants(opts.params)
    writes = workload.writes or workload.needs_fs
    check_limits(opts.reps, opts.runtime, opts.ramp)
    # What can be refused before the device is known, is refused now.
    if opts.loop_size and opts.size and opts.size > opts.loop_size:
        raise UserError(f"--size {opts.size // 2**20}M is larger than the --loop sandbox ({opts.loop_size // 2**20}M)")
    least = opts.reps * cfg.least_count(opts.grid, opts.explicit) * len(variants)
    if least > MAX_RUNS:
        raise UserError(f"the grid makes at least {least:,} runs ({count(opts.reps, 'repetition')} of "
                        f"{count(len(variants), 'variant')}), more than {MAX_RUNS:,}")
    dev = None
    if opts.device:
        dev = sysfs.resolve(opts.device)
        safety.require_scheduler_choice(dev)
        if writes:
            safety.check_writes(dev, workload.name, opts.destroy_data)
        other = statefile.claimed(dev.devno, opts.state_dir)
        if other is not None:
            raise UserError(
                f"{dev.path} is held by another bench session ({other}); if none is running, "
                f"run `iolab bench --restore` first"
            )
    if workload.text is None and not workload.jobfile.is_file():
        raise UserError(f"the job file {workload.jobfile} is missing")
    seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(2**31)
    outdir = opts.outdir
    if outdir.exists() and not outdir.is_dir():
        raise UserError(f"-o {outdir}: not a directory")
    if record.holds_session(outdir):
        raise UserError(f"-o {outdir} already holds a bench session (runs.jsonl or runs.json); "
                        f"choose another -o, or remove it to measure again")
    # Directories this session makes; removed again if it ends before a run finished.
    fresh = [d for d in (outdir, *outdir.parents, *((opts.loop_dir, *opts.loop_dir.parents) if opts.loop_dir else ()))
             if not d.exists()]

    journal = statefile.Journal.begin(opts.state_dir)
    handlers = {s: signal.signal(s, _on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    session = Session(opts, meta={}, configs=[], variants=variants, runs=[])
    try:
        if dev is None:
            loop_dir = opts.loop_dir or outdir
            backing = (loop_dir / f"iolab-loop-{os.getpid()}.img").resolve()
            journal.record(loop={"backing_file": str(backing), "device": None})
            sandbox.create_backing_file(backing, opts.loop_size or 0)
            device = sandbox.attach(backing)
            journal.record(loop={"backing_file": str(backing), "device": device})
            dev = sysfs.resolve(device)
        offered = safety.require_scheduler_choice(dev)
        original = sysfs.snapshot(dev)
        journal.record(device=dev.to_json(), identity=sysfs.identity(dev), queue=original.to_json())
        session.configs = configs = _configs(dev, opts, offered)
        defaults = _probe(dev, configs, offered)
        size = sysfs.size_bytes(dev)
        if opts.size:
            if opts.size > size:
                raise UserError(f"--size {opts.size // 2**20}M is larger than {dev.path} ({size // 2**20}M)")
            size = opts.size
        meta = _meta(opts, dev, workload, variants, configs, seed, original, defaults, fio_path)
        if journal.data.get("loop"):
            meta["sandbox"] = {"size_bytes": size, "backing_file": journal.data["loop"]["backing_file"],
                               "backing_device": _backing_device(Path(journal.data["loop"]["backing_file"]))}
        session.meta = meta
        meta["region_bytes"] = size
        total = opts.reps * len(configs) * len(variants)
        if total > MAX_RUNS:
            raise UserError(f"{count(len(configs), 'configuration')} x {count(len(variants), 'variant')} x "
                            f"{count(opts.reps, 'repetition')} = {total:,} runs, more than {MAX_RUNS:,}")
        seconds = total * workload.seconds_per_run(opts.runtime, opts.ramp)
        estimate = f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"
        console.print(f"iolab bench: {workload.name} on {dev.path}: {count(len(configs), 'configuration')} x "
                      f"{count(len(variants), 'variant')} x {count(opts.reps, 'repetition')} = "
                      f"{count(total, 'run')}, about {estimate}", soft_wrap=True)
        if journal.data.get("loop") or (writes and opts.destroy_data):
            console.print(f"preconditioning {dev.path} ({size // 2**20} MiB written once)", soft_wrap=True)
            sandbox.precondition(fio_path, dev.path, size)
            meta["preconditioned"] = True
        directory = ""
        if workload.needs_fs:
            sandbox.make_fs(dev.path)
            mnt = Path(tempfile.mkdtemp(prefix="iolab-bench-mnt-"))
            journal.record(mount={"device": dev.path, "dir": str(mnt)})
            sandbox.mount(dev.path, mnt)
            directory = str(mnt)
            meta["file_system"] = f"ext4 made by iolab, mounted on {mnt}"
        target = Target(device=dev.path, size=size, directory=directory)
        _measure(session, dev, offered, target, fio_path, seed, console)
    except KeyboardInterrupt as e:
        session.signum = e.signum if isinstance(e, Interrupted) else signal.SIGINT
        session.interrupted = "Ctrl-C" if session.signum == signal.SIGINT else signal.Signals(session.signum).name
    finally:
        handlers[signal.SIGINT] = signal.getsignal(signal.SIGINT)
        for s in handlers:
            signal.signal(s, signal.SIG_IGN)
        try:
            done, problems = statefile.undo(journal.data)
            session.restored, session.restore_problems = done, problems
            if not problems:
                journal.finish()
        finally:
            for s, h in handlers.items():
                signal.signal(s, h)
            if not session.runs:
                _remove_empty(fresh)
    session.meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    session.meta["loadavg_end"] = _loadavg()
    if "sandbox" in session.meta:
        session.meta["sandbox"]["removed"] = not Path(session.meta["sandbox"]["backing_file"]).exists()
    return session


def _remove_empty(dirs: list[Path]) -> None:
    """Removes the directories a session made and left empty (deepest first)."""
    for d in sorted(set(dirs), key=lambda d: len(d.parts), reverse=True):
        with contextlib.suppress(OSError):
            if (d / "fio").is_dir():
                (d / "fio").rmdir()  # only when empty: a failed run's fio output is kept
            for name in (record.LOG, "job.fio"):
                (d / name).unlink(missing_ok=True)
            d.rmdir()


def _measure(session: Session, dev: sysfs.BlockDevice, offered: list[str], target: Target,
             fio_path: str, seed: int, console: Console) -> None:
    opts = session.options
    workload = opts.workload
    schedule = plan(session.configs, session.variants, opts.reps, seed)
    original = sysfs.QueueState.from_json(session.meta["original_queue"])
    touched = {name for c in session.configs for name, _ in c.queue}
    reset = {name: original.queue[name] for name in touched if name in original.queue}
    facts = sysfs.describe(dev)
    timeout = workload.seconds_per_run(opts.runtime, opts.ramp) * 5 + 120
    total = sum(len(r) for r in schedule)
    (opts.outdir / "fio").mkdir(parents=True, exist_ok=True)
    if workload.text is not None:  # the --fio job as checked and run
        (opts.outdir / "job.fio").write_text(workload.text)
    readonly = not (workload.writes or workload.needs_fs)
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), RateColumn(),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()]
    with record.start_log(opts.outdir, session.meta) as log, Progress(*columns, console=console,
                                                                      disable=not opts.progress,
                                                                      transient=False) as bar:
        task = bar.add_task("starting", total=total)
        index = 0
        warned = False
        for rep, units in enumerate(schedule):
            for slot, (config, variant) in enumerate(units):
                label = " ".join(x for x in (config.label, variant.label) if x)
                bar.update(task, description=f"rep {rep + 1}/{opts.reps} {label}")
                settings = cfg.apply(dev, config, offered, reset)
                drop_caches()
                env = workload.env(variant, target, opts.runtime, opts.ramp)
                out = opts.outdir / "fio" / f"run-{index:04d}.json"
                started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
                t0 = time.monotonic()
                result = fio.run(fio_path, workload.jobfile, env, out, timeout, readonly=readonly,
                                 text=workload.text)
                # Recorded whole or not at all: runs.jsonl and the session (runs.json) hold the same runs.
                with signals_held():
                    run = Run(
                        run=index, rep=rep, slot=slot, config=config.label, variant=variant.label,
                        started=started, seconds=round(time.monotonic() - t0, 3), settings=settings,
                        facts=facts, metrics=fio.metrics(result), fio_json=str(out.relative_to(opts.outdir)),
                        fio_messages=list(result.messages),
                    )
                    measured = workloads.expand(workload.primary, run.metrics)
                    if not measured and not warned:
                        warned = True
                        said = f" fio said: {fio.reason(result.messages)}." if result.messages else ""
                        bar.console.print(
                            f"warning: run {index} measured none of {', '.join(workload.primary)}: nothing "
                            f"was left to measure after the ramp time? (a larger device or a smaller --ramp "
                            f"helps){said}", soft_wrap=True)
                    session.runs.append(run)
                    record.append(log, run)
                    index += 1
                    bar.advance(task)
        bar.update(task, description="done")


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def _meta(opts: Options, dev: sysfs.BlockDevice, workload: Workload, variants: list[Variant],
          configs: list[cfg.Config], seed: int, original: sysfs.QueueState, defaults: dict,
          fio_path: str) -> dict:
    from iolab import __version__

    return {
        "iolab": __version__,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": socket.gethostname(),
        "cpus": os.cpu_count(),
        "loadavg_start": _loadavg(),
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "fio": fio.version(fio_path),
        "device": dev.path,
        "device_name": dev.name,
        "model": sysfs.device_model(dev),
        "rotational": sysfs.read_attr(dev, "rotational"),
        "workload": workload.name,
        "workload_summary": workload.summary,
        "mirrors": workload.mirrors,
        "job_file": str(workload.jobfile),
        "builtin": workload.path is None,
        "writes": workload.writes,
        "readonly": not (workload.writes or workload.needs_fs),
        "params": {**workload.params, **opts.params},
        "variants": [{"label": v.label, "params": v.params} for v in variants],
        "configs": [c.label for c in configs],
        "scheduler_defaults": defaults,
        "original_queue": original.to_json(),
        "reps": opts.reps,
        "runtime_s": opts.runtime,
        "ramp_s": opts.ramp,
        "seed": seed,
        "drop_caches": "sync; echo 3 > /proc/sys/vm/drop_caches before every run",
        "preconditioned": False,
    }
