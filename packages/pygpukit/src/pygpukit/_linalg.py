"""Matrix products: ``matmul`` / ``@`` and ``linear``, on CUTLASS kernels or the CPU simulation.

This module resolves shapes, dtypes and layouts; the runtimes only execute one (batched)
product ``C[b] = act(A[b] @ B[b] + bias)`` whose operands are 3-D views: A (batch, m, k) with
unit stride along k, B (batch, k, n) with unit stride along n (row-major) or along k
(column-major, e.g. a weight matrix transposed), C (batch, m, n) with unit stride along n, and
one stride per operand between batches (0 = the same matrix for every batch).  Operands that
fit none of these layouts are copied to contiguous first; nothing synchronizes.
"""

from __future__ import annotations

import itertools
import threading
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from pygpukit import _fastpath, _fp8
from pygpukit._array import GPUArray, hooks
from pygpukit._dtypes import bfloat16, float16, float32, float64, is_fp8, kernel_code
from pygpukit._fastpath import Kind, fast
from pygpukit._stream import stream_for_runtime
from pygpukit._transfer import _overlaps, check_same_device, copy_into, empty_on, touch
from pygpukit_kernels import Activation
from pygpukit_kernels import Precision as KPrecision

if TYPE_CHECKING:
    from pygpukit._backend import Runtime

Precision = Literal["highest", "tf32"]

#: Accepted spellings of the float32 precision (torch's names included).
_PRECISIONS: dict[str, Precision] = {
    "highest": "highest", "ieee": "highest", "float32": "highest", "fp32": "highest",
    "tf32": "tf32", "high": "tf32",
}
#: C ABI codes (``PGK_PRECISION_*`` / ``PGK_ACT_*``), as pygpukit_kernels exports them.
PRECISION_CODES: dict[Precision, int] = {"highest": int(KPrecision.HIGHEST),
                                         "tf32": int(KPrecision.TF32)}
ACTIVATION_CODES: dict[str | None, int] = {
    None: int(Activation.NONE), "relu": int(Activation.RELU), "gelu": int(Activation.GELU),
    "gelu_tanh": int(Activation.GELU_TANH)}
_SUPPORTED = (float16, bfloat16, float32, float64)

_state = threading.Lock()
_precision: Precision = "highest"


def _parse_precision(value: object, argument: str) -> Precision:
    if isinstance(value, str) and value.lower() in _PRECISIONS:
        return _PRECISIONS[value.lower()]
    raise ValueError(f"{argument} must be one of {sorted(set(_PRECISIONS))}; got {value!r}")


def set_matmul_precision(precision: str) -> None:
    """Choose how float32 matrix products are computed, for the whole process.

    Parameters
    ----------
    precision
        ``"highest"`` (default; also ``"ieee"``, ``"float32"``): FP32 accuracy — on tensor cores
        through error-compensated 3xTF32 products, elsewhere FFMA.  ``"tf32"`` (also ``"high"``,
        torch's name): one TF32 product (10-bit mantissa inputs, float32 accumulation), faster,
        relative error around 1e-3.  Like ``torch.backends.cuda.matmul.allow_tf32``; other dtypes
        are not affected.

    Raises
    ------
    ValueError
        If ``precision`` is not one of the names above.
    """
    global _precision
    parsed = _parse_precision(precision, "precision")
    with _state:
        _precision = parsed
        for op in _FAST_PRODUCTS:  # float32 plans hold the precision: made again
            op.clear_plans()


def get_matmul_precision() -> Precision:
    """Return the float32 matrix-product precision in effect (``"highest"`` or ``"tf32"``)."""
    return _precision


def _call_precision(precision: str | None, use_tf32: bool | None) -> Precision:
    if precision is not None and use_tf32 is not None:
        raise TypeError("matmul: pass either precision= or use_tf32=, not both")
    if use_tf32 is not None:
        if not isinstance(use_tf32, bool):
            raise TypeError(f"use_tf32 must be a bool; got {type(use_tf32).__name__}")
        return "tf32" if use_tf32 else "highest"
    if precision is not None:
        return _parse_precision(precision, "precision")
    return _precision


