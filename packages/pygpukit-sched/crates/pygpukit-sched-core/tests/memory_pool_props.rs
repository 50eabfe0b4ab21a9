//! Property tests: random operation sequences run against `MemoryPool` and a
//! small, obviously-correct reference model; every result must agree.

use std::collections::BTreeMap;

use proptest::prelude::*;
use pygpukit_sched_core::{size_class, BlockId, MemoryPool, PoolError, PoolStats};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// The size-class rule, written independently of the crate's implementation.
fn model_class(size: u64) -> Option<u64> {
    if size == 0 {
        return None;
    }
    if size <= MIB {
        let mut class = 512;
        while class < size {
            class *= 2;
        }
        return Some(class);
    }
    let granules = size / (2 * MIB) + u64::from(size % (2 * MIB) != 0);
    granules.checked_mul(2 * MIB)
}

/// Reference model: linear scans over plain vectors.
#[derive(Debug, Default)]
struct Model {
    quota: u64,
    eviction: bool,
    live: BTreeMap<u64, u64>,
    /// Cached `(id, class)`, least recently freed first.
    cached: Vec<(u64, u64)>,
    evicted: Vec<u64>,
    next_id: u64,
    stats: PoolStats,
}

impl Model {
    fn new(quota: u64, eviction: bool) -> Self {
        Model {
            quota,
            eviction,
            next_id: 1,
            stats: PoolStats {
                quota,
                ..PoolStats::default()
            },
            ..Model::default()
        }
    }

    fn used(&self) -> u64 {
        self.live.values().sum()
    }

    fn cached_bytes(&self) -> u64 {
        self.cached.iter().map(|c| c.1).sum()
    }

    fn go_live(&mut self, id: u64, class: u64) {
        self.live.insert(id, class);
        self.stats.allocations += 1;
        self.stats.peak_used = self.stats.peak_used.max(self.used());
    }

    fn evict_oldest(&mut self) -> u64 {
        let (id, class) = self.cached.remove(0);
        self.evicted.push(id);
        self.stats.evictions += 1;
        self.stats.evicted_bytes += class;
        class
    }

