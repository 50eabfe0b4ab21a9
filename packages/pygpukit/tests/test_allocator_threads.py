"""The caching allocator under threads: its lock covers bookkeeping only, memory comes back.

Two kinds of tests: with a fake raw allocator (driver calls logged, each checking from another
thread that the allocator's lock is free), and on the real backends (8 threads, each with its
own stream, allocating, checking and freeing arrays, under no limit, a limit and partition
quotas; the memory statistics end where they started).
"""

from __future__ import annotations

import gc
import queue
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import pygpukit as gp
from pygpukit._allocator import Block, CachingAllocator, size_class

MiB = 1 << 20
THREADS = 8


# -- a fake driver ------------------------------------------------------------------------------
class OwnedLock:
    """The allocator's lock, knowing which thread holds it.

    "Is the lock held?" asked from another thread is ambiguous with several threads at work
    (a worker may hold it legitimately while the caller does not): ask about the caller.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.owner: int | None = None

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self._lock.acquire(blocking, timeout)
        if got:
            self.owner = threading.get_ident()
        return got

    def release(self) -> None:
        self.owner = None
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def held_by_caller(self) -> bool:
        return self.owner == threading.get_ident()


def held_by_caller(allocator: CachingAllocator) -> bool:
    """Whether the calling thread holds ``allocator``'s lock."""
    lock: Any = allocator._lock  # an OwnedLock: make() puts it there
    return bool(lock.held_by_caller())


class Log:
    """The driver calls made, in order, and those made with the allocator's lock held."""

    def __init__(self) -> None:
        self.allocator: CachingAllocator | None = None
        self.calls: list[str] = []
        self.locked: list[str] = []

    def call(self, what: str) -> None:
        self.calls.append(what)
        assert self.allocator is not None
        if held_by_caller(self.allocator):
            self.locked.append(what)


class FakeStream:
    def __init__(self, log: Log, name: str) -> None:
        self.log, self.name, self.handle = log, name, 0
        self.syncs = 0

    def synchronize(self) -> None:
        self.syncs += 1
        self.log.call(f"sync {self.name}")


class FakeEvent:
    """Not completed until synchronized (its block stays pending)."""

    def __init__(self, log: Log, stream: FakeStream) -> None:
        self.log, self.stream, self.done = log, stream, False

    def query(self) -> bool:
        return self.done

    def synchronize(self) -> None:
        self.log.call(f"event {self.stream.name}")
        self.done = True


class FakeRaw:
    """A device of ``capacity`` bytes; MemoryError beyond it.  Tracks the peak in use."""

    def __init__(self, log: Log, capacity: int = 1 << 40) -> None:
        self.log, self.capacity = log, capacity
        self.used = self.peak = 0
        self.live: dict[int, int] = {}
        self.next_address = 1 << 32
        self.fail_with: BaseException | None = None
        self.guard = threading.Lock()  # the fake's own state, for the threaded tests

    def alloc(self, nbytes: int) -> tuple[int, Any]:
        self.log.call(f"alloc {nbytes}")
        if self.fail_with is not None:
            raise self.fail_with
        with self.guard:
            if self.used + nbytes > self.capacity:
                raise MemoryError("fake device: out of memory")
            address = self.next_address
            self.next_address += nbytes
            self.used += nbytes
            self.peak = max(self.peak, self.used)
            self.live[address] = nbytes
        return address, None

    def free(self, address: int, payload: Any) -> None:
        self.log.call(f"free {self.live[address]}")
        with self.guard:
            self.used -= self.live.pop(address)

    def record_event(self, stream: Any) -> FakeEvent:
        return FakeEvent(self.log, stream)


class FakeCharger:
    """Per-owner quotas, as :mod:`pygpukit._partition` charges (reclaim of the owner only)."""

    def __init__(self, allocator: CachingAllocator, quota: dict[str, int]) -> None:
        self.allocator, self.quota = allocator, quota
        self.charged = dict.fromkeys(quota, 0)
        self.live = dict.fromkeys(quota, 0)
        self.current: str | None = None
        self.unlocked_calls = 0
        self.reclaimed = 0

    def _check_locked(self) -> None:
        if not held_by_caller(self.allocator):
            self.unlocked_calls += 1

    def owner(self) -> str | None:
        return self.current

    def charge(self, owner: str, size: int, reclaim: Callable[[Any, int], int]) -> None:
        self._check_locked()
        if self.charged[owner] + size > self.quota[owner]:
            self.reclaimed += reclaim(owner, size)
            if self.charged[owner] + size > self.quota[owner]:
                raise MemoryError(f"{owner}: over quota")
        self.charged[owner] += size

    def uncharge(self, owner: str, size: int) -> None:
        self._check_locked()
        self.charged[owner] -= size
        assert self.charged[owner] >= 0

    def allocated(self, owner: str, size: int) -> None:
        self.live[owner] += size

    def freed(self, owner: str, size: int) -> None:
        self.live[owner] -= size

    def can_charge(self, owner: str) -> bool:
        return True

    def track(self, owner: str, block: Any) -> None:
        """Spill bookkeeping: nothing here (called without the lock)."""


