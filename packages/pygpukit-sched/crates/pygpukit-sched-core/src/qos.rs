//! QoS tiers (Kubernetes' Guaranteed / Burstable / BestEffort) and the
//! policy evaluator that admits tasks and picks eviction victims.
//!
//! # Tiers (the Kubernetes QoS classes)
//!
//! A task declares a memory request and limit and a bandwidth request and
//! limit. Its tier is *derived* from them, as the kubelet derives a pod's QoS
//! class ([`QosTier::classify`]):
//!
//! - **Guaranteed**: memory request equals memory limit (and is > 0), and
//!   bandwidth request equals bandwidth limit.
//! - **BestEffort**: no request and no limit at all.
//! - **Burstable**: anything else (a request below its limit, or no limit).
//!
//! A limit of `0` means "no limit".
//!
//! # Admission ([`QosPolicyEvaluator::evaluate`] / [`QosPolicyEvaluator::admit`])
//!
//! The evaluator tracks, for every admitted task, its *reservation* (the
//! request) and its *usage*; a task *holds* `max(request, usage)` bytes. Two
//! invariants always hold: the sum of reservations is at most
//! `total_memory` (requests are never over-committed, as the Kubernetes
//! scheduler never places pods whose requests exceed a node's allocatable
//! memory), and the sum of held bytes is at most `total_memory` (physical
//! memory is never over-committed). Bandwidth requests (fractions of
//! `total_bandwidth`) are never over-committed either.
//!
//! A task is admitted when, in this order: its id is new; its request and limit
//! fit in `total_memory` at all; its request fits next to the current
//! reservations; its bandwidth request fits; and `request` bytes are free — if
//! not, eviction victims are chosen to free them. A BestEffort task reserves
//! nothing; it is refused while no memory at all is free ("memory pressure",
//! like the kubelet's admission of BestEffort pods).
//!
//! # Eviction (the kubelet's order)
//!
//! When bytes are needed (admission, or a task's usage growing with
//! [`QosPolicyEvaluator::charge`]), candidates are taken in this order until
//! enough is freed:
//!
//! 1. BestEffort tasks, then
//! 2. Burstable tasks whose usage exceeds their request;
//!
//! within each group by usage over request (largest first), then by priority
//! (lowest first), then by id. A task is only ever evicted for a task of a
//! **strictly higher** tier: never for an equal or lower tier, so a Guaranteed
//! task is never evicted, and a Burstable task within its request is never
//! evicted. If the candidates cannot free enough, nothing is evicted and the
//! request is refused. Evicted ids are queued for
//! [`QosPolicyEvaluator::take_evicted`].

use std::collections::BTreeMap;
use std::fmt;

/// Bandwidth fractions are stored as integer parts per million, so that all
/// accounting is exact and deterministic.
pub const PPM: u64 = 1_000_000;

/// Converts a fraction (for example `0.5`) to parts per million, rounding to
/// the nearest; `None` for negative, non-finite or too large values.
pub fn fraction_to_ppm(fraction: f64) -> Option<u64> {
    if !fraction.is_finite() || !(0.0..=1.0e12).contains(&fraction) {
        return None;
    }
    Some((fraction * PPM as f64).round() as u64)
}

/// Converts parts per million back to a fraction.
pub fn ppm_to_fraction(ppm: u64) -> f64 {
    ppm as f64 / PPM as f64
}

/// A QoS tier. Ordered by protection: `BestEffort < Burstable < Guaranteed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QosTier {
    /// No requests, no limits: runs on leftover capacity, evicted first.
    BestEffort,
    /// A request below its limit (or no limit): the request is guaranteed,
    /// usage above it may be reclaimed for Guaranteed tasks.
    Burstable,
    /// Request equals limit: fully reserved, never evicted.
    Guaranteed,
}

impl QosTier {
    /// All tiers, most protected first.
    pub const ALL: [QosTier; 3] = [QosTier::Guaranteed, QosTier::Burstable, QosTier::BestEffort];