    fn allocate(&mut self, size: u64) -> Result<u64, PoolError> {
        let class = match model_class(size) {
            None if size == 0 => return Err(PoolError::ZeroSize),
            None => return Err(PoolError::SizeTooLarge { requested: size }),
            Some(c) => c,
        };
        if let Some(pos) = self.cached.iter().rposition(|c| c.1 == class) {
            let (id, _) = self.cached.remove(pos);
            self.go_live(id, class);
            self.stats.cache_hits += 1;
            return Ok(id);
        }
        let (used, cached) = (self.used() as u128, self.cached_bytes() as u128);
        let quota = self.quota as u128;
        if used + cached + class as u128 > quota {
            if !self.eviction || used + class as u128 > quota {
                return Err(PoolError::QuotaExceeded {
                    requested: size,
                    class_size: class,
                    used: used as u64,
                    cached: cached as u64,
                    quota: self.quota,
                });
            }
            while (self.used() + self.cached_bytes()) as u128 + class as u128 > quota {
                self.evict_oldest();
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        self.go_live(id, class);
        self.stats.cache_misses += 1;
        Ok(id)
    }

    fn free(&mut self, id: u64) -> Result<u64, PoolError> {
        let class = self
            .live
            .remove(&id)
            .ok_or(PoolError::InvalidBlock(BlockId(id)))?;
        self.cached.push((id, class));
        self.stats.frees += 1;
        Ok(class)
    }

    fn clear_cache(&mut self) -> u64 {
        let mut released = 0;
        while !self.cached.is_empty() {
            released += self.evict_oldest();
        }
        released
    }

    fn stats(&self) -> PoolStats {
        PoolStats {
            used: self.used(),
            cached: self.cached_bytes(),
            active_blocks: self.live.len() as u64,
            cached_blocks: self.cached.len() as u64,
            ..self.stats
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Alloc(u64),
    /// Free the n-th id ever issued (modulo), or a never-issued id if none.
    Free(usize),
    FreeUnknown(u64),
    ClearCache,
    TakeEvicted,
}

fn size_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => 1u64..=4 * KIB,
        2 => prop::sample::select(vec![512, KIB, 2 * KIB, 8 * KIB, 64 * KIB]),
        1 => (MIB - 16)..=(5 * MIB),
        1 => Just(0u64),
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => size_strategy().prop_map(Op::Alloc),
        8 => any::<usize>().prop_map(Op::Free),
        1 => (1_000_000u64..2_000_000).prop_map(Op::FreeUnknown),
        1 => Just(Op::ClearCache),
        2 => Just(Op::TakeEvicted),
    ]
}

fn quota_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0u64), (1u64..=64 * KIB), (1u64..=16 * MIB),]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn pool_matches_reference_model(
        quota in quota_strategy(),
        eviction in any::<bool>(),
        ops in prop::collection::vec(op_strategy(), 1..200),
    ) {
        let mut pool = MemoryPool::new(quota, eviction);
        let mut model = Model::new(quota, eviction);
        let mut issued: Vec<u64> = Vec::new();
        let mut max_id = 0u64;
        for op in ops {
            match op {
                Op::Alloc(size) => {
                    let got = pool.allocate(size).map(BlockId::get);
                    let want = model.allocate(size);
                    prop_assert_eq!(&got, &want);
                    if let Ok(id) = got {
                        prop_assert_eq!(pool.block_size(BlockId(id)), size_class(size).ok());
                        if id > max_id {
                            // A fresh id: strictly increasing, so unique.
                            prop_assert!(!issued.contains(&id));
                            max_id = id;
                            issued.push(id);
                        } else {
                            // Reuse only of a block that was cached, same class.
                            prop_assert_eq!(pool.stats().cache_hits, model.stats.cache_hits);
                        }
                    }
                }
                Op::Free(n) => {
                    let id = if issued.is_empty() { n as u64 } else { issued[n % issued.len()] };
                    let got = pool.free(BlockId(id));
                    let want = model.free(id);
                    prop_assert_eq!(&got, &want);
                    // Freed (or unknown) ids are never accepted a second time.
                    prop_assert_eq!(pool.free(BlockId(id)), Err(PoolError::InvalidBlock(BlockId(id))));
                }
                Op::FreeUnknown(id) => {
                    prop_assert_eq!(pool.free(BlockId(id)), Err(PoolError::InvalidBlock(BlockId(id))));
                }
                Op::ClearCache => {
                    prop_assert_eq!(pool.clear_cache(), model.clear_cache());
                }
                Op::TakeEvicted => {
                    let got: Vec<u64> = pool.take_evicted().into_iter().map(BlockId::get).collect();
                    prop_assert_eq!(got, std::mem::take(&mut model.evicted));
                }
            }
            let stats = pool.stats();
            prop_assert_eq!(stats, model.stats());
            prop_assert!(stats.used + stats.cached <= quota);
            prop_assert_eq!(stats.allocations, stats.cache_hits + stats.cache_misses);
            // The LRU order of the cache is the model's free order.
            let lru: Vec<u64> = pool.cached_ids_lru().into_iter().map(BlockId::get).collect();
            let want_lru: Vec<u64> = model.cached.iter().map(|c| c.0).collect();
            prop_assert_eq!(lru, want_lru);
            if let Err(msg) = pool.check_invariants() {
                return Err(TestCaseError::fail(msg));
            }
        }
        // Every evicted id is reported once and is dead afterwards.
        let drained = pool.take_evicted();
        prop_assert_eq!(drained.len(), model.evicted.len());
        for id in drained {
            prop_assert!(!pool.is_live(id) && !pool.is_cached(id));
        }
    }

    #[test]
    fn size_class_rule(size in any::<u64>()) {
        prop_assert_eq!(size_class(size).ok(), model_class(size));
        if let Ok(class) = size_class(size) {
            prop_assert!(class >= size && class >= 512);
            prop_assert!(class <= 1 << 20 && class.is_power_of_two() || class % (2 << 20) == 0);
        }
    }

    #[test]
    fn eviction_frees_least_recently_freed_first(
        free_order in Just((0usize..8).collect::<Vec<_>>()).prop_shuffle(),
        need in 1usize..=8,
    ) {
        // 8 live 1 KiB blocks fill an 8 KiB quota; free them in a random order,
        // then ask for `need` KiB of a class none of them has.
        let mut pool = MemoryPool::new(8 * KIB + (16 * KIB), true);
        let filler = pool.allocate(16 * KIB).unwrap();
        let ids: Vec<BlockId> = (0..8).map(|_| pool.allocate(KIB).unwrap()).collect();
        pool.free(filler).unwrap();
        pool.clear_cache();
        pool.take_evicted();
        // Re-fill the freed 16 KiB so the quota is exactly full.
        let _hold = pool.allocate(16 * KIB).unwrap();
        for &i in &free_order {
            pool.free(ids[i]).unwrap();
        }
        let class = if need == 1 { 2 * KIB } else { (need as u64 * KIB).next_power_of_two() };
        let needed_blocks = class / KIB;
        pool.allocate(class).unwrap();
        let evicted = pool.take_evicted();
        let expected: Vec<BlockId> =
            free_order.iter().take(needed_blocks as usize).map(|&i| ids[i]).collect();
        prop_assert_eq!(evicted, expected);
    }
}
