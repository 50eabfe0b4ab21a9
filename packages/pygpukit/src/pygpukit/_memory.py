"""Memory statistics and control of the caching allocator (per device)."""

from __future__ import annotations

import operator
from typing import Any

from pygpukit._device import runtime_for


def memory_stats(device: Any = None) -> dict[str, int]:
    """Counters of the caching allocator of ``device`` (the current device if omitted).

    Keys (bytes unless named ``num_*``): ``allocated_bytes`` (in live arrays, by size class),
    ``active_bytes`` (allocated plus freed blocks still awaiting other streams),
    ``reserved_bytes`` (obtained from the driver), ``cached_bytes`` (reserved, not active),
    ``peak_allocated_bytes``, ``peak_reserved_bytes``, ``limit_bytes`` (-1: none),
    ``num_allocs``, ``num_frees``, ``num_cache_hits``, ``num_device_allocs``,
    ``num_device_frees``, ``num_alloc_retries``, ``num_ooms``.
    """
    return runtime_for(device).allocator.stats()


def memory_allocated(device: Any = None) -> int:
    """Bytes held by live arrays on ``device``."""
    return memory_stats(device)["allocated_bytes"]


def memory_reserved(device: Any = None) -> int:
    """Bytes PyGPUkit holds from the driver on ``device`` (live arrays plus the cache)."""
    return memory_stats(device)["reserved_bytes"]


def empty_cache(device: Any = None) -> int:
    """Give cached, unused memory back to the driver; return the bytes released.

    Waits for the streams whose cached blocks are released (their kernels may still read them).
    """
    return runtime_for(device).allocator.empty_cache()


def set_memory_limit(nbytes: int | None, device: Any = None) -> None:
    """Cap the memory PyGPUkit reserves on ``device`` (``None`` removes the cap).

    Allocations beyond it first empty the cache, then raise :class:`~pygpukit.OutOfMemoryError`.
    """
    if nbytes is not None:
        nbytes = operator.index(nbytes)
        if nbytes < 0:
            raise ValueError(f"nbytes: expected a non-negative int or None; got {nbytes}")
    runtime_for(device).allocator.set_limit(nbytes)


def reset_peak_memory_stats(device: Any = None) -> None:
    """Set the ``peak_*`` statistics of ``device`` to the current values."""
    runtime_for(device).allocator.reset_peak_stats()