def make(capacity: int = 1 << 40) -> tuple[CachingAllocator, FakeRaw, Log]:
    log = Log()
    raw = FakeRaw(log, capacity)
    allocator = CachingAllocator(raw, lambda: "fake:0")
    lock = OwnedLock()
    allocator._lock = lock  # type: ignore[assignment]
    allocator._freed = threading.Condition(lock)  # type: ignore[arg-type]
    log.allocator = allocator
    return allocator, raw, log


def settled(allocator: CachingAllocator) -> None:
    """No reservation in flight, no free in progress."""
    assert allocator._inflight == 0 and allocator._freeing == 0


# -- the lock is not held across driver calls ---------------------------------------------------
def test_driver_calls_are_made_without_the_lock() -> None:
    allocator, raw, log = make(capacity=8 * MiB)
    s1, s2 = FakeStream(log, "s1"), FakeStream(log, "s2")
    a = allocator.malloc(2 * MiB, s1)
    b = allocator.malloc(2 * MiB, s2)
    c = allocator.malloc(2 * MiB, s1)
    c.record_stream(s2)  # used on s2 too: pending on an event when freed
    assert log.calls == ["alloc 2097152"] * 3
    del a, b, c
    log.calls.clear()

    # 6 MiB in the cache or pending, 4 MiB asked: the device refuses, everything goes back
    # (streams and the event waited for, blocks freed), then the retry succeeds.
    d = allocator.malloc(4 * MiB, s1)
    assert log.calls[0] == "alloc 4194304" and log.calls[-1] == "alloc 4194304"
    middle = log.calls[1:-1]
    assert sorted(middle) == sorted(["sync s1", "sync s2", "event s2"] + ["free 2097152"] * 3)
    assert all(m.startswith(("sync", "event")) for m in middle[:3])  # waits before frees
    assert raw.used == 4 * MiB
    stats = allocator.stats()
    assert (stats["reserved_bytes"], stats["allocated_bytes"], stats["active_bytes"]) == (
        4 * MiB, 4 * MiB, 4 * MiB)
    assert (stats["num_alloc_retries"], stats["num_device_frees"], stats["num_ooms"]) == (1, 3, 0)

    # A lower limit, empty_cache and a cache miss: each driver call without the lock.
    del d
    allocator.set_limit(MiB)
    assert log.calls[-2:] == ["sync s1", "free 4194304"]
    allocator.set_limit(None)
    e = allocator.malloc(3 * MiB, s2)
    del e
    assert allocator.empty_cache() == 4 * MiB
    assert log.calls[-2:] == ["sync s2", "free 4194304"]
    assert log.locked == []
    assert raw.used == 0 and allocator.stats()["reserved_bytes"] == 0
    settled(allocator)


def test_reclaim_frees_after_the_lock_and_before_the_allocation() -> None:
    allocator, raw, log = make()
    charger = FakeCharger(allocator, {"A": 6 * MiB, "B": 3 * MiB})
    allocator.charger = charger
    s1, s2 = FakeStream(log, "s1"), FakeStream(log, "s2")

    charger.current = "A"
    x = allocator.malloc(4 * MiB, s1)
    del x  # cached, still charged to A
    assert charger.charged["A"] == 4 * MiB
    log.calls.clear()
    y = allocator.malloc(4 * MiB, s2)  # 8 > 6 MiB: A's cached block is reclaimed first
    assert log.calls == ["sync s1", "free 4194304", "alloc 4194304"]
    assert charger.reclaimed == 4 * MiB and charger.charged["A"] == 4 * MiB
    assert allocator.owned_blocks("A") == 1

    # A charge that fails even after reclaim: the reclaimed block still goes back, nothing
    # else changes.
    charger.current = "B"
    z = allocator.malloc(2 * MiB, s1)
    del z
    before = allocator.stats()
    log.calls.clear()
    with pytest.raises(MemoryError, match="B: over quota"):
        allocator.malloc(4 * MiB, s2)
    assert log.calls == ["sync s1", "free 2097152"]
    after = allocator.stats()
    assert after["reserved_bytes"] == before["reserved_bytes"] - 2 * MiB
    assert after["allocated_bytes"] == before["allocated_bytes"] == 4 * MiB
    assert charger.charged == {"A": 4 * MiB, "B": 0}

    # A cache hit that moves a block to another owner may reclaim too.
    charger.current = None
    del y
    charger.current = "B"
    w = allocator.malloc(2 * MiB, s1)  # B: 2 MiB
    charger.current = "A"
    del w
    log.calls.clear()
    v = allocator.malloc(4 * MiB, s2)  # A's cached block: a hit, no charge change
    assert log.calls == [] and charger.charged == {"A": 4 * MiB, "B": 2 * MiB}

    # release_cached gives an owner's cache back without the lock.
    assert allocator.release_cached("B") == 2 * MiB
    assert log.calls == ["sync s1", "free 2097152"]
    del v
    assert allocator.release_cached("A") == 4 * MiB
    assert charger.charged == {"A": 0, "B": 0} and charger.live == {"A": 0, "B": 0}
    assert log.locked == [] and charger.unlocked_calls == 0
    assert raw.used == 0 and allocator.stats()["reserved_bytes"] == 0
    settled(allocator)


