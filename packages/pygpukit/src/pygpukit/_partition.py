"""Partitions of a device: memory quotas, QoS streams, SM shares and task admission.

The Rust scheduler (``pygpukit-sched``, ``pip install pygpukit[sched]``) decides; this module
enforces its decisions on real allocations and launches:

- **memory**: every block the caching allocator takes while a partition is in scope is charged
  to the partition through :class:`pygpukit._allocator.Charger` and the Rust
  ``PartitionManager`` (hard limit; requests reserved device-wide).  A partition pays for its
  *footprint*: the blocks of its live arrays plus the cached blocks they left behind (as a
  container's memory cgroup pays for its page cache).  When a charge does not fit, cached
  blocks are given back to the driver first -- the partition's own, then those of lower QoS
  tiers in the kubelet's eviction order from the Rust ``QosPolicyEvaluator`` (BestEffort
  first; never a higher or equal tier's) -- and only then :class:`PartitionMemoryError`.
- **priority**: each partition has its own streams, created with its QoS tier's priority;
  entering the scope makes the partition's stream current.
- **compute share**: a green context with the partition's share of the SMs (CUDA 12.5+
  driver), so its kernels run on those SMs only; without green contexts, the stream priority
  plus launch pacing by the Rust ``KernelPacingEngine`` (a token bucket per stream, debited
  with the device time measured between launches).  A no-op on the CPU simulation.
- **admission**: ``with partition.task(memory=...)`` waits until the Rust ``Scheduler`` admits
  the task (priority queue, partition quota, device capacity), then runs it in the scope.
- **spill** (``spill=True``, the default for BestEffort): when a charge still does not fit,
  live arrays go to pinned host memory in the order of the Rust ``spill_order`` (lowest tier
  first, least recently used first; pinned ones and those of higher tiers never) and come
  back when they are used (:mod:`pygpukit._spill` moves the bytes).

Importing :mod:`pygpukit` does not import ``pygpukit_sched``; the first partition does.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

from pygpukit import _context, _spill
from pygpukit._errors import AdmissionError, PartitionMemoryError
from pygpukit._stream import Stream

ENV_GREEN = "PYGPUKIT_GREEN_CONTEXTS"
_TIERS = ("guaranteed", "burstable", "best_effort")
_T = TypeVar("_T")


def _sched() -> ModuleType:
    try:
        import pygpukit_sched
    except ImportError as exc:
        raise ImportError(
            "partitions need the Rust scheduler: pip install 'pygpukit[sched]' "
            f"(import pygpukit_sched failed: {exc})"
        ) from exc
    return pygpukit_sched


# -- the calling thread's partition scopes ------------------------------------------------------
class _Scopes(threading.local):
    def __init__(self) -> None:
        self.stack: list[Partition] = []


_scopes = _Scopes()


def current_partition() -> Partition | None:
    """The innermost partition the calling thread is in (``None`` outside every partition)."""
    stack = _scopes.stack
    return stack[-1] if stack else None


# -- per-device state ---------------------------------------------------------------------------
class _DeviceState:
    """The Rust objects of one device and its partitions (created with the first partition)."""

    def __init__(self, runtime: Any, total_memory: int) -> None:
        s = _sched()
        self.runtime = runtime
        self.index: int = runtime.index
        self.total_memory = total_memory
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.manager = s.PartitionManager(s.PartitionConfig(total_memory, 1.0))
        # Orders cache reclaim only (the manager accounts): so large that it never evicts.
        self.evaluator = s.QosPolicyEvaluator(1 << 62)
        self.scheduler = s.Scheduler(total_memory)
        self.partitions: dict[str, Partition] = {}
        self.pacer: Any = None
        self.sm_laid_out = False
        self.sm_free: list[Any] = []
        self.task_ids = itertools.count(1)
        runtime.allocator.charger = _Charger(self)


_ATTR = "_pygpukit_partitions"
_registry_lock = threading.Lock()


def _runtime(device: Any) -> Any:
    from pygpukit._device import runtime_for

    return runtime_for(device)


def _state(runtime: Any, create: bool = True, total_memory: int | None = None) -> Any:
    state = getattr(runtime, _ATTR, None)
    if state is None and create:
        with _registry_lock:
            state = getattr(runtime, _ATTR, None)
            if state is None:
                if total_memory is None:
                    total_memory = int(runtime.total_memory)
                    limit = runtime.allocator.limit
                    if limit is not None:
                        total_memory = min(total_memory, int(limit))
                state = _DeviceState(runtime, total_memory)
                setattr(runtime, _ATTR, state)
    return state


def configure_partitions(total_memory: int, device: Any = None) -> None:
    """Set the memory that the partitions of ``device`` divide (before its first partition).

    By default they divide the device's total memory (or the cap of
    :func:`~pygpukit.set_memory_limit`, if smaller).  Memory allocated outside every partition
    is not charged to any.
    """
    total_memory = int(total_memory)
    if total_memory <= 0:
        raise ValueError(f"total_memory: expected a positive number of bytes; got {total_memory}")
    runtime = _runtime(device)
    state = _state(runtime, create=False)
    if state is not None:
        if state.partitions:
            raise RuntimeError("configure_partitions: the device already has partitions; "
                               "delete them first")
        with _registry_lock:
            delattr(runtime, _ATTR)
    _state(runtime, total_memory=total_memory)


# -- charging (called by the caching allocator with its lock held) -----------------------------
class _Charger:
    """Implements :class:`pygpukit._allocator.Charger` for the partitions of one device."""

    def __init__(self, state: _DeviceState) -> None:
        self._state = state

    def owner(self) -> Partition | None:
        stack = _scopes.stack
        if stack:
            p = stack[-1]
            if p._state is self._state and p._live:
                return p
        return None

    def charge(self, owner: Partition, size: int, reclaim: Callable[[Any, int], int]) -> None:
        state = self._state
        try:
            state.manager.charge(owner.name, size)
        except MemoryError as exc:
            # Keep only the text: a live exception would keep the callers' frames (arrays).
            reason = str(exc)
        else:
            reason = ""
        if reason:
            self._charge_after_reclaim(owner, size, reclaim, reason)
        state.evaluator.charge(owner.name, size)

    def _charge_after_reclaim(self, owner: Partition, size: int,
                              reclaim: Callable[[Any, int], int], reason: str) -> None:
        state = self._state
        victims: list[Partition] = [owner]
        for name in state.evaluator.eviction_order(owner._tier):
            victim = state.partitions.get(name)
            if victim is not None and victim is not owner:
                victims.append(victim)
        for victim in victims:
            while True:
                released = reclaim(victim, size)
                if released:
                    victim._reclaimed_bytes += released
                    victim._num_reclaims += 1
                try:
                    state.manager.charge(owner.name, size)
                    return
                except MemoryError as exc:
                    reason = str(exc)
                if not released:
                    break
        owner._num_ooms += 1
        snap = state.manager.get_partition(owner.name)
        usage = int(snap.usage) if snap is not None else 0
        quota = int(snap.memory_limit) if snap is not None else 0
        if owner.memory_limit is None:
            reserved = sum(p.memory_request for p in state.partitions.values() if p is not owner)
            quota_text = (f"quota none (the device's {quota} partitionable bytes, {reserved} "
                          "reserved by other partitions)")
        else:
            quota_text = f"quota {quota} bytes"
        raise PartitionMemoryError(
            f'partition "{owner.name}" ({owner.tier}) cannot allocate {size} bytes on '
            f"{state.runtime.describe()}: {quota_text}, usage {usage} bytes "
            f"({owner._allocated} in live arrays, {usage - owner._allocated} cached), "
            f"request {size} bytes, reservation {owner.memory_request} bytes; {reason} "
            "(its cache and lower-tier caches were released first)",
            partition=owner.name, quota=quota, usage=usage, requested=size,
        ) from None

    def uncharge(self, owner: Partition, size: int) -> None:
        if owner._live:
            self._state.manager.release(owner.name, size)
            self._state.evaluator.uncharge(owner.name, size)

    def allocated(self, owner: Partition, size: int) -> None:
        owner._allocated += size
        owner._num_allocs += 1

    def freed(self, owner: Partition, size: int) -> None:
        owner._allocated -= size
        owner._num_frees += 1

    def can_charge(self, owner: Partition) -> bool:
        return owner._live and owner._state is self._state

    def track(self, owner: Partition, block: Any) -> None:
        if owner._spill:
            block.tracked = True
            block.touch()
            owner._spill_blocks.add(block)


class _Spiller:
    """Spills live blocks when a charge fails (:data:`pygpukit._allocator.Spiller`).

    The Rust ``spill_order`` chooses the blocks; :func:`pygpukit._spill.spill_blocks` moves
    them.  Called by the allocator without its lock.
    """

    def __init__(self, state: _DeviceState) -> None:
        self._state = state

    def __call__(self, name: str, size: int) -> bool:
        state = self._state
        owner = state.partitions.get(name)
        if owner is None:
            return False
        s = _sched()
        with _spill.lock():
            snap = state.manager.get_partition(name)
            if snap is None:
                return False
            usage, limit = int(snap.usage), int(snap.memory_limit)
            own_short = usage + size > limit
            if own_short:  # its quota: only its own blocks help
                needed = usage + size - limit
            else:  # the device's partitionable memory (other partitions' reservations)
                stats = state.manager.stats()
                needed = max(1, size - (int(stats["total_memory"]) - int(stats["held_memory"])))
            held = _spill.held_ids()
            blocks: dict[int, tuple[Any, Partition]] = {}
            candidates = []
            for p in list(state.partitions.values()):
                if not p._spill:
                    continue
                for block in list(p._spill_blocks):
                    if block.address:
                        blocks[id(block)] = (block, p)
                        candidates.append((id(block), p.name, p._tier, int(block.size),
                                           int(block.last_use),
                                           bool(block.pins) or id(block) in held))
            order = s.spill_order(candidates, name, owner._tier, needed, own_short)
            if not order:
                return False
            what = "its quota" if own_short else "the device's partitionable memory"
            why = (f'partition "{name}" ({owner.tier}) needs {size} bytes and {what} is full '
                   f"(usage {usage} of {limit} bytes)")
            victims = [(blocks[i][0], blocks[i][1], blocks[i][1]._spill_stats) for i in order]
            released = _spill.spill_blocks(state.runtime, victims, why)
        if released:
            owner._num_ooms -= 1  # counted by the failed charge, which is tried again now
        return released > 0


# -- streams: QoS priority, green contexts, pacing ----------------------------------------------
class _Pacer:
    """Token bucket of one stream (Rust ``KernelPacingEngine``), debited with device time.

    At each launch an event is recorded; the device time between consecutive completed events
    is what the stream used, and ``acquire`` returns how long to wait before launching again.
    """

    def __init__(self, engine: Any, stream_id: int, runtime: Any, impl: Any) -> None:
        self._engine = engine
        self._id = stream_id
        self._runtime = runtime
        self._impl = impl
        self._events: deque[Any] = deque()
        self._prev: Any = None
        self._lock = threading.Lock()
        self.waited_ns = 0

    def __call__(self) -> None:
        with self._lock:
            used_ns = 0
            events = self._events
            while events and events[0].query():
                event = events.popleft()
                if self._prev is not None:
                    used_ns += int(self._prev.elapsed_time(event) * 1e6)
                self._prev = event
            now = time.perf_counter_ns()
            if used_ns > 0:
                wait = int(self._engine.acquire(self._id, used_ns, now))
            else:
                wait = int(self._engine.peek_wait(self._id, now))
            if not events:
                self._prev = None  # the stream went idle: idle time is not device time used
            event = self._runtime.new_event(True)
            event.record(self._impl)
            events.append(event)
            if len(events) > 256:
                self._prev = events.popleft()
        if wait > 0:
            self.waited_ns += wait
            time.sleep(wait / 1e9)


def _clamp_priority(runtime: Any, priority: int) -> int:
    least, greatest = runtime.priority_range()
    return max(int(greatest), min(int(least), int(priority)))


def _sm_layout(state: _DeviceState) -> str:
    """Give SM groups to the partitions waiting for one (device lock held); "" or why not.

    This driver splits a device's SMs once per call into equal groups plus a remaining
    resource, and a remaining resource cannot be split again (measured on an H200, driver
    580: CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION).  So the layout is made once, for every
    partition that wants a share then (when the device's shares reach 1, or at the first use
    of a partition's stream): the smaller shares get groups of one
    ``cuDevSmResourceSplitByCount`` call and the largest gets the rest.  Once no live
    partition holds a group (all deleted), the next layout splits the device afresh.
    """
    if os.environ.get(ENV_GREEN, "1").strip() == "0":
        return f"green contexts disabled by {ENV_GREEN}=0"
    import pygpukit_driver as drv

    if not drv.green_contexts_supported():
        return "the driver has no green contexts (CUDA 12.5+ driver needed)"
    state.runtime.activate()
    device = drv.device_sm_resource(state.index)
    total = int(device.sm_count)
    granule = max(1, int(device.coscheduled_alignment))
    minimum = max(granule, int(device.min_partition_size))

    def sms(p: Partition) -> int:
        return max(minimum, round((p.compute or 0.0) * total / granule) * granule)

    waiting = sorted((p for p in state.partitions.values() if p._sm_pending),
                     key=lambda p: (p.compute or 0.0, p.name))
    if state.sm_laid_out and not any(p._sm_resource is not None
                                     for p in state.partitions.values()):
        # No live partition holds an SM group: the old layout binds nobody, so a new split of
        # the device's SMs overlaps no green context in use -- lay the device out afresh.
        state.sm_laid_out = False
        state.sm_free.clear()
    if not state.sm_laid_out:
        state.sm_laid_out = True
        if len(waiting) == 1 or len({sms(p) for p in waiting}) == 1:
            groups, rest = device.split(len(waiting), sms(waiting[0]))
            takers = waiting
            state.sm_free.append(rest)
        else:
            small = [p for p in waiting[:-1] if sms(p) == sms(waiting[0])]
            groups, rest = device.split(len(small), sms(small[0]))
            groups = [*groups, rest]
            takers = [*small, waiting[-1]]
        for p, resource in zip(takers, groups, strict=False):
            p._give_sms(resource)
    for p in waiting:  # partitions made after the layout: a free group near their share
        if p._sm_pending:
            want = sms(p)
            near = [(abs(int(f.sm_count) - want), i) for i, f in enumerate(state.sm_free)]
            near = [(d, i) for d, i in near if d <= max(granule, want // 10)]
            if near:
                p._give_sms(state.sm_free.pop(min(near)[1]))
            else:
                p._no_sms("no free SM group near its share: the SM layout of the device was "
                          "made at the first use of a partition (make partitions first)")
    return ""


def _settle_sms(state: _DeviceState, *extra: Partition) -> None:
    """Lay the SM groups out for the partitions waiting for one (device lock held).

    Every waiting partition leaves this with ``compute_mode`` ``"green_context"`` or, with the
    reason in ``compute_note``, ``"priority+pacing"``; none stays ``"pending"``.
    """
    try:
        why = _sm_layout(state)
    except (RuntimeError, ValueError) as exc:  # CudaError is a RuntimeError
        why = f"SM split failed: {exc}"
    for p in [*state.partitions.values(), *extra]:
        if p._sm_pending:
            p._no_sms(why or "no SM group was given")


# -- partitions ---------------------------------------------------------------------------------
class Partition:
    """A share of one device: memory quota, QoS tier, streams, SM share, admitted tasks.

    Made by :func:`create_partition`; used as a scope with ``with partition:`` (or
    ``with gp.partition(name):``).  Attributes: ``name``, ``device`` (index), ``tier``
    (``"guaranteed"``, ``"burstable"`` or ``"best_effort"``), ``priority``, ``memory_limit``
    (bytes; ``None``: none but the device's), ``memory_request`` (bytes reserved),
    ``compute`` (share of the device or ``None``), ``stream`` (its default stream),
    ``stream_priority``, ``compute_mode`` (``"green_context"``, ``"priority+pacing"``,
    ``"priority"``, ``"pending"`` while its SM share waits for the device's layout -- made when
    the shares of the device reach 1 or at the first use of a partition's stream -- or
    ``"none"`` on the CPU simulation), ``sm_count`` (SMs of its green context or ``None``) and
    ``compute_note`` (why no green context, if none) and ``spill`` (whether its live arrays
    may go to host memory under memory pressure).
    """

    def __init__(self, state: _DeviceState, name: str, tier: str, limit: int | None,
                 request: int, compute: float | None, priority: int,
                 spill: bool = False) -> None:
        self._state = state
        self._live = True
        self.name = name
        self.device = state.index
        self.tier = tier
        self._tier = _sched().QosTier.parse(tier)
        self.priority = priority
        self.memory_limit = limit
        self.memory_request = request
        self.compute = compute
        self.sm_count: int | None = None
        self.compute_note = ""
        self._green: Any = None
        self._sm_pending = False
        self._sm_resource: Any = None
        self._pacers: list[_Pacer] = []
        self._allocated = 0
        self._num_allocs = 0
        self._num_frees = 0
        self._num_ooms = 0
        self._reclaimed_bytes = 0
        self._num_reclaims = 0
        self._tasks = 0
        self.spill = spill
        self._spill = spill
        self._spill_blocks: weakref.WeakSet[Any] = weakref.WeakSet()
        self._spill_stats = _spill.SpillStats()
        runtime = state.runtime
        self.stream_priority = _clamp_priority(runtime, self._tier.stream_priority)
        from pygpukit._cpu_backend import CpuRuntime

        if isinstance(runtime, CpuRuntime):
            self.compute_mode = "none"
            if compute:
                self.compute_note = "the CPU simulation runs every op at once: no compute share"
        elif compute is not None and 0.0 < compute < 1.0:
            # The SM groups are given out when the layout is settled (see _settle_sms): when
            # the device's shares reach 1, or at the first use of a partition's stream.
            self._sm_pending = True
            self.compute_mode = "pending"
        else:
            self.compute_mode = "priority"
        self._stream: Stream | None = None

    def _give_sms(self, resource: Any) -> None:
        import pygpukit_driver as drv

        self._sm_pending = False
        try:
            self._green = drv.GreenContext(resource)
            self._sm_resource = resource
            self.sm_count = int(resource.sm_count)
            self.compute_mode = "green_context"
        except (RuntimeError, ValueError) as exc:  # CudaError is a RuntimeError
            self._no_sms(f"green context creation failed: {exc}")

    def _no_sms(self, why: str) -> None:
        self._sm_pending = False
        self.compute_mode = "priority+pacing"
        self.compute_note = why

    @property
    def stream(self) -> Stream:
        """The partition's default stream (made at first use, with its green context)."""
        stream = self._stream
        if stream is None:
            with self._state.lock:
                if self._stream is None:
                    self._stream = self.new_stream()
                stream = self._stream
        return stream

    # -- streams -------------------------------------------------------------------------------
    def new_stream(self) -> Stream:
        """A new stream of this partition: its priority, its green context, its pacing."""
        runtime = self._state.runtime
        if self._sm_pending:
            with self._state.lock:
                if self._sm_pending:
                    _settle_sms(self._state, self)
        runtime.activate()
        if self._green is not None:
            impl = self._green.create_stream(self.stream_priority)
        else:
            impl = runtime.new_stream(self.stream_priority, True)
        stream = Stream._wrap(runtime, impl, self.stream_priority)
        if self.compute_mode == "priority+pacing" and self.compute:
            state = self._state
            with state.lock:
                if state.pacer is None:
                    state.pacer = _sched().KernelPacingEngine(burst_ns=2_000_000)
                sid = int(impl.handle)
                state.pacer.register_stream(sid, float(self.compute))
            pacer = _Pacer(state.pacer, sid, runtime, impl)
            self._pacers.append(pacer)
            stream._before_launch = pacer
        return stream

    # -- scope ---------------------------------------------------------------------------------
    def __enter__(self) -> Partition:
        _enter(self, None)
        return self

    def __exit__(self, *exc: object) -> None:
        _exit(self)

    # -- memory --------------------------------------------------------------------------------
    def memory_stats(self) -> dict[str, int]:
        """Memory counters of the partition, in bytes unless named ``num_*``.

        ``usage_bytes`` (charged: ``allocated_bytes`` in live arrays plus ``cached_bytes`` in
        blocks they left in the cache), ``peak_usage_bytes``, ``limit_bytes``, ``request_bytes``
        (reserved), ``available_bytes`` (below the limit), ``reclaimed_bytes`` (of its cache
        given back under memory pressure), ``num_allocs``, ``num_frees``, ``num_reclaims``,
        ``num_ooms``; spill (zero unless ``spill``): ``spilled_bytes`` (in host memory now),
        ``peak_spilled_bytes``, ``spilled_bytes_total``, ``restored_bytes``, ``num_spills``,
        ``num_restores``, ``spill_time_ns`` and ``restore_time_ns`` (host time of the calls;
        the copies run on streams).
        """
        self._state.runtime.allocator.stats()  # drains pending frees into the counters
        snap = self._state.manager.get_partition(self.name) if self._live else None
        usage = int(snap.usage) if snap is not None else 0
        return {
            "usage_bytes": usage,
            "allocated_bytes": self._allocated,
            "cached_bytes": usage - self._allocated,
            "peak_usage_bytes": int(snap.peak_usage) if snap is not None else 0,
            "limit_bytes": int(snap.memory_limit) if snap is not None else 0,
            "request_bytes": self.memory_request,
            "available_bytes": int(snap.available) if snap is not None else 0,
            "reclaimed_bytes": self._reclaimed_bytes,
            "num_allocs": self._num_allocs,
            "num_frees": self._num_frees,
            "num_reclaims": self._num_reclaims,
            "num_ooms": self._num_ooms,
            **self._spill_stats.as_dict(),
        }

    def empty_cache(self) -> int:
        """Give this partition's cached blocks back to the device; return the bytes."""
        return int(self._state.runtime.allocator.release_cached(self))

    # -- tasks ---------------------------------------------------------------------------------
    def task(self, memory: int = 0, *, priority: int = 0, timeout: float | None = None,
             name: str | None = None) -> Task:
        """A task of this partition, admitted by the Rust scheduler before its body runs.

        ``with partition.task(memory=n):`` submits the task (``n`` bytes reserved against the
        partition's quota and the device), waits until it is admitted (by priority, then
        submission order; ``timeout`` seconds at most, ``None``: no limit), then runs the body
        inside the partition's scope; leaving completes the task (or fails it, on an exception)
        and admits waiting tasks.  Raises :class:`~pygpukit.AdmissionError` for a task that can
        never be admitted or that timed out.
        """
        return Task(self, memory, priority, timeout, name)

    def submit(self, fn: Callable[..., _T], *args: Any, memory: int = 0, priority: int = 0,
               timeout: float | None = None, **kwargs: Any) -> _T:
        """Run ``fn(*args, **kwargs)`` as an admitted task of this partition; return its result."""
        with self.task(memory, priority=priority, timeout=timeout):
            return fn(*args, **kwargs)

    def __repr__(self) -> str:
        limit = "none" if self.memory_limit is None else f"{self.memory_limit}"
        sms = f" sms={self.sm_count}" if self.sm_count else ""
        return (f"<pygpukit.Partition {self.name!r} {self.tier} device={self.device} "
                f"memory_limit={limit} request={self.memory_request} compute={self.compute} "
                f"mode={self.compute_mode}{sms}{'' if self._live else ' deleted'}>")


class Task:
    """A task admitted by the scheduler (see :meth:`Partition.task`)."""

    def __init__(self, partition: Partition, memory: int, priority: int,
                 timeout: float | None, name: str | None) -> None:
        if int(memory) < 0:
            raise ValueError(f"memory: expected a non-negative number of bytes; got {memory}")
        self.partition = partition
        self.memory = int(memory)
        self.priority = int(priority)
        self.timeout = timeout
        self.id = ""
        self.name = name
        self.wait_s = 0.0

    def __enter__(self) -> Task:
        p = self.partition
        if not p._live:
            raise RuntimeError(f"partition {p.name!r} was deleted")
        state = p._state
        s = _sched()
        t0 = time.perf_counter()
        with state.cond:
            self.id = f"{p.name}/{next(state.task_ids)}"
            try:
                state.scheduler.submit(self.id, self.memory, self.priority, p.name,
                                       self.name or self.id)
            except s.TaskRejectedError as exc:
                raise AdmissionError(
                    f"task {self.id} of partition {p.name!r} rejected: {exc}", exc.reason
                ) from None
            deadline = None if self.timeout is None else t0 + self.timeout
            while True:
                if state.scheduler.schedule():
                    state.cond.notify_all()
                status = state.scheduler.state(self.id)
                if status == "admitted":
                    break
                if status != "pending":
                    raise AdmissionError(f"task {self.id} of partition {p.name!r} is {status}",
                                         str(status))
                left = None if deadline is None else deadline - time.perf_counter()
                if left is not None and left <= 0:
                    state.scheduler.cancel(self.id)
                    raise AdmissionError(
                        f"task {self.id} of partition {p.name!r} ({self.memory} bytes) was not "
                        f"admitted within {self.timeout} s", "timeout")
                state.cond.wait(left)
            state.scheduler.start(self.id)
        self.wait_s = time.perf_counter() - t0
        _enter(p, None)
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        p = self.partition
        _exit(p)
        state = p._state
        with state.cond:
            if exc_type is None:
                state.scheduler.complete(self.id)
            else:
                state.scheduler.fail(self.id)
            state.scheduler.schedule()
            state.cond.notify_all()


def _enter(p: Partition, stream: Stream | None) -> None:
    if not p._live:
        raise RuntimeError(f"partition {p.name!r} was deleted")
    ctx = _context.state
    ctx.devices.append(p.device)
    ctx.streams.setdefault(p.device, []).append(stream if stream is not None else p.stream)
    _scopes.stack.append(p)


def _exit(p: Partition) -> None:
    stack = _scopes.stack
    if not stack or stack[-1] is not p:
        raise RuntimeError(f"partition {p.name!r}: scopes must be left in the reverse order")
    stack.pop()
    ctx = _context.state
    ctx.streams[p.device].pop()
    ctx.devices.pop()


class PartitionScope:
    """``with gp.partition(name_or_partition, stream=None):`` (see :func:`partition`)."""

    __slots__ = ("_partition", "_stream")

    def __init__(self, partition: Partition, stream: Stream | None) -> None:
        self._partition = partition
        self._stream = stream

    def __enter__(self) -> Partition:
        _enter(self._partition, self._stream)
        return self._partition

    def __exit__(self, *exc: object) -> None:
        _exit(self._partition)


def _tier_of(memory: int | None, request: int) -> str:
    if memory is not None and request == memory:
        return "guaranteed"
    if memory is None and request == 0:
        return "best_effort"
    return "burstable"


def create_partition(name: str, *, memory: int | None = None, memory_request: int | None = None,
                     compute: float | None = None, qos: str | None = None, priority: int = 0,
                     spill: bool | None = None, device: Any = None) -> Partition:
    """Create a partition of ``device`` (the current device if omitted).

    Parameters
    ----------
    name
        Unique per device; :func:`partition` finds it by name.
    memory
        Memory limit in bytes (a hard cap on the partition's footprint); ``None``: none.
    memory_request
        Bytes reserved for the partition: the other partitions cannot use them.  Defaults to
        ``memory`` for ``qos="guaranteed"`` and to 0 otherwise.
    compute
        Share of the device's compute in (0, 1]: an SM split through a green context where the
        driver has them, else stream priority plus launch pacing; ``None``: no share (the whole
        device, at the tier's priority).  Shares of a device sum to at most 1.
    qos
        ``"guaranteed"`` (request = limit), ``"burstable"`` (request below the limit) or
        ``"best_effort"`` (neither); derived from ``memory`` / ``memory_request`` when omitted,
        and checked against them when given (the Kubernetes QoS classes).
    priority
        Higher is more important among partitions of a tier (cache reclaim order).
    spill
        Whether the partition's live arrays may move to pinned host memory when an allocation
        does not fit (least recently used first; they come back when used, data intact).
        ``None``: on for ``"best_effort"``, off otherwise.  See docs/spill.md.

    Raises
    ------
    TypeError
        ``spill`` is not a bool or None.
    ValueError
        A duplicate name, inconsistent ``qos``, or compute shares above 1.
    PartitionMemoryError
        The request is not free on the device (the other partitions reserved it).
    """
    s = _sched()
    if not isinstance(name, str) or not name or "/" in name:
        raise ValueError(f"name: expected a non-empty str without '/'; got {name!r}")
    if qos is not None and qos not in _TIERS:
        raise ValueError(f"qos: expected one of {', '.join(_TIERS)}; got {qos!r}")
    if memory is not None and int(memory) <= 0:
        raise ValueError(f"memory: expected a positive number of bytes or None; got {memory}")
    if compute is not None and not 0.0 < float(compute) <= 1.0:
        raise ValueError(f"compute: expected a share in (0, 1] or None; got {compute}")
    if spill is not None and not isinstance(spill, bool):
        raise TypeError(f"spill: expected a bool or None; got {type(spill).__name__}")
    limit = None if memory is None else int(memory)
    if memory_request is None:
        request = limit if (qos == "guaranteed" and limit is not None) else 0
    else:
        request = int(memory_request)
    if request < 0 or (limit is not None and request > limit):
        raise ValueError(f"memory_request: expected 0 <= request <= memory; got {request}")
    tier = _tier_of(limit, request)
    if qos is not None and qos != tier:
        hint = {
            "guaranteed": "give memory=... (the request equals the limit)",
            "burstable": "give memory=... with a smaller memory_request=..., or "
                         "memory_request=... alone",
            "best_effort": "give neither memory nor memory_request",
        }[qos]
        raise ValueError(f"qos={qos!r} does not match the memory given (that is {tier!r}): "
                         f"{hint}")
    limits = s.PartitionLimits()
    if limit is not None:
        limits = limits.memory(limit)
    if request != (limit or 0):
        limits = limits.memory_request(request)
    if compute is not None:
        limits = limits.compute(float(compute))
    runtime = _runtime(device)
    state = _state(runtime)
    with state.lock:
        if name in state.partitions:
            raise ValueError(f"partition {name!r} already exists on {runtime.describe()}")
        used = sum(p.compute or 0.0 for p in state.partitions.values())
        if compute is not None and used + float(compute) > 1.0 + 1e-9:
            raise ValueError(f"compute: {compute} does not fit: the partitions of "
                             f"{runtime.describe()} already hold {used:g} of 1")
        try:
            state.manager.create_partition(name, name, limits)
        except MemoryError as exc:
            raise PartitionMemoryError(
                f"partition {name!r} cannot reserve {request} bytes on {runtime.describe()}: "
                f"{exc}", partition=name, quota=limit or 0, usage=0, requested=request,
            ) from None
        try:
            meta = {
                "guaranteed": lambda: s.QosTaskMeta.guaranteed(name, name, request,
                                                               priority=priority),
                "burstable": lambda: s.QosTaskMeta.burstable(name, name, request, limit or 0,
                                                             priority=priority),
                "best_effort": lambda: s.QosTaskMeta.best_effort(name, name, priority=priority),
            }[tier]()
            state.evaluator.admit(meta)
            state.scheduler.set_quota(name, memory=limit)
            p = Partition(state, name, tier, limit, request,
                          None if compute is None else float(compute), int(priority),
                          tier == "best_effort" if spill is None else spill)
        except BaseException:
            state.manager.delete_partition(name, force=True)
            if name in state.evaluator.tasks():
                state.evaluator.release(name)
            raise
        state.partitions[name] = p
        if p._spill and getattr(runtime.allocator.spiller, "_state", None) is not state:
            runtime.allocator.spiller = _Spiller(state)
            _spill.active = True
        # Shares that reach 1 leave nothing for a later partition: the layout is final, so it
        # is made now and compute_mode says what the partitions got (else "pending" until the
        # first use of a partition's stream).
        waiting = any(q._sm_pending for q in state.partitions.values())
        if waiting and used + (p.compute or 0.0) >= 1.0 - 1e-9:
            _settle_sms(state)
    return p


def get_partition(name: str, device: Any = None) -> Partition:
    """The partition ``name`` of ``device``; KeyError if there is none."""
    runtime = _runtime(device)
    state = _state(runtime, create=False)
    p = state.partitions.get(name) if state is not None else None
    if p is None:
        raise KeyError(f"no partition {name!r} on {runtime.describe()}")
    return p  # type: ignore[no-any-return]


def list_partitions(device: Any = None) -> list[Partition]:
    """The partitions of ``device``, by name."""
    state = _state(_runtime(device), create=False)
    if state is None:
        return []
    with state.lock:
        return [state.partitions[k] for k in sorted(state.partitions)]


def delete_partition(name: str | Partition, *, force: bool = False, device: Any = None) -> None:
    """Delete a partition: its cache goes back to the device, its reservation and SMs are freed.

    Live arrays of the partition make this a RuntimeError unless ``force``: then they stay
    valid but are charged to nobody.
    """
    p = name if isinstance(name, Partition) else get_partition(name, device)
    state = p._state
    allocator = state.runtime.allocator
    allocator.release_cached(p)
    spilled = p._spill_stats.spilled_bytes
    if (allocator.owned_blocks(p) or spilled) and not force:
        raise RuntimeError(f"partition {p.name!r} still has {p._allocated} bytes in live arrays "
                           f"({spilled} more spilled to host memory); delete them first or pass "
                           "force=True")
    with state.lock:
        if not p._live:
            return
        p._live = False
        state.partitions.pop(p.name, None)
        state.manager.delete_partition(p.name, force=True)
        state.evaluator.release(p.name)
        if state.pacer is not None:
            for pacer in p._pacers:
                state.pacer.unregister_stream(pacer._id)
        if p._sm_resource is not None:
            state.sm_free.append(p._sm_resource)


def partition(name: str | Partition, *, stream: Stream | None = None,
              device: Any = None) -> PartitionScope:
    """Scope of a partition: ``with gp.partition("inference"): ...``.

    Inside, every array allocation on the partition's device is charged to it, and its stream
    (``stream`` if given) is the current stream, so ops are launched there -- with its QoS
    priority and, where it has one, on its green context's SMs.  Scopes nest (the innermost
    partition is charged) and are per thread.
    """
    p = name if isinstance(name, Partition) else get_partition(name, device)
    return PartitionScope(p, stream)


def task(memory: int = 0, *, partition: str | Partition | None = None, priority: int = 0,
         timeout: float | None = None, name: str | None = None) -> Task:
    """``with gp.task(memory=n, partition="inference"):`` -- see :meth:`Partition.task`.

    Without ``partition``, the calling thread's current partition.
    """
    if partition is None:
        p = current_partition()
        if p is None:
            raise RuntimeError("task: give partition=... or call it inside a partition scope")
    elif isinstance(partition, Partition):
        p = partition
    else:
        p = get_partition(partition)
    return p.task(memory, priority=priority, timeout=timeout, name=name)
