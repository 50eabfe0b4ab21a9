"""When an out-of-range device index raises: at the call (default) or at the next synchronization.

Indices that live on the device are checked by the indexing kernels themselves: each checked
operation gets an 8-byte error slot that its kernel lowers to the position of the first
out-of-range index.  Reading that slot on the host is what makes ``a[idx]`` wait for its kernel.

* ``"immediate"`` (default, NumPy's behaviour): the slot is read before the call returns and
  :class:`IndexError` is raised by the call itself.  One device-to-host wait per operation.
  Writes (``a[idx] = v``, ``put``, ``add_at``) check their indices alone first, as NumPy does:
  when one is out of range nothing is written (one more read of the indices).
* ``"deferred"``: the call returns as soon as its kernel is enqueued (what torch's device-side
  asserts do, but recoverable): the slot is read at the next synchronization of the stream that
  ran it (``Stream.synchronize()``, an ``Event.synchronize()`` recorded after it,
  ``gp.synchronize()`` / ``Device.synchronize()``, or a host read such as ``to_numpy()`` /
  ``item()`` on that stream),
  and that synchronization raises the IndexError of the earliest failed operation.  Until then
  the failed operation's out-of-range elements were skipped (a gather gave 0 there; a scatter
  wrote the in-range ones).  At most :data:`RING` checked operations are in flight per stream;
  the next one synchronizes first (and raises there if one of them failed).

Each stream keeps a ring of :data:`RING` slots, set to "no error" (all ones) together; a deferred
operation takes the next slot and passes ``PGK_ERROR_SLOT_PRESET`` so its launch adds no memset.
The pending operations keep their index arrays alive (to name the offending value), up to
:data:`HELD_BYTES` bytes per stream.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from pygpukit._array import GPUArray
    from pygpukit._backend import Runtime
    from pygpukit._indexplan import IndexPlan
    from pygpukit._stream import Stream

IndexCheck = Literal["immediate", "deferred"]
_MODES: tuple[IndexCheck, ...] = ("immediate", "deferred")
#: Checked operations in flight per stream before one waits.
RING = 64
#: Bytes of index arrays pending operations may keep alive per stream before one waits.
HELD_BYTES = 1 << 30

_mode: IndexCheck = "immediate"
_lock = threading.Lock()
#: Streams with pending deferred checks, per runtime (id): what a device synchronize checks.
_pending_streams: dict[int, weakref.WeakSet[Stream]] = {}
#: A private stream per runtime (id) that reads the slots after the synchronization that made
#: them final, so an Event.synchronize() does not wait for later work of the event's stream.
_readers: dict[int, Stream] = {}


def set_index_check(mode: str) -> IndexCheck:
    """Choose when an out-of-range index held on the device raises, for the whole process.

    Parameters
    ----------
    mode
        ``"immediate"`` (default): ``a[idx]``, ``a[idx] = v``, ``take``, ``put`` and ``add_at``
        with device indices wait for their kernel and raise :class:`IndexError` at the call, as
        NumPy does.  ``"deferred"``: they return at once; an out-of-range index raises
        IndexError at the next synchronization of the stream that ran the operation
        (``Stream.synchronize()``, ``Event.synchronize()``, ``gp.synchronize()`` or a host read
        such as ``to_numpy()``), as CUDA reports kernel errors — but the runtime stays usable.

    Returns
    -------
    str
        The previous mode.

    Raises
    ------
    ValueError
        For another mode.

    Notes
    -----
    Indices given as NumPy arrays or lists are always checked on the host, before the launch.
    In ``"immediate"`` mode an assignment, ``put`` or ``add_at`` with an out-of-range index
    writes nothing (its indices are checked before the write, at the cost of one more read of
    them).  In ``"deferred"`` mode a failed gather has already returned its array (0 where the
    index was out of range) and a failed assignment has written its in-range elements.
    """
    global _mode
    if mode not in _MODES:
        raise ValueError(f"set_index_check: mode must be 'immediate' or 'deferred'; got {mode!r}")
    previous, _mode = _mode, mode
    return previous


def get_index_check() -> IndexCheck:
    """Return when an out-of-range device index raises (``"immediate"`` or ``"deferred"``)."""
    return _mode


@contextlib.contextmanager
def index_check(mode: str) -> Iterator[None]:
    """``with gp.index_check("deferred"):`` — :func:`set_index_check` for a block, restored after.

    Leaving the block does not synchronize: operations it enqueued stay pending until the next
    synchronization of their stream.
    """
    previous = set_index_check(mode)
    try:
        yield
    finally:
        set_index_check(previous)


def deferred() -> bool:
    """Whether checked operations defer their IndexError (the hot path's one test)."""
    return _mode == "deferred"


class _Pending:
    __slots__ = ("axes", "count", "indices", "op", "seq", "sizes")

    def __init__(self, seq: int, plan: IndexPlan, op: str) -> None:
        self.seq = seq
        self.indices = plan.indices
        self.axes = plan.axes
        self.sizes = plan.sizes
        self.count = plan.count
        self.op = op


class StreamChecks:
    """A stream's ring of error slots and its pending deferred operations (oldest first).

    ``lock`` is held from taking a slot until its kernel is enqueued, and while slots are read:
    a thread that synchronizes the stream never reads (and forgets) the slot of an operation
    another thread has registered but not launched yet.
    """

    __slots__ = ("held", "lock", "next_seq", "pending", "ring")

    def __init__(self, ring: GPUArray) -> None:
        self.ring = ring
        self.pending: list[_Pending] = []
        self.next_seq = 0
        self.held: dict[int, int] = {}  # id(block) of held index arrays -> bytes
        self.lock = threading.RLock()


def stream_checks(stream: Stream, make_ring: Callable[[], GPUArray]) -> StreamChecks:
    """``stream``'s ring of slots, made by ``make_ring`` (all "no error") on first need."""
    checks: StreamChecks | None = stream._index_checks
    if checks is None:
        with _lock:
            if stream._index_checks is None:
                stream._index_checks = StreamChecks(make_ring())
            checks = stream._index_checks
    assert checks is not None
    return checks


def mark(stream: Stream) -> int | None:
    """The sequence number an event recorded now on ``stream`` covers (None: nothing pending)."""
    checks: StreamChecks | None = stream._index_checks
    if checks is None:
        return None
    with checks.lock:
        return checks.next_seq if checks.pending else None


def take_slot(checks: StreamChecks, runtime: Runtime, stream: Stream, plan: IndexPlan,
              op: str) -> int:
    """The ring position of the error slot of a deferred checked operation on ``stream``.

    Waits first (:meth:`Stream.synchronize`, which raises a pending IndexError) when
    :data:`RING` operations are in flight or their index arrays exceed :data:`HELD_BYTES`.
    The caller holds ``checks.lock`` until the operation's kernel is enqueued.
    """
    if len(checks.pending) >= RING or sum(checks.held.values()) > HELD_BYTES:
        stream.synchronize()  # checks (and empties) the ring
    entry = _Pending(checks.next_seq, plan, op)
    checks.next_seq += 1
    for index in plan.indices:
        checks.held.setdefault(id(index._block), index.nbytes)
    checks.pending.append(entry)
    if len(checks.pending) == 1:  # the stream's first pending check: a device sync must see it
        with _lock:
            _pending_streams.setdefault(id(runtime), weakref.WeakSet()).add(stream)
    return entry.seq % RING


def bounds_message(value: int, axis: int, size: int) -> str:
    """NumPy's IndexError message for an out-of-range index."""
    return f"index {value} is out of bounds for axis {axis} with size {size}"


def _reader(runtime: Runtime) -> Stream:
    reader = _readers.get(id(runtime))
    if reader is None:
        from pygpukit._stream import Stream

        reader = Stream._wrap(runtime, runtime.new_stream(0, True), 0)
        _readers[id(runtime)] = reader
    return reader


def check(runtime: Runtime, stream: Stream, upto: int | None = None) -> None:
    """Raise the IndexError of the earliest failed deferred operation of ``stream``.

    The caller has synchronized the operations to check: all pending ones of ``stream``
    (``upto`` None) or those with a sequence number below ``upto`` (an event's mark).  Their
    slots are read, reset to "no error" in ``stream``'s order, and forgotten, failed or not.
    """
    checks: StreamChecks | None = stream._index_checks
    if checks is None:
        return
    with checks.lock:
        _check_locked(runtime, stream, checks, upto)


def _check_locked(runtime: Runtime, stream: Stream, checks: StreamChecks,
                  upto: int | None) -> None:
    if not checks.pending:
        return
    done = [e for e in checks.pending if upto is None or e.seq < upto]
    if not done:
        return
    checks.pending = checks.pending[len(done):]
    if not checks.pending:
        checks.held.clear()
        with _lock:
            streams = _pending_streams.get(id(runtime))
            if streams is not None:
                streams.discard(stream)
    else:
        live = {id(i._block): i.nbytes for e in checks.pending for i in e.indices}
        checks.held = live
    host = np.empty(RING, np.int64)
    reader = _reader(runtime)
    runtime.download(checks.ring, host.view(np.uint8).data, reader)
    # Reset the slots just read, before any later operation of the stream can take them again.
    first, last = done[0].seq % RING, done[-1].seq % RING
    if len(done) == RING or not checks.pending:
        runtime.fill(checks.ring, -1, stream)
    elif first <= last:
        runtime.fill(checks.ring[first:last + 1], -1, stream)
    else:
        runtime.fill(checks.ring[first:], -1, stream)
        runtime.fill(checks.ring[:last + 1], -1, stream)
    for entry in done:
        code = int(host[entry.seq % RING])
        if code >= 0:
            k, m = divmod(code, entry.count)
            one = np.empty(1, np.int64)
            flat = entry.indices[k].reshape(-1)  # int64, C-contiguous (as the kernels read it)
            runtime.download(flat[m:m + 1], one.view(np.uint8).data, reader)
            message = bounds_message(int(one[0]), entry.axes[k], entry.sizes[k])
            raise IndexError(f"{message} (raised by "
                             f"the deferred index check of an earlier {entry.op}; see "
                             "gp.set_index_check)")


def check_runtime(runtime: Runtime) -> None:
    """After a device-wide synchronize: check every stream of ``runtime`` with pending work."""
    with _lock:
        streams = list(_pending_streams.get(id(runtime), ()))
    for stream in streams:
        check(runtime, stream)
