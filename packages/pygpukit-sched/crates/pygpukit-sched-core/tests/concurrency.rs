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

/// Admission control and QoS shared by many threads: capacity is never
/// over-committed at any observed instant, and the books balance at the end.
#[test]
fn many_threads_admit_and_release() {
    use pygpukit_sched_core::{
        AdmissionController, AdmissionRequest, QosPolicyEvaluator, QosTaskMeta, Shared,
    };
    const CAP: u64 = 10_000;
    let ac = Arc::new(Shared::new(AdmissionController::new(CAP)));
    let qos = Arc::new(Shared::new(QosPolicyEvaluator::new(CAP, 1_000_000)));
    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (ac, qos, barrier) = (Arc::clone(&ac), Arc::clone(&qos), Arc::clone(&barrier));
            thread::spawn(move || {
                let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1);
                let mut mine: Vec<String> = Vec::new();
                let mut admitted = 0u64;
                barrier.wait();
                for i in 0..ITERS {
                    let r = next(&mut rng);
                    if r % 3 == 0 && !mine.is_empty() {
                        let id = mine.swap_remove((r as usize / 3) % mine.len());
                        assert!(ac.with(|a| a.release(&id)).is_some());
                        qos.with(|q| {
                            // Evicted tasks are gone already: ignore the error.
                            let _ = q.release(&id);
                        });
                    } else {
                        let id = format!("{t}-{i}");
                        let req = AdmissionRequest::new(id.clone(), r % 1500, (r % 5) as i32);
                        let (ok, reserved) =
                            ac.with(|a| (a.admit(&req).is_admitted(), a.reserved()));
                        assert!(reserved <= CAP);
                        if ok {
                            admitted += 1;
                            mine.push(id.clone());
                            let meta = match r % 3 {
                                0 => QosTaskMeta::guaranteed(id, "", 1 + r % 900, 0, 0).unwrap(),
                                1 => {
                                    QosTaskMeta::burstable(id, "", 1 + r % 500, 0, 0, 0, 0).unwrap()
                                }
                                _ => QosTaskMeta::best_effort(id, "", 0),
                            };
                            qos.with(|q| {
                                let tier = meta.tier();
                                let evicted: Vec<_> = q.admit(meta).evicted;
                                for v in evicted {
                                    let vt = q.task(&v).map(|t| t.meta.tier());
                                    assert!(vt.is_none() || vt < Some(tier));
                                }
                                q.check_invariants().unwrap();
                            });
                        }
                    }
                }
                for id in mine {
                    ac.with(|a| a.release(&id)).unwrap();
                }
                admitted
            })
        })
        .collect();
    let admitted: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let ac = Arc::try_unwrap(ac).unwrap().into_inner();
    ac.check_invariants().unwrap();
    let s = ac.stats();
    assert_eq!((s.reserved, s.active), (0, 0));
    assert_eq!(s.admitted, admitted);
    assert_eq!(s.released, admitted);
    assert_eq!(s.decisions, s.admitted + s.rejected);
    assert!(s.peak_reserved <= CAP);
    let qos = Arc::try_unwrap(qos).unwrap().into_inner();
    qos.check_invariants().unwrap();
}
