//! Bindings of the scheduler, admission control, QoS, pacing, partitions,
//! transfer queue and trace simulation.

use pyo3::create_exception;
use pyo3::exceptions::{PyKeyError, PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use pygpukit_sched_core::admission::{
    AdmissionController, AdmissionEvent, AdmissionReason, AdmissionRequest, Decision, TenantQuota,
};
use pygpukit_sched_core::pacing::{KernelPacingEngine, PacingError, StreamStats};
use pygpukit_sched_core::partition::{
    Partition, PartitionConfig, PartitionError, PartitionLimits, PartitionManager,
};
use pygpukit_sched_core::qos::{
    fraction_to_ppm, ppm_to_fraction, QosDecision, QosError, QosPolicyEvaluator, QosTaskMeta,
    QosTier, PPM,
};
use pygpukit_sched_core::scheduler::{SchedError, Scheduler};
use pygpukit_sched_core::simulate::{simulate, Trace, TraceTask};
use pygpukit_sched_core::spill::{self, SpillCandidate};
use pygpukit_sched_core::sync::Shared;
use pygpukit_sched_core::transfer::{Transfer, TransferKind, TransferQueue};

create_exception!(
    pygpukit_sched,
    ResourceExhaustedError,
    PyMemoryError,
    "A request does not fit: a quota, a limit, the free memory or the compute/bandwidth shares."
);
create_exception!(
    pygpukit_sched,
    TaskStateError,
    PyValueError,
    "An action that the task's current state does not allow (e.g. completing a pending task)."
);
create_exception!(
    pygpukit_sched,
    TaskRejectedError,
    PyValueError,
    "A submitted task that can never be admitted (larger than the capacity or its tenant's quota).\n\n\
     Attribute ``reason`` is the decision's reason code."
);

fn fraction(name: &str, value: f64) -> PyResult<u64> {
    fraction_to_ppm(value).ok_or_else(|| {
        PyValueError::new_err(format!(
            "{name} must be a finite fraction >= 0, got {value}"
        ))
    })
}

fn fraction_or_zero(name: &str, value: Option<f64>) -> PyResult<u64> {
    value.map_or(Ok(0), |v| fraction(name, v))
}

fn set_all<'py, V: IntoPyObject<'py> + Copy>(
    dict: &Bound<'py, PyDict>,
    items: &[(&str, V)],
) -> PyResult<()> {
    for (k, v) in items {
        dict.set_item(*k, *v)?;
    }
    Ok(())
}

// ---------------------------------------------------------------- QoS ----

/// QoS tier of a task or partition (the Kubernetes QoS classes).
#[pyclass(
    eq,
    eq_int,
    frozen,
    hash,
    from_py_object,
    module = "pygpukit_sched",
    name = "QosTier"
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum PyQosTier {
    /// Request equals limit: fully reserved, never evicted.
    #[pyo3(name = "GUARANTEED")]
    Guaranteed,
    /// A request below its limit: the burst may be reclaimed.
    #[pyo3(name = "BURSTABLE")]
    Burstable,
    /// No request, no limit: evicted first.
    #[pyo3(name = "BEST_EFFORT")]
    BestEffort,
}

impl From<QosTier> for PyQosTier {
    fn from(t: QosTier) -> Self {
        match t {
            QosTier::Guaranteed => PyQosTier::Guaranteed,
            QosTier::Burstable => PyQosTier::Burstable,
            QosTier::BestEffort => PyQosTier::BestEffort,
        }
    }
}

impl From<PyQosTier> for QosTier {
    fn from(t: PyQosTier) -> Self {
        match t {
            PyQosTier::Guaranteed => QosTier::Guaranteed,
            PyQosTier::Burstable => QosTier::Burstable,
            PyQosTier::BestEffort => QosTier::BestEffort,
        }
    }
}

#[pymethods]
impl PyQosTier {
    /// The snake-case name: ``guaranteed``, ``burstable`` or ``best_effort``.
    #[getter]
    fn label(&self) -> &'static str {
        QosTier::from(*self).name()
    }

    /// CUDA stream priority for work of this tier (lower is more urgent).
    #[getter]
    fn stream_priority(&self) -> i32 {
        QosTier::from(*self).stream_priority()
    }

    /// Parse ``guaranteed`` / ``burstable`` / ``best_effort`` (case-insensitive).
    #[staticmethod]
    fn parse(name: &str) -> PyResult<PyQosTier> {
        QosTier::parse(name)
            .map(Into::into)
            .ok_or_else(|| PyValueError::new_err(format!("unknown QoS tier {name:?}")))
    }

    fn __str__(&self) -> &'static str {
        self.label()
    }
}

fn qos_error(err: QosError) -> PyErr {
    let msg = err.to_string();
    match err {
        QosError::InvalidTask(_) | QosError::Underflow { .. } => PyValueError::new_err(msg),
        QosError::UnknownTask(_) => PyKeyError::new_err(msg),
        QosError::OverLimit { .. } | QosError::InsufficientMemory { .. } => {
            ResourceExhaustedError::new_err(msg)
        }
    }
}

/// What a task asks for; its QoS tier is derived from requests and limits.
#[pyclass(frozen, eq, hash, module = "pygpukit_sched", name = "QosTaskMeta")]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyQosTaskMeta {
    inner: QosTaskMeta,
}

#[pymethods]
impl PyQosTaskMeta {
    #[new]
    #[pyo3(signature = (id, name, memory_request=0, memory_limit=0, bandwidth_request=0.0, bandwidth_limit=0.0, priority=0))]
    fn new(
        id: String,
        name: String,
        memory_request: u64,
        memory_limit: u64,
        bandwidth_request: f64,
        bandwidth_limit: f64,
        priority: i32,
    ) -> PyResult<Self> {
        let inner = QosTaskMeta::new(
            id,
            name,
            memory_request,
            memory_limit,
            fraction("bandwidth_request", bandwidth_request)?,
            fraction("bandwidth_limit", bandwidth_limit)?,
            priority,
        )
        .map_err(qos_error)?;
        Ok(PyQosTaskMeta { inner })
    }

    /// A Guaranteed task: request = limit = ``memory`` bytes (and ``bandwidth``).
    #[staticmethod]
    #[pyo3(signature = (id, name, memory, bandwidth=0.0, priority=0))]
    fn guaranteed(
        id: String,
        name: String,
        memory: u64,
        bandwidth: f64,
        priority: i32,
    ) -> PyResult<Self> {
        let bw = fraction("bandwidth", bandwidth)?;
        QosTaskMeta::guaranteed(id, name, memory, bw, priority)
            .map(|inner| PyQosTaskMeta { inner })
            .map_err(qos_error)
    }