    /// The snake-case name: `guaranteed`, `burstable` or `best_effort`.
    pub const fn name(self) -> &'static str {
        match self {
            QosTier::Guaranteed => "guaranteed",
            QosTier::Burstable => "burstable",
            QosTier::BestEffort => "best_effort",
        }
    }

    /// Parses a tier name (case-insensitive; `best_effort`, `besteffort` and
    /// `best-effort` are all accepted).
    pub fn parse(name: &str) -> Option<QosTier> {
        match name.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
            "guaranteed" => Some(QosTier::Guaranteed),
            "burstable" => Some(QosTier::Burstable),
            "besteffort" => Some(QosTier::BestEffort),
            _ => None,
        }
    }

    /// CUDA stream priority for work of this tier (lower number = higher
    /// priority; devices clamp to their own range, commonly `[-5, 0]`).
    pub const fn stream_priority(self) -> i32 {
        match self {
            QosTier::Guaranteed => -2,
            QosTier::Burstable => -1,
            QosTier::BestEffort => 0,
        }
    }

    /// The Kubernetes rule: Guaranteed when the memory request equals a
    /// non-zero memory limit and the bandwidth request equals the bandwidth
    /// limit; BestEffort when all four are zero; Burstable otherwise.
    pub const fn classify(
        memory_request: u64,
        memory_limit: u64,
        bandwidth_request_ppm: u64,
        bandwidth_limit_ppm: u64,
    ) -> QosTier {
        if memory_limit > 0
            && memory_request == memory_limit
            && bandwidth_request_ppm == bandwidth_limit_ppm
        {
            QosTier::Guaranteed
        } else if memory_request == 0
            && memory_limit == 0
            && bandwidth_request_ppm == 0
            && bandwidth_limit_ppm == 0
        {
            QosTier::BestEffort
        } else {
            QosTier::Burstable
        }
    }
}

impl fmt::Display for QosTier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Errors of QoS operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QosError {
    /// Inconsistent task parameters (a request above its limit, or a
    /// constructor whose parameters do not give its tier).
    InvalidTask(String),
    /// The id is not an admitted task.
    UnknownTask(String),
    /// A charge would take a task's usage over its limit.
    OverLimit {
        /// Task id.
        task: String,
        /// Usage the charge would reach.
        usage: u64,
        /// The task's limit (the total memory for a task without a limit).
        limit: u64,
    },
    /// A charge needs more free memory than exists, even after evicting every
    /// allowed victim.
    InsufficientMemory {
        /// Task id.
        task: String,
        /// Additional bytes needed.
        needed: u64,
        /// Bytes free (before any eviction).
        free: u64,
        /// Bytes the allowed victims hold.
        reclaimable: u64,
    },
    /// An uncharge larger than the task's usage.
    Underflow {
        /// Task id.
        task: String,
        /// The task's usage.
        usage: u64,
        /// Bytes asked to release.
        bytes: u64,
    },
}

impl fmt::Display for QosError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QosError::InvalidTask(msg) => write!(f, "invalid task: {msg}"),
            QosError::UnknownTask(id) => write!(f, "task {id:?} is not admitted"),
            QosError::OverLimit { task, usage, limit } => write!(
                f,
                "task {task:?} would use {usage} bytes, over its limit of {limit} bytes"
            ),
            QosError::InsufficientMemory {
                task,
                needed,
                free,
                reclaimable,
            } => write!(
                f,
                "task {task:?} needs {needed} more bytes: {free} bytes free and \
                 {reclaimable} bytes reclaimable from lower tiers"
            ),
            QosError::Underflow { task, usage, bytes } => write!(
                f,
                "task {task:?} cannot release {bytes} bytes: it uses {usage} bytes"
            ),
        }
    }
}

impl std::error::Error for QosError {}

/// What a task asks for. The tier is derived ([`QosTier::classify`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QosTaskMeta {
    /// Unique task id.
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// Reserved memory in bytes.
    pub memory_request: u64,
    /// Memory limit in bytes (`0`: no limit).
    pub memory_limit: u64,
    /// Reserved bandwidth share, parts per million of the total.
    pub bandwidth_request_ppm: u64,
    /// Bandwidth limit, parts per million (`0`: no limit).
    pub bandwidth_limit_ppm: u64,
    /// Priority; higher is more important (used to rank eviction victims and
    /// queued work).
    pub priority: i32,
}

