"""Small arrays: one cached plan per (op, dtypes), one prepared launch per op.

For arrays of a few thousand elements the device work is nothing and the host's cost is
everything.  Here an op on contiguous operands looks up a plan made once per (op, operand
dtypes) — NumPy's type resolution, the kernel, the dtype codes, the scalar conversion — and
launches a kernel of ``pygpukit_kernels``' ``small_ops`` fatbin through the driver binding's
prepared launcher (``Launcher.launch(grid, stream, *args)``: arguments packed in C).  Each
function returns ``None`` when its path does not apply (another layout, a large array, an
``out=``, the CPU backend): the caller then takes the general path, which checks everything and
raises the errors.  Elementwise results equal the general path's bit for bit (same loads,
conversions and ops); reductions and row norms combine in their own fixed order (deterministic).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from pygpukit import _layout, _spill
from pygpukit._array import GPUArray
from pygpukit._dtypes import (
    SUPPORTED_DTYPES,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    int64,
    kernel_code,
)
from pygpukit._optable import (
    BINARY_OPS,
    REDUCE_OPS,
    binary_compute,
    compute_dtype,
    reduce_dtypes,
    resolve,
    unary_code,
)
from pygpukit._stream import Stream, stream_for_runtime

#: Largest element count of the elementwise / cast path (the small kernels are not
#: vectorized: beyond this the bandwidth-tuned kernels of the C ABI win).
EW_MAX = 1 << 16
#: Largest element count a one-block reduction takes (larger ones use the two-pass kernels).
REDUCE_MAX = 1 << 14
#: Largest row length of the one-block-per-row normalizations, and most elements in all
#: (larger inputs take the bandwidth-tuned kernels of the C ABI).
NORM_MAX_COLS = 4096
NORM_MAX_ELEMENTS = EW_MAX
_GRID_MAX = 1024
_KIND_BINARY, _KIND_UNARY, _KIND_WHERE = 0, 1, 2
_INT_RANGES = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
               for t in (np.int8, np.uint8, np.int16, np.int32, np.int64)}
_SCALAR_TYPES = (bool, int, float)


def _grid(n: int) -> int:
    return min(_GRID_MAX, (n + 255) >> 8)


def _empty(rt: Any, shape: tuple[int, ...], dtype: np.dtype[Any], n: int,
           stream: Stream) -> GPUArray:
    """A new C-contiguous array of ``n`` elements, allocated for ``stream``."""
    pool = stream._pool  # a graph's private pool while it is captured
    block = (rt.allocator if pool is None else pool).malloc(n * dtype.itemsize, stream)
    return GPUArray(rt, block, 0, shape, _layout.c_strides(shape, dtype.itemsize), dtype, True)


def _run(rt: Any, launch: Callable[..., None], args: tuple[Any, ...]) -> None:
    """Launch; if that fails, make the device's context current and launch once more.

    The small kernels' module lives in the device's primary context, which another library
    (or a new thread, which has none) may have left not current: the first launch then fails
    and the retry succeeds.  A real launch error fails twice and propagates.
    """
    try:
        launch(*args)
    except Exception:
        _relaunch(rt, launch, args)


def _relaunch(rt: Any, launch: Callable[..., None], args: tuple[Any, ...]) -> None:
    """The retry of :func:`_run`: the device's context made current, then the launch again."""
    rt.activate()
    launch(*args)


def _use(stream: Stream, *arrays: GPUArray) -> None:
    """Note that ``stream`` reads these arrays (the allocator's cross-stream bookkeeping)."""
    keep = stream._keep  # a graph being captured keeps what it uses alive
    for v in arrays:
        block = v._block
        if block.stream is not stream:
            block.record_stream(stream)
            if keep is not None:
                keep.append(block)


def _scalar_converter(loop: np.dtype[Any]) -> Callable[[Any], Any]:
    """Python scalar -> the kernel's scalar argument, as the general path converts it.

    Gives ``None`` for a value the fast path leaves to the general path (an int outside the
    loop's range, for which NumPy raises OverflowError).
    """
    if loop in (float32, float64):
        return float
    if loop in (float16, bfloat16):
        kind = loop.type
        return lambda v: float(kind(v))  # rounded to the half type first, as NumPy does
    if loop == bool_:
        return lambda v: int(bool(v))
    lo, hi = _INT_RANGES[loop]
    return lambda v: v if lo <= v <= hi else None


def _slot(compute: np.dtype[Any]) -> str:
    """The runtime's launcher for a compute dtype."""
    return "ew_f32" if compute == float32 else "ew_f64" if compute == float64 else "ew_i64"


