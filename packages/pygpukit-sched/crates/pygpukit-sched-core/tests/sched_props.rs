//! Property tests (proptest state machines) of admission, the scheduler, QoS
//! and partitions: each random operation sequence runs against the real
//! implementation and a small reference model (plain vectors, linear scans).
//! Checked: capacity and quotas are never over-committed, no task is evicted
//! for an equal or lower tier (so never a Guaranteed one), and replaying the
//! same log gives identical decisions.

use proptest::prelude::*;
use pygpukit_sched_core::admission::{
    AdmissionController, AdmissionEvent, AdmissionRequest, TenantQuota,
};
use pygpukit_sched_core::partition::{PartitionConfig, PartitionLimits, PartitionManager};
use pygpukit_sched_core::qos::{QosPolicyEvaluator, QosTaskMeta, QosTier, PPM};
use pygpukit_sched_core::scheduler::Scheduler;

const CAP: u64 = 1000;
const TENANTS: [&str; 3] = ["", "a", "b"];

// ------------------------------------------------------------ admission ----

/// Reference model of the admission controller.
#[derive(Default)]
struct AdmissionModel {
    capacity: u64,
    quotas: Vec<(String, TenantQuota)>,
    /// (id, memory, tenant)
    active: Vec<(String, u64, String)>,
    /// (priority, seq, request)
    pending: Vec<(i32, u64, AdmissionRequest)>,
    seq: u64,
}

impl AdmissionModel {
    fn quota(&self, tenant: &str) -> Option<TenantQuota> {
        self.quotas
            .iter()
            .rev()
            .find(|(t, _)| t == tenant)
            .map(|(_, q)| *q)
    }

    fn known(&self, id: &str) -> bool {
        self.active.iter().any(|a| a.0 == id) || self.pending.iter().any(|p| p.2.id == id)
    }

    fn check(&self, r: &AdmissionRequest) -> &'static str {
        if r.memory > self.capacity {
            return "exceeds_capacity";
        }
        if let Some(q) = self.quota(&r.tenant) {
            let mine: Vec<_> = self.active.iter().filter(|a| a.2 == r.tenant).collect();
            let used: u64 = mine.iter().map(|a| a.1).sum();
            if q.memory.is_some_and(|m| r.memory > m) {
                return "exceeds_quota";
            }
            if q.max_tasks.is_some_and(|n| mine.len() as u64 >= n) {
                return "task_limit";
            }
            if q.memory.is_some_and(|m| used + r.memory > m) {
                return "quota_exceeded";
            }
        }
        let reserved: u64 = self.active.iter().map(|a| a.1).sum();
        if reserved + r.memory > self.capacity {
            return "insufficient_memory";
        }
        "admitted"
    }

    fn apply(&mut self, e: &AdmissionEvent) -> Vec<(String, &'static str)> {
        match e {
            AdmissionEvent::Admit(r) => {
                let code = if self.known(&r.id) {
                    "duplicate_id"
                } else {
                    self.check(r)
                };
                if code == "admitted" {
                    self.active.push((r.id.clone(), r.memory, r.tenant.clone()));
                }
                vec![(r.id.clone(), code)]
            }
            AdmissionEvent::Submit(r) => {
                if self.known(&r.id) {
                    return vec![(r.id.clone(), "duplicate_id")];
                }
                self.pending.push((r.priority, self.seq, r.clone()));
                self.seq += 1;
                Vec::new()
            }
            AdmissionEvent::Process => {
                // Priority (highest first), then sequence, then id.
                self.pending
                    .sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.id.cmp(&b.2.id)));
                let mut out = Vec::new();
                let mut keep = Vec::new();
                for (p, s, r) in std::mem::take(&mut self.pending) {
                    let code = self.check(&r);
                    out.push((r.id.clone(), code));
                    match code {
                        "admitted" => self.active.push((r.id.clone(), r.memory, r.tenant.clone())),
                        "exceeds_capacity" | "exceeds_quota" => {}
                        _ => keep.push((p, s, r)),
                    }
                }
                self.pending = keep;
                out
            }
            AdmissionEvent::Release(id) => {
                self.active.retain(|a| &a.0 != id);
                Vec::new()
            }
            AdmissionEvent::SetQuota(t, q) => {
                self.quotas.push((t.clone(), *q));
                Vec::new()
            }
        }
    }
}