impl QosTaskMeta {
    /// A task from explicit requests and limits; checks `request <= limit`
    /// for every limit that is set.
    ///
    /// # Errors
    ///
    /// [`QosError::InvalidTask`] when a request exceeds its (set) limit.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        memory_request: u64,
        memory_limit: u64,
        bandwidth_request_ppm: u64,
        bandwidth_limit_ppm: u64,
        priority: i32,
    ) -> Result<Self, QosError> {
        if memory_limit > 0 && memory_request > memory_limit {
            return Err(QosError::InvalidTask(format!(
                "memory request {memory_request} exceeds memory limit {memory_limit}"
            )));
        }
        if bandwidth_limit_ppm > 0 && bandwidth_request_ppm > bandwidth_limit_ppm {
            return Err(QosError::InvalidTask(format!(
                "bandwidth request {} exceeds bandwidth limit {}",
                ppm_to_fraction(bandwidth_request_ppm),
                ppm_to_fraction(bandwidth_limit_ppm)
            )));
        }
        Ok(QosTaskMeta {
            id: id.into(),
            name: name.into(),
            memory_request,
            memory_limit,
            bandwidth_request_ppm,
            bandwidth_limit_ppm,
            priority,
        })
    }

    fn expect_tier(self, tier: QosTier) -> Result<Self, QosError> {
        let got = self.tier();
        if got == tier {
            Ok(self)
        } else {
            Err(QosError::InvalidTask(format!(
                "these requests and limits make a {got} task, not {tier}"
            )))
        }
    }

    /// A Guaranteed task: request = limit = `memory` (> 0), and bandwidth
    /// request = limit = `bandwidth_ppm`.
    ///
    /// # Errors
    ///
    /// [`QosError::InvalidTask`] when `memory` is 0.
    pub fn guaranteed(
        id: impl Into<String>,
        name: impl Into<String>,
        memory: u64,
        bandwidth_ppm: u64,
        priority: i32,
    ) -> Result<Self, QosError> {
        Self::new(
            id,
            name,
            memory,
            memory,
            bandwidth_ppm,
            bandwidth_ppm,
            priority,
        )?
        .expect_tier(QosTier::Guaranteed)
    }

    /// A Burstable task.
    ///
    /// # Errors
    ///
    /// [`QosError::InvalidTask`] when the values are inconsistent or do not
    /// make a Burstable task (all zero, or request = limit for both).
    pub fn burstable(
        id: impl Into<String>,
        name: impl Into<String>,
        memory_request: u64,
        memory_limit: u64,
        bandwidth_request_ppm: u64,
        bandwidth_limit_ppm: u64,
        priority: i32,
    ) -> Result<Self, QosError> {
        Self::new(
            id,
            name,
            memory_request,
            memory_limit,
            bandwidth_request_ppm,
            bandwidth_limit_ppm,
            priority,
        )?
        .expect_tier(QosTier::Burstable)
    }

    /// A BestEffort task: no requests, no limits.
    pub fn best_effort(id: impl Into<String>, name: impl Into<String>, priority: i32) -> Self {
        QosTaskMeta {
            id: id.into(),
            name: name.into(),
            memory_request: 0,
            memory_limit: 0,
            bandwidth_request_ppm: 0,
            bandwidth_limit_ppm: 0,
            priority,
        }
    }

    /// The derived tier.
    pub const fn tier(&self) -> QosTier {
        QosTier::classify(
            self.memory_request,
            self.memory_limit,
            self.bandwidth_request_ppm,
            self.bandwidth_limit_ppm,
        )
    }
}

/// Why a task was admitted or refused.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum QosReason {
    /// Admitted (possibly after evicting the listed victims).
    Admitted,
    /// A task with this id is already admitted.
    DuplicateId,
    /// The request or limit is larger than the total memory: never admissible.
    ExceedsTotal {
        /// The request (or limit) in bytes.
        requested: u64,
        /// The total memory.
        total: u64,
    },
    /// The request does not fit next to the current reservations.
    InsufficientReservable {
        /// The request in bytes.
        requested: u64,
        /// Bytes already reserved.
        reserved: u64,
        /// The total memory.
        total: u64,
    },
    /// The bandwidth request does not fit next to the current reservations.
    InsufficientBandwidth {
        /// The request, ppm.
        requested_ppm: u64,
        /// Reserved, ppm.
        reserved_ppm: u64,
        /// Total, ppm.
        total_ppm: u64,
    },
    /// The request is reservable but not free, and the tasks of lower tiers
    /// do not hold enough to evict.
    InsufficientFree {
        /// Bytes needed.
        needed: u64,
        /// Bytes free.
        free: u64,
        /// Bytes the allowed victims hold.
        reclaimable: u64,
    },
    /// No memory at all is free: BestEffort tasks are refused.
    MemoryPressure,
}

