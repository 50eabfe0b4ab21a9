//! `pygpukit_sched._core`: thin pyo3 bindings of `pygpukit-sched-core`.
//!
//! All policy lives in the core crate; this crate only converts arguments,
//! results and errors. Classes are `frozen` and hold thread-safe core wrappers,
//! so one object can be shared by many Python threads.

use pyo3::create_exception;
use pyo3::exceptions::{PyMemoryError, PyOverflowError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use pygpukit_sched_core::memory_pool::{self, BlockId, PoolError, PoolStats};
use pygpukit_sched_core::SyncMemoryPool;

mod sched;

create_exception!(
    pygpukit_sched,
    QuotaExceededError,
    PyMemoryError,
    "An allocation does not fit in the pool's quota (even after eviction, if enabled).\n\n\
     Attributes ``requested``, ``class_size``, ``used``, ``cached`` and ``quota`` (bytes) give\n\
     the request and the pool's state at the time of the call."
);
create_exception!(
    pygpukit_sched,
    InvalidBlockError,
    PyValueError,
    "A block id that is not a live block of the pool (unknown, already freed, or evicted).\n\n\
     Attribute ``block_id`` is the offending id."
);

/// Converts a core error into the matching Python exception.
fn pool_error(py: Python<'_>, err: PoolError) -> PyErr {
    let message = err.to_string();
    match err {
        PoolError::ZeroSize => PyValueError::new_err(message),
        PoolError::SizeTooLarge { .. } => PyOverflowError::new_err(message),
        PoolError::QuotaExceeded {
            requested,
            class_size,
            used,
            cached,
            quota,
        } => {
            let exc = QuotaExceededError::new_err(message);
            let value = exc.value(py);
            let attrs = [
                ("requested", requested),
                ("class_size", class_size),
                ("used", used),
                ("cached", cached),
                ("quota", quota),
            ];
            for (name, v) in attrs {
                if let Err(e) = value.setattr(name, v) {
                    return e;
                }
            }
            exc
        }
        PoolError::InvalidBlock(id) => invalid_block(py, id, message),
    }
}

fn invalid_block(py: Python<'_>, id: BlockId, message: String) -> PyErr {
    let exc = InvalidBlockError::new_err(message);
    match exc.value(py).setattr("block_id", id.get()) {
        Ok(()) => exc,
        Err(e) => e,
    }
}

/// Snapshot of a :class:`MemoryPool`'s counters (all sizes in bytes).
#[pyclass(
    frozen,
    eq,
    hash,
    get_all,
    module = "pygpukit_sched",
    name = "PoolStats"
)]
#[derive(Clone, PartialEq, Eq, Hash)]
struct PyPoolStats {
    quota: u64,
    used: u64,
    cached: u64,
    peak_used: u64,
    allocations: u64,
    frees: u64,
    cache_hits: u64,
    cache_misses: u64,
    evictions: u64,
    evicted_bytes: u64,
    active_blocks: u64,
    cached_blocks: u64,
}

impl From<PoolStats> for PyPoolStats {
    fn from(s: PoolStats) -> Self {
        PyPoolStats {
            quota: s.quota,
            used: s.used,
            cached: s.cached,
            peak_used: s.peak_used,
            allocations: s.allocations,
            frees: s.frees,
            cache_hits: s.cache_hits,
            cache_misses: s.cache_misses,
            evictions: s.evictions,
            evicted_bytes: s.evicted_bytes,
            active_blocks: s.active_blocks,
            cached_blocks: s.cached_blocks,
        }
    }
}

impl PyPoolStats {
    fn fields(&self) -> [(&'static str, u64); 12] {
        [
            ("quota", self.quota),
            ("used", self.used),
            ("cached", self.cached),
            ("peak_used", self.peak_used),
            ("allocations", self.allocations),
            ("frees", self.frees),
            ("cache_hits", self.cache_hits),
            ("cache_misses", self.cache_misses),
            ("evictions", self.evictions),
            ("evicted_bytes", self.evicted_bytes),
            ("active_blocks", self.active_blocks),
            ("cached_blocks", self.cached_blocks),
        ]
    }
}

#[pymethods]
impl PyPoolStats {
    /// Return the counters as a ``dict`` of ``str`` to ``int``.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for (name, value) in self.fields() {
            dict.set_item(name, value)?;
        }
        Ok(dict)
    }

    fn __repr__(&self) -> String {
        let body: Vec<String> = self
            .fields()
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        format!("PoolStats({})", body.join(", "))
    }
}

