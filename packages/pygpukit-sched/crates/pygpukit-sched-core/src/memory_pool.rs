//! A deterministic model of a caching device-memory pool.
//!
//! The pool does not own memory: it decides and accounts. The caller (the
//! Python side of PyGPUkit, which owns the real `cuMemAlloc` allocations)
//! maps every [`BlockId`] to a real allocation of [`MemoryPool::block_size`]
//! bytes, and frees the real memory of every id returned by
//! [`MemoryPool::take_evicted`].
//!
//! # Size classes
//!
//! Every request is rounded up to a *size class* ([`size_class`]):
//!
//! | request (bytes)          | size class                                  |
//! |--------------------------|---------------------------------------------|
//! | `0`                      | error ([`PoolError::ZeroSize`])             |
//! | `1 ..= 512`              | `512` ([`MIN_BLOCK_SIZE`])                  |
//! | `513 ..= 1 MiB`          | next power of two (1 KiB, 2 KiB, …, 1 MiB)  |
//! | `> 1 MiB`                | next multiple of 2 MiB ([`LARGE_GRANULE`])  |
//!
//! # Blocks and ids
//!
//! A block is either *live* (handed out by [`MemoryPool::allocate`], counted in
//! `used`) or *cached* (returned by [`MemoryPool::free`], counted in `cached`,
//! waiting to be reused). A block id identifies one block for its whole life:
//! ids are unique `u64`s starting at 1, never reused for another block. A cache
//! hit hands out the *same id* again (the same physical block), so the caller's
//! `id -> pointer` map stays valid; a miss creates a block with a fresh id.
//!
//! # Quota and eviction
//!
//! `used + cached <= quota` always holds. A cache miss needs `class_size` new
//! bytes; if `used + cached + class_size > quota` and eviction is enabled, cached
//! blocks are evicted least-recently-freed first (across all classes) until
//! the request fits. If it cannot fit even with the whole cache evicted (that
//! is, `used + class_size > quota`), or eviction is disabled, the allocation
//! fails with [`PoolError::QuotaExceeded`] and the pool is left unchanged
//! (nothing is evicted by a failed allocation).
//!
//! Evicted ids (from allocation pressure or from [`MemoryPool::clear_cache`])
//! are queued in order of eviction and handed to the caller exactly once by
//! [`MemoryPool::take_evicted`].

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;

/// Smallest size class, in bytes.
pub const MIN_BLOCK_SIZE: u64 = 512;
/// Largest power-of-two size class, in bytes (1 MiB).
pub const SMALL_LIMIT: u64 = 1 << 20;
/// Granularity of the size classes above [`SMALL_LIMIT`], in bytes (2 MiB).
pub const LARGE_GRANULE: u64 = 2 << 20;

/// Identifier of one block of a [`MemoryPool`]. Unique per pool, never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlockId(pub u64);

impl BlockId {
    /// The raw integer value of the id.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for BlockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl From<u64> for BlockId {
    fn from(value: u64) -> Self {
        BlockId(value)
    }
}

impl From<BlockId> for u64 {
    fn from(value: BlockId) -> Self {
        value.0
    }
}

/// Errors of [`MemoryPool`] operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolError {
    /// A request for zero bytes.
    ZeroSize,
    /// The request is so large that its size class does not fit in a `u64`.
    SizeTooLarge {
        /// Requested size in bytes.
        requested: u64,
    },
    /// The request does not fit in the quota (after evicting, if enabled).
    /// The byte counts are those of the pool at the time of the call.
    QuotaExceeded {
        /// Requested size in bytes.
        requested: u64,
        /// The size class the request was rounded up to, in bytes.
        class_size: u64,
        /// Bytes in live blocks.
        used: u64,
        /// Bytes in cached (free) blocks.
        cached: u64,
        /// The pool's quota in bytes.
        quota: u64,
    },
    /// The id is not a live block of this pool (unknown id, or already freed).
    InvalidBlock(BlockId),
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoolError::ZeroSize => f.write_str("cannot allocate a block of size 0"),
            PoolError::SizeTooLarge { requested } => write!(
                f,
                "requested size {requested} bytes is too large to be rounded up to a size class"
            ),
            PoolError::QuotaExceeded {
                requested,
                class_size,
                used,
                cached,
                quota,
            } => write!(
                f,
                "memory pool quota exceeded: requested {requested} bytes \
                 (size class {class_size} bytes), used {used} bytes, \
                 cached {cached} bytes, quota {quota} bytes"
            ),
            PoolError::InvalidBlock(id) => write!(
                f,
                "block {id} is not a live block of this pool (unknown id, already freed, or evicted)"
            ),
        }
    }
}