@pytest.mark.parametrize("failure", ["memory", "other"])
def test_failed_allocations_restore_the_bookkeeping(failure: str) -> None:
    allocator, raw, log = make()
    charger = FakeCharger(allocator, {"A": 64 * MiB})
    allocator.charger = charger
    charger.current = "A"
    s1 = FakeStream(log, "s1")
    keep = allocator.malloc(MiB, s1)
    cached = allocator.malloc(2 * MiB, s1)
    del cached
    before = allocator.stats()
    raw.fail_with = MemoryError("no") if failure == "memory" else RuntimeError("driver broke")
    expected = gp.OutOfMemoryError if failure == "memory" else RuntimeError
    with pytest.raises(expected):
        allocator.malloc(8 * MiB, s1)
    after = allocator.stats()
    changed = {k for k in after if after[k] != before[k]}
    if failure == "memory":  # retried once, after giving the cache back; then out of memory
        assert log.calls[-4:] == ["alloc 8388608", "sync s1", "free 2097152", "alloc 8388608"]
        assert changed == {"num_alloc_retries", "num_ooms", "reserved_bytes",
                           "num_device_frees", "cached_bytes"}
        assert after["reserved_bytes"] == MiB and after["num_ooms"] == 1
        assert charger.charged["A"] == MiB
    else:
        assert changed == set()
        assert charger.charged["A"] == 3 * MiB
    assert after["allocated_bytes"] == MiB and charger.live["A"] == MiB
    settled(allocator)
    raw.fail_with = None
    del keep
    allocator.empty_cache()
    assert raw.used == 0 and charger.charged["A"] == 0 and log.locked == []


def test_a_slow_device_allocation_does_not_stall_cache_hits() -> None:
    allocator, raw, log = make()
    stream = FakeStream(log, "s")
    small = allocator.malloc(1000, stream)
    del small  # cached: the next 1000-byte request is a hit
    entered, release = threading.Event(), threading.Event()
    real_alloc = raw.alloc

    def slow_alloc(nbytes: int) -> tuple[int, Any]:
        entered.set()
        assert release.wait(30)
        return real_alloc(nbytes)

    raw.alloc = slow_alloc  # type: ignore[method-assign]
    big: list[Block] = []
    allocating = threading.Thread(target=lambda: big.append(allocator.malloc(64 * MiB, stream)))
    allocating.start()
    try:
        assert entered.wait(30)
        hit: list[Block] = []
        other = threading.Thread(target=lambda: hit.append(allocator.malloc(1000, stream)))
        other.start()
        other.join(10)
        assert not other.is_alive(), "a cache hit waited for another thread's cuMemAlloc"
        assert hit[0].size == 1024
        assert allocator.streams_with_cache() == set()  # diagnostics do not wait either
    finally:
        release.set()
        allocating.join(30)
    assert big[0].size == 64 * MiB
    assert allocator.stats()["allocated_bytes"] == 64 * MiB + 1024


def test_streams_with_cache_is_a_snapshot_under_the_lock() -> None:
    allocator, _raw, log = make()
    s1, s2 = FakeStream(log, "s1"), FakeStream(log, "s2")
    a, b = allocator.malloc(100, s1), allocator.malloc(100, s2)
    del a, b
    allocator.stats()  # drains the frees into the cache
    got: list[set[Any]] = []
    with allocator._lock:
        reader = threading.Thread(target=lambda: got.append(set(allocator.streams_with_cache())))
        reader.start()
        reader.join(0.2)
        assert reader.is_alive() and not got  # it waits for the lock
    reader.join(10)
    assert got == [{s1, s2}]
    snapshot = allocator.streams_with_cache()
    allocator.empty_cache()
    assert snapshot == {s1, s2} and allocator.streams_with_cache() == set()


