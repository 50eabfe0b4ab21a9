"""The CUDA backend's advanced-indexing launches (``cuda/gather_scatter.cu``), through ctypes.

``pgk_index_gather`` / ``pgk_index_check`` / ``pgk_index_scatter`` / ``pgk_index_add`` /
``pgk_index_add_atomic``,
``pgk_select_flagged_count`` / ``_compact`` and ``pgk_unravel_index`` of the kernels library.

Temporary memory (the compaction's, CUB's and the scatter-add's sort buffers) comes from the
runtime's caching allocator for the launch's stream and goes back to its cache at once: later
work of that stream only may reuse it (stream order keeps it safe), as for the GEMM workspace.
"""

from __future__ import annotations

import ctypes
import threading
from typing import TYPE_CHECKING, Any

import pygpukit_driver as drv
import pygpukit_kernels
from pygpukit._dtypes import kernel_code

if TYPE_CHECKING:
    from pygpukit._array import GPUArray
    from pygpukit._cuda_backend import CudaRuntime
    from pygpukit._indexplan import IndexPlan
    from pygpukit._stream import Stream


def _ptr(array: GPUArray) -> int:
    return array._block.address + array._offset


def _desc(plan: IndexPlan, preset: bool = False) -> pygpukit_kernels.IndexDesc:
    """The C descriptor of a plan (dims of size 1 are already left out of outer / inner).

    ``preset``: the error slot is already "no error" (a deferred check's slot): no reset.
    """
    limit = pygpukit_kernels.INDEX_MAX
    if len(plan.outer) > limit or len(plan.inner) > limit or len(plan.indices) > limit:
        raise ValueError(f"advanced indexing: at most {limit} index arrays and {limit} other "
                         "dims before and after them are supported")
    desc = pygpukit_kernels.IndexDesc()
    desc.base = _ptr(plan.base) or None
    desc.dtype = kernel_code(plan.base.dtype)
    desc.mode = int(plan.mode)
    desc.n_outer = len(plan.outer)
    desc.n_inner = len(plan.inner)
    desc.n_index = len(plan.indices)
    desc.count = plan.count
    desc.flags = pygpukit_kernels.INDEX_ERROR_PRESET if preset else 0
    for d, (size, stride) in enumerate(plan.outer):
        desc.outer_shape[d] = size
        desc.outer_strides[d] = stride
    for d, (size, stride) in enumerate(plan.inner):
        desc.inner_shape[d] = size
        desc.inner_strides[d] = stride
    for k, (index, size, stride) in enumerate(
            zip(plan.indices, plan.sizes, plan.strides, strict=True)):
        desc.index[k] = _ptr(index) or None
        desc.index_size[k] = size
        desc.index_stride[k] = stride
    return desc


def _error_ptr(error: GPUArray | None) -> int | None:
    return _ptr(error) if error is not None else None


def _workspace(runtime: CudaRuntime, nbytes: int, stream: Stream) -> Any:
    pool = stream._pool
    allocator = runtime.allocator if pool is None else pool
    return allocator.malloc(nbytes, stream) if nbytes else None


def gather(runtime: CudaRuntime, plan: IndexPlan, out: GPUArray, error: GPUArray | None,
           stream: Stream, preset: bool = False) -> None:
    """``out`` (C-contiguous) = the plan's elements."""
    lib = runtime.kernels._lib
    status = lib.pgk_index_gather(ctypes.byref(_desc(plan, preset)), _ptr(out) or None,
                                  _error_ptr(error), stream.launch_handle())
    runtime.kernels.check("pgk_index_gather", status)


def check(runtime: CudaRuntime, plan: IndexPlan, error: GPUArray, stream: Stream) -> None:
    """``error`` = the code of the plan's first out-of-range index (-1: none); nothing written."""
    status = runtime.kernels._lib.pgk_index_check(ctypes.byref(_desc(plan)), _ptr(error),
                                                  stream.launch_handle())
    runtime.kernels.check("pgk_index_check", status)


def scatter(runtime: CudaRuntime, plan: IndexPlan, values: GPUArray, error: GPUArray | None,
            stream: Stream, preset: bool = False) -> None:
    """The plan's elements = ``values`` (C-contiguous)."""
    lib = runtime.kernels._lib
    status = lib.pgk_index_scatter(ctypes.byref(_desc(plan, preset)), _ptr(values) or None,
                                   _error_ptr(error), stream.launch_handle())
    runtime.kernels.check("pgk_index_scatter", status)


