"""The CUDA backend: device memory, a stream, and the precompiled kernels of pygpukit-kernels.

All work goes to one non-blocking stream per device in the device's primary context (the
context torch, cupy and the kernels library's static cudart share).  Allocation and free are
stream-ordered (``cuMemAllocAsync``/``cuMemFreeAsync`` on that stream), so dropping an array
while a kernel still reads it is safe and costs no synchronization.
"""

from __future__ import annotations

import ctypes
import weakref
from typing import Any

import numpy as np

import pygpukit_driver as drv
import pygpukit_kernels
from pygpukit._array import GPUArray
from pygpukit._errors import KernelLaunchError


class _DeviceBuffer:
    """Owns one stream-ordered device allocation; freed on its stream when collected."""

    __slots__ = ("__weakref__", "nbytes", "ptr")

    def __init__(self, nbytes: int, backend: CudaBackend) -> None:
        self.nbytes = nbytes
        # Zero-size arrays own no memory; the kernels never dereference their pointer.
        self.ptr = drv.mem_alloc_async(nbytes, backend.stream.handle) if nbytes else 0
        if self.ptr:
            # The finalizer holds the backend, so its context and stream outlive the memory.
            weakref.finalize(self, backend._free, self.ptr)


class _Kernels:
    """The C ABI of libpygpukit_kernels with ctypes signatures set."""

    def __init__(self) -> None:
        lib = pygpukit_kernels.load()
        self._lib = lib
        lib.pgk_add_f32.restype = ctypes.c_int
        lib.pgk_add_f32.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
        ]
        self.add_f32 = lib.pgk_add_f32

    def check(self, kernel: str, status: int) -> None:
        """Raise :class:`KernelLaunchError` for a non-zero status from a launcher."""
        if status != 0:
            name = self._lib.pgk_error_name(status).decode()
            description = self._lib.pgk_error_string(status).decode()
            raise KernelLaunchError(kernel, status, name, description)


def _as_bytes(array: np.ndarray[Any, Any]) -> memoryview:
    """View a C-contiguous array as flat bytes (bfloat16 has no buffer-protocol format)."""
    return array.reshape(-1).view(np.uint8).data


class CudaBackend:
    """Arrays in device memory of one GPU, operations on its stream."""

    name = "cuda"

    def __init__(self, device: int = 0) -> None:
        self.device = drv.Device(device)
        self._context = self.device.primary_context()
        self._context.set_current()
        self.stream = drv.Stream(non_blocking=True)
        self._kernels = _Kernels()

    def describe(self) -> str:
        """Name the device in use."""
        major, minor = self.device.compute_capability
        return f"cuda (device {self.device.ordinal}: {self.device.name}, sm_{major}{minor})"

    def _activate(self) -> None:
        # The primary context must be current on whichever thread issues work.
        if drv.current_context_handle() != self._context.handle:
            self._context.set_current()

    def _free(self, ptr: int) -> None:
        # Ordered after every kernel already enqueued on the stream: no synchronization.
        self._activate()
        drv.mem_free_async(ptr, self.stream.handle)

    def _buffer(self, array: GPUArray) -> _DeviceBuffer:
        storage = array._storage
        assert isinstance(storage, _DeviceBuffer)
        return storage

    def empty(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> GPUArray:
        """Allocate device memory for the array on the stream."""
        self._activate()
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        return GPUArray(self, _DeviceBuffer(nbytes, self), shape, dtype)

    def full(self, shape: tuple[int, ...], dtype: np.dtype[Any], value: object) -> GPUArray:
        """Allocate and fill on the device: a memset where the bit pattern allows one."""
        out = self.empty(shape, dtype)
        ptr, nbytes = self._buffer(out).ptr, out.nbytes
        if nbytes == 0:
            return out
        pattern = np.array(value, dtype=dtype).reshape(1).view(np.uint8)
        if not pattern.any():
            drv.memset_d8_async(ptr, 0, nbytes, self.stream.handle)
        elif dtype.itemsize == 1:
            drv.memset_d8_async(ptr, int(pattern[0]), nbytes, self.stream.handle)
        elif dtype.itemsize == 4:
            word = int(pattern.view(np.uint32)[0])
            drv.memset_d32_async(ptr, word, out.size, self.stream.handle)
        else:
            # 2- and 8-byte patterns: upload (a fill kernel replaces this with the ops issue).
            host = np.full(out.size, value, dtype=dtype)
            drv.memcpy_htod_async(ptr, _as_bytes(host), self.stream.handle)
        return out

    def from_numpy(self, array: np.ndarray[Any, Any]) -> GPUArray:
        """Enqueue a host-to-device copy of a C-contiguous array.

        From pageable memory the driver stages the data before returning, so the caller may
        reuse ``array`` at once.
        """
        out = self.empty(array.shape, array.dtype)
        if out.nbytes:
            drv.memcpy_htod_async(self._buffer(out).ptr, _as_bytes(array), self.stream.handle)
        return out

    def to_numpy(self, array: GPUArray) -> np.ndarray[Any, Any]:
        """Copy to the host after the array's pending work, waiting on its stream only."""
        self._activate()
        host = np.empty(array.shape, array.dtype)
        if array.nbytes:
            buf = self._buffer(array)
            drv.memcpy_dtoh_async(_as_bytes(host), buf.ptr, self.stream.handle)
            self.stream.synchronize()
        return host

    def add(self, a: GPUArray, b: GPUArray, out: GPUArray) -> None:
        """Launch the float32 add kernel on the stream."""
        self._activate()
        status = self._kernels.add_f32(
            self._buffer(a).ptr or None,
            self._buffer(b).ptr or None,
            self._buffer(out).ptr or None,
            a.size,
            self.stream.handle or None,
        )
        self._kernels.check("pgk_add_f32", status)

    def synchronize(self) -> None:
        """Wait for the backend's stream."""
        self.stream.synchronize()
