//! GPU partitions: named slices of a device's memory and compute, each with
//! its own memory accounting and QoS tier.
//!
//! A partition is created with [`PartitionLimits`]: a memory limit, an
//! optional memory request (default: equal to the limit) and a compute share.
//! Its tier is derived as Kubernetes derives a pod's QoS class
//! ([`QosTier::classify`]): request = limit → Guaranteed; request < limit →
//! Burstable; no memory and no compute → BestEffort.
//!
//! - **Creation** reserves the request and the compute share: the sum of
//!   requests never exceeds `total_memory` and the sum of compute shares
//!   never exceeds `total_compute` (as a Kubernetes node never admits pods
//!   whose requests exceed its allocatable resources).
//! - **Accounting**: [`PartitionManager::charge`] adds an allocation to a
//!   partition's usage and fails, changing nothing, when the usage would
//!   exceed the partition's limit (a memory limit is a hard cap, as a
//!   container's) or when the bytes above the partition's request are not
//!   free. A partition *holds* `max(request, usage)`; the sum of held bytes
//!   never exceeds `total_memory`, so a partition always has its request
//!   available. [`PartitionManager::release`] subtracts.
//! - **Compute** is enforced by the caller: a green context with
//!   `compute × SM count` SMs where the driver has them, else stream priority
//!   ([`QosTier::stream_priority`]) plus kernel pacing at the partition's
//!   share.

use std::collections::BTreeMap;
use std::fmt;

use crate::qos::{ppm_to_fraction, QosTier, PPM};

/// Device-wide totals a [`PartitionManager`] divides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionConfig {
    /// Device memory in bytes.
    pub total_memory: u64,
    /// Compute to divide, ppm (`1_000_000`: the whole device).
    pub total_compute_ppm: u64,
}

impl PartitionConfig {
    /// A config for `total_memory` bytes and the whole device's compute.
    pub const fn new(total_memory: u64) -> Self {
        PartitionConfig {
            total_memory,
            total_compute_ppm: PPM,
        }
    }
}

/// A partition's limits (builder style).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct PartitionLimits {
    /// Memory limit in bytes (`0`: none).
    pub memory: u64,
    /// Memory request in bytes (`None`: equal to the limit).
    pub memory_request: Option<u64>,
    /// Compute share, ppm.
    pub compute_ppm: u64,
}

impl PartitionLimits {
    /// No limits (a BestEffort partition).
    pub const fn new() -> Self {
        PartitionLimits {
            memory: 0,
            memory_request: None,
            compute_ppm: 0,
        }
    }

    /// With a memory limit of `bytes`.
    pub const fn memory(mut self, bytes: u64) -> Self {
        self.memory = bytes;
        self
    }

    /// With a memory request of `bytes` (below the limit: Burstable).
    pub const fn memory_request(mut self, bytes: u64) -> Self {
        self.memory_request = Some(bytes);
        self
    }

    /// With a compute share in ppm.
    pub const fn compute_ppm(mut self, ppm: u64) -> Self {
        self.compute_ppm = ppm;
        self
    }

    /// The effective request in bytes.
    pub const fn request(&self) -> u64 {
        match self.memory_request {
            Some(r) => r,
            None => self.memory,
        }
    }

    /// The derived tier.
    pub const fn tier(&self) -> QosTier {
        QosTier::classify(
            self.request(),
            self.memory,
            self.compute_ppm,
            self.compute_ppm,
        )
    }
}

/// Errors of partition operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionError {
    /// A partition with this id exists.
    DuplicateId(String),
    /// No partition with this id.
    NotFound(String),
    /// Inconsistent limits.
    InvalidLimits(String),
    /// The request does not fit next to the other partitions' requests.
    InsufficientMemory {
        /// Bytes requested.
        requested: u64,
        /// Bytes already reserved.
        reserved: u64,
        /// Device memory.
        total: u64,
    },
    /// The compute share does not fit next to the others.
    InsufficientCompute {
        /// Share requested, ppm.
        requested_ppm: u64,
        /// Shares already allocated, ppm.
        allocated_ppm: u64,
        /// Total, ppm.
        total_ppm: u64,
    },
    /// A charge would take the partition over its memory limit.
    QuotaExceeded {
        /// Partition id.
        partition: String,
        /// Bytes of the charge.
        requested: u64,
        /// The partition's usage.
        used: u64,
        /// The partition's limit.
        limit: u64,
    },
    /// The bytes above the partition's request are not free on the device.
    OutOfMemory {
        /// Partition id.
        partition: String,
        /// Additional bytes the device must provide.
        needed: u64,
        /// Bytes free on the device.
        free: u64,
    },
    /// A release larger than the usage.
    Underflow {
        /// Partition id.
        partition: String,
        /// Bytes asked to release.
        requested: u64,
        /// The usage.
        used: u64,
    },
    /// Deleting a partition that still has usage (without `force`).
    InUse {
        /// Partition id.
        partition: String,
        /// The usage.
        used: u64,
    },
}