def add_atomic(runtime: CudaRuntime, plan: IndexPlan, values: GPUArray,
               error: GPUArray | None, stream: Stream, preset: bool = False) -> None:
    """The plan's elements += ``values``, one atomic add per element."""
    status = runtime.kernels._lib.pgk_index_add_atomic(
        ctypes.byref(_desc(plan, preset)), _ptr(values) or None, _error_ptr(error),
        stream.launch_handle())
    runtime.kernels.check("pgk_index_add_atomic", status)


def add(runtime: CudaRuntime, plan: IndexPlan, values: GPUArray, error: GPUArray | None,
        stream: Stream, preset: bool = False) -> None:
    """The plan's elements += ``values`` (deterministic scatter-add)."""
    lib = runtime.kernels._lib
    desc = _desc(plan, preset)
    size = ctypes.c_uint64(0)
    runtime.kernels.check("pgk_index_add_workspace_size", lib.pgk_index_add_workspace_size(
        ctypes.byref(desc), ctypes.byref(size)))
    workspace = _workspace(runtime, size.value, stream)
    status = lib.pgk_index_add(ctypes.byref(desc), _ptr(values) or None, _error_ptr(error),
                               workspace.address if workspace is not None else None,
                               size.value, stream.launch_handle())
    runtime.kernels.check("pgk_index_add", status)


class HostCounts:
    """Pinned 8-byte host slots, each with an event, for counts read while later work runs.

    A slot is taken for one read and given back after it, so threads never share one; they
    are made on first need, in the runtime's context (which the caller has made current).
    """

    def __init__(self) -> None:
        self._free: list[tuple[Any, Any]] = []
        self._lock = threading.Lock()

    def take(self) -> tuple[Any, Any]:
        with self._lock:
            if self._free:
                return self._free.pop()
        return drv.HostMemory(8), drv.Event(timing=False)

    def give(self, slot: tuple[Any, Any]) -> None:
        with self._lock:
            self._free.append(slot)


def select_counted(runtime: CudaRuntime, x: GPUArray | None, flags: GPUArray, out: GPUArray,
                   stream: Stream) -> int:
    """``out[:k]`` = the flagged elements of ``x`` (or their positions, ``x`` None); returns k.

    The count pass runs first; its result is copied to pinned host memory and the compaction
    is launched behind that copy before the host waits, so the host waits for the counting
    only and the compaction (most of the work) overlaps what the caller does next.  Stream
    order keeps later work on ``out`` behind the compaction.
    """
    lib = runtime.kernels._lib
    n = flags.size
    if n == 0:
        return 0
    dtype = kernel_code(x.dtype) if x is not None else kernel_code(out.dtype)
    size = ctypes.c_uint64(0)
    runtime.kernels.check("pgk_select_flagged_workspace_size",
                          lib.pgk_select_flagged_workspace_size(dtype, int(x is None), n,
                                                                ctypes.byref(size)))
    workspace = _workspace(runtime, size.value, stream)
    assert workspace is not None  # n > 0: never empty
    runtime.kernels.check("pgk_select_flagged_count",
                          lib.pgk_select_flagged_count(_ptr(flags), n, workspace.address,
                                                       size.value, stream.launch_handle()))
    slot = runtime.host_counts.take()
    try:
        host, done = slot
        drv.memcpy_dtoh_async(host, workspace.address, stream.handle)
        done.record(stream.handle)
        status = lib.pgk_select_flagged_compact(_ptr(x) if x is not None else None, dtype, n,
                                                _ptr(out), workspace.address, size.value,
                                                stream.launch_handle())
        runtime.kernels.check("pgk_select_flagged_compact", status)
        done.synchronize()
        return int.from_bytes(bytes(memoryview(host)[:8]), "little", signed=True)
    finally:
        runtime.host_counts.give(slot)


def unravel(runtime: CudaRuntime, flat: GPUArray, shape: tuple[int, ...], mode: int,
            out: GPUArray, error: GPUArray | None, stream: Stream) -> None:
    """``out[d, i]`` = coordinate ``d`` of ``flat[i]`` in ``shape``."""
    lib = runtime.kernels._lib
    dims = (ctypes.c_int64 * len(shape))(*shape)
    status = lib.pgk_unravel_index(_ptr(flat) or None, flat.size, len(shape), dims, mode,
                                   _ptr(out) or None, out.strides[0], out.strides[1],
                                   _error_ptr(error), stream.launch_handle())
    runtime.kernels.check("pgk_unravel_index", status)


def count(runtime: CudaRuntime, flags: GPUArray, out: GPUArray, stream: Stream) -> None:
    """``out[0]`` (int64) = the number of non-zero bytes of the contiguous bool ``flags``."""
    lib = runtime.kernels._lib
    status = lib.pgk_count_flags(_ptr(flags) or None, flags.size, _ptr(out),
                                 stream.launch_handle())
    runtime.kernels.check("pgk_count_flags", status)