def _result_dtype(op: str, *arrays: GPUArray) -> np.dtype[Any]:
    # ml_dtypes registers bfloat16's promotions with the ufuncs (np.result_type does not know
    # bfloat16 with float16): resolve as multiply does, pairwise.
    dtype = arrays[0].dtype
    try:
        for other in arrays[1:]:
            dtype = np.dtype(np.multiply.resolve_dtypes((dtype, other.dtype, None))[-1])
    except TypeError:
        dtype = np.dtype(object)
    if dtype not in _SUPPORTED:
        names = ", ".join(str(a.dtype) for a in arrays)
        raise TypeError(f"{op}: supported for float16, bfloat16, float32 and float64 only; got "
                        f"{names} (cast with .astype() first)")
    return np.dtype(dtype)


def _check_array(value: Any, op: str, argument: str) -> GPUArray:
    if not isinstance(value, GPUArray):
        raise TypeError(f"{op}: {argument} must be a GPUArray; got {type(value).__name__}")
    return value


def _as_dtype(x: GPUArray, dtype: np.dtype[Any]) -> GPUArray:
    return x if x.dtype == dtype else x.astype(dtype)


def _batch_shape(a: tuple[int, ...], b: tuple[int, ...], op: str) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise ValueError(f"{op}: batch dimensions {a} and {b} do not broadcast") from None


def _collapse(shape: tuple[int, ...], strides: tuple[int, ...]) -> int | None:
    """One stride for a run of batch dims (row-major over ``shape``), or None."""
    if not shape:
        return 0
    stride = None
    span = 1  # elements of the batch index space after this dim
    for size, st in zip(reversed(shape), reversed(strides), strict=True):
        if size == 1:
            span *= size
            continue
        if stride is None:
            stride = st
        elif st != stride * span:
            return None
        span *= size
    return stride if stride is not None else 0


