"""The CPU simulation backend: the same runtime interface as CUDA, over host memory and NumPy.

Arrays live in host blocks from the same caching allocator (so memory statistics, views and
errors behave as on the GPU); operations run synchronously with NumPy on views of those blocks.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from pygpukit._allocator import CachingAllocator
from pygpukit._stream import Stream

if TYPE_CHECKING:
    from pygpukit._array import GPUArray


class _HostMemory:
    """Blocks are NumPy byte arrays; the address is their data pointer."""

    def __init__(self) -> None:
        self.limit: int | None = None

    def alloc(self, nbytes: int) -> tuple[int, Any]:
        try:
            buf = np.empty(nbytes, np.uint8)
        except (MemoryError, ValueError) as exc:
            raise MemoryError(str(exc)) from exc
        return int(buf.ctypes.data), buf

    def free(self, address: int, payload: Any) -> None:
        """Dropping the reference frees the host memory."""

    def record_event(self, stream: Any) -> Any:
        return _HostEvent()


class _HostStream:
    """Work runs at once on the CPU, so a stream is always idle."""

    handle = 0

    def synchronize(self) -> None:
        """Nothing is ever pending."""

    def query(self) -> bool:
        return True


class _HostEvent:
    """Records the host time of its recording (work before it has already run)."""

    def __init__(self) -> None:
        self.time: float | None = None

    def record(self, stream: Any) -> None:
        self.time = time.perf_counter()

    def synchronize(self) -> None:
        """Completed as soon as recorded."""

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: _HostEvent) -> float:
        if self.time is None or end.time is None:
            raise RuntimeError("elapsed_time: both events must have been recorded")
        return (end.time - self.time) * 1e3


def host_view(array: GPUArray) -> np.ndarray[Any, Any]:
    """The NumPy array that is ``array`` (same memory, shape, strides, dtype)."""
    view: np.ndarray[Any, Any] = np.ndarray(array.shape, array.dtype,
                                            buffer=array._block.payload,
                                            offset=array._offset, strides=array.strides)
    return view


class CpuRuntime:
    """The single device of the CPU simulation."""

    index = 0
    name = "CPU simulation"
    compute_capability = (0, 0)

    def __init__(self) -> None:
        import os

        self.total_memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        self.allocator = CachingAllocator(_HostMemory(), self.describe)
        self.default_stream = Stream._wrap(self, _HostStream(), 0)

    def describe(self) -> str:
        return "cpu:0 (simulation)"

    def activate(self) -> None:
        """Nothing to make current."""

    def new_stream(self, priority: int, non_blocking: bool) -> Any:
        return _HostStream()

    def new_event(self, timing: bool) -> Any:
        return _HostEvent()

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        """Work is never pending on the CPU."""

    def priority_range(self) -> tuple[int, int]:
        return (0, 0)

    def synchronize(self) -> None:
        """Nothing is ever pending."""

    def upload(self, dst: GPUArray, host: memoryview, stream: Stream) -> None:
        host_view(dst).reshape(-1).view(np.uint8)[:] = np.frombuffer(host, np.uint8)

    def download(self, src: GPUArray, host: memoryview, stream: Stream) -> None:
        np.frombuffer(host, np.uint8)[:] = host_view(src).reshape(-1).view(np.uint8)

    def copy(self, src: GPUArray, dst: GPUArray, stream: Stream) -> None:
        np.copyto(host_view(dst), host_view(src), casting="unsafe")

    def fill(self, dst: GPUArray, value: Any, stream: Stream) -> None:
        host_view(dst)[...] = np.asarray(value).astype(dst.dtype)

    def arange(self, dst: GPUArray, start: Any, step: Any, stream: Stream) -> None:
        # The kernel's definition: floats in double then rounded once, integers in int64.
        values: np.ndarray[Any, Any]
        if dst.dtype.kind in "biu":
            values = np.arange(dst.size, dtype=np.int64) * int(step) + int(start)
        else:
            values = np.arange(dst.size, dtype=np.float64) * float(step) + float(start)
        host_view(dst)[...] = values.astype(dst.dtype) if dst.dtype != np.bool_ else values != 0

    def linspace(self, dst: GPUArray, start: float, stop: float, endpoint: bool,
                 stream: Stream) -> None:
        # NumPy's linspace with an integer dtype floors (not truncates), as the kernel does.
        host_view(dst)[...] = np.linspace(start, stop, dst.size, endpoint=endpoint,
                                          dtype=dst.dtype)

    def add_f32(self, a: GPUArray, b: GPUArray, out: GPUArray, stream: Stream) -> None:
        np.add(host_view(a), host_view(b), out=host_view(out))

    def copy_from_device(self, src: GPUArray, dst: GPUArray, stream: Stream) -> None:
        self.copy(src, dst, stream)


class CpuBackend:
    """The CPU simulation, chosen when there is no usable GPU or on request."""

    name = "cpu"

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self._runtime: CpuRuntime | None = None
        self._lock = threading.Lock()

    def describe(self) -> str:
        """Say why the CPU simulation is in use."""
        return f"cpu (simulation; {self.reason})"

    def device_count(self) -> int:
        return 1

    def has_runtime(self, index: int) -> bool:
        return self._runtime is not None

    def runtime(self, index: int) -> CpuRuntime:
        if index != 0:
            raise ValueError(f"device: cpu:{index} does not exist (device count is 1)")
        if self._runtime is None:
            with self._lock:
                if self._runtime is None:
                    self._runtime = CpuRuntime()
        return self._runtime