impl QosReason {
    /// A short stable code (`admitted`, `duplicate_id`, `exceeds_total`,
    /// `insufficient_reservable`, `insufficient_bandwidth`,
    /// `insufficient_free`, `memory_pressure`).
    pub const fn code(&self) -> &'static str {
        match self {
            QosReason::Admitted => "admitted",
            QosReason::DuplicateId => "duplicate_id",
            QosReason::ExceedsTotal { .. } => "exceeds_total",
            QosReason::InsufficientReservable { .. } => "insufficient_reservable",
            QosReason::InsufficientBandwidth { .. } => "insufficient_bandwidth",
            QosReason::InsufficientFree { .. } => "insufficient_free",
            QosReason::MemoryPressure => "memory_pressure",
        }
    }
}

impl fmt::Display for QosReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QosReason::Admitted => f.write_str("admitted"),
            QosReason::DuplicateId => f.write_str("a task with this id is already admitted"),
            QosReason::ExceedsTotal { requested, total } => write!(
                f,
                "request of {requested} bytes exceeds the total memory of {total} bytes"
            ),
            QosReason::InsufficientReservable {
                requested,
                reserved,
                total,
            } => write!(
                f,
                "insufficient reservable memory: requested {requested} bytes, \
                 {reserved} of {total} bytes already reserved"
            ),
            QosReason::InsufficientBandwidth {
                requested_ppm,
                reserved_ppm,
                total_ppm,
            } => write!(
                f,
                "insufficient bandwidth: requested {}, {} of {} already reserved",
                ppm_to_fraction(*requested_ppm),
                ppm_to_fraction(*reserved_ppm),
                ppm_to_fraction(*total_ppm)
            ),
            QosReason::InsufficientFree {
                needed,
                free,
                reclaimable,
            } => write!(
                f,
                "insufficient free memory: needs {needed} bytes, {free} bytes free and \
                 {reclaimable} bytes reclaimable from lower tiers"
            ),
            QosReason::MemoryPressure => {
                f.write_str("memory pressure: no free memory for a BestEffort task")
            }
        }
    }
}

/// The result of evaluating (or admitting) one task.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct QosDecision {
    /// The task id.
    pub task_id: String,
    /// The task's derived tier.
    pub tier: QosTier,
    /// Why.
    pub reason: QosReason,
    /// Bytes reserved for the task (its request) if admitted, else 0.
    pub memory_reserved: u64,
    /// Bandwidth reserved (ppm) if admitted, else 0.
    pub bandwidth_reserved_ppm: u64,
    /// Tasks evicted (or, for `evaluate`, that would be) to admit it, in
    /// eviction order.
    pub evicted: Vec<String>,
}

impl QosDecision {
    /// Whether the task is (or would be) admitted.
    pub fn admitted(&self) -> bool {
        self.reason == QosReason::Admitted
    }
}

/// One admitted task's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QosTaskState {
    /// What the task asked for.
    pub meta: QosTaskMeta,
    /// Current usage in bytes.
    pub usage: u64,
    /// Admission sequence number (0, 1, 2, ...).
    pub seq: u64,
}

impl QosTaskState {
    /// Bytes held: `max(request, usage)`.
    pub fn held(&self) -> u64 {
        self.meta.memory_request.max(self.usage)
    }

    /// Usage above the request (`0` when within it).
    pub fn excess(&self) -> u64 {
        self.usage.saturating_sub(self.meta.memory_request)
    }
}

/// Counters of a [`QosPolicyEvaluator`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QosStats {
    /// Total memory in bytes.
    pub total_memory: u64,
    /// Sum of admitted requests.
    pub reserved_memory: u64,
    /// Sum of `max(request, usage)` of admitted tasks.
    pub held_memory: u64,
    /// Sum of usages.
    pub used_memory: u64,
    /// Total bandwidth, ppm.
    pub total_bandwidth_ppm: u64,
    /// Reserved bandwidth, ppm.
    pub reserved_bandwidth_ppm: u64,
    /// Admitted Guaranteed tasks.
    pub guaranteed: u64,
    /// Admitted Burstable tasks.
    pub burstable: u64,
    /// Admitted BestEffort tasks.
    pub best_effort: u64,
    /// Successful admissions so far.
    pub admitted: u64,
    /// Refused admissions so far.
    pub rejected: u64,
    /// Tasks evicted so far.
    pub evictions: u64,
    /// Tasks released so far.
    pub released: u64,
}

