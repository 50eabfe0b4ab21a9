"""The caching allocator under every array, on either backend.

Blocks are rounded up to size classes (512 B to 1 MiB in powers of two, then multiples of
2 MiB) and cached per (stream, size class) when their arrays go: a block freed on stream S is
reused only by an allocation on S, which the stream orders after every kernel that used the
block.  A block that was also used on other streams is held back until an event recorded on
each of them has completed.  Nothing here synchronizes, except when memory goes back to the
driver (:meth:`~CachingAllocator.empty_cache`, a lower limit, partition reclaim and the
out-of-memory retry), which must wait for in-flight work first.

Locking.  ``_lock`` covers bookkeeping only: the cache and pending lists, the statistics, the
owners of charged blocks, the bytes reserved for allocations in flight and the calls into the
:class:`Charger`.  It is never held across a call that may block or take long -- the raw
allocator's ``alloc`` (``cuMemAlloc``) and ``free``, stream and event ``synchronize()`` -- so
that one thread waiting for the GPU or the driver does not stall every other thread's
allocations, which are a few hundred nanoseconds of bookkeeping.  (Recording and querying an
event only enqueue or poll, and stay under it.)  Memory goes back in two steps: under the lock
blocks are taken out of the cache into a local list and their charges returned; with the lock
released their streams are synchronized and they are freed; ``reserved_bytes`` drops when they
actually are.  A fresh allocation reserves its bytes under the lock (so the ``limit`` counts
allocations in flight), calls ``alloc`` without it, then takes the lock again to count the
block.  An allocation that needs memory given back first (limit reached, driver out of
memory, a partition's reclaim) frees those blocks -- and waits for other threads' frees in
progress -- before it allocates.

Frees arrive from ``__del__`` (any thread, possibly in the middle of an allocation on the same
thread, the lock held), so they only append to a queue; the queue is drained under the lock on
the next call.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pygpukit._errors import OutOfMemoryError, PartitionMemoryError
from pygpukit_driver import BlockCache, CachedBlock


def size_class(nbytes: int) -> int:
    """Round a request up to its size class (512 B ... 1 MiB in powers of two, then 2 MiB steps).

    The rule lives once, in the C ``BlockCache`` whose fast path allocates with it; the Rust
    scheduler's pool model (``pygpukit_sched.MemoryPool.size_class``) is checked against it by
    the tests.
    """
    return BlockCache.size_class(nbytes)


class StreamLike(Protocol):
    """What the allocator needs of a stream."""

    @property
    def handle(self) -> int:
        """The CUstream (0 for the CPU backend's stream)."""
        ...

    def synchronize(self) -> None:
        """Wait for the stream's work."""
        ...


class EventLike(Protocol):
    """What the allocator needs of an event."""

    def query(self) -> bool:
        """Whether the recorded work has completed."""
        ...

    def synchronize(self) -> None:
        """Wait for the recorded work."""
        ...


class RawAllocator(Protocol):
    """The backend's memory source: the driver on the GPU, NumPy on the CPU simulation."""

    def alloc(self, nbytes: int) -> tuple[int, Any]:
        """Return (address, payload) of ``nbytes`` new bytes; raise MemoryError when out."""
        ...

    def free(self, address: int, payload: Any) -> None:
        """Give a block back."""
        ...

    def record_event(self, stream: StreamLike) -> EventLike:
        """Record an event on ``stream`` (for blocks used on several streams)."""
        ...


class Charger(Protocol):
    """Who pays for a block: the hook through which partitions charge the caching allocator.

    Installed as :attr:`CachingAllocator.charger` by :mod:`pygpukit._partition` when the first
    partition of a device is created.  Every block taken from the driver while an owner is in
    scope is charged to it (its *footprint*: live blocks plus the cached blocks they left);
    a cached block changes hands (and charges) when another owner reuses it, and its charge
    is returned when it leaves the cache for the driver.  All calls are made with the
    allocator's lock held; ``charge`` may call ``reclaim(victim, nbytes)``, which takes cached
    blocks owned by ``victim`` (oldest first) out of the cache, returning their charges, until
    ``nbytes`` are released, and returns the bytes released.  They go back to the driver once
    the lock is released, before the allocation that needed them (and even if the charge
    fails in the end).
    """

    def owner(self) -> Any:
        """The owner to charge for an allocation made now (``None``: nobody)."""
        ...

    def charge(self, owner: Any, size: int, reclaim: Callable[[Any, int], int]) -> None:
        """Charge ``size`` bytes to ``owner`` or raise a MemoryError (changing nothing)."""
        ...

    def uncharge(self, owner: Any, size: int) -> None:
        """Return ``size`` bytes of ``owner``'s charge (the block went back to the driver)."""
        ...

    def allocated(self, owner: Any, size: int) -> None:
        """A charged block of ``size`` bytes became live (for per-owner statistics)."""
        ...

    def freed(self, owner: Any, size: int) -> None:
        """A live block of ``owner`` was freed into the cache (it stays charged)."""
        ...

    def can_charge(self, owner: Any) -> bool:
        """Whether ``owner`` can still be charged (a partition not deleted)."""
        ...

    def track(self, owner: Any, block: Block) -> None:
        """A block charged to ``owner`` was made (outside the lock): spill bookkeeping."""
        ...


#: Called by :meth:`CachingAllocator.malloc` without the lock when a partition's charge failed:
#: ``spiller(partition_name, size)`` spills live blocks (pygpukit._spill) and returns whether
#: it released any, in which case the allocation is tried again.
Spiller = Callable[[str, int], bool]

_SCOPE: Any = object()  # malloc's owner: whoever the charger says is in scope


#: One allocation, shared by an array and all its views (``pygpukit_driver.CachedBlock``):
#: ``address``, ``size`` (its size class), ``payload``, ``stream`` (allocated for), ``writer``
#: (the stream of the last write), ``used_streams`` and ``record_stream(stream)``.  When the
#: last reference goes, its C dealloc queues it on the allocator's :class:`BlockCache`, which
#: the allocator drains on its next call (no Python code runs on free).
Block = CachedBlock


@dataclass
class _Pending:
    """A block out of the hands of its arrays but not (yet) reusable or given back.

    Either waiting for ``events`` of other streams (in ``_pending``), or taken out of the cache
    to go back to the driver (``events`` empty unless it came from ``_pending``).
    """

    address: int
    payload: Any
    size: int
    stream: StreamLike
    events: list[EventLike]


class CachingAllocator:
    """Size-class caching allocator with per-stream reuse and PyTorch-style statistics.

    Thread-safe; ``_lock`` guards bookkeeping only (see the module's docstring).
    """

    def __init__(self, raw: RawAllocator, describe: Callable[[], str]) -> None:
        self._raw = raw
        self._describe = describe
        self._lock = threading.Lock()
        # Signalled (under _lock) when blocks given back by some thread have been freed.
        self._freed = threading.Condition(self._lock)
        # Free blocks per (stream, size class), blocks released by their arrays and the
        # statistics, in C: each of its calls is atomic (GIL), which lets its cache-hit path
        # (malloc_fast, also taken by pygpukit_driver.FastOp) run without _lock.
        self._core = BlockCache()
        self._pending: list[_Pending] = []
        # Bytes reserved for fresh allocations in flight (checked against the limit with
        # reserved_bytes), and bytes taken out of the cache whose free is in progress.
        self._inflight = 0
        self._freeing = 0
        self.limit: int | None = None
        # Partition charging: None until a partition exists on the device; then the owner of
        # every charged block (live, pending or cached) by address.
        self._charger: Charger | None = None
        self._owners: dict[int, Any] = {}
        #: Spills live blocks when a partition's charge fails (set by pygpukit._partition for
        #: spill-enabled partitions); None: the error propagates.
        self.spiller: Spiller | None = None

    @property
    def charger(self) -> Charger | None:
        """Who pays for blocks (partitions); ``None`` until a partition exists."""
        return self._charger

    @charger.setter
    def charger(self, charger: Charger | None) -> None:
        with self._lock:
            self._charger = charger
            self._core.charged = charger is not None  # the C fast paths stand aside

    @property
    def core(self) -> BlockCache:
        """The C bookkeeping (for the array fast path)."""
        return self._core

    # -- bookkeeping (callers hold the lock) ---------------------------------------------------
    def _drain_released(self) -> None:
        core = self._core
        for address, payload, size, stream, used in core.take_released():
            core.add("allocated_bytes", -size)
            core.add("num_frees", 1)
            if self._owners and self._charger is not None:
                owner = self._owners.get(address)
                if owner is not None:
                    self._charger.freed(owner, size)
            if used:
                events = [self._raw.record_event(s) for s in used]
                self._pending.append(_Pending(address, payload, size, stream, events))
            else:
                core.add("active_bytes", -size)
                core.push(stream, size, address, payload)

    def _process_pending(self) -> None:
        """Move the pending blocks whose events have all completed into the cache."""
        still = []
        for p in self._pending:
            if all(event.query() for event in p.events):
                self._core.add("active_bytes", -p.size)
                self._core.push(p.stream, p.size, p.address, p.payload)
            else:
                still.append(p)
        self._pending = still

    def _take_all(self, doomed: list[_Pending]) -> int:
        """Take every cached and pending block out to ``doomed``; return their bytes.

        Their charges are returned now; :meth:`_give_back` frees them (without the lock).
        """
        core = self._core
        taken = 0
        for p in self._pending:
            core.add("active_bytes", -p.size)
            self._uncharge(p.address, p.size)
            doomed.append(p)
            taken += p.size
        self._pending = []
        for stream, size, address, payload in core.take_all():
            self._uncharge(address, size)
            doomed.append(_Pending(address, payload, size, stream, []))
            taken += size
        self._freeing += taken
        return taken

    def _reclaim(self, doomed: list[_Pending], victim: Any, need: int) -> int:
        """Take cached blocks of ``victim`` (oldest first) out to ``doomed`` until ``need`` bytes.

        Their charges are returned now (the caller's charge may then fit); :meth:`_give_back`
        frees them once the lock is released.
        """
        self._process_pending()
        released = 0
        owners = self._owners
        core = self._core
        for stream, size, address, payload in core.items():
            if released >= need:
                break
            if owners.get(address) is victim and core.remove(stream, size, address):
                self._uncharge(address, size)
                doomed.append(_Pending(address, payload, size, stream, []))
                released += size
        self._freeing += released
        return released

    def _uncharge(self, address: int, size: int) -> None:
        """A block left the cache for the driver: return its owner's charge."""
        if self._owners:
            owner = self._owners.pop(address, None)
            if owner is not None and self._charger is not None:
                self._charger.uncharge(owner, size)

    def _charge_hit(self, charger: Charger, owner: Any, address: int, payload: Any, size: int,
                    stream: StreamLike, doomed: list[_Pending]) -> None:
        """A cached block is reused: move its charge to the new owner (if that is another)."""
        previous = self._owners.get(address)
        if previous is owner:
            return
        if owner is not None:
            try:
                charger.charge(owner, size, functools.partial(self._reclaim, doomed))
            except BaseException:
                self._core.push(stream, size, address, payload)
                raise
            self._owners[address] = owner
        else:
            del self._owners[address]
        if previous is not None:
            charger.uncharge(previous, size)

    def _count_alloc(self, size: int) -> None:
        core = self._core
        core.add("num_allocs", 1)
        core.add("allocated_bytes", size)
        core.add("active_bytes", size)

    def _oom(self, size: int, what: str) -> OutOfMemoryError:
        core = self._core
        core.add("num_ooms", 1)
        return OutOfMemoryError(
            f"out of memory on {self._describe()}: tried to allocate {size} bytes beyond "
            f"{what}; allocated {core.get('allocated_bytes')} bytes in live arrays, "
            f"{core.get('reserved_bytes')} bytes reserved by PyGPUkit"
            + (f", limit {self.limit} bytes" if self.limit is not None else "")
        )

    # -- driver calls (the lock is NOT held) ---------------------------------------------------
    def _give_back(self, doomed: list[_Pending]) -> None:
        """Wait for the work that may use the ``doomed`` blocks, free them and count them.

        Empties ``doomed``.  Blocks that could not be freed (a synchronization or a free
        raised) return to the cache -- or to the pending list, if they were waiting for events
        -- uncharged.
        """
        raw = self._raw
        freed = 0
        count = 0
        try:
            for stream in {p.stream for p in doomed}:
                stream.synchronize()  # enqueued kernels may still read the blocks
            for p in doomed:
                for event in p.events:
                    event.synchronize()  # so may work on the other streams that used it
            for p in doomed:
                raw.free(p.address, p.payload)
                freed += p.size
                count += 1
        finally:
            with self._lock:
                core = self._core
                core.add("reserved_bytes", -freed)
                core.add("num_device_frees", count)
                for p in doomed[count:]:
                    if p.events:
                        core.add("active_bytes", p.size)
                        self._pending.append(p)
                    else:
                        core.push(p.stream, p.size, p.address, p.payload)
                self._freeing -= sum(p.size for p in doomed)
                self._freed.notify_all()
            doomed.clear()

    def _obtain(self, size: int, doomed: list[_Pending]) -> tuple[int, Any]:
        """New ``size`` bytes from the raw allocator, giving back ``doomed`` first.

        On return the bytes are still counted in ``_inflight`` (the caller moves them to
        ``reserved_bytes``); on an exception nothing is reserved and ``doomed`` was given back.
        """
        core = self._core
        took = retried = device_retry = False
        while True:
            if doomed:
                self._give_back(doomed)  # physical frees before the (retried) allocation
            with self._lock:
                if device_retry:
                    while self._freeing:  # other threads' frees in progress count too
                        self._freed.wait()
                limit = self.limit
                if limit is not None and (core.get("reserved_bytes") + self._inflight + size
                                          > limit):
                    if not retried:
                        retried = True
                        core.add("num_alloc_retries", 1)
                    if not took:
                        took = True
                        if self._take_all(doomed):
                            continue  # free them, then look again
                    if self._freeing:  # another thread is giving memory back: wait, look again
                        self._freed.wait()
                        continue
                    raise self._oom(size, f"the memory limit of {limit} bytes")
                self._inflight += size
            try:
                return self._raw.alloc(size)
            except MemoryError as exc:
                with self._lock:
                    self._inflight -= size
                    if device_retry:
                        raise self._oom(size, "the device") from exc
                    device_retry = True
                    core.add("num_alloc_retries", 1)
                    self._take_all(doomed)
            except BaseException:
                with self._lock:
                    self._inflight -= size
                raise

    def _malloc_slow(self, size: int, stream: StreamLike, owner: Any = _SCOPE) -> Block:
        """:meth:`malloc` past the fast path; a failed partition charge may spill and retry."""
        while True:
            try:
                return self._malloc_charged(size, stream, owner)
            except PartitionMemoryError as exc:
                spiller = self.spiller
                if spiller is None or not spiller(exc.partition, size):
                    raise

    def _malloc_charged(self, size: int, stream: StreamLike, owner: Any) -> Block:
        """Charged reuse or a fresh block, for ``owner`` (``_SCOPE``: the charger's choice)."""
        core = self._core
        doomed: list[_Pending] = []  # blocks a partition's reclaim took out of the cache
        block: Block | None = None
        try:
            with self._lock:
                self._drain_released()
                cached = core.pop(stream, size)
                if cached is None and self._pending:
                    self._process_pending()
                    cached = core.pop(stream, size)
                charger = self._charger
                if charger is None:
                    owner = None
                elif owner is _SCOPE:
                    owner = charger.owner()
                if cached is not None:
                    address, payload = cached
                    core.add("num_cache_hits", 1)
                    if charger is not None:
                        self._charge_hit(charger, owner, address, payload, size, stream, doomed)
                        if owner is not None:
                            charger.allocated(owner, size)
                    self._count_alloc(size)
                    block = core.block(self, address, payload, size, stream)
                elif owner is not None and charger is not None:
                    charger.charge(owner, size, functools.partial(self._reclaim, doomed))
        except BaseException:
            if doomed:
                self._give_back(doomed)  # reclaimed before the charge failed: still goes back
            raise
        if block is not None:
            if doomed:
                self._give_back(doomed)
            if owner is not None and charger is not None:
                charger.track(owner, block)
            return block
        try:
            address, payload = self._obtain(size, doomed)
        except BaseException:
            if owner is not None and charger is not None:
                with self._lock:
                    charger.uncharge(owner, size)
            raise
        with self._lock:
            self._inflight -= size
            core.add("reserved_bytes", size)
            core.add("num_device_allocs", 1)
            if owner is not None and charger is not None:
                self._owners[address] = owner
                charger.allocated(owner, size)
            self._count_alloc(size)
            block = core.block(self, address, payload, size, stream)
        if owner is not None and charger is not None:
            charger.track(owner, block)
        return block

    # -- public --------------------------------------------------------------------------------
    def malloc(self, nbytes: int, stream: StreamLike) -> Block:
        """Return a block of at least ``nbytes`` usable by work on ``stream``."""
        # The common case (a cached block, no partitions) in one C call, without the lock.
        block = self._core.malloc_fast(self, nbytes, stream)
        if block is None:
            block = self._malloc_slow(size_class(nbytes), stream)
        return block

    def malloc_for(self, nbytes: int, stream: StreamLike, owner: Any) -> Block:
        """A block charged to ``owner`` whatever scope is current (restores spilled blocks).

        ``owner``: a partition; ``None`` or a deleted one: nobody.  As :meth:`malloc` otherwise.
        """
        charger = self._charger
        if charger is not None and owner is not None and not charger.can_charge(owner):
            owner = None
        return self._malloc_slow(size_class(nbytes), stream, owner)

    def external(self, address: int, owner: Any, stream: StreamLike) -> Block:
        """A block for memory this allocator does not own (DLPack / CAI imports).

        ``owner`` keeps the memory alive; nothing is given back when the block goes.
        """
        return CachedBlock(None, None, address, owner, 0, stream)

    def empty_cache(self) -> int:
        """Return every cached (unused) block to the device; returns the bytes released.

        Waits for the work that may still use them, and for frees in progress on other threads.
        """
        doomed: list[_Pending] = []
        with self._lock:
            self._drain_released()
            released = self._take_all(doomed)
        if doomed:
            self._give_back(doomed)
        with self._lock:
            while self._freeing:
                self._freed.wait()
        return released

    def stats(self) -> dict[str, int]:
        """Counters in the spirit of ``torch.cuda.memory_stats()`` (see :func:`memory_stats`)."""
        with self._lock:
            self._drain_released()
            self._process_pending()
            out = self._core.stats()
        out["cached_bytes"] = out["reserved_bytes"] - out["active_bytes"]
        out["limit_bytes"] = -1 if self.limit is None else self.limit
        return out

    def reset_peak_stats(self) -> None:
        """Set the peaks to the current values."""
        with self._lock:
            self._drain_released()
            core = self._core
            core.set("peak_allocated_bytes", core.get("allocated_bytes"))
            core.set("peak_reserved_bytes", core.get("reserved_bytes"))

    def set_limit(self, nbytes: int | None) -> None:
        """Cap the bytes this allocator may reserve (``None``: no cap)."""
        doomed: list[_Pending] = []
        with self._lock:
            self.limit = nbytes
            self._drain_released()
            if nbytes is not None and self._core.get("reserved_bytes") > nbytes:
                self._take_all(doomed)
        if doomed:
            self._give_back(doomed)

    def release_cached(self, owner: Any) -> int:
        """Give back to the device every cached block owned by ``owner``; return the bytes."""
        doomed: list[_Pending] = []
        with self._lock:
            self._drain_released()
            released = self._reclaim(doomed, owner, 1 << 62)
        if doomed:
            self._give_back(doomed)
        return released

    def owned_blocks(self, owner: Any) -> int:
        """Number of blocks (live, pending or cached) charged to ``owner``."""
        with self._lock:
            self._drain_released()
            return sum(1 for o in self._owners.values() if o is owner)

    def streams_with_cache(self) -> set[StreamLike]:
        """Streams that have cached blocks now (a snapshot, for diagnostics)."""
        with self._lock:
            return set(self._core.streams())