    /// A Burstable task: ``memory_request`` bytes reserved, up to ``memory_limit``
    /// (0: no limit).
    #[staticmethod]
    #[pyo3(signature = (id, name, memory_request, memory_limit=0, bandwidth_request=0.0, bandwidth_limit=None, priority=0))]
    fn burstable(
        id: String,
        name: String,
        memory_request: u64,
        memory_limit: u64,
        bandwidth_request: f64,
        bandwidth_limit: Option<f64>,
        priority: i32,
    ) -> PyResult<Self> {
        let bw_req = fraction("bandwidth_request", bandwidth_request)?;
        let bw_lim = fraction_or_zero("bandwidth_limit", bandwidth_limit)?;
        QosTaskMeta::burstable(
            id,
            name,
            memory_request,
            memory_limit,
            bw_req,
            bw_lim,
            priority,
        )
        .map(|inner| PyQosTaskMeta { inner })
        .map_err(qos_error)
    }

    /// A BestEffort task: no request, no limit.
    #[staticmethod]
    #[pyo3(signature = (id, name, priority=0))]
    fn best_effort(id: String, name: String, priority: i32) -> Self {
        PyQosTaskMeta {
            inner: QosTaskMeta::best_effort(id, name, priority),
        }
    }

    /// Task id.
    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }

    /// Task name.
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// Reserved memory, bytes.
    #[getter]
    fn memory_request(&self) -> u64 {
        self.inner.memory_request
    }

    /// Memory limit, bytes (0: none).
    #[getter]
    fn memory_limit(&self) -> u64 {
        self.inner.memory_limit
    }

    /// Reserved bandwidth share.
    #[getter]
    fn bandwidth_request(&self) -> f64 {
        ppm_to_fraction(self.inner.bandwidth_request_ppm)
    }

    /// Bandwidth limit (0: none).
    #[getter]
    fn bandwidth_limit(&self) -> f64 {
        ppm_to_fraction(self.inner.bandwidth_limit_ppm)
    }

    /// Priority (higher is more important).
    #[getter]
    fn priority(&self) -> i32 {
        self.inner.priority
    }

    /// The derived QoS tier.
    #[getter]
    fn tier(&self) -> PyQosTier {
        self.inner.tier().into()
    }

    fn __repr__(&self) -> String {
        let m = &self.inner;
        format!(
            "QosTaskMeta(id={:?}, name={:?}, tier={}, memory_request={}, memory_limit={}, \
             bandwidth_request={}, bandwidth_limit={}, priority={})",
            m.id,
            m.name,
            m.tier(),
            m.memory_request,
            m.memory_limit,
            ppm_to_fraction(m.bandwidth_request_ppm),
            ppm_to_fraction(m.bandwidth_limit_ppm),
            m.priority
        )
    }
}

/// The result of :meth:`QosPolicyEvaluator.evaluate` / :meth:`QosPolicyEvaluator.admit`.
#[pyclass(frozen, module = "pygpukit_sched", name = "QosEvaluation")]
pub struct PyQosEvaluation {
    inner: QosDecision,
}

#[pymethods]
impl PyQosEvaluation {
    /// The task id.
    #[getter]
    fn task_id(&self) -> &str {
        &self.inner.task_id
    }

    /// Whether the task is (or would be) admitted.
    #[getter]
    fn admitted(&self) -> bool {
        self.inner.admitted()
    }

    /// Reason code (``admitted``, ``insufficient_reservable``, ...).
    #[getter]
    fn reason(&self) -> &'static str {
        self.inner.reason.code()
    }

    /// Human-readable reason.
    #[getter]
    fn message(&self) -> String {
        self.inner.reason.to_string()
    }

    /// The task's tier.
    #[getter]
    fn tier(&self) -> PyQosTier {
        self.inner.tier.into()
    }

    /// CUDA stream priority for the task's work.
    #[getter]
    fn stream_priority(&self) -> i32 {
        self.inner.tier.stream_priority()
    }

    /// Bytes reserved (0 if refused).
    #[getter]
    fn memory_reserved(&self) -> u64 {
        self.inner.memory_reserved
    }

    /// Bandwidth share reserved (0 if refused).
    #[getter]
    fn bandwidth_reserved(&self) -> f64 {
        ppm_to_fraction(self.inner.bandwidth_reserved_ppm)
    }

    /// Tasks evicted (or that would be) to admit it, in eviction order.
    #[getter]
    fn evicted(&self) -> Vec<String> {
        self.inner.evicted.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "QosEvaluation(task_id={:?}, admitted={}, reason={:?}, tier={}, evicted={:?})",
            self.inner.task_id,
            if self.inner.admitted() {
                "True"
            } else {
                "False"
            },
            self.inner.reason.code(),
            self.inner.tier,
            self.inner.evicted
        )
    }
}

/// Admits tasks by QoS tier; picks eviction victims in the kubelet's order.
#[pyclass(frozen, module = "pygpukit_sched", name = "QosPolicyEvaluator")]
pub struct PyQosPolicyEvaluator {
    inner: Shared<QosPolicyEvaluator>,
}

#[pymethods]
impl PyQosPolicyEvaluator {
    #[new]
    #[pyo3(signature = (total_memory, total_bandwidth=1.0))]
    fn new(total_memory: u64, total_bandwidth: f64) -> PyResult<Self> {
        let bw = fraction("total_bandwidth", total_bandwidth)?;
        Ok(PyQosPolicyEvaluator {
            inner: Shared::new(QosPolicyEvaluator::new(total_memory, bw)),
        })
    }

    /// Total memory, bytes.
    #[getter]
    fn total_memory(&self) -> u64 {
        self.inner.with(|e| e.total_memory())
    }

    /// Total bandwidth (1.0: the whole device).
    #[getter]
    fn total_bandwidth(&self) -> f64 {
        self.inner
            .with(|e| ppm_to_fraction(e.total_bandwidth_ppm()))
    }

    /// Bytes held by no task.
    #[getter]
    fn free_memory(&self) -> u64 {
        self.inner.with(|e| e.free_memory())
    }

    /// Whether ``task`` would be admitted now, and why; changes nothing.
    fn evaluate(&self, task: &PyQosTaskMeta) -> PyQosEvaluation {
        PyQosEvaluation {
            inner: self.inner.with(|e| e.evaluate(&task.inner)),
        }
    }

    /// Evaluate ``task`` and, if admitted, evict the victims and reserve its request.
    fn admit(&self, task: &PyQosTaskMeta) -> PyQosEvaluation {
        PyQosEvaluation {
            inner: self.inner.with(|e| e.admit(task.inner.clone())),
        }
    }

    /// Remove a finished task; return the bytes it held.
    fn release(&self, task_id: &str) -> PyResult<u64> {
        self.inner.with(|e| e.release(task_id)).map_err(qos_error)
    }

