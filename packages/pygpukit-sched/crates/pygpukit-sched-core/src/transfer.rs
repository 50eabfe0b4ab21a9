//! A transfer queue with separate host-to-device and device-to-host lanes.
//!
//! Each direction has its own queue (the caller runs them on separate
//! streams so uploads and downloads overlap). Within a lane, and across lanes
//! for [`TransferQueue::next`], transfers leave in a fixed order: **priority
//! (highest first), then enqueue sequence (earliest first)**; the sequence is
//! unique, so the order is total and deterministic.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// Direction of a copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TransferKind {
    /// Host to device (upload).
    H2D,
    /// Device to host (download).
    D2H,
}

impl TransferKind {
    /// `h2d` or `d2h`.
    pub const fn name(self) -> &'static str {
        match self {
            TransferKind::H2D => "h2d",
            TransferKind::D2H => "d2h",
        }
    }

    /// Parses `h2d` / `d2h` (case-insensitive; `htod`/`dtoh` also accepted).
    pub fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "h2d" | "htod" => Some(TransferKind::H2D),
            "d2h" | "dtoh" => Some(TransferKind::D2H),
            _ => None,
        }
    }

    const fn lane(self) -> usize {
        match self {
            TransferKind::H2D => 0,
            TransferKind::D2H => 1,
        }
    }
}

impl fmt::Display for TransferKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One queued transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Transfer {
    /// Id (1, 2, ...), equal to the enqueue sequence plus one.
    pub id: u64,
    /// Direction.
    pub kind: TransferKind,
    /// Size in bytes.
    pub bytes: u64,
    /// Priority (higher first).
    pub priority: i32,
}

/// Counters of a [`TransferQueue`], per direction (`[h2d, d2h]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TransferStats {
    /// Transfers enqueued.
    pub enqueued: [u64; 2],
    /// Transfers handed out by `next`.
    pub dispatched: [u64; 2],
    /// Transfers cancelled.
    pub cancelled: [u64; 2],
    /// Bytes handed out.
    pub dispatched_bytes: [u64; 2],
    /// Transfers queued now.
    pub queued: [u64; 2],
    /// Bytes queued now.
    pub queued_bytes: [u64; 2],
}

type Key = (Reverse<i32>, u64);

/// Two-lane priority queue of transfers (see the [module docs](self)).
#[derive(Debug, Clone, Default)]
pub struct TransferQueue {
    lanes: [BTreeMap<Key, Transfer>; 2],
    index: HashMap<u64, (TransferKind, Key)>,
    next_id: u64,
    stats: TransferStats,
}

impl TransferQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues a transfer; returns its id.
    pub fn enqueue(&mut self, kind: TransferKind, bytes: u64, priority: i32) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        let key = (Reverse(priority), id);
        let lane = kind.lane();
        self.lanes[lane].insert(
            key,
            Transfer {
                id,
                kind,
                bytes,
                priority,
            },
        );
        self.index.insert(id, (kind, key));
        self.stats.enqueued[lane] += 1;
        self.stats.queued[lane] += 1;
        self.stats.queued_bytes[lane] += bytes;
        id
    }

    fn take(&mut self, kind: TransferKind, key: Key) -> Transfer {
        let lane = kind.lane();
        let t = self.lanes[lane].remove(&key).expect("queued key");
        self.index.remove(&t.id);
        self.stats.queued[lane] -= 1;
        self.stats.queued_bytes[lane] -= t.bytes;
        t
    }

    fn dispatch(&mut self, kind: TransferKind, key: Key) -> Transfer {
        let t = self.take(kind, key);
        let lane = kind.lane();
        self.stats.dispatched[lane] += 1;
        self.stats.dispatched_bytes[lane] += t.bytes;
        t
    }

    /// The next transfer of either direction (priority, then sequence).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Transfer> {
        let h = self.lanes[0].keys().next().copied();
        let d = self.lanes[1].keys().next().copied();
        match (h, d) {
            (Some(h), Some(d)) if d < h => Some(self.dispatch(TransferKind::D2H, d)),
            (Some(h), _) => Some(self.dispatch(TransferKind::H2D, h)),
            (None, Some(d)) => Some(self.dispatch(TransferKind::D2H, d)),
            (None, None) => None,
        }
    }

    /// The next transfer of one direction.
    pub fn next_of(&mut self, kind: TransferKind) -> Option<Transfer> {
        let key = self.lanes[kind.lane()].keys().next().copied()?;
        Some(self.dispatch(kind, key))
    }

    /// The transfer `next` would return, without removing it.
    pub fn peek(&self) -> Option<Transfer> {
        let h = self.lanes[0].iter().next();
        let d = self.lanes[1].iter().next();
        match (h, d) {
            (Some(h), Some(d)) => Some(if d.0 < h.0 { *d.1 } else { *h.1 }),
            (Some(x), None) | (None, Some(x)) => Some(*x.1),
            (None, None) => None,
        }
    }

    /// Removes a queued transfer; returns it.
    pub fn cancel(&mut self, id: u64) -> Option<Transfer> {
        let (kind, key) = *self.index.get(&id)?;
        let t = self.take(kind, key);
        self.stats.cancelled[kind.lane()] += 1;
        Some(t)
    }

    /// Number of queued transfers.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Number of queued transfers of one direction.
    pub fn len_of(&self, kind: TransferKind) -> usize {
        self.lanes[kind.lane()].len()
    }

    /// Counters.
    pub fn stats(&self) -> TransferStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_priority_then_fifo_across_lanes() {
        let mut q = TransferQueue::new();
        let a = q.enqueue(TransferKind::H2D, 10, 0);
        let b = q.enqueue(TransferKind::D2H, 20, 0);
        let c = q.enqueue(TransferKind::D2H, 30, 5);
        let d = q.enqueue(TransferKind::H2D, 40, 5);
        let e = q.enqueue(TransferKind::H2D, 50, 0);
        assert_eq!(q.peek().map(|t| t.id), Some(c));
        assert_eq!(q.cancel(e).map(|t| t.bytes), Some(50));
        assert_eq!(q.cancel(e), None);
        let order: Vec<u64> = std::iter::from_fn(|| q.next()).map(|t| t.id).collect();
        assert_eq!(order, vec![c, d, a, b]);
        let s = q.stats();
        assert_eq!(s.dispatched, [2, 2]);
        assert_eq!(s.dispatched_bytes, [50, 50]);
        assert_eq!(s.cancelled, [1, 0]);
        assert!(q.is_empty());
        q.enqueue(TransferKind::H2D, 1, 9);
        let x = q.enqueue(TransferKind::D2H, 1, 0);
        assert_eq!(q.next_of(TransferKind::D2H).map(|t| t.id), Some(x));
        assert_eq!(q.len_of(TransferKind::H2D), 1);
        assert_eq!(TransferKind::parse("HtoD"), Some(TransferKind::H2D));
    }
}
