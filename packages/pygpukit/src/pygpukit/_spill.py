"""Spilling live arrays to host memory under memory pressure, and bringing them back on use.

Blocks of a spill-enabled partition (``gp.create_partition(..., spill=True)``, the default
for BestEffort) are *tracked* (``CachedBlock.tracked``): every use by an operation stamps
``last_use`` from one process-wide counter (in C on the fast path, in :func:`use` on the
Python path).  When a charge of such a partition does not fit even after the caches were
given back, the allocator calls the partition layer's spiller, which asks the Rust scheduler
(``pygpukit_sched.spill_order``) which blocks go first -- lowest tier, least recently used --
and calls :func:`spill_blocks` here to move the bytes:

- **spill**: the whole block is copied to pinned host memory on the stream that last wrote it
  (after its pending work); the device memory goes back to the allocator's cache as if the
  arrays had released it (``CachedBlock.spill_out``), from where the failed charge reclaims
  it.  Work of other streams that used the block is waited for first.  The block keeps the
  host copy (a :class:`SpillRecord`) as its payload and has address 0.
- **restore**: when an operation, a transfer, a DLPack/CUDA Array Interface export or a JIT
  launch uses a spilled block, a new block is allocated (charged to the same partition,
  spilling others if needed) and the bytes are copied back on the using stream, which first
  waits for the spill copy (``CachedBlock.adopt``).  Views share the block, so they all come
  back at once, with their data intact.

Nothing spills while it is *pinned* (``CachedBlock.pins``: exported through DLPack while the
capsule lives, through ``__cuda_array_interface__`` for good, captured in a graph while it
lives, bound in a ``BoundLaunch``) or *held*: the operands of each thread's last two uses
(:func:`use`, :func:`ensure`), whose addresses an operation in progress may already have
read.  The C fast path, which reads addresses before it allocates its result, checks them
again after the allocation and leaves the operation to the Python path when an operand moved.

The CPU simulation does the same with host buffers: a spilled block's simulated device memory
is freed and its bytes live in the record until the block is used again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pygpukit._array import GPUArray
    from pygpukit._stream import Stream

logger = logging.getLogger("pygpukit.spill")

#: True once a spill-enabled partition exists in the process (never reset): the Python hot
#: paths test it before they look at blocks.
active = False

#: Pinned host memory kept for reuse per device (bytes).
HOST_POOL_LIMIT = 512 << 20

_lock = threading.RLock()  # spills and restores; reentrant: a restore's allocation may spill
_held: dict[int, list[list[int]]] = {}  # thread ident -> ids of its last two uses' blocks
_log: deque[dict[str, Any]] = deque(maxlen=1024)
_retired: deque[tuple[Any, Any, Any]] = deque()  # (pool, host buffer, event of its last copy)


class SpillStats:
    """Spill counters of one partition (see ``Partition.memory_stats``)."""

    __slots__ = ("num_restores", "num_spills", "peak_spilled_bytes", "restore_ns",
                 "restored_bytes", "spill_ns", "spilled_bytes", "spilled_bytes_total")

    def __init__(self) -> None:
        self.spilled_bytes = 0
        self.peak_spilled_bytes = 0
        self.spilled_bytes_total = 0
        self.restored_bytes = 0
        self.num_spills = 0
        self.num_restores = 0
        self.spill_ns = 0
        self.restore_ns = 0

    def as_dict(self) -> dict[str, int]:
        """The counters by their ``memory_stats()`` names."""
        return {
            "spilled_bytes": self.spilled_bytes,
            "peak_spilled_bytes": self.peak_spilled_bytes,
            "spilled_bytes_total": self.spilled_bytes_total,
            "restored_bytes": self.restored_bytes,
            "num_spills": self.num_spills,
            "num_restores": self.num_restores,
            "spill_time_ns": self.spill_ns,
            "restore_time_ns": self.restore_ns,
        }


class _HostPool:
    """Host buffers of one device for spilled blocks, kept by size for reuse."""

    def __init__(self, runtime: Any) -> None:
        self._runtime = runtime
        self._free: dict[int, list[Any]] = {}
        self._bytes = 0

    def get(self, nbytes: int) -> Any:
        free = self._free.get(nbytes)
        if free:
            self._bytes -= nbytes
            return free.pop()
        return self._runtime.host_buffer(nbytes)

    def put(self, host: Any, nbytes: int) -> None:
        if self._bytes + nbytes <= HOST_POOL_LIMIT:
            self._free.setdefault(nbytes, []).append(host)
            self._bytes += nbytes


def _pool(runtime: Any) -> _HostPool:
    pool: _HostPool | None = getattr(runtime, "_pygpukit_spill_pool", None)
    if pool is None:
        pool = _HostPool(runtime)
        runtime._pygpukit_spill_pool = pool
    return pool


def _drain_retired() -> None:
    """Return host buffers whose last copy has completed to their pools (``_lock`` held)."""
    for _ in range(len(_retired)):
        pool, host, event = _retired.popleft()
        if event is None or event.query():
            pool.put(host, len(host))
        else:
            _retired.append((pool, host, event))


class SpillRecord:
    """The host copy of a spilled block: its payload while it is spilled.

    Attributes: ``host`` (the buffer), ``event`` (recorded after the copy into it),
    ``runtime``, ``owner`` (the partition charged for the block), ``size`` and ``stats``.
    """

    __slots__ = ("event", "host", "owner", "runtime", "size", "stats")

    def __init__(self, host: Any, event: Any, runtime: Any, owner: Any, size: int,
                 stats: SpillStats) -> None:
        self.host: Any = host
        self.event = event
        self.runtime = runtime
        self.owner = owner
        self.size = size
        self.stats: SpillStats | None = stats

    def release(self, event: Any) -> None:
        """The host copy is no longer the block's data: its buffer goes back after ``event``."""
        stats = self.stats
        if stats is not None:
            stats.spilled_bytes -= self.size
            self.stats = None
        if self.host is not None:
            _retired.append((_pool(self.runtime), self.host, event))  # deque: thread-safe
            self.host = None

    def __del__(self) -> None:  # the block died while spilled
        self.release(self.event)


