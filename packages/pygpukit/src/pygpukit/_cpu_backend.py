"""The CPU simulation backend: the same runtime interface as CUDA, over host memory and NumPy.

Arrays live in host blocks from the same caching allocator (so memory statistics, views and
errors behave as on the GPU); operations run synchronously with NumPy on views of those blocks.
"""

from __future__ import annotations

import functools
import threading
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

from pygpukit import _cpu_indexing, _philox
from pygpukit._allocator import CachingAllocator
from pygpukit._context import refuse_in_capture
from pygpukit._dtypes import complex_unsupported
from pygpukit._optable import BINARY, REDUCE, UNARY
from pygpukit._stream import Stream
from pygpukit_kernels import Activation, NormOp, ScanOp, SortFlag, UnaryOp

if TYPE_CHECKING:
    from pygpukit._array import GPUArray
    from pygpukit._indexplan import IndexPlan


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
    if array.size == 0:  # any strides fit no bytes; NumPy checks them against the buffer anyway
        return np.empty(array.shape, array.dtype)
    view: np.ndarray[Any, Any] = np.ndarray(array.shape, array.dtype,
                                            buffer=array._block.payload,
                                            offset=array._offset, strides=array.strides)
    return view


def _operand(array: GPUArray | None, scalar: Any, compute: np.dtype[Any]) -> Any:
    """An operand converted to the compute type, as the kernels load it."""
    if array is None:
        return np.asarray(scalar).astype(compute)
    return host_view(array).astype(compute)


# The op codes of the C ABI -> the NumPy implementations, from the op-spec table.
_BINARY: dict[int, Any] = {spec.code: spec.host for spec in BINARY}
_UNARY: dict[int, Any] = {spec.code: spec.host for spec in UNARY}
_REDUCE: dict[int, Any] = {spec.code: spec.host for spec in REDUCE}
#: The C ABI's activation codes -> the unary ops that apply them.
_ACTIVATIONS: dict[int, Any] = {
    int(Activation.RELU): _UNARY[int(UnaryOp.RELU)],
    int(Activation.GELU): _UNARY[int(UnaryOp.GELU_ERF)],
    int(Activation.GELU_TANH): _UNARY[int(UnaryOp.GELU_TANH)],
}


def _recordable(method: Callable[..., None]) -> Callable[..., None]:
    """Run the call now, or, while a graph is captured on its stream, record it for replays.

    Every such method takes the stream last.  Like the kernels they stand for, none takes a
    complex array (``kernel_code`` refuses them on the GPU): complex operations are composed
    from real ones above the runtime, and this check keeps the simulation as strict.
    """
    @functools.wraps(method)
    def run(self: CpuRuntime, *args: Any, **options: Any) -> None:
        for arg in args:
            dtype = getattr(arg, "dtype", None)
            if isinstance(dtype, np.dtype) and dtype.kind == "c":
                raise TypeError(complex_unsupported(method.__name__, dtype))
        recorded = args[-1]._recorded
        if recorded is not None:
            recorded.append((functools.partial(method, **options) if options else method, self,
                             args))
        else:
            method(self, *args, **options)

    return run


