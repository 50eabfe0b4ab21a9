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

pub mod memory_pool;
pub mod sync;

pub use memory_pool::{size_class, BlockId, MemoryPool, PoolError, PoolStats};
pub use sync::SyncMemoryPool;

/// Version of this crate (kept equal to the Python package version).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