    /// Add ``nbytes`` to a task's usage; return the ids evicted to make room.
    fn charge(&self, task_id: &str, nbytes: u64) -> PyResult<Vec<String>> {
        self.inner
            .with(|e| e.charge(task_id, nbytes))
            .map_err(qos_error)
    }

    /// Subtract ``nbytes`` from a task's usage.
    fn uncharge(&self, task_id: &str, nbytes: u64) -> PyResult<()> {
        self.inner
            .with(|e| e.uncharge(task_id, nbytes))
            .map_err(qos_error)
    }

    /// A task's current usage in bytes.
    fn usage(&self, task_id: &str) -> PyResult<u64> {
        self.inner
            .with(|e| e.task(task_id).map(|t| t.usage))
            .ok_or_else(|| PyKeyError::new_err(task_id.to_owned()))
    }

    /// Admitted task ids, sorted.
    fn tasks(&self) -> Vec<String> {
        self.inner
            .with(|e| e.tasks().map(|t| t.meta.id.clone()).collect())
    }

    /// Return (and forget) the ids evicted since the last call, in order.
    fn take_evicted(&self) -> Vec<String> {
        self.inner.with(QosPolicyEvaluator::take_evicted)
    }

    /// The ids a requester of ``tier`` could evict, in eviction order.
    #[pyo3(signature = (tier=PyQosTier::Guaranteed))]
    fn eviction_order(&self, tier: PyQosTier) -> Vec<String> {
        self.inner.with(|e| {
            e.eviction_order(tier.into())
                .into_iter()
                .map(|t| t.meta.id.clone())
                .collect()
        })
    }

    /// Counters as a ``dict``.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.with(|e| e.stats());
        let d = PyDict::new(py);
        set_all(
            &d,
            &[
                ("total_memory", s.total_memory),
                ("reserved_memory", s.reserved_memory),
                ("held_memory", s.held_memory),
                ("used_memory", s.used_memory),
                ("guaranteed", s.guaranteed),
                ("burstable", s.burstable),
                ("best_effort", s.best_effort),
                ("admitted", s.admitted),
                ("rejected", s.rejected),
                ("evictions", s.evictions),
                ("released", s.released),
            ],
        )?;
        d.set_item("total_bandwidth", ppm_to_fraction(s.total_bandwidth_ppm))?;
        d.set_item(
            "reserved_bandwidth",
            ppm_to_fraction(s.reserved_bandwidth_ppm),
        )?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let s = self.inner.with(|e| e.stats());
        format!(
            "QosPolicyEvaluator(total_memory={}, total_bandwidth={}, reserved_memory={}, tasks={})",
            s.total_memory,
            ppm_to_fraction(s.total_bandwidth_ppm),
            s.reserved_memory,
            s.guaranteed + s.burstable + s.best_effort
        )
    }
}

// ---------------------------------------------------------- admission ----

/// One admission decision.
#[pyclass(frozen, eq, hash, module = "pygpukit_sched", name = "Decision")]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyDecision {
    task_id: String,
    reason: AdmissionReason,
}

impl From<Decision> for PyDecision {
    fn from(d: Decision) -> Self {
        PyDecision {
            task_id: d.task_id,
            reason: d.reason,
        }
    }
}

#[pymethods]
impl PyDecision {
    /// The task id.
    #[getter]
    fn task_id(&self) -> &str {
        &self.task_id
    }

    /// Whether the task was admitted.
    #[getter]
    fn admitted(&self) -> bool {
        self.reason.is_admitted()
    }

    /// Reason code (``admitted``, ``insufficient_memory``, ``quota_exceeded``, ...).
    #[getter]
    fn reason(&self) -> &'static str {
        self.reason.code()
    }

    /// Human-readable reason.
    #[getter]
    fn message(&self) -> String {
        self.reason.to_string()
    }

    fn __repr__(&self) -> String {
        format!(
            "Decision(task_id={:?}, admitted={}, reason={:?})",
            self.task_id,
            if self.reason.is_admitted() {
                "True"
            } else {
                "False"
            },
            self.reason.code()
        )
    }
}

fn request(task_id: String, memory: u64, priority: i32, tenant: String) -> AdmissionRequest {
    AdmissionRequest {
        id: task_id,
        memory,
        priority,
        tenant,
    }
}

fn parse_event(item: &Bound<'_, PyAny>) -> PyResult<AdmissionEvent> {
    let t = item.cast::<PyTuple>().map_err(|_| {
        PyTypeError::new_err("each event must be a tuple such as ('admit', id, memory, priority)")
    })?;
    let kind: String = t.get_item(0)?.extract()?;
    let arg = |i: usize| t.get_item(i);
    let opt = |i: usize| -> PyResult<Option<Bound<'_, PyAny>>> {
        if i < t.len() {
            Ok(Some(t.get_item(i)?))
        } else {
            Ok(None)
        }
    };
    let req = || -> PyResult<AdmissionRequest> {
        let priority: i32 = opt(3)?.map_or(Ok(0), |v| v.extract())?;
        let tenant: String = opt(4)?.map_or(Ok(String::new()), |v| v.extract())?;
        Ok(request(
            arg(1)?.extract()?,
            arg(2)?.extract()?,
            priority,
            tenant,
        ))
    };
    Ok(match kind.as_str() {
        "admit" => AdmissionEvent::Admit(req()?),
        "submit" => AdmissionEvent::Submit(req()?),
        "process" => AdmissionEvent::Process,
        "release" => AdmissionEvent::Release(arg(1)?.extract()?),
        "quota" => AdmissionEvent::SetQuota(
            arg(1)?.extract()?,
            TenantQuota {
                memory: opt(2)?.map_or(Ok(None), |v| v.extract())?,
                max_tasks: opt(3)?.map_or(Ok(None), |v| v.extract())?,
            },
        ),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown event kind {other:?} (admit, submit, process, release, quota)"
            )))
        }
    })
}

/// Deterministic admission control: capacity, tenant quotas, a priority queue.
#[pyclass(frozen, module = "pygpukit_sched", name = "AdmissionController")]
pub struct PyAdmissionController {
    inner: Shared<AdmissionController>,
}

#[pymethods]
impl PyAdmissionController {
    #[new]
    fn new(capacity: u64) -> Self {
        PyAdmissionController {
            inner: Shared::new(AdmissionController::new(capacity)),
        }
    }

    /// Capacity, bytes.
    #[getter]
    fn capacity(&self) -> u64 {
        self.inner.with(|a| a.capacity())
    }

    /// Bytes admitted now.
    #[getter]
    fn reserved(&self) -> u64 {
        self.inner.with(|a| a.reserved())
    }

    /// Free capacity, bytes.
    #[getter]
    fn available(&self) -> u64 {
        self.inner.with(|a| a.available())
    }