class _EwPlan:
    """One elementwise op over fixed operand dtypes (a scalar operand: its Python type)."""

    __slots__ = ("codes", "convert", "op", "out_code", "out_dtype", "scalars", "slot")

    def __init__(self, slot: str, op: int, out_dtype: np.dtype[Any], codes: tuple[int, ...],
                 scalars: tuple[bool, ...], convert: Callable[[Any], Any] | None) -> None:
        self.slot = slot            # the runtime's launcher attribute: ew_f32 / ew_f64 / ew_i64
        self.op = op
        self.out_dtype = out_dtype
        self.out_code = kernel_code(out_dtype)
        self.codes = codes          # dtype code of each operand (0 for a scalar)
        self.scalars = scalars      # which operands are Python scalars
        self.convert = convert


def _key(value: Any) -> Any:
    """Plan-cache key of an operand: its dtype, or its Python scalar type (None: neither)."""
    if type(value) is GPUArray:
        return value.dtype
    t = type(value)
    return t if t in _SCALAR_TYPES else None


_PLANS: dict[tuple[Any, ...], _EwPlan | None] = {}


def _binary_plan(name: str, ka: Any, kb: Any) -> _EwPlan | None:
    keys = tuple(bool_ if k is bool else k for k in (ka, kb))
    plan: _EwPlan | None = None
    try:
        loop, result = resolve(name, keys)
    except TypeError:
        pass  # the general path raises
    else:
        compute = binary_compute(name, keys, loop)
        scalars = (not isinstance(ka, np.dtype), not isinstance(kb, np.dtype))
        codes = tuple(0 if s else kernel_code(k) for s, k in zip(scalars, keys, strict=True))
        plan = _EwPlan(_slot(compute), BINARY_OPS[name][0], result, codes, scalars,
                       _scalar_converter(loop) if any(scalars) else None)
    _PLANS[(name, ka, kb)] = plan
    return plan


_MISSING: Any = object()


def _spilling(*values: Any) -> bool:
    """Whether an operand is an array of a spill-enabled partition (``_spill.active`` only).

    Those take the general path, whose :func:`~pygpukit._transfer.touch` stamps, holds and
    restores them (this path reads addresses before it allocates the result).
    """
    return any(type(v) is GPUArray and v._block.tracked for v in values)


def binary(name: str, a: Any, b: Any) -> GPUArray | None:
    """``name(a, b)`` for contiguous arrays of one shape, or an array and a Python scalar.

    One operand may also be a single element of no more dimensions than the other (read with
    step 0, broadcast to the other's shape).  The hottest path of the package: written out
    inline (no helper calls on the way).
    """
    ta, tb = type(a), type(b)
    plan = _PLANS.get((name, a.dtype if ta is GPUArray else ta,
                       b.dtype if tb is GPUArray else tb), _MISSING)
    if plan is _MISSING:
        ka, kb = _key(a), _key(b)
        if ka is None or kb is None or (ta is not GPUArray and tb is not GPUArray):
            return None
        plan = _binary_plan(name, ka, kb)
    if plan is None:
        return None
    sa_scalar, sb_scalar = plan.scalars
    sa: Any = 0
    sb: Any = 0
    step_a = step_b = 1
    if sa_scalar:
        x = b
        sa = plan.convert(a)
        if sa is None:
            return None
    elif sb_scalar:
        x = a
        sb = plan.convert(b)
        if sb is None:
            return None
    else:
        x = a
        if b._rt is not a._rt:
            return None
        if b.shape != a.shape:  # one element broadcast (step 0) to the other's shape
            if b.size == 1 and b.ndim <= a.ndim:
                step_b = 0
            elif a.size == 1 and a.ndim <= b.ndim:
                x, step_a = b, 0
            else:
                return None
        elif not b._contig:
            return None
    rt = x._rt
    launch = rt.small.get(plan.slot)
    shape = x.shape
    n = math.prod(shape)
    if launch is None or not x._contig or n > EW_MAX or not n:
        return None
    if _spill.active and _spilling(a, b):
        return None
    stream = stream_for_runtime(rt)
    dtype = plan.out_dtype
    pool = stream._pool
    block = (rt.allocator if pool is None else pool).malloc(n * dtype.itemsize, stream)
    out = GPUArray(rt, block, 0, shape, _layout.c_strides(shape, dtype.itemsize), dtype, True)
    pa = pb = 0
    if not sa_scalar:
        blk = a._block
        pa = blk.address + a._offset
        if blk.stream is not stream:
            _use(stream, a)
    if not sb_scalar:
        blk = b._block
        pb = blk.address + b._offset
        if blk.stream is not stream:
            _use(stream, b)
    ca, cb = plan.codes
    args = (n + 255 >> 8 if n < 262144 else _GRID_MAX, stream.launch_handle(), _KIND_BINARY,
            plan.op, block.address, plan.out_code, pa, ca, step_a, pb, cb, step_b, 0, 0, 0, sa,
            sb, n)
    try:
        launch(*args)
    except Exception:
        _relaunch(rt, launch, args)
    return out


