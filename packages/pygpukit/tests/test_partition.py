"""Partitions: memory quotas charged by the allocator, QoS streams, SM shares, admission."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

import pygpukit as gp

try:
    import pygpukit_sched  # noqa: F401  (the `sched` extra: partitions are its decisions)
    _NO_SCHED = None
except ImportError:
    _NO_SCHED = "needs pygpukit[sched] (pygpukit-sched is not installed)"

# Marked, not skipped at import: the skip-to-fail rule sees these tests (`gpu` on a GPU machine,
# `sched` in CI); ci/gpu-check deselects `sched` in its driver-only venv, which lacks the extra.
pytestmark = [pytest.mark.sched, pytest.mark.skipif(_NO_SCHED is not None, reason=_NO_SCHED or "")]

MiB = 1 << 20
TOTAL = 64 * MiB


@pytest.fixture
def parts(backend: str) -> Iterator[str]:
    """A device whose partitions divide 64 MiB; every partition is deleted afterwards."""
    gp.configure_partitions(TOTAL)
    yield backend
    gp.synchronize()
    for p in gp.list_partitions():
        gp.delete_partition(p, force=True)


@pytest.fixture
def cuda_parts(cuda_backend: None) -> Iterator[str]:
    """``parts`` on the CUDA backend only (the GPU tests; they fail if skipped on a GPU)."""
    from pygpukit import _backend

    gp.configure_partitions(TOTAL)
    yield "cuda"
    gp.synchronize()
    for p in gp.list_partitions():
        gp.delete_partition(p, force=True)
    _backend._reset_for_tests()


@pytest.fixture
def cpu_parts(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``parts`` on the CPU simulation only (tests with a fake driver)."""
    from pygpukit import _backend

    monkeypatch.setenv(_backend.ENV_BACKEND, "cpu")
    _backend._reset_for_tests()
    gp.configure_partitions(TOTAL)
    yield "cpu"
    for p in gp.list_partitions():
        gp.delete_partition(p, force=True)
    _backend._reset_for_tests()


