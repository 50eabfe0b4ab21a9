"""Arithmetic on arrays: argument checking, then the device runtime launches the kernel."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from pygpukit import _array, _complex, _dlpack, _fastpath, _fp8, _layout, _linalg, _small, _transfer
from pygpukit._array import GPUArray
from pygpukit._dtypes import bfloat16, float16, float32, float64, is_fp8
from pygpukit._fastpath import Kind, fast
from pygpukit._indexing import where  # where(cond, a, b), and where(cond) == nonzero(cond)
from pygpukit._math import binary, reduce, unary
from pygpukit._optable import ROW_NORMS
from pygpukit._stream import stream_for_runtime
from pygpukit._transfer import check_same_device, copy_into, empty_on, touch

if TYPE_CHECKING:
    from pygpukit._backend import Runtime


@fast(Kind.BINARY, "add")
def add(a: Any, b: Any, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise ``a + b``, enqueued on the current stream; returns without waiting.

    Parameters
    ----------
    a, b
        Arrays on one device (any strides, broadcast as NumPy does) or one of them a Python /
        NumPy scalar (Python scalars are weak, NEP 50).  The result dtype is NumPy's.
    out
        Optional array of the broadcast shape to write into (the result is cast to its dtype
        with ``same_kind`` casting); it may be ``a`` or ``b``.

    Raises
    ------
    TypeError
        If an operand is not a GPUArray or scalar, or NumPy has no loop for the dtypes.
    ValueError
        If the shapes do not broadcast or the operands are on different devices.
    OverflowError
        If a Python int does not fit the array's integer dtype.
    """
    return binary("add", a, b, out)


def _binary_function(name: str) -> Callable[..., GPUArray]:
    def op(a: Any, b: Any, *, out: GPUArray | None = None) -> GPUArray:
        return binary(name, a, b, out)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"Elementwise NumPy ``{name}(a, b)`` with broadcasting, scalars and ``out=`` "
                  "(see :func:`add`).")
    return fast(Kind.BINARY, name)(op)


