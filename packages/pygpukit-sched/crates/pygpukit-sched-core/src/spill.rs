//! The order in which live blocks are spilled to host memory under pressure.
//!
//! When a partition's allocation does not fit (its quota, or the device's
//! partitionable memory, is full even after every cache that may be given
//! back was given back), the caller (PyGPUkit's Python allocator) asks
//! [`spill_order`] which live blocks to copy to host memory and release. This
//! module decides; the caller moves the bytes and restores a block on its
//! next use.
//!
//! # The policy
//!
//! A candidate is eligible when it is not pinned (exported through DLPack or
//! the CUDA Array Interface, captured in a live graph, or an operand of an
//! operation in progress) and
//!
//! - it belongs to the requesting partition itself, or
//! - `own_only` is false (the device, not the requester's quota, is short)
//!   and its tier is strictly lower than the requester's: Guaranteed blocks
//!   never spill for a Burstable or BestEffort requester, Burstable blocks
//!   never for a BestEffort one (the kubelet's rule, as in
//!   [`crate::qos::QosPolicyEvaluator::eviction_order`]).
//!
//! Eligible blocks are taken lowest tier first (BestEffort, Burstable,
//! Guaranteed), least recently used first within a tier (`last_use`
//! ascending: the caller stamps a block from one monotonic counter at each
//! use), then by id, until their sizes sum to at least `needed`. The order
//! is deterministic (no hash-order dependence).
//!
//! ```
//! use pygpukit_sched_core::qos::QosTier;
//! use pygpukit_sched_core::spill::{spill_order, SpillCandidate};
//!
//! let c = |id, partition: &str, tier, last_use| SpillCandidate {
//!     id,
//!     partition: partition.into(),
//!     tier,
//!     size: 1024,
//!     last_use,
//!     pinned: false,
//! };
//! let candidates = [
//!     c(1, "train", QosTier::Burstable, 5),
//!     c(2, "batch", QosTier::BestEffort, 9),
//!     c(3, "batch", QosTier::BestEffort, 2),
//! ];
//! // The device is short for "train": BestEffort first (LRU), then its own.
//! let order = spill_order(&candidates, "train", QosTier::Burstable, 3000, false);
//! assert_eq!(order, Ok(vec![3, 2, 1]));
//! // Its own quota is short: only its own blocks help.
//! assert_eq!(spill_order(&candidates, "train", QosTier::Burstable, 1, true), Ok(vec![1]));
//! ```

use crate::qos::QosTier;

/// One live block that might be spilled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillCandidate {
    /// The caller's identifier of the block (returned in the order).
    pub id: u64,
    /// The partition charged for the block.
    pub partition: String,
    /// That partition's QoS tier.
    pub tier: QosTier,
    /// Bytes released on the device when the block is spilled.
    pub size: u64,
    /// The block's last use, from one monotonic counter (smaller: older).
    pub last_use: u64,
    /// Whether the block must stay on the device (exported, in a graph, in use).
    pub pinned: bool,
}

/// Whether `c` may be spilled for `requester` (of `tier`).
pub fn eligible(c: &SpillCandidate, requester: &str, tier: QosTier, own_only: bool) -> bool {
    !c.pinned && c.size > 0 && (c.partition == requester || (!own_only && c.tier < tier))
}