    /// Set a tenant's quota (``None``: unlimited).
    #[pyo3(signature = (tenant, memory=None, max_tasks=None))]
    fn set_quota(&self, tenant: String, memory: Option<u64>, max_tasks: Option<u64>) {
        self.inner
            .with(|a| a.set_quota(tenant, TenantQuota { memory, max_tasks }));
    }

    /// Decide now; if admitted, reserve ``memory`` bytes.
    #[pyo3(signature = (task_id, memory, priority=0, tenant=String::new()))]
    fn admit(&self, task_id: String, memory: u64, priority: i32, tenant: String) -> PyDecision {
        let req = request(task_id, memory, priority, tenant);
        let reason = self.inner.with(|a| a.admit(&req));
        PyDecision {
            task_id: req.id,
            reason,
        }
    }

    /// The decision :meth:`admit` would make now; changes nothing.
    #[pyo3(signature = (task_id, memory, priority=0, tenant=String::new()))]
    fn evaluate(&self, task_id: String, memory: u64, priority: i32, tenant: String) -> PyDecision {
        let req = request(task_id, memory, priority, tenant);
        let reason = self.inner.with(|a| a.evaluate(&req));
        PyDecision {
            task_id: req.id,
            reason,
        }
    }

    /// Release an admitted task; return its bytes. ``KeyError`` if not admitted.
    fn release(&self, task_id: &str) -> PyResult<u64> {
        self.inner
            .with(|a| a.release(task_id))
            .ok_or_else(|| PyKeyError::new_err(task_id.to_owned()))
    }

    /// Whether ``task_id`` is admitted.
    fn is_admitted(&self, task_id: &str) -> bool {
        self.inner.with(|a| a.is_admitted(task_id))
    }

    /// Queue a request; return its submit sequence number.
    #[pyo3(signature = (task_id, memory, priority=0, tenant=String::new()))]
    fn submit(&self, task_id: String, memory: u64, priority: i32, tenant: String) -> PyResult<u64> {
        let req = request(task_id, memory, priority, tenant);
        let id = req.id.clone();
        self.inner
            .with(|a| a.submit(req))
            .map_err(|reason| PyValueError::new_err(format!("task {id:?}: {reason}")))
    }

    /// Remove a queued request; return whether it was queued.
    fn withdraw(&self, task_id: &str) -> bool {
        self.inner.with(|a| a.withdraw(task_id)).is_some()
    }

    /// Queued ids, in the order they are examined.
    fn pending(&self) -> Vec<String> {
        self.inner.with(|a| a.pending())
    }

    /// Examine the queue (priority, submit sequence, id); admit what fits.
    fn process_pending(&self) -> Vec<PyDecision> {
        self.inner
            .with(AdmissionController::process_pending)
            .into_iter()
            .map(Into::into)
            .collect()
    }

    /// Decide a batch of ``(task_id, memory, priority, tenant)`` tuples at once
    /// (priority, then position, then id); the GIL is released while deciding.
    fn admit_batch(
        &self,
        py: Python<'_>,
        requests: Vec<(String, u64, i32, String)>,
    ) -> Vec<PyDecision> {
        let reqs: Vec<AdmissionRequest> = requests
            .into_iter()
            .map(|(id, m, p, t)| request(id, m, p, t))
            .collect();
        let out = py.detach(|| self.inner.with(|a| a.admit_batch(&reqs)));
        out.into_iter().map(Into::into).collect()
    }

    /// Apply an event log and return every decision, in order; the GIL is
    /// released while replaying. Events are tuples: ``("admit", id, memory[,
    /// priority[, tenant]])``, ``("submit", ...)``, ``("process",)``,
    /// ``("release", id)``, ``("quota", tenant, memory|None, max_tasks|None)``.
    fn replay(&self, py: Python<'_>, events: &Bound<'_, PyAny>) -> PyResult<Vec<PyDecision>> {
        let mut log = Vec::new();
        for item in events.try_iter()? {
            log.push(parse_event(&item?)?);
        }
        let out = py.detach(|| self.inner.with(|a| a.replay(&log)));
        Ok(out.into_iter().map(Into::into).collect())
    }

    /// Counters as a ``dict``.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.with(|a| a.stats());
        let d = PyDict::new(py);
        set_all(
            &d,
            &[
                ("capacity", s.capacity),
                ("reserved", s.reserved),
                ("peak_reserved", s.peak_reserved),
                ("active", s.active),
                ("pending", s.pending),
                ("decisions", s.decisions),
                ("admitted", s.admitted),
                ("rejected", s.rejected),
                ("released", s.released),
            ],
        )?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let s = self.inner.with(|a| a.stats());
        format!(
            "AdmissionController(capacity={}, reserved={}, active={}, pending={})",
            s.capacity, s.reserved, s.active, s.pending
        )
    }
}

// ----------------------------------------------------------- scheduler ----

fn sched_error(err: SchedError) -> PyErr {
    let msg = err.to_string();
    match err {
        SchedError::DuplicateId(_) => PyValueError::new_err(msg),
        SchedError::UnknownTask(_) => PyKeyError::new_err(msg),
        SchedError::InvalidTransition { .. } => TaskStateError::new_err(msg),
        SchedError::Rejected { reason, .. } => Python::attach(|py| {
            let exc = TaskRejectedError::new_err(msg);
            match exc.value(py).setattr("reason", reason.code()) {
                Ok(()) => exc,
                Err(e) => e,
            }
        }),
    }
}

/// Task scheduler: priority queue, memory reservation, task life cycle.
#[pyclass(frozen, module = "pygpukit_sched", name = "Scheduler")]
pub struct PyScheduler {
    inner: Shared<Scheduler>,
}

#[pymethods]
impl PyScheduler {
    #[new]
    fn new(capacity: u64) -> Self {
        PyScheduler {
            inner: Shared::new(Scheduler::new(capacity)),
        }
    }

    /// Set a tenant's quota (``None``: unlimited).
    #[pyo3(signature = (tenant, memory=None, max_tasks=None))]
    fn set_quota(&self, tenant: String, memory: Option<u64>, max_tasks: Option<u64>) {
        self.inner
            .with(|s| s.set_quota(tenant, TenantQuota { memory, max_tasks }));
    }

    /// Queue a task (state ``pending``); return its submit sequence number.
    #[pyo3(signature = (task_id, memory, priority=0, tenant=String::new(), name=String::new()))]
    fn submit(
        &self,
        task_id: String,
        memory: u64,
        priority: i32,
        tenant: String,
        name: String,
    ) -> PyResult<u64> {
        let req = request(task_id, memory, priority, tenant);
        self.inner
            .with(|s| s.submit(req, name))
            .map_err(sched_error)
    }

    /// Admit every queued task that fits; return their ids in admission order.
    fn schedule(&self) -> Vec<String> {
        self.inner.with(Scheduler::schedule)
    }