impl fmt::Display for PartitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PartitionError::DuplicateId(id) => write!(f, "partition {id:?} already exists"),
            PartitionError::NotFound(id) => write!(f, "no partition {id:?}"),
            PartitionError::InvalidLimits(msg) => write!(f, "invalid partition limits: {msg}"),
            PartitionError::InsufficientMemory {
                requested,
                reserved,
                total,
            } => write!(
                f,
                "insufficient memory for the partition: requested {requested} bytes, \
                 {reserved} of {total} bytes already reserved"
            ),
            PartitionError::InsufficientCompute {
                requested_ppm,
                allocated_ppm,
                total_ppm,
            } => write!(
                f,
                "insufficient compute for the partition: requested {}, {} of {} already allocated",
                ppm_to_fraction(*requested_ppm),
                ppm_to_fraction(*allocated_ppm),
                ppm_to_fraction(*total_ppm)
            ),
            PartitionError::QuotaExceeded {
                partition,
                requested,
                used,
                limit,
            } => write!(
                f,
                "partition {partition:?} memory limit exceeded: requested {requested} bytes, \
                 {used} of {limit} bytes in use"
            ),
            PartitionError::OutOfMemory {
                partition,
                needed,
                free,
            } => write!(
                f,
                "partition {partition:?} needs {needed} bytes beyond its request, \
                 only {free} bytes free on the device"
            ),
            PartitionError::Underflow {
                partition,
                requested,
                used,
            } => write!(
                f,
                "partition {partition:?} cannot release {requested} bytes: {used} bytes in use"
            ),
            PartitionError::InUse { partition, used } => {
                write!(f, "partition {partition:?} still has {used} bytes in use")
            }
        }
    }
}

impl std::error::Error for PartitionError {}

/// A partition's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Limits.
    pub limits: PartitionLimits,
    /// Bytes charged now.
    pub usage: u64,
    /// Highest usage.
    pub peak_usage: u64,
    /// Successful charges.
    pub charges: u64,
    /// Refused charges.
    pub failed_charges: u64,
}

impl Partition {
    /// The derived tier.
    pub const fn tier(&self) -> QosTier {
        self.limits.tier()
    }

    /// Bytes held: `max(request, usage)`.
    pub fn held(&self) -> u64 {
        self.limits.request().max(self.usage)
    }

    /// The effective limit: the memory limit, or `total` without one.
    pub fn limit_or(&self, total: u64) -> u64 {
        match self.limits.memory {
            0 => total,
            m => m,
        }
    }
}

/// Device-wide counters of a [`PartitionManager`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PartitionStats {
    /// Device memory.
    pub total_memory: u64,
    /// Sum of requests.
    pub reserved_memory: u64,
    /// Sum of `max(request, usage)`.
    pub held_memory: u64,
    /// Sum of usages.
    pub used_memory: u64,
    /// Total compute, ppm.
    pub total_compute_ppm: u64,
    /// Allocated compute, ppm.
    pub allocated_compute_ppm: u64,
    /// Number of partitions.
    pub partitions: u64,
}

/// Creates partitions and accounts their memory (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct PartitionManager {
    config: PartitionConfig,
    partitions: BTreeMap<String, Partition>,
    reserved: u64,
    held: u64,
    used: u64,
    compute: u64,
}

impl PartitionManager {
    /// A manager dividing `config`.
    pub fn new(config: PartitionConfig) -> Self {
        PartitionManager {
            config,
            partitions: BTreeMap::new(),
            reserved: 0,
            held: 0,
            used: 0,
            compute: 0,
        }
    }

    /// The config.
    pub fn config(&self) -> PartitionConfig {
        self.config
    }

