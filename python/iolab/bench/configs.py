"""Configurations: a scheduler with tunables, and how one is put in place.

``--tunables`` gives a grid: ``bfq.slice_idle=0,8 bfq.low_latency=0,1``
makes four BFQ configurations; ``queue.nr_requests=64,256`` multiplies every
configuration. The value ``default`` leaves a tunable as the switch left it.
``--config`` adds one configuration with several tunables set together, as
seed 004's modified BFQ: ``bfq:slice_idle=20,fifo_expire_async=150``.

:func:`apply` follows BENCH.md: switch first -- through another scheduler,
so the target always starts from its defaults even if it was already active
-- then the scheduler's tunables, then queue settings (a switch resets
``nr_requests``), and read every value back.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field

from iolab.bench import sysfs
from iolab.cli.errors import UserError

DEFAULT = "default"
_ITEM = re.compile(r"^([A-Za-z0-9_-]+)\.([A-Za-z0-9_]+)=(.+)$")
_NAME = re.compile(r"^[A-Za-z0-9_]+$")
# What the kernel's sysfs files of the elevators and of QUEUE_ATTRS take: a
# whole number (their store functions parse with kstrtoint/kstrtoul), or
# `default`. Checked here, before any device is touched (a NaN passed every
# check and was refused only after the loop device was made: issue 27).
_VALUE = re.compile(r"^-?[0-9]{1,20}$")


def check_value(where: str, value: str) -> str:
    if value != DEFAULT and not _VALUE.match(value):
        raise UserError(f"{where}: {value!r} is not a whole number (sysfs tunables take one) or 'default'")
    return value


@dataclass(frozen=True)
class Config:
    """A scheduler, its tunables, and queue settings (``name -> value``, sorted).

    ``name`` is an optional short label (``--config bfq-tuned=bfq:...``); it
    plays no part in telling configurations apart.
    """

    scheduler: str
    tunables: tuple[tuple[str, str], ...] = ()
    queue: tuple[tuple[str, str], ...] = ()
    name: str = field(default="", compare=False)

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        words = [self.scheduler]
        words += [f"{k}={v}" for k, v in self.tunables]
        words += [f"{k}={v}" for k, v in self.queue]
        return " ".join(words)

    @classmethod
    def make(cls, scheduler: str, tunables: dict[str, str], queue: dict[str, str],
             name: str = "") -> "Config":
        def keep(d: dict[str, str]) -> tuple[tuple[str, str], ...]:
            return tuple(sorted((k, v) for k, v in d.items() if v != DEFAULT))

        return cls(scheduler, keep(tunables), keep(queue), name)


def parse_grid(items: list[str]) -> dict[str, dict[str, list[str]]]:
    """``["bfq.slice_idle=0,8", "queue.nr_requests=64"]`` -> ``{scope: {name: values}}``."""
    grid: dict[str, dict[str, list[str]]] = {}
    for item in items:
        m = _ITEM.match(item.strip())
        if not m:
            raise UserError(
                f"cannot read --tunables {item!r}: write SCHEDULER.NAME=V1,V2 "
                f"(e.g. bfq.slice_idle=0,8) or queue.NAME=V1,V2"
            )
        scope, name, values = m.group(1), m.group(2), m.group(3)
        if scope == "queue" and name not in sysfs.QUEUE_ATTRS:
            raise UserError(f"--tunables queue.{name}: iolab changes only {', '.join(sysfs.QUEUE_ATTRS)}")
        vals = [check_value(f"--tunables {scope}.{name}", v.strip()) for v in values.split(",") if v.strip()]
        if name in grid.get(scope, {}):
            raise UserError(f"--tunables names {scope}.{name} twice")
        grid.setdefault(scope, {})[name] = vals
    return grid


def parse_config(spec: str) -> Config:
    """``[LABEL=]SCHED[:NAME=V,...]`` -> a :class:`Config`.

    ``mq-deadline``, ``bfq:slice_idle=20,timeout_sync=160``,
    ``bfq-tuned=bfq:slice_idle=20`` (shown as ``bfq-tuned`` in the report).
    """
    head, _, rest = spec.partition(":")
    label, eq, scheduler = head.partition("=")
    if not eq:
        label, scheduler = "", head
    scheduler, label = scheduler.strip(), label.strip()
    if not scheduler or (eq and not label):
        raise UserError(f"cannot read --config {spec!r}: write [LABEL=]SCHEDULER[:NAME=VALUE,...]")
    tunables: dict[str, str] = {}
    queue: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        name, eq, value = part.partition("=")
        name = name.strip()
        if not eq or not value.strip():
            raise UserError(f"cannot read --config {spec!r}: {part!r} is not NAME=VALUE")
        target = tunables
        if name.startswith("queue."):
            name = name[len("queue."):]
            if name not in sysfs.QUEUE_ATTRS:
                raise UserError(f"--config queue.{name}: iolab changes only {', '.join(sysfs.QUEUE_ATTRS)}")
            target = queue
        if not _NAME.match(name):
            raise UserError(f"cannot read --config {spec!r}: bad tunable name {name!r}")
        target[name] = check_value(f"--config {spec!r}: {name}", value.strip())
    return Config.make(scheduler, tunables, queue, label)


def least_count(grid: dict[str, dict[str, list[str]]], explicit: list[Config]) -> int:
    """The fewest configurations `grid` and `explicit` can make on any device
    (every scheduler the grid names is compared): known before the device is."""
    per_queue = math.prod(len(v) for v in grid.get("queue", {}).values())
    scoped = sum(math.prod(len(v) for v in g.values()) for s, g in grid.items() if s != "queue")
    return scoped * per_queue + len(explicit)


def build(schedulers: list[str], grid: dict[str, dict[str, list[str]]],
          explicit: list[Config], offered: list[str]) -> list[Config]:
    """The configurations to compare, in a stable order, without duplicates."""
    for scope in grid:
        if scope != "queue" and scope not in schedulers:
            raise UserError(
                f"--tunables {scope}.*: {scope} is not among the schedulers compared "
                f"({', '.join(schedulers) or 'none'})"
            )
    for name in schedulers + [c.scheduler for c in explicit]:
        if name not in offered:
            raise UserError(f"the device does not offer scheduler {name!r} (it offers: {' '.join(offered)})")
    queue_grid = grid.get("queue", {})
    out: list[Config] = []
    for name in schedulers:
        sched_grid = grid.get(name, {})
        for values in itertools.product(*sched_grid.values()):
            tunables = dict(zip(sched_grid, values))
            for qvalues in itertools.product(*queue_grid.values()):
                out.append(Config.make(name, tunables, dict(zip(queue_grid, qvalues))))
    out += explicit
    unique = list(dict.fromkeys(out))
    if not unique:
        raise UserError("nothing to compare: give --schedulers or --config")
    labels = [c.label for c in unique]
    twice = sorted({x for x in labels if labels.count(x) > 1})
    if twice:
        raise UserError(f"two configurations are labelled {twice[0]!r}; give them different labels")
    return unique


def apply(dev: sysfs.BlockDevice, config: Config, offered: list[str],
          reset: dict[str, str] | None = None) -> dict[str, str]:
    """Puts ``config`` in place on ``dev`` and returns the settings as read back.

    ``reset`` holds queue settings that other configurations change and this
    one does not, with their original values: they are written back first,
    so nothing carries over from the configuration that ran before.
    Raises :class:`~iolab.bench.sysfs.SysfsError` naming the tunable when the
    kernel refuses a value.
    """
    own = {name for name, _ in config.queue}
    for name, value in (reset or {}).items():
        if name not in own and sysfs.read_attr(dev, name) != value:
            sysfs.set_queue_attr(dev, name, value)
    _, active = sysfs.schedulers(dev)
    if active == config.scheduler:
        # Writing the active name is a no-op in the kernel; go through another
        # scheduler so the target starts again from its defaults.
        other = next(s for s in ["none"] + offered if s != config.scheduler and s in offered)
        sysfs.set_scheduler(dev, other)
    sysfs.set_scheduler(dev, config.scheduler)
    for name, value in config.tunables:
        sysfs.set_tunable(dev, name, value)
    for name, value in config.queue:
        sysfs.set_queue_attr(dev, name, value)
    return sysfs.settings(dev)