fn request() -> impl Strategy<Value = AdmissionRequest> {
    (0u32..40, 0u64..450, -2i32..3, 0usize..3).prop_map(|(id, memory, priority, tenant)| {
        AdmissionRequest {
            id: format!("t{id}"),
            memory,
            priority,
            tenant: TENANTS[tenant].to_owned(),
        }
    })
}

fn admission_event() -> impl Strategy<Value = AdmissionEvent> {
    prop_oneof![
        4 => request().prop_map(AdmissionEvent::Admit),
        4 => request().prop_map(AdmissionEvent::Submit),
        2 => Just(AdmissionEvent::Process),
        3 => (0u32..40).prop_map(|i| AdmissionEvent::Release(format!("t{i}"))),
    ]
}

fn quotas() -> impl Strategy<Value = Vec<AdmissionEvent>> {
    proptest::collection::vec(
        (
            1usize..3,
            proptest::option::of(0u64..700),
            proptest::option::of(0u64..5),
        )
            .prop_map(|(t, memory, max_tasks)| {
                AdmissionEvent::SetQuota(TENANTS[t].to_owned(), TenantQuota { memory, max_tasks })
            }),
        0..3,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn admission_matches_model_and_replays(
        setup in quotas(),
        events in proptest::collection::vec(admission_event(), 1..120),
    ) {
        let log: Vec<AdmissionEvent> = setup.into_iter().chain(events).collect();
        let mut ac = AdmissionController::new(CAP);
        let mut model = AdmissionModel { capacity: CAP, ..AdmissionModel::default() };
        let mut all = Vec::new();
        for e in &log {
            let got = ac.apply(e);
            let want = model.apply(e);
            let got_codes: Vec<(String, &str)> =
                got.iter().map(|d| (d.task_id.clone(), d.reason.code())).collect();
            prop_assert_eq!(&got_codes, &want, "event {:?}", e);
            ac.check_invariants().map_err(TestCaseError::fail)?;
            prop_assert!(ac.reserved() <= CAP);
            all.extend(got);
        }
        // Identical decisions (reasons with all their numbers) on replay.
        let again = AdmissionController::new(CAP).replay(&log);
        prop_assert_eq!(all, again);
    }
}

// ------------------------------------------------------------ scheduler ----

#[derive(Debug, Clone)]
enum SchedOp {
    Submit(AdmissionRequest),
    Schedule,
    Start(u32),
    Complete(u32),
    Fail(u32),
    Cancel(u32),
}

fn sched_op() -> impl Strategy<Value = SchedOp> {
    prop_oneof![
        4 => request().prop_map(SchedOp::Submit),
        3 => Just(SchedOp::Schedule),
        2 => (0u32..40).prop_map(SchedOp::Start),
        2 => (0u32..40).prop_map(SchedOp::Complete),
        1 => (0u32..40).prop_map(SchedOp::Fail),
        1 => (0u32..40).prop_map(SchedOp::Cancel),
    ]
}

fn run_sched(ops: &[SchedOp]) -> Result<Vec<String>, TestCaseError> {
    let mut s = Scheduler::new(CAP);
    s.set_quota(
        "a",
        TenantQuota {
            memory: Some(500),
            max_tasks: Some(3),
        },
    );
    let mut trace = Vec::new();
    for op in ops {
        let out = match op {
            SchedOp::Submit(r) => format!("{:?}", s.submit(r.clone(), "")),
            SchedOp::Schedule => format!("{:?}", s.schedule()),
            SchedOp::Start(i) => format!("{:?}", s.start(&format!("t{i}"))),
            SchedOp::Complete(i) => format!("{:?}", s.complete(&format!("t{i}"))),
            SchedOp::Fail(i) => format!("{:?}", s.fail(&format!("t{i}"))),
            SchedOp::Cancel(i) => format!("{:?}", s.cancel(&format!("t{i}"))),
        };
        s.check_invariants().map_err(TestCaseError::fail)?;
        let st = s.stats();
        prop_assert!(st.reserved <= CAP);
        let a = s.controller().tenant_usage("a");
        prop_assert!(a.memory <= 500 && a.tasks <= 3);
        trace.push(out);
    }
    Ok(trace)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn scheduler_never_overcommits_and_replays(ops in proptest::collection::vec(sched_op(), 1..150)) {
        let first = run_sched(&ops)?;
        let second = run_sched(&ops)?;
        prop_assert_eq!(first, second);
    }
}

// ------------------------------------------------------------------ QoS ----

#[derive(Debug, Clone)]
enum QosOp {
    Admit(u32, u8, u64, u64, i32),
    Charge(u32, u64),
    Uncharge(u32, u64),
    Release(u32),
}

fn qos_op() -> impl Strategy<Value = QosOp> {
    prop_oneof![
        4 => (0u32..24, 0u8..3, 1u64..400, 0u64..300, -2i32..3)
            .prop_map(|(i, t, r, extra, p)| QosOp::Admit(i, t, r, extra, p)),
        5 => (0u32..24, 0u64..300).prop_map(|(i, b)| QosOp::Charge(i, b)),
        2 => (0u32..24, 0u64..300).prop_map(|(i, b)| QosOp::Uncharge(i, b)),
        1 => (0u32..24).prop_map(QosOp::Release),
    ]
}

fn meta(i: u32, tier: u8, request: u64, extra: u64, priority: i32) -> QosTaskMeta {
    let id = format!("q{i}");
    match tier {
        0 => QosTaskMeta::guaranteed(id, "", request, 0, priority).unwrap(),
        1 => QosTaskMeta::burstable(id, "", request, request + extra, 0, 0, priority)
            .or_else(|_| QosTaskMeta::burstable(format!("q{i}"), "", request, 0, 0, 0, priority))
            .unwrap(),
        _ => QosTaskMeta::best_effort(id, "", priority),
    }
}

/// Reference victim selection: BestEffort, then Burstable over request;
/// strictly lower tier than the requester; by excess desc, priority, id.
fn model_victims(
    ev: &QosPolicyEvaluator,
    tier: QosTier,
    exclude: &str,
    needed: u64,
) -> Option<Vec<String>> {
    let mut c: Vec<(u8, u64, i32, String, u64)> = Vec::new();
    for t in ev.tasks() {
        let vt = t.meta.tier();
        let excess = t.usage.saturating_sub(t.meta.memory_request);
        let eligible = vt < tier
            && (vt == QosTier::BestEffort || (vt == QosTier::Burstable && excess > 0))
            && t.meta.id != exclude;
        if eligible {
            let group = u8::from(vt != QosTier::BestEffort);
            c.push((group, excess, t.meta.priority, t.meta.id.clone(), t.held()));
        }
    }
    c.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(b.1.cmp(&a.1))
            .then(a.2.cmp(&b.2))
            .then(a.3.cmp(&b.3))
    });
    let mut freed = 0;
    let mut out = Vec::new();
    for (_, _, _, id, held) in c {
        if freed >= needed {
            break;
        }
        freed += held;
        out.push(id);
    }
    (freed >= needed).then_some(out)
}