/// Admits tasks by QoS tier and chooses eviction victims (see the
/// [module docs](self)).
#[derive(Debug, Clone)]
pub struct QosPolicyEvaluator {
    total_memory: u64,
    total_bandwidth_ppm: u64,
    tasks: BTreeMap<String, QosTaskState>,
    reserved: u64,
    held: u64,
    used: u64,
    reserved_bw: u64,
    next_seq: u64,
    evicted: Vec<String>,
    admitted: u64,
    rejected: u64,
    evictions: u64,
    released: u64,
}

impl QosPolicyEvaluator {
    /// An evaluator for `total_memory` bytes and `total_bandwidth_ppm`
    /// (`1_000_000` = the whole device).
    pub fn new(total_memory: u64, total_bandwidth_ppm: u64) -> Self {
        QosPolicyEvaluator {
            total_memory,
            total_bandwidth_ppm,
            tasks: BTreeMap::new(),
            reserved: 0,
            held: 0,
            used: 0,
            reserved_bw: 0,
            next_seq: 0,
            evicted: Vec::new(),
            admitted: 0,
            rejected: 0,
            evictions: 0,
            released: 0,
        }
    }

    /// Total memory in bytes.
    pub fn total_memory(&self) -> u64 {
        self.total_memory
    }

    /// Total bandwidth, ppm.
    pub fn total_bandwidth_ppm(&self) -> u64 {
        self.total_bandwidth_ppm
    }

    /// Bytes not held by any task.
    pub fn free_memory(&self) -> u64 {
        self.total_memory - self.held
    }

    /// An admitted task's state.
    pub fn task(&self, id: &str) -> Option<&QosTaskState> {
        self.tasks.get(id)
    }

    /// Admitted tasks, by id.
    pub fn tasks(&self) -> impl Iterator<Item = &QosTaskState> {
        self.tasks.values()
    }

    fn decide(&self, meta: &QosTaskMeta) -> QosDecision {
        let tier = meta.tier();
        let refuse = |reason| QosDecision {
            task_id: meta.id.clone(),
            tier,
            reason,
            memory_reserved: 0,
            bandwidth_reserved_ppm: 0,
            evicted: Vec::new(),
        };
        if self.tasks.contains_key(&meta.id) {
            return refuse(QosReason::DuplicateId);
        }
        let biggest = meta.memory_request.max(meta.memory_limit);
        if biggest > self.total_memory {
            return refuse(QosReason::ExceedsTotal {
                requested: biggest,
                total: self.total_memory,
            });
        }
        if self.reserved + meta.memory_request > self.total_memory {
            return refuse(QosReason::InsufficientReservable {
                requested: meta.memory_request,
                reserved: self.reserved,
                total: self.total_memory,
            });
        }
        if self.reserved_bw.saturating_add(meta.bandwidth_request_ppm) > self.total_bandwidth_ppm {
            return refuse(QosReason::InsufficientBandwidth {
                requested_ppm: meta.bandwidth_request_ppm,
                reserved_ppm: self.reserved_bw,
                total_ppm: self.total_bandwidth_ppm,
            });
        }
        let free = self.free_memory();
        if tier == QosTier::BestEffort && free == 0 {
            return refuse(QosReason::MemoryPressure);
        }
        let mut evicted = Vec::new();
        if meta.memory_request > free {
            let needed = meta.memory_request - free;
            match self.select_victims(needed, tier, None) {
                Ok(victims) => evicted = victims,
                Err(reclaimable) => {
                    return refuse(QosReason::InsufficientFree {
                        needed: meta.memory_request,
                        free,
                        reclaimable,
                    })
                }
            }
        }
        QosDecision {
            task_id: meta.id.clone(),
            tier,
            reason: QosReason::Admitted,
            memory_reserved: meta.memory_request,
            bandwidth_reserved_ppm: meta.bandwidth_request_ppm,
            evicted,
        }
    }

    /// The eviction candidates for a requester of `tier`, in eviction order
    /// (see the [module docs](self)): BestEffort, then Burstable over their
    /// request; by excess usage (largest first), priority (lowest first), id.
    pub fn eviction_order(&self, tier: QosTier) -> Vec<&QosTaskState> {
        let mut candidates: Vec<&QosTaskState> = self
            .tasks
            .values()
            .filter(|t| {
                let victim_tier = t.meta.tier();
                victim_tier < tier
                    && (victim_tier == QosTier::BestEffort
                        || (victim_tier == QosTier::Burstable && t.excess() > 0))
            })
            .collect();
        candidates.sort_by(|a, b| {
            a.meta
                .tier()
                .cmp(&b.meta.tier())
                .then(b.excess().cmp(&a.excess()))
                .then(a.meta.priority.cmp(&b.meta.priority))
                .then(a.meta.id.cmp(&b.meta.id))
        });
        candidates
    }