def _note(kind: str, owner: Any, nbytes: int, why: str, seconds: float) -> None:
    name = getattr(owner, "name", None)
    _log.append({"time": time.time(), "event": kind, "partition": name, "bytes": nbytes,
                 "seconds": seconds, "reason": why})
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s %d bytes of partition %r in %.3f ms: %s", kind, nbytes, name,
                     seconds * 1e3, why)


def spill_log() -> list[dict[str, Any]]:
    """The latest spills and restores (up to 1024), oldest first.

    Each entry: ``time`` (Unix seconds), ``event`` (``"spill"`` or ``"restore"``),
    ``partition`` (its name), ``bytes``, ``seconds`` (host time of the call) and ``reason``
    (for a spill: who needed how many bytes and what was full; for a restore: what used it).
    The same lines go to the ``pygpukit.spill`` logger at DEBUG level.
    """
    with _lock:
        return list(_log)


def held_ids() -> set[int]:
    """Ids of the blocks that the threads used last (never spilled)."""
    out: set[int] = set()
    for uses in list(_held.values()):
        for ids in uses:
            out.update(ids)
    return out


def lock() -> threading.RLock:
    """The lock that orders spills and restores."""
    return _lock


def spill_blocks(runtime: Any, victims: list[tuple[Any, Any, SpillStats]], why: str) -> int:
    """Spill each ``(block, owner, stats)`` of ``victims``; return the device bytes released.

    Blocks already spilled, pinned or held are skipped.  Call with :func:`lock` held.
    """
    released = 0
    with _lock:
        _drain_retired()
        held = held_ids()
        for block, owner, stats in victims:
            if not block.address or block.pins or id(block) in held:
                continue
            t0 = time.perf_counter()
            size = int(block.size)
            pool = _pool(runtime)
            host = pool.get(size)
            writer = block.writer
            try:
                runtime.spill_copy(block, host, writer)  # after the writer's pending work
                event = runtime.new_event(False)
                event.record(writer._impl)
                # The memory returns to the cache of the block's own stream: reuse there is
                # ordered after the copy when the writer is that stream; otherwise, and for
                # other streams that used the block, wait for them now.
                if writer is not block.stream:
                    event.synchronize()
                for other in block.used_streams or ():
                    if other is not writer:  # a Stream's own wait (no capture check) or a
                        getattr(other, "_impl", other).synchronize()  # foreign one's
            except BaseException:
                pool.put(host, size)
                raise
            block.used_streams = None
            block.spill_out(SpillRecord(host, event, runtime, owner, size, stats))
            seconds = time.perf_counter() - t0
            stats.spilled_bytes += size
            stats.peak_spilled_bytes = max(stats.peak_spilled_bytes, stats.spilled_bytes)
            stats.spilled_bytes_total += size
            stats.num_spills += 1
            stats.spill_ns += int(seconds * 1e9)
            _note("spill", owner, size, why, seconds)
            released += size
    return released


