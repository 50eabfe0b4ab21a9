"""The caching allocator: reuse, statistics, limits and out-of-memory, on both backends."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import pygpukit as gp


def baseline() -> dict[str, int]:
    gc.collect()
    return gp.memory_stats()


def test_freed_memory_is_cached_and_reused(backend: str) -> None:
    before = baseline()
    a = gp.empty((1000,))
    ptr = a.data_ptr
    stats = gp.memory_stats()
    assert stats["allocated_bytes"] - before["allocated_bytes"] == 4096  # size class of 4000
    del a
    gc.collect()
    b = gp.empty((1000,))
    assert b.data_ptr == ptr  # same class, same stream: the cached block comes back
    assert gp.memory_stats()["num_cache_hits"] > before["num_cache_hits"]
    del b
    assert baseline()["allocated_bytes"] == before["allocated_bytes"]


def test_views_keep_memory_alive(backend: str) -> None:
    before = baseline()
    a = gp.arange(100, dtype="int32")
    v = a[10:20]
    del a
    gc.collect()
    assert gp.memory_stats()["allocated_bytes"] > before["allocated_bytes"]
    assert v.tolist() == list(range(10, 20))
    del v
    assert baseline()["allocated_bytes"] == before["allocated_bytes"]


def test_stats_keys_and_peaks(backend: str) -> None:
    gp.reset_peak_memory_stats()
    big = gp.empty((1 << 20,))  # 4 MiB
    stats = gp.memory_stats()
    for key in ("allocated_bytes", "active_bytes", "reserved_bytes", "cached_bytes",
                "peak_allocated_bytes", "peak_reserved_bytes", "num_allocs", "num_frees",
                "num_device_allocs", "num_device_frees", "num_alloc_retries", "num_ooms",
                "limit_bytes"):
        assert isinstance(stats[key], int), key
    assert stats["peak_allocated_bytes"] >= 4 << 20
    assert gp.memory_allocated() == stats["allocated_bytes"]
    assert gp.memory_reserved() == stats["reserved_bytes"] >= stats["allocated_bytes"]
    del big
    gc.collect()
    released = gp.empty_cache()
    assert released >= 4 << 20
    assert gp.memory_stats()["cached_bytes"] == 0


def test_memory_limit_and_out_of_memory(backend: str) -> None:
    gp.empty_cache()
    before = baseline()
    gp.set_memory_limit(before["reserved_bytes"] + (8 << 20))
    try:
        keep = gp.empty((1 << 20,))  # 4 MiB fits
        with pytest.raises(gp.OutOfMemoryError) as info:
            gp.empty((2 << 20,))  # 8 MiB more does not
        assert isinstance(info.value, MemoryError)
        message = str(info.value)
        assert "tried to allocate 8388608 bytes" in message and "limit" in message
        assert gp.memory_stats()["num_ooms"] == before["num_ooms"] + 1
        del keep
        gc.collect()
        after_free = gp.empty((2 << 20,))  # the cached 4 MiB goes back, then 8 MiB fits
        del after_free
    finally:
        gp.set_memory_limit(None)
    stats = baseline()
    assert stats["allocated_bytes"] == before["allocated_bytes"]
    assert stats["limit_bytes"] == -1


def test_device_out_of_memory_is_clean(backend: str) -> None:
    if backend == "cpu":
        pytest.skip("the host would swap rather than fail; the limit test covers the CPU path")
    before = baseline()
    with pytest.raises(gp.OutOfMemoryError, match="out of memory on cuda:0"):
        gp.empty((1 << 50,), gp.uint8)  # 1 PiB
    stats = baseline()
    assert stats["allocated_bytes"] == before["allocated_bytes"]
    assert stats["num_ooms"] == before["num_ooms"] + 1
    np.testing.assert_array_equal(gp.ones(3).to_numpy(), np.ones(3, np.float32))


def test_mistakes_leave_stats_at_baseline(backend: str) -> None:
    a = gp.ones((4,))
    before = baseline()
    with pytest.raises(ValueError, match="could not be broadcast"):
        gp.add(a, gp.ones((5,)))
    with pytest.raises(TypeError, match="not supported for the input types"):
        gp.bitwise_and(a, gp.ones((4,), gp.float64))
    with pytest.raises(OverflowError, match="out of bounds"):
        gp.ones((4,), gp.uint8) + 256
    with pytest.raises(ValueError, match="dimensions must be >= 0"):
        gp.empty((-1,))
    with pytest.raises(TypeError, match="expected one of"):
        gp.zeros(3, dtype="uint64")
    assert baseline()["allocated_bytes"] == before["allocated_bytes"]


def test_set_memory_limit_validates(backend: str) -> None:
    with pytest.raises(ValueError, match="non-negative"):
        gp.set_memory_limit(-1)