def _f32(nbytes: int) -> gp.GPUArray:
    return gp.zeros((nbytes // 4,), dtype="float32")


def test_charge_and_return(parts: str) -> None:
    base = gp.memory_stats()
    g = gp.create_partition("inference", memory=16 * MiB, qos="guaranteed", priority=1)
    assert (g.tier, g.memory_limit, g.memory_request) == ("guaranteed", 16 * MiB, 16 * MiB)
    with gp.partition("inference") as p:
        assert p is g and gp.current_partition() is g
        a = _f32(MiB)
        assert gp.current_stream() is g.stream
    assert gp.current_partition() is None
    s = g.memory_stats()
    assert (s["usage_bytes"], s["allocated_bytes"], s["cached_bytes"]) == (MiB, MiB, 0)
    assert s["num_allocs"] == 1 and s["limit_bytes"] == 16 * MiB
    del a
    s = g.memory_stats()
    assert (s["usage_bytes"], s["allocated_bytes"], s["cached_bytes"]) == (MiB, 0, MiB)
    hits = gp.memory_stats()["num_cache_hits"]
    with g:
        b = _f32(MiB)  # reuses the partition's cached block: no new charge
    assert gp.memory_stats()["num_cache_hits"] == hits + 1
    assert g.memory_stats()["usage_bytes"] == MiB
    del b
    assert g.empty_cache() == MiB
    assert g.memory_stats()["usage_bytes"] == 0
    after = gp.memory_stats()
    for key in ("allocated_bytes", "reserved_bytes", "active_bytes"):
        assert after[key] == base[key], key


def test_unpartitioned_allocations_are_not_charged(parts: str) -> None:
    g = gp.create_partition("g", memory=8 * MiB)
    x = _f32(4 * MiB)
    with g:
        y = _f32(MiB)
    assert g.memory_stats()["usage_bytes"] == MiB
    del x, y


def test_over_quota_error_names_everything(parts: str) -> None:
    p = gp.create_partition("small", memory=4 * MiB, qos="burstable")
    assert p.tier == "burstable" and p.memory_request == 0
    with p:
        a = _f32(2 * MiB)
        with pytest.raises(gp.PartitionMemoryError) as info:
            _f32(4 * MiB)
    err = info.value
    assert isinstance(err, gp.OutOfMemoryError) and isinstance(err, MemoryError)
    msg = str(err)
    assert '"small"' in msg and "quota 4194304 bytes" in msg and "usage 2097152 bytes" in msg
    assert "allocate 4194304 bytes" in msg
    assert (err.partition, err.quota, err.usage, err.requested) == ("small", 4 * MiB, 2 * MiB,
                                                                   4 * MiB)
    s = p.memory_stats()
    assert s["usage_bytes"] == 2 * MiB and s["num_ooms"] == 1 and s["allocated_bytes"] == 2 * MiB
    del a
    with p:  # its own cached 2 MiB goes back to the device to make room
        b = _f32(4 * MiB)
    s = p.memory_stats()
    assert s["usage_bytes"] == 4 * MiB and s["reclaimed_bytes"] == 2 * MiB
    del b


def test_best_effort_cannot_use_a_guaranteed_reservation(parts: str) -> None:
    g = gp.create_partition("g", memory=48 * MiB, qos="guaranteed")
    be = gp.create_partition("be", qos="best_effort")
    with be:
        x = _f32(16 * MiB)
        with pytest.raises(gp.PartitionMemoryError, match=r'"be".*48 MiB|reserved by other'):
            _f32(2 * MiB)
    with g:
        y = _f32(48 * MiB)  # the reservation is there whatever the others did
    assert g.memory_stats()["usage_bytes"] == 48 * MiB
    with pytest.raises(gp.PartitionMemoryError, match="cannot reserve"):
        gp.create_partition("g2", memory=8 * MiB, qos="guaranteed")
    del x, y


def test_cache_reclaim_follows_qos_eviction_order(parts: str) -> None:
    b1 = gp.create_partition("b1", qos="best_effort", priority=0)
    b2 = gp.create_partition("b2", qos="best_effort", priority=5)
    r = gp.create_partition("r", memory_request=8 * MiB, memory=TOTAL)
    g = gp.create_partition("g", memory=8 * MiB, qos="guaranteed")
    assert r.tier == "burstable"
    for p in (b1, b2, g):
        with p:
            a = _f32(8 * MiB)
        del a
    assert [p.memory_stats()["cached_bytes"] for p in (b1, b2, g)] == [8 * MiB] * 3
    # free: 64 - 8 (r's request) - 8 (g) - 16 (caches of b1, b2) = 32 MiB; r needs 40 more.
    with r:
        big = _f32(48 * MiB)
    # b1 (lower priority) goes first; one victim is enough; g's cache is never touched.
    assert b1.memory_stats()["cached_bytes"] == 0 and b1.memory_stats()["reclaimed_bytes"] > 0
    assert b2.memory_stats()["cached_bytes"] == 8 * MiB
    assert g.memory_stats()["cached_bytes"] == 8 * MiB
    del big
    # A BestEffort request cannot reclaim a Burstable's cache (never for a lower tier).
    with b1, pytest.raises(gp.PartitionMemoryError):
        _f32(24 * MiB)
    assert r.memory_stats()["cached_bytes"] == 48 * MiB
    assert g.memory_stats()["cached_bytes"] == 8 * MiB


def test_nested_scopes_and_explicit_stream(parts: str) -> None:
    a = gp.create_partition("a", memory=8 * MiB)
    b = gp.create_partition("b", memory=8 * MiB)
    default = gp.current_stream()
    mine = gp.Stream()
    with a:
        x = _f32(MiB)
        with gp.partition("b"):
            assert gp.current_partition() is b and gp.current_stream() is b.stream
            y = _f32(2 * MiB)
        assert gp.current_partition() is a and gp.current_stream() is a.stream
        with gp.partition(b, stream=mine):
            assert gp.current_stream() is mine
            z = _f32(MiB)
    assert gp.current_stream() is default and gp.current_partition() is None
    assert a.memory_stats()["usage_bytes"] == MiB
    assert b.memory_stats()["usage_bytes"] == 3 * MiB
    np.testing.assert_array_equal((x + 1).to_numpy()[:3], [1, 1, 1])
    del x, y, z


def test_scopes_are_per_thread(parts: str) -> None:
    parts_ = [gp.create_partition(f"t{i}", memory=16 * MiB) for i in range(4)]
    errors: list[BaseException] = []
    keep: list[list[gp.GPUArray]] = [[] for _ in parts_]
    start = threading.Barrier(len(parts_))

    def work(i: int) -> None:
        try:
            start.wait()
            with parts_[i]:
                for _ in range(i + 1):
                    keep[i].append(_f32(MiB))
                    time.sleep(0.001)
                    assert gp.current_partition() is parts_[i]
            keep[i].append(_f32(MiB))  # outside: not charged
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(parts_))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert [p.memory_stats()["usage_bytes"] for p in parts_] == [(i + 1) * MiB for i in range(4)]


def test_tasks_are_admitted_before_they_run(parts: str) -> None:
    p = gp.create_partition("jobs", memory=8 * MiB)
    order: list[str] = []
    with p.task(memory=6 * MiB) as t1:
        assert gp.current_partition() is p and t1.id.startswith("jobs/")
        with pytest.raises(gp.AdmissionError) as info, \
                gp.task(4 * MiB, partition="jobs", timeout=0.05):
            pass  # pragma: no cover
        assert info.value.reason == "timeout"

        def waiter() -> None:
            with p.task(memory=4 * MiB):
                order.append("second")

        th = threading.Thread(target=waiter)
        th.start()
        time.sleep(0.05)
        order.append("first done")
    th.join(5)
    assert order == ["first done", "second"]
    with pytest.raises(gp.AdmissionError) as info, p.task(memory=16 * MiB):
        pass  # pragma: no cover
    assert info.value.reason and "exceeds" in info.value.reason
    assert p.submit(lambda a, b: a + b, 2, 3, memory=MiB) == 5
    with pytest.raises(ZeroDivisionError):
        p.submit(lambda: 1 // 0)
    with p.task(memory=8 * MiB):  # the failed task gave its reservation back
        pass
    with pytest.raises(RuntimeError, match="partition"):
        gp.task(MiB)


def test_create_list_delete_and_validation(parts: str) -> None:
    a = gp.create_partition("a", memory=4 * MiB, compute=0.6)
    with pytest.raises(ValueError, match="already exists"):
        gp.create_partition("a")
    with pytest.raises(ValueError, match="does not match"):
        gp.create_partition("x", memory=4 * MiB, qos="best_effort")
    with pytest.raises(ValueError, match="does not match"):
        gp.create_partition("x", qos="guaranteed")
    with pytest.raises(ValueError, match="compute"):
        gp.create_partition("x", compute=0.5)
    with pytest.raises(ValueError, match="qos"):
        gp.create_partition("x", qos="gold")
    b = gp.create_partition("b", compute=0.4)
    assert b.tier == "best_effort"
    assert [p.name for p in gp.list_partitions()] == ["a", "b"]
    assert gp.get_partition("a") is a
    if parts == "cpu":
        assert a.compute_mode == "none" and "CPU" in a.compute_note
    with a:
        x = _f32(MiB)
    with pytest.raises(RuntimeError, match="live arrays"):
        gp.delete_partition("a")
    del x
    gp.delete_partition("a")
    assert [p.name for p in gp.list_partitions()] == ["b"]
    with pytest.raises(KeyError):
        gp.get_partition("a")
    with pytest.raises(RuntimeError, match="deleted"), a:
        pass  # pragma: no cover
    gp.create_partition("a2", memory=4 * MiB, compute=0.6)  # its share is free again
    with pytest.raises(RuntimeError, match="already has partitions"):
        gp.configure_partitions(TOTAL)


def test_force_delete_keeps_arrays_valid(parts: str) -> None:
    p = gp.create_partition("p", memory=4 * MiB)
    with p:
        x = gp.arange(10, dtype="float32")
    gp.delete_partition(p, force=True)
    np.testing.assert_array_equal((x * 2).to_numpy(), np.arange(10, dtype=np.float32) * 2)
    del x
    gp.create_partition("p", memory=4 * MiB)


def test_ops_inside_a_partition(parts: str) -> None:
    p = gp.create_partition("ops", memory=16 * MiB, compute=0.5, qos="guaranteed")
    a = np.arange(1000, dtype=np.float32)
    with p:
        x = gp.from_numpy(a)
        y = gp.sin(x) + x * 2
        z = (y - x).sum()
    np.testing.assert_allclose(y.to_numpy(), np.sin(a) + a * 2, rtol=1e-5, atol=1e-4)
    assert abs(float(z.item()) - float((np.sin(a) + a).sum())) < 1.0


def test_import_does_not_load_the_scheduler() -> None:
    code = "import sys, pygpukit; print('pygpukit_sched' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


# -- GPU only -----------------------------------------------------------------------------------
@pytest.mark.gpu
def test_partition_streams_carry_the_qos_priority(cuda_parts: str) -> None:
    least, greatest = gp.stream_priority_range()
    g = gp.create_partition("g", memory=8 * MiB, qos="guaranteed")
    b = gp.create_partition("b", memory_request=MiB, memory=8 * MiB)
    e = gp.create_partition("e")
    assert g.stream.priority == max(greatest, -2) < e.stream.priority == least
    assert g.stream.priority <= b.stream.priority <= e.stream.priority
    for p in (g, b, e):
        assert p.compute_mode == "priority"
        assert p.stream.handle != 0
        s2 = p.new_stream()
        assert s2.priority == p.stream_priority and s2.handle != p.stream.handle


@pytest.mark.gpu
def test_green_context_partitions_run_our_kernels(cuda_parts: str) -> None:
    import pygpukit_driver as drv

    if not drv.green_contexts_supported():
        pytest.skip("the driver has no green contexts")
    total_sms = drv.Device(0).multiprocessor_count
    a = gp.create_partition("a", memory=32 * MiB, qos="guaranteed", compute=0.7)
    b = gp.create_partition("b", compute=0.3)
    # The shares reach 1: the SM layout is made at creation, before any stream is used.
    assert a.compute_mode == b.compute_mode == "green_context", (a.compute_note, b.compute_note)
    assert a.sm_count is not None and b.sm_count is not None
    assert a.sm_count + b.sm_count <= total_sms and a.sm_count > b.sm_count
    host = np.linspace(-3, 3, 1 << 20, dtype=np.float32)
    for p in (a, b):
        with p:
            x = gp.from_numpy(host)
            y = gp.exp(x) * 2 - x
            s = y.sum()
        np.testing.assert_allclose(y.to_numpy(), np.exp(host) * 2 - host, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(float(s.item()), float((np.exp(host) * 2 - host).sum()),
                                   rtol=1e-3)


@pytest.mark.gpu
def test_pacing_fallback_without_green_contexts(cuda_parts: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from pygpukit import _partition

    monkeypatch.setenv(_partition.ENV_GREEN, "0")
    p = gp.create_partition("slow", compute=0.1)
    assert p.compute_mode == "pending" and p.sm_count is None  # shares below 1: not laid out
    p.stream  # noqa: B018 (the compute mode is settled at the first stream use)
    assert p.compute_mode == "priority+pacing" and "disabled" in p.compute_note
    x = gp.ones((1 << 22,), dtype="float32")
    with p:
        for _ in range(50):
            x = x * 1.0001
    np.testing.assert_allclose(x.to_numpy()[:4], np.float32(1.0001) ** 50, rtol=1e-4)
    assert p._pacers and p._pacers[0].waited_ns >= 0


class _FakeSms:
    """An SM resource of a fake driver: splits only the device's resource (as driver 580)."""

    min_partition_size = 8
    coscheduled_alignment = 8

    def __init__(self, count: int, device: bool = False) -> None:
        self.sm_count, self.device = count, device

    def split(self, groups: int, min_sm_count: int) -> tuple[list[_FakeSms], _FakeSms]:
        if not self.device or groups * min_sm_count > self.sm_count:
            raise RuntimeError("CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION")
        return ([_FakeSms(min_sm_count) for _ in range(groups)],
                _FakeSms(self.sm_count - groups * min_sm_count))


@pytest.mark.parametrize(("shares", "expected"), [
    ((0.7, 0.3), {"a": 92, "b": 40}),  # the smaller share splits off, the larger gets the rest
    ((0.25, 0.25, 0.5), {"a": 32, "b": 32, "c": 68}),
    ((0.5,), {"a": 64}),
    ((0.1, 0.2, 0.7), {"a": 16, "c": 116}),      # a third size cannot be split off: pacing
])
def test_sm_layout_with_a_fake_driver(cpu_parts: str, monkeypatch: pytest.MonkeyPatch,
                                      shares: tuple[float, ...],
                                      expected: dict[str, int]) -> None:
    import pygpukit_driver as drv
    from pygpukit import _partition

    monkeypatch.setattr(drv, "green_contexts_supported", lambda: True)
    monkeypatch.setattr(drv, "device_sm_resource", lambda index: _FakeSms(132, device=True))
    monkeypatch.setattr(drv, "GreenContext", lambda resource: ("green", resource.sm_count))
    made = [gp.create_partition(n, compute=s) for n, s in zip("abc", shares, strict=False)]
    for p in made:
        p._sm_pending = True
    state = made[0]._state
    assert _partition._sm_layout(state) == ""
    got = {p.name: p.sm_count for p in made if p.sm_count}
    assert got == expected
    for p in made:
        assert p._sm_pending is False
        assert (p.compute_mode == "priority+pacing") == (p.name not in expected)
    gp.delete_partition("a")
    late = gp.create_partition("late", compute=shares[0])
    late._sm_pending = True
    _partition._sm_layout(state)
    assert late.sm_count == expected["a"]  # the freed group is given again


def _fake_green_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU runtime seen as a GPU with green contexts (132 SMs, granule 8)."""
    import pygpukit._cpu_backend as cpu
    import pygpukit_driver as drv

    monkeypatch.setattr(drv, "green_contexts_supported", lambda: True)
    monkeypatch.setattr(drv, "device_sm_resource", lambda index: _FakeSms(132, device=True))
    monkeypatch.setattr(drv, "GreenContext", lambda resource: ("green", resource.sm_count))
    monkeypatch.setattr(cpu, "CpuRuntime", type("NotTheCpuRuntime", (), {}))


def test_compute_mode_is_pending_until_the_layout(cpu_parts: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_green_driver(monkeypatch)
    a = gp.create_partition("a", compute=0.3)
    assert (a.compute_mode, a.sm_count, a.compute_note) == ("pending", None, "")
    assert "mode=pending" in repr(a)
    b = gp.create_partition("b", compute=0.7)  # the shares reach 1: laid out at creation
    assert (a.compute_mode, a.sm_count) == ("green_context", 40)
    assert (b.compute_mode, b.sm_count) == ("green_context", 92)
    assert not a._sm_pending and not b._sm_pending


def test_layout_failure_at_creation_falls_back_to_pacing(cpu_parts: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_green_driver(monkeypatch)
    import pygpukit_driver as drv

    def refuse(index: int) -> _FakeSms:
        raise RuntimeError("CUDA_ERROR_NOT_SUPPORTED")

    monkeypatch.setattr(drv, "device_sm_resource", refuse)
    a = gp.create_partition("a", compute=0.5)
    assert a.compute_mode == "pending"
    b = gp.create_partition("b", compute=0.5)
    for p in (a, b):
        assert p.compute_mode == "priority+pacing" and "SM split failed" in p.compute_note
        assert p.sm_count is None


def test_a_new_layout_once_no_partition_holds_sms(cpu_parts: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_green_driver(monkeypatch)
    from pygpukit import _partition

    one = gp.create_partition("one", compute=0.125)
    with one._state.lock:
        _partition._settle_sms(one._state)  # as at the first use of its stream
    assert (one.compute_mode, one.sm_count) == ("green_context", 16)
    gp.delete_partition(one)
    # The old layout (16 + a rest of 116) binds nobody now: 70/30 is split afresh.
    a = gp.create_partition("a", compute=0.7)
    b = gp.create_partition("b", compute=0.3)
    assert (a.sm_count, b.sm_count) == (92, 40)
    # While "a" and "b" hold groups, a later share gets only a free group near it.
    gp.delete_partition(b)
    c = gp.create_partition("c", compute=0.25)
    with c._state.lock:
        _partition._settle_sms(c._state)
    assert (c.compute_mode, c.sm_count) == ("green_context", 40)  # b's 40 (want 32, ±8)