impl std::error::Error for PoolError {}

/// Rounds a request up to its size class (see the [module docs](self)).
///
/// # Errors
///
/// [`PoolError::ZeroSize`] for `0`, [`PoolError::SizeTooLarge`] when the
/// rounded size would not fit in a `u64`.
pub fn size_class(size: u64) -> Result<u64, PoolError> {
    match size {
        0 => Err(PoolError::ZeroSize),
        s if s <= MIN_BLOCK_SIZE => Ok(MIN_BLOCK_SIZE),
        s if s <= SMALL_LIMIT => Ok(s.next_power_of_two()),
        s => s
            .checked_next_multiple_of(LARGE_GRANULE)
            .ok_or(PoolError::SizeTooLarge { requested: s }),
    }
}

/// A snapshot of a pool's counters. All sizes are in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolStats {
    /// The pool's quota.
    pub quota: u64,
    /// Bytes in live blocks.
    pub used: u64,
    /// Bytes in cached (free, reusable) blocks.
    pub cached: u64,
    /// Highest value `used` has reached.
    pub peak_used: u64,
    /// Successful allocations (`cache_hits + cache_misses`).
    pub allocations: u64,
    /// Successful frees.
    pub frees: u64,
    /// Allocations served from the cache.
    pub cache_hits: u64,
    /// Allocations that created a new block.
    pub cache_misses: u64,
    /// Cached blocks dropped, by allocation pressure or `clear_cache`.
    pub evictions: u64,
    /// Bytes of the evicted blocks.
    pub evicted_bytes: u64,
    /// Number of live blocks.
    pub active_blocks: u64,
    /// Number of cached blocks.
    pub cached_blocks: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockState {
    Live,
    /// `freed_at` is the pool tick of the free: the LRU key.
    Cached {
        freed_at: u64,
    },
}

#[derive(Debug, Clone, Copy)]
struct Block {
    size: u64,
    state: BlockState,
}

/// A caching memory pool model with size classes and LRU eviction.
///
/// See the [module docs](self) for the exact semantics.
#[derive(Debug, Clone)]
pub struct MemoryPool {
    quota: u64,
    enable_eviction: bool,
    /// Every live or cached block.
    blocks: HashMap<BlockId, Block>,
    /// Cached blocks per size class, least recently freed at the front.
    free_lists: BTreeMap<u64, VecDeque<BlockId>>,
    /// Cached blocks of all classes by free tick: least recently freed first.
    lru: BTreeMap<u64, BlockId>,
    /// Evicted ids not yet taken by the caller, in eviction order.
    evicted: Vec<BlockId>,
    next_id: u64,
    tick: u64,
    used: u64,
    cached: u64,
    peak_used: u64,
    allocations: u64,
    frees: u64,
    cache_hits: u64,
    cache_misses: u64,
    evictions: u64,
    evicted_bytes: u64,
}

impl MemoryPool {
    /// Creates an empty pool of `quota` bytes.
    pub fn new(quota: u64, enable_eviction: bool) -> Self {
        MemoryPool {
            quota,
            enable_eviction,
            blocks: HashMap::new(),
            free_lists: BTreeMap::new(),
            lru: BTreeMap::new(),
            evicted: Vec::new(),
            next_id: 1,
            tick: 0,
            used: 0,
            cached: 0,
            peak_used: 0,
            allocations: 0,
            frees: 0,
            cache_hits: 0,
            cache_misses: 0,
            evictions: 0,
            evicted_bytes: 0,
        }
    }

    /// The quota in bytes.
    pub fn quota(&self) -> u64 {
        self.quota
    }

    /// Whether cached blocks are evicted to make room for new ones.
    pub fn eviction_enabled(&self) -> bool {
        self.enable_eviction
    }

    /// Bytes in live blocks.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Bytes in cached blocks.
    pub fn cached(&self) -> u64 {
        self.cached
    }

