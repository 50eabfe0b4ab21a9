"""The CUDA backend: per-device runtimes over pygpukit-driver and pygpukit-kernels.

Each device gets its primary context (shared with torch, cupy and the kernels library's static
cudart), a caching allocator over ``cuMemAlloc``, and a default non-blocking stream.  Kernels are
launched through the C ABI of libpygpukit_kernels on the current stream; nothing synchronizes
except reading data back on the host.
"""

from __future__ import annotations

import ctypes
import functools
import os
import struct
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

import pygpukit_driver as drv
import pygpukit_kernels
from pygpukit import _cuda_indexing
from pygpukit._allocator import CachingAllocator
from pygpukit._context import refuse_in_capture
from pygpukit._dtypes import FP8_CODES, is_fp8, kernel_code
from pygpukit._errors import KernelLaunchError
from pygpukit._stream import Stream

if TYPE_CHECKING:
    from pygpukit._array import GPUArray
    from pygpukit._indexplan import IndexPlan


class _Kernels:
    """The C ABI of libpygpukit_kernels (ctypes signatures are set by pygpukit_kernels.load)."""

    def __init__(self) -> None:
        lib = pygpukit_kernels.load()
        self._lib = lib
        self.copy = lib.pgk_copy
        self.fill = lib.pgk_fill
        self.arange = lib.pgk_arange
        self.linspace = lib.pgk_linspace
        self.binary = lib.pgk_binary
        self.unary = lib.pgk_unary
        self.where = lib.pgk_where
        self.reduce = lib.pgk_reduce
        self.row_norm = lib.pgk_row_norm
        self.gemm = lib.pgk_gemm
        self.gemm_workspace_size = lib.pgk_gemm_workspace_size
        self.gemm_last_kernel = lib.pgk_gemm_last_kernel
        self.random = lib.pgk_random
        self.random_integers = lib.pgk_random_integers
        self.random_choice = lib.pgk_random_choice
        # FP8 (absent from a library older than the FP8 kernels: the calls then say so)
        self.fp8_cast = getattr(lib, "pgk_fp8_cast", None)
        self.gemm_fp8 = getattr(lib, "pgk_gemm_fp8", None)

    def check(self, kernel: str, status: int) -> None:
        """Raise :class:`KernelLaunchError` for a non-zero status from a launcher."""
        if status != 0:
            name = self._lib.pgk_error_name(status).decode()
            description = self._lib.pgk_error_string(status).decode()
            raise KernelLaunchError(kernel, status, name, description)


@functools.cache
def _kernels() -> _Kernels:
    return _Kernels()


#: The int64 arrays of shapes and strides, per tuple: the C ABI only reads them
#: (``const int64_t*``), and making one costs about half a microsecond, several per op.
_I64: dict[tuple[int, ...], Any] = {}
_I64_MAX = 4096


def _i64(values: tuple[int, ...]) -> Any:
    cached = _I64.get(values)
    if cached is not None:
        return cached
    array = (ctypes.c_int64 * max(len(values), 1))(*values)
    if len(_I64) >= _I64_MAX:
        _I64.clear()
    _I64[values] = array
    return array


def _ptr(array: GPUArray) -> int:
    return array._block.address + array._offset


class _RawDeviceMemory:
    """cuMemAlloc / cuMemFree in the device's primary context."""

    def __init__(self, runtime: CudaRuntime) -> None:
        self._runtime = runtime

    def alloc(self, nbytes: int) -> tuple[int, Any]:
        self._runtime.activate()
        return drv.mem_alloc(nbytes), None  # CudaOutOfMemoryError is a MemoryError

    def free(self, address: int, payload: Any) -> None:
        self._runtime.activate()
        drv.mem_free(address)

    def record_event(self, stream: Any) -> Any:
        self._runtime.activate()
        event = drv.Event(timing=False)
        event.record(stream.handle)
        return event


