"""FP8 (float8_e4m3fn, float8_e5m2): casts, scaled casts and the scaled matrix products.

FP8 arrays are storage: they are created, moved, viewed and copied like any array, converted
with ``astype`` (plain casts, as torch's ``.to(float8)``: round to nearest even, overflow to NaN
for E4M3 (it has no infinity) and to +-inf for E5M2), quantized with :func:`quantize_fp8`
(scaled, saturating) and dequantized with :func:`dequantize_fp8`.  Their one arithmetic is the
scaled product: ``matmul`` / ``linear`` with FP8 operands, float32 scales (per tensor or per
row) and a bfloat16 / float16 / float32 result, on the FP8 tensor cores of compute capability
8.9 and newer (CUTLASS sm_90a TMA/WGMMA kernels on Hopper, mma.sync kernels on Ada and
Blackwell) or, on the CPU simulation, in float64.  Everything else refuses FP8 operands with a
TypeError, as torch refuses most FP8 arithmetic.

The runtimes execute two primitives: ``fp8_cast`` (contiguous arrays, optional device scale)
and ``gemm_fp8`` (A (M, K) and B (N, K), both row-major); this module checks arguments, lays
operands out for them and computes scales on the device (no host round trip).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pygpukit import _layout
from pygpukit._array import GPUArray
from pygpukit._dtypes import (
    FP8_DTYPES,
    bfloat16,
    float8_e4m3fn,
    float8_e5m2,
    float16,
    float32,
    float64,
    is_fp8,
    normalize_dtype,
    uint8,
)
from pygpukit._math import binary, reduce, unary
from pygpukit._stream import stream_for_runtime
from pygpukit._transfer import check_same_device, copy_into, empty_on, fill, touch

if TYPE_CHECKING:
    from pygpukit._backend import Runtime

#: Largest finite value of each FP8 dtype.
FP8_MAX: dict[np.dtype[Any], float] = {float8_e4m3fn: 448.0, float8_e5m2: 57344.0}
#: Floor of the amax in scale computations (torch's recipes clamp the same way): an all-zero
#: tensor or row gets a tiny scale instead of a division by zero.
AMAX_FLOOR = 1e-12

_FLOATS = (float16, bfloat16, float32, float64)
_OUT_DTYPES = (bfloat16, float16, float32)
#: Compute capability of the first GPUs with FP8 tensor cores (Ada, sm_89).  The kernels wheel
#: has FP8 product kernels from there on: mma.sync kernels for 8.9, 10.x and 12.x (SASS for sm_89,
#: sm_100, sm_120 and PTX from sm_120), TMA/WGMMA kernels for 9.0.
_FP8_MIN_CC = (8, 9)


# -- plain casts -----------------------------------------------------------------------------
def _contiguous(x: GPUArray) -> GPUArray:
    return x if x.is_contiguous() else x.copy()


def cast_into(src: GPUArray, dst: GPUArray) -> None:
    """``dst[...] = src`` (broadcasting) where one side is FP8 and the dtypes differ.

    The FP8 conversion kernel takes contiguous float operands: other layouts are staged in
    the source dtype, integer / bool endpoints go through float32.
    """
    runtime = check_same_device(src, dst, op="copy")
    if dst.size == 0:
        return
    view = src
    if src.shape != dst.shape:
        view = GPUArray(src._rt, src._block, src._offset, dst.shape,
                        _layout.broadcast_strides(src.shape, src.strides, dst.shape), src.dtype)
    if not (view.is_contiguous() and view.shape == dst.shape):
        staged = empty_on(runtime, dst.shape, src.dtype)
        copy_into(view, staged)
        view = staged
    if not (is_fp8(view.dtype) or view.dtype in _FLOATS):
        wide = empty_on(runtime, dst.shape, float32)
        copy_into(view, wide)
        view = wide
    mid = dst.dtype if (is_fp8(dst.dtype) or dst.dtype in _FLOATS) else float32
    direct = dst.is_contiguous() and mid == dst.dtype and view._block is not dst._block
    target = dst if direct else empty_on(runtime, dst.shape, mid)
    if view.dtype == target.dtype:
        copy_into(view, target)
    else:
        _run_cast(view, target, None, 0, False)
    if target is not dst:
        copy_into(target, dst)


def _run_cast(src: GPUArray, dst: GPUArray, scale: GPUArray | None, row_len: int,
              saturate: bool) -> None:
    """One launch of the runtime's FP8 conversion over contiguous ``src`` / ``dst``."""
    runtime = src._rt
    stream = stream_for_runtime(runtime)
    inputs = (src,) if scale is None else (src, scale)
    touch(stream, *inputs, written=dst)
    if dst.size:
        runtime.fp8_cast(src, dst, scale, row_len, saturate, stream)


