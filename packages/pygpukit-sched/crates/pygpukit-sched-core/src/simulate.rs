//! Discrete-event replay of a trace of task arrivals through a [`Scheduler`].
//!
//! Time is in integer nanoseconds. At each instant, in this order: tasks
//! finishing at that instant complete (or fail) and release their memory,
//! cancellations due then are applied, tasks arriving then are submitted (in
//! trace order); then [`Scheduler::schedule`] admits what fits and every
//! admitted task starts at once and finishes `duration_ns` later. The result
//! is fully determined by the trace.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;

use crate::admission::{AdmissionRequest, TenantQuota};
use crate::scheduler::{SchedError, Scheduler, SchedulerStats, TaskState};

/// One task of a trace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TraceTask {
    /// Unique id.
    pub id: String,
    /// Name (for display).
    pub name: String,
    /// Tenant (`""`: default).
    pub tenant: String,
    /// Arrival time, ns.
    pub arrival_ns: u64,
    /// Run time once started, ns.
    pub duration_ns: u64,
    /// Bytes reserved while admitted or running.
    pub memory: u64,
    /// Priority (higher first).
    pub priority: i32,
    /// Cancel at this time if not finished by then.
    pub cancel_at_ns: Option<u64>,
    /// Finish as failed instead of completed.
    pub fail: bool,
}

/// A trace: capacity, tenant quotas and tasks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Trace {
    /// Device memory capacity in bytes.
    pub capacity: u64,
    /// Tenant quotas.
    pub quotas: Vec<(String, TenantQuota)>,
    /// Tasks, in any order (ties in arrival time keep this order).
    pub tasks: Vec<TraceTask>,
}

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SimEventKind {
    /// The task arrived and was queued.
    Submit,
    /// The task can never be admitted.
    Reject,
    /// Memory reserved.
    Admit,
    /// Started running.
    Start,
    /// Finished successfully.
    Complete,
    /// Finished with a failure.
    Fail,
    /// Cancelled.
    Cancel,
}

impl SimEventKind {
    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            SimEventKind::Submit => "submit",
            SimEventKind::Reject => "reject",
            SimEventKind::Admit => "admit",
            SimEventKind::Start => "start",
            SimEventKind::Complete => "complete",
            SimEventKind::Fail => "fail",
            SimEventKind::Cancel => "cancel",
        }
    }
}

impl fmt::Display for SimEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One line of the simulation log.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SimEvent {
    /// When, ns.
    pub time_ns: u64,
    /// What.
    pub kind: SimEventKind,
    /// Which task.
    pub task_id: String,
    /// Details (a reason, a wait time).
    pub detail: String,
}

/// The result of [`simulate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimReport {
    /// Every event, in order.
    pub events: Vec<SimEvent>,
    /// The scheduler's final counters.
    pub stats: SchedulerStats,
    /// Time of the last event, ns.
    pub makespan_ns: u64,
    /// Tasks that started.
    pub started: u64,
    /// Sum of (admission time - arrival time) of started tasks, ns.
    pub total_wait_ns: u64,
    /// Largest wait, ns.
    pub max_wait_ns: u64,
    /// Tasks still queued at the end (they could never fit a quota).
    pub unscheduled: Vec<String>,
    /// Reservation-time integral: sum over tasks of bytes × ns held.
    pub byte_ns: u128,
}

impl SimReport {
    /// Mean wait of started tasks, ns (0 if none started).
    pub fn mean_wait_ns(&self) -> u64 {
        self.total_wait_ns.checked_div(self.started).unwrap_or(0)
    }