def _view(x: GPUArray, offset: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> GPUArray:
    return GPUArray(x._rt, x._block, offset, shape, strides, x.dtype)


def _rows_usable(x: GPUArray) -> bool:
    """Whether the last two dims are row-major with unit stride along the last (in bytes)."""
    rows, cols = x.shape[-2:]
    rs, cs = x.strides[-2:]
    es = x.itemsize
    return (cols == 1 or cs == es) and (rows == 1 or (rs >= cols * es and rs % es == 0))


def _reversed_batch(x: GPUArray) -> bool:
    """Whether a batch dim of x runs backwards (a ``[::-1]`` view).

    pgk_gemm walks batches with non-negative strides only: such an operand is copied, and
    such an ``out`` is written through a temporary.
    """
    return any(st < 0 for size, st in zip(x.shape[:-2], x.strides[:-2], strict=True)
               if size > 1)


def _cols_usable(x: GPUArray) -> bool:
    """Whether the last two dims are column-major (unit stride along the second-to-last)."""
    rows, cols = x.shape[-2:]
    rs, cs = x.strides[-2:]
    es = x.itemsize
    return (rows == 1 or rs == es) and (cols == 1 or (cs >= rows * es and cs % es == 0))


def _fast_2d(a: GPUArray, b: GPUArray, bias: GPUArray | None, activation: str | None,
             precision: Precision, b_is_weight: bool) -> GPUArray | None:
    """The common case in one launch with no conversions, or None to take the general path.

    2-D operands of one dtype on one device, a row-major, b (or the weight) row- or
    column-major, a contiguous bias of that dtype, no dimension 0.
    """
    dtype = a.dtype
    if (a.ndim != 2 or b.ndim != 2 or b.dtype is not dtype or a._rt is not b._rt
            or dtype not in _SUPPORTED):
        return None
    bkn = b.T if b_is_weight else b  # B as (k, n)
    m, k = a.shape
    k2, n = bkn.shape
    if k != k2 or not (m and n and k):
        return None
    if bias is not None and (bias.dtype is not dtype or bias._rt is not a._rt
                             or bias.shape != (n,) or not bias.is_contiguous()):
        return None
    if not _rows_usable(a):
        return None
    if _rows_usable(bkn):
        b_col_major = False
    elif _cols_usable(bkn):
        b_col_major = True
    else:
        return None
    runtime = a._rt
    stream = stream_for_runtime(runtime)
    c = empty_on(runtime, (m, n), dtype, stream)
    if bias is None:
        touch(stream, a, b, written=c)
    else:
        touch(stream, a, b, bias, written=c)
    runtime.gemm(a, bkn, c, b_col_major, bias,
                 ACTIVATION_CODES[activation], PRECISION_CODES[precision], stream)
    return c


def _product(op: str, a: GPUArray, b: GPUArray, bias: GPUArray | None, activation: str | None,
             precision: Precision, out: GPUArray | None, b_is_weight: bool) -> GPUArray:
    """The shared engine of matmul and linear (``b_is_weight``: b is (n, k), use b.T)."""
    if out is None:
        fast = _fast_2d(a, b, bias, activation, precision, b_is_weight)
        if fast is not None:
            return fast
    runtime = check_same_device(*(x for x in (a, b, bias, out) if x is not None), op=op)
    dtype = _result_dtype(op, *(x for x in (a, b, bias) if x is not None))
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"{op}: operands must have at least one dimension; got shapes "
                         f"{a.shape} and {b.shape}")
    a2 = a.reshape((1, a.shape[0])) if a.ndim == 1 else a
    if b_is_weight:
        if b.ndim != 2:
            raise ValueError(f"{op}: weight must be 2-D (out_features, in_features); got shape "
                             f"{b.shape}")
        b2 = b.T
    else:
        b2 = b.reshape((b.shape[0], 1)) if b.ndim == 1 else b
    m, k = a2.shape[-2:]
    k2, n = b2.shape[-2:]
    if k != k2:
        what = "in_features of weight" if b_is_weight else "rows of b"
        raise ValueError(f"{op}: a has shape {a.shape} and {'weight' if b_is_weight else 'b'} "
                         f"{b.shape}: the last dim of a ({k}) must equal the {what} ({k2})")
    batch = _batch_shape(a2.shape[:-2], b2.shape[:-2], op)
    full = (*batch, m, n)
    shape = full
    if a.ndim == 1:
        shape = (*batch, n)
    if b.ndim == 1 and not b_is_weight:
        shape = shape[:-1]
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != n):
        raise ValueError(f"{op}: bias must have shape ({n},); got {bias.shape}")
    stream = stream_for_runtime(runtime)

    if out is not None:
        if out.shape != shape:
            raise ValueError(f"{op}: out has shape {out.shape}, the result has {shape}")
        if out.dtype != dtype:
            raise TypeError(f"{op}: out has dtype {out.dtype}, the result has {dtype}")
    a2, b2 = _as_dtype(a2, dtype), _as_dtype(b2, dtype)
    bias_c = None if bias is None else _as_dtype(bias, dtype)
    if bias_c is not None and not bias_c.is_contiguous():
        bias_c = bias_c.copy()

    # Where the result goes: out itself when it has a usable layout and overlaps no input.
    target = out.reshape(full) if out is not None and out.size and _reshapes_to(out, full) else None
    if target is not None and (not _rows_usable(target) or _reversed_batch(target) or any(
            _overlaps(target, x) for x in (a, b, bias) if x is not None)):
        target = None
    if target is None:
        target = empty_on(runtime, full, dtype, stream)
    if target.size == 0:
        return out if out is not None else target.reshape(shape)
    if k == 0:
        _zero_product(target, bias_c, activation)
    else:
        _launch(op, runtime, a2, b2, target, bias_c, activation, precision, batch, stream)
    if out is not None:
        if target._block is not out._block or target._offset != out._offset:
            copy_into(target.reshape(shape), out)
        return out
    return target.reshape(shape)


def _reshapes_to(x: GPUArray, shape: tuple[int, ...]) -> bool:
    try:
        return x.reshape(shape)._block is x._block
    except ValueError:
        return False


def _zero_product(target: GPUArray, bias: GPUArray | None, activation: str | None) -> None:
    """Fill the result of a product with k == 0: zeros, then the epilogue."""
    from pygpukit import _ops
    from pygpukit._transfer import fill

    fill(target, 0)
    if bias is not None:
        _ops.add(target, bias, out=target)
    if activation is not None:
        _apply_activation(target, activation)


def _apply_activation(x: GPUArray, activation: str) -> None:
    from pygpukit._math import unary

    kernel = {"relu": "relu", "gelu": "gelu_erf", "gelu_tanh": "gelu_tanh"}[activation]
    unary(kernel, x, x)