    /// ``admitted`` → ``running``.
    fn start(&self, task_id: &str) -> PyResult<()> {
        self.inner.with(|s| s.start(task_id)).map_err(sched_error)
    }

    /// ``running`` → ``completed`` (releases the reservation).
    fn complete(&self, task_id: &str) -> PyResult<()> {
        self.inner
            .with(|s| s.complete(task_id))
            .map_err(sched_error)
    }

    /// ``running`` → ``failed`` (releases the reservation).
    fn fail(&self, task_id: &str) -> PyResult<()> {
        self.inner.with(|s| s.fail(task_id)).map_err(sched_error)
    }

    /// ``pending`` / ``admitted`` / ``running`` → ``cancelled``; return the old state.
    fn cancel(&self, task_id: &str) -> PyResult<&'static str> {
        self.inner
            .with(|s| s.cancel(task_id))
            .map(|st| st.name())
            .map_err(sched_error)
    }

    /// A task's state name, or ``None`` for an unknown id.
    fn state(&self, task_id: &str) -> Option<&'static str> {
        self.inner.with(|s| s.state(task_id)).map(|st| st.name())
    }

    /// A task's record as a ``dict``, or ``None`` for an unknown id.
    fn task<'py>(&self, py: Python<'py>, task_id: &str) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(r) = self.inner.with(|s| s.task(task_id).cloned()) else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("id", &r.request.id)?;
        d.set_item("name", &r.name)?;
        d.set_item("memory", r.request.memory)?;
        d.set_item("priority", r.request.priority)?;
        d.set_item("tenant", &r.request.tenant)?;
        d.set_item("state", r.state.name())?;
        d.set_item("seq", r.seq)?;
        d.set_item("reason", r.last_reason.as_ref().map(AdmissionReason::code))?;
        Ok(Some(d))
    }

    /// Queued ids, in the order :meth:`schedule` examines them.
    fn pending(&self) -> Vec<String> {
        self.inner.with(|s| s.pending())
    }

    /// Counters as a ``dict``.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.with(|s| s.stats());
        let d = PyDict::new(py);
        set_all(
            &d,
            &[
                ("submitted", s.submitted),
                ("pending", s.pending),
                ("admitted", s.admitted),
                ("running", s.running),
                ("completed", s.completed),
                ("failed", s.failed),
                ("cancelled", s.cancelled),
                ("rejected", s.rejected),
                ("capacity", s.capacity),
                ("reserved", s.reserved),
                ("peak_reserved", s.peak_reserved),
            ],
        )?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let s = self.inner.with(|s| s.stats());
        format!(
            "Scheduler(capacity={}, reserved={}, pending={}, running={})",
            s.capacity, s.reserved, s.pending, s.running
        )
    }
}

// -------------------------------------------------------------- pacing ----

fn pacing_error(err: PacingError) -> PyErr {
    let msg = err.to_string();
    match err {
        PacingError::UnknownStream(_) => PyKeyError::new_err(msg),
        PacingError::DuplicateStream(_) | PacingError::InvalidShare(_) => {
            PyValueError::new_err(msg)
        }
        PacingError::Oversubscribed { .. } => ResourceExhaustedError::new_err(msg),
    }
}

fn stream_stats_dict<'py>(py: Python<'py>, s: StreamStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("share", ppm_to_fraction(s.share_ppm))?;
    set_all(
        &d,
        &[
            ("acquisitions", s.acquisitions),
            ("throttled", s.throttled),
            ("total_cost", s.total_cost),
            ("total_wait_ns", s.total_wait_ns),
            ("tat_ns", s.tat_ns),
        ],
    )?;
    Ok(d)
}

/// Token-bucket (GCRA) pacing of kernel launches per stream.
#[pyclass(frozen, module = "pygpukit_sched", name = "KernelPacingEngine")]
pub struct PyKernelPacingEngine {
    inner: Shared<KernelPacingEngine>,
}

#[pymethods]
impl PyKernelPacingEngine {
    #[new]
    #[pyo3(signature = (capacity=KernelPacingEngine::DEFAULT_CAPACITY, burst_ns=KernelPacingEngine::DEFAULT_BURST_NS))]
    fn new(capacity: u64, burst_ns: u64) -> Self {
        PyKernelPacingEngine {
            inner: Shared::new(KernelPacingEngine::new(capacity, burst_ns)),
        }
    }

    /// Device throughput in cost units per second.
    #[getter]
    fn capacity(&self) -> u64 {
        self.inner.with(|p| p.capacity())
    }

    /// Bucket depth, ns.
    #[getter]
    fn burst_ns(&self) -> u64 {
        self.inner.with(|p| p.burst_ns())
    }

    /// Sum of the registered shares.
    #[getter]
    fn allocated_share(&self) -> f64 {
        self.inner.with(|p| ppm_to_fraction(p.allocated_ppm()))
    }

    /// Register a stream with a share in (0, 1]; shares sum to at most 1.
    fn register_stream(&self, stream_id: u64, share: f64) -> PyResult<()> {
        let ppm = fraction("share", share)?;
        self.inner
            .with(|p| p.register_stream(stream_id, ppm))
            .map_err(pacing_error)
    }

    /// Unregister a stream; return its final counters.
    fn unregister_stream<'py>(
        &self,
        py: Python<'py>,
        stream_id: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let s = self
            .inner
            .with(|p| p.unregister_stream(stream_id))
            .map_err(pacing_error)?;
        stream_stats_dict(py, s)
    }

    /// Account a launch of ``cost`` at ``now_ns``; return the ns to wait first.
    fn acquire(&self, stream_id: u64, cost: u64, now_ns: u64) -> PyResult<u64> {
        self.inner
            .with(|p| p.acquire(stream_id, cost, now_ns))
            .map_err(pacing_error)
    }

    /// The wait :meth:`acquire` would return at ``now_ns``; accounts nothing.
    fn peek_wait(&self, stream_id: u64, now_ns: u64) -> PyResult<u64> {
        self.inner
            .with(|p| p.peek_wait(stream_id, now_ns))
            .map_err(pacing_error)
    }

    /// A stream's counters.
    fn stream_stats<'py>(&self, py: Python<'py>, stream_id: u64) -> PyResult<Bound<'py, PyDict>> {
        let s = self
            .inner
            .with(|p| p.stream_stats(stream_id))
            .ok_or_else(|| pacing_error(PacingError::UnknownStream(stream_id)))?;
        stream_stats_dict(py, s)
    }

    /// Registered stream ids, ascending.
    fn streams(&self) -> Vec<u64> {
        self.inner.with(|p| p.streams())
    }
}

// ---------------------------------------------------------- partitions ----