    /// Victims freeing at least `needed` bytes for a requester of `tier`
    /// (excluding task `exclude`); `Err(reclaimable)` if impossible.
    fn select_victims(
        &self,
        needed: u64,
        tier: QosTier,
        exclude: Option<&str>,
    ) -> Result<Vec<String>, u64> {
        let mut freed = 0u64;
        let mut victims = Vec::new();
        for t in self.eviction_order(tier) {
            if Some(t.meta.id.as_str()) == exclude {
                continue;
            }
            if freed >= needed {
                break;
            }
            freed += t.held();
            victims.push(t.meta.id.clone());
        }
        if freed >= needed {
            Ok(victims)
        } else {
            Err(freed)
        }
    }

    /// Whether `meta` would be admitted now, and why; changes nothing.
    pub fn evaluate(&self, meta: &QosTaskMeta) -> QosDecision {
        self.decide(meta)
    }

    /// Evaluates `meta` and, if admitted, evicts the victims and reserves the
    /// task's request (its usage starts at 0).
    pub fn admit(&mut self, meta: QosTaskMeta) -> QosDecision {
        let decision = self.decide(&meta);
        if !decision.admitted() {
            self.rejected += 1;
            return decision;
        }
        for victim in &decision.evicted {
            self.evict(victim);
        }
        self.reserved += meta.memory_request;
        self.held += meta.memory_request;
        self.reserved_bw += meta.bandwidth_request_ppm;
        self.admitted += 1;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.tasks.insert(
            meta.id.clone(),
            QosTaskState {
                meta,
                usage: 0,
                seq,
            },
        );
        decision
    }

    fn remove(&mut self, id: &str) -> Option<QosTaskState> {
        let state = self.tasks.remove(id)?;
        self.reserved -= state.meta.memory_request;
        self.held -= state.held();
        self.used -= state.usage;
        self.reserved_bw -= state.meta.bandwidth_request_ppm;
        Some(state)
    }

    fn evict(&mut self, id: &str) {
        if self.remove(id).is_some() {
            self.evictions += 1;
            self.evicted.push(id.to_owned());
        }
    }

    /// Removes a finished task; returns the bytes it held.
    ///
    /// # Errors
    ///
    /// [`QosError::UnknownTask`] when `id` is not admitted.
    pub fn release(&mut self, id: &str) -> Result<u64, QosError> {
        let state = self
            .remove(id)
            .ok_or_else(|| QosError::UnknownTask(id.to_owned()))?;
        self.released += 1;
        Ok(state.held())
    }

    /// Adds `bytes` to a task's usage, evicting lower-tier tasks if the extra
    /// bytes held are not free. Returns the evicted ids (also queued for
    /// [`take_evicted`](Self::take_evicted)). On error nothing changes.
    ///
    /// # Errors
    ///
    /// [`QosError::UnknownTask`], [`QosError::OverLimit`] (usage above the
    /// limit, or above the total memory for a task without one),
    /// [`QosError::InsufficientMemory`].
    pub fn charge(&mut self, id: &str, bytes: u64) -> Result<Vec<String>, QosError> {
        let state = self
            .tasks
            .get(id)
            .ok_or_else(|| QosError::UnknownTask(id.to_owned()))?;
        let limit = match state.meta.memory_limit {
            0 => self.total_memory,
            limit => limit,
        };
        let usage = state.usage.saturating_add(bytes);
        if usage > limit {
            return Err(QosError::OverLimit {
                task: id.to_owned(),
                usage,
                limit,
            });
        }
        let old_held = state.held();
        let new_held = state.meta.memory_request.max(usage);
        let extra = new_held - old_held;
        let free = self.free_memory();
        let mut victims = Vec::new();
        if extra > free {
            victims = self
                .select_victims(extra - free, state.meta.tier(), Some(id))
                .map_err(|reclaimable| QosError::InsufficientMemory {
                    task: id.to_owned(),
                    needed: extra,
                    free,
                    reclaimable,
                })?;
        }
        for victim in &victims {
            self.evict(victim);
        }
        let state = self.tasks.get_mut(id).expect("checked above");
        state.usage = usage;
        self.held += extra;
        self.used += bytes;
        Ok(victims)
    }

