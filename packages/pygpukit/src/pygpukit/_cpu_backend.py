"""The CPU simulation backend: the same runtime interface as CUDA, over host memory and NumPy.

Arrays live in host blocks from the same caching allocator (so memory statistics, views and
errors behave as on the GPU); operations run synchronously with NumPy on views of those blocks.
"""

from __future__ import annotations

import threading
import time
import warnings
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


def _operand(array: GPUArray | None, scalar: Any, compute: np.dtype[Any]) -> Any:
    """An operand converted to the compute type, as the kernels load it."""
    if array is None:
        return np.asarray(scalar).astype(compute)
    return host_view(array).astype(compute)


def _int_power(x: Any, y: Any) -> Any:
    """Integer power; negative exponents give 0 (1 / -1 for bases 1 / -1), as the kernel."""
    positive = np.power(x, np.maximum(y, 0))
    negative = np.where(x == 1, 1, np.where(x == -1, np.where(y % 2 == 1, -1, 1), 0))
    return np.where(y < 0, negative, positive)


def _power(x: Any, y: Any) -> Any:
    if np.asarray(x).dtype.kind == "i":
        return _int_power(x, y)
    return np.power(x, y)


def _floor_divide(x: Any, y: Any) -> Any:
    if np.asarray(x).dtype.kind == "i":  # y == -1: wraps like the kernel (NumPy warns)
        return np.where(y == -1, -x, np.floor_divide(x, np.where(y == -1, 1, y)))
    return np.floor_divide(x, y)


def _gelu_tanh(x: Any) -> Any:
    k0, k1 = x.dtype.type(0.7978845608028654), x.dtype.type(0.044715)
    return x.dtype.type(0.5) * x * (1 + np.tanh(k0 * (x + k1 * x * x * x)))


def _gelu_erf(x: Any) -> Any:
    from math import erf

    erf_v = np.vectorize(erf, otypes=[np.float64])
    r = 0.5 * x.astype(np.float64) * (1 + erf_v(x.astype(np.float64) * 0.7071067811865476))
    return r.astype(x.dtype)


def _relu(x: Any) -> Any:
    return np.where(x > 0, x, np.where(np.isnan(x), x, 0)) if x.dtype.kind == "f" \
        else np.maximum(x, 0)


_BINARY: dict[int, Any] = {
    0: np.add, 1: np.subtract, 2: np.multiply, 3: np.true_divide, 4: np.maximum,
    5: np.minimum, 6: _power, 7: _floor_divide, 8: np.remainder, 9: np.equal,
    10: np.not_equal, 11: np.less, 12: np.less_equal, 13: np.greater, 14: np.greater_equal,
    15: np.logical_and, 16: np.logical_or, 17: np.logical_xor, 18: np.bitwise_and,
    19: np.bitwise_or, 20: np.bitwise_xor,
}

_UNARY: dict[int, Any] = {
    0: np.negative, 1: np.absolute, 2: np.exp, 3: np.log, 4: np.log1p, 5: np.expm1,
    6: np.sqrt, 7: lambda x: 1 / np.sqrt(x), 8: np.sin, 9: np.cos, 10: np.tanh,
    11: lambda x: 1 / (1 + np.exp(-x)), 12: _relu, 13: _gelu_tanh, 14: _gelu_erf,
    15: lambda x: x / (1 + np.exp(-x)), 16: np.floor, 17: np.ceil, 18: np.rint, 19: np.sign,
    20: np.isnan, 21: np.isinf, 22: np.logical_not, 23: np.invert, 24: np.square,
    25: lambda x: 1 / x if x.dtype.kind == "f" else np.where(np.abs(x) == 1, x, 0),
}


