//! Task scheduler: a priority queue with memory reservation and a task life
//! cycle, built on the [`AdmissionController`].
//!
//! ```text
//! submit ─► Pending ─schedule()─► Admitted ─start()─► Running ─complete()─► Completed
//!              │                     │                   └──────fail()────► Failed
//!              └──────── cancel() ───┴──────── cancel() ─────────────────► Cancelled
//! submit of a request that can never fit ─► Rejected
//! ```
//!
//! The life cycle follows a Kubernetes pod's phases (Pending, Running,
//! Succeeded, Failed), with `Admitted` (bound, memory reserved, not yet
//! started) made explicit. Memory is reserved on admission and released when
//! the task reaches a terminal state. [`Scheduler::schedule`] admits queued
//! tasks in the controller's order — priority (highest first), then submit
//! sequence, then id — skipping those that do not fit (no head-of-line
//! blocking, as in the Kubernetes scheduler).

use std::collections::HashMap;
use std::fmt;

use crate::admission::{
    AdmissionController, AdmissionReason, AdmissionRequest, AdmissionStats, TenantQuota,
};

/// A task's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TaskState {
    /// Queued, no memory reserved.
    Pending,
    /// Memory reserved, not yet started.
    Admitted,
    /// Started.
    Running,
    /// Finished successfully (terminal).
    Completed,
    /// Finished with a failure (terminal).
    Failed,
    /// Cancelled (terminal).
    Cancelled,
    /// Refused at submission: can never fit (terminal).
    Rejected,
}

impl TaskState {
    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            TaskState::Pending => "pending",
            TaskState::Admitted => "admitted",
            TaskState::Running => "running",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
            TaskState::Rejected => "rejected",
        }
    }

    /// Whether the state is final.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Cancelled | TaskState::Rejected
        )
    }

    /// Whether the task holds a memory reservation in this state.
    pub const fn holds_memory(self) -> bool {
        matches!(self, TaskState::Admitted | TaskState::Running)
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Errors of [`Scheduler`] operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedError {
    /// The id was already submitted.
    DuplicateId(String),
    /// The id was never submitted.
    UnknownTask(String),
    /// The action is not allowed in the task's state.
    InvalidTransition {
        /// Task id.
        task: String,
        /// Its state.
        state: TaskState,
        /// The refused action (`start`, `complete`, `fail`, `cancel`).
        action: &'static str,
    },
    /// The request can never be admitted (the task is now `Rejected`).
    Rejected {
        /// Task id.
        task: String,
        /// Why.
        reason: AdmissionReason,
    },
}

impl fmt::Display for SchedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedError::DuplicateId(id) => write!(f, "task {id:?} was already submitted"),
            SchedError::UnknownTask(id) => write!(f, "unknown task {id:?}"),
            SchedError::InvalidTransition {
                task,
                state,
                action,
            } => write!(f, "cannot {action} task {task:?}: it is {state}"),
            SchedError::Rejected { task, reason } => {
                write!(f, "task {task:?} rejected: {reason}")
            }
        }
    }
}

impl std::error::Error for SchedError {}

/// What the scheduler knows about one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    /// The request (id, memory, priority, tenant).
    pub request: AdmissionRequest,
    /// Human-readable name.
    pub name: String,
    /// Current state.
    pub state: TaskState,
    /// Submit sequence number (0, 1, 2, ...).
    pub seq: u64,
    /// The last admission decision (`None` before the first).
    pub last_reason: Option<AdmissionReason>,
}

/// Counters of a [`Scheduler`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SchedulerStats {
    /// Tasks submitted (including rejected).
    pub submitted: u64,
    /// Tasks in each state now.
    pub pending: u64,
    /// See [`TaskState::Admitted`].
    pub admitted: u64,
    /// See [`TaskState::Running`].
    pub running: u64,
    /// See [`TaskState::Completed`].
    pub completed: u64,
    /// See [`TaskState::Failed`].
    pub failed: u64,
    /// See [`TaskState::Cancelled`].
    pub cancelled: u64,
    /// See [`TaskState::Rejected`].
    pub rejected: u64,
    /// Memory capacity.
    pub capacity: u64,
    /// Memory reserved now.
    pub reserved: u64,
    /// Highest reservation so far.
    pub peak_reserved: u64,
}

/// Priority queue plus memory reservation plus life cycle (see the
/// [module docs](self)).
#[derive(Debug, Clone)]
pub struct Scheduler {
    controller: AdmissionController,
    tasks: HashMap<String, TaskRecord>,
    submitted: u64,
    counts: [u64; 7],
}

fn slot(state: TaskState) -> usize {
    state as usize
}