def test_threads_under_a_limit_never_exceed_it() -> None:
    """8 threads, a limit well below their demand: the device never holds more than the limit
    (allocations in flight count, frees land before retried allocations); the end is clean."""
    allocator, raw, log = make(capacity=40 * MiB)
    limit = 24 * MiB
    allocator.set_limit(limit)
    streams = [FakeStream(log, f"s{i}") for i in range(4)]
    ooms = [0] * THREADS
    done = [0] * THREADS
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def work(i: int) -> None:
        rng = random.Random(i)
        held: list[Block] = []
        try:
            start.wait()
            for _ in range(400):
                nbytes = rng.choice([300, 5000, 200_000, 3 * MiB, 5 * MiB, 9 * MiB])
                try:
                    block = allocator.malloc(nbytes, rng.choice(streams))
                except gp.OutOfMemoryError as exc:
                    assert "limit" in str(exc)
                    ooms[i] += 1
                    held.clear()
                    continue
                assert block.size == size_class(nbytes)
                done[i] += 1
                held.append(block)
                if len(held) > 2:
                    held.pop(rng.randrange(len(held)))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    stats = allocator.stats()
    assert sum(done) > THREADS * 100 and sum(ooms) > 0
    assert stats["num_ooms"] == sum(ooms)
    assert stats["num_alloc_retries"] >= sum(ooms)
    assert stats["num_device_frees"] > 0
    assert raw.peak <= limit and stats["peak_reserved_bytes"] <= limit
    assert stats["allocated_bytes"] == stats["active_bytes"] == 0
    settled(allocator)
    allocator.empty_cache()
    stats = allocator.stats()
    assert stats["reserved_bytes"] == 0 and raw.used == 0 and not raw.live
    assert stats["num_device_allocs"] == stats["num_device_frees"]
    assert log.locked == []


# -- the real backends --------------------------------------------------------------------------
def _baseline() -> dict[str, int]:
    gc.collect()
    gp.synchronize()
    gp.empty_cache()
    return gp.memory_stats()


def _at_baseline(before: dict[str, int]) -> dict[str, int]:
    gc.collect()
    gp.synchronize()
    gp.empty_cache()
    after = gp.memory_stats()
    for key in ("allocated_bytes", "active_bytes", "reserved_bytes"):
        assert after[key] == before[key], (key, after[key], before[key])
    return after