# -- scaled casts ----------------------------------------------------------------------------
def _fp8_dtype(dtype: Any, argument: str) -> np.dtype[Any]:
    resolved = normalize_dtype(dtype, argument=argument)
    if resolved not in FP8_DTYPES:
        raise TypeError(f"{argument}: expected float8_e4m3fn or float8_e5m2; got {resolved.name}")
    return resolved


def quantize_fp8(x: GPUArray, dtype: Any = "float8_e4m3fn", scale: Any = "tensor"
                 ) -> tuple[GPUArray, GPUArray]:
    """Quantize ``x`` to FP8 with a float32 scale: ``q = saturate(x / scale)``.

    Parameters
    ----------
    x
        A float16, bfloat16, float32 or float64 array (any layout).
    dtype
        ``"float8_e4m3fn"`` (default) or ``"float8_e5m2"``.
    scale
        ``"tensor"``: one scale, ``amax(|x|) / fp8_max``; ``"row"``: one per row (the last
        axis is the row), ``amax(|x[..., :]|) / fp8_max``, of shape ``x.shape[:-1] + (1,)``;
        or a float32 GPUArray of one element or of that per-row shape, used as given.  The
        amax is clamped below at 1e-12 (an all-zero tensor or row gets a tiny scale, not a
        division by zero).  Computed on the device: nothing waits for the host.

    Returns
    -------
    tuple of GPUArray
        ``(q, scale)``: ``q`` of ``dtype`` and ``x``'s shape, ``scale`` float32 (shape ``()``
        per tensor, ``x.shape[:-1] + (1,)`` per row), so that ``q * scale`` approximates
        ``x`` (:func:`dequantize_fp8`).

    Notes
    -----
    ``x / scale`` is computed in float32 (``x`` rounded to float32 first) and rounded to
    nearest even; values beyond the FP8 range, infinities included, saturate to +-max (the
    recipe of torch's FP8 training code: ``(x / s).clamp(-max, max).to(fp8)``); NaN stays NaN.
    A plain ``x.astype(fp8)`` does not saturate (torch's ``.to()``).

    Raises
    ------
    TypeError
        For a non-float ``x``, a dtype that is not FP8, or a scale array that is not float32.
    ValueError
        For an unknown scale mode, a scale array of the wrong shape, or ``scale="row"`` on a
        0-d ``x``.
    """
    if not isinstance(x, GPUArray):
        raise TypeError(f"quantize_fp8: x must be a GPUArray; got {type(x).__name__}")
    if x.dtype not in _FLOATS:
        raise TypeError("quantize_fp8: x must be float16, bfloat16, float32 or float64; got "
                        f"{x.dtype.name}")
    target = _fp8_dtype(dtype, "quantize_fp8: dtype")
    row_shape = (*x.shape[:-1], 1) if x.ndim else None
    if isinstance(scale, str):
        if scale not in ("tensor", "row"):
            raise ValueError(f"quantize_fp8: scale must be 'tensor', 'row' or a float32 GPUArray; "
                             f"got {scale!r}")
        if scale == "row" and x.ndim == 0:
            raise ValueError("quantize_fp8: scale='row' needs at least one axis; x is 0-d")
        scale = _amax_scale(x, target, per_row=scale == "row")
    elif isinstance(scale, GPUArray):
        if scale.dtype != float32:
            raise TypeError(f"quantize_fp8: scale must be float32; got {scale.dtype.name}")
        if scale.size != 1 and scale.shape != row_shape:
            raise ValueError(f"quantize_fp8: scale must have one element or shape {row_shape} "
                             f"(one per row); got shape {scale.shape}")
        check_same_device(x, scale, op="quantize_fp8")
    else:
        raise TypeError("quantize_fp8: scale must be 'tensor', 'row' or a float32 GPUArray; got "
                        f"{type(scale).__name__}")
    per_row = scale.size != 1  # one row: per tensor and per row are the same scale
    src = _contiguous(x)
    out = empty_on(x._rt, x.shape, target)
    sc = _contiguous(scale)
    _run_cast(src, out, sc, x.shape[-1] if per_row and x.ndim else 0, True)
    return out, scale


