//! Deterministic admission control with capacity and per-tenant quotas.
//!
//! The [`AdmissionController`] decides whether a request for `memory` bytes
//! may be admitted next to what is already admitted. It follows the
//! Kubernetes scheduler's and `ResourceQuota` admission rules, applied to one
//! device:
//!
//! - **Capacity** (a node's allocatable memory): the sum of admitted requests
//!   never exceeds `capacity`.
//! - **Tenant quota** (a namespace's `ResourceQuota` on `requests.memory` and
//!   `count/pods`): the sum of a tenant's admitted requests never exceeds its
//!   memory quota, and its number of admitted tasks never exceeds its task
//!   quota. Tenants without a quota are unlimited; the default tenant is `""`.
//!
//! Checks run in a fixed order and the first failure is the reason:
//! duplicate id, request larger than the capacity (never admissible), request
//! larger than the tenant's memory quota (never admissible), tenant task
//! count, tenant memory quota, free capacity.
//!
//! # Queue and ties
//!
//! [`submit`](AdmissionController::submit) queues a request;
//! [`process_pending`](AdmissionController::process_pending) examines the
//! queue in a fixed order — **priority (highest first), then submit sequence
//! (earliest first), then id** — admitting every request that fits. Like the
//! Kubernetes scheduler (no head-of-line blocking), a request that does not
//! fit stays queued while later ones may be admitted; requests that can never
//! be admitted are removed with their reason.
//!
//! # Determinism
//!
//! No clocks, no randomness, no hash-order dependence: replaying the same
//! event log ([`AdmissionController::replay`]) gives identical decisions and
//! reasons.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// A request to admit one task.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AdmissionRequest {
    /// Unique task id.
    pub id: String,
    /// Bytes to reserve.
    pub memory: u64,
    /// Priority; higher first.
    pub priority: i32,
    /// Tenant (namespace) charged; `""` is the default tenant.
    pub tenant: String,
}

impl AdmissionRequest {
    /// A request of the default tenant.
    pub fn new(id: impl Into<String>, memory: u64, priority: i32) -> Self {
        AdmissionRequest {
            id: id.into(),
            memory,
            priority,
            tenant: String::new(),
        }
    }

    /// The same request, charged to `tenant`.
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = tenant.into();
        self
    }
}

/// Why a request was admitted or refused.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AdmissionReason {
    /// Admitted.
    Admitted,
    /// The id is already admitted or queued.
    DuplicateId,
    /// Larger than the capacity: never admissible.
    ExceedsCapacity {
        /// Bytes requested.
        requested: u64,
        /// The capacity.
        capacity: u64,
    },
    /// Larger than the tenant's memory quota: never admissible.
    ExceedsQuota {
        /// Bytes requested.
        requested: u64,
        /// The tenant's memory quota.
        quota: u64,
    },
    /// The tenant already has its maximum number of admitted tasks.
    TaskLimit {
        /// The tenant's task quota.
        limit: u64,
    },
    /// The request does not fit next to the tenant's admitted requests.
    QuotaExceeded {
        /// Bytes requested.
        requested: u64,
        /// Bytes the tenant has admitted.
        used: u64,
        /// The tenant's memory quota.
        quota: u64,
    },
    /// The request does not fit in the free capacity.
    InsufficientMemory {
        /// Bytes requested.
        requested: u64,
        /// Free capacity.
        available: u64,
    },
}

impl AdmissionReason {
    /// Whether this is [`AdmissionReason::Admitted`].
    pub const fn is_admitted(&self) -> bool {
        matches!(self, AdmissionReason::Admitted)
    }

    /// Whether the request can never be admitted, whatever is released.
    pub const fn is_permanent(&self) -> bool {
        matches!(
            self,
            AdmissionReason::DuplicateId
                | AdmissionReason::ExceedsCapacity { .. }
                | AdmissionReason::ExceedsQuota { .. }
        )
    }

    /// A short stable code: `admitted`, `duplicate_id`, `exceeds_capacity`,
    /// `exceeds_quota`, `task_limit`, `quota_exceeded`, `insufficient_memory`.
    pub const fn code(&self) -> &'static str {
        match self {
            AdmissionReason::Admitted => "admitted",
            AdmissionReason::DuplicateId => "duplicate_id",
            AdmissionReason::ExceedsCapacity { .. } => "exceeds_capacity",
            AdmissionReason::ExceedsQuota { .. } => "exceeds_quota",
            AdmissionReason::TaskLimit { .. } => "task_limit",
            AdmissionReason::QuotaExceeded { .. } => "quota_exceeded",
            AdmissionReason::InsufficientMemory { .. } => "insufficient_memory",
        }
    }
}