fn run_qos(ops: &[QosOp]) -> Result<Vec<String>, TestCaseError> {
    let mut ev = QosPolicyEvaluator::new(CAP, PPM);
    let mut log = Vec::new();
    for op in ops {
        let tiers_before: Vec<(String, QosTier)> = ev
            .tasks()
            .map(|t| (t.meta.id.clone(), t.meta.tier()))
            .collect();
        let tier_of = |id: &str| tiers_before.iter().find(|(i, _)| i == id).map(|(_, t)| *t);
        let (cause_tier, evicted) = match op {
            QosOp::Admit(i, t, r, x, p) => {
                let m = meta(*i, *t, *r, *x, *p);
                let tier = m.tier();
                let free = ev.free_memory();
                let expected = if m.memory_request > free && ev.task(&m.id).is_none() {
                    model_victims(&ev, tier, "", m.memory_request - free)
                } else {
                    Some(Vec::new())
                };
                let d = ev.admit(m);
                if d.admitted() {
                    prop_assert_eq!(Some(d.evicted.clone()), expected);
                }
                log.push(format!("{d:?}"));
                (tier, d.evicted)
            }
            QosOp::Charge(i, b) => {
                let id = format!("q{i}");
                let Some(tier) = tier_of(&id) else {
                    prop_assert!(ev.charge(&id, *b).is_err());
                    continue;
                };
                let r = ev.charge(&id, *b);
                log.push(format!("{r:?}"));
                (tier, r.unwrap_or_default())
            }
            QosOp::Uncharge(i, b) => {
                log.push(format!("{:?}", ev.uncharge(&format!("q{i}"), *b)));
                continue;
            }
            QosOp::Release(i) => {
                log.push(format!("{:?}", ev.release(&format!("q{i}"))));
                continue;
            }
        };
        for victim in &evicted {
            let vt = tier_of(victim).expect("victims were admitted");
            prop_assert!(
                vt < cause_tier,
                "{} ({:?}) evicted for {:?}",
                victim,
                vt,
                cause_tier
            );
            prop_assert!(vt != QosTier::Guaranteed, "a Guaranteed task was evicted");
        }
        prop_assert_eq!(ev.take_evicted(), evicted);
        ev.check_invariants().map_err(TestCaseError::fail)?;
        let s = ev.stats();
        prop_assert!(s.reserved_memory <= CAP && s.held_memory <= CAP);
    }
    Ok(log)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn qos_tiers_and_capacity(ops in proptest::collection::vec(qos_op(), 1..150)) {
        let first = run_qos(&ops)?;
        let second = run_qos(&ops)?;
        prop_assert_eq!(first, second);
    }
}