def _amax_scale(x: GPUArray, target: np.dtype[Any], per_row: bool) -> GPUArray:
    """``max(amax(|x|), 1e-12) / fp8_max`` in float32, per tensor (shape ()) or per row."""
    mag = unary("absolute", x)
    amax = reduce("max", mag, axis=-1, keepdims=True) if per_row else reduce("max", mag)
    if amax.dtype != float32:
        amax = amax.astype(float32)
    amax = binary("maximum", amax, AMAX_FLOOR)
    return binary("divide", amax, FP8_MAX[target])


def dequantize_fp8(q: GPUArray, scale: GPUArray | None = None, dtype: Any = "float32"
                   ) -> GPUArray:
    """``q * scale`` as a wider float: the inverse of :func:`quantize_fp8`.

    Parameters
    ----------
    q
        An FP8 array.
    scale
        ``None`` (plain conversion), or a float32 array of one element or of shape
        ``q.shape[:-1] + (1,)`` (per row), as :func:`quantize_fp8` returns.
    dtype
        float16, bfloat16, float32 (default) or float64.

    Returns
    -------
    GPUArray
        ``float32(q) * scale`` (the product in float32), rounded to ``dtype``.

    Raises
    ------
    TypeError
        For a non-FP8 ``q``, a non-float ``dtype`` or a scale that is not float32.
    ValueError
        For a scale of the wrong shape.
    """
    if not isinstance(q, GPUArray):
        raise TypeError(f"dequantize_fp8: q must be a GPUArray; got {type(q).__name__}")
    if not is_fp8(q.dtype):
        raise TypeError("dequantize_fp8: q must be float8_e4m3fn or float8_e5m2; got "
                        f"{q.dtype.name}")
    target = normalize_dtype(dtype, argument="dequantize_fp8: dtype")
    if target not in _FLOATS:
        raise TypeError("dequantize_fp8: dtype must be float16, bfloat16, float32 or float64; got "
                        f"{target.name}")
    row_len = 0
    if scale is not None:
        if not isinstance(scale, GPUArray):
            raise TypeError(f"dequantize_fp8: scale must be a GPUArray or None; got "
                            f"{type(scale).__name__}")
        if scale.dtype != float32:
            raise TypeError(f"dequantize_fp8: scale must be float32; got {scale.dtype.name}")
        check_same_device(q, scale, op="dequantize_fp8")
        row_shape = (*q.shape[:-1], 1) if q.ndim else None
        if scale.size != 1:
            if scale.shape != row_shape:
                raise ValueError(f"dequantize_fp8: scale must have one element or shape "
                                 f"{row_shape} (one per row); got shape {scale.shape}")
            row_len = q.shape[-1]
        scale = _contiguous(scale)
    out = empty_on(q._rt, q.shape, target)
    _run_cast(_contiguous(q), out, scale, row_len, False)
    return out


# -- scaled products -------------------------------------------------------------------------
def _check_device(runtime: Runtime, op: str) -> None:
    """Refuse GPUs without FP8 tensor cores (compute capability below 8.9).

    Parameters
    ----------
    runtime
        The runtime of the product's operands; ``(0, 0)`` (the CPU simulation, which computes
        in float64) passes.
    op
        The public name of the operation, for the message.

    Raises
    ------
    NotImplementedError
        For a GPU of compute capability below 8.9, naming it and the way around (dequantize and
        multiply in bfloat16).
    """
    cc = tuple(runtime.compute_capability)
    if cc == (0, 0) or cc >= _FP8_MIN_CC:
        return
    raise NotImplementedError(
        f"{op}: FP8 products need FP8 tensor cores (compute capability 8.9 or newer); "
        f"{runtime.describe()} has compute capability {cc[0]}.{cc[1]}.  Dequantize the "
        "operands (pygpukit.dequantize_fp8) and multiply in bfloat16 instead.")