def _launch(op: str, runtime: Runtime, a: GPUArray, b: GPUArray, c: GPUArray, bias: GPUArray | None,
            activation: str | None, precision: Precision, batch: tuple[int, ...],
            stream: Any) -> None:
    """Enqueue the kernels for C = act(A @ B + bias), batch dims broadcast."""
    if not _rows_usable(a) or _reversed_batch(a):
        a = a.copy()
    if _reversed_batch(b):
        b = b.copy()
    b_col_major = False
    if not _rows_usable(b):
        if _cols_usable(b):
            b_col_major = True
        else:
            b = b.copy()
    m, k = a.shape[-2:]
    n = c.shape[-1]
    nb = len(batch)
    # Batch strides of each operand over the broadcast batch shape (0 where broadcast).
    a_bs = _batch_strides(a, batch)
    b_bs = _batch_strides(b, batch)
    c_bs = c.strides[:nb]
    # The longest suffix of batch dims that every operand can walk with one stride runs as one
    # batched launch; leading dims beyond that loop here.
    split = nb
    for start in range(nb + 1):
        tail = batch[start:]
        if all(_collapse(tail, st[start:]) is not None for st in (a_bs, b_bs, c_bs)):
            split = start
            break
    tail = batch[split:]
    count = int(np.prod(tail, dtype=np.int64)) if tail else 1
    strides3 = [_collapse(tail, st[split:]) or 0 for st in (a_bs, b_bs, c_bs)]
    touch(stream, a, b, *([bias] if bias is not None else []), written=c)
    for index in itertools.product(*(range(s) for s in batch[:split])):
        offs = [x._offset + sum(i * s for i, s in zip(index, st[:split], strict=True))
                for x, st in ((a, a_bs), (b, b_bs), (c, c_bs))]
        a3 = _view(a, offs[0], (count, m, k), (strides3[0], *a.strides[-2:]))
        b3 = _view(b, offs[1], (count, k, n), (strides3[1], *b.strides[-2:]))
        c3 = _view(c, offs[2], (count, m, n), (strides3[2], *c.strides[-2:]))
        runtime.gemm(a3, b3, c3, b_col_major, bias, ACTIVATION_CODES[activation],
                     PRECISION_CODES[precision], stream)


def _batch_strides(x: GPUArray, batch: tuple[int, ...]) -> tuple[int, ...]:
    """Strides (bytes) of x's batch dims broadcast to ``batch`` (0 for broadcast dims)."""
    own = x.shape[:-2]
    pad = len(batch) - len(own)
    strides = [0] * pad
    for size, st in zip(own, x.strides[:-2], strict=True):
        strides.append(0 if size == 1 else st)
    return tuple(strides)


