"""FastQueue: a durable disk message queue (native core in ``iolab._iolab``).

A queue is a directory of preallocated segment files. :meth:`FastQueue.enqueue`
returns once the message is on disk (written and ``fdatasync``'ed, gathered
with the messages of other threads into one write and one sync): from then
on the message is *acknowledged* and will be delivered at least once, even
after a crash. Consumers take messages with :meth:`FastQueue.dequeue` or
:meth:`FastQueue.dequeue_batch` and then :meth:`FastQueue.ack` them (deleted)
or :meth:`FastQueue.nack` them (retried later, then dead-lettered). A message
delivered but not acknowledged is delivered again after a restart, or after
its visibility timeout if one is set.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as d, FastQueue(d) as q:
...     mid = q.enqueue(b"hello")
...     m = q.dequeue()
...     q.ack(m.id)
...     (m.id == mid, m.payload)
(True, b'hello')

See ``docs/fastqueue.md`` for the guarantees and ``docs/fastqueue-format.md``
for the file format.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import TracebackType
from typing import Iterable, Iterator, Literal, Optional, Union

from iolab import _iolab

QueueError = _iolab.QueueError
QueueLockedError = _iolab.QueueLockedError
QueueCorruptError = _iolab.QueueCorruptError

__all__ = [
    "FastQueue",
    "FilePerMessageQueue",
    "Message",
    "MessageBatch",
    "MessageInfo",
    "QueueError",
    "QueueLockedError",
    "QueueCorruptError",
    "check",
    "repair",
]

PathLike = Union[str, "os.PathLike[str]"]
Kind = Literal["main", "retry", "dead"]


@dataclass(frozen=True)
class Message:
    """A delivered message."""

    id: int
    """Id given by :meth:`FastQueue.enqueue`; kept across retries."""
    payload: bytes
    """The bytes enqueued."""
    attempts: int
    """Failed deliveries so far (:meth:`FastQueue.nack` calls)."""
    kind: Kind
    """The queue it came from: ``"main"``, ``"retry"`` or ``"dead"``."""
    enqueued_ns: int
    """Time of the first enqueue, ns since the Unix epoch."""


@dataclass(frozen=True)
class MessageInfo:
    """A message as :meth:`FastQueue.browse` lists it (nothing is taken)."""

    id: int
    size: int
    """Payload bytes."""
    attempts: int
    """Failed deliveries so far."""
    kind: Kind
    """The queue it is in: ``"main"``, ``"retry"`` or ``"dead"``."""
    state: Literal["ready", "delayed", "in-flight", "dead"]
    """``ready`` to deliver, ``delayed`` (a retry not yet due), ``in-flight``
    (taken, not acknowledged nor given back) or ``dead``."""
    enqueued_ns: int
    """Time of the first enqueue, ns since the Unix epoch."""
    not_before_ns: int
    """A retry's due time, ns since the Unix epoch (0 in the main queue)."""


@dataclass(frozen=True)
class BatchMessage:
    """A message of a :class:`MessageBatch`: its payload is a view of the
    batch's buffer, made when asked for (no copy)."""

    batch: MessageBatch
    index: int
    id: int
    attempts: int
    kind: Kind
    enqueued_ns: int

    @property
    def payload(self) -> memoryview:
        """The payload, a read-only view into the batch's buffer: valid until
        the next dequeue into the batch, which refuses to run while a view
        is alive (``BufferError``)."""
        return self.batch.payload(self.index)