def _scale_arg(scale: Any, argument: str, per_shape: tuple[int, int], op: str
               ) -> tuple[GPUArray | None, bool]:
    """(contiguous float32 scale or None, per-row/column?) of a scale argument."""
    if scale is None:
        return None, False
    if not isinstance(scale, GPUArray):
        raise TypeError(f"{op}: {argument} must be a float32 GPUArray or None; got "
                        f"{type(scale).__name__}")
    if scale.dtype != float32:
        raise TypeError(f"{op}: {argument} must be float32; got {scale.dtype.name}")
    if scale.size == 1 and scale.ndim <= 2:
        return scale, False  # the kernel reads its one element wherever the strides point
    if scale.shape == per_shape:
        return (scale if scale.is_contiguous() else scale.copy()), True
    raise ValueError(f"{op}: {argument} must have one element (per tensor) or shape {per_shape}; "
                     f"got shape {scale.shape}")


def _fp8_operands(op: str, a: GPUArray, b: GPUArray, names: tuple[str, str]) -> None:
    da, db = a.dtype, b.dtype
    if not (is_fp8(da) and is_fp8(db)):
        raise TypeError(f"{op}: FP8 products take two FP8 operands ({names[0]} and {names[1]} "
                        f"float8_e4m3fn or float8_e5m2); got {da.name} and {db.name}")
    if da == float8_e5m2 and db == float8_e5m2:
        raise TypeError(f"{op}: float8_e5m2 x float8_e5m2 is not supported (as in "
                        "torch._scaled_mm); quantize one operand to float8_e4m3fn")


def _zeros_fp8(runtime: Runtime, shape: tuple[int, ...], dtype: np.dtype[Any]) -> GPUArray:
    """A zero-filled FP8 array (filled through a uint8 view: FP8 zero is the zero byte)."""
    out = empty_on(runtime, shape, dtype)
    fill(GPUArray(out._rt, out._block, out._offset, out.shape, out.strides, uint8), 0)
    return out


def _k_major(x: GPUArray, k16: int) -> GPUArray:
    """``x`` (rows, K) with unit stride along K, 16-byte aligned base and row stride.

    A view that already is one is used in place; otherwise a copy (and, when K is not a
    multiple of 16, a copy padded with zeros to ``k16`` columns, which leaves the product
    unchanged).
    """
    rows, k = x.shape
    base = int(getattr(x._block, "address", 0)) + x._offset
    ok = (x.strides[1] == 1 or k == 1) and (x.strides[0] % 16 == 0 or rows == 1) \
        and base % 16 == 0 and k == k16
    if ok and (rows == 1 or x.strides[0] >= k):
        return x
    if k == k16:
        out = empty_on(x._rt, (rows, k16), x.dtype)
    else:
        out = _zeros_fp8(x._rt, (rows, k16), x.dtype)
    copy_into(x, out[:, :k] if k != k16 else out)
    return out


#: Plans of products whose operands need no copy, by layout (shapes, strides, dtypes, scale and
#: bias kinds, alignment): a repeated product skips every check (see :func:`scaled_product`).
_PLANS: dict[tuple[Any, ...], tuple[bool, bool]] = {}
_PLANS_MAX = 512


def _aligned(x: GPUArray) -> bool:
    return (int(getattr(x._block, "address", 0)) + x._offset) % 16 == 0


def _plan_key(op: str, a: GPUArray, b: GPUArray, scale_a: Any, scale_b: Any, bias: Any,
              activation: int, out_dtype: Any) -> tuple[Any, ...] | None:
    """The layout key of a product, or None when an argument is not a plain GPUArray / None."""
    parts: list[Any] = [op, a._rt, a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype,
                        activation, out_dtype, _aligned(a), _aligned(b)]
    for v in (scale_a, scale_b, bias):
        if v is None:
            parts.append(None)
        elif type(v) is GPUArray:
            parts.append((v._rt, v.shape, v.strides, v.dtype))
        else:
            return None
    return tuple(parts)