    /// Mean fraction of the capacity reserved over the makespan.
    pub fn utilization(&self) -> f64 {
        let denom = self.stats.capacity as f64 * self.makespan_ns as f64;
        if denom > 0.0 {
            self.byte_ns as f64 / denom
        } else {
            0.0
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Finish = 0,
    Cancel = 1,
    Arrive = 2,
}

/// Runs a trace (see the [module docs](self)).
///
/// # Errors
///
/// [`SchedError::DuplicateId`] when two tasks share an id.
pub fn simulate(trace: &Trace) -> Result<SimReport, SchedError> {
    let mut sched = Scheduler::new(trace.capacity);
    for (tenant, quota) in &trace.quotas {
        sched.set_quota(tenant.clone(), *quota);
    }
    let mut heap: BinaryHeap<Reverse<(u64, Step, u64, usize)>> = BinaryHeap::new();
    for (i, t) in trace.tasks.iter().enumerate() {
        heap.push(Reverse((t.arrival_ns, Step::Arrive, i as u64, i)));
        if let Some(at) = t.cancel_at_ns {
            heap.push(Reverse((at, Step::Cancel, i as u64, i)));
        }
    }
    let mut index = std::collections::HashMap::new();
    for (i, t) in trace.tasks.iter().enumerate() {
        if index.insert(t.id.as_str(), i).is_some() {
            return Err(SchedError::DuplicateId(t.id.clone()));
        }
    }
    let mut admitted_at = vec![0u64; trace.tasks.len()];
    let mut report = SimReport {
        events: Vec::new(),
        stats: SchedulerStats::default(),
        makespan_ns: 0,
        started: 0,
        total_wait_ns: 0,
        max_wait_ns: 0,
        unscheduled: Vec::new(),
        byte_ns: 0,
    };
    let mut finish_seq = 0u64;
    let log = |events: &mut Vec<SimEvent>, time_ns, kind, id: &str, detail: String| {
        events.push(SimEvent {
            time_ns,
            kind,
            task_id: id.to_owned(),
            detail,
        });
    };
    while let Some(Reverse((now, _, _, _))) = heap.peek().copied() {
        while let Some(Reverse((t, step, _, i))) = heap.peek().copied() {
            if t != now {
                break;
            }
            heap.pop();
            let task = &trace.tasks[i];
            let id = task.id.as_str();
            match step {
                Step::Finish => {
                    if sched.state(id) == Some(TaskState::Running) {
                        let kind = if task.fail {
                            sched.fail(id)?;
                            SimEventKind::Fail
                        } else {
                            sched.complete(id)?;
                            SimEventKind::Complete
                        };
                        report.byte_ns +=
                            u128::from(task.memory) * u128::from(now - admitted_at[i]);
                        log(&mut report.events, now, kind, id, String::new());
                    }
                }
                Step::Cancel => {
                    if let Some(state) = sched.state(id) {
                        if !state.is_terminal() {
                            let from = sched.cancel(id)?;
                            if from.holds_memory() {
                                report.byte_ns +=
                                    u128::from(task.memory) * u128::from(now - admitted_at[i]);
                            }
                            log(
                                &mut report.events,
                                now,
                                SimEventKind::Cancel,
                                id,
                                format!("was {from}"),
                            );
                        }
                    }
                }
                Step::Arrive => {
                    // A cancellation due before the arrival means "never run".
                    if task.cancel_at_ns.is_some_and(|c| c < now) {
                        continue;
                    }
                    let req = AdmissionRequest {
                        id: task.id.clone(),
                        memory: task.memory,
                        priority: task.priority,
                        tenant: task.tenant.clone(),
                    };
                    match sched.submit(req, task.name.clone()) {
                        Ok(_) => log(
                            &mut report.events,
                            now,
                            SimEventKind::Submit,
                            id,
                            format!("memory={} priority={}", task.memory, task.priority),
                        ),
                        Err(SchedError::Rejected { reason, .. }) => log(
                            &mut report.events,
                            now,
                            SimEventKind::Reject,
                            id,
                            reason.to_string(),
                        ),
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        for id in sched.schedule() {
            let i = index[id.as_str()];
            let task = &trace.tasks[i];
            sched.start(&id)?;
            let wait = now - task.arrival_ns;
            admitted_at[i] = now;
            report.started += 1;
            report.total_wait_ns += wait;
            report.max_wait_ns = report.max_wait_ns.max(wait);
            log(
                &mut report.events,
                now,
                SimEventKind::Admit,
                &id,
                format!("waited {wait} ns"),
            );
            log(
                &mut report.events,
                now,
                SimEventKind::Start,
                &id,
                String::new(),
            );
            heap.push(Reverse((
                now.saturating_add(task.duration_ns),
                Step::Finish,
                finish_seq,
                i,
            )));
            finish_seq += 1;
        }
    }
    report.makespan_ns = report.events.last().map_or(0, |e| e.time_ns);
    report.unscheduled = sched.pending();
    report.stats = sched.stats();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, arrival: u64, duration: u64, memory: u64, priority: i32) -> TraceTask {
        TraceTask {
            id: id.into(),
            name: id.into(),
            tenant: String::new(),
            arrival_ns: arrival,
            duration_ns: duration,
            memory,
            priority,
            cancel_at_ns: None,
            fail: false,
        }
    }

    #[test]
    fn small_trace() {
        let mut cancelled = task("d", 0, 100, 10, 0);
        cancelled.cancel_at_ns = Some(5);
        let trace = Trace {
            capacity: 100,
            quotas: Vec::new(),
            tasks: vec![
                task("a", 0, 10, 60, 0),
                task("b", 1, 10, 60, 5),
                task("c", 2, 5, 30, 1),
                task("big", 3, 1, 1000, 0),
                cancelled,
            ],
        };
        let r = simulate(&trace).unwrap();
        let starts: Vec<(u64, &str)> = r
            .events
            .iter()
            .filter(|e| e.kind == SimEventKind::Start)
            .map(|e| (e.time_ns, e.task_id.as_str()))
            .collect();
        // a and d at 0; c at 2 (fits next to a); b (priority 5) when a ends.
        assert_eq!(starts, vec![(0, "a"), (0, "d"), (2, "c"), (10, "b")]);
        assert_eq!(r.makespan_ns, 20);
        assert_eq!(
            (r.stats.completed, r.stats.rejected, r.stats.cancelled),
            (3, 1, 1)
        );
        assert_eq!(r.max_wait_ns, 9);
        assert_eq!(simulate(&trace).unwrap(), r, "deterministic");
    }
}