class MessageBatch:
    """Messages read by :meth:`FastQueue.dequeue_batch_into` into buffers
    kept from one dequeue to the next: no allocation per message once they
    have grown to a batch's size (:meth:`FastQueue.dequeue_batch` makes a
    ``bytes`` object per payload). Payloads are views of :attr:`buffer`, so
    a refill while one is still viewed would change the bytes under it: the
    next dequeue into the batch raises ``BufferError`` instead, as a
    ``bytearray`` with live views refuses to be resized.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d, FastQueue(d) as q:
    ...     _ = q.enqueue_many([b"one", b"two"])
    ...     batch = MessageBatch()
    ...     n = q.dequeue_batch_into(batch, 100)
    ...     payloads = [bytes(m.payload) for m in batch]
    ...     q.ack_many(batch.ids())
    ...     (n, payloads)
    (2, [b'one', b'two'])
    """

    def __init__(self) -> None:
        self._native = _iolab.MessageBatch()
        self.buffer = bytearray()
        """The payloads, one after another."""
        self._spans: list[tuple[int, int, int, int, str, int]] = []

    def _check_unviewed(self) -> None:
        # A bytearray with live views (memoryviews, buffer exports) cannot be
        # resized: growing and shrinking it by one byte asks exactly that.
        try:
            self.buffer.append(0)
            del self.buffer[-1]
        except BufferError:
            raise BufferError(
                "a payload of this MessageBatch is still viewed (a memoryview of it is alive): "
                "release it before the next dequeue into the batch"
            ) from None

    def __len__(self) -> int:
        return len(self._spans)

    def __getitem__(self, i: int) -> BatchMessage:
        mid, _, _, attempts, kind, enqueued_ns = self._spans[i]
        return BatchMessage(self, i if i >= 0 else len(self._spans) + i, mid, attempts, kind, enqueued_ns)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[BatchMessage]:
        return (self[i] for i in range(len(self._spans)))

    def ids(self) -> list[int]:
        """The ids in delivery order (for :meth:`FastQueue.ack_many`)."""
        return [s[0] for s in self._spans]

    def payload(self, i: int) -> memoryview:
        """The ``i``-th payload, a read-only view of :attr:`buffer`."""
        _, start, length, *_ = self._spans[i]
        return memoryview(self.buffer).toreadonly()[start : start + length]


def _messages(raw: Iterable[tuple]) -> list[Message]:
    return [Message(*m) for m in raw]


_U64 = 2**64 - 1