    /// Creates a partition.
    ///
    /// # Errors
    ///
    /// [`PartitionError::DuplicateId`], [`PartitionError::InvalidLimits`]
    /// (request above limit, limit above the device, compute above 1),
    /// [`PartitionError::InsufficientMemory`],
    /// [`PartitionError::InsufficientCompute`].
    pub fn create(
        &mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        limits: PartitionLimits,
    ) -> Result<&Partition, PartitionError> {
        let id = id.into();
        if self.partitions.contains_key(&id) {
            return Err(PartitionError::DuplicateId(id));
        }
        let total = self.config.total_memory;
        let request = limits.request();
        if limits.memory > 0 && request > limits.memory {
            return Err(PartitionError::InvalidLimits(format!(
                "memory request {request} exceeds memory limit {}",
                limits.memory
            )));
        }
        if limits.memory > total || request > total {
            return Err(PartitionError::InvalidLimits(format!(
                "memory {} exceeds the device's {total} bytes",
                limits.memory.max(request)
            )));
        }
        if limits.compute_ppm > PPM {
            return Err(PartitionError::InvalidLimits(format!(
                "compute share {} above 1",
                ppm_to_fraction(limits.compute_ppm)
            )));
        }
        if self.reserved + request > total {
            return Err(PartitionError::InsufficientMemory {
                requested: request,
                reserved: self.reserved,
                total,
            });
        }
        if self.held + request > total {
            // Burst usage of other partitions holds the bytes.
            return Err(PartitionError::InsufficientMemory {
                requested: request,
                reserved: self.held,
                total,
            });
        }
        if self.compute + limits.compute_ppm > self.config.total_compute_ppm {
            return Err(PartitionError::InsufficientCompute {
                requested_ppm: limits.compute_ppm,
                allocated_ppm: self.compute,
                total_ppm: self.config.total_compute_ppm,
            });
        }
        self.reserved += request;
        self.held += request;
        self.compute += limits.compute_ppm;
        let partition = Partition {
            id: id.clone(),
            name: name.into(),
            limits,
            usage: 0,
            peak_usage: 0,
            charges: 0,
            failed_charges: 0,
        };
        Ok(self.partitions.entry(id).or_insert(partition))
    }

    /// Deletes a partition; returns its final state. Without `force`, a
    /// partition with usage cannot be deleted.
    ///
    /// # Errors
    ///
    /// [`PartitionError::NotFound`], [`PartitionError::InUse`].
    pub fn delete(&mut self, id: &str, force: bool) -> Result<Partition, PartitionError> {
        let p = self
            .partitions
            .get(id)
            .ok_or_else(|| PartitionError::NotFound(id.to_owned()))?;
        if p.usage > 0 && !force {
            return Err(PartitionError::InUse {
                partition: id.to_owned(),
                used: p.usage,
            });
        }
        let p = self.partitions.remove(id).expect("checked");
        self.reserved -= p.limits.request();
        self.held -= p.held();
        self.used -= p.usage;
        self.compute -= p.limits.compute_ppm;
        Ok(p)
    }

    /// A partition.
    pub fn get(&self, id: &str) -> Option<&Partition> {
        self.partitions.get(id)
    }

    /// All partitions, by id.
    pub fn partitions(&self) -> impl Iterator<Item = &Partition> {
        self.partitions.values()
    }

    /// Charges an allocation of `bytes` to a partition; returns its new usage.
    /// On error nothing changes (except the partition's failure counter).
    ///
    /// # Errors
    ///
    /// [`PartitionError::NotFound`], [`PartitionError::QuotaExceeded`],
    /// [`PartitionError::OutOfMemory`].
    pub fn charge(&mut self, id: &str, bytes: u64) -> Result<u64, PartitionError> {
        let total = self.config.total_memory;
        let free = total - self.held;
        let p = self
            .partitions
            .get_mut(id)
            .ok_or_else(|| PartitionError::NotFound(id.to_owned()))?;
        let limit = p.limit_or(total);
        let usage = p.usage.saturating_add(bytes);
        if usage > limit {
            p.failed_charges += 1;
            return Err(PartitionError::QuotaExceeded {
                partition: id.to_owned(),
                requested: bytes,
                used: p.usage,
                limit,
            });
        }
        let extra = p.limits.request().max(usage) - p.held();
        if extra > free {
            p.failed_charges += 1;
            return Err(PartitionError::OutOfMemory {
                partition: id.to_owned(),
                needed: extra,
                free,
            });
        }
        p.usage = usage;
        p.peak_usage = p.peak_usage.max(usage);
        p.charges += 1;
        self.held += extra;
        self.used += bytes;
        Ok(usage)
    }

