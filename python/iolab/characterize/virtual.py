"""A device on a virtual clock: the disk model `iolab emu` charges requests
with (``_iolab.EmuModel``), read with no host in the way.

Each read arrives ``send_ns`` after the host sends it, is charged by the
model at that instant (the drive is free then: one read at a time), and
its reply reaches the host ``reply_ns`` after the model completes it; the
host's waits (a pair's delay, an idle wait) advance the clock and cost no
real time. Nothing is late and nothing varies, so the extraction's logic
can be checked on it exactly and quickly (tests, and what a step would
measure on a drive before it is run on one), apart from the host's noise,
which only a real device or `iolab emu` has.
"""

from __future__ import annotations

import random

from iolab.characterize.device import SECTOR, Device


class VirtualDevice(Device):
    """``model``: an ``EmuModel``; ``send_ns``/``reply_ns``: the host's two
    halves of a round trip. ``late``: (probability, ns, seed): a request
    the host sends up to that much late, or a reply it sees that late, now
    and then, as a loaded host does (the drive is not slowed)."""

    def __init__(self, model, name: str, send_ns: int = 50_000, reply_ns: int = 50_000,
                 late: tuple[float, int, int] | None = None) -> None:
        super().__init__(name=name, sectors=model.capacity_bytes // SECTOR, rotational=True, kind="virtual")
        self._model = model
        self._now = 0
        self.send_ns = send_ns
        self.reply_ns = reply_ns
        self._late = late
        self._rng = random.Random(late[2]) if late else None

    def now_ns(self) -> int:
        return self._now

    def advance_to(self, t_ns: int) -> None:
        self._now = max(self._now, t_ns)

    def read(self, lbn: int, count: int = 1) -> int:
        self._count(lbn, count)
        arrive = self._now + self.send_ns
        if self._late and self._rng is not None and self._rng.random() < self._late[0]:
            arrive += self._rng.randrange(self._late[1])  # the host sent it late
        service = self._model.charge("read", lbn * SECTOR, count * SECTOR, False, arrive)[0]
        self._now = arrive + service + self.reply_ns
        if self._late and self._rng is not None and self._rng.random() < self._late[0]:
            self._now += self._rng.randrange(self._late[1])
        return self._now

    def host_round_trip_ns(self) -> float | None:
        return float(self.send_ns + self.reply_ns)

    def parallel_reads(self, offsets: list[int], count: int, depth: int) -> list[int]:
        # One read at a time, as the model serves them: depth does not
        # change what each waits for beyond the queue before it.
        lat = []
        for lbn in offsets:
            t0 = self._now
            lat.append(self.read(lbn, count) - t0)
        return lat

    def close(self) -> None:
        pass
