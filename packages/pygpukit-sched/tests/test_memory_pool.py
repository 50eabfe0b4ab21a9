import random
import threading

import pytest

import pygpukit_sched as s

KIB = 1 << 10
MIB = 1 << 20


def test_readme_example() -> None:
    pool = s.MemoryPool(quota=100 * 1024 * 1024, enable_eviction=True)
    block = pool.allocate(4096)
    assert isinstance(block, int)
    pool.free(block)
    stats = pool.stats()
    assert (stats.used, stats.cached, stats.cached_blocks) == (0, 4096, 1)
    assert pool.take_evicted() == []


def test_constructor_and_properties() -> None:
    pool = s.MemoryPool(1234)
    assert pool.quota == 1234
    assert pool.enable_eviction is True
    assert s.MemoryPool(quota=5, enable_eviction=False).enable_eviction is False
    with pytest.raises(AttributeError):
        pool.quota = 1  # type: ignore[misc]
    with pytest.raises(OverflowError):
        s.MemoryPool(-1)
    with pytest.raises(TypeError):
        s.MemoryPool()  # type: ignore[call-arg]
    assert repr(pool) == "MemoryPool(quota=1234, enable_eviction=True, used=0, cached=0)"


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        (1, 512),
        (512, 512),
        (513, KIB),
        (4096, 4096),
        (4097, 8 * KIB),
        (MIB, MIB),
        (MIB + 1, 2 * MIB),
        (2 * MIB + 1, 4 * MIB),
        (5 * MIB, 6 * MIB),
    ],
)
def test_size_class(size: int, expected: int) -> None:
    assert s.MemoryPool.size_class(size) == expected
    assert s.MemoryPool(1).size_class(size) == expected


def test_size_class_errors() -> None:
    with pytest.raises(ValueError, match="size 0"):
        s.MemoryPool.size_class(0)
    with pytest.raises(OverflowError):
        s.MemoryPool.size_class(-1)
    with pytest.raises(OverflowError):
        s.MemoryPool.size_class(2**64 - 1)
    with pytest.raises(OverflowError):
        s.MemoryPool.size_class(2**64)


def test_allocate_errors() -> None:
    pool = s.MemoryPool(MIB)
    with pytest.raises(ValueError, match="size 0"):
        pool.allocate(0)
    with pytest.raises(OverflowError):
        pool.allocate(-5)
    with pytest.raises(TypeError):
        pool.allocate("4096")  # type: ignore[arg-type]
    assert pool.stats().allocations == 0


def test_ids_unique_and_cache_hit_reuses_same_id() -> None:
    pool = s.MemoryPool(MIB)
    ids = [pool.allocate(1000) for _ in range(3)]
    assert ids == [1, 2, 3]
    assert all(pool.block_size(i) == KIB for i in ids)
    for i in ids:
        pool.free(i)
    # Most recently freed first.
    assert pool.allocate(900) == 3
    assert pool.allocate(1024) == 2
    # Another class: a fresh id, never one used before.
    assert pool.allocate(100) == 4
    stats = pool.stats()
    assert (stats.cache_hits, stats.cache_misses, stats.allocations) == (2, 4, 6)
    assert pool.is_live(3) and not pool.is_live(1)


def test_free_errors() -> None:
    pool = s.MemoryPool(MIB)
    block = pool.allocate(10)
    pool.free(block)
    with pytest.raises(s.InvalidBlockError, match=f"block {block} ") as info:
        pool.free(block)
    assert info.value.block_id == block
    with pytest.raises(s.InvalidBlockError):
        pool.free(12345)
    with pytest.raises(ValueError):  # InvalidBlockError is a ValueError
        pool.free(0)
    with pytest.raises(OverflowError):
        pool.free(-1)
    with pytest.raises(s.InvalidBlockError):
        pool.block_size(999)
    assert pool.stats().frees == 1


def test_quota_exceeded_without_eviction() -> None:
    pool = s.MemoryPool(8 * KIB, enable_eviction=False)
    pool.allocate(4 * KIB)
    cached = pool.allocate(2 * KIB)
    pool.free(cached)
    with pytest.raises(s.QuotaExceededError) as info:
        pool.allocate(3 * KIB)
    err = info.value
    assert isinstance(err, MemoryError)
    assert (err.requested, err.class_size, err.used, err.cached, err.quota) == (
        3 * KIB,
        4 * KIB,
        4 * KIB,
        2 * KIB,
        8 * KIB,
    )
    for part in ("3072", "4096", "2048", "8192"):
        assert part in str(err)
    # Nothing changed, and a cache hit still works.
    assert pool.stats().cached_blocks == 1
    assert pool.allocate(2 * KIB) == cached


def test_lru_eviction_and_take_evicted() -> None:
    pool = s.MemoryPool(4 * KIB, enable_eviction=True)
    ids = [pool.allocate(KIB) for _ in range(4)]
    for i in (2, 0, 3, 1):
        pool.free(ids[i])
    big = pool.allocate(2 * KIB)  # a miss: evicts the two least recently freed
    assert big == 5
    assert pool.take_evicted() == [ids[2], ids[0]]
    assert pool.take_evicted() == []
    stats = pool.stats()
    assert (stats.evictions, stats.evicted_bytes) == (2, 2 * KIB)
    assert (stats.used, stats.cached, stats.active_blocks, stats.cached_blocks) == (
        2 * KIB,
        2 * KIB,
        1,
        2,
    )
    with pytest.raises(s.InvalidBlockError):
        pool.free(ids[2])


