"""Streams and events.

Every operation enqueues its work on the *current stream* of its device and returns at once.
The current stream is the device's default stream (one non-blocking stream per device, created
by PyGPUkit) unless a ``with stream:`` block says otherwise, per thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pygpukit import _context

if TYPE_CHECKING:
    from pygpukit._backend import Runtime


class Stream:
    """A queue of GPU work (a CUDA stream; on the CPU simulation, work runs immediately).

    Parameters
    ----------
    priority
        Lower numbers run first when both have work (CUDA convention); see
        :func:`stream_priority_range`.  0 is the default priority.
    device
        Device index or :class:`~pygpukit.Device`; the current device if omitted.
    non_blocking
        Whether the stream runs concurrently with the legacy default stream (default True).

    Examples
    --------
    >>> s = gp.Stream(priority=-1)
    >>> with s:
    ...     c = a + b          # enqueued on s
    >>> s.synchronize()
    """

    __slots__ = ("__weakref__", "_before_launch", "_handle", "_impl", "_index_checks", "_keep",
                 "_pool", "_recorded", "_runtime", "priority")

    #: Called before every kernel launch on this stream (``None``: nothing to do).  Partitions
    #: set it to pace launches; graph capture leaves it alone.
    _before_launch: Callable[[], None] | None

    def __init__(self, priority: int = 0, *, device: Any = None, non_blocking: bool = True) -> None:
        from pygpukit._device import runtime_for

        runtime = runtime_for(device)
        self._init(runtime, runtime.new_stream(int(priority), bool(non_blocking)), int(priority))

    def _init(self, runtime: Runtime, impl: Any, priority: int) -> None:
        self._runtime, self._impl, self.priority = runtime, impl, priority
        self._handle = int(impl.handle)  # fixed for the stream's life: read once
        self._before_launch = None
        # Graph capture (pygpukit._graph) on this stream: the graph's private memory pool, the
        # blocks of other pools its work uses (kept alive while the graph lives) and, on the
        # CPU simulation, the recorded runtime calls.  None outside a capture.
        self._pool: Any = None
        self._keep: list[Any] | None = None
        self._recorded: list[Any] | None = None
        # Deferred index checks in flight on this stream (pygpukit._index_errors), or None.
        self._index_checks: Any = None

    @classmethod
    def _wrap(cls, runtime: Runtime, impl: Any, priority: int) -> Stream:
        stream = cls.__new__(cls)
        stream._init(runtime, impl, priority)
        return stream

    @property
    def handle(self) -> int:
        """The ``CUstream`` as an int (0 on the CPU simulation)."""
        return self._handle

    def launch_handle(self) -> int:
        """The handle to launch on, after the before-launch hook (pacing) had its say."""
        hook = self._before_launch
        if hook is not None:
            hook()
        return self._handle

    @property
    def device(self) -> Any:
        """The :class:`~pygpukit.Device` this stream belongs to."""
        from pygpukit._device import Device

        return Device(self._runtime.index)

    def synchronize(self) -> None:
        """Wait until all work enqueued on this stream has finished.

        Raises
        ------
        IndexError
            When a deferred index check (``gp.set_index_check("deferred")``) of an operation
            on this stream found an out-of-range index.
        """
        _context.refuse_in_capture("Stream.synchronize()")
        self._impl.synchronize()
        if self._index_checks is not None:
            from pygpukit import _index_errors

            _index_errors.check(self._runtime, self)

    def query(self) -> bool:
        """Return whether all work enqueued on this stream has finished (never blocks)."""
        return bool(self._impl.query())

    def record(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one if omitted) at this point of the stream and return it."""
        event = event if event is not None else Event(device=self._runtime.index)
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait until ``event`` has completed (no host wait)."""
        self._runtime.stream_wait_event(self._impl, event._impl)

    def wait_stream(self, other: Stream) -> None:
        """Make later work on this stream wait for the work enqueued so far on ``other``."""
        self.wait_event(other.record())

    def __enter__(self) -> Stream:
        _context.state.devices.append(self._runtime.index)
        _context.state.streams.setdefault(self._runtime.index, []).append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _context.state.streams[self._runtime.index].pop()
        _context.state.devices.pop()

    def __repr__(self) -> str:
        return (f"<pygpukit.Stream handle={self.handle:#x} priority={self.priority} "
                f"device={self._runtime.index}>")


class Event:
    """A marker in a stream, for waiting and timing.

    Parameters
    ----------
    timing
        Whether :meth:`elapsed_time` can be used (timing events cost a little more).
    device
        Device index or :class:`~pygpukit.Device`; the current device if omitted.
    """

    __slots__ = ("_impl", "_mark", "_runtime")

    def __init__(self, timing: bool = True, *, device: Any = None) -> None:
        from pygpukit._device import runtime_for

        self._runtime = runtime_for(device)
        self._impl = self._runtime.new_event(bool(timing))
        # (stream, deferred index checks enqueued on it before the record), when there were any.
        self._mark: tuple[Stream, int] | None = None

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on ``stream`` (the current stream if omitted)."""
        target = stream if stream is not None else current_stream(self._runtime.index)
        self._impl.record(target._impl)
        seq = None
        if target._index_checks is not None:
            from pygpukit import _index_errors

            seq = _index_errors.mark(target)
        self._mark = (target, seq) if seq is not None else None

    def synchronize(self) -> None:
        """Wait until the work before the recorded point has finished.

        Raises
        ------
        IndexError
            When a deferred index check of an operation before the recorded point found an
            out-of-range index (see ``gp.set_index_check``).
        """
        _context.refuse_in_capture("Event.synchronize()")
        self._impl.synchronize()
        mark = self._mark
        if mark is not None:
            self._mark = None
            from pygpukit import _index_errors

            _index_errors.check(self._runtime, mark[0], upto=mark[1])

    def query(self) -> bool:
        """Return whether the recorded work has finished (never blocks)."""
        return bool(self._impl.query())

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds between this event and ``end`` (both recorded and completed)."""
        return float(self._impl.elapsed_time(end._impl))


def stream_for_runtime(runtime: Runtime) -> Stream:
    """The calling thread's current stream on a device runtime (the hot path of every op)."""
    stack = _context.state.streams.get(runtime.index)
    if stack:
        return stack[-1]
    default: Stream = runtime.default_stream
    return default


def current_stream(device: Any = None) -> Stream:
    """Return the calling thread's current stream on ``device`` (the current device if omitted)."""
    from pygpukit._device import runtime_for

    return stream_for_runtime(runtime_for(device))


def stream_priority_range(device: Any = None) -> tuple[int, int]:
    """Return ``(lowest, highest)`` stream priorities, e.g. ``(0, -5)``: lower is more urgent."""
    from pygpukit._device import runtime_for

    least, greatest = runtime_for(device).priority_range()
    return int(least), int(greatest)