def restore(block: Any, stream: Stream, why: str) -> None:
    """Bring a spilled block back to the device for work on ``stream`` (no-op if it is there).

    The copy runs on ``stream`` after the spill's copy; during a graph capture on ``stream``
    it runs on the block's own stream instead and is waited for (a capture must not record
    it).  Raises the allocator's errors (``PartitionMemoryError``) if no memory can be found.
    """
    with _lock:
        if block.address:
            return
        record: SpillRecord = block.payload
        runtime = record.runtime
        t0 = time.perf_counter()
        new = runtime.allocator.malloc_for(record.size, block.stream, record.owner)
        capturing = stream._pool is not None
        target = block.stream if capturing else stream
        runtime.stream_wait_event(target._impl, record.event)  # the spill's copy is done
        if target is not block.stream:
            target.wait_event(block.stream.record())  # the new memory's earlier work is done
        runtime.restore_copy(new, record.host, target)
        done = runtime.new_event(False)
        done.record(target._impl)
        if capturing:
            done.synchronize()
        stats = record.stats
        owner = record.owner
        record.release(done)
        block.adopt(new)  # drops the record
        block.writer = target
        if target is not block.stream:
            block.record_stream(target)
        block.touch()
        seconds = time.perf_counter() - t0
        if stats is not None:
            stats.num_restores += 1
            stats.restored_bytes += record.size
            stats.restore_ns += int(seconds * 1e9)
        _note("restore", owner, record.size, why, seconds)


def use(stream: Stream, arrays: tuple[GPUArray, ...], written: GPUArray | None,
        kept: bool = True) -> None:
    """An operation on ``stream`` uses ``arrays`` (and writes ``written``): stamp, hold, restore.

    Called by ``pygpukit._transfer.touch`` while :data:`active`.  Blocks of other partitions
    are not looked at beyond their ``tracked`` flag.  During a graph capture the tracked
    blocks the graph keeps (``touch`` appends them to ``stream._keep``) are pinned while it
    lives (``Graph`` unpins them); ``kept=False`` for a call that is not touch's.
    """
    blocks = [a._block for a in arrays if a._block.tracked]
    if written is not None and written._block.tracked:
        blocks.append(written._block)
    if not blocks:
        return
    _hold([id(b) for b in blocks])
    keep = stream._keep if kept else None
    for block in blocks:
        block.touch()
        if not block.address:
            restore(block, stream, "used by an operation")
        if keep is not None and block.stream is not stream:
            block.pins += 1  # kept by the graph being captured: see unpin_kept


def _hold(ids: list[int]) -> None:
    """The calling thread's latest use is of these blocks: they and the previous use's are held.

    An operation reads its operands' addresses after its ``touch`` and may allocate (a
    workspace, a temporary noted by a second ``touch``) before it launches.
    """
    tid = threading.get_ident()
    previous = _held.get(tid)
    _held[tid] = [ids, previous[0] if previous else []]


def unpin_kept(kept: list[Any]) -> None:
    """A graph released the blocks it kept: undo the pins :func:`use` gave them."""
    with _lock:
        for block in kept:
            if block.tracked and block.pins:
                block.pins -= 1


def ensure(array: GPUArray, why: str) -> None:
    """Bring ``array`` back to the device if it is spilled (and stamp its use)."""
    block = array._block
    if block.tracked:
        from pygpukit._stream import stream_for_runtime

        block.touch()
        _hold([id(block)])
        if not block.address:
            restore(block, stream_for_runtime(array._rt), why)


def pin(array: GPUArray, why: str) -> None:
    """Keep ``array`` on the device (restored first) until :func:`unpin`."""
    block = array._block
    if block.tracked:
        with _lock:
            ensure(array, why)
            block.pins += 1


#: Pins of an array exported through ``__cuda_array_interface__`` (never undone).
FOREVER = 1 << 30


def pin_for_good(array: GPUArray, why: str) -> None:
    """Keep ``array`` on the device for the rest of its life (restored first)."""
    block = array._block
    if block.tracked:
        with _lock:
            ensure(array, why)
            if block.pins < FOREVER:
                block.pins += FOREVER


def unpin(array: GPUArray) -> None:
    """Undo one :func:`pin`."""
    block = array._block
    if block.tracked:
        with _lock:
            if block.pins:
                block.pins -= 1
