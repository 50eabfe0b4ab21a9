//! Throughput of admission decisions (and of the other per-call operations the
//! enforcement layer makes). A `harness = false` bench: no extra dependencies,
//! prints one line per case and a rate; `cargo bench --no-run` compiles fast.
//!
//! Run: `cargo bench --manifest-path packages/pygpukit-sched/Cargo.toml -p pygpukit-sched-core`

use std::hint::black_box;
use std::time::Instant;

use pygpukit_sched_core::{
    AdmissionController, AdmissionRequest, KernelPacingEngine, MemoryPool, PartitionConfig,
    PartitionLimits, PartitionManager, QosPolicyEvaluator, QosTaskMeta, Shared,
};

fn report(name: &str, ops: u64, secs: f64) {
    println!(
        "{name:<44} {:>12.0} ops/s  ({:>7.1} ns/op, {ops} ops)",
        ops as f64 / secs,
        secs * 1e9 / ops as f64
    );
}

fn bench(name: &str, ops: u64, mut f: impl FnMut(u64)) -> f64 {
    // Warm-up, then the best of 5 runs.
    for i in 0..ops / 10 {
        f(i);
    }
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        for i in 0..ops {
            f(i);
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    report(name, ops, best);
    ops as f64 / best
}

fn main() {
    const N: u64 = 1_000_000;
    // Pre-built ids: the decision, not string formatting, is measured.
    let ids: Vec<String> = (0..1024).map(|i| format!("task-{i}")).collect();

    // Admission decisions: admit (a decision) + release, 512 tasks live.
    let mut ac = AdmissionController::new(1 << 40);
    ac.set_quota(
        "team",
        pygpukit_sched_core::TenantQuota {
            memory: Some(1 << 39),
            max_tasks: None,
        },
    );
    let reqs: Vec<AdmissionRequest> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            AdmissionRequest::new(id.clone(), 1 << 20, (i % 7) as i32).with_tenant("team")
        })
        .collect();
    for r in &reqs[..512] {
        ac.admit(r);
    }
    let rate = bench("admission: admit + release (quota tenant)", N, |i| {
        let r = &reqs[512 + (i as usize & 511)];
        black_box(ac.admit(r));
        ac.release(&r.id);
    });

    // Refusals are decisions too (capacity full): evaluate only.
    let full = AdmissionController::new(0);
    bench("admission: evaluate (refused)", N, |i| {
        black_box(full.evaluate(&reqs[i as usize & 1023]));
    });

    // Through the thread-safe wrapper the bindings use.
    let shared = Shared::new(AdmissionController::new(1 << 40));
    bench("admission: admit + release via Shared<Mutex>", N, |i| {
        let r = &reqs[i as usize & 1023];
        shared.with(|a| {
            black_box(a.admit(r));
            a.release(&r.id);
        });
    });

    // Batch (sorted by priority, sequence, id).
    let mut batch_ac = AdmissionController::new(1 << 40);
    let batch = &reqs[..1000];
    let t = Instant::now();
    let rounds = 200u64;
    for _ in 0..rounds {
        black_box(batch_ac.admit_batch(batch));
        for r in batch {
            batch_ac.release(&r.id);
        }
    }
    report(
        "admission: admit_batch of 1000",
        rounds * 1000,
        t.elapsed().as_secs_f64(),
    );

    let mut qos = QosPolicyEvaluator::new(1 << 40, 1_000_000);
    let metas: Vec<QosTaskMeta> = ids
        .iter()
        .map(|id| QosTaskMeta::burstable(id.clone(), "", 1 << 20, 0, 0, 0, 0).unwrap())
        .collect();
    bench("qos: admit + release", N / 2, |i| {
        let m = &metas[i as usize & 1023];
        black_box(qos.admit(m.clone()));
        qos.release(&m.id).unwrap();
    });

    let mut pool = MemoryPool::new(1 << 30, true);
    bench("pool: allocate + free", N, |i| {
        let b = pool.allocate(4096 + (i & 3) * 512).unwrap();
        pool.free(b).unwrap();
    });

    let mut parts = PartitionManager::new(PartitionConfig::new(1 << 34));
    parts
        .create("p", "", PartitionLimits::new().memory(1 << 33))
        .unwrap();
    bench("partition: charge + release", N, |_| {
        parts.charge("p", 4096).unwrap();
        parts.release("p", 4096).unwrap();
    });

    let mut pacing = KernelPacingEngine::new(KernelPacingEngine::DEFAULT_CAPACITY, 0);
    pacing.register_stream(1, 500_000).unwrap();
    bench("pacing: acquire", N, |i| {
        black_box(pacing.acquire(1, 1000, i * 2000).unwrap());
    });

    println!("admission decisions per second: {rate:.0} (target >= 1,000,000)");
}