def scaled_product(op: str, a: GPUArray, b_nk: GPUArray, scale_a: Any, scale_b: Any,
                   scale_b_shape: tuple[int, int], bias: Any, activation: int, out_dtype: Any,
                   names: tuple[str, str, str, str]) -> GPUArray:
    """``act(a @ b_nk.T * scale_a * scale_b + bias)`` for 2-D FP8 ``a`` (M, K), ``b_nk`` (N, K).

    ``names``: the user's names of a, b, scale_a, scale_b (for messages).  ``scale_b_shape``
    is the per-column shape the caller's API takes ((1, N) for matmul, (N, 1) for linear).
    A product whose operands the kernel reads in place is planned once per layout (the checks
    below run on the first call only).
    """
    try:
        key = _plan_key(op, a, b_nk, scale_a, scale_b, bias, activation, out_dtype)
        plan = _PLANS.get(key) if key is not None else None
    except TypeError:  # an unhashable out_dtype: checked (and refused) below
        key = plan = None
    if plan is not None:
        runtime = a._rt
        target = bfloat16 if out_dtype is None else normalize_dtype(out_dtype)
        stream = stream_for_runtime(runtime)
        c = empty_on(runtime, (a.shape[0], b_nk.shape[0]), target, stream)
        touch(stream, a, b_nk, *[v for v in (scale_a, scale_b, bias) if v is not None],
              written=c)
        runtime.gemm_fp8(a, b_nk, c, scale_a, plan[0], scale_b, plan[1], bias, activation,
                         stream)
        return c
    return _scaled_product_checked(op, a, b_nk, scale_a, scale_b, scale_b_shape, bias,
                                   activation, out_dtype, names, key)


def _scaled_product_checked(op: str, a: GPUArray, b_nk: GPUArray, scale_a: Any, scale_b: Any,
                            scale_b_shape: tuple[int, int], bias: Any, activation: int,
                            out_dtype: Any, names: tuple[str, str, str, str],
                            key: tuple[Any, ...] | None) -> GPUArray:
    _fp8_operands(op, a, b_nk, names[:2])
    runtime = check_same_device(a, b_nk, op=op)
    m, k = a.shape
    n = b_nk.shape[0]
    target = bfloat16 if out_dtype is None else normalize_dtype(out_dtype, argument="out_dtype")
    if target not in _OUT_DTYPES:
        raise TypeError(f"{op}: out_dtype must be bfloat16, float16 or float32; got {target.name}")
    sa, sa_rows = _scale_arg(scale_a, names[2], (m, 1), op)
    sb, sb_cols = _scale_arg(scale_b, names[3], scale_b_shape, op)
    for s in (sa, sb):
        if s is not None:
            check_same_device(a, s, op=op)
    bias_in = bias
    if bias is not None:
        if not isinstance(bias, GPUArray):
            raise TypeError(f"{op}: bias must be a GPUArray or None; got {type(bias).__name__}")
        if bias.shape != (n,):
            raise ValueError(f"{op}: bias must have shape ({n},); got {bias.shape}")
        if bias.dtype not in _FLOATS:
            raise TypeError(f"{op}: bias must be a float array; got {bias.dtype.name}")
        check_same_device(a, bias, op=op)
        bias = _contiguous(bias if bias.dtype == target else bias.astype(target))
    _check_device(runtime, op)
    if k == 0:
        raise ValueError(f"{op}: FP8 products need at least one column in {names[0]} (K >= 1)")
    # FP8 tensor cores read both operands K-major (TMA on Hopper, 16-byte cp.async on the
    # mma.sync kernels): 16-byte rows, K a multiple of 16.
    k16 = -(-k // 16) * 16
    a2 = _k_major(a, k16)
    b2 = _k_major(b_nk, k16)
    # The output's rows must be 16-byte aligned too: pad N, then copy the columns out.
    per16 = 16 // target.itemsize
    n16 = -(-n // per16) * per16
    c = empty_on(runtime, (m, n16), target)
    stream = stream_for_runtime(runtime)
    inputs = [x for x in (a2, b2, sa, sb, bias) if x is not None]
    touch(stream, *inputs, written=c)
    if m and n:
        runtime.gemm_fp8(a2, b2, c, sa, sa_rows, sb, sb_cols, bias, activation, stream)
    if (key is not None and m and n and a2 is a and b2 is b_nk and sa is scale_a
            and sb is scale_b and bias is bias_in and n16 == n):
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        _PLANS[key] = (sa_rows, sb_cols)
    if n16 != n:
        return c[:, :n].copy()
    return c