def matmul(a: Any, b: Any, *, out: GPUArray | None = None, precision: str | None = None,
           use_tf32: bool | None = None, scale_a: GPUArray | None = None,
           scale_b: GPUArray | None = None, out_dtype: Any = None) -> GPUArray:
    """Matrix product with NumPy's ``matmul`` semantics, enqueued on the current stream.

    Parameters
    ----------
    a, b
        GPUArrays on one device.  1-D operands are vectors (a row for ``a``, a column for
        ``b``, the dim dropped from the result); ≥ 3-D operands are stacks of matrices whose
        batch dims broadcast.  Transposed and strided views are read in place where the kernels
        allow (``b`` row- or column-major, ``a`` row-major); others are copied first.
        float16 and bfloat16 accumulate in float32; dtypes promote as NumPy's.
    out
        Optional array of the result's shape and dtype to write into.
    precision
        float32 only: ``"highest"`` or ``"tf32"`` for this call (default:
        :func:`set_matmul_precision`'s choice, initially ``"highest"``).
    use_tf32
        The seed API's spelling: ``True`` is ``precision="tf32"``.
    scale_a, scale_b, out_dtype
        FP8 products only (``a`` and ``b`` float8_e4m3fn / float8_e5m2, 2-D; e5m2 x e5m2 is
        refused, as by ``torch._scaled_mm``): ``out_dtype(a @ b * scale_a * scale_b)`` with
        float32 accumulation.  ``scale_a``: float32, one element (per tensor) or shape (M, 1)
        (per row); ``scale_b``: one element or (1, N) (per column); None = 1.  ``out_dtype``:
        bfloat16 (default), float16 or float32.  The FP8 tensor cores read ``b`` K-major:
        ``b`` should be a transposed view of an (N, K) row-major matrix (``w.T``), as for
        ``torch._scaled_mm``; a row-major (K, N) ``b`` is first transposed into a temporary
        (one extra read and write of ``b``).  Needs FP8 tensor cores (compute capability 8.9
        or newer: Ada, Hopper, Blackwell; NotImplementedError on older GPUs, naming the
        device); the CPU simulation computes in float64.  See :mod:`pygpukit._fp8`.

    Returns
    -------
    GPUArray
        ``a @ b``, returned at once (the kernel runs asynchronously).

    Raises
    ------
    TypeError
        For non-GPUArray operands, an ``out`` of another dtype, or both ``precision`` and
        ``use_tf32``.  (Integer and bool operands, which the GEMMs do not take, are a
        broadcast multiply and sum in blocks: NumPy's result, wrapping as NumPy's.)
    ValueError
        For 0-d operands, mismatched inner dimensions, batch dims that do not broadcast, an
        ``out`` of another shape, operands on different devices or an unknown precision.
    """
    a = _check_array(a, "matmul", "a")
    b = _check_array(b, "matmul", "b")
    if (is_fp8(a.dtype) or is_fp8(b.dtype) or scale_a is not None or scale_b is not None
            or out_dtype is not None):
        return _fp8_matmul(a, b, scale_a, scale_b, out_dtype, out)
    if a.dtype.kind == "c" or b.dtype.kind == "c":  # real GEMMs on the parts
        return hooks.complex.matmul(a, b, out, _call_precision(precision, use_tf32))
    if a.dtype.kind in "biu" and b.dtype.kind in "biu":  # no GEMM: a broadcast multiply-sum
        from pygpukit._linalg_extra import integer_matmul

        return integer_matmul(a, b, np.dtype(np.multiply.resolve_dtypes(
            (a.dtype, b.dtype, None))[-1]), out)
    return _product("matmul", a, b, None, None, _call_precision(precision, use_tf32), out,
                    b_is_weight=False)


def linear(x: Any, weight: Any, bias: Any = None, activation: str | None = None, *,
           precision: str | None = None, scale_x: GPUArray | None = None,
           scale_weight: GPUArray | None = None, out_dtype: Any = None) -> GPUArray:
    """``activation(x @ weight.T + bias)`` with bias and activation fused into the GEMM.

    Parameters
    ----------
    x
        Input of shape (..., in_features).
    weight
        (out_features, in_features), as ``torch.nn.Linear`` stores it (read in place).
    bias
        Optional (out_features,) added to every row.
    activation
        ``None``, ``"relu"``, ``"gelu"`` (erf form, torch's default) or ``"gelu_tanh"``.
    precision
        float32 only, as for :func:`matmul`.
    scale_x, scale_weight, out_dtype
        FP8 layers (``x`` and ``weight`` float8_e4m3fn / float8_e5m2): ``activation(out_dtype(
        x @ weight.T * scale_x * scale_weight + bias))`` computed in float32 and rounded once.
        ``scale_x``: float32, one element or one per row of ``x`` (shape ``x.shape[:-1] +
        (1,)``); ``scale_weight``: one element or (out_features, 1) (per output feature, as
        ``quantize_fp8(weight, scale="row")`` gives); None = 1.  ``out_dtype``: bfloat16
        (default), float16 or float32; ``bias`` is converted to it.  ``weight`` (N, K)
        row-major is the layout the FP8 tensor cores read directly.  See :func:`matmul`.

    Returns
    -------
    GPUArray
        Shape (..., out_features).

    Raises
    ------
    TypeError, ValueError
        As :func:`matmul`, and for a bias of the wrong shape or an unknown activation.
    """
    x = _check_array(x, "linear", "x")
    weight = _check_array(weight, "linear", "weight")
    if bias is not None:
        bias = _check_array(bias, "linear", "bias")
    if activation not in ACTIVATION_CODES:
        names = ", ".join(repr(a) for a in ACTIVATION_CODES)
        raise ValueError(f"linear: activation must be one of {names}; got {activation!r}")
    if (is_fp8(x.dtype) or is_fp8(weight.dtype) or scale_x is not None
            or scale_weight is not None or out_dtype is not None):
        return _fp8_linear(x, weight, bias, activation, scale_x, scale_weight, out_dtype)
    return _product("linear", x, weight, bias, activation, _call_precision(precision, None),
                    None, b_is_weight=True)