/// Deterministic model of a caching device-memory pool (bytes; no GPU needed).
///
/// Requests are rounded up to size classes; freed blocks are cached per class
/// and reused most-recently-freed first; when a new block does not fit in the
/// quota, cached blocks are evicted least-recently-freed first (if enabled).
/// Evicted block ids are collected by :meth:`take_evicted`. Thread-safe.
#[pyclass(frozen, module = "pygpukit_sched", name = "MemoryPool")]
struct PyMemoryPool {
    inner: SyncMemoryPool,
}

#[pymethods]
impl PyMemoryPool {
    #[new]
    #[pyo3(signature = (quota, enable_eviction = true))]
    fn new(quota: u64, enable_eviction: bool) -> Self {
        PyMemoryPool {
            inner: SyncMemoryPool::new(quota, enable_eviction),
        }
    }

    /// The quota in bytes.
    #[getter]
    fn quota(&self) -> u64 {
        self.inner.quota()
    }

    /// Whether cached blocks are evicted to make room for new blocks.
    #[getter]
    fn enable_eviction(&self) -> bool {
        self.inner.eviction_enabled()
    }

    /// Allocate a block for ``size`` bytes and return its id.
    ///
    /// A cache hit returns the id of the reused cached block; a miss returns a
    /// fresh id. Raises ``ValueError`` for size 0 and ``QuotaExceededError``
    /// when the block does not fit.
    fn allocate(&self, py: Python<'_>, size: u64) -> PyResult<u64> {
        self.inner
            .allocate(size)
            .map(BlockId::get)
            .map_err(|e| pool_error(py, e))
    }

    /// Return a live block to the cache of its size class.
    ///
    /// Raises ``InvalidBlockError`` for unknown, freed or evicted ids.
    fn free(&self, py: Python<'_>, block: u64) -> PyResult<()> {
        self.inner
            .free(BlockId(block))
            .map(|_| ())
            .map_err(|e| pool_error(py, e))
    }

    /// Return (and forget) the ids evicted since the last call, oldest first.
    fn take_evicted(&self) -> Vec<u64> {
        self.inner
            .take_evicted()
            .into_iter()
            .map(BlockId::get)
            .collect()
    }

    /// Drop every cached block and return the number of bytes released.
    fn clear_cache(&self) -> u64 {
        self.inner.clear_cache()
    }

    /// Alias of :meth:`clear_cache`.
    fn evict_all(&self) -> u64 {
        self.inner.clear_cache()
    }

    /// The size class (bytes) that a request of ``size`` bytes is rounded up to.
    #[staticmethod]
    fn size_class(py: Python<'_>, size: u64) -> PyResult<u64> {
        memory_pool::size_class(size).map_err(|e| pool_error(py, e))
    }

    /// The size in bytes of a live or cached block.
    fn block_size(&self, py: Python<'_>, block: u64) -> PyResult<u64> {
        self.inner.block_size(BlockId(block)).ok_or_else(|| {
            let msg = format!("block {block} is not a block of this pool (unknown id or evicted)");
            invalid_block(py, BlockId(block), msg)
        })
    }

    /// Whether ``block`` is a live (allocated and not freed) block.
    fn is_live(&self, block: u64) -> bool {
        self.inner.is_live(BlockId(block))
    }

    /// A snapshot of the pool's counters.
    fn stats(&self) -> PyPoolStats {
        self.inner.stats().into()
    }

    fn __repr__(&self) -> String {
        let s = self.inner.stats();
        format!(
            "MemoryPool(quota={}, enable_eviction={}, used={}, cached={})",
            s.quota,
            if self.inner.eviction_enabled() {
                "True"
            } else {
                "False"
            },
            s.used,
            s.cached
        )
    }
}

/// Rust scheduler of PyGPUkit (native part of ``pygpukit_sched``).
#[pymodule(gil_used = false)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", pygpukit_sched_core::VERSION)?;
    m.add("MIN_BLOCK_SIZE", memory_pool::MIN_BLOCK_SIZE)?;
    m.add("SMALL_LIMIT", memory_pool::SMALL_LIMIT)?;
    m.add("LARGE_GRANULE", memory_pool::LARGE_GRANULE)?;
    m.add_class::<PyMemoryPool>()?;
    m.add_class::<PyPoolStats>()?;
    m.add("QuotaExceededError", py.get_type::<QuotaExceededError>())?;
    m.add("InvalidBlockError", py.get_type::<InvalidBlockError>())?;
    sched::register(m)?;
    Ok(())
}