/// The ids of the blocks to spill so that at least `needed` bytes are
/// released for `requester` (of `tier`), in spill order (see the
/// [module docs](self)).
///
/// # Errors
///
/// `Err(spillable)`: the eligible blocks hold only `spillable < needed`
/// bytes; nothing should be spilled.
pub fn spill_order(
    candidates: &[SpillCandidate],
    requester: &str,
    tier: QosTier,
    needed: u64,
    own_only: bool,
) -> Result<Vec<u64>, u64> {
    let mut pool: Vec<&SpillCandidate> = candidates
        .iter()
        .filter(|c| eligible(c, requester, tier, own_only))
        .collect();
    pool.sort_by(|a, b| {
        a.tier
            .cmp(&b.tier)
            .then(a.last_use.cmp(&b.last_use))
            .then(a.id.cmp(&b.id))
    });
    let mut freed = 0u64;
    let mut order = Vec::new();
    for c in pool {
        if freed >= needed {
            break;
        }
        freed = freed.saturating_add(c.size);
        order.push(c.id);
    }
    if freed >= needed {
        Ok(order)
    } else {
        Err(freed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cand(id: u64, partition: &str, tier: QosTier, size: u64, last_use: u64) -> SpillCandidate {
        SpillCandidate {
            id,
            partition: partition.into(),
            tier,
            size,
            last_use,
            pinned: false,
        }
    }

    #[test]
    fn own_blocks_least_recently_used_first() {
        let cs = [
            cand(1, "a", QosTier::BestEffort, 100, 30),
            cand(2, "a", QosTier::BestEffort, 100, 10),
            cand(3, "a", QosTier::BestEffort, 100, 20),
        ];
        assert_eq!(
            spill_order(&cs, "a", QosTier::BestEffort, 150, true),
            Ok(vec![2, 3])
        );
        assert_eq!(
            spill_order(&cs, "a", QosTier::BestEffort, 0, true),
            Ok(vec![])
        );
    }

    #[test]
    fn guaranteed_never_spills_for_a_lower_tier() {
        let cs = [
            cand(1, "g", QosTier::Guaranteed, 1000, 1),
            cand(2, "b", QosTier::BestEffort, 10, 9),
        ];
        assert_eq!(
            spill_order(&cs, "b", QosTier::BestEffort, 500, false),
            Err(10)
        );
        // Burstable requester: the Guaranteed block is still out of reach.
        assert_eq!(
            spill_order(&cs, "x", QosTier::Burstable, 5, false),
            Ok(vec![2])
        );
        // The Guaranteed partition may spill its own blocks for itself.
        assert_eq!(
            spill_order(&cs, "g", QosTier::Guaranteed, 5, false),
            Ok(vec![2])
        );
        assert_eq!(
            spill_order(&cs, "g", QosTier::Guaranteed, 500, true),
            Ok(vec![1])
        );
    }

    #[test]
    fn same_tier_of_another_partition_is_not_eligible() {
        let cs = [cand(1, "b1", QosTier::BestEffort, 100, 1)];
        assert_eq!(
            spill_order(&cs, "b2", QosTier::BestEffort, 1, false),
            Err(0)
        );
    }

    #[test]
    fn pinned_and_empty_blocks_are_skipped() {
        let mut p = cand(1, "a", QosTier::BestEffort, 100, 1);
        p.pinned = true;
        let cs = [p, cand(2, "a", QosTier::BestEffort, 0, 0)];
        assert_eq!(spill_order(&cs, "a", QosTier::BestEffort, 1, true), Err(0));
    }

    #[test]
    fn lowest_tier_first_then_lru() {
        let cs = [
            cand(1, "burst", QosTier::Burstable, 100, 1),
            cand(2, "be", QosTier::BestEffort, 100, 50),
            cand(3, "g", QosTier::Guaranteed, 100, 0),
            cand(4, "be", QosTier::BestEffort, 100, 40),
        ];
        assert_eq!(
            spill_order(&cs, "g", QosTier::Guaranteed, 350, false),
            Ok(vec![4, 2, 1, 3])
        );
    }

    fn tier_strategy() -> impl Strategy<Value = QosTier> {
        prop_oneof![
            Just(QosTier::BestEffort),
            Just(QosTier::Burstable),
            Just(QosTier::Guaranteed)
        ]
    }

    proptest! {
        #[test]
        fn order_is_minimal_eligible_and_sorted(
            raw in proptest::collection::vec(
                (0usize..3, tier_strategy(), 0u64..5000, 0u64..100, any::<bool>()), 0..40),
            req in 0usize..3,
            req_tier in tier_strategy(),
            needed in 0u64..60000,
            own_only in any::<bool>(),
        ) {
            let names = ["p0", "p1", "p2"];
            let cs: Vec<SpillCandidate> = raw.iter().enumerate().map(|(i, (p, t, s, u, pin))| {
                SpillCandidate { id: i as u64, partition: names[*p].into(), tier: *t, size: *s,
                                 last_use: *u, pinned: *pin }
            }).collect();
            let requester = names[req];
            let total: u64 = cs.iter().filter(|c| eligible(c, requester, req_tier, own_only))
                .map(|c| c.size).sum();
            match spill_order(&cs, requester, req_tier, needed, own_only) {
                Ok(order) => {
                    let chosen: Vec<&SpillCandidate> =
                        order.iter().map(|id| &cs[*id as usize]).collect();
                    let sum: u64 = chosen.iter().map(|c| c.size).sum();
                    prop_assert!(sum >= needed);
                    // Minimal: without the last one it would not be enough.
                    if let Some(last) = chosen.last() {
                        prop_assert!(sum - last.size < needed);
                    }
                    for c in &chosen {
                        prop_assert!(eligible(c, requester, req_tier, own_only));
                        // Guaranteed never for a lower tier; pinned never.
                        prop_assert!(!c.pinned);
                        prop_assert!(c.partition == requester || c.tier < req_tier);
                    }
                    for w in chosen.windows(2) {
                        prop_assert!((w[0].tier, w[0].last_use, w[0].id)
                                     <= (w[1].tier, w[1].last_use, w[1].id));
                    }
                    // Nothing eligible that comes earlier in the order was left out.
                    if let Some(last) = chosen.last() {
                        for c in cs.iter().filter(|c| eligible(c, requester, req_tier, own_only)) {
                            if (c.tier, c.last_use, c.id) < (last.tier, last.last_use, last.id) {
                                prop_assert!(order.contains(&c.id));
                            }
                        }
                    }
                }
                Err(spillable) => {
                    prop_assert_eq!(spillable, total);
                    prop_assert!(total < needed);
                }
            }
        }
    }
}