impl Scheduler {
    /// A scheduler for `capacity` bytes of device memory.
    pub fn new(capacity: u64) -> Self {
        Scheduler {
            controller: AdmissionController::new(capacity),
            tasks: HashMap::new(),
            submitted: 0,
            counts: [0; 7],
        }
    }

    /// The admission controller (read-only).
    pub fn controller(&self) -> &AdmissionController {
        &self.controller
    }

    /// Sets a tenant's quota.
    pub fn set_quota(&mut self, tenant: impl Into<String>, quota: TenantQuota) {
        self.controller.set_quota(tenant, quota);
    }

    fn set_state(&mut self, id: &str, state: TaskState) {
        let record = self.tasks.get_mut(id).expect("known task");
        self.counts[slot(record.state)] -= 1;
        self.counts[slot(state)] += 1;
        record.state = state;
    }

    /// Submits a task (state `Pending`). Returns its submit sequence number.
    ///
    /// # Errors
    ///
    /// [`SchedError::DuplicateId`]; [`SchedError::Rejected`] when the request
    /// is larger than the capacity or its tenant's memory quota (the task is
    /// recorded as `Rejected`).
    pub fn submit(
        &mut self,
        request: AdmissionRequest,
        name: impl Into<String>,
    ) -> Result<u64, SchedError> {
        if self.tasks.contains_key(&request.id) {
            return Err(SchedError::DuplicateId(request.id));
        }
        let never =
            match self.controller.evaluate(&request) {
                r @ (AdmissionReason::ExceedsCapacity { .. }
                | AdmissionReason::ExceedsQuota { .. }) => Some(r),
                _ => None,
            };
        let seq = self.submitted;
        self.submitted += 1;
        let id = request.id.clone();
        let state = if never.is_some() {
            TaskState::Rejected
        } else {
            self.controller
                .submit(request.clone())
                .map_err(|_| SchedError::DuplicateId(id.clone()))?;
            TaskState::Pending
        };
        self.counts[slot(state)] += 1;
        self.tasks.insert(
            id.clone(),
            TaskRecord {
                request,
                name: name.into(),
                state,
                seq,
                last_reason: never.clone(),
            },
        );
        match never {
            Some(reason) => Err(SchedError::Rejected { task: id, reason }),
            None => Ok(seq),
        }
    }

    /// Admits every queued task that fits, in queue order; returns the
    /// admitted ids in that order (their state becomes `Admitted`).
    pub fn schedule(&mut self) -> Vec<String> {
        let mut admitted = Vec::new();
        for decision in self.controller.process_pending() {
            let record = self.tasks.get_mut(&decision.task_id).expect("known task");
            record.last_reason = Some(decision.reason.clone());
            if decision.reason.is_admitted() {
                self.set_state(&decision.task_id, TaskState::Admitted);
                admitted.push(decision.task_id);
            } else if decision.reason.is_permanent() {
                self.set_state(&decision.task_id, TaskState::Rejected);
            }
        }
        admitted
    }

    fn transition(
        &mut self,
        id: &str,
        action: &'static str,
        allowed: &[TaskState],
        to: TaskState,
    ) -> Result<TaskState, SchedError> {
        let record = self
            .tasks
            .get(id)
            .ok_or_else(|| SchedError::UnknownTask(id.to_owned()))?;
        let from = record.state;
        if !allowed.contains(&from) {
            return Err(SchedError::InvalidTransition {
                task: id.to_owned(),
                state: from,
                action,
            });
        }
        if from == TaskState::Pending {
            self.controller.withdraw(id);
        }
        if from.holds_memory() && !to.holds_memory() {
            self.controller.release(id);
        }
        self.set_state(id, to);
        Ok(from)
    }

    /// `Admitted` → `Running`.
    ///
    /// # Errors
    ///
    /// [`SchedError::UnknownTask`], [`SchedError::InvalidTransition`].
    pub fn start(&mut self, id: &str) -> Result<(), SchedError> {
        self.transition(id, "start", &[TaskState::Admitted], TaskState::Running)
            .map(drop)
    }

    /// `Running` → `Completed`; releases the reservation.
    ///
    /// # Errors
    ///
    /// [`SchedError::UnknownTask`], [`SchedError::InvalidTransition`].
    pub fn complete(&mut self, id: &str) -> Result<(), SchedError> {
        self.transition(id, "complete", &[TaskState::Running], TaskState::Completed)
            .map(drop)
    }

    /// `Running` → `Failed`; releases the reservation.
    ///
    /// # Errors
    ///
    /// [`SchedError::UnknownTask`], [`SchedError::InvalidTransition`].
    pub fn fail(&mut self, id: &str) -> Result<(), SchedError> {
        self.transition(id, "fail", &[TaskState::Running], TaskState::Failed)
            .map(drop)
    }