class CudaRuntime:
    """One GPU: context, allocator, default stream, kernels."""

    def __init__(self, index: int) -> None:
        self.index = index
        self._device = drv.Device(index)
        self._context = self._device.primary_context()
        self._context.set_current()
        self.name = self._device.name
        self.compute_capability = self._device.compute_capability
        self.total_memory = self._device.total_memory
        self.kernels = _kernels()
        self.host_counts = _cuda_indexing.HostCounts()
        self._gemm_workspace: dict[tuple[int, ...], int] = {}
        self.allocator = CachingAllocator(_RawDeviceMemory(self), self.describe)
        self.default_stream = Stream._wrap(self, drv.Stream(non_blocking=True), 0)
        # The small-array kernels (pygpukit._small), loaded in this device's primary context:
        # one prepared launcher each, launched with launch(grid, stream, *args).
        self._small_module = drv.Module.load_data(
            pygpukit_kernels.fatbin_path("small_ops").read_bytes())
        self.small: dict[str, Callable[..., None]] = {}
        self.small_launchers: dict[str, drv.Launcher] = {}
        # On sm_90+ as programmatic dependents (each kernel waits in griddepcontrol.wait), as
        # the C ABI's kernels are; PGK_TUNE_PDL=0 turns it off for both, for benchmarks.
        programmatic = (self.compute_capability[0] >= 9
                        and os.environ.get("PGK_TUNE_PDL", "1").strip() != "0")
        for name, arg_types in pygpukit_kernels.SMALL_KERNELS.items():
            launcher = drv.Launcher(self._small_module.get_function(name), 1,
                                    pygpukit_kernels.SMALL_BLOCK, arg_types,
                                    programmatic=programmatic)
            self.small[name.removeprefix("pgk_small_")] = launcher.launch
            self.small_launchers[name.removeprefix("pgk_small_")] = launcher
        # A captured graph's lines of these kernels replay as one launch each (capture_end);
        # PGK_TUNE_GRAPH_FUSE=0 keeps every kernel its own node, for benchmarks.
        self._steps: dict[int, tuple[int, int]] = {}
        if os.environ.get("PGK_TUNE_GRAPH_FUSE", "1").strip() != "0":
            for step in pygpukit_kernels.SmallStep:  # (kind, parameter count) per function
                name = step.name.lower()
                self._steps[self.small_launchers[name].function.handle] = (
                    int(step), len(pygpukit_kernels.SMALL_KERNELS[f"pgk_small_{name}"]))
        self._program = self.small_launchers["program"].function.handle

    def describe(self) -> str:
        """Name the device."""
        major, minor = self.compute_capability
        return f"cuda:{self.index} ({self.name}, sm_{major}{minor})"

    def activate(self) -> None:
        """Make this device's primary context current on the calling thread."""
        if drv.current_context_handle() != self._context.handle:
            self._context.set_current()

    # -- streams and events --------------------------------------------------------------------
    def new_stream(self, priority: int, non_blocking: bool) -> Any:
        self.activate()
        return drv.Stream(non_blocking=non_blocking, priority=priority)

    def new_event(self, timing: bool) -> Any:
        self.activate()
        return drv.Event(timing=timing)

    def stream_wait_event(self, stream: Any, event: Any) -> None:
        self.activate()
        drv.stream_wait_event(stream.handle, event)

    def priority_range(self) -> tuple[int, int]:
        self.activate()
        least, greatest = drv.stream_priority_range()
        return int(least), int(greatest)

    def synchronize(self) -> None:
        refuse_in_capture("synchronize()")
        self.activate()
        self._context.synchronize()

    # -- graphs (pygpukit._graph) ----------------------------------------------------------------
    def new_pool(self) -> CachingAllocator:
        """A memory pool of its own (a graph's private pool) over this device's memory."""
        return CachingAllocator(_RawDeviceMemory(self), self.describe)

    def capture_begin(self, stream: Stream) -> None:
        """Start capturing ``stream``'s work (other threads' work goes on unaffected)."""
        self.activate()
        drv.stream_begin_capture(stream.handle, _CAPTURE_MODE_RELAXED)

    def capture_end(self, stream: Stream) -> tuple[Any, int]:
        """End the capture; return the instantiated graph and the small ops fused.

        Each line of small-array kernels that wait for one another becomes one launch of
        ``pgk_small_program`` (the driver binding's ``Graph.fuse_small_steps``): their steps
        live in a block of the graph's private pool, kept in ``stream._keep`` (the graph's).
        """
        self.activate()
        graph = drv.stream_end_capture(stream.handle)
        try:
            fused = 0
            pool, keep = stream._pool, stream._keep
            if self._steps and pool is not None and keep is not None:
                def alloc(nbytes: int) -> int:
                    block = pool.malloc(nbytes, stream)
                    keep.append(block)
                    return int(block.address)

                fused, _ = graph.fuse_small_steps(self._steps, self._program,
                                                  pygpukit_kernels.SMALL_BLOCK, alloc)
            return graph.instantiate(), fused
        finally:
            graph.close()

    def capture_abort(self, stream: Stream) -> None:
        """End a failed capture and drop what it recorded."""
        self.activate()
        drv.stream_end_capture(stream.handle).close()

    # -- data movement and kernels (arrays are validated by the caller) ------------------------
    def upload(self, dst: GPUArray, host: memoryview, stream: Stream) -> None:
        """Copy host → device into a C-contiguous array.

        From pageable memory the driver stages the bytes before returning, so the host buffer
        may be reused at once.
        """
        refuse_in_capture("a host-to-device copy")
        self.activate()
        drv.memcpy_htod_async(_ptr(dst), host, stream.launch_handle())

    def download(self, src: GPUArray, host: memoryview, stream: Stream) -> None:
        """Device → host from a C-contiguous array; waits for ``stream`` only."""
        refuse_in_capture("reading an array on the host")
        self.activate()
        drv.memcpy_dtoh_async(host, _ptr(src), stream.launch_handle())
        stream.synchronize()

    # -- spill (pygpukit._spill): stream-ordered copies to and from pinned host memory -------
    def host_buffer(self, nbytes: int) -> Any:
        self.activate()
        return drv.HostMemory(nbytes)

    def spill_copy(self, block: Any, host: Any, stream: Stream) -> None:
        self.activate()
        drv.memcpy_dtoh_async(host, block.address, stream.handle)

    def restore_copy(self, block: Any, host: Any, stream: Stream) -> None:
        self.activate()
        drv.memcpy_htod_async(block.address, host, stream.handle)

    def copy(self, src: GPUArray, dst: GPUArray, stream: Stream) -> None:
        """``dst[...] = src`` for equal shapes: any strides (0 = broadcast) and any dtypes."""
        self.activate()
        if (src.dtype == dst.dtype and src.is_contiguous() and dst.is_contiguous()
                and src._rt is self):
            drv.memcpy_dtod_async(_ptr(dst), _ptr(src), dst.nbytes, stream.launch_handle())
            return
        if src.dtype == dst.dtype and is_fp8(src.dtype):  # FP8 copies move bytes
            src_code = dst_code = int(pygpukit_kernels.DType.UINT8)
        else:
            src_code, dst_code = kernel_code(src.dtype), kernel_code(dst.dtype)
        status = self.kernels.copy(
            _ptr(src), src_code, _i64(src.strides),
            _ptr(dst), dst_code, _i64(dst.strides),
            dst.ndim, _i64(dst.shape), stream.launch_handle(),
        )
        self.kernels.check("pgk_copy", status)

    # -- FP8 (pygpukit._fp8) ----------------------------------------------------------------------
    def _fp8_entry(self, name: str) -> Any:
        fn = getattr(self.kernels, name)
        if fn is None:
            raise NotImplementedError(
                f"FP8: the installed pygpukit-kernels library has no pgk_{name} (built before "
                "the FP8 kernels); install the pygpukit-kernels version pygpukit requires")
        return fn

    def fp8_cast(self, src: GPUArray, dst: GPUArray, scale: GPUArray | None, row_len: int,
                 saturate: bool, stream: Stream) -> None:
        """``pgk_fp8_cast`` over contiguous ``src`` / ``dst`` (one of them FP8)."""
        self.activate()
        fn = self._fp8_entry("fp8_cast")
        status = fn(_ptr(src), _any_code(src.dtype), _ptr(dst), _any_code(dst.dtype), dst.size,
                    _ptr(scale) if scale is not None else None, row_len, int(saturate),
                    stream.launch_handle())
        self.kernels.check("pgk_fp8_cast", status)

    def gemm_fp8(self, a: GPUArray, b: GPUArray, c: GPUArray, scale_a: GPUArray | None,
                 scale_a_per_row: bool, scale_b: GPUArray | None, scale_b_per_col: bool,
                 bias: GPUArray | None, activation: int, stream: Stream) -> None:
        """``pgk_gemm_fp8``: ``c = act(a @ b.T * sa * sb + bias)``, a (M, K), b (N, K), c (M, >=N).

        ``a`` and ``b`` have unit stride along K and 16-byte aligned rows (pygpukit._fp8 lays
        them out so).
        """
        self.activate()
        fn = self._fp8_entry("gemm_fp8")
        m, k = a.shape
        n = b.shape[0]
        try:
            desc, buffer = _gemm_tls.fp8_desc
        except AttributeError:
            buffer = bytearray(_FP8_FORMAT.size)
            desc = pygpukit_kernels.Fp8GemmDesc.from_buffer(buffer)
            _gemm_tls.fp8_desc = desc, buffer
        _FP8_FORMAT.pack_into(
            buffer, 0, m, n, k, _any_code(a.dtype), _any_code(b.dtype), kernel_code(c.dtype),
            activation, _ptr(a), a.strides[0] if m > 1 else k, _ptr(b),
            b.strides[0] if n > 1 else k, _ptr(c),
            c.strides[0] // c.itemsize if m > 1 else c.shape[1],
            _ptr(scale_a) if scale_a is not None else 0,
            _ptr(scale_b) if scale_b is not None else 0, int(scale_a_per_row),
            int(scale_b_per_col), _ptr(bias) if bias is not None else 0)
        status = fn(ctypes.byref(desc), stream.launch_handle())
        if status == _CUDA_ERROR_NOT_SUPPORTED:
            major, minor = self.compute_capability
            raise NotImplementedError(
                f"matmul: no FP8 kernel of this build runs this product on {self.describe()} "
                f"(compute capability {major}.{minor}; {a.dtype.name} x {b.dtype.name} -> "
                f"{c.dtype.name}); the FP8 kernels need compute capability 8.9 or newer, "
                "16-byte aligned operand rows and K a multiple of 16 on the mma.sync kernels")
        self.kernels.check("pgk_gemm_fp8", status)

    def fill(self, dst: GPUArray, value: Any, stream: Stream) -> None:
        """Set every element of ``dst`` (any strides) to ``value``."""
        self.activate()
        dval, ival = _fill_operands(value, dst.dtype)
        status = self.kernels.fill(_ptr(dst), kernel_code(dst.dtype), _i64(dst.strides),
                                   dst.ndim, _i64(dst.shape), dval, ival, stream.launch_handle())
        self.kernels.check("pgk_fill", status)

    def arange(self, dst: GPUArray, start: Any, step: Any, stream: Stream) -> None:
        """``dst[i] = start + i * step`` for a contiguous 1-D ``dst``."""
        self.activate()
        status = self.kernels.arange(
            _ptr(dst), kernel_code(dst.dtype), dst.size, float(start), float(step),
            _as_int(start), _as_int(step), stream.launch_handle(),
        )
        self.kernels.check("pgk_arange", status)

    def linspace(self, dst: GPUArray, start: float, stop: float, endpoint: bool,
                 stream: Stream) -> None:
        """NumPy's ``linspace`` into a contiguous 1-D ``dst``."""
        self.activate()
        status = self.kernels.linspace(_ptr(dst), kernel_code(dst.dtype), dst.size,
                                       float(start), float(stop), int(endpoint),
                                       stream.launch_handle())
        self.kernels.check("pgk_linspace", status)

    # -- elementwise math (operands broadcast to out's shape by pygpukit._math) ---------------
    def binary(self, op: int, a: GPUArray | None, b: GPUArray | None, scalar: Any,
               out: GPUArray, compute: np.dtype[Any], stream: Stream) -> None:
        """``out = a (op) b``; a ``None`` operand is ``scalar`` (already of the loop dtype)."""
        self.activate()
        sf, si = _scalar_operands(scalar, compute)
        status = self.kernels.binary(
            op, *_operand(a), *_operand(b), _ptr(out), kernel_code(out.dtype),
            _i64(out.strides), out.ndim, _i64(out.shape), kernel_code(compute), sf, si,
            stream.launch_handle())
        self.kernels.check("pgk_binary", status)

    def unary(self, op: int, x: GPUArray, out: GPUArray, compute: np.dtype[Any],
              stream: Stream) -> None:
        """``out = op(x)``."""
        self.activate()
        status = self.kernels.unary(op, *_operand(x), _ptr(out), kernel_code(out.dtype),
                                    _i64(out.strides), out.ndim, _i64(out.shape),
                                    kernel_code(compute), stream.launch_handle())
        self.kernels.check("pgk_unary", status)

    def reduce(self, op: int, x: GPUArray, nred_dims: int, out: GPUArray,
               compute: np.dtype[Any], ddof: float, workspace: GPUArray | None, chunks: int,
               stream: Stream) -> None:
        """Reduce ``x`` over its last ``nred_dims`` dims into ``out`` (the kept dims)."""
        self.activate()
        status = self.kernels.reduce(
            op, _ptr(x) or None, kernel_code(x.dtype), _i64(x.strides), x.ndim, _i64(x.shape),
            nred_dims, _ptr(out), kernel_code(out.dtype), _i64(out.strides),
            kernel_code(compute), ddof, _ptr(workspace) if workspace is not None else None,
            chunks, stream.launch_handle())
        self.kernels.check("pgk_reduce", status)

    def row_norm(self, op: int, x: GPUArray, weight: GPUArray | None, bias: GPUArray | None,
                 eps: float, out: GPUArray, stream: Stream) -> None:
        """Row-wise softmax / log_softmax / layer_norm / rms_norm of a 2-D ``x`` into ``out``.

        ``out`` is C-contiguous of x's dtype; ``weight`` / ``bias`` are 1-D of the compute dtype.
        """
        self.activate()
        rows, cols = x.shape

        def affine(v: GPUArray | None) -> tuple[int | None, int, int]:
            if v is None:
                return None, 0, 0
            return _ptr(v) or None, kernel_code(v.dtype), v.strides[0]

        status = self.kernels.row_norm(
            op, _ptr(x) or None, kernel_code(x.dtype), rows, cols, x.strides[0], x.strides[1],
            _ptr(out) or None, out.strides[0], *affine(weight), *affine(bias), float(eps),
            stream.launch_handle())
        self.kernels.check("pgk_row_norm", status)

    def where(self, cond: GPUArray, a: GPUArray | None, b: GPUArray | None, a_scalar: Any,
              b_scalar: Any, out: GPUArray, compute: np.dtype[Any], stream: Stream) -> None:
        """``out = cond ? a : b``."""
        self.activate()
        af, ai = _scalar_operands(a_scalar, compute)
        bf, bi = _scalar_operands(b_scalar, compute)
        status = self.kernels.where(*_operand(cond), *_operand(a), *_operand(b), _ptr(out),
                                    kernel_code(out.dtype), _i64(out.strides), out.ndim,
                                    _i64(out.shape), kernel_code(compute), af, ai, bf, bi,
                                    stream.launch_handle())
        self.kernels.check("pgk_where", status)

    # -- matrix products (operands laid out by pygpukit._linalg) ---------------------------------
    def gemm(self, a: GPUArray, b: GPUArray, c: GPUArray, b_col_major: bool,
             bias: GPUArray | None, activation: int, precision: int, stream: Stream) -> None:
        """``c = act(a @ b + bias)`` over 2-D or 3-D views (see :mod:`pygpukit._linalg`)."""
        self.activate()
        desc, key = _gemm_desc(a, b, c, b_col_major, bias, activation, precision)
        # The workspace a product needs depends on its shape, layout, alignment and epilogue
        # only: asked once per such plan (a repeated product pays no query).
        size = self._gemm_workspace.get(key)
        if size is None:
            query = ctypes.c_uint64(0)
            self.kernels.check("pgk_gemm_workspace_size", self.kernels.gemm_workspace_size(
                ctypes.byref(desc), ctypes.byref(query)))
            size = self._gemm_workspace[key] = query.value
            if len(self._gemm_workspace) > 4096:
                self._gemm_workspace.clear()
        # Workspace for this launch only: back in the cache at once, reused only by later work
        # of this stream (stream order keeps it safe), as PyTorch's allocator does.
        pool = stream._pool
        allocator = self.allocator if pool is None else pool
        workspace = allocator.malloc(size, stream) if size else None
        status = self.kernels.gemm(ctypes.byref(desc),
                                   workspace.address if workspace is not None else None,
                                   size, stream.launch_handle())
        self.kernels.check("pgk_gemm", status)

    def gemm_entry_points(self) -> tuple[int, int, Callable[[str, int], None]]:
        """Addresses of ``pgk_gemm`` and ``pgk_gemm_workspace_size`` and the status check.

        For the C fast path of products (:mod:`pygpukit._fastpath`), which calls them itself.
        """
        kernels = self.kernels
        gemm = ctypes.cast(kernels.gemm, ctypes.c_void_p).value
        workspace = ctypes.cast(kernels.gemm_workspace_size, ctypes.c_void_p).value
        assert gemm is not None and workspace is not None
        return gemm, workspace, kernels.check

    def elementwise_entry_points(self) -> tuple[dict[str, int], Callable[[str, int], None]]:
        """Addresses of ``pgk_binary``, ``pgk_unary``, ``pgk_where``, ``pgk_copy``; the check.

        For the C fast path of large contiguous operands (:mod:`pygpukit._fastpath`), which
        calls them itself with the arguments :meth:`binary` / :meth:`unary` / :meth:`where` /
        :meth:`copy` would pass.
        """
        kernels = self.kernels
        entries = {name: ctypes.cast(getattr(kernels, name), ctypes.c_void_p).value
                   for name in ("binary", "unary", "where", "copy")}
        return {name: address for name, address in entries.items() if address}, kernels.check

    @property
    def context_handle(self) -> int:
        """The device's primary context (a CUcontext as an int)."""
        return int(self._context.handle)

    def gemm_last_kernel(self) -> str:
        """Name of the kernel this thread's last product ran (for tests and benchmarks)."""
        return str(self.kernels.gemm_last_kernel().decode())

    # -- random numbers (Philox4x32-10 streams; pygpukit._random) ------------------------------
    def random(self, dist: int, out: GPUArray, key: int, counter: int, stream_id: int,
               a: float, b: float, stream: Stream) -> None:
        """``out.size`` values of distribution ``dist`` into the C-contiguous ``out``."""
        self.activate()
        status = self.kernels.random(dist, _ptr(out) or None, kernel_code(out.dtype), out.size,
                                     key, counter, stream_id, float(a), float(b),
                                     stream.launch_handle())
        self.kernels.check("pgk_random", status)

    def random_integers(self, out: GPUArray, key: int, counter: int, stream_id: int, low: int,
                        span: int, stream: Stream) -> None:
        """Integers ``low + [0, span]`` into the C-contiguous ``out``."""
        self.activate()
        status = self.kernels.random_integers(_ptr(out) or None, kernel_code(out.dtype),
                                              out.size, key, counter, stream_id, low, span,
                                              stream.launch_handle())
        self.kernels.check("pgk_random_integers", status)

    def random_choice(self, out: GPUArray, cdf: GPUArray, last: int, key: int, counter: int,
                      stream_id: int, stream: Stream) -> None:
        """Category indices (int64) by the cumulative weights ``cdf`` (float64)."""
        self.activate()
        status = self.kernels.random_choice(_ptr(out) or None, out.size, _ptr(cdf), cdf.size,
                                            last, key, counter, stream_id,
                                            stream.launch_handle())
        self.kernels.check("pgk_random_choice", status)
    # -- advanced indexing (pygpukit._cuda_indexing: gather_scatter.cu's launchers) ----------
    def index_gather(self, plan: IndexPlan, out: GPUArray, error: GPUArray | None,
                     stream: Stream, *, preset: bool = False) -> None:
        self.activate()
        _cuda_indexing.gather(self, plan, out, error, stream, preset)

    def index_check(self, plan: IndexPlan, error: GPUArray, stream: Stream) -> None:
        self.activate()
        _cuda_indexing.check(self, plan, error, stream)

    def index_scatter(self, plan: IndexPlan, values: GPUArray, error: GPUArray | None,
                      stream: Stream, *, preset: bool = False) -> None:
        self.activate()
        _cuda_indexing.scatter(self, plan, values, error, stream, preset)

    def index_add(self, plan: IndexPlan, values: GPUArray, error: GPUArray | None,
                  stream: Stream, *, preset: bool = False) -> None:
        self.activate()
        _cuda_indexing.add(self, plan, values, error, stream, preset)

    def index_add_atomic(self, plan: IndexPlan, values: GPUArray, error: GPUArray | None,
                         stream: Stream, *, preset: bool = False) -> None:
        self.activate()
        _cuda_indexing.add_atomic(self, plan, values, error, stream, preset)

    def select_flagged_counted(self, x: GPUArray | None, flags: GPUArray, out: GPUArray,
                               stream: Stream) -> int:
        refuse_in_capture("reading a selection's count on the host")
        self.activate()
        return _cuda_indexing.select_counted(self, x, flags, out, stream)

    def unravel_index(self, flat: GPUArray, shape: tuple[int, ...], mode: int, out: GPUArray,
                      error: GPUArray | None, stream: Stream) -> None:
        self.activate()
        _cuda_indexing.unravel(self, flat, shape, mode, out, error, stream)

    def count_flags(self, flags: GPUArray, out: GPUArray, stream: Stream) -> None:
        self.activate()
        _cuda_indexing.count(self, flags, out, stream)

    def copy_from_device(self, src: GPUArray, dst: GPUArray, stream: Stream) -> None:
        """Copy a contiguous array of another device into ``dst`` (same dtype and size).

        Peer-to-peer where the devices allow, staged by the driver otherwise.
        """
        refuse_in_capture("a copy between devices")
        self.activate()
        drv.memcpy_dtod_async(_ptr(dst), _ptr(src), dst.nbytes, stream.launch_handle())

    # -- sort and scan (operands laid out by pygpukit._sorting: C-contiguous matrices) ----------
    def _scratch(self, size: int, stream: Stream) -> Any:
        """Workspace for one launch: back in the cache at once, reused only later on ``stream``."""
        if not size:
            return None
        pool = stream._pool
        return (self.allocator if pool is None else pool).malloc(size, stream)

    def sort(self, x: GPUArray, flags: int, k: int, values: GPUArray | None,
             indices: GPUArray | None, stream: Stream) -> None:
        """Sort each row of the (rows, cols) ``x`` into the first ``k`` columns of the outputs."""
        self.activate()
        lib = self.kernels._lib
        rows, cols = x.shape
        code = kernel_code(x.dtype)
        # The workspace cache of the products holds the sorts' too (6-tuple keys, theirs 16).
        # A top-k the select kernel serves needs none (the query takes k).
        key = (-1, code, rows, cols, flags, k)
        size = self._gemm_workspace.get(key)
        if size is None:
            query = ctypes.c_uint64(0)
            self.kernels.check("pgk_sort_workspace_size", lib.pgk_sort_workspace_size(
                code, rows, cols, flags, k, ctypes.byref(query)))
            size = self._gemm_workspace[key] = query.value
            if len(self._gemm_workspace) > 4096:
                self._gemm_workspace.clear()
        workspace = self._scratch(size, stream)
        status = lib.pgk_sort(
            _ptr(x) or None, code, rows, cols, flags, k,
            _ptr(values) if values is not None else None,
            _ptr(indices) if indices is not None else None,
            workspace.address if workspace is not None else None, size,
            stream.launch_handle())
        self.kernels.check("pgk_sort", status)

    def scan(self, op: int, x: GPUArray, out: GPUArray, stream: Stream) -> None:
        """Inclusive cumulative ``op`` along the rows of the (rows, cols) ``x`` into ``out``."""
        self.activate()
        lib = self.kernels._lib
        rows, cols = x.shape
        code = kernel_code(x.dtype)
        query = ctypes.c_uint64(0)
        self.kernels.check("pgk_scan_workspace_size", lib.pgk_scan_workspace_size(
            op, code, rows, cols, ctypes.byref(query)))
        workspace = self._scratch(query.value, stream)
        status = lib.pgk_scan(op, _ptr(x) or None, _ptr(out) or None, code, rows, cols,
                              workspace.address if workspace is not None else None,
                              query.value, stream.launch_handle())
        self.kernels.check("pgk_scan", status)

    def searchsorted(self, a: GPUArray, sorter: GPUArray | None, v: GPUArray, right: bool,
                     out: GPUArray, stream: Stream) -> None:
        """Insertion points of ``v`` into the sorted 1-D ``a`` (or ``a[sorter]``)."""
        self.activate()
        status = self.kernels._lib.pgk_searchsorted(
            _ptr(a) or None, kernel_code(a.dtype), a.size,
            _ptr(sorter) if sorter is not None else None, _ptr(v) or None, v.size, int(right),
            _ptr(out) or None, stream.launch_handle())
        self.kernels.check("pgk_searchsorted", status)

    def run_starts(self, sorted_: GPUArray, flags: GPUArray, stream: Stream) -> None:
        """``flags[i] = 1`` where a run of equal elements of the sorted array starts."""
        self.activate()
        status = self.kernels._lib.pgk_run_starts(_ptr(sorted_) or None,
                                                  kernel_code(sorted_.dtype), sorted_.size,
                                                  _ptr(flags) or None, stream.launch_handle())
        self.kernels.check("pgk_run_starts", status)

    def run_scatter(self, gid: GPUArray, sorted_: GPUArray, perm: GPUArray | None,
                    uniq: GPUArray | None, starts: GPUArray | None, first: GPUArray | None,
                    inverse: GPUArray | None, stream: Stream) -> None:
        """Scatter each run's value / start / first index and every element's run id."""
        self.activate()

        def p(a: GPUArray | None) -> int | None:
            return _ptr(a) or None if a is not None else None

        status = self.kernels._lib.pgk_run_scatter(
            p(gid), gid.size, p(sorted_), kernel_code(sorted_.dtype), p(perm), p(uniq),
            p(starts), p(first), p(inverse), stream.launch_handle())
        self.kernels.check("pgk_run_scatter", status)

    def take_rows(self, src: GPUArray, idx: GPUArray, dst: GPUArray, stream: Stream) -> None:
        """``dst[r, j] = src[r, idx[r, j]]`` over C-contiguous matrices."""
        self.activate()
        rows, cols = src.shape
        status = self.kernels._lib.pgk_take_rows(
            _ptr(src) or None, kernel_code(src.dtype), rows, cols, _ptr(idx) or None,
            idx.shape[1], _ptr(dst) or None, stream.launch_handle())
        self.kernels.check("pgk_take_rows", status)


