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


state = _ThreadState()


def current_device_index() -> int:
    """The calling thread's current device (0 unless inside ``with gp.Device(i):``)."""
    return state.devices[-1] if state.devices else 0