    /// Releases `bytes` of a partition's usage; returns its new usage.
    ///
    /// # Errors
    ///
    /// [`PartitionError::NotFound`], [`PartitionError::Underflow`].
    pub fn release(&mut self, id: &str, bytes: u64) -> Result<u64, PartitionError> {
        let p = self
            .partitions
            .get_mut(id)
            .ok_or_else(|| PartitionError::NotFound(id.to_owned()))?;
        if bytes > p.usage {
            return Err(PartitionError::Underflow {
                partition: id.to_owned(),
                requested: bytes,
                used: p.usage,
            });
        }
        let old_held = p.held();
        p.usage -= bytes;
        self.held -= old_held - p.held();
        self.used -= bytes;
        Ok(p.usage)
    }

    /// Device-wide counters.
    pub fn stats(&self) -> PartitionStats {
        PartitionStats {
            total_memory: self.config.total_memory,
            reserved_memory: self.reserved,
            held_memory: self.held,
            used_memory: self.used,
            total_compute_ppm: self.config.total_compute_ppm,
            allocated_compute_ppm: self.compute,
            partitions: self.partitions.len() as u64,
        }
    }

    /// Checks the invariants (tests and debugging; linear cost).
    pub fn check_invariants(&self) -> Result<(), String> {
        let total = self.config.total_memory;
        let reserved: u64 = self.partitions.values().map(|p| p.limits.request()).sum();
        let held: u64 = self.partitions.values().map(Partition::held).sum();
        let used: u64 = self.partitions.values().map(|p| p.usage).sum();
        let compute: u64 = self.partitions.values().map(|p| p.limits.compute_ppm).sum();
        if (reserved, held, used, compute) != (self.reserved, self.held, self.used, self.compute) {
            return Err("partition counters drifted".into());
        }
        if reserved > total || held > total || compute > self.config.total_compute_ppm {
            return Err("partitions over-committed".into());
        }
        for p in self.partitions.values() {
            if p.usage > p.limit_or(total) {
                return Err(format!("partition {} over its limit", p.id));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn seed_example_and_accounting() {
        let mut m = PartitionManager::new(PartitionConfig::new(8 * GIB));
        let p = m
            .create(
                "inference",
                "Inference",
                PartitionLimits::new().memory(4 * GIB).compute_ppm(PPM / 2),
            )
            .unwrap();
        assert_eq!(p.tier(), QosTier::Guaranteed);
        assert!(matches!(
            m.create("x", "", PartitionLimits::new().memory(5 * GIB)),
            Err(PartitionError::InsufficientMemory { .. })
        ));
        assert!(matches!(
            m.create("x", "", PartitionLimits::new().compute_ppm(PPM * 6 / 10)),
            Err(PartitionError::InsufficientCompute { .. })
        ));
        let burst = PartitionLimits::new().memory(6 * GIB).memory_request(GIB);
        assert_eq!(burst.tier(), QosTier::Burstable);
        m.create("train", "Training", burst).unwrap();
        assert_eq!(m.charge("inference", 4 * GIB), Ok(4 * GIB));
        assert!(matches!(
            m.charge("inference", 1),
            Err(PartitionError::QuotaExceeded { .. })
        ));
        // train holds 1 GiB, 3 GiB free on the device: a 4 GiB burst fits.
        assert_eq!(m.charge("train", 4 * GIB), Ok(4 * GIB));
        assert!(matches!(
            m.charge("train", GIB),
            Err(PartitionError::OutOfMemory { .. })
        ));
        assert_eq!(m.get("train").unwrap().failed_charges, 1);
        assert!(matches!(
            m.delete("train", false),
            Err(PartitionError::InUse { .. })
        ));
        assert_eq!(m.release("train", 3 * GIB), Ok(GIB));
        assert!(m.release("train", 2 * GIB).is_err());
        m.check_invariants().unwrap();
        m.delete("train", true).unwrap();
        assert_eq!(m.stats().partitions, 1);
        assert_eq!(
            PartitionLimits::new().tier(),
            QosTier::BestEffort,
            "no limits at all"
        );
        m.check_invariants().unwrap();
    }
}
