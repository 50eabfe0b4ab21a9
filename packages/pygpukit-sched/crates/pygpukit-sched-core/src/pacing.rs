//! Kernel pacing: a token bucket per stream, refilled at the stream's share
//! of the device's throughput.
//!
//! A stream registered with `share` (a fraction of the device, shares summing
//! to at most 1) may consume `share × capacity` cost units per second, where
//! `capacity` is the device's throughput in cost units per second (default
//! `1e9`: cost is estimated device time in nanoseconds, so a stream with share
//! 0.25 gets a quarter of the device's time). The bucket is kept as a
//! *generic cell rate algorithm* (GCRA) schedule in integer nanoseconds:
//!
//! - a launch of cost `c` occupies the stream's budget for
//!   `interval = ceil(c × 1e9 / (share × capacity))` ns;
//! - `acquire(stream, c, now)` returns `wait = max(0, tat - burst - now)`,
//!   the time the caller must wait before launching, and advances the
//!   theoretical arrival time `tat = max(tat, now + wait) + interval`;
//! - `burst` (ns) is the bucket depth: an idle stream may launch `burst`
//!   ns worth of budget at once without waiting.
//!
//! Every call is deterministic given its timestamps: no clock is read.

use std::collections::BTreeMap;
use std::fmt;

use crate::qos::PPM;

/// Errors of the pacing engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PacingError {
    /// The stream is not registered.
    UnknownStream(u64),
    /// The stream is already registered.
    DuplicateStream(u64),
    /// A share of 0, or above 1.
    InvalidShare(u64),
    /// Registering would make the shares sum above 1.
    Oversubscribed {
        /// The requested share, ppm.
        requested_ppm: u64,
        /// Shares already registered, ppm.
        allocated_ppm: u64,
    },
}

impl fmt::Display for PacingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PacingError::UnknownStream(s) => write!(f, "stream {s} is not registered"),
            PacingError::DuplicateStream(s) => write!(f, "stream {s} is already registered"),
            PacingError::InvalidShare(ppm) => {
                write!(f, "share {} must be in (0, 1]", *ppm as f64 / PPM as f64)
            }
            PacingError::Oversubscribed {
                requested_ppm,
                allocated_ppm,
            } => write!(
                f,
                "share {} does not fit: {} of 1.0 already allocated",
                *requested_ppm as f64 / PPM as f64,
                *allocated_ppm as f64 / PPM as f64
            ),
        }
    }
}

impl std::error::Error for PacingError {}

/// Per-stream counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StreamStats {
    /// The share, ppm.
    pub share_ppm: u64,
    /// `acquire` calls.
    pub acquisitions: u64,
    /// Calls that had to wait.
    pub throttled: u64,
    /// Sum of the costs.
    pub total_cost: u64,
    /// Sum of the waits, ns.
    pub total_wait_ns: u64,
    /// The current theoretical arrival time, ns.
    pub tat_ns: u64,
}

#[derive(Debug, Clone, Copy)]
struct Stream {
    share_ppm: u64,
    stats: StreamStats,
}

/// Token-bucket (GCRA) pacing of launches per stream (see the
/// [module docs](self)).
#[derive(Debug, Clone)]
pub struct KernelPacingEngine {
    capacity: u64,
    burst_ns: u64,
    allocated_ppm: u64,
    streams: BTreeMap<u64, Stream>,
}

impl KernelPacingEngine {
    /// Default device throughput: 1e9 cost units (ns of device time) per second.
    pub const DEFAULT_CAPACITY: u64 = 1_000_000_000;
    /// Default bucket depth: 1 ms.
    pub const DEFAULT_BURST_NS: u64 = 1_000_000;

    /// An engine for a device of `capacity` cost units per second (clamped to
    /// at least 1) with a bucket depth of `burst_ns`.
    pub fn new(capacity: u64, burst_ns: u64) -> Self {
        KernelPacingEngine {
            capacity: capacity.max(1),
            burst_ns,
            allocated_ppm: 0,
            streams: BTreeMap::new(),
        }
    }

    /// Device throughput, cost units per second.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bucket depth, ns.
    pub fn burst_ns(&self) -> u64 {
        self.burst_ns
    }

    /// Sum of registered shares, ppm.
    pub fn allocated_ppm(&self) -> u64 {
        self.allocated_ppm
    }

    /// Registers a stream with a share in ppm (`(0, 1_000_000]`).
    ///
    /// # Errors
    ///
    /// [`PacingError::DuplicateStream`], [`PacingError::InvalidShare`],
    /// [`PacingError::Oversubscribed`].
    pub fn register_stream(&mut self, stream: u64, share_ppm: u64) -> Result<(), PacingError> {
        if self.streams.contains_key(&stream) {
            return Err(PacingError::DuplicateStream(stream));
        }
        if share_ppm == 0 || share_ppm > PPM {
            return Err(PacingError::InvalidShare(share_ppm));
        }
        if self.allocated_ppm + share_ppm > PPM {
            return Err(PacingError::Oversubscribed {
                requested_ppm: share_ppm,
                allocated_ppm: self.allocated_ppm,
            });
        }
        self.allocated_ppm += share_ppm;
        self.streams.insert(
            stream,
            Stream {
                share_ppm,
                stats: StreamStats {
                    share_ppm,
                    ..StreamStats::default()
                },
            },
        );
        Ok(())
    }