impl fmt::Display for AdmissionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdmissionReason::Admitted => f.write_str("admitted"),
            AdmissionReason::DuplicateId => {
                f.write_str("a task with this id is already admitted or queued")
            }
            AdmissionReason::ExceedsCapacity {
                requested,
                capacity,
            } => write!(
                f,
                "request of {requested} bytes exceeds the capacity of {capacity} bytes"
            ),
            AdmissionReason::ExceedsQuota { requested, quota } => write!(
                f,
                "request of {requested} bytes exceeds the tenant's memory quota of {quota} bytes"
            ),
            AdmissionReason::TaskLimit { limit } => {
                write!(f, "the tenant already has its maximum of {limit} tasks")
            }
            AdmissionReason::QuotaExceeded {
                requested,
                used,
                quota,
            } => write!(
                f,
                "tenant memory quota exceeded: requested {requested} bytes, \
                 {used} of {quota} bytes in use"
            ),
            AdmissionReason::InsufficientMemory {
                requested,
                available,
            } => write!(
                f,
                "insufficient memory: requested {requested} bytes, {available} bytes available"
            ),
        }
    }
}

/// One decision: the task and the reason.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Decision {
    /// The task id.
    pub task_id: String,
    /// Why it was admitted or refused.
    pub reason: AdmissionReason,
}

impl Decision {
    /// Whether the task was admitted.
    pub const fn admitted(&self) -> bool {
        self.reason.is_admitted()
    }
}

/// A tenant's quota (`None`: unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct TenantQuota {
    /// Maximum bytes of admitted requests.
    pub memory: Option<u64>,
    /// Maximum number of admitted tasks.
    pub max_tasks: Option<u64>,
}

/// A tenant's admitted totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TenantUsage {
    /// Bytes admitted.
    pub memory: u64,
    /// Tasks admitted.
    pub tasks: u64,
}

/// One entry of an admission event log.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AdmissionEvent {
    /// Decide now ([`AdmissionController::admit`]).
    Admit(AdmissionRequest),
    /// Queue ([`AdmissionController::submit`]).
    Submit(AdmissionRequest),
    /// Examine the queue ([`AdmissionController::process_pending`]).
    Process,
    /// Release an admitted task (an unknown id is ignored).
    Release(String),
    /// Set a tenant's quota.
    SetQuota(String, TenantQuota),
}

/// Counters of an [`AdmissionController`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AdmissionStats {
    /// The capacity in bytes.
    pub capacity: u64,
    /// Bytes admitted now.
    pub reserved: u64,
    /// Highest `reserved` so far.
    pub peak_reserved: u64,
    /// Tasks admitted now.
    pub active: u64,
    /// Requests queued now.
    pub pending: u64,
    /// Decisions made (admissions plus refusals).
    pub decisions: u64,
    /// Admissions.
    pub admitted: u64,
    /// Refusals (a queued request refused on several passes counts each time).
    pub rejected: u64,
    /// Releases.
    pub released: u64,
}

type PendingKey = (Reverse<i32>, u64);

/// Deterministic admission controller (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct AdmissionController {
    capacity: u64,
    reserved: u64,
    peak_reserved: u64,
    active: HashMap<String, (u64, String)>,
    quotas: BTreeMap<String, TenantQuota>,
    usage: BTreeMap<String, TenantUsage>,
    pending: BTreeMap<PendingKey, AdmissionRequest>,
    pending_ids: HashMap<String, PendingKey>,
    next_seq: u64,
    decisions: u64,
    admitted: u64,
    rejected: u64,
    released: u64,
}