_REDUCE: dict[int, Any] = {
    0: lambda d, _: d.sum(-1), 1: lambda d, _: d.prod(-1), 2: lambda d, _: d.max(-1),
    3: lambda d, _: d.min(-1), 4: lambda d, _: d.argmax(-1), 5: lambda d, _: d.argmin(-1),
    6: lambda d, _: d.mean(-1), 7: lambda d, ddof: d.var(-1, ddof=ddof),
    8: lambda d, ddof: d.std(-1, ddof=ddof), 9: lambda d, _: (d != 0).any(-1),
    10: lambda d, _: (d != 0).all(-1),
}


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

    # -- elementwise math: the kernels' definitions, in NumPy (see pygpukit._math) ---------------
    def binary(self, op: int, a: GPUArray | None, b: GPUArray | None, scalar: Any,
               out: GPUArray, compute: np.dtype[Any], stream: Stream) -> None:
        x = _operand(a, scalar, compute)
        y = _operand(b, scalar, compute)
        with np.errstate(all="ignore"):
            result = _BINARY[op](x, y)
            np.copyto(host_view(out), result, casting="unsafe")

    def unary(self, op: int, x: GPUArray, out: GPUArray, compute: np.dtype[Any],
              stream: Stream) -> None:
        with np.errstate(all="ignore"):
            result = _UNARY[op](_operand(x, 0, compute))
            np.copyto(host_view(out), result, casting="unsafe")

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

    def row_norm(self, op: int, x: GPUArray, weight: GPUArray | None, bias: GPUArray | None,
                 eps: float, out: GPUArray, stream: Stream) -> None:
        """The kernels' row normalizations (pgk_row_norm), in NumPy, in the compute dtype."""
        compute = np.dtype(np.float64) if x.dtype == np.float64 else np.dtype(np.float32)
        v: np.ndarray[Any, Any] = host_view(x).astype(compute)
        n = compute.type(v.shape[-1])
        with np.errstate(all="ignore"):
            if op in (0, 1):  # softmax, log_softmax
                shifted = v - v.max(axis=-1, keepdims=True)
                total = np.exp(shifted).sum(axis=-1, keepdims=True)
                if op == 0:
                    result = np.exp(shifted) * (compute.type(1) / total)
                else:
                    result = shifted - np.log(total)
            elif op == 2:  # layer_norm
                centered = v - v.sum(axis=-1, keepdims=True) / n
                var = (centered * centered).sum(axis=-1, keepdims=True) / n
                result = centered * (compute.type(1) / np.sqrt(var + compute.type(eps)))
            else:  # rms_norm
                ms = (v * v).sum(axis=-1, keepdims=True) / n
                result = v * (compute.type(1) / np.sqrt(ms + compute.type(eps)))
            if op in (2, 3) and weight is not None:
                result = np.multiply(result, host_view(weight))
            if op == 2 and bias is not None:
                result = np.add(result, host_view(bias))
            np.copyto(host_view(out), result, casting="unsafe")

    def gemm(self, a: GPUArray, b: GPUArray, c: GPUArray, b_col_major: bool,
             bias: GPUArray | None, activation: int, precision: int, stream: Stream) -> None:
        """The CUDA runtime's product (both precisions compute in float32 here)."""
        with np.errstate(all="ignore"):
            _gemm(a, b, c, bias, activation)

    def gemm_last_kernel(self) -> str:
        """The CPU simulation runs NumPy's matmul."""
        return "numpy.matmul"

    def where(self, cond: GPUArray, a: GPUArray | None, b: GPUArray | None, a_scalar: Any,
              b_scalar: Any, out: GPUArray, compute: np.dtype[Any], stream: Stream) -> None:
        mask = host_view(cond) != 0
        result = np.where(mask, _operand(a, a_scalar, compute), _operand(b, b_scalar, compute))
        np.copyto(host_view(out), result, casting="unsafe")


def _gemm(a: GPUArray, b: GPUArray, c: GPUArray, bias: GPUArray | None, activation: int) -> None:
    """``c[i] = act(a[i] @ b[i] + bias)`` over 3-D views, in float32 (float64 for float64)."""
    compute = np.dtype(np.float64) if c.dtype == np.float64 else np.dtype(np.float32)
    result = np.matmul(host_view(a).astype(compute), host_view(b).astype(compute))
    if bias is not None:
        result += host_view(bias).astype(compute)
    if activation:
        # The C ABI's activation codes -> the unary kernels: relu, gelu (erf), gelu (tanh).
        result = _UNARY[{1: 12, 2: 14, 3: 13}[activation]](result)
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