fn partition_error(err: PartitionError) -> PyErr {
    let msg = err.to_string();
    match err {
        PartitionError::NotFound(_) => PyKeyError::new_err(msg),
        PartitionError::DuplicateId(_)
        | PartitionError::InvalidLimits(_)
        | PartitionError::Underflow { .. }
        | PartitionError::InUse { .. } => PyValueError::new_err(msg),
        PartitionError::InsufficientMemory { .. }
        | PartitionError::InsufficientCompute { .. }
        | PartitionError::QuotaExceeded { .. }
        | PartitionError::OutOfMemory { .. } => ResourceExhaustedError::new_err(msg),
    }
}

/// Device totals divided by a :class:`PartitionManager`.
#[pyclass(
    frozen,
    eq,
    hash,
    from_py_object,
    module = "pygpukit_sched",
    name = "PartitionConfig"
)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyPartitionConfig {
    inner: (u64, u64),
}

#[pymethods]
impl PyPartitionConfig {
    #[new]
    #[pyo3(signature = (total_memory, total_compute=1.0))]
    fn new(total_memory: u64, total_compute: f64) -> PyResult<Self> {
        Ok(PyPartitionConfig {
            inner: (total_memory, fraction("total_compute", total_compute)?),
        })
    }

    /// Device memory, bytes.
    #[getter]
    fn total_memory(&self) -> u64 {
        self.inner.0
    }

    /// Compute to divide (1.0: the whole device).
    #[getter]
    fn total_compute(&self) -> f64 {
        ppm_to_fraction(self.inner.1)
    }

    fn __repr__(&self) -> String {
        format!(
            "PartitionConfig(total_memory={}, total_compute={})",
            self.inner.0,
            ppm_to_fraction(self.inner.1)
        )
    }
}

/// A partition's limits, built by chaining: ``PartitionLimits().memory(n).compute(0.5)``.
#[pyclass(frozen, eq, hash, module = "pygpukit_sched", name = "PartitionLimits")]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyPartitionLimits {
    inner: PartitionLimits,
}

#[pymethods]
impl PyPartitionLimits {
    #[new]
    fn new() -> Self {
        PyPartitionLimits {
            inner: PartitionLimits::new(),
        }
    }

    /// A copy with a memory limit of ``nbytes``.
    fn memory(&self, nbytes: u64) -> Self {
        PyPartitionLimits {
            inner: self.inner.memory(nbytes),
        }
    }

    /// A copy with a memory request of ``nbytes`` (below the limit: Burstable).
    fn memory_request(&self, nbytes: u64) -> Self {
        PyPartitionLimits {
            inner: self.inner.memory_request(nbytes),
        }
    }

    /// A copy with a compute share in [0, 1].
    fn compute(&self, share: f64) -> PyResult<Self> {
        Ok(PyPartitionLimits {
            inner: self.inner.compute_ppm(fraction("compute", share)?),
        })
    }

    /// Memory limit, bytes (0: none).
    #[getter]
    fn memory_limit(&self) -> u64 {
        self.inner.memory
    }

    /// Memory request, bytes (defaults to the limit).
    #[getter]
    fn requested_memory(&self) -> u64 {
        self.inner.request()
    }

    /// Compute share.
    #[getter]
    fn compute_share(&self) -> f64 {
        ppm_to_fraction(self.inner.compute_ppm)
    }

    /// The derived QoS tier.
    #[getter]
    fn tier(&self) -> PyQosTier {
        self.inner.tier().into()
    }

    fn __repr__(&self) -> String {
        format!(
            "PartitionLimits(memory={}, memory_request={}, compute={}, tier={})",
            self.inner.memory,
            self.inner.request(),
            ppm_to_fraction(self.inner.compute_ppm),
            self.inner.tier()
        )
    }
}

/// A snapshot of one partition.
#[pyclass(frozen, module = "pygpukit_sched", name = "Partition")]
pub struct PyPartition {
    inner: Partition,
    total_memory: u64,
}

#[pymethods]
impl PyPartition {
    /// Partition id.
    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }

    /// Partition name.
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// Its limits.
    #[getter]
    fn limits(&self) -> PyPartitionLimits {
        PyPartitionLimits {
            inner: self.inner.limits,
        }
    }

    /// The derived QoS tier.
    #[getter]
    fn tier(&self) -> PyQosTier {
        self.inner.tier().into()
    }

    /// CUDA stream priority for the partition's work.
    #[getter]
    fn stream_priority(&self) -> i32 {
        self.inner.tier().stream_priority()
    }

    /// Effective memory limit, bytes (the device's memory without a limit).
    #[getter]
    fn memory_limit(&self) -> u64 {
        self.inner.limit_or(self.total_memory)
    }

    /// Reserved memory, bytes.
    #[getter]
    fn memory_request(&self) -> u64 {
        self.inner.limits.request()
    }

    /// Compute share.
    #[getter]
    fn compute(&self) -> f64 {
        ppm_to_fraction(self.inner.limits.compute_ppm)
    }

    /// Bytes charged.
    #[getter]
    fn usage(&self) -> u64 {
        self.inner.usage
    }

    /// Highest usage.
    #[getter]
    fn peak_usage(&self) -> u64 {
        self.inner.peak_usage
    }

    /// Bytes left below the limit.
    #[getter]
    fn available(&self) -> u64 {
        self.inner.limit_or(self.total_memory) - self.inner.usage
    }

    /// Successful charges.
    #[getter]
    fn charges(&self) -> u64 {
        self.inner.charges
    }

    /// Refused charges.
    #[getter]
    fn failed_charges(&self) -> u64 {
        self.inner.failed_charges
    }

    fn __repr__(&self) -> String {
        format!(
            "Partition(id={:?}, name={:?}, tier={}, memory_limit={}, compute={}, usage={})",
            self.inner.id,
            self.inner.name,
            self.inner.tier(),
            self.inner.limit_or(self.total_memory),
            ppm_to_fraction(self.inner.limits.compute_ppm),
            self.inner.usage
        )
    }
}

/// Creates partitions of memory and compute and accounts their memory.
#[pyclass(frozen, module = "pygpukit_sched", name = "PartitionManager")]
pub struct PyPartitionManager {
    inner: Shared<PartitionManager>,
    config: PyPartitionConfig,
}

impl PyPartitionManager {
    fn snapshot(&self, p: Partition) -> PyPartition {
        PyPartition {
            inner: p,
            total_memory: self.config.inner.0,
        }
    }
}

#[pymethods]
impl PyPartitionManager {
    #[new]
    fn new(config: PyPartitionConfig) -> Self {
        let core = PartitionConfig {
            total_memory: config.inner.0,
            total_compute_ppm: config.inner.1,
        };
        PyPartitionManager {
            inner: Shared::new(PartitionManager::new(core)),
            config,
        }
    }

    /// The config.
    #[getter]
    fn config(&self) -> PyPartitionConfig {
        self.config.clone()
    }

