"""Native part of :mod:`pygpukit_sched` (pyo3 bindings of ``pygpukit-sched-core``)."""

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, final

__all__ = [
    "__version__",
    "MIN_BLOCK_SIZE",
    "SMALL_LIMIT",
    "LARGE_GRANULE",
    "PPM",
    "MemoryPool",
    "PoolStats",
    "QuotaExceededError",
    "InvalidBlockError",
    "ResourceExhaustedError",
    "TaskStateError",
    "TaskRejectedError",
    "QosTier",
    "QosTaskMeta",
    "QosEvaluation",
    "QosPolicyEvaluator",
    "Decision",
    "AdmissionController",
    "Scheduler",
    "KernelPacingEngine",
    "PartitionConfig",
    "PartitionLimits",
    "Partition",
    "PartitionManager",
    "TransferKind",
    "Transfer",
    "TransferQueue",
    "SimulationReport",
    "run_simulation",
    "spill_order",
]

__version__: str
MIN_BLOCK_SIZE: int
SMALL_LIMIT: int
LARGE_GRANULE: int
PPM: int

class QuotaExceededError(MemoryError):
    """An allocation does not fit in the pool's quota (even after eviction, if enabled).

    The instance attributes ``requested``, ``class_size``, ``used``, ``cached`` and
    ``quota`` (bytes) give the request and the pool's state at the time of the call.
    """

    requested: int
    class_size: int
    used: int
    cached: int
    quota: int

class InvalidBlockError(ValueError):
    """A block id that is not a live block of the pool (unknown, freed, or evicted).

    The instance attribute ``block_id`` is the offending id.
    """

    block_id: int

@final
class PoolStats:
    """Snapshot of a :class:`MemoryPool`'s counters (all sizes in bytes)."""

    @property
    def quota(self) -> int:
        """The pool's quota."""

    @property
    def used(self) -> int:
        """Bytes in live blocks."""

    @property
    def cached(self) -> int:
        """Bytes in cached (free, reusable) blocks."""

    @property
    def peak_used(self) -> int:
        """Highest value ``used`` has reached."""

    @property
    def allocations(self) -> int:
        """Successful allocations (``cache_hits + cache_misses``)."""

    @property
    def frees(self) -> int:
        """Successful frees."""

    @property
    def cache_hits(self) -> int:
        """Allocations served from the cache."""

    @property
    def cache_misses(self) -> int:
        """Allocations that created a new block."""

    @property
    def evictions(self) -> int:
        """Cached blocks dropped, by allocation pressure or ``clear_cache``."""

    @property
    def evicted_bytes(self) -> int:
        """Bytes of the evicted blocks."""

    @property
    def active_blocks(self) -> int:
        """Number of live blocks."""

    @property
    def cached_blocks(self) -> int:
        """Number of cached blocks."""

    def to_dict(self) -> dict[str, int]:
        """Return the counters as a ``dict`` of ``str`` to ``int``."""

    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class MemoryPool:
    """Deterministic model of a caching device-memory pool (bytes; no GPU needed)."""

    def __new__(cls, quota: int, enable_eviction: bool = True) -> MemoryPool: ...
    @property
    def quota(self) -> int:
        """The quota in bytes."""

    @property
    def enable_eviction(self) -> bool:
        """Whether cached blocks are evicted to make room for new blocks."""

    def allocate(self, size: int) -> int:
        """Allocate a block for ``size`` bytes and return its id."""

    def free(self, block: int) -> None:
        """Return a live block to the cache of its size class."""

    def take_evicted(self) -> list[int]:
        """Return (and forget) the ids evicted since the last call, oldest first."""

    def clear_cache(self) -> int:
        """Drop every cached block and return the number of bytes released."""

    def evict_all(self) -> int:
        """Alias of :meth:`clear_cache`."""

    @staticmethod
    def size_class(size: int) -> int:
        """Return the size class (bytes) that a request of ``size`` bytes is rounded up to."""

    def block_size(self, block: int) -> int:
        """Return the size in bytes of a live or cached block."""

    def is_live(self, block: int) -> bool:
        """Return whether ``block`` is a live (allocated and not freed) block."""

    def stats(self) -> PoolStats:
        """Return a snapshot of the pool's counters."""

class ResourceExhaustedError(MemoryError):
    """A request does not fit: a quota, a limit, the free memory or the shares."""

