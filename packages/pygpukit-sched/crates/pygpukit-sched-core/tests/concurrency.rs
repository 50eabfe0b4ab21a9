//! Concurrency stress test of the thread-safe wrapper the bindings use.

use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::thread;

use pygpukit_sched_core::{BlockId, PoolError, SyncMemoryPool};

const THREADS: usize = 16;
const ITERS: usize = 5_000;

/// A tiny deterministic PRNG (xorshift), one per thread.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn many_threads_allocate_and_free() {
    // Small quota: plenty of quota failures and evictions under contention.
    let pool = Arc::new(SyncMemoryPool::new(256 * 1024, true));
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let pool = Arc::clone(&pool);
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                let mut rng = 0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1);
                let mut mine: Vec<BlockId> = Vec::new();
                let mut evicted = Vec::new();
                let (mut ok, mut failed) = (0u64, 0u64);
                barrier.wait();
                for _ in 0..ITERS {
                    let r = next(&mut rng);
                    if r % 3 != 0 || mine.is_empty() {
                        let size = 1 + next(&mut rng) % (16 * 1024);
                        match pool.allocate(size) {
                            Ok(id) => {
                                ok += 1;
                                mine.push(id);
                            }
                            Err(PoolError::QuotaExceeded { .. }) => failed += 1,
                            Err(e) => panic!("unexpected error {e}"),
                        }
                    } else {
                        let id = mine.swap_remove((r as usize / 3) % mine.len());
                        pool.free(id).expect("own live block");
                        // No second-free check here: another thread may already
                        // have been handed this (cached) block again.
                    }
                    if r % 64 == 0 {
                        evicted.extend(pool.take_evicted());
                    }
                    let s = pool.stats();
                    assert!(s.used + s.cached <= s.quota);
                }
                for id in mine.drain(..) {
                    pool.free(id).unwrap();
                }
                (ok, failed, evicted)
            })
        })
        .collect();

    let mut total_ok = 0;
    let mut evicted: Vec<BlockId> = Vec::new();
    for h in handles {
        let (ok, _failed, ev) = h.join().unwrap();
        total_ok += ok;
        evicted.extend(ev);
    }
    evicted.extend(pool.take_evicted());

    let s = pool.stats();
    assert_eq!(s.allocations, total_ok);
    assert_eq!(s.frees, total_ok, "every block was freed once");
    assert_eq!((s.used, s.active_blocks), (0, 0));
    assert_eq!(s.evictions as usize, evicted.len());
    let unique: HashSet<_> = evicted.iter().collect();
    assert_eq!(unique.len(), evicted.len(), "each eviction reported once");
    pool.with(|p| p.check_invariants()).unwrap();

    let released = pool.clear_cache();
    assert_eq!(released, s.cached);
    assert_eq!(pool.stats().cached, 0);
}