class _RecordedCalls:
    """A captured graph on the CPU simulation: the runtime calls, run again on each launch."""

    def __init__(self, calls: list[tuple[Any, CpuRuntime, tuple[Any, ...]]]) -> None:
        self._calls: list[tuple[Any, CpuRuntime, tuple[Any, ...]]] | None = calls

    def launch(self, stream: int) -> None:
        if self._calls is None:
            raise ValueError("the graph is closed")
        for method, runtime, args in self._calls:
            method(runtime, *args)

    def close(self) -> None:
        self._calls = None


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
        #: No small-array launchers: every op takes the general path (pygpukit._small).
        self.small: dict[str, Any] = {}
        self.small_launchers: dict[str, Any] = {}

    def describe(self) -> str:
        return "cpu:0 (simulation)"

    def gemm_entry_points(self) -> None:
        """No C ABI here: products take the Python path."""
        return None

    def elementwise_entry_points(self) -> None:
        """No C ABI here: large elementwise ops take the Python path."""
        return None

    context_handle = 0

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
        refuse_in_capture("synchronize()")

    # -- graphs (pygpukit._graph): record the calls, replay them -----------------------------
    def new_pool(self) -> CachingAllocator:
        """A memory pool of its own (a graph's private pool)."""
        return CachingAllocator(_HostMemory(), self.describe)

    def capture_begin(self, stream: Stream) -> None:
        stream._recorded = []

    def capture_end(self, stream: Stream) -> tuple[_RecordedCalls, int]:
        calls, stream._recorded = stream._recorded or [], None
        return _RecordedCalls(calls), 0

    def capture_abort(self, stream: Stream) -> None:
        stream._recorded = None

    def upload(self, dst: GPUArray, host: memoryview, stream: Stream) -> None:
        refuse_in_capture("a host-to-device copy")
        host_view(dst).reshape(-1).view(np.uint8)[:] = np.frombuffer(host, np.uint8)

    def download(self, src: GPUArray, host: memoryview, stream: Stream) -> None:
        refuse_in_capture("reading an array on the host")
        np.frombuffer(host, np.uint8)[:] = host_view(src).reshape(-1).view(np.uint8)

    # -- spill (pygpukit._spill): the simulated device block's bytes to a host buffer -------
    def host_buffer(self, nbytes: int) -> Any:
        return np.empty(nbytes, np.uint8)

    def spill_copy(self, block: Any, host: Any, stream: Stream) -> None:
        np.copyto(host, block.payload[:block.size])

    def restore_copy(self, block: Any, host: Any, stream: Stream) -> None:
        np.copyto(block.payload[:block.size], host)

    @_recordable
    def copy(self, src: GPUArray, dst: GPUArray, stream: Stream) -> None:
        np.copyto(host_view(dst), host_view(src), casting="unsafe")

    @_recordable
    def fill(self, dst: GPUArray, value: Any, stream: Stream) -> None:
        host_view(dst)[...] = np.asarray(value).astype(dst.dtype)

    @_recordable
    def arange(self, dst: GPUArray, start: Any, step: Any, stream: Stream) -> None:
        # The kernel's definition: floats in double then rounded once, integers in int64.
        values: np.ndarray[Any, Any]
        if dst.dtype.kind in "biu":
            values = np.arange(dst.size, dtype=np.int64) * int(step) + int(start)
        else:
            values = np.arange(dst.size, dtype=np.float64) * float(step) + float(start)
        host_view(dst)[...] = values.astype(dst.dtype) if dst.dtype != np.bool_ else values != 0

    @_recordable
    def linspace(self, dst: GPUArray, start: float, stop: float, endpoint: bool,
                 stream: Stream) -> None:
        # NumPy's linspace with an integer dtype floors (not truncates), as the kernel does.
        host_view(dst)[...] = np.linspace(start, stop, dst.size, endpoint=endpoint,
                                          dtype=dst.dtype)

    def copy_from_device(self, src: GPUArray, dst: GPUArray, stream: Stream) -> None:
        refuse_in_capture("a copy between devices")
        self.copy(src, dst, stream)

    # -- elementwise math: the kernels' definitions, in NumPy (see pygpukit._math) ---------------
    @_recordable
    def binary(self, op: int, a: GPUArray | None, b: GPUArray | None, scalar: Any,
               out: GPUArray, compute: np.dtype[Any], stream: Stream) -> None:
        x = _operand(a, scalar, compute)
        y = _operand(b, scalar, compute)
        with np.errstate(all="ignore"):
            result = _BINARY[op](x, y)
            np.copyto(host_view(out), result, casting="unsafe")

    @_recordable
    def unary(self, op: int, x: GPUArray, out: GPUArray, compute: np.dtype[Any],
              stream: Stream) -> None:
        with np.errstate(all="ignore"):
            result = _UNARY[op](_operand(x, 0, compute))
            np.copyto(host_view(out), result, casting="unsafe")

    @_recordable
    def reduce(self, op: int, x: GPUArray, nred_dims: int, out: GPUArray,
               compute: np.dtype[Any], ddof: float, workspace: GPUArray | None, chunks: int,
               stream: Stream) -> None:
        """Reduce ``x`` over its last ``nred_dims`` dims into ``out`` (the kept dims)."""
        data = _operand(x, 0, compute)
        kept = x.ndim - nred_dims
        data = data.reshape(*data.shape[:kept], -1)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # empty means: NaN, as the kernel
            result = _REDUCE[op](data, ddof)
            np.copyto(host_view(out), result, casting="unsafe")

    @_recordable
    def row_norm(self, op: int, x: GPUArray, weight: GPUArray | None, bias: GPUArray | None,
                 eps: float, out: GPUArray, stream: Stream) -> None:
        """The kernels' row normalizations (pgk_row_norm), in NumPy, in the compute dtype."""
        compute = np.dtype(np.float64) if x.dtype == np.float64 else np.dtype(np.float32)
        v: np.ndarray[Any, Any] = host_view(x).astype(compute)
        n = compute.type(v.shape[-1])
        with np.errstate(all="ignore"):
            if op in (NormOp.SOFTMAX, NormOp.LOG_SOFTMAX):
                shifted = v - v.max(axis=-1, keepdims=True)
                total = np.exp(shifted).sum(axis=-1, keepdims=True)
                if op == NormOp.SOFTMAX:
                    result = np.exp(shifted) * (compute.type(1) / total)
                else:
                    result = shifted - np.log(total)
            elif op == NormOp.LAYER:
                centered = v - v.sum(axis=-1, keepdims=True) / n
                var = (centered * centered).sum(axis=-1, keepdims=True) / n
                result = centered * (compute.type(1) / np.sqrt(var + compute.type(eps)))
            else:  # rms_norm
                ms = (v * v).sum(axis=-1, keepdims=True) / n
                result = v * (compute.type(1) / np.sqrt(ms + compute.type(eps)))
            if op in (NormOp.LAYER, NormOp.RMS) and weight is not None:
                result = np.multiply(result, host_view(weight))
            if op == NormOp.LAYER and bias is not None:
                result = np.add(result, host_view(bias))
            np.copyto(host_view(out), result, casting="unsafe")

    @_recordable
    def gemm(self, a: GPUArray, b: GPUArray, c: GPUArray, b_col_major: bool,
             bias: GPUArray | None, activation: int, precision: int, stream: Stream) -> None:
        """The CUDA runtime's product (both precisions compute in float32 here)."""
        with np.errstate(all="ignore"):
            _gemm(a, b, c, bias, activation)

    def gemm_last_kernel(self) -> str:
        """The CPU simulation runs NumPy's matmul."""
        return "numpy.matmul"

    # -- FP8 (pygpukit._fp8): the kernels' definitions (fp8.cu), in NumPy / ml_dtypes ----------
    @_recordable
    def fp8_cast(self, src: GPUArray, dst: GPUArray, scale: GPUArray | None, row_len: int,
                 saturate: bool, stream: Stream) -> None:
        """``pgk_fp8_cast`` over contiguous arrays (see :mod:`pygpukit._fp8`)."""
        with np.errstate(all="ignore"):
            np.copyto(host_view(dst), _fp8_cast(host_view(src), dst.dtype,
                                                None if scale is None else host_view(scale),
                                                row_len, saturate).reshape(dst.shape))

    @_recordable
    def gemm_fp8(self, a: GPUArray, b: GPUArray, c: GPUArray, scale_a: GPUArray | None,
                 scale_a_per_row: bool, scale_b: GPUArray | None, scale_b_per_col: bool,
                 bias: GPUArray | None, activation: int, stream: Stream) -> None:
        """``pgk_gemm_fp8``: ``c = act(a @ b.T * sa * sb + bias)``, here in float64."""
        f64 = np.dtype(np.float64)
        with np.errstate(all="ignore"):
            result = host_view(a).astype(f64) @ host_view(b).astype(f64).T
            if scale_a is not None:
                sa = host_view(scale_a).astype(f64)
                result *= sa.reshape(-1, 1) if scale_a_per_row else sa.reshape(())
            if scale_b is not None:
                sb = host_view(scale_b).astype(f64)
                result *= sb.reshape(1, -1) if scale_b_per_col else sb.reshape(())
            if bias is not None:
                result += host_view(bias).astype(f64)
            if activation:
                result = _ACTIVATIONS[activation](result)
            view = host_view(c)
            np.copyto(view[:, :result.shape[1]], result.astype(c.dtype))

    @_recordable
    def where(self, cond: GPUArray, a: GPUArray | None, b: GPUArray | None, a_scalar: Any,
              b_scalar: Any, out: GPUArray, compute: np.dtype[Any], stream: Stream) -> None:
        mask = host_view(cond) != 0
        result = np.where(mask, _operand(a, a_scalar, compute), _operand(b, b_scalar, compute))
        np.copyto(host_view(out), result, casting="unsafe")

    # -- sort and scan: the kernels' definitions (sort.cu, scan.cu), in NumPy -------------------
    @staticmethod
    def _sort_keys(x: np.ndarray[Any, Any], canon_zero: bool,
                   descending: bool = False) -> np.ndarray[Any, Any]:
        """pgk_sort's unsigned keys: their unsigned order is NumPy's order of ``x``."""
        kind = x.dtype.kind
        if x.dtype == np.bool_:
            keys: np.ndarray[Any, Any] = (x != 0).astype(np.uint8)
            return keys ^ np.uint8(1) if descending else keys
        bits = 8 * x.dtype.itemsize
        utype = np.dtype(f"u{x.dtype.itemsize}")
        sign = utype.type(1 << (bits - 1))
        if kind == "u":
            keys = x.copy()
        elif kind == "i":
            keys = x.view(utype) ^ sign
        else:
            raw = x.view(utype)
            mag = raw & utype.type((1 << (bits - 1)) - 1)
            abs_inf = {2: 0x7C00 if x.dtype == np.float16 else 0x7F80, 4: 0x7F800000,
                       8: 0x7FF0000000000000}[x.dtype.itemsize]
            if canon_zero:
                raw = np.where(mag == 0, utype.type(0), raw)
            keys = np.where(raw & sign, ~raw, raw | sign)
            keys = np.where(mag > utype.type(abs_inf), utype.type((1 << bits) - 1), keys)
        return ~keys if descending else keys

    @_recordable
    def sort(self, x: GPUArray, flags: int, k: int, values: GPUArray | None,
             indices: GPUArray | None, stream: Stream) -> None:
        """Stable sort of each row by pgk_sort's keys (NaN last, descending with the flag)."""
        data = host_view(x)
        with_indices = bool(flags & SortFlag.INDICES)
        keys = self._sort_keys(data, with_indices, bool(flags & SortFlag.DESCENDING))
        order = np.argsort(keys, axis=-1, kind="stable")[:, :k]
        if indices is not None:
            host_view(indices)[...] = order
        if values is not None:
            result = np.take_along_axis(data, order, axis=-1)
            if data.dtype.kind == "f" and not with_indices:
                # A values-only sort writes NaNs as the dtype's default quiet NaN.
                result = np.where(np.isnan(result), np.array(np.nan, data.dtype), result)
            host_view(values)[...] = result

    @_recordable
    def scan(self, op: int, x: GPUArray, out: GPUArray, stream: Stream) -> None:
        """Inclusive cumulative sum / product along the rows (sequential, in x's dtype)."""
        fn = np.cumsum if op == ScanOp.SUM else np.cumprod
        with np.errstate(all="ignore"):
            host_view(out)[...] = fn(host_view(x), axis=-1, dtype=x.dtype)

    @_recordable
    def searchsorted(self, a: GPUArray, sorter: GPUArray | None, v: GPUArray, right: bool,
                     out: GPUArray, stream: Stream) -> None:
        """Binary search in pgk_sort's order (NaN largest, -0.0 == +0.0)."""
        keys = self._sort_keys(host_view(a), True)
        if sorter is not None:
            keys = keys[host_view(sorter)]
        found = np.searchsorted(keys, self._sort_keys(host_view(v), True),
                                side="right" if right else "left")
        host_view(out)[...] = found

    @_recordable
    def run_starts(self, sorted_: GPUArray, flags: GPUArray, stream: Stream) -> None:
        """``flags[i] = 1`` where a run of equal keys starts."""
        keys = self._sort_keys(host_view(sorted_).reshape(-1), True)
        starts = np.ones(keys.shape, np.int64)
        starts[1:] = keys[1:] != keys[:-1]
        host_view(flags)[...] = starts.reshape(flags.shape)

    @_recordable
    def run_scatter(self, gid: GPUArray, sorted_: GPUArray, perm: GPUArray | None,
                    uniq: GPUArray | None, starts: GPUArray | None, first: GPUArray | None,
                    inverse: GPUArray | None, stream: Stream) -> None:
        """Each run's value, start and first index; every element's run id."""
        g = host_view(gid).reshape(-1) - 1
        at = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
        if uniq is not None:
            host_view(uniq)[...] = host_view(sorted_).reshape(-1)[at]
        if starts is not None:
            host_view(starts)[...] = at
        order = host_view(perm).reshape(-1) if perm is not None else None
        if first is not None and order is not None:
            host_view(first)[...] = order[at]
        if inverse is not None:
            target = host_view(inverse).reshape(-1)
            if order is not None:
                target[order] = g
            else:
                target[...] = g

    @_recordable
    def take_rows(self, src: GPUArray, idx: GPUArray, dst: GPUArray, stream: Stream) -> None:
        """``dst[r, j] = src[r, idx[r, j]]``."""
        host_view(dst)[...] = np.take_along_axis(host_view(src), host_view(idx), axis=-1)
    # -- random numbers: the streams' definition (pygpukit._philox), in NumPy -------------------
    @_recordable
    def random(self, dist: int, out: GPUArray, key: int, counter: int, stream_id: int,
               a: float, b: float, stream: Stream) -> None:
        host_view(out).reshape(-1)[...] = _philox.generate(dist, out.dtype, out.size, key,
                                                           counter, stream_id, a, b)

    @_recordable
    def random_integers(self, out: GPUArray, key: int, counter: int, stream_id: int, low: int,
                        span: int, stream: Stream) -> None:
        host_view(out).reshape(-1)[...] = _philox.integers(out.dtype, out.size, low, span, key,
                                                           counter, stream_id)

    @_recordable
    def random_choice(self, out: GPUArray, cdf: GPUArray, last: int, key: int, counter: int,
                      stream_id: int, stream: Stream) -> None:
        host_view(out).reshape(-1)[...] = _philox.categorical(host_view(cdf), last, out.size,
                                                              key, counter, stream_id)
    # -- advanced indexing: the kernels' definitions in NumPy (pygpukit._cpu_indexing) ------
    # ``preset`` (a deferred check's slot, already "no error") changes nothing here: the
    # simulation writes the whole slot, -1 or the error code, as the kernels' atomicMin ends.
    @_recordable
    def index_gather(self, plan: IndexPlan, out: GPUArray, error: GPUArray | None,
                     stream: Stream, *, preset: bool = False) -> None:
        _cpu_indexing.gather(plan, out, error)

    @_recordable
    def index_check(self, plan: IndexPlan, error: GPUArray, stream: Stream) -> None:
        _cpu_indexing.check(plan, error)

    @_recordable
    def index_scatter(self, plan: IndexPlan, values: GPUArray, error: GPUArray | None,
                      stream: Stream, *, preset: bool = False) -> None:
        _cpu_indexing.scatter(plan, values, error)

    @_recordable
    def index_add(self, plan: IndexPlan, values: GPUArray, error: GPUArray | None,
                  stream: Stream, *, preset: bool = False) -> None:
        _cpu_indexing.add(plan, values, error)

    @_recordable
    def index_add_atomic(self, plan: IndexPlan, values: GPUArray, error: GPUArray | None,
                         stream: Stream, *, preset: bool = False) -> None:
        # NumPy's add.at sums in index order: the simulation is deterministic either way.
        _cpu_indexing.add(plan, values, error)

    def select_flagged_counted(self, x: GPUArray | None, flags: GPUArray, out: GPUArray,
                               stream: Stream) -> int:
        refuse_in_capture("reading a selection's count on the host")
        return _cpu_indexing.select(x, flags, out)

    @_recordable
    def unravel_index(self, flat: GPUArray, shape: tuple[int, ...], mode: int, out: GPUArray,
                      error: GPUArray | None, stream: Stream) -> None:
        _cpu_indexing.unravel(flat, shape, mode, out, error)

    @_recordable
    def count_flags(self, flags: GPUArray, out: GPUArray, stream: Stream) -> None:
        _cpu_indexing.count(flags, out)