impl AdmissionController {
    /// A controller for `capacity` bytes.
    pub fn new(capacity: u64) -> Self {
        AdmissionController {
            capacity,
            reserved: 0,
            peak_reserved: 0,
            active: HashMap::new(),
            quotas: BTreeMap::new(),
            usage: BTreeMap::new(),
            pending: BTreeMap::new(),
            pending_ids: HashMap::new(),
            next_seq: 0,
            decisions: 0,
            admitted: 0,
            rejected: 0,
            released: 0,
        }
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes admitted now.
    pub fn reserved(&self) -> u64 {
        self.reserved
    }

    /// Free capacity in bytes.
    pub fn available(&self) -> u64 {
        self.capacity - self.reserved
    }

    /// Sets (replaces) a tenant's quota. Admitted tasks are never revoked: a
    /// lowered quota only refuses new requests.
    pub fn set_quota(&mut self, tenant: impl Into<String>, quota: TenantQuota) {
        self.quotas.insert(tenant.into(), quota);
    }

    /// A tenant's quota (default: unlimited).
    pub fn quota(&self, tenant: &str) -> TenantQuota {
        self.quotas.get(tenant).copied().unwrap_or_default()
    }

    /// A tenant's admitted totals.
    pub fn tenant_usage(&self, tenant: &str) -> TenantUsage {
        self.usage.get(tenant).copied().unwrap_or_default()
    }

    /// Whether `id` is admitted.
    pub fn is_admitted(&self, id: &str) -> bool {
        self.active.contains_key(id)
    }

    /// The reason `req` would get now, without changing anything (a queued id
    /// counts as a duplicate).
    pub fn evaluate(&self, req: &AdmissionRequest) -> AdmissionReason {
        if self.active.contains_key(&req.id) || self.pending_ids.contains_key(&req.id) {
            return AdmissionReason::DuplicateId;
        }
        self.check(req)
    }

    /// The capacity and quota checks (ids are checked by the caller).
    fn check(&self, req: &AdmissionRequest) -> AdmissionReason {
        if req.memory > self.capacity {
            return AdmissionReason::ExceedsCapacity {
                requested: req.memory,
                capacity: self.capacity,
            };
        }
        if let Some(quota) = self.quotas.get(&req.tenant) {
            let used = self.usage.get(&req.tenant).copied().unwrap_or_default();
            if let Some(memory) = quota.memory {
                if req.memory > memory {
                    return AdmissionReason::ExceedsQuota {
                        requested: req.memory,
                        quota: memory,
                    };
                }
            }
            if let Some(limit) = quota.max_tasks {
                if used.tasks >= limit {
                    return AdmissionReason::TaskLimit { limit };
                }
            }
            if let Some(memory) = quota.memory {
                if used.memory + req.memory > memory {
                    return AdmissionReason::QuotaExceeded {
                        requested: req.memory,
                        used: used.memory,
                        quota: memory,
                    };
                }
            }
        }
        let available = self.available();
        if req.memory > available {
            return AdmissionReason::InsufficientMemory {
                requested: req.memory,
                available,
            };
        }
        AdmissionReason::Admitted
    }

    fn commit(&mut self, req: &AdmissionRequest) {
        self.reserved += req.memory;
        self.peak_reserved = self.peak_reserved.max(self.reserved);
        match self.usage.get_mut(&req.tenant) {
            Some(usage) => {
                usage.memory += req.memory;
                usage.tasks += 1;
            }
            None => {
                let usage = TenantUsage {
                    memory: req.memory,
                    tasks: 1,
                };
                self.usage.insert(req.tenant.clone(), usage);
            }
        }
        self.active
            .insert(req.id.clone(), (req.memory, req.tenant.clone()));
    }

    fn count(&mut self, reason: &AdmissionReason) {
        self.decisions += 1;
        if reason.is_admitted() {
            self.admitted += 1;
        } else {
            self.rejected += 1;
        }
    }

    /// Decides `req` now and, if admitted, reserves its memory.
    pub fn admit(&mut self, req: &AdmissionRequest) -> AdmissionReason {
        let reason = self.evaluate(req);
        if reason.is_admitted() {
            self.commit(req);
        }
        self.count(&reason);
        reason
    }

    /// Releases an admitted task; returns its bytes.
    pub fn release(&mut self, id: &str) -> Option<u64> {
        let (memory, tenant) = self.active.remove(id)?;
        self.reserved -= memory;
        if let Some(usage) = self.usage.get_mut(&tenant) {
            usage.memory -= memory;
            usage.tasks -= 1;
        }
        self.released += 1;
        Some(memory)
    }

    /// Queues `req`. Returns its submit sequence number.
    ///
    /// # Errors
    ///
    /// The id is already admitted or queued: returns
    /// [`AdmissionReason::DuplicateId`].
    pub fn submit(&mut self, req: AdmissionRequest) -> Result<u64, AdmissionReason> {
        if self.active.contains_key(&req.id) || self.pending_ids.contains_key(&req.id) {
            return Err(AdmissionReason::DuplicateId);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let key = (Reverse(req.priority), seq);
        self.pending_ids.insert(req.id.clone(), key);
        self.pending.insert(key, req);
        Ok(seq)
    }

    /// Removes a queued request; returns it.
    pub fn withdraw(&mut self, id: &str) -> Option<AdmissionRequest> {
        let key = self.pending_ids.remove(id)?;
        self.pending.remove(&key)
    }

    /// Queued ids in the order they are examined.
    pub fn pending(&self) -> Vec<String> {
        self.pending.values().map(|r| r.id.clone()).collect()
    }

    /// Examines every queued request in order (priority, submit sequence,
    /// id), admitting those that fit. Returns a decision for each examined
    /// request; admitted and never-admissible ones leave the queue.
    pub fn process_pending(&mut self) -> Vec<Decision> {
        let mut out = Vec::with_capacity(self.pending.len());
        let keys: Vec<PendingKey> = self.pending.keys().copied().collect();
        for key in keys {
            let reason = self.check(&self.pending[&key]);
            self.count(&reason);
            let req = &self.pending[&key];
            if reason.is_admitted() || reason.is_permanent() {
                let req = self.pending.remove(&key).expect("key from the queue");
                self.pending_ids.remove(&req.id);
                if reason.is_admitted() {
                    self.commit(&req);
                }
                out.push(Decision {
                    task_id: req.id,
                    reason,
                });
            } else {
                out.push(Decision {
                    task_id: req.id.clone(),
                    reason,
                });
            }
        }
        out
    }

    /// Decides a batch at once: in order of priority (highest first), then
    /// position in `requests`, then id. Decisions are returned in that order.
    pub fn admit_batch(&mut self, requests: &[AdmissionRequest]) -> Vec<Decision> {
        let mut order: Vec<usize> = (0..requests.len()).collect();
        order.sort_by(|&a, &b| {
            let (ra, rb) = (&requests[a], &requests[b]);
            rb.priority
                .cmp(&ra.priority)
                .then(a.cmp(&b))
                .then(ra.id.cmp(&rb.id))
        });
        order
            .into_iter()
            .map(|i| Decision {
                task_id: requests[i].id.clone(),
                reason: self.admit(&requests[i]),
            })
            .collect()
    }

    /// Applies one event; returns the decisions it made.
    pub fn apply(&mut self, event: &AdmissionEvent) -> Vec<Decision> {
        match event {
            AdmissionEvent::Admit(req) => vec![Decision {
                task_id: req.id.clone(),
                reason: self.admit(req),
            }],
            AdmissionEvent::Submit(req) => match self.submit(req.clone()) {
                Ok(_) => Vec::new(),
                Err(reason) => {
                    self.count(&reason);
                    vec![Decision {
                        task_id: req.id.clone(),
                        reason,
                    }]
                }
            },
            AdmissionEvent::Process => self.process_pending(),
            AdmissionEvent::Release(id) => {
                self.release(id);
                Vec::new()
            }
            AdmissionEvent::SetQuota(tenant, quota) => {
                self.set_quota(tenant.clone(), *quota);
                Vec::new()
            }
        }
    }

    /// Applies a log of events in order; returns all decisions in order.
    pub fn replay<'a>(
        &mut self,
        events: impl IntoIterator<Item = &'a AdmissionEvent>,
    ) -> Vec<Decision> {
        events.into_iter().flat_map(|e| self.apply(e)).collect()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> AdmissionStats {
        AdmissionStats {
            capacity: self.capacity,
            reserved: self.reserved,
            peak_reserved: self.peak_reserved,
            active: self.active.len() as u64,
            pending: self.pending.len() as u64,
            decisions: self.decisions,
            admitted: self.admitted,
            rejected: self.rejected,
            released: self.released,
        }
    }

    /// Checks the invariants (tests and debugging; linear cost).
    pub fn check_invariants(&self) -> Result<(), String> {
        let reserved: u64 = self.active.values().map(|(m, _)| m).sum();
        if reserved != self.reserved {
            return Err(format!("reserved drifted: {} vs {reserved}", self.reserved));
        }
        if reserved > self.capacity {
            return Err(format!(
                "capacity over-committed: {reserved} > {}",
                self.capacity
            ));
        }
        let mut per: BTreeMap<&str, TenantUsage> = BTreeMap::new();
        for (memory, tenant) in self.active.values() {
            let u = per.entry(tenant).or_default();
            u.memory += memory;
            u.tasks += 1;
        }
        for (tenant, usage) in &self.usage {
            if per.get(tenant.as_str()).copied().unwrap_or_default() != *usage {
                return Err(format!("tenant {tenant:?} usage drifted"));
            }
        }
        for (tenant, quota) in &self.quotas {
            let u = self.tenant_usage(tenant);
            if quota.memory.is_some_and(|q| u.memory > q)
                || quota.max_tasks.is_some_and(|q| u.tasks > q)
            {
                // Allowed only if the quota was lowered after admission; the
                // tests never do that.
                return Err(format!("tenant {tenant:?} over its quota"));
            }
        }
        if self.pending.len() != self.pending_ids.len() {
            return Err("pending index out of sync".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(id: &str, memory: u64, priority: i32) -> AdmissionRequest {
        AdmissionRequest::new(id, memory, priority)
    }

    #[test]
    fn capacity_and_reasons() {
        let mut ac = AdmissionController::new(100);
        assert!(ac.admit(&req("a", 60, 0)).is_admitted());
        assert_eq!(ac.admit(&req("a", 1, 0)), AdmissionReason::DuplicateId);
        assert_eq!(
            ac.admit(&req("b", 50, 0)),
            AdmissionReason::InsufficientMemory {
                requested: 50,
                available: 40
            }
        );
        assert_eq!(ac.admit(&req("c", 101, 0)).code(), "exceeds_capacity");
        assert_eq!(ac.release("a"), Some(60));
        assert_eq!(ac.release("a"), None);
        assert!(ac.admit(&req("b", 50, 0)).is_admitted());
        let s = ac.stats();
        assert_eq!((s.decisions, s.admitted, s.rejected), (5, 2, 3));
        assert_eq!((s.reserved, s.peak_reserved), (50, 60));
        ac.check_invariants().unwrap();
    }

    #[test]
    fn tenant_quotas() {
        let mut ac = AdmissionController::new(1000);
        ac.set_quota(
            "t",
            TenantQuota {
                memory: Some(100),
                max_tasks: Some(2),
            },
        );
        let t = |id: &str, m| req(id, m, 0).with_tenant("t");
        assert_eq!(ac.admit(&t("x", 101)).code(), "exceeds_quota");
        assert!(ac.admit(&t("a", 30)).is_admitted());
        assert_eq!(ac.admit(&t("b", 80)).code(), "quota_exceeded");
        assert!(ac.admit(&t("b", 70)).is_admitted());
        assert_eq!(
            ac.admit(&t("c", 0)),
            AdmissionReason::TaskLimit { limit: 2 }
        );
        assert!(ac.admit(&req("other", 500, 0)).is_admitted());
        assert_eq!(
            ac.tenant_usage("t"),
            TenantUsage {
                memory: 100,
                tasks: 2
            }
        );
        ac.release("a");
        assert!(ac.admit(&t("c", 30)).is_admitted());
        ac.check_invariants().unwrap();
    }

    #[test]
    fn queue_order_priority_then_sequence() {
        let mut ac = AdmissionController::new(100);
        ac.submit(req("low", 10, 0)).unwrap();
        ac.submit(req("big", 95, 5)).unwrap();
        ac.submit(req("hi1", 50, 5)).unwrap();
        ac.submit(req("hi2", 40, 5)).unwrap();
        ac.submit(req("huge", 500, 9)).unwrap();
        assert_eq!(
            ac.submit(req("low", 1, 0)),
            Err(AdmissionReason::DuplicateId)
        );
        assert_eq!(ac.pending(), vec!["huge", "big", "hi1", "hi2", "low"]);
        let d = ac.process_pending();
        let got: Vec<(&str, &str)> = d
            .iter()
            .map(|d| (d.task_id.as_str(), d.reason.code()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("huge", "exceeds_capacity"),
                ("big", "admitted"),
                ("hi1", "insufficient_memory"),
                ("hi2", "insufficient_memory"),
                ("low", "insufficient_memory"),
            ]
        );
        assert_eq!(ac.pending(), vec!["hi1", "hi2", "low"]);
        ac.release("big");
        let admitted: Vec<String> = ac
            .process_pending()
            .into_iter()
            .filter(Decision::admitted)
            .map(|d| d.task_id)
            .collect();
        assert_eq!(admitted, vec!["hi1", "hi2", "low"]);
    }

    #[test]
    fn replay_is_deterministic() {
        let log: Vec<AdmissionEvent> = (0..200u64)
            .map(|i| match i % 4 {
                0 | 1 => AdmissionEvent::Submit(req(&format!("t{i}"), i * 7 % 60, (i % 3) as i32)),
                2 => AdmissionEvent::Process,
                _ => AdmissionEvent::Release(format!("t{}", i - 3)),
            })
            .collect();
        let a = AdmissionController::new(100).replay(&log);
        let b = AdmissionController::new(100).replay(&log);
        assert!(!a.is_empty());
        assert_eq!(a, b);
    }

    #[test]
    fn batch_ties() {
        let mut ac = AdmissionController::new(10);
        let d = ac.admit_batch(&[req("b", 5, 1), req("a", 5, 1), req("c", 5, 2)]);
        let ids: Vec<&str> = d.iter().map(|d| d.task_id.as_str()).collect();
        assert_eq!(ids, vec!["c", "b", "a"]);
        assert_eq!(
            d.iter().map(Decision::admitted).collect::<Vec<_>>(),
            vec![true, true, false]
        );
    }
}
