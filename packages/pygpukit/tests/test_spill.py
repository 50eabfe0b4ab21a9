"""Spilling live arrays of a partition to host memory under pressure, and restoring them on use.

Both backends: on the CPU simulation a spill moves the bytes to a host buffer and frees the
simulated device block, so these tests run in CI and again on the GPU tier.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import pygpukit as gp

try:
    import pygpukit_sched  # the `sched` extra: the spill order is its decision
    _NO_SCHED = None
except ImportError:
    _NO_SCHED = "needs pygpukit[sched] (pygpukit-sched is not installed)"

pytestmark = [pytest.mark.sched, pytest.mark.skipif(_NO_SCHED is not None, reason=_NO_SCHED or "")]

KiB = 1 << 10
MiB = 1 << 20
TOTAL = 8 * MiB  # the partitionable memory of the device in these tests
CHUNK = 256 * KiB  # one array: a 256 KiB size class, no rounding


@pytest.fixture
def device(backend: str) -> Iterator[str]:
    """A device whose partitions divide 8 MiB; every partition is deleted afterwards."""
    gp.synchronize()
    gp.empty_cache()
    gp.configure_partitions(TOTAL)
    yield backend
    gc.collect()
    gp.synchronize()
    for p in gp.list_partitions():
        gp.delete_partition(p, force=True)


def _random(rng: np.random.Generator, nbytes: int = CHUNK) -> np.ndarray[Any, Any]:
    return rng.standard_normal(nbytes // 4).astype(np.float32)


def _tenants() -> tuple[gp.Partition, gp.Partition]:
    """A Guaranteed tenant holding half the device and a BestEffort one (the other half)."""
    g = gp.create_partition("serving", memory=TOTAL // 2, qos="guaranteed", spill=True)
    be = gp.create_partition("batch")  # best_effort: spill on by default
    assert be.tier == "best_effort" and be.spill and g.spill
    return g, be


def test_best_effort_allocates_twice_its_quota(device: str) -> None:
    g, be = _tenants()
    rng = np.random.default_rng(1)
    with g:
        served_host = [_random(rng) for _ in range(4)]
        served = [gp.from_numpy(h) for h in served_host]
    quota = TOTAL - g.memory_request  # what BestEffort can use: the device minus reservations
    n = 2 * quota // CHUNK
    hosts = [_random(rng) for _ in range(n)]
    with be:
        arrays = [gp.from_numpy(h) for h in hosts]
        doubled = [a * 2.0 for a in arrays[: n // 4]]  # ops on spilled operands restore them
    stats = be.memory_stats()
    assert stats["num_spills"] > 0 and stats["spilled_bytes"] > 0
    assert stats["usage_bytes"] <= quota and stats["num_ooms"] == 0
    assert stats["spilled_bytes"] + stats["allocated_bytes"] >= (n + n // 4) * CHUNK
    with be:
        for h, a in zip(hosts, arrays, strict=True):
            np.testing.assert_array_equal(a.to_numpy(), h)
        for h, d in zip(hosts[: n // 4], doubled, strict=True):
            np.testing.assert_array_equal(d.to_numpy(), h * np.float32(2.0))
        total = gp.zeros(CHUNK // 4)
        for a in arrays:  # every array used again, in an op: restores and spills in turn
            total += a
    np.testing.assert_allclose(total.to_numpy(), np.sum(hosts, axis=0, dtype=np.float32),
                               rtol=1e-5, atol=1e-5)
    stats = be.memory_stats()
    assert stats["num_restores"] > 0 and stats["restored_bytes"] >= stats["num_restores"] * CHUNK
    assert stats["spill_time_ns"] > 0 and stats["restore_time_ns"] > 0
    # The Guaranteed tenant beside it was never spilled (BestEffort cannot spill a higher tier).
    assert g.memory_stats()["num_spills"] == 0
    assert all(a._block.address for a in served)
    for h, a in zip(served_host, served, strict=True):
        np.testing.assert_array_equal(a.to_numpy(), h)


def test_a_higher_tier_makes_room_by_spilling_best_effort_arrays(device: str) -> None:
    be = gp.create_partition("batch")
    burst = gp.create_partition("burst", memory=TOTAL, memory_request=MiB)  # spill off
    assert burst.tier == "burstable" and not burst.spill
    rng = np.random.default_rng(13)
    hosts = [_random(rng) for _ in range(TOTAL // CHUNK - 4)]  # all but 1 MiB of the device
    with be:
        batch = [gp.from_numpy(h) for h in hosts]
    assert be.memory_stats()["num_spills"] == 0
    mine = [_random(rng) for _ in range(8)]  # 2 MiB: the device is full, not its quota
    with burst:
        arrays = [gp.from_numpy(h) for h in mine]
    assert be.memory_stats()["num_spills"] >= 4 and burst.memory_stats()["num_ooms"] == 0
    for h, a in zip(mine, arrays, strict=True):
        np.testing.assert_array_equal(a.to_numpy(), h)
    # BestEffort's arrays come back by spilling its own (never the Burstable's).
    with be:
        for h, a in zip(hosts, batch, strict=True):
            np.testing.assert_array_equal(a.to_numpy(), h)
    assert all(a._block.address for a in arrays)


def test_a_partition_without_spill_still_raises(device: str) -> None:
    p = gp.create_partition("capped", memory=1 * MiB)
    assert p.tier == "burstable" and not p.spill
    with p, pytest.raises(gp.PartitionMemoryError, match="capped"):
        _ = [gp.empty(CHUNK // 4) for _ in range(5)]
    assert p.memory_stats()["num_spills"] == 0


def test_a_burstable_partition_spills_its_own_arrays(device: str) -> None:
    p = gp.create_partition("burst", memory=1 * MiB, spill=True)
    rng = np.random.default_rng(2)
    hosts = [_random(rng) for _ in range(8)]  # 2 MiB in a 1 MiB quota
    with p:
        arrays = [gp.from_numpy(h) for h in hosts]
    assert p.memory_stats()["usage_bytes"] <= 1 * MiB
    # Least recently used first: the oldest arrays went to the host, the newest stayed.
    assert not arrays[0]._block.address and arrays[-1]._block.address
    for h, a in zip(hosts, arrays, strict=True):
        np.testing.assert_array_equal(a.to_numpy(), h)


def test_restore_is_bit_identical_for_every_dtype_and_view(device: str) -> None:
    p = gp.create_partition("bits", memory=1 * MiB, spill=True)
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 256, CHUNK, dtype=np.uint8)
    hosts = [bits.view(np.float32).copy(), bits.view(np.float64).copy(),  # NaN payloads too
             bits.view(np.int16).copy(), (bits & 1).astype(np.bool_)[: CHUNK // 2],
             bits.view(gp.bfloat16).copy()]
    with p:
        arrays = [gp.from_numpy(h) for h in hosts]
        views = [a[3:-5:2] for a in arrays]  # views share the block and come back with it
        filler = [gp.from_numpy(_random(rng)) for _ in range(4)]  # pushes the first ones out
    assert not all(a._block.address for a in arrays)
    assert p.memory_stats()["num_spills"] > 0
    for h, a, v in zip(hosts, arrays, views, strict=True):
        assert a.to_numpy().tobytes() == h.tobytes()
        assert v.to_numpy().tobytes() == h[3:-5:2].tobytes()
    del filler


def test_an_exported_array_is_never_spilled(device: str) -> None:
    p = gp.create_partition("export", memory=1 * MiB, spill=True)
    rng = np.random.default_rng(4)
    h = _random(rng)
    with p:
        a = gp.from_numpy(h)
        capsule = a.__dlpack__()  # another library may hold its pointer now
        address = a.data_ptr
        more = [gp.from_numpy(_random(rng)) for _ in range(8)]
    assert p.memory_stats()["num_spills"] >= 4
    assert a._block.address and a.data_ptr == address and a._block.pins
    if device == "cpu":  # the consumer reads the exported memory in place
        exported = np.from_dlpack(a)
        np.testing.assert_array_equal(exported, h)
        del exported
    del capsule
    gc.collect()
    assert not a._block.pins  # the export is gone: it may spill again
    with p:
        more += [gp.from_numpy(_random(rng)) for _ in range(4)]
    assert not a._block.address
    np.testing.assert_array_equal(a.to_numpy(), h)


def test_arrays_captured_in_a_graph_stay_while_it_lives(device: str) -> None:
    p = gp.create_partition("graphs", memory=2 * MiB, spill=True)
    rng = np.random.default_rng(5)
    h = _random(rng)
    with p:
        x = gp.from_numpy(h)
        out = gp.zeros(CHUNK // 4)
        gp.synchronize()
        with gp.graph() as g:
            out += x * 3.0
        more = [gp.from_numpy(_random(rng)) for _ in range(10)]
    assert p.memory_stats()["num_spills"] > 0
    assert x._block.address and out._block.address and x._block.pins
    g.replay()
    np.testing.assert_allclose(out.to_numpy(), h * 3.0, rtol=1e-6)
    g.close()
    assert not x._block.pins and not out._block.pins
    with p:
        more += [gp.from_numpy(_random(rng)) for _ in range(4)]
    assert not x._block.address
    np.testing.assert_array_equal(x.to_numpy(), h)


def test_memory_returns_to_baseline(device: str) -> None:
    base = gp.memory_stats()["allocated_bytes"]
    g, be = _tenants()
    rng = np.random.default_rng(6)
    with be:
        arrays = [gp.from_numpy(_random(rng)) for _ in range(2 * (TOTAL // 2) // CHUNK)]
        arrays = [a + 1.0 for a in arrays]
    assert be.memory_stats()["spilled_bytes"] > 0
    del arrays
    gc.collect()
    # Freed blocks that other streams' work still uses wait for it (slow under a sanitizer).
    gp.synchronize()
    stats = be.memory_stats()
    assert stats["spilled_bytes"] == 0 and stats["allocated_bytes"] == 0
    assert be.empty_cache() >= 0 and be.memory_stats()["usage_bytes"] == 0
    assert g.memory_stats()["usage_bytes"] == 0
    assert gp.memory_stats()["allocated_bytes"] == base


def test_spill_log_and_debug_logging(device: str, caplog: pytest.LogCaptureFixture) -> None:
    p = gp.create_partition("logged", memory=1 * MiB, spill=True)
    rng = np.random.default_rng(7)
    with caplog.at_level(logging.DEBUG, logger="pygpukit.spill"), p:
        arrays = [gp.from_numpy(_random(rng)) for _ in range(5)]
        arrays[0].to_numpy()
    log = [e for e in gp.spill_log() if e["partition"] == "logged"]
    spills = [e for e in log if e["event"] == "spill"]
    restores = [e for e in log if e["event"] == "restore"]
    assert spills and restores
    assert spills[0]["bytes"] == CHUNK and "quota is full" in spills[0]["reason"]
    assert restores[-1]["reason"] == "read to the host"
    assert any("spill" in r.getMessage() and "logged" in r.getMessage() for r in caplog.records)
    assert len(gp.spill_log()) >= len(log)


def test_one_size_class_rule_for_the_allocator_and_the_rust_pool_model() -> None:
    """The allocator's classes are the C BlockCache's; the Rust pool model must agree."""
    from pygpukit._allocator import size_class
    from pygpukit_driver import BlockCache

    rng = np.random.default_rng(12)
    sizes = [1, 511, 512, 513, 1023, 1024, 4097, MiB - 1, MiB, MiB + 1, 2 * MiB, 2 * MiB + 1,
             3 << 30, (1 << 40) + 7]
    sizes += [int(x) for x in rng.integers(1, 1 << 34, 2000)]
    sizes += [int(x) for x in rng.integers(1, 4 * MiB, 2000)]
    for n in sizes:
        assert size_class(n) == BlockCache.size_class(n) == \
            pygpukit_sched.MemoryPool.size_class(n), n


def test_spill_argument_and_defaults(device: str) -> None:
    with pytest.raises(TypeError, match="spill: expected a bool or None; got str"):
        gp.create_partition("bad", spill="yes")  # type: ignore[arg-type]
    assert gp.create_partition("be").spill
    assert not gp.create_partition("bu", memory=MiB).spill
    assert not gp.create_partition("gu", memory=MiB, qos="guaranteed").spill
    assert gp.create_partition("gu2", memory=MiB, qos="guaranteed", spill=True).spill
    stats = gp.get_partition("be").memory_stats()
    assert {"spilled_bytes", "num_spills", "num_restores", "spill_time_ns",
            "restore_time_ns"} <= set(stats)


def test_deleting_a_partition_with_spilled_arrays_needs_force(device: str) -> None:
    p = gp.create_partition("gone", memory=1 * MiB, spill=True)
    rng = np.random.default_rng(8)
    h = _random(rng)
    with p:
        arrays = [gp.from_numpy(h)] + [gp.from_numpy(_random(rng)) for _ in range(4)]
    del arrays[1:]
    gc.collect()
    assert not arrays[0]._block.address  # only the spilled one is left
    with pytest.raises(RuntimeError, match="spilled to host memory"):
        gp.delete_partition(p)
    gp.delete_partition(p, force=True)
    np.testing.assert_array_equal(arrays[0].to_numpy(), h)  # still valid, charged to nobody


def test_products_reductions_and_copies_of_spilled_arrays(device: str) -> None:
    p = gp.create_partition("ops", memory=1 * MiB, spill=True)
    rng = np.random.default_rng(9)
    ha = rng.standard_normal((128, 256)).astype(np.float32)
    hb = rng.standard_normal((256, 128)).astype(np.float32)
    with p:
        a, b = gp.from_numpy(ha), gp.from_numpy(hb)
        filler = [gp.from_numpy(_random(rng)) for _ in range(4)]
        assert not a._block.address and not b._block.address
        c = a @ b
        s = a.sum(axis=1)
        t = b.T.copy()
        del filler
    np.testing.assert_allclose(c.to_numpy(), ha @ hb, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(s.to_numpy(), ha.sum(axis=1), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(t.to_numpy(), hb.T)


@pytest.mark.parametrize("backend", [pytest.param("cuda", marks=pytest.mark.gpu)],
                         indirect=True)
def test_cuda_array_interface_pins_for_good(device: str) -> None:
    """The CUDA Array Interface has no lifetime: the array stays on the device for good."""
    p = gp.create_partition("cai", memory=1 * MiB, spill=True)
    rng = np.random.default_rng(10)
    h = _random(rng)
    with p:
        a = gp.from_numpy(h)
        pointer = a.__cuda_array_interface__["data"][0]
        more = [gp.from_numpy(_random(rng)) for _ in range(8)]
    assert a._block.address == pointer and p.memory_stats()["num_spills"] > 0
    np.testing.assert_array_equal(a.to_numpy(), h)
    del more


SCALE = """
extern "C" __global__
void scale(float* x, float factor, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) x[idx] *= factor;
}
"""


@pytest.mark.jit
@pytest.mark.parametrize("backend", [pytest.param("cuda", marks=pytest.mark.gpu)],
                         indirect=True)
def test_jit_launches_restore_and_bound_launches_pin(device: str) -> None:
    """A JIT call (C fast path, then its fallback) brings a spilled array back; bind pins it."""
    kernel = gp.jit(SCALE, func="scale")
    p = gp.create_partition("jit", memory=1 * MiB, spill=True)
    rng = np.random.default_rng(11)
    h = _random(rng)
    with p:
        a = gp.from_numpy(h)
        more = [gp.from_numpy(_random(rng)) for _ in range(4)]
        assert not a._block.address
        kernel(a, factor=2.0, n=a.size)
        assert a._block.address
        np.testing.assert_array_equal(a.to_numpy(), h * np.float32(2.0))
        bound = kernel.bind(a, factor=0.5, n=a.size)
        more += [gp.from_numpy(_random(rng)) for _ in range(4)]
        assert a._block.address and a._block.pins
        bound()
        np.testing.assert_array_equal(a.to_numpy(), h)
        del bound
        gc.collect()
        assert not a._block.pins
        more += [gp.from_numpy(_random(rng)) for _ in range(4)]
        assert not a._block.address
        kernel(a, 4.0, a.size)  # positional: the checking path
        np.testing.assert_array_equal(a.to_numpy(), h * np.float32(4.0))


def test_arrays_outside_spill_partitions_are_not_tracked(device: str) -> None:
    """Only arrays of spill-enabled partitions carry the LRU stamp (a flag test for others)."""
    gp.create_partition("spilling", memory=MiB, spill=True)
    plain = gp.create_partition("plain", memory=MiB)
    outside = gp.ones(1000)
    with plain:
        inside = gp.ones(1000)
    for a in (outside, inside):
        b = (a + 1.0).sum()
        assert not a._block.tracked and a._block.last_use == 0 and not a._block.pins
        assert not b._block.tracked
    assert b.item() == 2000.0
    with gp.get_partition("spilling"):
        tracked = gp.ones(1000)
    stamp = tracked._block.last_use
    assert tracked._block.tracked and stamp > 0
    _ = tracked + 1.0
    assert tracked._block.last_use > stamp