# CUstreamCaptureMode RELAXED: the graph's private pool calls cuMemAlloc during a capture (which
# the stricter modes count as unsafe and would end the capture: PyTorch's allocator relaxes the
# mode around cudaMalloc for the same reason); pool memory is never freed while the graph lives.
# The calls that really cannot be captured (host reads, synchronizations, uploads, copies
# between devices) are refused before they reach the driver (_context.refuse_in_capture).
_CAPTURE_MODE_RELAXED = 2

_CUDA_ERROR_NOT_SUPPORTED = 801
# pgk_gemm_fp8_desc packed by struct, as pgk_gemm_desc below.
_FP8_FORMAT = struct.Struct("=3q4iQqQqQqQQ2iQ")
assert _FP8_FORMAT.size == ctypes.sizeof(pygpukit_kernels.Fp8GemmDesc)


def _any_code(dtype: np.dtype[Any]) -> int:
    """The C ABI code of a real or FP8 dtype."""
    return FP8_CODES[dtype] if is_fp8(dtype) else kernel_code(dtype)


# pgk_gemm_desc packed by struct (far cheaper than setting ctypes fields one by one).
_GEMM_FORMAT = struct.Struct("=4q4iQqqQqqQqqQ")  # pointers as uint64 (x86-64, aarch64)
assert _GEMM_FORMAT.size == ctypes.sizeof(pygpukit_kernels.GemmDesc)
_gemm_tls = threading.local()


