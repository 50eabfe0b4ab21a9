"""Choosing the backend: the CUDA GPU when there is one, else the CPU simulation.

``PYGPUKIT_BACKEND`` = ``auto`` (default), ``cuda`` (fail loudly if no GPU) or ``cpu``.  The
choice is made once, at the first operation, so ``import pygpukit`` never touches the driver.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Protocol

from pygpukit._errors import BackendUnavailableError

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    import numpy as np

    from pygpukit._array import GPUArray

ENV_BACKEND = "PYGPUKIT_BACKEND"
_CHOICES = ("auto", "cuda", "cpu")


class Backend(Protocol):
    """What an array backend provides; :class:`GPUArray` delegates its work to one."""

    name: str

    def describe(self) -> str:
        """Say in one line what runs the arrays (device name, or why the CPU)."""
        ...

    def empty(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> GPUArray:
        """Allocate an uninitialized array."""
        ...

    def full(self, shape: tuple[int, ...], dtype: np.dtype[Any], value: object) -> GPUArray:
        """Allocate an array filled with ``value``."""
        ...

    def from_numpy(self, array: np.ndarray[Any, Any]) -> GPUArray:
        """Copy a (C-contiguous, supported-dtype) NumPy array into a new array."""
        ...

    def to_numpy(self, array: GPUArray) -> np.ndarray[Any, Any]:
        """Copy an array to a new NumPy array, waiting only for that array's stream."""
        ...

    def add(self, a: GPUArray, b: GPUArray, out: GPUArray) -> None:
        """Enqueue ``out = a + b`` (validated shapes and dtypes)."""
        ...

    def synchronize(self) -> None:
        """Wait for all work this backend enqueued."""
        ...


def cuda_unavailable_reason() -> str | None:
    """Return why the CUDA backend cannot run here, or ``None`` when it can."""
    import pygpukit_driver as drv
    import pygpukit_kernels

    if not drv.is_available():
        return drv.unavailable_reason() or "the CUDA driver is not available"
    if drv.device_count() == 0:
        return "the CUDA driver reports no device"
    major, minor = drv.Device(0).compute_capability
    if pygpukit_kernels.covers(major, minor) is None:
        shipped = ", ".join(f"sm_{a}" for a in pygpukit_kernels.build_info().sass_archs)
        return f"device 0 is sm_{major}{minor}, older than every shipped kernel arch ({shipped})"
    return None


_lock = threading.Lock()
_backend: Backend | None = None


def _select() -> Backend:
    requested = os.environ.get(ENV_BACKEND, "auto").strip().lower() or "auto"
    if requested not in _CHOICES:
        raise BackendUnavailableError(
            f"{ENV_BACKEND}={requested!r} is not one of {', '.join(_CHOICES)}"
        )
    from pygpukit._cpu_backend import CpuBackend

    if requested == "cpu":
        return CpuBackend(reason=f"{ENV_BACKEND}=cpu")
    reason = cuda_unavailable_reason()
    if reason is None:
        from pygpukit._cuda_backend import CudaBackend

        return CudaBackend(device=0)
    if requested == "cuda":
        raise BackendUnavailableError(f"{ENV_BACKEND}=cuda but {reason}")
    return CpuBackend(reason=reason)


def get_backend() -> Backend:
    """Return the process's backend, choosing it on first use (thread-safe)."""
    global _backend
    if _backend is None:
        with _lock:
            if _backend is None:
                _backend = _select()
    return _backend


def _reset_for_tests() -> None:
    """Forget the chosen backend (tests switch ``PYGPUKIT_BACKEND``)."""
    global _backend
    with _lock:
        _backend = None


def shape_tuple(shape: int | Sequence[int], *, argument: str = "shape") -> tuple[int, ...]:
    """Normalize a shape argument to a tuple of non-negative ints, or raise a clear error."""
    import operator

    try:
        dims = (operator.index(shape),) if not hasattr(shape, "__iter__") else tuple(
            operator.index(d) for d in shape
        )
    except TypeError:
        raise TypeError(
            f"{argument}: expected an int or a sequence of ints; got {shape!r}"
        ) from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{argument}: dimensions must be >= 0; got {dims}")
    return dims