def test_failed_allocation_evicts_nothing() -> None:
    pool = s.MemoryPool(4 * KIB)
    pool.allocate(2 * KIB)
    spare = pool.allocate(KIB)
    pool.free(spare)
    with pytest.raises(s.QuotaExceededError):
        pool.allocate(4 * KIB)
    assert pool.take_evicted() == []
    assert pool.stats().evictions == 0


def test_clear_cache_and_evict_all() -> None:
    pool = s.MemoryPool(MIB, enable_eviction=False)
    a, b, c = pool.allocate(KIB), pool.allocate(8 * KIB), pool.allocate(KIB)
    pool.free(b)
    pool.free(a)
    assert pool.clear_cache() == 9 * KIB
    assert pool.take_evicted() == [b, a]
    assert pool.evict_all() == 0
    assert pool.is_live(c)
    assert pool.allocate(KIB) == 4


def test_stats_object() -> None:
    pool = s.MemoryPool(MIB)
    block = pool.allocate(64 * KIB)
    stats = pool.stats()
    assert isinstance(stats, s.PoolStats)
    fields = [
        "quota",
        "used",
        "cached",
        "peak_used",
        "allocations",
        "frees",
        "cache_hits",
        "cache_misses",
        "evictions",
        "evicted_bytes",
        "active_blocks",
        "cached_blocks",
    ]
    assert list(stats.to_dict()) == fields
    assert all(isinstance(getattr(stats, f), int) for f in fields)
    assert repr(stats).startswith("PoolStats(quota=1048576, used=65536, cached=0, peak_used=65536")
    with pytest.raises(AttributeError):
        stats.used = 0  # type: ignore[misc]
    # A snapshot: later calls do not change it; equal snapshots compare equal.
    pool.free(block)
    assert stats.used == 64 * KIB
    assert pool.stats() == pool.stats()
    assert hash(pool.stats()) == hash(pool.stats())
    assert pool.stats() != stats
    assert pool.stats().peak_used == 64 * KIB
    with pytest.raises(TypeError):
        s.PoolStats()


class _Model:
    """Reference model in plain Python (lists, linear scans)."""

    def __init__(self, quota: int, eviction: bool) -> None:
        self.quota, self.eviction = quota, eviction
        self.live: dict[int, int] = {}
        self.cached: list[tuple[int, int]] = []  # least recently freed first
        self.evicted: list[int] = []
        self.next_id = 1

    @staticmethod
    def size_class(n: int) -> int:
        if n <= MIB:
            c = 512
            while c < n:
                c *= 2
            return c
        return -(-n // (2 * MIB)) * (2 * MIB)

    def allocate(self, n: int) -> int | None:
        c = self.size_class(n)
        for pos in range(len(self.cached) - 1, -1, -1):
            if self.cached[pos][1] == c:
                block, _ = self.cached.pop(pos)
                self.live[block] = c
                return block
        used, cached = sum(self.live.values()), sum(x[1] for x in self.cached)
        if used + cached + c > self.quota:
            if not self.eviction or used + c > self.quota:
                return None
            while used + sum(x[1] for x in self.cached) + c > self.quota:
                self.evicted.append(self.cached.pop(0)[0])
        block = self.next_id
        self.next_id += 1
        self.live[block] = c
        return block

    def free(self, block: int) -> bool:
        if block not in self.live:
            return False
        self.cached.append((block, self.live.pop(block)))
        return True


@pytest.mark.parametrize("seed", range(20))
def test_random_ops_match_reference_model(seed: int) -> None:
    rng = random.Random(seed)
    quota = rng.choice([0, 4 * KIB, 64 * KIB, 3 * MIB, 16 * MIB])
    eviction = rng.random() < 0.7
    pool, model = s.MemoryPool(quota, eviction), _Model(quota, eviction)
    issued: list[int] = []
    for _ in range(300):
        r = rng.random()
        if r < 0.5:
            n = rng.choice([rng.randint(1, 4 * KIB), rng.randint(MIB - 8, 5 * MIB)])
            want = model.allocate(n)
            if want is None:
                with pytest.raises(s.QuotaExceededError):
                    pool.allocate(n)
            else:
                assert pool.allocate(n) == want
                issued.append(want)
        elif r < 0.9 and issued:
            block = rng.choice(issued)
            if model.free(block):
                pool.free(block)
            else:
                with pytest.raises(s.InvalidBlockError):
                    pool.free(block)
        elif r < 0.95:
            assert pool.take_evicted() == model.evicted
            model.evicted = []
        else:
            pool.clear_cache()
            model.evicted += [b for b, _ in model.cached]
            model.cached = []
        st = pool.stats()
        assert st.used == sum(model.live.values())
        assert st.cached == sum(c for _, c in model.cached)
        assert st.used + st.cached <= quota
        assert st.active_blocks == len(model.live)
        assert st.cached_blocks == len(model.cached)
        assert st.allocations == st.cache_hits + st.cache_misses


def test_shared_between_threads() -> None:
    pool = s.MemoryPool(512 * KIB, enable_eviction=True)
    errors: list[BaseException] = []
    allocated = [0] * 8

    def worker(t: int) -> None:
        rng = random.Random(t)
        mine: list[int] = []
        try:
            for _ in range(2000):
                if mine and rng.random() < 0.45:
                    pool.free(mine.pop(rng.randrange(len(mine))))
                else:
                    try:
                        mine.append(pool.allocate(rng.randint(1, 16 * KIB)))
                        allocated[t] += 1
                    except s.QuotaExceededError:
                        pass
            for block in mine:
                pool.free(block)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    st = pool.stats()
    assert st.allocations == sum(allocated) == st.frees
    assert (st.used, st.active_blocks) == (0, 0)
    evicted = pool.take_evicted()
    assert len(evicted) == len(set(evicted)) == st.evictions
    assert pool.clear_cache() == st.cached
