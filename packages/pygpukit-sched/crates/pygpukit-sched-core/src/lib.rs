//! Pure-Rust core of the PyGPUkit scheduler.
//!
//! Everything in this crate is policy and bookkeeping: it never touches a GPU,
//! never allocates device memory and has no Python dependency. All behaviour is
//! deterministic (no clocks, no randomness, no hash-order dependence), so the
//! same sequence of calls always produces the same results.
//!
//! The Python bindings live in the sibling crate `pygpukit-sched-py`; the
//! Python side of PyGPUkit owns the real device memory and enforces the
//! decisions made here.
//!
//! Modules:
//! - [`memory_pool`]: a caching device-memory pool model with size classes and
//!   LRU eviction of cached blocks.
//! - [`admission`]: deterministic admission control (capacity, tenant quotas,
//!   a priority queue with explicit tie-breaking, replayable event logs).
//! - [`scheduler`]: task life cycle (submit → admit → start → complete /
//!   fail / cancel) with memory reservation, on top of [`admission`].
//! - [`qos`]: Kubernetes QoS tiers (Guaranteed / Burstable / BestEffort),
//!   admission by tier and the kubelet's eviction order.
//! - [`pacing`]: token-bucket (GCRA) pacing of kernel launches per stream.
//! - [`partition`]: partitions of memory and compute with per-partition
//!   accounting.
//! - [`transfer`]: a two-lane (H2D / D2H) priority queue of copies.
//! - [`simulate`]: discrete-event replay of a trace through a [`Scheduler`].
//! - [`spill`]: which live blocks go to host memory first under memory
//!   pressure (lowest tier, least recently used).
//! - [`sync`]: thread-safe (`Send + Sync`) wrappers used by the bindings.
//!
//! ```
//! use pygpukit_sched_core::{BlockId, MemoryPool, PoolError};
//!
//! let mut pool = MemoryPool::new(8 * 1024, true);
//! let a = pool.allocate(3000)?; // rounded up to the 4 KiB size class
//! assert_eq!(pool.block_size(a), Some(4096));
//! pool.free(a)?; // cached, still counted against the quota
//! assert_eq!(pool.allocate(4000)?, a); // cache hit: the same block and id
//! pool.free(a)?;
//! let b = pool.allocate(8 * 1024)?; // miss: evicts `a` (LRU) to fit
//! assert_eq!(b, BlockId(2));
//! assert_eq!(pool.take_evicted(), vec![a]); // caller frees the real memory of `a`
//! # Ok::<(), PoolError>(())
//! ```

pub mod admission;
pub mod memory_pool;
pub mod pacing;
pub mod partition;
pub mod qos;
pub mod scheduler;
pub mod simulate;
pub mod spill;
pub mod sync;
pub mod transfer;

pub use admission::{
    AdmissionController, AdmissionEvent, AdmissionReason, AdmissionRequest, AdmissionStats,
    Decision, TenantQuota, TenantUsage,
};
pub use memory_pool::{size_class, BlockId, MemoryPool, PoolError, PoolStats};
pub use pacing::{KernelPacingEngine, PacingError, StreamStats};
pub use partition::{
    Partition, PartitionConfig, PartitionError, PartitionLimits, PartitionManager, PartitionStats,
};
pub use qos::{
    QosDecision, QosError, QosPolicyEvaluator, QosReason, QosStats, QosTaskMeta, QosTier,
};
pub use scheduler::{SchedError, Scheduler, SchedulerStats, TaskRecord, TaskState};
pub use simulate::{simulate, SimEvent, SimEventKind, SimReport, Trace, TraceTask};
pub use spill::{spill_order, SpillCandidate};
pub use sync::{Shared, SyncMemoryPool};
pub use transfer::{Transfer, TransferKind, TransferQueue, TransferStats};

/// Version of this crate (kept equal to the Python package version).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