// ----------------------------------------------------------- partitions ----

#[derive(Debug, Clone)]
enum PartOp {
    Create(u32, u64, Option<u64>, u64),
    Charge(u32, u64),
    Release(u32, u64),
    Delete(u32, bool),
}

fn part_op() -> impl Strategy<Value = PartOp> {
    prop_oneof![
        2 => (0u32..6, 0u64..600, proptest::option::of(0u64..400), 0u64..600_000)
            .prop_map(|(i, m, r, c)| PartOp::Create(i, m, r, c)),
        5 => (0u32..6, 0u64..300).prop_map(|(i, b)| PartOp::Charge(i, b)),
        3 => (0u32..6, 0u64..300).prop_map(|(i, b)| PartOp::Release(i, b)),
        1 => (0u32..6, any::<bool>()).prop_map(|(i, f)| PartOp::Delete(i, f)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn partitions_never_overcommit(ops in proptest::collection::vec(part_op(), 1..150)) {
        let mut m = PartitionManager::new(PartitionConfig::new(CAP));
        for op in &ops {
            match op {
                PartOp::Create(i, mem, req, c) => {
                    let mut l = PartitionLimits::new().memory(*mem).compute_ppm(*c);
                    if let Some(r) = req {
                        l = l.memory_request(*r);
                    }
                    let _ = m.create(format!("p{i}"), "", l);
                }
                PartOp::Charge(i, b) => {
                    let id = format!("p{i}");
                    let before = m.get(&id).map(|p| p.usage);
                    match m.charge(&id, *b) {
                        Ok(u) => prop_assert_eq!(Some(u), before.map(|x| x + b)),
                        Err(_) => prop_assert_eq!(m.get(&id).map(|p| p.usage), before),
                    }
                }
                PartOp::Release(i, b) => {
                    let _ = m.release(&format!("p{i}"), *b);
                }
                PartOp::Delete(i, f) => {
                    let _ = m.delete(&format!("p{i}"), *f);
                }
            }
            m.check_invariants().map_err(TestCaseError::fail)?;
            for p in m.partitions() {
                prop_assert!(p.usage <= p.limit_or(CAP));
            }
        }
    }
}