def _count(name: str, value: int, limit: int = _U64) -> int:
    """``value`` if it is an integer from 0 to ``limit``; else a clear error
    naming the argument (instead of the native layer's OverflowError)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an integer, got {value!r}")
    if not 0 <= value <= limit:
        raise ValueError(f"{name}: {value} is out of range (0 to {limit})")
    return value


class FastQueue:
    """A durable disk message queue in directory ``path`` (created if absent).

    Only one process may open a queue, once (a lock file guards it:
    :class:`QueueLockedError`, whose message says whether this process or
    another holds it); many threads of that process may share it.

    Args:
        path: the queue directory.
        segment_size: bytes per preallocated segment file (multiple of 4096).
        batch_bytes: a write batch closes when it holds this many bytes.
        batch_delay: seconds a batch waits for more messages after its first
            (0: no deliberate wait; a batch holds what arrived during the
            previous sync).
        durability: ``"sync"`` (default): enqueue returns after
            ``fdatasync``; ``"os"``: after the write only, so a power loss
            may lose the last messages (a process crash does not).
        prefetch_bytes: size of the consumers' read-ahead buffer.
        max_attempts: a message that failed this many times (``nack`` calls
            and visibility timeouts) goes to the dead-letter queue.
        spare_segments: free segments kept ready in the background.
        visibility_timeout: seconds a dequeued message may stay neither
            acknowledged nor given back before it is delivered again (and
            the timeout counts as a failed attempt); ``None`` (default): no
            timeout, a delivered message stays in flight until ``ack``,
            ``nack`` or the next open.
    """

    def __init__(
        self,
        path: PathLike,
        *,
        segment_size: int = 64 << 20,
        batch_bytes: int = 8 << 20,
        batch_delay: float = 0.001,
        durability: Literal["sync", "os"] = "sync",
        prefetch_bytes: int = 1 << 20,
        max_attempts: int = 5,
        spare_segments: int = 1,
        visibility_timeout: Optional[float] = None,
    ) -> None:
        self.path = os.fspath(path)
        self._q = _iolab.FastQueue(
            self.path,
            _count("segment_size", segment_size),
            _count("batch_bytes", batch_bytes),
            batch_delay,
            durability,
            _count("prefetch_bytes", prefetch_bytes),
            _count("max_attempts", max_attempts, 2**32 - 1),
            _count("spare_segments", spare_segments),
            visibility_timeout,
        )

    def enqueue(self, payload: bytes) -> int:
        """Stores ``payload``; returns its id once it is durable."""
        return self._q.enqueue(payload)

    def enqueue_many(self, payloads: Iterable[bytes]) -> list[int]:
        """Stores several payloads with one wait; returns their ids once all
        are durable (none is stored if one is too large)."""
        return self._q.enqueue_many([bytes(p) for p in payloads])

    def browse(self) -> list[MessageInfo]:
        """Every live message, by id, without taking any: one snapshot taken
        at one instant while producers and consumers go on (an enqueue shows
        once it is durable; the states may have changed by the time it is
        read)."""
        return [MessageInfo(*m) for m in self._q.browse()]

    def delete(self, ids: Iterable[int]) -> None:
        """Deletes messages by id in any state (ready, delayed, in flight,
        dead); returns once that is durable. None is deleted if one id is
        unknown (``ValueError``); a consumer's later ``ack`` of one raises
        ``ValueError``."""
        self._q.delete([_count("id", i) for i in ids])

    def requeue_dead(self, ids: Optional[Iterable[int]] = None) -> list[int]:
        """Moves dead letters back for another try (to the retry queue, due
        now, attempts reset to 0, same id): those of ``ids``, or all
        (``None``). Returns the ids moved, once the move is durable."""
        chosen = None if ids is None else [_count("id", i) for i in ids]
        return self._q.requeue_dead(chosen)

    def __iter__(self) -> Iterator[Message]:
        """The messages ready now, each taken as :meth:`dequeue` takes it (in
        flight until acked or given back); stops when none is ready."""
        while True:
            batch = self.dequeue_batch(64)
            if not batch:
                return
            yield from batch

    def flush(self) -> None:
        """Closes the open batch now; with ``durability="os"`` also syncs."""
        self._q.flush()

    def dequeue(self, timeout: Optional[float] = None, visibility: Optional[float] = None) -> Optional[Message]:
        """Takes the next message (expired deliveries first, then due
        retries, then the main queue), or ``None``.

        With ``timeout`` (seconds), waits that long for one to arrive.
        ``visibility`` (seconds) overrides the queue's visibility timeout for
        this delivery (``0``: none).
        """
        got = self.dequeue_batch(1, timeout, visibility)
        return got[0] if got else None

    def dequeue_batch(
        self, n: int, timeout: Optional[float] = None, visibility: Optional[float] = None
    ) -> list[Message]:
        """Takes up to ``n`` messages, read with one large read where adjacent
        (``timeout`` and ``visibility`` as in :meth:`dequeue`)."""
        return _messages(self._q.dequeue_batch(_count("n", n), timeout, visibility))

    def dequeue_batch_into(
        self, batch: MessageBatch, n: int, timeout: Optional[float] = None, visibility: Optional[float] = None
    ) -> int:
        """Takes up to ``n`` messages into ``batch``, replacing what it held,
        and returns how many (``timeout`` and ``visibility`` as in
        :meth:`dequeue`; delivery, ``ack``/``nack`` and checks as in
        :meth:`dequeue_batch`). Raises ``BufferError``, taking nothing, while
        a payload of the batch is still viewed."""
        batch._check_unviewed()
        batch._spans = []
        batch._spans = self._q.dequeue_batch_into(batch._native, _count("n", n), batch.buffer, timeout, visibility)
        return len(batch._spans)

    def extend_visibility(self, id: int, seconds: float) -> None:
        """Gives an in-flight delivery ``seconds`` more from now before it is
        delivered again."""
        self._q.extend_visibility(_count("id", id), seconds)

    def dequeue_dead(self, n: int) -> list[Message]:
        """Takes up to ``n`` messages from the dead-letter queue."""
        return _messages(self._q.dequeue_dead(_count("n", n)))

    def ack(self, id: int) -> None:
        """Deletes a delivered message; returns when that is durable.

        ``ack`` and :meth:`nack` accept the same ids: a message handed out by
        a dequeue since the queue was opened and not yet acknowledged or
        given back (a late ``ack`` after its visibility timeout still
        counts). A message never dequeued, or an unknown id, raises
        ``ValueError`` and changes nothing."""
        self._q.ack_many([_count("id", id)])

    def ack_many(self, ids: Iterable[int]) -> None:
        """Deletes several messages with one wait (none if one is refused)."""
        self._q.ack_many([_count("id", i) for i in ids])

    def nack(self, id: int, delay: float = 0.0) -> Kind:
        """Gives a delivered message back: retried after ``delay`` seconds with
        its attempt count increased, or dead-lettered after ``max_attempts``.
        Returns the queue it went to (``"retry"`` or ``"dead"``). Accepts the
        same ids as :meth:`ack`."""
        return self._q.nack(_count("id", id), delay)

    def reserve_segments(self, count: int) -> None:
        """Creates free segments until ``count`` are ready (refused if they do
        not fit in the file system's free space)."""
        self._q.reserve_segments(_count("count", count))

    def stats(self) -> dict[str, object]:
        """Counters (ready, retry, dead, in_flight, segments, syncs...) and what
        the open found (``open_*``)."""
        return dict(self._q.stats())

    def __len__(self) -> int:
        return len(self._q)

    def close(self) -> None:
        """Writes what is pending, stops the threads, releases the lock."""
        self._q.close()

    def __enter__(self) -> "FastQueue":
        return self

    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()


class FilePerMessageQueue:
    """The traditional queue: one file per message in hashed directories,
    written to a temporary name, fsync'ed, renamed, directory fsync'ed;
    deleted on ack. The same calls as :class:`FastQueue` (fewer options)."""

    def __init__(self, path: PathLike) -> None:
        self.path = os.fspath(path)
        self._q = _iolab.FilePerMessageQueue(self.path)

    def enqueue(self, payload: bytes) -> int:
        """Stores ``payload`` durably; returns its id."""
        return self._q.enqueue(payload)

    def dequeue(self) -> Optional[Message]:
        """Takes the oldest message, or ``None``."""
        got = self.dequeue_batch(1)
        return got[0] if got else None

    def dequeue_batch(self, n: int) -> list[Message]:
        """Takes up to ``n`` messages (one file read each)."""
        return _messages(self._q.dequeue_batch(n))

    def ack(self, id: int) -> None:
        """Deletes a delivered message's file."""
        self._q.ack(id)

    def nack(self, id: int) -> None:
        """Gives a message back for another attempt."""
        self._q.nack(id)

    def __len__(self) -> int:
        return len(self._q)

    def close(self) -> None:
        """Releases the queue."""
        self._q.close()

    def __enter__(self) -> "FilePerMessageQueue":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check(path: PathLike) -> dict[str, object]:
    """Reads the queue in ``path`` and reports its state and every problem
    (each naming segment file and offset); changes nothing."""
    return dict(_iolab.fastqueue_check(os.fspath(path)))


def repair(path: PathLike) -> dict[str, object]:
    """Mends what :func:`check` reports, keeping every valid record; damaged
    bytes are saved to ``quarantine-*.bin`` files. Ask the user first."""
    return dict(_iolab.fastqueue_repair(os.fspath(path)))