    /// Unregisters a stream; returns its final counters.
    ///
    /// # Errors
    ///
    /// [`PacingError::UnknownStream`].
    pub fn unregister_stream(&mut self, stream: u64) -> Result<StreamStats, PacingError> {
        let s = self
            .streams
            .remove(&stream)
            .ok_or(PacingError::UnknownStream(stream))?;
        self.allocated_ppm -= s.share_ppm;
        Ok(s.stats)
    }

    /// The budget time, ns, of a launch of `cost` on a stream of `share_ppm`.
    fn interval(&self, share_ppm: u64, cost: u64) -> u64 {
        let num = u128::from(cost) * 1_000_000_000u128 * u128::from(PPM);
        let den = u128::from(share_ppm) * u128::from(self.capacity);
        u64::try_from(num.div_ceil(den)).unwrap_or(u64::MAX)
    }

    /// Accounts a launch of `cost` at time `now_ns`; returns how long (ns) the
    /// caller must wait before launching (0: launch now).
    ///
    /// # Errors
    ///
    /// [`PacingError::UnknownStream`].
    pub fn acquire(&mut self, stream: u64, cost: u64, now_ns: u64) -> Result<u64, PacingError> {
        let share_ppm = self
            .streams
            .get(&stream)
            .ok_or(PacingError::UnknownStream(stream))?
            .share_ppm;
        let interval = self.interval(share_ppm, cost);
        let burst = self.burst_ns;
        let s = &mut self.streams.get_mut(&stream).expect("checked").stats;
        let wait = s.tat_ns.saturating_sub(burst).saturating_sub(now_ns);
        let launch = now_ns.saturating_add(wait);
        s.tat_ns = s.tat_ns.max(launch).saturating_add(interval);
        s.acquisitions += 1;
        s.total_cost = s.total_cost.saturating_add(cost);
        s.total_wait_ns = s.total_wait_ns.saturating_add(wait);
        if wait > 0 {
            s.throttled += 1;
        }
        Ok(wait)
    }

    /// The wait `acquire` would return now, without accounting anything.
    ///
    /// # Errors
    ///
    /// [`PacingError::UnknownStream`].
    pub fn peek_wait(&self, stream: u64, now_ns: u64) -> Result<u64, PacingError> {
        let s = self
            .streams
            .get(&stream)
            .ok_or(PacingError::UnknownStream(stream))?;
        Ok(s.stats
            .tat_ns
            .saturating_sub(self.burst_ns)
            .saturating_sub(now_ns))
    }

    /// A stream's counters.
    pub fn stream_stats(&self, stream: u64) -> Option<StreamStats> {
        self.streams.get(&stream).map(|s| s.stats)
    }

    /// Registered streams, ascending.
    pub fn streams(&self) -> Vec<u64> {
        self.streams.keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_share_paces_to_half_rate() {
        let mut p = KernelPacingEngine::new(KernelPacingEngine::DEFAULT_CAPACITY, 0);
        p.register_stream(1, PPM / 2).unwrap();
        // Each 1000 ns kernel costs 2000 ns of a half-share stream's budget.
        assert_eq!(p.acquire(1, 1000, 0), Ok(0));
        assert_eq!(p.acquire(1, 1000, 0), Ok(2000));
        assert_eq!(p.acquire(1, 1000, 500), Ok(3500));
        // After idling, no wait.
        assert_eq!(p.acquire(1, 1000, 1_000_000), Ok(0));
        let s = p.stream_stats(1).unwrap();
        assert_eq!((s.acquisitions, s.throttled, s.total_wait_ns), (4, 2, 5500));
    }

    #[test]
    fn burst_allows_back_to_back() {
        let mut p = KernelPacingEngine::new(KernelPacingEngine::DEFAULT_CAPACITY, 4000);
        p.register_stream(7, PPM).unwrap();
        let waits: Vec<u64> = (0..6).map(|_| p.acquire(7, 1000, 0).unwrap()).collect();
        assert_eq!(waits, vec![0, 0, 0, 0, 0, 1000]);
    }

    #[test]
    fn shares_are_checked() {
        let mut p = KernelPacingEngine::new(1, 0);
        assert_eq!(p.register_stream(1, 0), Err(PacingError::InvalidShare(0)));
        p.register_stream(1, 700_000).unwrap();
        assert!(matches!(
            p.register_stream(2, 400_000),
            Err(PacingError::Oversubscribed { .. })
        ));
        assert_eq!(
            p.register_stream(1, 1),
            Err(PacingError::DuplicateStream(1))
        );
        assert_eq!(p.acquire(9, 1, 0), Err(PacingError::UnknownStream(9)));
        p.unregister_stream(1).unwrap();
        p.register_stream(2, 400_000).unwrap();
        assert_eq!(p.allocated_ppm(), 400_000);
    }
}