class TaskStateError(ValueError):
    """An action that the task's current state does not allow."""

class TaskRejectedError(ValueError):
    """A submitted task that can never be admitted.

    The instance attribute ``reason`` is the decision's reason code.
    """

    reason: str

@final
class QosTier:
    """QoS tier of a task or partition (the Kubernetes QoS classes)."""

    GUARANTEED: ClassVar[QosTier]
    BURSTABLE: ClassVar[QosTier]
    BEST_EFFORT: ClassVar[QosTier]
    @property
    def label(self) -> str:
        """The snake-case name: ``guaranteed``, ``burstable`` or ``best_effort``."""

    @property
    def stream_priority(self) -> int:
        """CUDA stream priority for work of this tier (lower is more urgent)."""

    @staticmethod
    def parse(name: str) -> QosTier:
        """Parse ``guaranteed`` / ``burstable`` / ``best_effort`` (case-insensitive)."""

    def __int__(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class QosTaskMeta:
    """What a task asks for; its QoS tier is derived from requests and limits."""

    def __new__(
        cls,
        id: str,
        name: str,
        memory_request: int = 0,
        memory_limit: int = 0,
        bandwidth_request: float = 0.0,
        bandwidth_limit: float = 0.0,
        priority: int = 0,
    ) -> QosTaskMeta: ...
    @staticmethod
    def guaranteed(
        id: str, name: str, memory: int, bandwidth: float = 0.0, priority: int = 0
    ) -> QosTaskMeta:
        """Return a Guaranteed task: request = limit = ``memory`` bytes (and ``bandwidth``)."""

    @staticmethod
    def burstable(
        id: str,
        name: str,
        memory_request: int,
        memory_limit: int = 0,
        bandwidth_request: float = 0.0,
        bandwidth_limit: float | None = None,
        priority: int = 0,
    ) -> QosTaskMeta:
        """Return a Burstable task: ``memory_request`` reserved, up to ``memory_limit``."""

    @staticmethod
    def best_effort(id: str, name: str, priority: int = 0) -> QosTaskMeta:
        """Return a BestEffort task: no request, no limit."""

    @property
    def id(self) -> str:
        """Task id."""

    @property
    def name(self) -> str:
        """Task name."""

    @property
    def memory_request(self) -> int:
        """Reserved memory, bytes."""

    @property
    def memory_limit(self) -> int:
        """Memory limit, bytes (0: none)."""

    @property
    def bandwidth_request(self) -> float:
        """Reserved bandwidth share."""

    @property
    def bandwidth_limit(self) -> float:
        """Bandwidth limit (0: none)."""

    @property
    def priority(self) -> int:
        """Priority (higher is more important)."""

    @property
    def tier(self) -> QosTier:
        """The derived QoS tier."""

    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class QosEvaluation:
    """The result of :meth:`QosPolicyEvaluator.evaluate` / :meth:`QosPolicyEvaluator.admit`."""

    @property
    def task_id(self) -> str:
        """The task id."""

    @property
    def admitted(self) -> bool:
        """Whether the task is (or would be) admitted."""

    @property
    def reason(self) -> str:
        """Reason code (``admitted``, ``insufficient_reservable``, ...)."""

    @property
    def message(self) -> str:
        """Human-readable reason."""

    @property
    def tier(self) -> QosTier:
        """The task's tier."""

    @property
    def stream_priority(self) -> int:
        """CUDA stream priority for the task's work."""

    @property
    def memory_reserved(self) -> int:
        """Bytes reserved (0 if refused)."""

    @property
    def bandwidth_reserved(self) -> float:
        """Bandwidth share reserved (0 if refused)."""

    @property
    def evicted(self) -> list[str]:
        """Tasks evicted (or that would be) to admit it, in eviction order."""

@final
class QosPolicyEvaluator:
    """Admits tasks by QoS tier; picks eviction victims in the kubelet's order."""

    def __new__(cls, total_memory: int, total_bandwidth: float = 1.0) -> QosPolicyEvaluator: ...
    @property
    def total_memory(self) -> int:
        """Total memory, bytes."""

    @property
    def total_bandwidth(self) -> float:
        """Total bandwidth (1.0: the whole device)."""

    @property
    def free_memory(self) -> int:
        """Bytes held by no task."""

    def evaluate(self, task: QosTaskMeta) -> QosEvaluation:
        """Return whether ``task`` would be admitted now, and why; changes nothing."""

    def admit(self, task: QosTaskMeta) -> QosEvaluation:
        """Evaluate ``task`` and, if admitted, evict the victims and reserve its request."""

    def release(self, task_id: str) -> int:
        """Remove a finished task; return the bytes it held."""

    def charge(self, task_id: str, nbytes: int) -> list[str]:
        """Add ``nbytes`` to a task's usage; return the ids evicted to make room."""

    def uncharge(self, task_id: str, nbytes: int) -> None:
        """Subtract ``nbytes`` from a task's usage."""

    def usage(self, task_id: str) -> int:
        """Return a task's current usage in bytes."""

    def tasks(self) -> list[str]:
        """Return the admitted task ids, sorted."""

    def take_evicted(self) -> list[str]:
        """Return (and forget) the ids evicted since the last call, in order."""

    def eviction_order(self, tier: QosTier = ...) -> list[str]:
        """Return the ids a requester of ``tier`` could evict, in eviction order."""

    def stats(self) -> dict[str, Any]:
        """Return the counters as a ``dict``."""

@final
class Decision:
    """One admission decision."""

    @property
    def task_id(self) -> str:
        """The task id."""

    @property
    def admitted(self) -> bool:
        """Whether the task was admitted."""

    @property
    def reason(self) -> str:
        """Reason code (``admitted``, ``insufficient_memory``, ``quota_exceeded``, ...)."""

    @property
    def message(self) -> str:
        """Human-readable reason."""

    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class AdmissionController:
    """Deterministic admission control: capacity, tenant quotas, a priority queue."""

    def __new__(cls, capacity: int) -> AdmissionController: ...
    @property
    def capacity(self) -> int:
        """Capacity, bytes."""

    @property
    def reserved(self) -> int:
        """Bytes admitted now."""

    @property
    def available(self) -> int:
        """Free capacity, bytes."""

    def set_quota(
        self, tenant: str, memory: int | None = None, max_tasks: int | None = None
    ) -> None:
        """Set a tenant's quota (``None``: unlimited)."""

    def admit(self, task_id: str, memory: int, priority: int = 0, tenant: str = ...) -> Decision:
        """Decide now; if admitted, reserve ``memory`` bytes."""

    def evaluate(
        self, task_id: str, memory: int, priority: int = 0, tenant: str = ...
    ) -> Decision:
        """Return the decision :meth:`admit` would make now; changes nothing."""

    def release(self, task_id: str) -> int:
        """Release an admitted task; return its bytes. ``KeyError`` if not admitted."""

    def is_admitted(self, task_id: str) -> bool:
        """Return whether ``task_id`` is admitted."""

    def submit(self, task_id: str, memory: int, priority: int = 0, tenant: str = ...) -> int:
        """Queue a request; return its submit sequence number."""

    def withdraw(self, task_id: str) -> bool:
        """Remove a queued request; return whether it was queued."""

    def pending(self) -> list[str]:
        """Return the queued ids, in the order they are examined."""

    def process_pending(self) -> list[Decision]:
        """Examine the queue (priority, submit sequence, id); admit what fits."""

    def admit_batch(self, requests: Sequence[tuple[str, int, int, str]]) -> list[Decision]:
        """Decide a batch of ``(task_id, memory, priority, tenant)`` tuples at once."""

    def replay(self, events: Iterable[tuple[Any, ...]]) -> list[Decision]:
        """Apply an event log and return every decision, in order (GIL released)."""

    def stats(self) -> dict[str, int]:
        """Return the counters as a ``dict``."""

@final
class Scheduler:
    """Task scheduler: priority queue, memory reservation, task life cycle."""

    def __new__(cls, capacity: int) -> Scheduler: ...
    def set_quota(
        self, tenant: str, memory: int | None = None, max_tasks: int | None = None
    ) -> None:
        """Set a tenant's quota (``None``: unlimited)."""

    def submit(
        self,
        task_id: str,
        memory: int,
        priority: int = 0,
        tenant: str = ...,
        name: str = ...,
    ) -> int:
        """Queue a task (state ``pending``); return its submit sequence number."""

    def schedule(self) -> list[str]:
        """Admit every queued task that fits; return their ids in admission order."""

    def start(self, task_id: str) -> None:
        """``admitted`` -> ``running``."""

    def complete(self, task_id: str) -> None:
        """``running`` -> ``completed`` (releases the reservation)."""

    def fail(self, task_id: str) -> None:
        """``running`` -> ``failed`` (releases the reservation)."""

    def cancel(self, task_id: str) -> str:
        """``pending`` / ``admitted`` / ``running`` -> ``cancelled``; return the old state."""

    def state(self, task_id: str) -> str | None:
        """Return a task's state name, or ``None`` for an unknown id."""

    def task(self, task_id: str) -> dict[str, Any] | None:
        """Return a task's record as a ``dict``, or ``None`` for an unknown id."""

    def pending(self) -> list[str]:
        """Return the queued ids, in the order :meth:`schedule` examines them."""

    def stats(self) -> dict[str, int]:
        """Return the counters as a ``dict``."""

@final
class KernelPacingEngine:
    """Token-bucket (GCRA) pacing of kernel launches per stream."""

    def __new__(cls, capacity: int = ..., burst_ns: int = ...) -> KernelPacingEngine: ...
    @property
    def capacity(self) -> int:
        """Device throughput in cost units per second."""

    @property
    def burst_ns(self) -> int:
        """Bucket depth, ns."""

    @property
    def allocated_share(self) -> float:
        """Sum of the registered shares."""

    def register_stream(self, stream_id: int, share: float) -> None:
        """Register a stream with a share in (0, 1]; shares sum to at most 1."""

    def unregister_stream(self, stream_id: int) -> dict[str, Any]:
        """Unregister a stream; return its final counters."""

    def acquire(self, stream_id: int, cost: int, now_ns: int) -> int:
        """Account a launch of ``cost`` at ``now_ns``; return the ns to wait first."""

    def peek_wait(self, stream_id: int, now_ns: int) -> int:
        """Return the wait :meth:`acquire` would return at ``now_ns``; accounts nothing."""

    def stream_stats(self, stream_id: int) -> dict[str, Any]:
        """Return a stream's counters."""

    def streams(self) -> list[int]:
        """Return the registered stream ids, ascending."""

@final
class PartitionConfig:
    """Device totals divided by a :class:`PartitionManager`."""

    def __new__(cls, total_memory: int, total_compute: float = 1.0) -> PartitionConfig: ...
    @property
    def total_memory(self) -> int:
        """Device memory, bytes."""

    @property
    def total_compute(self) -> float:
        """Compute to divide (1.0: the whole device)."""

    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class PartitionLimits:
    """A partition's limits, built by chaining: ``PartitionLimits().memory(n).compute(0.5)``."""

    def __new__(cls) -> PartitionLimits: ...
    def memory(self, nbytes: int) -> PartitionLimits:
        """Return a copy with a memory limit of ``nbytes``."""

    def memory_request(self, nbytes: int) -> PartitionLimits:
        """Return a copy with a memory request of ``nbytes`` (below the limit: Burstable)."""

    def compute(self, share: float) -> PartitionLimits:
        """Return a copy with a compute share in [0, 1]."""

    @property
    def memory_limit(self) -> int:
        """Memory limit, bytes (0: none)."""

    @property
    def requested_memory(self) -> int:
        """Memory request, bytes (defaults to the limit)."""

    @property
    def compute_share(self) -> float:
        """Compute share."""

    @property
    def tier(self) -> QosTier:
        """The derived QoS tier."""

    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Partition:
    """A snapshot of one partition."""

    @property
    def id(self) -> str:
        """Partition id."""

    @property
    def name(self) -> str:
        """Partition name."""

    @property
    def limits(self) -> PartitionLimits:
        """Its limits."""

    @property
    def tier(self) -> QosTier:
        """The derived QoS tier."""

    @property
    def stream_priority(self) -> int:
        """CUDA stream priority for the partition's work."""

    @property
    def memory_limit(self) -> int:
        """Effective memory limit, bytes (the device's memory without a limit)."""

    @property
    def memory_request(self) -> int:
        """Reserved memory, bytes."""

    @property
    def compute(self) -> float:
        """Compute share."""

    @property
    def usage(self) -> int:
        """Bytes charged."""

    @property
    def peak_usage(self) -> int:
        """Highest usage."""

    @property
    def available(self) -> int:
        """Bytes left below the limit."""

    @property
    def charges(self) -> int:
        """Successful charges."""

    @property
    def failed_charges(self) -> int:
        """Refused charges."""

@final
class PartitionManager:
    """Creates partitions of memory and compute and accounts their memory."""

    def __new__(cls, config: PartitionConfig) -> PartitionManager: ...
    @property
    def config(self) -> PartitionConfig:
        """The config."""

    def create_partition(
        self, partition_id: str, name: str, limits: PartitionLimits
    ) -> Partition:
        """Create a partition; return its snapshot."""

    def delete_partition(self, partition_id: str, force: bool = False) -> Partition:
        """Delete a partition (with usage only if ``force``); return its last snapshot."""

    def get_partition(self, partition_id: str) -> Partition | None:
        """Return a partition's snapshot, or ``None``."""

    def partitions(self) -> list[Partition]:
        """Return snapshots of all partitions, by id."""

    def charge(self, partition_id: str, nbytes: int) -> int:
        """Charge an allocation of ``nbytes``; return the partition's new usage."""

    def release(self, partition_id: str, nbytes: int) -> int:
        """Release ``nbytes`` of usage; return the partition's new usage."""

    def stats(self) -> dict[str, Any]:
        """Return device-wide counters as a ``dict``."""

    def __len__(self) -> int: ...

@final
class TransferKind:
    """Direction of a copy."""

    H2D: ClassVar[TransferKind]
    D2H: ClassVar[TransferKind]
    def __int__(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Transfer:
    """One queued transfer."""

    @property
    def id(self) -> int: ...
    @property
    def kind(self) -> TransferKind: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def priority(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class TransferQueue:
    """Two-lane (H2D / D2H) priority queue of copies."""

    def __new__(cls) -> TransferQueue: ...
    def enqueue(self, kind: TransferKind | str, nbytes: int, priority: int = 0) -> int:
        """Queue a copy of ``nbytes``; return its id."""

    def next(self) -> Transfer | None:
        """Return the next copy of either direction (priority, then FIFO), or ``None``."""

    def next_of(self, kind: TransferKind | str) -> Transfer | None:
        """Return the next copy of one direction, or ``None``."""

    def peek(self) -> Transfer | None:
        """Return what :meth:`next` would return, without removing it."""

    def cancel(self, transfer_id: int) -> Transfer | None:
        """Remove a queued copy; return it, or ``None`` if it is not queued."""

    def len_of(self, kind: TransferKind | str) -> int:
        """Return the number of queued copies of one direction."""

    def __len__(self) -> int: ...
    def stats(self) -> dict[str, list[int]]:
        """Return the counters as a ``dict`` of ``str`` to ``[h2d, d2h]`` lists."""

@final
class SimulationReport:
    """The result of :func:`run_simulation`."""

    @property
    def events(self) -> list[tuple[int, str, str, str]]:
        """``(time_ns, kind, task_id, detail)`` tuples, in order."""

    @property
    def stats(self) -> dict[str, int]:
        """Final scheduler counters as a ``dict``."""

    @property
    def makespan_ns(self) -> int:
        """Time of the last event, ns."""

    @property
    def started(self) -> int:
        """Tasks that started."""

    @property
    def mean_wait_ns(self) -> int:
        """Mean wait of started tasks, ns."""

    @property
    def max_wait_ns(self) -> int:
        """Largest wait, ns."""

    @property
    def utilization(self) -> float:
        """Mean fraction of the capacity reserved over the makespan."""

    @property
    def unscheduled(self) -> list[str]:
        """Tasks still queued at the end."""

def run_simulation(
    capacity: int,
    tasks: Sequence[tuple[str, str, str, int, int, int, int, int | None, bool]],
    quotas: Sequence[tuple[str, int | None, int | None]] = ...,
) -> SimulationReport:
    """Replay tasks through a :class:`Scheduler` (deterministic; the GIL is released)."""

def spill_order(
    candidates: Sequence[tuple[int, str, QosTier, int, int, bool]],
    requester: str,
    tier: QosTier,
    needed: int,
    own_only: bool,
) -> list[int] | None:
    """Ids of the live blocks to spill, in order, to release ``needed`` bytes for ``requester``.

    Candidates are ``(id, partition, tier, size, last_use, pinned)``.  Eligible: not pinned, of
    the requester or (unless ``own_only``) of a strictly lower tier.  Lowest tier first, least
    recently used first within a tier, then by id.  ``None`` if they hold fewer bytes.
    """