    /// Allocates a block for `size` bytes and returns its id.
    ///
    /// Reuses the most recently freed cached block of the same size class if
    /// there is one (same id as before); otherwise accounts a new block with a
    /// fresh id, evicting cached blocks in LRU order first if needed and
    /// enabled. Evicted ids are queued for [`take_evicted`](Self::take_evicted).
    ///
    /// # Errors
    ///
    /// [`PoolError::ZeroSize`], [`PoolError::SizeTooLarge`], or
    /// [`PoolError::QuotaExceeded`]; on error the pool is unchanged.
    pub fn allocate(&mut self, size: u64) -> Result<BlockId, PoolError> {
        let class = size_class(size)?;

        if let Some(id) = self.pop_cached(class) {
            self.cached -= class;
            self.mark_live(class);
            self.cache_hits += 1;
            return Ok(id);
        }

        if !self.fits(class) {
            let fits_after_full_eviction = self
                .used
                .checked_add(class)
                .is_some_and(|total| total <= self.quota);
            if !self.enable_eviction || !fits_after_full_eviction {
                return Err(PoolError::QuotaExceeded {
                    requested: size,
                    class_size: class,
                    used: self.used,
                    cached: self.cached,
                    quota: self.quota,
                });
            }
            while !self.fits(class) {
                let evicted = self.evict_lru();
                debug_assert!(evicted.is_some(), "cache exhausted before the request fit");
                if evicted.is_none() {
                    break;
                }
            }
        }

        let id = BlockId(self.next_id);
        self.next_id += 1;
        self.blocks.insert(
            id,
            Block {
                size: class,
                state: BlockState::Live,
            },
        );
        self.mark_live(class);
        self.cache_misses += 1;
        Ok(id)
    }

    /// Returns a live block to its size class's cache and returns its size.
    ///
    /// The block stays accounted (as `cached`) until it is reused or evicted.
    ///
    /// # Errors
    ///
    /// [`PoolError::InvalidBlock`] if `id` is not a live block of this pool
    /// (unknown, already freed, or evicted).
    pub fn free(&mut self, id: BlockId) -> Result<u64, PoolError> {
        let tick = self.next_tick();
        let block = match self.blocks.get_mut(&id) {
            Some(block) if block.state == BlockState::Live => block,
            _ => return Err(PoolError::InvalidBlock(id)),
        };
        block.state = BlockState::Cached { freed_at: tick };
        let size = block.size;
        self.free_lists.entry(size).or_default().push_back(id);
        self.lru.insert(tick, id);
        self.used -= size;
        self.cached += size;
        self.frees += 1;
        Ok(size)
    }

    /// Drops every cached block (in LRU order), queues their ids for
    /// [`take_evicted`](Self::take_evicted) and returns the bytes released.
    pub fn clear_cache(&mut self) -> u64 {
        let mut released = 0;
        while let Some(size) = self.evict_lru() {
            released += size;
        }
        released
    }

    /// Alias of [`clear_cache`](Self::clear_cache).
    pub fn evict_all(&mut self) -> u64 {
        self.clear_cache()
    }

    /// Returns, and forgets, the ids evicted since the last call, in eviction
    /// order. The caller must release the real memory of each of them.
    pub fn take_evicted(&mut self) -> Vec<BlockId> {
        std::mem::take(&mut self.evicted)
    }

    /// Number of evicted ids waiting for [`take_evicted`](Self::take_evicted).
    pub fn pending_evictions(&self) -> usize {
        self.evicted.len()
    }

    /// Size class (bytes) of a live or cached block; `None` for other ids.
    pub fn block_size(&self, id: BlockId) -> Option<u64> {
        self.blocks.get(&id).map(|block| block.size)
    }

    /// Whether `id` is a live (allocated, not freed) block.
    pub fn is_live(&self, id: BlockId) -> bool {
        matches!(self.blocks.get(&id), Some(block) if block.state == BlockState::Live)
    }

    /// Whether `id` is a cached (freed, not evicted) block.
    pub fn is_cached(&self, id: BlockId) -> bool {
        matches!(self.blocks.get(&id), Some(block) if block.state != BlockState::Live)
    }

