//! Thread-safe wrappers around the single-threaded core types.
//!
//! Each wrapper holds its value in a [`Mutex`] and exposes `&self` methods, so
//! it is `Send + Sync` and can be shared (for example inside an `Arc`, or by a
//! frozen Python class) between threads. Every method takes the lock once, so
//! each call is atomic; use [`SyncMemoryPool::with`] to make a sequence of
//! calls atomic. [`Shared`] does the same for any core type (scheduler,
//! admission controller, QoS evaluator, pacing engine, partitions, transfer
//! queue).
//!
//! The core types do not panic on any input; should a bug make one panic while
//! the lock is held, the lock is recovered rather than poisoning every later
//! call.

use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::memory_pool::{BlockId, MemoryPool, PoolError, PoolStats};

/// A [`MemoryPool`] behind a mutex: `Send + Sync`, all methods take `&self`.
#[derive(Debug)]
pub struct SyncMemoryPool {
    inner: Mutex<MemoryPool>,
    quota: u64,
    enable_eviction: bool,
}

impl SyncMemoryPool {
    /// Creates an empty pool of `quota` bytes.
    pub fn new(quota: u64, enable_eviction: bool) -> Self {
        Self::from_pool(MemoryPool::new(quota, enable_eviction))
    }

    /// Wraps an existing pool.
    pub fn from_pool(pool: MemoryPool) -> Self {
        SyncMemoryPool {
            quota: pool.quota(),
            enable_eviction: pool.eviction_enabled(),
            inner: Mutex::new(pool),
        }
    }

    /// Unwraps the pool.
    pub fn into_inner(self) -> MemoryPool {
        self.inner
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn lock(&self) -> MutexGuard<'_, MemoryPool> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` with the lock held: a sequence of calls that is atomic.
    pub fn with<R>(&self, f: impl FnOnce(&mut MemoryPool) -> R) -> R {
        f(&mut self.lock())
    }

    /// The quota in bytes (immutable, read without locking).
    pub fn quota(&self) -> u64 {
        self.quota
    }

    /// Whether eviction is enabled (immutable, read without locking).
    pub fn eviction_enabled(&self) -> bool {
        self.enable_eviction
    }

    /// See [`MemoryPool::allocate`].
    ///
    /// # Errors
    ///
    /// As [`MemoryPool::allocate`].
    pub fn allocate(&self, size: u64) -> Result<BlockId, PoolError> {
        self.lock().allocate(size)
    }

    /// See [`MemoryPool::free`].
    ///
    /// # Errors
    ///
    /// As [`MemoryPool::free`].
    pub fn free(&self, id: BlockId) -> Result<u64, PoolError> {
        self.lock().free(id)
    }

    /// See [`MemoryPool::clear_cache`].
    pub fn clear_cache(&self) -> u64 {
        self.lock().clear_cache()
    }

    /// See [`MemoryPool::take_evicted`].
    pub fn take_evicted(&self) -> Vec<BlockId> {
        self.lock().take_evicted()
    }

    /// See [`MemoryPool::block_size`].
    pub fn block_size(&self, id: BlockId) -> Option<u64> {
        self.lock().block_size(id)
    }

    /// See [`MemoryPool::is_live`].
    pub fn is_live(&self, id: BlockId) -> bool {
        self.lock().is_live(id)
    }

    /// See [`MemoryPool::stats`].
    pub fn stats(&self) -> PoolStats {
        self.lock().stats()
    }
}

/// Any core value behind a mutex: `Send + Sync`; [`Shared::with`] runs a
/// closure with the lock held, so each call is atomic.
#[derive(Debug, Default)]
pub struct Shared<T> {
    inner: Mutex<T>,
}

impl<T> Shared<T> {
    /// Wraps `value`.
    pub fn new(value: T) -> Self {
        Shared {
            inner: Mutex::new(value),
        }
    }

    /// Runs `f` with the lock held (a poisoned lock is recovered).
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Unwraps the value.
    pub fn into_inner(self) -> T {
        self.inner
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn is_send_and_sync() {
        assert_send_sync::<SyncMemoryPool>();
        assert_send_sync::<Shared<crate::Scheduler>>();
        assert_send_sync::<Shared<crate::QosPolicyEvaluator>>();
    }

    #[test]
    fn with_is_atomic_sequence() {
        let pool = SyncMemoryPool::new(1 << 20, true);
        let id = pool.with(|p| {
            let id = p.allocate(100).unwrap();
            p.free(id).unwrap();
            p.allocate(100).unwrap()
        });
        assert_eq!(id, BlockId(1));
        assert_eq!(pool.stats().cache_hits, 1);
        assert_eq!(pool.into_inner().stats().used, 512);
    }
}