    /// Create a partition; return its snapshot.
    fn create_partition(
        &self,
        partition_id: String,
        name: String,
        limits: &PyPartitionLimits,
    ) -> PyResult<PyPartition> {
        let p = self
            .inner
            .with(|m| m.create(partition_id, name, limits.inner).cloned())
            .map_err(partition_error)?;
        Ok(self.snapshot(p))
    }

    /// Delete a partition (with usage only if ``force``); return its last snapshot.
    #[pyo3(signature = (partition_id, force=false))]
    fn delete_partition(&self, partition_id: &str, force: bool) -> PyResult<PyPartition> {
        let p = self
            .inner
            .with(|m| m.delete(partition_id, force))
            .map_err(partition_error)?;
        Ok(self.snapshot(p))
    }

    /// A partition's snapshot, or ``None``.
    fn get_partition(&self, partition_id: &str) -> Option<PyPartition> {
        self.inner
            .with(|m| m.get(partition_id).cloned())
            .map(|p| self.snapshot(p))
    }

    /// Snapshots of all partitions, by id.
    fn partitions(&self) -> Vec<PyPartition> {
        let all: Vec<Partition> = self.inner.with(|m| m.partitions().cloned().collect());
        all.into_iter().map(|p| self.snapshot(p)).collect()
    }

    /// Charge an allocation of ``nbytes``; return the partition's new usage.
    fn charge(&self, partition_id: &str, nbytes: u64) -> PyResult<u64> {
        self.inner
            .with(|m| m.charge(partition_id, nbytes))
            .map_err(partition_error)
    }

    /// Release ``nbytes`` of usage; return the partition's new usage.
    fn release(&self, partition_id: &str, nbytes: u64) -> PyResult<u64> {
        self.inner
            .with(|m| m.release(partition_id, nbytes))
            .map_err(partition_error)
    }

    /// Device-wide counters as a ``dict``.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.with(|m| m.stats());
        let d = PyDict::new(py);
        set_all(
            &d,
            &[
                ("total_memory", s.total_memory),
                ("reserved_memory", s.reserved_memory),
                ("held_memory", s.held_memory),
                ("used_memory", s.used_memory),
                ("partitions", s.partitions),
            ],
        )?;
        d.set_item("total_compute", ppm_to_fraction(s.total_compute_ppm))?;
        d.set_item(
            "allocated_compute",
            ppm_to_fraction(s.allocated_compute_ppm),
        )?;
        Ok(d)
    }

    fn __len__(&self) -> usize {
        self.inner.with(|m| m.partitions().count())
    }
}

// ------------------------------------------------------------ transfers ----

/// Direction of a copy.
#[pyclass(
    eq,
    eq_int,
    frozen,
    hash,
    from_py_object,
    module = "pygpukit_sched",
    name = "TransferKind"
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum PyTransferKind {
    /// Host to device.
    H2D,
    /// Device to host.
    D2H,
}

impl From<PyTransferKind> for TransferKind {
    fn from(k: PyTransferKind) -> Self {
        match k {
            PyTransferKind::H2D => TransferKind::H2D,
            PyTransferKind::D2H => TransferKind::D2H,
        }
    }
}

impl From<TransferKind> for PyTransferKind {
    fn from(k: TransferKind) -> Self {
        match k {
            TransferKind::H2D => PyTransferKind::H2D,
            TransferKind::D2H => PyTransferKind::D2H,
        }
    }
}

fn transfer_kind(kind: &Bound<'_, PyAny>) -> PyResult<TransferKind> {
    if let Ok(k) = kind.extract::<PyTransferKind>() {
        return Ok(k.into());
    }
    if let Ok(s) = kind.cast::<PyString>() {
        let s = s.to_str()?;
        return TransferKind::parse(s).ok_or_else(|| {
            PyValueError::new_err(format!("unknown transfer kind {s:?} (h2d, d2h)"))
        });
    }
    Err(PyTypeError::new_err(
        "kind must be a TransferKind or 'h2d' / 'd2h'",
    ))
}

/// One queued transfer.
#[pyclass(
    frozen,
    eq,
    hash,
    get_all,
    module = "pygpukit_sched",
    name = "Transfer"
)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyTransfer {
    id: u64,
    kind: PyTransferKind,
    nbytes: u64,
    priority: i32,
}

impl From<Transfer> for PyTransfer {
    fn from(t: Transfer) -> Self {
        PyTransfer {
            id: t.id,
            kind: t.kind.into(),
            nbytes: t.bytes,
            priority: t.priority,
        }
    }
}

#[pymethods]
impl PyTransfer {
    fn __repr__(&self) -> String {
        format!(
            "Transfer(id={}, kind={}, nbytes={}, priority={})",
            self.id,
            TransferKind::from(self.kind),
            self.nbytes,
            self.priority
        )
    }
}

/// Two-lane (H2D / D2H) priority queue of copies.
#[pyclass(frozen, module = "pygpukit_sched", name = "TransferQueue")]
pub struct PyTransferQueue {
    inner: Shared<TransferQueue>,
}

#[pymethods]
impl PyTransferQueue {
    #[new]
    fn new() -> Self {
        PyTransferQueue {
            inner: Shared::new(TransferQueue::new()),
        }
    }

    /// Queue a copy of ``nbytes``; return its id.
    #[pyo3(signature = (kind, nbytes, priority=0))]
    fn enqueue(&self, kind: &Bound<'_, PyAny>, nbytes: u64, priority: i32) -> PyResult<u64> {
        let kind = transfer_kind(kind)?;
        Ok(self.inner.with(|q| q.enqueue(kind, nbytes, priority)))
    }

    /// The next copy of either direction (priority, then FIFO), or ``None``.
    fn next(&self) -> Option<PyTransfer> {
        self.inner.with(TransferQueue::next).map(Into::into)
    }

    /// The next copy of one direction, or ``None``.
    fn next_of(&self, kind: &Bound<'_, PyAny>) -> PyResult<Option<PyTransfer>> {
        let kind = transfer_kind(kind)?;
        Ok(self.inner.with(|q| q.next_of(kind)).map(Into::into))
    }

    /// What :meth:`next` would return, without removing it.
    fn peek(&self) -> Option<PyTransfer> {
        self.inner.with(|q| q.peek()).map(Into::into)
    }

    /// Remove a queued copy; return it, or ``None`` if it is not queued.
    fn cancel(&self, transfer_id: u64) -> Option<PyTransfer> {
        self.inner.with(|q| q.cancel(transfer_id)).map(Into::into)
    }

    /// Number of queued copies of one direction.
    fn len_of(&self, kind: &Bound<'_, PyAny>) -> PyResult<usize> {
        let kind = transfer_kind(kind)?;
        Ok(self.inner.with(|q| q.len_of(kind)))
    }

    fn __len__(&self) -> usize {
        self.inner.with(|q| q.len())
    }

