"""Rust scheduler of PyGPUkit: deterministic policy and bookkeeping, no GPU needed.

Components (all thread-safe, all deterministic):

- :class:`MemoryPool`: a caching device-memory pool model (size classes, LRU eviction).
- :class:`Scheduler`: priority queue, memory reservation, task life cycle.
- :class:`AdmissionController`: deterministic admission with capacity and tenant quotas.
- :class:`QosTaskMeta`, :class:`QosPolicyEvaluator`: Kubernetes QoS tiers and eviction order.
- :class:`KernelPacingEngine`: token-bucket pacing of kernel launches per stream.
- :class:`PartitionManager`: partitions of memory and compute with memory accounting.
- :class:`TransferQueue`: a two-lane (H2D / D2H) priority queue of copies.
- :func:`spill_order`: which live blocks go to host memory first under memory pressure.
- :func:`simulate`: replay a JSON trace of task arrivals (also ``python -m pygpukit_sched``).

The scheduler only decides and accounts; the caller owns the real device memory and work.
"""

from pygpukit_sched._core import (
    LARGE_GRANULE,
    MIN_BLOCK_SIZE,
    PPM,
    SMALL_LIMIT,
    AdmissionController,
    Decision,
    InvalidBlockError,
    KernelPacingEngine,
    MemoryPool,
    Partition,
    PartitionConfig,
    PartitionLimits,
    PartitionManager,
    PoolStats,
    QosEvaluation,
    QosPolicyEvaluator,
    QosTaskMeta,
    QosTier,
    QuotaExceededError,
    ResourceExhaustedError,
    Scheduler,
    SimulationReport,
    TaskRejectedError,
    TaskStateError,
    Transfer,
    TransferKind,
    TransferQueue,
    run_simulation,
    spill_order,
)
from pygpukit_sched._trace import TraceError, load_trace, parse_size, simulate

__version__ = "0.3.0.dev0"

__all__ = [
    "LARGE_GRANULE",
    "MIN_BLOCK_SIZE",
    "PPM",
    "SMALL_LIMIT",
    "AdmissionController",
    "Decision",
    "InvalidBlockError",
    "KernelPacingEngine",
    "MemoryPool",
    "Partition",
    "PartitionConfig",
    "PartitionLimits",
    "PartitionManager",
    "PoolStats",
    "QosEvaluation",
    "QosPolicyEvaluator",
    "QosTaskMeta",
    "QosTier",
    "QuotaExceededError",
    "ResourceExhaustedError",
    "Scheduler",
    "SimulationReport",
    "TaskRejectedError",
    "TaskStateError",
    "TraceError",
    "Transfer",
    "TransferKind",
    "TransferQueue",
    "__version__",
    "load_trace",
    "parse_size",
    "run_simulation",
    "spill_order",
    "simulate",
]