def _gemm_desc(a: GPUArray, b: GPUArray, c: GPUArray, b_col_major: bool, bias: GPUArray | None,
               activation: int, precision: int
               ) -> tuple[pygpukit_kernels.GemmDesc, tuple[int, ...]]:
    """Fill the calling thread's C descriptor for a product over 2-D or 3-D (batched) views.

    Byte strides become element strides; a leading dimension of a single row (or column) is
    irrelevant and set to its minimum.  Also returns the product's plan key: everything in the
    descriptor but the addresses, plus their alignment (what the kernel choice depends on).
    """
    es = a.itemsize
    if a.ndim == 3:
        batch, m, k = a.shape
        n = c.shape[2]
        sa, sb, sc = (a.strides[0] // es, b.strides[0] // es,
                      c.strides[0] // es) if batch > 1 else (0, 0, 0)
    else:
        batch, sa, sb, sc = 1, 0, 0, 0
        m, k = a.shape
        n = c.shape[1]
    if b_col_major:
        ldb = b.strides[-1] // es if n > 1 else k
    else:
        ldb = b.strides[-2] // es if k > 1 else n
    desc: pygpukit_kernels.GemmDesc
    buffer: bytearray
    try:
        desc, buffer = _gemm_tls.desc
    except AttributeError:
        buffer = bytearray(_GEMM_FORMAT.size)
        desc = pygpukit_kernels.GemmDesc.from_buffer(buffer)
        _gemm_tls.desc = desc, buffer
    pa, pb, pc = _ptr(a), _ptr(b), _ptr(c)
    pbias = _ptr(bias) if bias is not None else 0
    lda = a.strides[-2] // es if m > 1 else k
    ldc = c.strides[-2] // es if m > 1 else n
    code = kernel_code(c.dtype)
    _GEMM_FORMAT.pack_into(buffer, 0, m, n, k, batch, code, precision, activation,
                           int(b_col_major), pa, lda, sa, pb, ldb, sb, pc, ldc, sc, pbias)
    key = (m, n, k, batch, code, precision, activation, int(b_col_major), lda, sa, ldb, sb, ldc,
           sc, bias is not None, (pa | pb | pc | pbias) & 255)
    return desc, key


def _operand(array: GPUArray | None) -> tuple[int | None, int, Any]:
    """(pointer, dtype code, strides) of an operand; (None, 0, None) for a scalar."""
    if array is None:
        return None, 0, None
    return _ptr(array) or None, kernel_code(array.dtype), _i64(array.strides)


def _scalar_operands(value: Any, compute: np.dtype[Any]) -> tuple[float, int]:
    """A scalar already of the loop dtype as the (double, int64) pair of the compute type."""
    if compute.kind == "f":
        return float(np.asarray(value).astype(np.float64)), 0
    return 0.0, int(np.asarray(value).astype(np.int64))


def _as_int(value: Any) -> int:
    try:
        return int(value)
    except (OverflowError, ValueError):
        return 0  # inf/nan only ever reach float dtypes, which use the double operand


def _fill_operands(value: Any, dtype: np.dtype[Any]) -> tuple[float, int]:
    """The (double, int64) pair pgk_fill takes, converted exactly as NumPy would."""
    scalar = np.asarray(value).astype(dtype)
    if dtype.kind in "biu":
        return 0.0, int(scalar.astype(np.int64))
    return float(scalar.astype(np.float64)), 0


class CudaBackend:
    """The GPUs seen by the driver."""

    name = "cuda"

    def __init__(self) -> None:
        self._count = drv.device_count()
        self._runtimes: dict[int, CudaRuntime] = {}
        self._lock = threading.Lock()

    def describe(self) -> str:
        """Describe device 0."""
        rt = self.runtime(0)
        major, minor = rt.compute_capability
        return (f"cuda (device 0: {rt.name}, sm_{major}{minor}; "
                f"{self._count} device{'s' if self._count > 1 else ''})")

    def device_count(self) -> int:
        return self._count

    def has_runtime(self, index: int) -> bool:
        return index in self._runtimes

    def runtime(self, index: int) -> CudaRuntime:
        rt = self._runtimes.get(index)
        if rt is None:
            if not 0 <= index < self._count:
                raise ValueError(
                    f"device: cuda:{index} does not exist (device count is {self._count})"
                )
            with self._lock:
                rt = self._runtimes.get(index)
                if rt is None:
                    rt = self._runtimes[index] = CudaRuntime(index)
        return rt