    /// Subtracts `bytes` from a task's usage.
    ///
    /// # Errors
    ///
    /// [`QosError::UnknownTask`], [`QosError::Underflow`].
    pub fn uncharge(&mut self, id: &str, bytes: u64) -> Result<(), QosError> {
        let state = self
            .tasks
            .get_mut(id)
            .ok_or_else(|| QosError::UnknownTask(id.to_owned()))?;
        if bytes > state.usage {
            return Err(QosError::Underflow {
                task: id.to_owned(),
                usage: state.usage,
                bytes,
            });
        }
        let old_held = state.held();
        state.usage -= bytes;
        let new_held = state.held();
        self.held -= old_held - new_held;
        self.used -= bytes;
        Ok(())
    }

    /// Returns, and forgets, the ids evicted since the last call, in order.
    pub fn take_evicted(&mut self) -> Vec<String> {
        std::mem::take(&mut self.evicted)
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> QosStats {
        let mut s = QosStats {
            total_memory: self.total_memory,
            reserved_memory: self.reserved,
            held_memory: self.held,
            used_memory: self.used,
            total_bandwidth_ppm: self.total_bandwidth_ppm,
            reserved_bandwidth_ppm: self.reserved_bw,
            admitted: self.admitted,
            rejected: self.rejected,
            evictions: self.evictions,
            released: self.released,
            ..QosStats::default()
        };
        for t in self.tasks.values() {
            match t.meta.tier() {
                QosTier::Guaranteed => s.guaranteed += 1,
                QosTier::Burstable => s.burstable += 1,
                QosTier::BestEffort => s.best_effort += 1,
            }
        }
        s
    }

    /// Checks the invariants (tests and debugging; linear cost).
    pub fn check_invariants(&self) -> Result<(), String> {
        let reserved: u64 = self.tasks.values().map(|t| t.meta.memory_request).sum();
        let held: u64 = self.tasks.values().map(QosTaskState::held).sum();
        let used: u64 = self.tasks.values().map(|t| t.usage).sum();
        let bw: u64 = self
            .tasks
            .values()
            .map(|t| t.meta.bandwidth_request_ppm)
            .sum();
        if (reserved, held, used, bw) != (self.reserved, self.held, self.used, self.reserved_bw) {
            return Err("counters drifted".into());
        }
        if reserved > self.total_memory || held > self.total_memory {
            return Err(format!(
                "memory over-committed: reserved {reserved}, held {held}, total {}",
                self.total_memory
            ));
        }
        if bw > self.total_bandwidth_ppm {
            return Err("bandwidth over-committed".into());
        }
        for t in self.tasks.values() {
            if t.meta.memory_limit > 0 && t.usage > t.meta.memory_limit {
                return Err(format!("task {} over its limit", t.meta.id));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn classify_follows_kubernetes() {
        assert_eq!(QosTier::classify(1, 1, 0, 0), QosTier::Guaranteed);
        assert_eq!(QosTier::classify(1, 1, 5, 5), QosTier::Guaranteed);
        assert_eq!(QosTier::classify(1, 1, 5, 0), QosTier::Burstable);
        assert_eq!(QosTier::classify(1, 2, 0, 0), QosTier::Burstable);
        assert_eq!(QosTier::classify(1, 0, 0, 0), QosTier::Burstable);
        assert_eq!(QosTier::classify(0, 0, 0, 0), QosTier::BestEffort);
        assert_eq!(QosTier::classify(0, 0, 0, 7), QosTier::Burstable);
        assert_eq!(QosTier::parse("Best-Effort"), Some(QosTier::BestEffort));
        assert!(QosTier::Guaranteed > QosTier::Burstable);
    }

    #[test]
    fn constructors_check_their_tier() {
        assert!(QosTaskMeta::guaranteed("a", "a", 0, 0, 0).is_err());
        assert!(QosTaskMeta::burstable("a", "a", 5, 5, 0, 0, 0).is_err());
        assert!(QosTaskMeta::burstable("a", "a", 6, 5, 0, 0, 0).is_err());
        assert_eq!(
            QosTaskMeta::burstable("a", "a", 5, 0, 0, 0, 0)
                .unwrap()
                .tier(),
            QosTier::Burstable
        );
        assert_eq!(
            QosTaskMeta::best_effort("b", "b", 0).tier(),
            QosTier::BestEffort
        );
    }

    #[test]
    fn seed_example() {
        let mut ev = QosPolicyEvaluator::new(8 * GIB, PPM);
        let task = QosTaskMeta::guaranteed("task-1", "Critical Task", GIB / 4, 0, 0).unwrap();
        let d = ev.evaluate(&task);
        assert!(d.admitted());
        assert_eq!(d.tier, QosTier::Guaranteed);
        assert_eq!(ev.stats().reserved_memory, 0, "evaluate changes nothing");
        assert!(ev.admit(task.clone()).admitted());
        assert_eq!(ev.admit(task).reason, QosReason::DuplicateId);
        ev.check_invariants().unwrap();
    }

    #[test]
    fn eviction_order_and_tier_rule() {
        let mut ev = QosPolicyEvaluator::new(10 * GIB, PPM);
        let be1 = QosTaskMeta::best_effort("be1", "", 5);
        let be2 = QosTaskMeta::best_effort("be2", "", 1);
        let bu = QosTaskMeta::burstable("bu", "", GIB, 0, 0, 0, 0).unwrap();
        for t in [be1, be2, bu] {
            assert!(ev.admit(t).admitted());
        }
        ev.charge("be1", 2 * GIB).unwrap();
        ev.charge("be2", 2 * GIB).unwrap();
        ev.charge("bu", 3 * GIB).unwrap(); // 2 GiB over its request
        assert_eq!(ev.free_memory(), 3 * GIB);
        // A Burstable requester may only evict BestEffort tasks; equal usage,
        // so the lower priority (be2) goes first.
        let b2 = QosTaskMeta::burstable("b2", "", 4 * GIB, 0, 0, 0, 0).unwrap();
        let d = ev.evaluate(&b2);
        assert_eq!(d.evicted, vec!["be2".to_string()]);
        // A BestEffort task may evict nobody.
        assert!(matches!(
            ev.charge("be1", 4 * GIB),
            Err(QosError::InsufficientMemory { .. })
        ));
        // A Guaranteed one may take BestEffort then Burstable-over-request.
        let g = QosTaskMeta::guaranteed("g", "", 10 * GIB, 0, 0).unwrap();
        let d = ev.admit(g);
        assert_eq!(
            d.reason,
            QosReason::InsufficientReservable {
                requested: 10 * GIB,
                reserved: GIB,
                total: 10 * GIB
            }
        );
        let g = QosTaskMeta::guaranteed("g", "", 7 * GIB, 0, 0).unwrap();
        let d = ev.admit(g);
        assert!(d.admitted());
        // Equal excess: lower priority first; 4 GiB freed is enough, so the
        // Burstable task over its request survives.
        assert_eq!(d.evicted, vec!["be2", "be1"]);
        assert_eq!(ev.take_evicted(), vec!["be2", "be1"]);
        // Its burst is evictable only for a Guaranteed task.
        let order: Vec<_> = ev
            .eviction_order(QosTier::Guaranteed)
            .iter()
            .map(|t| t.meta.id.clone())
            .collect();
        assert_eq!(order, vec!["bu"]);
        assert!(ev.eviction_order(QosTier::Burstable).is_empty());
        ev.check_invariants().unwrap();
        // Nothing evicts a Guaranteed task.
        let g2 = QosTaskMeta::guaranteed("g2", "", 4 * GIB, 0, 0).unwrap();
        assert_eq!(ev.admit(g2).reason.code(), "insufficient_reservable");
    }

    #[test]
    fn bandwidth_and_limits() {
        let mut ev = QosPolicyEvaluator::new(GIB, PPM);
        let a = QosTaskMeta::guaranteed("a", "", 1024, 600_000, 0).unwrap();
        let b = QosTaskMeta::guaranteed("b", "", 1024, 600_000, 0).unwrap();
        assert!(ev.admit(a).admitted());
        assert_eq!(ev.admit(b).reason.code(), "insufficient_bandwidth");
        assert!(matches!(
            ev.charge("a", 1025),
            Err(QosError::OverLimit { .. })
        ));
        ev.charge("a", 1024).unwrap();
        ev.uncharge("a", 24).unwrap();
        assert!(ev.uncharge("a", 2000).is_err());
        assert_eq!(ev.release("a"), Ok(1024));
        assert!(ev.release("a").is_err());
        ev.check_invariants().unwrap();
    }
}