    /// Counters as a ``dict`` of ``str`` to ``[h2d, d2h]`` lists.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.with(|q| q.stats());
        let d = PyDict::new(py);
        for (k, v) in [
            ("enqueued", s.enqueued),
            ("dispatched", s.dispatched),
            ("cancelled", s.cancelled),
            ("dispatched_bytes", s.dispatched_bytes),
            ("queued", s.queued),
            ("queued_bytes", s.queued_bytes),
        ] {
            d.set_item(k, v.to_vec())?;
        }
        Ok(d)
    }
}

// ----------------------------------------------------------- simulation ----

type TaskTuple = (
    String,
    String,
    String,
    u64,
    u64,
    u64,
    i32,
    Option<u64>,
    bool,
);

/// The result of :func:`run_simulation`.
#[pyclass(frozen, module = "pygpukit_sched", name = "SimulationReport")]
pub struct PySimulationReport {
    /// ``(time_ns, kind, task_id, detail)`` tuples, in order.
    #[pyo3(get)]
    events: Vec<(u64, &'static str, String, String)>,
    stats: Vec<(&'static str, u64)>,
    /// Time of the last event, ns.
    #[pyo3(get)]
    makespan_ns: u64,
    /// Tasks that started.
    #[pyo3(get)]
    started: u64,
    /// Mean wait of started tasks, ns.
    #[pyo3(get)]
    mean_wait_ns: u64,
    /// Largest wait, ns.
    #[pyo3(get)]
    max_wait_ns: u64,
    /// Mean fraction of the capacity reserved over the makespan.
    #[pyo3(get)]
    utilization: f64,
    /// Tasks still queued at the end.
    #[pyo3(get)]
    unscheduled: Vec<String>,
}

#[pymethods]
impl PySimulationReport {
    /// Final scheduler counters as a ``dict``.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        set_all(&d, &self.stats)?;
        Ok(d)
    }
}

/// Replay tasks ``(id, name, tenant, arrival_ns, duration_ns, memory, priority,
/// cancel_at_ns, fail)`` through a :class:`Scheduler` of ``capacity`` bytes, with
/// quotas ``(tenant, memory, max_tasks)``. Deterministic; the GIL is released.
#[pyfunction]
#[pyo3(signature = (capacity, tasks, quotas=Vec::new()))]
pub fn run_simulation(
    py: Python<'_>,
    capacity: u64,
    tasks: Vec<TaskTuple>,
    quotas: Vec<(String, Option<u64>, Option<u64>)>,
) -> PyResult<PySimulationReport> {
    let trace = Trace {
        capacity,
        quotas: quotas
            .into_iter()
            .map(|(t, memory, max_tasks)| (t, TenantQuota { memory, max_tasks }))
            .collect(),
        tasks: tasks
            .into_iter()
            .map(
                |(
                    id,
                    name,
                    tenant,
                    arrival_ns,
                    duration_ns,
                    memory,
                    priority,
                    cancel_at_ns,
                    fail,
                )| {
                    TraceTask {
                        id,
                        name,
                        tenant,
                        arrival_ns,
                        duration_ns,
                        memory,
                        priority,
                        cancel_at_ns,
                        fail,
                    }
                },
            )
            .collect(),
    };
    let report = py.detach(|| simulate(&trace)).map_err(sched_error)?;
    let s = report.stats;
    Ok(PySimulationReport {
        events: report
            .events
            .iter()
            .map(|e| {
                (
                    e.time_ns,
                    e.kind.name(),
                    e.task_id.clone(),
                    e.detail.clone(),
                )
            })
            .collect(),
        stats: vec![
            ("submitted", s.submitted),
            ("completed", s.completed),
            ("failed", s.failed),
            ("cancelled", s.cancelled),
            ("rejected", s.rejected),
            ("pending", s.pending),
            ("capacity", s.capacity),
            ("peak_reserved", s.peak_reserved),
        ],
        makespan_ns: report.makespan_ns,
        started: report.started,
        mean_wait_ns: report.mean_wait_ns(),
        max_wait_ns: report.max_wait_ns,
        utilization: report.utilization(),
        unscheduled: report.unscheduled,
    })
}

/// A spill candidate: ``(id, partition, tier, size, last_use, pinned)``.
type SpillTuple = (u64, String, PyQosTier, u64, u64, bool);

/// The ids of the live blocks to spill, in order, so that at least ``needed`` bytes
/// are released for partition ``requester`` of ``tier``: blocks not ``pinned``, of the
/// requester itself or (unless ``own_only``) of a strictly lower tier; lowest tier
/// first, least recently used (``last_use`` ascending) first within a tier, then by
/// id.  ``None`` when the eligible blocks hold fewer than ``needed`` bytes (spill
/// nothing).  Deterministic.
#[pyfunction]
#[pyo3(signature = (candidates, requester, tier, needed, own_only))]
pub fn spill_order(
    candidates: Vec<SpillTuple>,
    requester: &str,
    tier: PyQosTier,
    needed: u64,
    own_only: bool,
) -> Option<Vec<u64>> {
    let cs: Vec<SpillCandidate> = candidates
        .into_iter()
        .map(
            |(id, partition, t, size, last_use, pinned)| SpillCandidate {
                id,
                partition,
                tier: t.into(),
                size,
                last_use,
                pinned,
            },
        )
        .collect();
    spill::spill_order(&cs, requester, tier.into(), needed, own_only).ok()
}

/// Adds the classes, functions and exceptions of this module to `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("PPM", PPM)?;
    m.add_class::<PyQosTier>()?;
    m.add_class::<PyQosTaskMeta>()?;
    m.add_class::<PyQosEvaluation>()?;
    m.add_class::<PyQosPolicyEvaluator>()?;
    m.add_class::<PyDecision>()?;
    m.add_class::<PyAdmissionController>()?;
    m.add_class::<PyScheduler>()?;
    m.add_class::<PyKernelPacingEngine>()?;
    m.add_class::<PyPartitionConfig>()?;
    m.add_class::<PyPartitionLimits>()?;
    m.add_class::<PyPartition>()?;
    m.add_class::<PyPartitionManager>()?;
    m.add_class::<PyTransferKind>()?;
    m.add_class::<PyTransfer>()?;
    m.add_class::<PyTransferQueue>()?;
    m.add_class::<PySimulationReport>()?;
    m.add_function(wrap_pyfunction!(run_simulation, m)?)?;
    m.add_function(wrap_pyfunction!(spill_order, m)?)?;
    m.add(
        "ResourceExhaustedError",
        py.get_type::<ResourceExhaustedError>(),
    )?;
    m.add("TaskStateError", py.get_type::<TaskStateError>())?;
    m.add("TaskRejectedError", py.get_type::<TaskRejectedError>())?;
    Ok(())
}