    /// Cached block ids, least recently freed (next to be evicted) first.
    pub fn cached_ids_lru(&self) -> Vec<BlockId> {
        self.lru.values().copied().collect()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            quota: self.quota,
            used: self.used,
            cached: self.cached,
            peak_used: self.peak_used,
            allocations: self.allocations,
            frees: self.frees,
            cache_hits: self.cache_hits,
            cache_misses: self.cache_misses,
            evictions: self.evictions,
            evicted_bytes: self.evicted_bytes,
            active_blocks: self.blocks.len() as u64 - self.lru.len() as u64,
            cached_blocks: self.lru.len() as u64,
        }
    }

    /// Checks the internal invariants; returns a description of the first
    /// violation. Meant for tests and debugging (cost is linear in blocks).
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut live_bytes = 0u64;
        let mut cached_bytes = 0u64;
        let mut cached_count = 0usize;
        for (id, block) in &self.blocks {
            if id.0 == 0 || id.0 >= self.next_id {
                return Err(format!("block id {id} was never issued"));
            }
            match block.state {
                BlockState::Live => live_bytes += block.size,
                BlockState::Cached { freed_at } => {
                    cached_bytes += block.size;
                    cached_count += 1;
                    if self.lru.get(&freed_at) != Some(id) {
                        return Err(format!("cached block {id} missing from the LRU index"));
                    }
                    if !self
                        .free_lists
                        .get(&block.size)
                        .is_some_and(|list| list.contains(id))
                    {
                        return Err(format!("cached block {id} missing from its free list"));
                    }
                }
            }
        }
        if live_bytes != self.used || cached_bytes != self.cached {
            return Err(format!(
                "byte counters drifted: used {} (actual {live_bytes}), cached {} (actual {cached_bytes})",
                self.used, self.cached
            ));
        }
        if cached_count != self.lru.len() {
            return Err("LRU index holds blocks that are not cached".into());
        }
        let listed: usize = self.free_lists.values().map(VecDeque::len).sum();
        if listed != cached_count || self.free_lists.values().any(VecDeque::is_empty) {
            return Err("free lists out of sync with cached blocks".into());
        }
        for list in self.free_lists.values() {
            let ticks: Vec<u64> = list.iter().map(|id| self.freed_at(*id)).collect();
            if ticks.windows(2).any(|w| w[0] >= w[1]) {
                return Err("free list is not ordered by free time".into());
            }
        }
        if self
            .used
            .checked_add(self.cached)
            .is_none_or(|t| t > self.quota)
        {
            return Err("used + cached exceeds the quota".into());
        }
        if self.peak_used < self.used {
            return Err("peak_used below used".into());
        }
        if self.allocations != self.cache_hits + self.cache_misses {
            return Err("allocations != cache_hits + cache_misses".into());
        }
        Ok(())
    }

    fn freed_at(&self, id: BlockId) -> u64 {
        match self.blocks.get(&id).map(|block| block.state) {
            Some(BlockState::Cached { freed_at }) => freed_at,
            _ => u64::MAX,
        }
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    /// Whether `extra` new bytes fit next to `used + cached`.
    fn fits(&self, extra: u64) -> bool {
        self.used
            .checked_add(self.cached)
            .and_then(|total| total.checked_add(extra))
            .is_some_and(|total| total <= self.quota)
    }

    fn mark_live(&mut self, size: u64) {
        self.used += size;
        self.peak_used = self.peak_used.max(self.used);
        self.allocations += 1;
    }

    /// Takes the most recently freed cached block of `class` and marks it live.
    fn pop_cached(&mut self, class: u64) -> Option<BlockId> {
        let list = self.free_lists.get_mut(&class)?;
        let id = list.pop_back()?;
        if list.is_empty() {
            self.free_lists.remove(&class);
        }
        let block = self.blocks.get_mut(&id).expect("cached id has a block");
        if let BlockState::Cached { freed_at } = block.state {
            self.lru.remove(&freed_at);
        }
        block.state = BlockState::Live;
        Some(id)
    }

    /// Evicts the least recently freed cached block; returns its size.
    fn evict_lru(&mut self) -> Option<u64> {
        let (_, id) = self.lru.pop_first()?;
        let block = self.blocks.remove(&id).expect("LRU id has a block");
        let list = self
            .free_lists
            .get_mut(&block.size)
            .expect("cached block has a free list");
        // The globally least recently freed block is the oldest of its class.
        let front = list.pop_front();
        debug_assert_eq!(front, Some(id));
        if list.is_empty() {
            self.free_lists.remove(&block.size);
        }
        self.cached -= block.size;
        self.evictions += 1;
        self.evicted_bytes += block.size;
        self.evicted.push(id);
        Some(block.size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;

    #[test]
    fn size_classes() {
        assert_eq!(size_class(0), Err(PoolError::ZeroSize));
        assert_eq!(size_class(1), Ok(512));
        assert_eq!(size_class(512), Ok(512));
        assert_eq!(size_class(513), Ok(KIB));
        assert_eq!(size_class(4096), Ok(4 * KIB));
        assert_eq!(size_class(4097), Ok(8 * KIB));
        assert_eq!(size_class(MIB - 1), Ok(MIB));
        assert_eq!(size_class(MIB), Ok(MIB));
        assert_eq!(size_class(MIB + 1), Ok(2 * MIB));
        assert_eq!(size_class(2 * MIB), Ok(2 * MIB));
        assert_eq!(size_class(2 * MIB + 1), Ok(4 * MIB));
        assert_eq!(size_class(5 * MIB), Ok(6 * MIB));
        assert_eq!(
            size_class(u64::MAX - LARGE_GRANULE + 1),
            Ok(u64::MAX - LARGE_GRANULE + 1)
        );
        assert_eq!(
            size_class(u64::MAX),
            Err(PoolError::SizeTooLarge {
                requested: u64::MAX
            })
        );
    }

    #[test]
    fn allocate_free_reuse_same_id() {
        let mut pool = MemoryPool::new(MIB, true);
        let a = pool.allocate(4000).unwrap();
        assert_eq!(a, BlockId(1));
        assert_eq!(pool.block_size(a), Some(4 * KIB));
        assert_eq!(pool.stats().used, 4 * KIB);
        assert_eq!(pool.free(a), Ok(4 * KIB));
        let s = pool.stats();
        assert_eq!(
            (s.used, s.cached, s.cached_blocks, s.active_blocks),
            (0, 4 * KIB, 1, 0)
        );
        // Same class (4 KiB): hit, same id.
        let b = pool.allocate(3000).unwrap();
        assert_eq!(b, a);
        let s = pool.stats();
        assert_eq!((s.cache_hits, s.cache_misses, s.allocations), (1, 1, 2));
        assert_eq!((s.used, s.cached), (4 * KIB, 0));
        // Different class: miss, fresh id.
        let c = pool.allocate(100).unwrap();
        assert_eq!(c, BlockId(2));
        pool.check_invariants().unwrap();
    }

    #[test]
    fn hit_takes_most_recently_freed() {
        let mut pool = MemoryPool::new(MIB, true);
        let ids: Vec<_> = (0..3).map(|_| pool.allocate(1024).unwrap()).collect();
        for id in &ids {
            pool.free(*id).unwrap();
        }
        assert_eq!(pool.allocate(1024).unwrap(), ids[2]);
        assert_eq!(pool.allocate(1024).unwrap(), ids[1]);
        assert_eq!(pool.allocate(1024).unwrap(), ids[0]);
        assert_eq!(pool.allocate(1024).unwrap(), BlockId(4));
    }

    #[test]
    fn double_free_and_unknown_free() {
        let mut pool = MemoryPool::new(MIB, true);
        let a = pool.allocate(10).unwrap();
        pool.free(a).unwrap();
        assert_eq!(pool.free(a), Err(PoolError::InvalidBlock(a)));
        assert_eq!(
            pool.free(BlockId(99)),
            Err(PoolError::InvalidBlock(BlockId(99)))
        );
        assert_eq!(
            pool.free(BlockId(0)),
            Err(PoolError::InvalidBlock(BlockId(0)))
        );
        assert_eq!(pool.stats().frees, 1);
        pool.check_invariants().unwrap();
    }

    #[test]
    fn zero_size_is_an_error() {
        let mut pool = MemoryPool::new(MIB, true);
        assert_eq!(pool.allocate(0), Err(PoolError::ZeroSize));
        assert_eq!(
            pool.stats(),
            PoolStats {
                quota: MIB,
                ..PoolStats::default()
            }
        );
    }

    #[test]
    fn quota_exceeded_without_eviction() {
        let mut pool = MemoryPool::new(8 * KIB, false);
        let a = pool.allocate(4 * KIB).unwrap();
        let b = pool.allocate(2 * KIB).unwrap();
        pool.free(b).unwrap();
        let err = pool.allocate(4 * KIB).unwrap_err();
        assert_eq!(
            err,
            PoolError::QuotaExceeded {
                requested: 4 * KIB,
                class_size: 4 * KIB,
                used: 4 * KIB,
                cached: 2 * KIB,
                quota: 8 * KIB,
            }
        );
        assert!(err.to_string().contains("quota 8192 bytes"));
        // The failure changed nothing.
        assert_eq!(pool.stats().cached_blocks, 1);
        assert!(pool.take_evicted().is_empty());
        // A cache hit needs no new bytes, so it still works.
        assert_eq!(pool.allocate(2 * KIB), Ok(b));
        pool.free(a).unwrap();
        pool.check_invariants().unwrap();
    }

    #[test]
    fn eviction_is_lru_and_minimal() {
        let mut pool = MemoryPool::new(4 * KIB, true);
        let ids: Vec<_> = (0..4).map(|_| pool.allocate(KIB).unwrap()).collect();
        // Free in the order 2, 0, 3, 1: that is the LRU order.
        for i in [2, 0, 3, 1] {
            pool.free(ids[i]).unwrap();
        }
        assert_eq!(pool.cached_ids_lru(), vec![ids[2], ids[0], ids[3], ids[1]]);
        // A 2 KiB request (miss) needs 2 KiB: evicts the two LRU blocks only.
        let big = pool.allocate(2 * KIB).unwrap();
        assert_eq!(big, BlockId(5));
        assert_eq!(pool.take_evicted(), vec![ids[2], ids[0]]);
        assert!(pool.take_evicted().is_empty(), "drained exactly once");
        let s = pool.stats();
        assert_eq!((s.evictions, s.evicted_bytes), (2, 2 * KIB));
        assert_eq!((s.used, s.cached), (2 * KIB, 2 * KIB));
        assert!(!pool.is_live(ids[2]) && !pool.is_cached(ids[2]));
        assert_eq!(pool.free(ids[2]), Err(PoolError::InvalidBlock(ids[2])));
        pool.check_invariants().unwrap();
    }

    #[test]
    fn failed_allocation_evicts_nothing() {
        let mut pool = MemoryPool::new(4 * KIB, true);
        let a = pool.allocate(2 * KIB).unwrap();
        let b = pool.allocate(KIB).unwrap();
        pool.free(b).unwrap();
        // used 2 KiB + 4 KiB > 4 KiB even with the cache empty.
        assert!(matches!(
            pool.allocate(4 * KIB),
            Err(PoolError::QuotaExceeded { .. })
        ));
        assert_eq!(pool.stats().cached_blocks, 1);
        assert_eq!(pool.stats().evictions, 0);
        assert!(pool.is_cached(b));
        assert!(pool.is_live(a));
    }

    #[test]
    fn clear_cache_reports_ids_and_bytes() {
        let mut pool = MemoryPool::new(MIB, false);
        let a = pool.allocate(KIB).unwrap();
        let b = pool.allocate(8 * KIB).unwrap();
        let c = pool.allocate(KIB).unwrap();
        pool.free(b).unwrap();
        pool.free(a).unwrap();
        assert_eq!(pool.clear_cache(), 9 * KIB);
        assert_eq!(pool.take_evicted(), vec![b, a]);
        assert_eq!(pool.evict_all(), 0);
        let s = pool.stats();
        assert_eq!(
            (s.used, s.cached, s.active_blocks, s.cached_blocks),
            (KIB, 0, 1, 0)
        );
        assert!(pool.is_live(c));
        // Fresh ids after eviction: never reused.
        assert_eq!(pool.allocate(KIB).unwrap(), BlockId(4));
    }

    #[test]
    fn peak_used_tracks_maximum() {
        let mut pool = MemoryPool::new(MIB, true);
        let a = pool.allocate(64 * KIB).unwrap();
        let b = pool.allocate(64 * KIB).unwrap();
        pool.free(a).unwrap();
        pool.free(b).unwrap();
        pool.allocate(512).unwrap();
        assert_eq!(pool.stats().peak_used, 128 * KIB);
    }

    #[test]
    fn huge_quota_does_not_overflow() {
        let mut pool = MemoryPool::new(u64::MAX, true);
        let big = u64::MAX - LARGE_GRANULE + 1;
        let a = pool.allocate(big).unwrap();
        assert!(matches!(
            pool.allocate(big),
            Err(PoolError::QuotaExceeded { .. })
        ));
        assert_eq!(
            pool.allocate(u64::MAX),
            Err(PoolError::SizeTooLarge {
                requested: u64::MAX
            })
        );
        pool.free(a).unwrap();
        pool.check_invariants().unwrap();
    }

    #[test]
    fn zero_quota_rejects_everything() {
        let mut pool = MemoryPool::new(0, true);
        assert!(matches!(
            pool.allocate(1),
            Err(PoolError::QuotaExceeded {
                class_size: 512,
                ..
            })
        ));
    }
}
