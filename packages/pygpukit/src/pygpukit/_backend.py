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
    from typing import Any

ENV_BACKEND = "PYGPUKIT_BACKEND"
_CHOICES = ("auto", "cuda", "cpu")


class Backend(Protocol):
    """A backend: its devices, each with a runtime (allocator, streams, kernels)."""

    name: str

    def describe(self) -> str:
        """Say in one line what runs the arrays (device name, or why the CPU)."""
        ...

    def device_count(self) -> int:
        """Number of devices."""
        ...

    def runtime(self, index: int) -> Any:
        """The runtime of device ``index`` (created on first use); ValueError if no such device."""
        ...

    def has_runtime(self, index: int) -> bool:
        """Whether device ``index``'s runtime was created already."""
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

        return CudaBackend()
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