def _unary_plan(name: str, dtype: np.dtype[Any]) -> _EwPlan | None:
    plan: _EwPlan | None = None
    try:
        loop, result = resolve(name, (dtype,))
    except TypeError:
        pass
    else:
        plan = _EwPlan(_slot(compute_dtype(loop)), unary_code(name, loop), result,
                       (kernel_code(dtype),), (False,), None)
    _PLANS[(name, dtype)] = plan
    return plan


def unary(name: str, x: Any) -> GPUArray | None:
    """``name(x)`` for a contiguous array."""
    if type(x) is not GPUArray:
        return None
    plan = _PLANS.get((name, x.dtype), _MISSING)
    if plan is _MISSING:
        plan = _unary_plan(name, x.dtype)
    if plan is None:
        return None
    rt = x._rt
    launch = rt.small.get(plan.slot)
    shape = x.shape
    n = math.prod(shape)
    if launch is None or not x._contig or n > EW_MAX or not n:
        return None
    if _spill.active and _spilling(x):
        return None
    stream = stream_for_runtime(rt)
    out = _empty(rt, shape, plan.out_dtype, n, stream)
    blk = x._block
    if blk.stream is not stream:
        _use(stream, x)
    _run(rt, launch, (n + 255 >> 8 if n < 262144 else _GRID_MAX, stream.launch_handle(),
                      _KIND_UNARY, plan.op, out._block.address, plan.out_code,
                      blk.address + x._offset, plan.codes[0], 1, 0, 0, 0, 0, 0, 0, 0, 0, n))
    return out


def _where_plan(kc: Any, ka: Any, kb: Any) -> _EwPlan | None:
    plan: _EwPlan | None = None
    keys = (ka, kb)
    try:  # Python scalars are weak in NumPy 2's result_type (NEP 50)
        result = np.result_type(*(k if isinstance(k, np.dtype) else k(0) for k in keys))
    except TypeError:
        result = None
    if result is not None and result in SUPPORTED_DTYPES and kc.kind != "c":
        scalars = (False, not isinstance(ka, np.dtype), not isinstance(kb, np.dtype))
        codes = (kernel_code(kc), *(0 if not isinstance(k, np.dtype) else kernel_code(k)
                                    for k in keys))
        plan = _EwPlan(_slot(compute_dtype(result)), 0, result, codes, scalars,
                       _scalar_converter(result) if any(scalars) else None)
    _PLANS[("where", kc, ka, kb)] = plan
    return plan


def where(cond: Any, a: Any, b: Any) -> GPUArray | None:
    """``cond ? a : b`` for contiguous arrays of one shape (``a`` / ``b`` may be scalars)."""
    if type(cond) is not GPUArray:
        return None
    ka, kb = _key(a), _key(b)
    try:
        plan = _PLANS[("where", cond.dtype, ka, kb)]
    except KeyError:
        if ka is None or kb is None:
            return None
        plan = _where_plan(cond.dtype, ka, kb)
    if plan is None:
        return None
    rt = cond._rt
    launch = rt.small.get(plan.slot)
    n = math.prod(cond.shape)
    if launch is None or not cond._contig or n > EW_MAX or n == 0:
        return None
    if _spill.active and _spilling(cond, a, b):
        return None
    _, a_scalar, b_scalar = plan.scalars
    ptrs = [cond._block.address + cond._offset, 0, 0]
    values: list[Any] = [0, 0]
    arrays = [cond]
    for i, (v, is_scalar) in enumerate(((a, a_scalar), (b, b_scalar))):
        if is_scalar:
            values[i] = plan.convert(v)  # type: ignore[misc]
            if values[i] is None:
                return None
        else:
            if v._rt is not rt or not v._contig or v.shape != cond.shape:
                return None
            ptrs[i + 1] = v._block.address + v._offset
            arrays.append(v)
    stream = stream_for_runtime(rt)
    out = _empty(rt, cond.shape, plan.out_dtype, n, stream)
    _use(stream, *arrays)
    cc, ca, cb = plan.codes
    _run(rt, launch, (_grid(n), stream.launch_handle(), _KIND_WHERE, 0, out._block.address,
                  plan.out_code, ptrs[0], cc, 1, ptrs[1], ca, 1, ptrs[2], cb, 1, values[0],
                  values[1], n))
    return out


