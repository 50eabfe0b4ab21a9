"""Native part of :mod:`pygpukit_sched` (pyo3 bindings of ``pygpukit-sched-core``)."""

from typing import final

__all__ = [
    "__version__",
    "MIN_BLOCK_SIZE",
    "SMALL_LIMIT",
    "LARGE_GRANULE",
    "MemoryPool",
    "PoolStats",
    "QuotaExceededError",
    "InvalidBlockError",
]

__version__: str
MIN_BLOCK_SIZE: int
SMALL_LIMIT: int
LARGE_GRANULE: int

class QuotaExceededError(MemoryError):
    """An allocation does not fit in the pool's quota (even after eviction, if enabled).

    The instance attributes ``requested``, ``class_size``, ``used``, ``cached`` and
    ``quota`` (bytes) give the request and the pool's state at the time of the call.
    """

    requested: int
    class_size: int
    used: int
    cached: int
    quota: int

class InvalidBlockError(ValueError):
    """A block id that is not a live block of the pool (unknown, freed, or evicted).

    The instance attribute ``block_id`` is the offending id.
    """

    block_id: int

@final
class PoolStats:
    """Snapshot of a :class:`MemoryPool`'s counters (all sizes in bytes)."""

    @property
    def quota(self) -> int:
        """The pool's quota."""

    @property
    def used(self) -> int:
        """Bytes in live blocks."""

    @property
    def cached(self) -> int:
        """Bytes in cached (free, reusable) blocks."""

    @property
    def peak_used(self) -> int:
        """Highest value ``used`` has reached."""

    @property
    def allocations(self) -> int:
        """Successful allocations (``cache_hits + cache_misses``)."""

    @property
    def frees(self) -> int:
        """Successful frees."""

    @property
    def cache_hits(self) -> int:
        """Allocations served from the cache."""

    @property
    def cache_misses(self) -> int:
        """Allocations that created a new block."""

    @property
    def evictions(self) -> int:
        """Cached blocks dropped, by allocation pressure or ``clear_cache``."""

    @property
    def evicted_bytes(self) -> int:
        """Bytes of the evicted blocks."""

    @property
    def active_blocks(self) -> int:
        """Number of live blocks."""

    @property
    def cached_blocks(self) -> int:
        """Number of cached blocks."""

    def to_dict(self) -> dict[str, int]:
        """Return the counters as a ``dict`` of ``str`` to ``int``."""

    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class MemoryPool:
    """Deterministic model of a caching device-memory pool (bytes; no GPU needed)."""

    def __new__(cls, quota: int, enable_eviction: bool = True) -> MemoryPool: ...
    @property
    def quota(self) -> int:
        """The quota in bytes."""

    @property
    def enable_eviction(self) -> bool:
        """Whether cached blocks are evicted to make room for new blocks."""

    def allocate(self, size: int) -> int:
        """Allocate a block for ``size`` bytes and return its id."""

    def free(self, block: int) -> None:
        """Return a live block to the cache of its size class."""

    def take_evicted(self) -> list[int]:
        """Return (and forget) the ids evicted since the last call, oldest first."""

    def clear_cache(self) -> int:
        """Drop every cached block and return the number of bytes released."""

    def evict_all(self) -> int:
        """Alias of :meth:`clear_cache`."""

    @staticmethod
    def size_class(size: int) -> int:
        """Return the size class (bytes) that a request of ``size`` bytes is rounded up to."""

    def block_size(self, block: int) -> int:
        """Return the size in bytes of a live or cached block."""

    def is_live(self, block: int) -> bool:
        """Return whether ``block`` is a live (allocated and not freed) block."""

    def stats(self) -> PoolStats:
        """Return a snapshot of the pool's counters."""
