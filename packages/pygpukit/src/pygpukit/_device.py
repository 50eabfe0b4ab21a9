"""Devices: how many, which is current, and the per-device runtime behind them."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from pygpukit import _context
from pygpukit._backend import get_backend

if TYPE_CHECKING:
    from pygpukit._backend import Runtime


def device_count() -> int:
    """Number of devices of the backend in use (1 on the CPU simulation)."""
    return get_backend().device_count()


def runtime_for(device: Any) -> Runtime:
    """The per-device runtime for a device index, a :class:`Device`, or ``None`` (current)."""
    backend = get_backend()
    if device is None:
        index = _context.current_device_index()
    elif isinstance(device, Device):
        index = device.id
    else:
        try:
            index = operator.index(device)
        except TypeError:
            raise TypeError(
                f"device: expected an int, a pygpukit.Device or None; got {device!r}"
            ) from None
    return backend.runtime(index)


class Device:
    """A device of the backend in use; as a context manager, the current device of the thread.

    Parameters
    ----------
    index
        0 ≤ index < :func:`device_count`; the current device if omitted.

    Examples
    --------
    >>> with gp.Device(1):
    ...     x = gp.zeros(10)      # allocated on GPU 1
    >>> x.device
    <pygpukit.Device cuda:1 ...>
    """

    __slots__ = ("id",)

    def __init__(self, index: int | None = None) -> None:
        if index is None:
            index = _context.current_device_index()
        try:
            index = operator.index(index)
        except TypeError:
            raise TypeError(f"index: expected an int; got {index!r}") from None
        count = device_count()
        if not 0 <= index < count:
            raise ValueError(f"index: device {index} does not exist (device count is {count})")
        self.id = index

    @property
    def _runtime(self) -> Any:
        return get_backend().runtime(self.id)

    @property
    def kind(self) -> str:
        """``"cuda"`` or ``"cpu"`` (the CPU simulation)."""
        return str(get_backend().name)

    @property
    def name(self) -> str:
        """The device's name, e.g. ``"NVIDIA H200"``."""
        return str(self._runtime.name)

    @property
    def compute_capability(self) -> tuple[int, int]:
        """``(major, minor)``; ``(0, 0)`` on the CPU simulation."""
        major, minor = self._runtime.compute_capability
        return int(major), int(minor)

    @property
    def total_memory(self) -> int:
        """Bytes of device memory."""
        return int(self._runtime.total_memory)

    def synchronize(self) -> None:
        """Wait until all work on every stream of this device has finished.

        Raises IndexError for a failed deferred index check (see ``gp.set_index_check``).
        """
        _synchronize_runtime(self._runtime)

    def __enter__(self) -> Device:
        _context.state.devices.append(self.id)
        return self

    def __exit__(self, *exc: object) -> None:
        _context.state.devices.pop()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return hash(("pygpukit.Device", self.id))

    def __index__(self) -> int:
        return self.id

    def __repr__(self) -> str:
        return f"<pygpukit.Device {self.kind}:{self.id} {self.name}>"


def _synchronize_runtime(runtime: Any) -> None:
    from pygpukit import _index_errors  # imports the array core: not at module load

    runtime.synchronize()
    _index_errors.check_runtime(runtime)


def synchronize(device: Any = None) -> None:
    """Wait until all work on ``device`` (every device if omitted) has finished.

    Raises
    ------
    IndexError
        When a deferred index check (``gp.set_index_check("deferred")``) found an out-of-range
        index in an operation of the synchronized device(s).
    """
    backend = get_backend()
    if device is None:
        for index in range(backend.device_count()):
            if backend.has_runtime(index):
                _synchronize_runtime(backend.runtime(index))
    else:
        _synchronize_runtime(runtime_for(device))
