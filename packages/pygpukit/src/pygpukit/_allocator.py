"""The caching allocator under every array, on either backend.

Blocks are rounded up to size classes (512 B to 1 MiB in powers of two, then multiples of
2 MiB) and cached per (stream, size class) when their arrays go: a block freed on stream S is
reused only by an allocation on S, which the stream orders after every kernel that used the
block.  A block that was also used on other streams is held back until an event recorded on
each of them has completed.  Nothing here synchronizes, except :meth:`empty_cache` and the
out-of-memory retry, which must wait for in-flight work before giving memory back.

Frees arrive from ``__del__`` (any thread, possibly in the middle of an allocation on the same
thread), so they only append to a queue; the queue is drained under the lock on the next call.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from pygpukit._errors import OutOfMemoryError

SMALL_LIMIT = 1 << 20
LARGE_GRANULE = 2 << 20
MIN_BLOCK = 512


def size_class(nbytes: int) -> int:
    """Round a request up to its size class."""
    if nbytes <= MIN_BLOCK:
        return MIN_BLOCK
    if nbytes <= SMALL_LIMIT:
        return 1 << (nbytes - 1).bit_length()
    return -(-nbytes // LARGE_GRANULE) * LARGE_GRANULE


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
    is returned when it goes back to the driver.  All calls are made with the allocator's lock
    held; ``charge`` may call ``reclaim(victim, nbytes)``, which gives back to the driver
    cached blocks owned by ``victim`` (oldest first) until ``nbytes`` are released and
    returns the bytes released.
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


class Block:
    """One allocation from the caching allocator, shared by an array and all its views.

    When the last array viewing it goes, the block returns to its allocator's cache.
    """

    __slots__ = ("_allocator", "address", "payload", "size", "stream", "used_streams", "writer")

    def __init__(self, allocator: CachingAllocator, address: int, payload: Any, size: int,
                 stream: StreamLike) -> None:
        self._allocator: CachingAllocator | None = allocator
        self.address = address
        self.payload = payload
        self.size = size
        self.stream = stream
        self.used_streams: set[StreamLike] | None = None
        # The stream of the last operation that wrote the block: reading it back waits on it.
        self.writer: StreamLike = stream

    def record_stream(self, stream: StreamLike) -> None:
        """Note that work on ``stream`` (not the allocating one) uses this block."""
        if stream is not self.stream:
            if self.used_streams is None:
                self.used_streams = set()
            self.used_streams.add(stream)

    def __del__(self) -> None:
        allocator = self._allocator
        if allocator is not None and self.size:
            self._allocator = None
            allocator._released.append(
                (self.address, self.payload, self.size, self.stream, self.used_streams)
            )


@dataclass
class _Pending:
    address: int
    payload: Any
    size: int
    stream: StreamLike
    events: list[EventLike]


class CachingAllocator:
    """Size-class caching allocator with per-stream reuse and PyTorch-style statistics."""

    def __init__(self, raw: RawAllocator, describe: Callable[[], str]) -> None:
        self._raw = raw
        self._describe = describe
        self._lock = threading.Lock()
        self._released: deque[tuple[int, Any, int, StreamLike, set[StreamLike] | None]] = deque()
        self._cache: dict[tuple[StreamLike, int], list[tuple[int, Any]]] = {}
        self._pending: list[_Pending] = []
        self.limit: int | None = None
        # Partition charging: None until a partition exists on the device; then the owner of
        # every charged block (live, pending or cached) by address.
        self.charger: Charger | None = None
        self._owners: dict[int, Any] = {}
        self._stats = dict.fromkeys(
            ("allocated_bytes", "active_bytes", "reserved_bytes", "peak_allocated_bytes",
             "peak_reserved_bytes", "num_allocs", "num_frees", "num_device_allocs",
             "num_device_frees", "num_alloc_retries", "num_ooms", "num_cache_hits"),
            0,
        )

    # -- bookkeeping (callers hold the lock) ---------------------------------------------------
    def _drain_released(self) -> None:
        stats = self._stats
        while self._released:
            address, payload, size, stream, used = self._released.popleft()
            stats["allocated_bytes"] -= size
            stats["num_frees"] += 1
            if self._owners and self.charger is not None:
                owner = self._owners.get(address)
                if owner is not None:
                    self.charger.freed(owner, size)
            if used:
                events = [self._raw.record_event(s) for s in used]
                self._pending.append(_Pending(address, payload, size, stream, events))
            else:
                stats["active_bytes"] -= size
                self._cache.setdefault((stream, size), []).append((address, payload))

    def _process_pending(self, wait: bool = False) -> None:
        still = []
        for p in self._pending:
            if wait:
                for event in p.events:
                    event.synchronize()
            if wait or all(event.query() for event in p.events):
                self._stats["active_bytes"] -= p.size
                self._cache.setdefault((p.stream, p.size), []).append((p.address, p.payload))
            else:
                still.append(p)
        self._pending = still

    def _release_cache(self) -> int:
        """Give every cached block back to the raw allocator (waits for the streams first)."""
        self._process_pending(wait=True)
        released = 0
        for stream in {stream for stream, _ in self._cache}:
            stream.synchronize()  # cached blocks may still be read by enqueued kernels
        for (_, size), blocks in self._cache.items():
            for address, payload in blocks:
                self._raw.free(address, payload)
                self._stats["reserved_bytes"] -= size
                self._stats["num_device_frees"] += 1
                released += size
                self._uncharge(address, size)
        self._cache.clear()
        return released

    def _uncharge(self, address: int, size: int) -> None:
        """A block went back to the driver: return its owner's charge."""
        if self._owners:
            owner = self._owners.pop(address, None)
            if owner is not None and self.charger is not None:
                self.charger.uncharge(owner, size)

    def _reclaim(self, victim: Any, need: int) -> int:
        """Give back cached blocks owned by ``victim`` (oldest first) until ``need`` bytes."""
        self._process_pending()
        released = 0
        owners = self._owners
        for key in list(self._cache):
            if released >= need:
                break
            stream, size = key
            blocks = self._cache[key]
            keep: list[tuple[int, Any]] = []
            synced = False
            for address, payload in blocks:  # appended when freed: oldest first
                if released < need and owners.get(address) is victim:
                    if not synced:
                        stream.synchronize()  # enqueued kernels may still read the block
                        synced = True
                    self._raw.free(address, payload)
                    self._stats["reserved_bytes"] -= size
                    self._stats["num_device_frees"] += 1
                    released += size
                    self._uncharge(address, size)
                else:
                    keep.append((address, payload))
            if keep:
                blocks[:] = keep
            else:
                del self._cache[key]
        return released

    def _charge_hit(self, charger: Charger, owner: Any, address: int, payload: Any, size: int,
                    stream: StreamLike) -> None:
        """A cached block is reused: move its charge to the new owner (if that is another)."""
        previous = self._owners.get(address)
        if previous is owner:
            return
        if owner is not None:
            try:
                charger.charge(owner, size, self._reclaim)
            except BaseException:
                self._cache.setdefault((stream, size), []).append((address, payload))
                raise
            self._owners[address] = owner
        else:
            del self._owners[address]
        if previous is not None:
            charger.uncharge(previous, size)

    def _fresh(self, size: int) -> tuple[int, Any]:
        stats = self._stats
        if self.limit is not None and stats["reserved_bytes"] + size > self.limit:
            stats["num_alloc_retries"] += 1
            self._release_cache()
            if stats["reserved_bytes"] + size > self.limit:
                raise self._oom(size, f"the memory limit of {self.limit} bytes")
        try:
            block = self._raw.alloc(size)
        except MemoryError:
            stats["num_alloc_retries"] += 1
            self._release_cache()
            try:
                block = self._raw.alloc(size)
            except MemoryError as exc:
                raise self._oom(size, "the device") from exc
        stats["reserved_bytes"] += size
        stats["num_device_allocs"] += 1
        stats["peak_reserved_bytes"] = max(stats["peak_reserved_bytes"], stats["reserved_bytes"])
        return block

    def _oom(self, size: int, what: str) -> OutOfMemoryError:
        self._stats["num_ooms"] += 1
        s = self._stats
        return OutOfMemoryError(
            f"out of memory on {self._describe()}: tried to allocate {size} bytes beyond "
            f"{what}; allocated {s['allocated_bytes']} bytes in live arrays, "
            f"{s['reserved_bytes']} bytes reserved by PyGPUkit"
            + (f", limit {self.limit} bytes" if self.limit is not None else "")
        )

    # -- public --------------------------------------------------------------------------------
    def malloc(self, nbytes: int, stream: StreamLike) -> Block:
        """Return a block of at least ``nbytes`` usable by work on ``stream``."""
        size = size_class(nbytes)
        with self._lock:
            if self._released:
                self._drain_released()
            stats = self._stats
            cached = self._cache.get((stream, size))
            if not cached and self._pending:
                self._process_pending()
                cached = self._cache.get((stream, size))
            charger = self.charger
            if cached and charger is None:  # the common case (every small op): kept short
                address, payload = cached.pop()
                stats["num_cache_hits"] += 1
                stats["num_allocs"] += 1
                allocated = stats["allocated_bytes"] + size
                stats["allocated_bytes"] = allocated
                stats["active_bytes"] += size
                if allocated > stats["peak_allocated_bytes"]:
                    stats["peak_allocated_bytes"] = allocated
                return Block(self, address, payload, size, stream)
            owner = charger.owner() if charger is not None else None
            if cached:
                address, payload = cached.pop()
                stats["num_cache_hits"] += 1
                if charger is not None:
                    self._charge_hit(charger, owner, address, payload, size, stream)
            elif charger is not None and owner is not None:
                charger.charge(owner, size, self._reclaim)
                try:
                    address, payload = self._fresh(size)
                except BaseException:
                    charger.uncharge(owner, size)
                    raise
                self._owners[address] = owner
            else:
                address, payload = self._fresh(size)
            if owner is not None and charger is not None:
                charger.allocated(owner, size)
            stats["num_allocs"] += 1
            stats["allocated_bytes"] += size
            stats["active_bytes"] += size
            stats["peak_allocated_bytes"] = max(stats["peak_allocated_bytes"],
                                                stats["allocated_bytes"])
        return Block(self, address, payload, size, stream)

    def empty_cache(self) -> int:
        """Return every cached (unused) block to the device; returns the bytes released."""
        with self._lock:
            self._drain_released()
            return self._release_cache()

    def stats(self) -> dict[str, int]:
        """Counters in the spirit of ``torch.cuda.memory_stats()`` (see :func:`memory_stats`)."""
        with self._lock:
            self._drain_released()
            self._process_pending()
            out = dict(self._stats)
        out["cached_bytes"] = out["reserved_bytes"] - out["active_bytes"]
        out["limit_bytes"] = -1 if self.limit is None else self.limit
        return out

    def reset_peak_stats(self) -> None:
        """Set the peaks to the current values."""
        with self._lock:
            self._drain_released()
            self._stats["peak_allocated_bytes"] = self._stats["allocated_bytes"]
            self._stats["peak_reserved_bytes"] = self._stats["reserved_bytes"]

    def set_limit(self, nbytes: int | None) -> None:
        """Cap the bytes this allocator may reserve (``None``: no cap)."""
        with self._lock:
            self.limit = nbytes
            self._drain_released()
            if nbytes is not None and self._stats["reserved_bytes"] > nbytes:
                self._release_cache()

    def release_cached(self, owner: Any) -> int:
        """Give back to the device every cached block owned by ``owner``; return the bytes."""
        with self._lock:
            self._drain_released()
            return self._reclaim(owner, 1 << 62)

    def owned_blocks(self, owner: Any) -> int:
        """Number of blocks (live, pending or cached) charged to ``owner``."""
        with self._lock:
            self._drain_released()
            return sum(1 for o in self._owners.values() if o is owner)

    def streams_with_cache(self) -> Iterable[StreamLike]:
        """Streams that have cached blocks (for diagnostics)."""
        return {stream for stream, _ in self._cache}
