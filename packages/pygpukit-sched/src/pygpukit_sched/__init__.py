"""Rust scheduler of PyGPUkit: deterministic policy and bookkeeping, no GPU needed.

This first release provides :class:`MemoryPool`, a model of a caching device-memory
pool (size classes, LRU eviction of cached blocks, quota accounting). The pool only
decides and accounts; the caller owns the real device memory.
"""

from pygpukit_sched._core import (
    LARGE_GRANULE,
    MIN_BLOCK_SIZE,
    SMALL_LIMIT,
    InvalidBlockError,
    MemoryPool,
    PoolStats,
    QuotaExceededError,
)

__version__ = "0.3.0.dev0"

__all__ = [
    "LARGE_GRANULE",
    "MIN_BLOCK_SIZE",
    "SMALL_LIMIT",
    "InvalidBlockError",
    "MemoryPool",
    "PoolStats",
    "QuotaExceededError",
    "__version__",
]
