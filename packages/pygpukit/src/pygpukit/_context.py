"""Per-thread state: the current device and, per device, the stack of current streams."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pygpukit._stream import Stream


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.devices: list[int] = []
        self.streams: dict[int, list[Stream]] = {}
        self.capturing = 0  # graph captures open on this thread (pygpukit._graph)


state = _ThreadState()


def current_device_index() -> int:
    """The calling thread's current device (0 unless inside ``with gp.Device(i):``)."""
    return state.devices[-1] if state.devices else 0


def refuse_in_capture(what: str) -> None:
    """Raise :class:`~pygpukit.GraphCaptureError` if this thread is capturing a graph.

    Host reads, synchronizations and cross-device copies cannot be recorded in a CUDA graph
    (and would wait forever for work that a capture does not run): they fail at once instead.
    """
    if state.capturing:
        from pygpukit._errors import GraphCaptureError

        raise GraphCaptureError(
            f"{what} cannot be captured in a graph: it needs results on the host (or another "
            "device) while the captured work has not run; do it after the `with gp.graph()` "
            "block, after g.replay()")