    /// `Pending`, `Admitted` or `Running` → `Cancelled`; releases the
    /// reservation if any. Returns the state it was in.
    ///
    /// # Errors
    ///
    /// [`SchedError::UnknownTask`], [`SchedError::InvalidTransition`].
    pub fn cancel(&mut self, id: &str) -> Result<TaskState, SchedError> {
        self.transition(
            id,
            "cancel",
            &[TaskState::Pending, TaskState::Admitted, TaskState::Running],
            TaskState::Cancelled,
        )
    }

    /// A task's state.
    pub fn state(&self, id: &str) -> Option<TaskState> {
        self.tasks.get(id).map(|r| r.state)
    }

    /// A task's record.
    pub fn task(&self, id: &str) -> Option<&TaskRecord> {
        self.tasks.get(id)
    }

    /// Queued ids in the order `schedule` examines them.
    pub fn pending(&self) -> Vec<String> {
        self.controller.pending()
    }

    /// The admission controller's counters.
    pub fn admission_stats(&self) -> AdmissionStats {
        self.controller.stats()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> SchedulerStats {
        let a = self.controller.stats();
        let c = &self.counts;
        SchedulerStats {
            submitted: self.submitted,
            pending: c[slot(TaskState::Pending)],
            admitted: c[slot(TaskState::Admitted)],
            running: c[slot(TaskState::Running)],
            completed: c[slot(TaskState::Completed)],
            failed: c[slot(TaskState::Failed)],
            cancelled: c[slot(TaskState::Cancelled)],
            rejected: c[slot(TaskState::Rejected)],
            capacity: a.capacity,
            reserved: a.reserved,
            peak_reserved: a.peak_reserved,
        }
    }

    /// Checks the invariants (tests and debugging; linear cost).
    pub fn check_invariants(&self) -> Result<(), String> {
        self.controller.check_invariants()?;
        let held: u64 = self
            .tasks
            .values()
            .filter(|r| r.state.holds_memory())
            .map(|r| r.request.memory)
            .sum();
        if held != self.controller.reserved() {
            return Err(format!(
                "reservations drifted: tasks hold {held}, controller has {}",
                self.controller.reserved()
            ));
        }
        for r in self.tasks.values() {
            if r.state.holds_memory() != self.controller.is_admitted(&r.request.id) {
                return Err(format!("task {} state out of sync", r.request.id));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn life_cycle() {
        let mut s = Scheduler::new(100);
        s.submit(AdmissionRequest::new("a", 60, 1), "A").unwrap();
        s.submit(AdmissionRequest::new("b", 60, 2), "B").unwrap();
        s.submit(AdmissionRequest::new("c", 30, 0), "C").unwrap();
        assert!(matches!(
            s.submit(AdmissionRequest::new("x", 101, 0), "X"),
            Err(SchedError::Rejected { .. })
        ));
        assert_eq!(s.state("x"), Some(TaskState::Rejected));
        assert!(matches!(
            s.submit(AdmissionRequest::new("a", 1, 0), ""),
            Err(SchedError::DuplicateId(_))
        ));
        assert_eq!(s.schedule(), vec!["b", "c"]);
        assert_eq!(s.state("a"), Some(TaskState::Pending));
        assert_eq!(
            s.task("a").unwrap().last_reason.as_ref().unwrap().code(),
            "insufficient_memory"
        );
        assert!(s.complete("b").is_err());
        s.start("b").unwrap();
        assert!(s.start("b").is_err());
        s.complete("b").unwrap();
        assert_eq!(s.schedule(), vec!["a"]);
        assert_eq!(s.cancel("c"), Ok(TaskState::Admitted));
        s.start("a").unwrap();
        s.fail("a").unwrap();
        let st = s.stats();
        assert_eq!(
            (
                st.completed,
                st.failed,
                st.cancelled,
                st.rejected,
                st.reserved
            ),
            (1, 1, 1, 1, 0)
        );
        assert_eq!(st.peak_reserved, 90);
        s.check_invariants().unwrap();
        assert!(matches!(s.start("zz"), Err(SchedError::UnknownTask(_))));
    }

    #[test]
    fn cancel_pending_withdraws() {
        let mut s = Scheduler::new(10);
        s.submit(AdmissionRequest::new("a", 5, 0), "").unwrap();
        s.cancel("a").unwrap();
        assert!(s.pending().is_empty());
        assert!(s.schedule().is_empty());
        s.check_invariants().unwrap();
    }
}