def _run(work: Callable[[int], None]) -> float:
    """Run ``work(i)`` on 8 threads started together; re-raise the first failure."""
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def run(i: int) -> None:
        try:
            start.wait()
            work(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    return time.perf_counter() - t0


#: Elements of float32 arrays: small size classes, a 1 MiB class and > 1 MiB (2 MiB granules).
SIZES = [1, 3, 100, 1000, 5000, 60_000, 262_144, 300_000, 700_000]


Handoff = queue.SimpleQueue[tuple[gp.GPUArray, np.ndarray[Any, Any]]]


def test_threaded_stress_returns_to_baseline(backend: str) -> None:
    before = _baseline()
    iterations = 250
    # Thread i hands a third of its arrays to thread i + 1, which checks and frees them.
    inboxes: list[Handoff] = [queue.SimpleQueue() for _ in range(THREADS)]
    cross_frees = [0] * THREADS
    checked = [0] * THREADS

    def check(array: gp.GPUArray, expected: np.ndarray[Any, Any]) -> None:
        np.testing.assert_array_equal(array.to_numpy(), expected)

    def work(i: int) -> None:
        rng = np.random.default_rng(i)
        stream = gp.Stream()
        held: list[tuple[gp.GPUArray, np.ndarray[Any, Any]]] = []
        with stream:
            assert gp.current_stream() is stream
            for j in range(iterations):
                n = int(rng.choice(SIZES, p=[.15, .1, .15, .15, .15, .1, .07, .07, .06]))
                host = rng.standard_normal(n).astype(np.float32)
                a = gp.from_numpy(host)
                b = a * 2.0 + 1.0  # two more allocations, one freed at once
                expected = host * np.float32(2) + np.float32(1)
                if j % 3 == 0:
                    inboxes[(i + 1) % THREADS].put((b, expected))
                else:
                    held.append((b, expected))
                del a, b
                if len(held) > 4:
                    array, want = held.pop(int(rng.integers(len(held))))
                    check(array, want)
                    checked[i] += 1
                    del array
                for _ in range(2):
                    try:
                        array, want = inboxes[i].get_nowait()
                    except queue.Empty:
                        break
                    check(array, want)
                    checked[i] += 1
                    cross_frees[i] += 1
                    del array  # freed here, on another thread than the one that made it
            for array, want in held:
                check(array, want)
                checked[i] += 1
            held.clear()
        stream.synchronize()

    wall = _run(work)
    for inbox in inboxes:  # what the threads left: freed on the main thread
        while not inbox.empty():
            array, want = inbox.get()
            np.testing.assert_array_equal(array.to_numpy(), want)
            del array
    assert sum(cross_frees) > THREADS * 10 and sum(checked) > THREADS * iterations * 0.6
    after = _at_baseline(before)
    allocations = after["num_allocs"] - before["num_allocs"]
    assert allocations >= THREADS * iterations * 3  # thousands, from 8 threads
    assert after["num_frees"] - before["num_frees"] == allocations
    print(f"\n{backend}: {allocations} allocations from {THREADS} threads in {wall:.2f} s, "
          f"{sum(cross_frees)} freed by another worker thread")


def test_threads_under_a_memory_limit(backend: str) -> None:
    before = _baseline()
    limit = before["reserved_bytes"] + 24 * MiB
    gp.set_memory_limit(limit)
    gp.reset_peak_memory_stats()
    ooms = [0] * THREADS
    done = [0] * THREADS
    try:
        def work(i: int) -> None:
            rng = np.random.default_rng(100 + i)
            held: list[gp.GPUArray] = []
            with gp.Stream():
                for _ in range(40):
                    mib = float(rng.choice([0.25, 1.5, 3, 5, 7]))
                    host = rng.standard_normal(int(mib * MiB) // 4).astype(np.float32)
                    try:
                        a = gp.from_numpy(host)
                    except gp.OutOfMemoryError as exc:
                        assert "limit" in str(exc)
                        ooms[i] += 1
                        held.clear()
                        continue
                    np.testing.assert_array_equal(a.to_numpy(), host)
                    done[i] += 1
                    held.append(a)
                    del a
                    if len(held) > 2:
                        held.pop(0)

        wall = _run(work)
        stats = gp.memory_stats()
        assert sum(done) > 0 and sum(ooms) > 0, (done, ooms)
        assert stats["num_ooms"] - before["num_ooms"] == sum(ooms)  # each counted once
        assert stats["num_alloc_retries"] - before["num_alloc_retries"] >= sum(ooms)
        assert stats["peak_reserved_bytes"] <= limit
    finally:
        gp.set_memory_limit(None)
    _at_baseline(before)
    print(f"\n{backend}: {sum(done)} allocations, {sum(ooms)} out of memory in {wall:.2f} s")


@pytest.mark.sched  # partitions need the sched extra: the driver-only GPU venv deselects it
def test_threads_under_partition_quotas(backend: str) -> None:
    pytest.importorskip("pygpukit_sched")  # a skip the `sched` marker turns into a failure in CI
    before = _baseline()
    gp.configure_partitions(64 * MiB)
    parts = [gp.create_partition(f"t{k}", memory=12 * MiB, qos="burstable") for k in range(2)]
    ooms = [0] * THREADS
    done = [0] * THREADS
    try:
        def work(i: int) -> None:
            rng = np.random.default_rng(200 + i)
            part = parts[i % 2]
            held: list[gp.GPUArray] = []
            with part, gp.Stream():
                for _ in range(40):
                    mib = float(rng.choice([0.25, 1.5, 3, 5]))
                    host = rng.standard_normal(int(mib * MiB) // 4).astype(np.float32)
                    try:
                        a = gp.from_numpy(host)
                    except gp.PartitionMemoryError as exc:
                        assert exc.partition == part.name
                        ooms[i] += 1
                        held.clear()
                        continue
                    np.testing.assert_array_equal(a.to_numpy(), host)
                    done[i] += 1
                    held.append(a)
                    del a
                    if len(held) > 2:
                        held.pop(0)

        _run(work)
        assert sum(done) > 0 and sum(ooms) > 0, (done, ooms)
        gc.collect()
        for k, part in enumerate(parts):
            s = part.memory_stats()
            assert s["allocated_bytes"] == 0
            assert s["num_ooms"] == sum(ooms[k::2])
            assert s["usage_bytes"] <= 12 * MiB
            part.empty_cache()
            assert part.memory_stats()["usage_bytes"] == 0
    finally:
        gp.synchronize()
        for p in gp.list_partitions():
            gp.delete_partition(p, force=True)
    _at_baseline(before)