def _unary_function(name: str, kernel: str | None = None) -> Callable[..., GPUArray]:
    def op(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
        return unary(kernel or name, x, out)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise ``{name}(x)`` (NumPy's result dtype; half types in float32)."
    return fast(Kind.UNARY, kernel or name)(op)

subtract = _binary_function("subtract")
multiply = _binary_function("multiply")
divide = _binary_function("divide")
maximum = _binary_function("maximum")
minimum = _binary_function("minimum")
power = _binary_function("power")
floor_divide = _binary_function("floor_divide")
remainder = _binary_function("remainder")
equal = _binary_function("equal")
not_equal = _binary_function("not_equal")
less = _binary_function("less")
less_equal = _binary_function("less_equal")
greater = _binary_function("greater")
greater_equal = _binary_function("greater_equal")
logical_and = _binary_function("logical_and")
logical_or = _binary_function("logical_or")
logical_xor = _binary_function("logical_xor")
bitwise_and = _binary_function("bitwise_and")
bitwise_or = _binary_function("bitwise_or")
bitwise_xor = _binary_function("bitwise_xor")
true_divide = divide
sub = subtract
mul = multiply
div = divide
mod = remainder

negative = _unary_function("negative")
absolute = _unary_function("absolute")
exp = _unary_function("exp")
log = _unary_function("log")
log1p = _unary_function("log1p")
expm1 = _unary_function("expm1")
sqrt = _unary_function("sqrt")
rsqrt = _unary_function("rsqrt")
sin = _unary_function("sin")
cos = _unary_function("cos")
tanh = _unary_function("tanh")
sigmoid = _unary_function("sigmoid")
relu = _unary_function("relu")
silu = _unary_function("silu")
floor = _unary_function("floor")
ceil = _unary_function("ceil")
sign = _unary_function("sign")
isnan = _unary_function("isnan")
isinf = _unary_function("isinf")
logical_not = _unary_function("logical_not")
invert = _unary_function("invert")
square = _unary_function("square")
reciprocal = _unary_function("reciprocal")
abs = absolute
rint = _unary_function("rint")


def round(x: GPUArray, decimals: int = 0, *, out: GPUArray | None = None) -> GPUArray:
    """Round to the nearest integer, halves to even (NumPy's ``round`` with ``decimals=0``)."""
    if decimals != 0:
        raise ValueError("round: only decimals=0 is supported")
    return unary("rint", x, out)


def gelu(x: GPUArray, approximate: str = "none", *, out: GPUArray | None = None) -> GPUArray:
    """GELU: ``x * Phi(x)`` with the erf (``approximate="none"``) or tanh form (``"tanh"``)."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh'; got {approximate!r}")
    return unary("gelu_tanh" if approximate == "tanh" else "gelu_erf", x, out)


def clip(a: GPUArray, lo: Any, hi: Any, *, out: GPUArray | None = None) -> GPUArray:
    """``minimum(maximum(a, lo), hi)``; ``lo`` / ``hi`` may be ``None`` (no bound)."""
    if lo is None and hi is None:
        raise ValueError("clip: one of lo and hi must be given")
    result = a
    if lo is not None:
        result = binary("maximum", result, lo, None if hi is not None else out)
    if hi is not None:
        result = binary("minimum", result, hi, out)
    return result


def _reduction(name: str) -> Callable[..., GPUArray]:
    def op(x: GPUArray, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, *,
           out: GPUArray | None = None) -> GPUArray:
        return reduce(name, x, axis, keepdims, out=out)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"NumPy's ``{name}`` over ``axis`` (int, tuple or None), ``keepdims``; "
                  "deterministic (no atomics), float32 accumulation for half types.")
    return fast(Kind.REDUCE, name)(op)


def _statistic(name: str) -> Callable[..., GPUArray]:
    def op(x: GPUArray, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, *,
           ddof: float = 0, out: GPUArray | None = None) -> GPUArray:
        return reduce(name, x, axis, keepdims, ddof=ddof, out=out)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"NumPy's ``{name}`` (divisor ``n - ddof``) over ``axis``, ``keepdims``; "
                  "deterministic (pairwise combination of (count, mean, M2) partials).")
    return fast(Kind.REDUCE, name)(op)


def _arg_reduction(name: str) -> Callable[..., GPUArray]:
    def op(x: GPUArray, axis: int | None = None, keepdims: bool = False, *,
           out: GPUArray | None = None) -> GPUArray:
        return reduce(name, x, axis, keepdims, out=out)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"NumPy's ``{name}``: int64 index of the first extreme (NaN counts as one) "
                  "along ``axis``, or into the flattened array when ``axis`` is None.")
    return fast(Kind.REDUCE, name)(op)


sum = _reduction("sum")
prod = _reduction("prod")
max = _reduction("max")
min = _reduction("min")
amax = max
amin = min
mean = _reduction("mean")
any = _reduction("any")
all = _reduction("all")
var = _statistic("var")
std = _statistic("std")
argmax = _arg_reduction("argmax")
argmin = _arg_reduction("argmin")

__all__ = [
    "abs", "absolute", "add", "all", "amax", "amin", "any", "argmax", "argmin", "bitwise_and",
    "bitwise_or", "bitwise_xor", "ceil", "clip", "cos", "div", "divide", "equal", "exp", "expm1",
    "floor", "floor_divide", "gelu", "greater", "greater_equal", "invert", "isinf", "isnan",
    "less", "less_equal", "log", "log1p", "logical_and", "logical_not", "logical_or",
    "logical_xor", "max", "maximum", "mean", "min", "minimum", "mod", "mul", "multiply",
    "negative", "not_equal", "power", "prod", "reciprocal", "relu", "remainder", "rint", "round",
    "rsqrt", "sigmoid", "sign", "silu", "sin", "sqrt", "square", "std", "sub", "subtract", "sum",
    "tanh", "true_divide", "var", "where",
]


# -- row-wise normalizations: one fused kernel per call (pgk_row_norm) ------------------------


def _affine(name: str, what: str, value: Any, cols: int, compute: np.dtype[Any],
            runtime: Runtime) -> GPUArray | None:
    """``weight`` / ``bias`` as a 1-D view of ``cols`` elements of the compute dtype."""
    from pygpukit._math import _broadcast

    if value is None:
        return None
    if not isinstance(value, GPUArray):
        raise TypeError(f"{name}: {what} must be a GPUArray or None; got {type(value).__name__}")
    if value._rt is not runtime:
        raise ValueError(f"{name}: {what} is on another device than x")
    shape = value.shape
    while shape and shape[0] == 1 and len(shape) > 1:
        shape = shape[1:]
    if len(shape) > 1 or (shape and shape[0] not in (1, cols)):
        raise ValueError(f"{name}: {what} of shape {value.shape} does not broadcast to the "
                         f"normalized axis of length {cols}")
    flat = value.reshape(shape) if shape != value.shape else value
    if flat.ndim == 0:
        flat = flat.reshape(1)
    if flat.dtype != compute:
        flat = flat.astype(compute)
    return _broadcast(flat, (cols,))


def _row_norm(name: str, x: Any, axis: int, weight: Any = None, bias: Any = None,
              eps: float = 0.0) -> GPUArray:
    """Apply row normalization ``name`` along ``axis``: one pass per row (fused kernel).

    Computed in float32 for float16 / bfloat16 / float32 (float64 for float64); weight and bias
    are converted to that type; the result has x's dtype and shape.
    """
    from pygpukit._math import math_prod

    if ((axis == -1 or (type(x) is GPUArray and axis == x.ndim - 1))
            and (fast := _small.row_norm(ROW_NORMS[name], x, weight, bias, eps)) is not None):
        return fast
    if not isinstance(x, GPUArray):
        raise TypeError(f"{name}: x must be a GPUArray; got {type(x).__name__}")
    if x.dtype not in (float16, bfloat16, float32, float64):
        raise TypeError(f"{name}: expected a floating dtype; got {x.dtype.name}")
    if x.ndim == 0:
        raise ValueError(f"{name}: x must have at least one dimension")
    eps = float(eps)
    if not eps >= 0.0:
        raise ValueError(f"{name}: eps must be >= 0; got {eps}")
    ax = _layout.normalize_axis(axis, x.ndim)
    last = x.ndim - 1
    view = x if ax == last else x.swapaxes(ax, last)
    cols = view.shape[-1]
    rows = math_prod(view.shape[:-1])
    runtime = x._rt
    compute = float64 if x.dtype == float64 else float32
    w = _affine(name, "weight", weight, cols, compute, runtime)
    b = _affine(name, "bias", bias, cols, compute, runtime)
    stream = stream_for_runtime(runtime)
    x2 = view.reshape(rows, cols)  # a view when the leading dims merge, else a copy
    out = empty_on(runtime, (rows, cols), x.dtype, stream)
    touch(stream, x2, *(v for v in (w, b) if v is not None), written=out)
    if out.size:
        runtime.row_norm(ROW_NORMS[name], x2, w, b, eps, out, stream)
    result = out.reshape(view.shape)
    return result if ax == last else result.swapaxes(ax, last)


@fast(Kind.ROW_NORM, "softmax")
def softmax(x: GPUArray, axis: int = -1) -> GPUArray:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (half types computed in float32).

    One fused kernel per call: each row is read once and written once (rows longer than the
    registers hold are read twice).  NaN propagates; a row of -inf gives NaN.
    """
    return _row_norm("softmax", x, axis)


@fast(Kind.ROW_NORM, "log_softmax")
def log_softmax(x: GPUArray, axis: int = -1) -> GPUArray:
    """``(x - max) - log(sum(exp(x - max)))`` along ``axis`` (half types in float32)."""
    return _row_norm("log_softmax", x, axis)


def layer_norm(x: GPUArray, weight: GPUArray | None = None, bias: GPUArray | None = None,
               eps: float = 1e-5) -> GPUArray:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axis (half in float32).

    ``var`` divides by the row length (biased, as torch).  ``weight`` / ``bias`` broadcast to
    the last axis (shape ``(n,)``, ``(1,)`` or with leading 1s); they are converted to the
    compute dtype (float32, float64 for float64 x).  The result has x's dtype.
    """
    return _row_norm("layer_norm", x, -1, weight, bias, eps)


def rms_norm(x: GPUArray, weight: GPUArray | None = None, eps: float = 1e-6) -> GPUArray:
    """``x / sqrt(mean(x**2) + eps) * weight`` over the last axis (half types in float32)."""
    return _row_norm("rms_norm", x, -1, weight, None, eps)


def _array_list(arrays: Any, op: str) -> list[GPUArray]:
    """The non-empty list of GPUArrays that ``concatenate``/``stack`` take, or a clear error."""
    items = list(arrays)
    if not items:
        raise ValueError(f"need at least one array to {op}")
    for item in items:
        if not isinstance(item, GPUArray):
            raise TypeError(f"{op}: expected GPUArrays; got {type(item).__name__}")
    return items


def concatenate(arrays: Any, axis: int = 0) -> GPUArray:
    """Join arrays along an existing axis (NumPy's ``concatenate``; dtypes promoted)."""
    items = _array_list(arrays, "concatenate")
    runtime = check_same_device(*items, op="concatenate")
    ref = items[0].shape
    ndim = len(ref)
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    ax = _layout.normalize_axis(axis, ndim)
    for item in items:
        dims = item.shape
        if len(dims) != ndim or dims[:ax] != ref[:ax] or dims[ax + 1:] != ref[ax + 1:]:
            raise ValueError("all the input array dimensions except for the concatenation axis "
                             "must match exactly")
    first = items[0].dtype
    dtype = (first if builtins.all(item.dtype is first for item in items)
             else np.result_type(*(item.dtype for item in items)))
    shape = list(items[0].shape)
    shape[ax] = builtins.sum(item.shape[ax] for item in items)
    stream = stream_for_runtime(runtime)
    result = empty_on(runtime, tuple(shape), dtype, stream)
    if dtype.kind != "c":
        # Each item is copied into its slab of the new result as copy_into would (same
        # shapes, nothing to broadcast, no overlap with a new array): one touch for all
        # and a copy per item, without copy_into's checks and basic indexing per item.
        touch(stream, *items, written=result)
        strides = result.strides
        step = strides[ax]
        start = 0
        for item in items:
            if item.size:
                runtime.copy(item, GPUArray(runtime, result._block, start * step, item.shape,
                                            strides, dtype), stream)
            start += item.shape[ax]
        return result
    start = 0
    for item in items:
        index = tuple(slice(start, start + item.shape[ax]) if d == ax else slice(None)
                      for d in range(ndim))
        copy_into(item, result[index])
        start += item.shape[ax]
    return result


def stack(arrays: Any, axis: int = 0) -> GPUArray:
    """Join arrays along a new axis (NumPy's ``stack``)."""
    items = _array_list(arrays, "stack")
    if builtins.any(item.shape != items[0].shape for item in items):
        raise ValueError("all input arrays must have the same shape")
    ax = _layout.normalize_axis(axis, items[0].ndim + 1)
    return concatenate([item.expand_dims(ax) for item in items], axis=ax)


__all__ += ["concatenate", "layer_norm", "log_softmax", "rms_norm", "softmax", "stack"]


# -- GPUArray's methods reach the layers above through these hooks (see _array._Hooks) -------
def _astype(x: GPUArray, dtype: np.dtype[Any]) -> GPUArray:
    """``x.astype(dtype)`` into a new array: the small-array kernel, else the copy kernels."""
    if x.dtype.kind == "c" or dtype.kind == "c":
        return _array.hooks.complex.astype(x, dtype)
    if (is_fp8(x.dtype) or is_fp8(dtype)) and x.dtype != dtype:
        out = empty_on(x._rt, x.shape, dtype)
        _fp8.cast_into(x, out)
        return out
    if is_fp8(x.dtype):  # a same-dtype copy: bytes
        out = empty_on(x._rt, x.shape, dtype)
        copy_into(x, out)
        return out
    fast = _small.astype(x, dtype)
    if fast is not None:
        return fast
    out = empty_on(x._rt, x.shape, dtype)
    copy_into(x, out)
    return out


def _attach_hooks() -> None:
    hooks = _array.hooks
    hooks.assign = _transfer.assign
    hooks.astype = _astype
    hooks.to_numpy = _transfer.to_numpy
    hooks.to_device = _transfer.to_device
    hooks.export_capsule = _dlpack.export_capsule
    hooks.device_tuple = _dlpack.device_tuple
    hooks.cuda_array_interface = _dlpack.cuda_array_interface
    hooks.matmul = _linalg.matmul
    hooks.fp8_cast_into = _fp8.cast_into
    hooks.binary = binary
    hooks.small_binary = _small.binary
    hooks.unary = unary
    hooks.reduce = reduce
    hooks.complex = _complex.OPS  # complex dtypes: composed from the real kernels
    _fastpath.install_operators()


_attach_hooks()