def astype(x: GPUArray, dtype: np.dtype[Any]) -> GPUArray | None:
    """``x.astype(dtype)`` (a new array) for a contiguous ``x``."""
    rt = x._rt
    launch = rt.small.get("cast")
    n = math.prod(x.shape)
    if launch is None or not x._contig or n > EW_MAX or n == 0:
        return None
    if _spill.active and _spilling(x):
        return None
    stream = stream_for_runtime(rt)
    out = _empty(rt, x.shape, dtype, n, stream)
    _use(stream, x)
    _run(rt, launch, (_grid(n), stream.launch_handle(), out._block.address, kernel_code(dtype),
                  x._block.address + x._offset, kernel_code(x.dtype), 1, n))
    return out


_REDUCE_SLOTS = {float32: "reduce_f32", float64: "reduce_f64", int64: "reduce_i64"}
_REDUCE_PLANS: dict[tuple[str, np.dtype[Any]],
                    tuple[np.dtype[Any], str, int, int, int]] = {}


def reduce_all(name: str, x: Any, keepdims: bool, ddof: float) -> GPUArray | None:
    """A whole-array reduction (``axis=None``) of a contiguous ``x``."""
    if type(x) is not GPUArray:
        return None
    plan = _REDUCE_PLANS.get((name, x.dtype))
    if plan is None:
        try:
            result, compute = reduce_dtypes(name, x.dtype)
        except TypeError:
            return None  # the general path raises
        plan = _REDUCE_PLANS[(name, x.dtype)] = (
            result, _REDUCE_SLOTS[compute], REDUCE_OPS[name], kernel_code(x.dtype),
            kernel_code(result))
    result, slot, op, in_code, out_code = plan
    rt = x._rt
    launch = rt.small.get(slot)
    n = math.prod(x.shape)
    if launch is None or not x._contig or n > REDUCE_MAX or not n:
        return None
    if _spill.active and _spilling(x):
        return None
    stream = stream_for_runtime(rt)
    out = _empty(rt, (1,) * x.ndim if keepdims else (), result, 1, stream)
    blk = x._block
    if blk.stream is not stream:
        _use(stream, x)
    _run(rt, launch, (1, stream.launch_handle(), op, blk.address + x._offset, in_code, n,
                      out._block.address, out_code, float(ddof)))
    return out


_NORM_DTYPES = (float16, bfloat16, float32, float64)


def row_norm(op: int, x: Any, weight: Any, bias: Any, eps: float) -> GPUArray | None:
    """Row-wise normalization ``op`` over the last axis of a contiguous floating ``x``.

    ``weight`` / ``bias``: None, or contiguous 1-D arrays of the row length in the compute
    dtype (float32; float64 for float64 x) on x's device; anything else takes the general path
    (which converts and broadcasts them).
    """
    if type(x) is not GPUArray or x.dtype not in _NORM_DTYPES or not x._contig or not x.shape:
        return None
    rt = x._rt
    compute = float64 if x.dtype == float64 else float32
    launch = rt.small.get("row_norm_f64" if compute == float64 else "row_norm_f32")
    cols = x.shape[-1]
    rows = math.prod(x.shape[:-1])
    if (launch is None or cols > NORM_MAX_COLS or rows * cols > NORM_MAX_ELEMENTS or not cols
            or not rows
            or type(eps) not in (int, float) or not eps >= 0.0):
        return None
    if _spill.active and _spilling(x, weight, bias):
        return None
    ptrs = [0, 0]
    for i, v in enumerate((weight, bias)):
        if v is not None:
            if (type(v) is not GPUArray or v.dtype != compute or v.shape != (cols,)
                    or v.strides != (compute.itemsize,) or v._rt is not rt):
                return None
            ptrs[i] = v._block.address + v._offset
    stream = stream_for_runtime(rt)
    out = _empty(rt, x.shape, x.dtype, rows * cols, stream)
    _use(stream, x, *(v for v in (weight, bias) if v is not None))
    _run(rt, launch, (rows, stream.launch_handle(), op, x._block.address + x._offset,
                      kernel_code(x.dtype), cols, out._block.address, ptrs[0], ptrs[1],
                      float(eps)))
    return out