_FP8_MAX = {np.dtype(ml_dtypes.float8_e4m3fn): 448.0, np.dtype(ml_dtypes.float8_e5m2): 57344.0}


def _fp8_cast(x: np.ndarray[Any, Any], target: np.dtype[Any], scale: np.ndarray[Any, Any] | None,
              row_len: int, saturate: bool) -> np.ndarray[Any, Any]:
    """The FP8 conversion kernel's definition (fp8.cu) on a flat contiguous array."""
    f32 = np.dtype(np.float32)
    flat = x.reshape(-1)
    s: Any = None
    if scale is not None:
        s = scale.reshape(-1).astype(f32)
        s = np.repeat(s, row_len) if row_len else s[0]
    if target in _FP8_MAX:
        if scale is None and flat.dtype == np.float64:
            v = flat  # one rounding, from the double
        else:
            v = flat.astype(f32)
            if s is not None:
                v = v / s
        if saturate:
            v = np.clip(v, -_FP8_MAX[target], _FP8_MAX[target])
        return np.asarray(v.astype(target))
    v = flat.astype(f32)
    if s is not None:
        v = v * s
    return np.asarray(v.astype(target))


def _gemm(a: GPUArray, b: GPUArray, c: GPUArray, bias: GPUArray | None, activation: int) -> None:
    """``c[i] = act(a[i] @ b[i] + bias)`` over 3-D views, in float32 (float64 for float64)."""
    compute = np.dtype(np.float64) if c.dtype == np.float64 else np.dtype(np.float32)
    result = np.matmul(host_view(a).astype(compute), host_view(b).astype(compute))
    if bias is not None:
        result += host_view(bias).astype(compute)
    if activation:
        result = _ACTIVATIONS[activation](result)
    np.copyto(host_view(c), result, casting="unsafe")


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
