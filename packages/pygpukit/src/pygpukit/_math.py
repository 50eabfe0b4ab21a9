"""Elementwise math: the shared validation layer of both backends.

Type promotion is NumPy's, taken from the ufuncs themselves (``ufunc.resolve_dtypes``, with
Python scalars weak as NEP 50 says and bfloat16 promoted as ml_dtypes registers it), so results
have the dtype NumPy would give.  Each op runs in a compute type: float32 for float16 /
bfloat16 / float32 loops (as NumPy and ml_dtypes compute half types), float64, or int64 for
integer and bool loops (narrowed with wrap-around when stored).  The backends only execute:
``runtime.binary`` / ``runtime.unary`` / ``runtime.where`` on operands already broadcast to one
shape.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from pygpukit import _layout, _small
from pygpukit._array import GPUArray, hooks
from pygpukit._dtypes import (
    SUPPORTED_DTYPES,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    is_complex,
)
from pygpukit._fastpath import Kind, fast
from pygpukit._optable import (
    BINARY_OPS,
    REDUCE_OPS,
    binary_compute,
    compute_dtype,
    reduce_dtypes,
    resolve,
    unary_code,
)
from pygpukit._stream import stream_for_runtime
from pygpukit._transfer import _overlaps, check_same_device, copy_into, empty_on, fill, touch

if TYPE_CHECKING:
    from pygpukit._backend import Runtime
    from pygpukit._stream import Stream

_LOGICAL = {"logical_and", "logical_or", "logical_xor"}
_FLOATS = (float16, bfloat16, float32, float64)
Scalar = bool | int | float | np.generic


def _scalar_key(value: Any) -> Any:
    """What ``resolve_dtypes`` takes for an operand: a dtype, or a Python type (weak scalar)."""
    if isinstance(value, GPUArray):
        return value.dtype
    if isinstance(value, np.generic):
        return value.dtype
    if isinstance(value, bool):  # bool is the lowest kind: weak and strong agree
        return bool_
    if isinstance(value, int):
        return int
    if isinstance(value, float):
        return float
    return None


def _scalar_value(name: str, value: Any, loop: np.dtype[Any]) -> np.generic:
    """The scalar converted to the loop dtype (OverflowError as NumPy for out-of-range ints)."""
    try:
        return cast(np.generic, np.asarray(value, dtype=loop)[()])
    except OverflowError as exc:
        raise OverflowError(f"{name}: {exc}") from None


def _check_out(name: str, out: Any, shape: tuple[int, ...], result: np.dtype[Any],
               runtime: Runtime) -> None:
    if not isinstance(out, GPUArray):
        raise TypeError(f"{name}: out must be a GPUArray; got {type(out).__name__}")
    if out.shape != shape:
        raise ValueError(f"{name}: out has shape {out.shape}; the result has shape {shape}")
    if not np.can_cast(result, out.dtype, "same_kind"):
        raise TypeError(f"{name}: cannot cast the result from {result.name} to out's dtype "
                        f"{out.dtype.name} with casting rule 'same_kind'")
    if out._rt is not runtime:
        raise ValueError(f"{name}: out is on another device than the operands")


def _broadcast(array: GPUArray, shape: tuple[int, ...]) -> GPUArray:
    if array.shape == shape:
        return array
    strides = _layout.broadcast_strides(array.shape, array.strides, shape)
    return GPUArray(array._rt, array._block, array._offset, shape, strides, array.dtype)


def _needs_staging(out: GPUArray, *inputs: GPUArray) -> bool:
    """Whether ``out`` overlaps an input other than exactly (same start and strides)."""
    return any(_overlaps(x, out) and not (x._offset == out._offset and x.strides == out.strides)
               for x in inputs)


def _finish(name: str, out: GPUArray | None, shape: tuple[int, ...], result: np.dtype[Any],
            runtime: Runtime, inputs: tuple[GPUArray, ...],
            stream: Stream | None = None) -> tuple[GPUArray, GPUArray | None]:
    """Pick the array the kernel writes: ``out`` itself, or a temporary copied into it.

    ``stream``: the runtime's current stream when the caller has it already.
    """
    if stream is None:
        stream = stream_for_runtime(runtime)
    if out is None:
        return empty_on(runtime, shape, result, stream), None
    _check_out(name, out, shape, result, runtime)
    if out.dtype != result or _needs_staging(out, *inputs):
        return empty_on(runtime, shape, result, stream), out
    return out, None


_COMPARISONS = {"equal": operator.eq, "not_equal": operator.ne, "less": operator.lt,
                "less_equal": operator.le, "greater": operator.gt, "greater_equal": operator.ge}


def _out_of_range_comparison(name: str, a: Any, b: Any, array: GPUArray, value: int,
                             loop: np.dtype[Any], out: GPUArray | None) -> GPUArray:
    """An integer array compared with a Python int outside its dtype: one answer for all.

    NumPy 2 compares such values exactly (``int8_array == 128`` is all False) instead of
    converting the int; every in-range element compares alike, so the extreme stands for all.
    """
    limits = np.iinfo(loop)
    inside = int(limits.max) if value > limits.max else int(limits.min)
    left, right = (inside, value) if a is array else (value, inside)
    answer = bool(_COMPARISONS[name](left, right))
    target, final = _finish(name, out, array.shape, np.dtype(bool_), array._rt, (array,))
    fill(target, answer)
    if final is not None:
        copy_into(target, final)
        return final
    return target


def binary(name: str, a: Any, b: Any, out: GPUArray | None = None) -> GPUArray:
    """``name(a, b)`` elementwise with broadcasting; one of ``a`` / ``b`` may be a scalar."""
    if out is None and (fast := _small.binary(name, a, b)) is not None:
        return fast
    if is_complex(a) or is_complex(b):  # composed from the real kernels (pygpukit._complex)
        return hooks.complex.binary(name, a, b, out)
    code = BINARY_OPS[name][0]
    a_arr, b_arr = isinstance(a, GPUArray), isinstance(b, GPUArray)
    if not (a_arr or b_arr):
        raise TypeError(f"{name}: at least one operand must be a GPUArray; got "
                        f"{type(a).__name__} and {type(b).__name__}")
    keys = (_scalar_key(a), _scalar_key(b))
    for key, value in zip(keys, (a, b), strict=True):
        if key is None:
            raise TypeError(f"{name}: operands must be GPUArrays or bool/int/float scalars; "
                            f"got {type(value).__name__}")
    loop, result = resolve(name, keys)
    compute = binary_compute(name, keys, loop)
    scalar: Any = 0
    if a_arr and b_arr:
        runtime = check_same_device(a, b, op=name)
        shape = _layout.broadcast_shapes(a.shape, b.shape)
    else:
        array, value = (a, b) if a_arr else (b, a)
        runtime = array._rt
        shape = array.shape
        try:
            scalar = _scalar_value(name, value, loop)
        except OverflowError:  # a Python int outside an integer loop's range
            if name not in _COMPARISONS or loop.kind not in "iu":
                raise
            return _out_of_range_comparison(name, a, b, array, value, loop, out)
    if out is not None and isinstance(out, GPUArray) and out.shape != shape:
        shape = _layout.broadcast_shapes(shape, out.shape)
    inputs = (a, b) if a_arr and b_arr else (a,) if a_arr else (b,)
    stream = stream_for_runtime(runtime)
    target, final = _finish(name, out, shape, result, runtime, inputs, stream)
    va = _broadcast(a, shape) if a_arr else None
    vb = _broadcast(b, shape) if b_arr else None
    touch(stream, *inputs, written=target)
    if target.size:
        runtime.binary(code, va, vb, scalar, target, compute, stream)
    if final is not None:
        copy_into(target, final)
        return final
    return target


def unary(name: str, x: Any, out: GPUArray | None = None) -> GPUArray:
    """``name(x)`` elementwise."""
    if out is None and (fast := _small.unary(name, x)) is not None:
        return fast
    if not isinstance(x, GPUArray):
        raise TypeError(f"{name}: x must be a GPUArray; got {type(x).__name__}")
    if x.dtype.kind == "c":
        return hooks.complex.unary(name, x, out)
    loop, result = resolve(name, (x.dtype,))
    code = unary_code(name, loop)
    runtime = x._rt
    stream = stream_for_runtime(runtime)
    target, final = _finish(name, out, x.shape, result, runtime, (x,), stream)
    touch(stream, x, written=target)
    if target.size:
        runtime.unary(code, x, target, compute_dtype(loop), stream)
    if final is not None:
        copy_into(target, final)
        return final
    return target


@fast(Kind.WHERE, "where")
def where(cond: GPUArray, a: Any, b: Any, *, out: GPUArray | None = None) -> GPUArray:
    """Elements of ``a`` where ``cond`` is true, else of ``b`` (NumPy's ``where``)."""
    if out is None and (fast := _small.where(cond, a, b)) is not None:
        return fast
    if not isinstance(cond, GPUArray):
        raise TypeError(f"where: cond must be a GPUArray; got {type(cond).__name__}")
    if is_complex(a) or is_complex(b) or cond.dtype.kind == "c":
        return hooks.complex.where(cond, a, b, out)
    keys = (_scalar_key(a), _scalar_key(b))
    for key, value in zip(keys, (a, b), strict=True):
        if key is None:
            raise TypeError(f"where: operands must be GPUArrays or bool/int/float scalars; "
                            f"got {type(value).__name__}")
    try:  # Python scalars are weak in NumPy 2's result_type (NEP 50)
        result = np.result_type(*(k if isinstance(k, np.dtype) else v
                                  for k, v in zip(keys, (a, b), strict=True)))
    except TypeError as exc:
        raise TypeError(f"where: no common dtype ({exc})") from None
    if result not in SUPPORTED_DTYPES:
        raise TypeError(f"where: NumPy gives dtype {result.name}, which PyGPUkit does not hold")
    arrays = [x for x in (cond, a, b) if isinstance(x, GPUArray)]
    runtime = check_same_device(*arrays, op="where")
    shape = _layout.broadcast_shapes(*(x.shape for x in arrays))
    scalars = [0 if isinstance(v, GPUArray) else _scalar_value("where", v, result)
               for v in (a, b)]
    stream = stream_for_runtime(runtime)
    target, final = _finish("where", out, shape, result, runtime, tuple(arrays), stream)
    views = [_broadcast(v, shape) if isinstance(v, GPUArray) else None for v in (cond, a, b)]
    touch(stream, *arrays, written=target)
    if target.size:
        runtime.where(views[0], views[1], views[2], scalars[0], scalars[1], target,
                      compute_dtype(result), stream)
    if final is not None:
        copy_into(target, final)
        return final
    return target


# -- reductions ----------------------------------------------------------------------------------

_NEEDS_ELEMENTS = {"max": "maximum", "min": "minimum", "argmax": "argmax", "argmin": "argmin"}


def _axes(axis: Any, ndim: int, name: str) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    raw = axis if isinstance(axis, tuple) else (axis,)
    axes = tuple(_layout.normalize_axis(a, ndim) for a in raw)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: duplicate value in 'axis'")
    return axes


def _chunks(nout: int, nred: int) -> int:
    """Chunks per output for the two-pass path: a function of the shape only (determinism).

    About 512 work items in all (long contiguous chunks of at least 16384 elements): on an H200
    a full float32 sum of 256 MiB ran 6% faster with 512 chunks than with 2048 (fewer block
    starts and partials to combine, each block streaming 512 KiB).
    """
    if nout >= 1024 or nred < 16384:
        return 1
    return int(min(512, -(-512 // nout), -(-nred // 16384)))


class _ReducePlan:
    """What a reduction over one (op, dtype, shape, strides, axis, keepdims) launches with.

    Everything but the arrays: the dtypes, the view of ``x`` with the reduced dims last, the
    result's shapes, the two-pass split and its workspace.  Made once per key and reused (dask
    reduces chunk after chunk of one layout); an invalid call raises while the plan is made,
    so no plan exists for it.
    """

    __slots__ = ("chunks", "compute", "dense_strides", "final_shape", "final_strides", "nred_dims",
                 "op", "out_shape", "result", "view_shape", "view_strides", "workspace")

    def __init__(self, name: str, dtype: np.dtype[Any], shape: tuple[int, ...],
                 strides: tuple[int, ...], axis: Any, keepdims: bool) -> None:
        result, compute = reduce_dtypes(name, dtype)
        ndim = len(shape)
        axes = _axes(axis, ndim, name)
        kept = tuple(d for d in range(ndim) if d not in axes)
        nred = 1
        for d in axes:
            nred *= shape[d]
        out_shape = tuple(shape[d] for d in kept)
        if nred == 0 and name in _NEEDS_ELEMENTS:  # NumPy raises even when the result is empty
            if name.startswith("arg"):
                raise ValueError(f"attempt to get {name} of an empty sequence")
            raise ValueError(f"zero-size array to reduction operation {_NEEDS_ELEMENTS[name]} "
                             "which has no identity")
        full_shape = tuple(1 if d in axes else shape[d] for d in range(ndim))
        final_shape = full_shape if keepdims else out_shape
        if name in ("argmax", "argmin") and axis is None:
            final_shape = (1,) * ndim if keepdims else ()
        order = kept + axes if name not in ("argmax", "argmin") or axis is not None else axes
        self.op = REDUCE_OPS[name]
        self.result = result
        self.compute = compute
        self.nred_dims = len(axes)
        self.final_shape = final_shape
        self.out_shape = out_shape
        self.view_shape = tuple(shape[d] for d in order)
        self.view_strides = tuple(strides[d] for d in order)
        # The kernel writes the kept dims densely: a new result (C strides) seen as out_shape,
        # with the strides GPUArray.reshape would give it.
        self.final_strides = _layout.c_strides(final_shape, result.itemsize)
        self.dense_strides = _layout.reshape_strides(final_shape, self.final_strides, out_shape,
                                                     result.itemsize)
        nout = math_prod(out_shape)
        self.chunks = _chunks(max(1, nout), nred)
        self.workspace = nout * self.chunks * 32 if self.chunks > 1 else 0


_REDUCE_PLANS: dict[tuple[Any, ...], _ReducePlan] = {}
_REDUCE_PLANS_MAX = 4096


def _int_tuple(axis: tuple[Any, ...]) -> bool:
    return all(a.__class__ is int for a in axis)


def _reduce_plan(name: str, x: GPUArray, axis: Any, keepdims: bool) -> _ReducePlan:
    kind = axis.__class__
    if not (axis is None or kind is int or (kind is tuple and _int_tuple(axis))):
        # Other spellings (NumPy ints, lists; floats, which must raise) are not keys: ``1.0``
        # and ``(1.0,)`` hash and compare like ``1`` and ``(1,)``.
        return _ReducePlan(name, x.dtype, x.shape, x.strides, axis, keepdims)
    key = (name, x.dtype, x.shape, x.strides, axis, keepdims)
    try:
        plan = _REDUCE_PLANS.get(key)
    except TypeError:  # an unhashable keepdims: refused (or taken) by the plan itself
        return _ReducePlan(name, x.dtype, x.shape, x.strides, axis, keepdims)
    if plan is None:
        plan = _ReducePlan(name, x.dtype, x.shape, x.strides, axis, keepdims)
        if len(_REDUCE_PLANS) >= _REDUCE_PLANS_MAX:
            _REDUCE_PLANS.clear()
        _REDUCE_PLANS[key] = plan
    return plan


def reduce(name: str, x: Any, axis: Any = None, keepdims: bool = False, *, ddof: float = 0,
           out: GPUArray | None = None) -> GPUArray:
    """Reduction ``name`` of ``x`` over ``axis`` (int, tuple or None), NumPy's semantics."""
    if axis is None and out is None and (
            fast := _small.reduce_all(name, x, keepdims, ddof)) is not None:
        return fast
    if not isinstance(x, GPUArray):
        raise TypeError(f"{name}: x must be a GPUArray; got {type(x).__name__}")
    if x.dtype.kind == "c":
        return hooks.complex.reduce(name, x, axis, keepdims, ddof, out)
    if name in ("argmax", "argmin") and isinstance(axis, tuple):
        raise TypeError(f"{name}: axis must be an int or None")
    plan = _reduce_plan(name, x, axis, keepdims)
    result = plan.result
    final_shape = plan.final_shape
    out_shape = plan.out_shape
    runtime = x._rt
    stream = stream_for_runtime(runtime)
    target, final = _finish(name, out, final_shape, result, runtime, (x,), stream)
    if final is None and out is not None and not target.is_contiguous():
        final, target = target, empty_on(runtime, final_shape, result, stream)
    view = GPUArray(runtime, x._block, x._offset, plan.view_shape, plan.view_strides, x.dtype)
    if target.shape == out_shape or not target.size:
        dense = target
    elif target.strides == plan.final_strides and plan.dense_strides is not None:
        dense = GPUArray(runtime, target._block, target._offset, out_shape, plan.dense_strides,
                         result)  # target.reshape(out_shape), without working it out again
    else:
        dense = target.reshape(out_shape)
    workspace = (empty_on(runtime, (plan.workspace,), np.dtype(np.uint8), stream)
                 if plan.chunks > 1 else None)
    touch(stream, x, *([workspace] if workspace is not None else []), written=target)
    if target.size:
        runtime.reduce(plan.op, view, plan.nred_dims, dense, plan.compute, float(ddof),
                       workspace, plan.chunks, stream)
    if final is not None:
        copy_into(target, final)
        return final
    return target


def math_prod(shape: tuple[int, ...]) -> int:
    """Number of elements of ``shape``."""
    n = 1
    for d in shape:
        n *= d
    return n