__all__ = ["get_matmul_precision", "linear", "matmul", "set_matmul_precision"]


# -- FP8 products (pygpukit._fp8) -----------------------------------------------------------------
def _fp8_matmul(a: GPUArray, b: GPUArray, scale_a: Any, scale_b: Any, out_dtype: Any,
                out: GPUArray | None) -> GPUArray:
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"matmul: FP8 products take 2-D operands; got shapes {a.shape} and "
                         f"{b.shape}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: inner dimensions differ: a {a.shape} and b {b.shape}")
    result = _fp8.scaled_product("matmul", a, b.T, scale_a, scale_b, (1, b.shape[1]), None,
                                 ACTIVATION_CODES[None], out_dtype,
                                 ("a", "b", "scale_a", "scale_b"))
    if out is not None:
        if not isinstance(out, GPUArray):
            raise TypeError(f"matmul: out must be a GPUArray; got {type(out).__name__}")
        if out.shape != result.shape or out.dtype != result.dtype:
            raise ValueError(f"matmul: out must have shape {result.shape} and dtype "
                             f"{result.dtype.name}; got {out.shape} {out.dtype.name}")
        copy_into(result, out)
        return out
    return result


def _fp8_linear(x: GPUArray, weight: GPUArray, bias: GPUArray | None, activation: str | None,
                scale_x: Any, scale_weight: Any, out_dtype: Any) -> GPUArray:
    if x.ndim < 1 or weight.ndim != 2:
        raise ValueError(f"linear: FP8 layers take x (..., in_features) and a 2-D weight; got "
                         f"shapes {x.shape} and {weight.shape}")
    if x.shape[-1] != weight.shape[1]:
        raise ValueError(f"linear: x has {x.shape[-1]} features but weight {weight.shape} "
                         f"takes {weight.shape[1]}")
    if x.ndim == 2:
        return _fp8.scaled_product("linear", x, weight, scale_x, scale_weight,
                                   (weight.shape[0], 1), bias, ACTIVATION_CODES[activation],
                                   out_dtype, ("x", "weight", "scale_x", "scale_weight"))
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1])
    if isinstance(scale_x, GPUArray) and scale_x.size != 1 and scale_x.shape == (*lead, 1):
        scale_x = scale_x.reshape(-1, 1)
    result = _fp8.scaled_product("linear", x2, weight, scale_x, scale_weight,
                                 (weight.shape[0], 1), bias, ACTIVATION_CODES[activation],
                                 out_dtype, ("x", "weight", "scale_x", "scale_weight"))
    return result.reshape(*lead, weight.shape[0])


# -- the C fast path of 2-D products (pygpukit._fastpath) -----------------------------------------
def _product_plan(kind: int, name: str, rt: Any, dtype: Any, _k1: Any, _k2: Any
                  ) -> dict[str, Any] | None:
    """Plan of a FastOp product over 2-D operands of ``dtype`` (None: the Python path)."""
    if dtype not in _SUPPORTED:
        return None
    entry = rt.gemm_entry_points()
    plan = _fastpath.runtime_part(rt, None)
    if entry is None or plan is None:
        return None
    gemm, workspace, check = entry
    plan.update(launcher=None, op=0, out_dtype=dtype, out_itemsize=dtype.itemsize,
                out_code=kernel_code(dtype), codes=[], conv=[], max_n=0, gemm=gemm,
                gemm_workspace=workspace, check=check, context=rt.context_handle,
                precision=PRECISION_CODES[_precision])
    return plan


def _install_fast_products() -> list[Any]:
    global matmul, linear
    matmul = fast(Kind.MATMUL, "matmul", _product_plan)(matmul)
    linear = fast(Kind.LINEAR, "linear", _product_plan)(linear)
    method = fast(Kind.MATMUL, "matmul", _product_plan)(GPUArray.__dict__["__matmul__"])
    GPUArray.__matmul__ = method  # type: ignore[method-assign]
    return [matmul, linear, method]


_FAST_PRODUCTS = _install_fast_products()
