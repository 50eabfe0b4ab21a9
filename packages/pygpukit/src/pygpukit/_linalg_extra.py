"""Linear algebra built on the GEMMs: products, diagonals, triangles and norms.

Pure Python over existing kernels: every product is views (transpose / reshape) around one
(batched) :func:`~pygpukit.matmul` for floating dtypes; integer and bool products, which the
GEMMs do not take, are a broadcast multiply and one sum reduction (still no loop over
elements).  Diagonals are strided views of the same memory.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from pygpukit import _layout
from pygpukit._array import GPUArray, hooks
from pygpukit._creation import arange
from pygpukit._dtypes import bfloat16, float16, float32, float64
from pygpukit._linalg import matmul
from pygpukit._math import binary, reduce, unary, where
from pygpukit._transfer import check_same_device, copy_into, empty_on, fill

_GEMM_DTYPES = (float16, bfloat16, float32, float64)


def _array(name: str, value: Any, argument: str) -> GPUArray:
    if not isinstance(value, GPUArray):
        raise TypeError(f"{name}: {argument} must be a GPUArray; got {type(value).__name__}")
    return value


def _product_dtype(name: str, a: GPUArray, b: GPUArray) -> np.dtype[Any]:
    try:
        dtype = np.dtype(np.multiply.resolve_dtypes((a.dtype, b.dtype, None))[-1])
    except TypeError:
        raise TypeError(f"{name}: no common dtype for {a.dtype.name} and {b.dtype.name}"
                        ) from None
    return dtype


def _bmm(name: str, a3: GPUArray, b3: GPUArray) -> GPUArray:
    """``(B, M, K) @ (B, K, N)`` with B broadcast where 1: one batched GEMM for floats."""
    dtype = _product_dtype(name, a3, b3)
    if dtype in _GEMM_DTYPES or dtype.kind == "c":
        return matmul(a3 if a3.dtype == dtype else a3.astype(dtype),
                      b3 if b3.dtype == dtype else b3.astype(dtype))
    return _integer_product(a3, b3, dtype)


#: Elements of the broadcast product one block of an integer product may hold.
_BLOCK_ELEMENTS = 1 << 24


def _integer_product(a: GPUArray, b: GPUArray, dtype: np.dtype[Any]) -> GPUArray:
    """``(..., M, K) @ (..., K, N)`` for integer / bool dtypes, which the GEMMs do not take.

    ``a[..., :, :, None] * b[..., None, :, :]`` summed over K (int64 sums, wrapping to the
    result dtype as NumPy's), in blocks of K so that no temporary holds more than 2**24
    elements; bool products are NumPy's (the logical or of ands).  A loop over blocks of K,
    never over elements.
    """
    batch = _layout.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    m, k = a.shape[-2:]
    n = b.shape[-1]
    per_k = builtins.max(1, math.prod(batch) * m * n)
    step = builtins.max(1, _BLOCK_ELEMENTS // per_k)
    total: GPUArray | None = None
    for start in range(0, builtins.max(k, 1), step):
        stop = builtins.min(k, start + step)
        part = binary("multiply", a[..., start:stop].expand_dims(a.ndim),
                      b[..., start:stop, :].expand_dims(b.ndim - 2))
        summed = reduce("sum", part, -2)
        total = summed if total is None else binary("add", total, summed, total)
    assert total is not None
    if dtype.kind == "b":
        return binary("not_equal", total, 0)
    return total if total.dtype == dtype else total.astype(dtype)


def integer_matmul(a: GPUArray, b: GPUArray, dtype: np.dtype[Any],
                   out: GPUArray | None = None) -> GPUArray:
    """NumPy's ``matmul`` (1-D operands, broadcast batch dims) for integer and bool dtypes."""
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: operands must have at least one dimension; got shapes "
                         f"{a.shape} and {b.shape}")
    check_same_device(a, b, op="matmul")
    a2 = a.reshape(1, a.shape[0]) if a.ndim == 1 else a
    b2 = b.reshape(b.shape[0], 1) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(f"matmul: a has shape {a.shape} and b {b.shape}: the last dim of a "
                         f"({a2.shape[-1]}) must equal the rows of b ({b2.shape[-2]})")
    result = _integer_product(a2, b2, dtype)
    if a.ndim == 1:
        result = result.squeeze(-2)
    if b.ndim == 1:
        result = result.squeeze(-1)
    return _into(result, out, "matmul")


def _contract(name: str, a: GPUArray, b: GPUArray, axes_a: Sequence[int],
              axes_b: Sequence[int]) -> GPUArray:
    """Sum over paired axes; result dims: a's free dims, then b's (tensordot's order)."""
    check_same_device(a, b, op=name)
    if len(axes_a) != len(axes_b):
        raise ValueError(f"{name}: axes lists differ in length ({len(axes_a)} and "
                         f"{len(axes_b)})")
    ax_a = [_layout.normalize_axis(x, a.ndim, argument="axes") for x in axes_a]
    ax_b = [_layout.normalize_axis(x, b.ndim, argument="axes") for x in axes_b]
    if len(set(ax_a)) != len(ax_a) or len(set(ax_b)) != len(ax_b):
        raise ValueError(f"{name}: repeated axis in axes")
    for i, j in zip(ax_a, ax_b, strict=True):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"{name}: shape mismatch for sum: a's axis {i} has length "
                             f"{a.shape[i]}, b's axis {j} has {b.shape[j]}")
    free_a = [d for d in range(a.ndim) if d not in ax_a]
    free_b = [d for d in range(b.ndim) if d not in ax_b]
    m = math.prod(a.shape[d] for d in free_a)
    n = math.prod(b.shape[d] for d in free_b)
    k = math.prod(a.shape[d] for d in ax_a)
    a3 = a.transpose(free_a + ax_a).reshape(1, m, k)
    b3 = b.transpose(ax_b + free_b).reshape(1, k, n)
    out = _bmm(name, a3, b3)
    return out.reshape(tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b))


def tensordot(a: GPUArray, b: GPUArray, axes: Any = 2) -> GPUArray:
    """Sum products over the last ``axes`` dims of ``a`` and first of ``b`` (NumPy's).

    ``axes`` is an int N (the last N of ``a`` with the first N of ``b``) or a pair of
    sequences of axes.  One GEMM for floating dtypes.
    """
    a = _array("tensordot", a, "a")
    b = _array("tensordot", b, "b")
    if isinstance(axes, (int, np.integer)):
        count = int(axes)
        if count < 0 or count > builtins.min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: axes must be between 0 and {min(a.ndim, b.ndim)}; "
                             f"got {count}")
        axes_a, axes_b = list(range(a.ndim - count, a.ndim)), list(range(count))
    else:
        try:
            first, second = axes
        except (TypeError, ValueError):
            raise TypeError("tensordot: axes must be an int or a pair of sequences of ints; "
                            f"got {axes!r}") from None
        axes_a = [int(first)] if isinstance(first, (int, np.integer)) else list(first)
        axes_b = [int(second)] if isinstance(second, (int, np.integer)) else list(second)
    return _contract("tensordot", a, b, axes_a, axes_b)


def dot(a: GPUArray, b: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """NumPy's ``dot``: the inner product of vectors, the matrix product of matrices.

    In general a sum product over the last axis of ``a`` and the second-to-last of ``b``.
    """
    a = _array("dot", a, "a")
    b = _array("dot", b, "b")
    if a.ndim == 0 or b.ndim == 0:
        result = binary("multiply", a, b)
    elif b.ndim == 1:
        result = _contract("dot", a, b, [-1], [0])
    else:
        result = _contract("dot", a, b, [-1], [-2])
    return _into(result, out, "dot")


def _into(result: GPUArray, out: GPUArray | None, name: str) -> GPUArray:
    if out is None:
        return result
    if not isinstance(out, GPUArray):
        raise TypeError(f"{name}: out must be a GPUArray; got {type(out).__name__}")
    if out.shape != result.shape or out.dtype != result.dtype:
        raise ValueError(f"{name}: out has shape {out.shape} and dtype {out.dtype.name}; the "
                         f"result has {result.shape} and {result.dtype.name}")
    copy_into(result, out)
    return out


def vdot(a: GPUArray, b: GPUArray) -> GPUArray:
    """Dot product of the flattened arrays (0-d result)."""
    a = _array("vdot", a, "a")
    b = _array("vdot", b, "b")
    if a.size != b.size:
        raise ValueError(f"vdot: a has {a.size} elements and b {b.size}")
    if a.dtype.kind == "c":  # NumPy's vdot conjugates the first argument
        a = hooks.complex.unary("conjugate", a, None)
    return _contract("vdot", a.reshape(-1), b.reshape(-1), [0], [0])


def inner(a: GPUArray, b: GPUArray) -> GPUArray:
    """Sum product over the last axes (NumPy's ``inner``)."""
    a = _array("inner", a, "a")
    b = _array("inner", b, "b")
    if a.ndim == 0 or b.ndim == 0:
        return binary("multiply", a, b)
    return _contract("inner", a, b, [-1], [-1])


def outer(a: GPUArray, b: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """``a.ravel()[:, None] * b.ravel()[None, :]`` (one elementwise kernel)."""
    a = _array("outer", a, "a")
    b = _array("outer", b, "b")
    result = binary("multiply", a.reshape(-1, 1), b.reshape(1, -1), out)
    return result


def diagonal(x: GPUArray, offset: int = 0, axis1: int = 0, axis2: int = 1) -> GPUArray:
    """The diagonal ``offset`` of the planes of ``axis1`` and ``axis2``: a strided view.

    The result drops both axes and appends the diagonal as the last (NumPy's order); writing
    to it writes ``x``.
    """
    x = _array("diagonal", x, "x")
    if x.ndim < 2:
        raise ValueError(f"diagonal: x must have at least 2 dims; got shape {x.shape}")
    a1 = _layout.normalize_axis(axis1, x.ndim, argument="axis1")
    a2 = _layout.normalize_axis(axis2, x.ndim, argument="axis2")
    if a1 == a2:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same")
    offset = int(offset)
    n1, n2 = x.shape[a1], x.shape[a2]
    start1, start2 = builtins.max(-offset, 0), builtins.max(offset, 0)
    length = builtins.max(0, builtins.min(n1 - start1, n2 - start2))
    keep = [d for d in range(x.ndim) if d not in (a1, a2)]
    shape = (*(x.shape[d] for d in keep), length)
    strides = (*(x.strides[d] for d in keep), x.strides[a1] + x.strides[a2])
    begin = (start1 * x.strides[a1] + start2 * x.strides[a2]) if length else 0
    return GPUArray(x._rt, x._block, x._offset + begin, shape, strides, x.dtype)


def trace(x: GPUArray, offset: int = 0, axis1: int = 0, axis2: int = 1,
          dtype: Any = None) -> GPUArray:
    """Sum along the diagonal (NumPy's ``trace``; integer sums in int64)."""
    d = diagonal(x, offset, axis1, axis2)
    result = reduce("sum", d, -1)
    return result if dtype is None or result.dtype == np.dtype(dtype) else result.astype(dtype)


def _triangle(name: str, x: GPUArray, k: int, lower: bool) -> GPUArray:
    x = _array(name, x, "x")
    if x.ndim < 2:
        raise ValueError(f"{name}: x must have at least 2 dims; got shape {x.shape}")
    rows, cols = x.shape[-2:]
    device = x._rt.index
    r = arange(rows, device=device).reshape(rows, 1)
    c = arange(cols, device=device).reshape(1, cols)
    diff = binary("subtract", c, r)
    keep = (binary("less_equal", diff, int(k)) if lower
            else binary("greater_equal", diff, int(k)))
    zero = empty_on(x._rt, (), x.dtype)
    fill(zero, 0)
    return where(keep, x, zero)


def tril(x: GPUArray, k: int = 0) -> GPUArray:
    """``x`` with elements above diagonal ``k`` of the last two dims zeroed."""
    return _triangle("tril", x, k, lower=True)


def triu(x: GPUArray, k: int = 0) -> GPUArray:
    """``x`` with elements below diagonal ``k`` of the last two dims zeroed."""
    return _triangle("triu", x, k, lower=False)


def matrix_transpose(x: GPUArray) -> GPUArray:
    """Swap the last two dims (a view)."""
    x = _array("matrix_transpose", x, "x")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: x must have at least 2 dims; got shape {x.shape}")
    return x.swapaxes(-1, -2)


def vecdot(x1: GPUArray, x2: GPUArray, /, *, axis: int = -1) -> GPUArray:
    """Dot product along ``axis`` with the other dims broadcast (the standard's ``vecdot``).

    A multiply and one sum reduction (a GEMM with one row and one column per batch element
    would read the same bytes more slowly).
    """
    x1 = _array("vecdot", x1, "x1")
    x2 = _array("vecdot", x2, "x2")
    shape = _layout.broadcast_shapes(x1.shape, x2.shape)
    ax = _layout.normalize_axis(axis, len(shape))
    lengths = [x.shape[ax - len(shape) + x.ndim] if ax - len(shape) + x.ndim >= 0 else 1
               for x in (x1, x2)]
    if lengths[0] != lengths[1]:
        raise ValueError(f"vecdot: the contracted dims differ ({lengths[0]} and {lengths[1]}); "
                         "they must be equal, not broadcast")
    if x1.dtype.kind == "c":  # the standard's vecdot conjugates x1
        x1 = hooks.complex.unary("conjugate", x1, None)
    result = reduce("sum", binary("multiply", x1, x2), axis)
    dtype = _product_dtype("vecdot", x1, x2)  # integer sums come in int64
    return result if result.dtype == dtype else result.astype(dtype)


# -- norms -----------------------------------------------------------------------------------------
def _float_of(x: GPUArray) -> GPUArray:
    """Floats as they are (half types in float32); integers and bool in float64.

    Complex arrays as their magnitudes ``|x|``: every norm of ``x`` is that norm of ``|x|``.
    """
    if x.dtype.kind == "c":
        return unary("absolute", x)
    if x.dtype in (float16, bfloat16):
        return x.astype(float32)
    return x if x.dtype.kind == "f" else x.astype(float64)


def _half_back(x: GPUArray, result: GPUArray) -> GPUArray:
    """A half-type input's norm, computed in float32, rounded back to its dtype."""
    return result.astype(x.dtype) if x.dtype in (float16, bfloat16) else result


def _vector_norm(x: GPUArray, ord: Any, axis: Any, keepdims: bool) -> GPUArray:
    x = _float_of(x)
    a = unary("absolute", x)
    if ord is None or ord == 2:
        return unary("sqrt", reduce("sum", binary("multiply", x, x), axis, keepdims))
    if ord == math.inf:
        return reduce("max", a, axis, keepdims)
    if ord == -math.inf:
        return reduce("min", a, axis, keepdims)
    if ord == 0:
        nonzero = binary("not_equal", x, 0)
        return reduce("sum", nonzero, axis, keepdims).astype(x.dtype)
    if ord == 1:
        return reduce("sum", a, axis, keepdims)
    p = float(ord)
    powered = binary("power", a, p)
    return binary("power", reduce("sum", powered, axis, keepdims), 1.0 / p)


def _matrix_norm(x: GPUArray, ord: Any, axes: tuple[int, int],
                 keepdims: bool) -> GPUArray:
    x = _float_of(x)
    r, c = axes
    if ord in (None, "fro"):
        result = unary("sqrt", reduce("sum", binary("multiply", x, x), axes, keepdims=True))
    elif ord in (1, -1, math.inf, -math.inf):
        a = unary("absolute", x)
        inner_axis, outer_axis = (r, c) if ord in (1, -1) else (c, r)
        sums = reduce("sum", a, inner_axis, keepdims=True)
        result = reduce("max" if ord in (1, math.inf) else "min", sums, outer_axis,
                        keepdims=True)
    elif ord in ("nuc", 2, -2):
        raise NotImplementedError(
            f"norm: the matrix norm ord={ord!r} needs singular values (an SVD), which "
            "PyGPUkit does not compute; use ord='fro', 1, -1, inf or -inf")
    else:
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    if keepdims:
        return result
    return result.squeeze(axes)


def norm(x: GPUArray, ord: Any = None, axis: Any = None,
         keepdims: bool = False) -> GPUArray:
    """Vector or matrix norm (NumPy's ``linalg.norm``).

    Vector norms (1-D, or an int ``axis``): ``ord`` None/2, 1, inf, -inf, 0 (count of
    non-zeros), any other p (``sum(|x|**p)**(1/p)``).  Matrix norms (2-D, or a 2-tuple
    ``axis``): None/'fro', 1, -1, inf, -inf.  'nuc', 2 and -2 of matrices need an SVD and
    raise NotImplementedError.  Integer inputs are computed in float64.
    """
    x = _array("norm", x, "x")
    return _half_back(x, _norm(x, ord, axis, keepdims))


def _norm(x: GPUArray, ord: Any, axis: Any, keepdims: bool) -> GPUArray:
    if axis is None:
        if ord is None:
            flat = x.reshape(-1)
            result = _vector_norm(flat, None, 0, False)
            return result.reshape((1,) * x.ndim) if keepdims else result
        if x.ndim == 1:
            return _vector_norm(x, ord, 0, keepdims)
        if x.ndim == 2:
            return _matrix_norm(x, ord, (0, 1), keepdims)
        raise ValueError(f"norm: improper number of dimensions to norm ({x.ndim})")
    if isinstance(axis, (int, np.integer)):
        if isinstance(ord, str):
            raise ValueError(f"norm: invalid norm order {ord!r} for vectors")
        return _vector_norm(x, ord, _layout.normalize_axis(int(axis), x.ndim), keepdims)
    axes = tuple(_layout.normalize_axis(int(a), x.ndim) for a in axis)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) != 2 or axes[0] == axes[1]:
        raise ValueError(f"norm: axis must be an int or two distinct ints; got {axis!r}")
    return _matrix_norm(x, ord, (axes[0], axes[1]), keepdims)


def vector_norm(x: GPUArray, /, *, axis: Any = None, keepdims: bool = False,
                ord: Any = 2) -> GPUArray:
    """The standard's ``linalg.vector_norm``: a vector norm over ``axis`` (None: all)."""
    x = _array("vector_norm", x, "x")
    if isinstance(ord, str):
        raise ValueError(f"vector_norm: invalid norm order {ord!r}")
    if axis is None:
        result = _vector_norm(x.reshape(-1), ord, 0, False)
        return _half_back(x, result.reshape((1,) * x.ndim) if keepdims else result)
    return _half_back(x, _vector_norm(x, ord, axis, keepdims))


def matrix_norm(x: GPUArray, /, *, keepdims: bool = False,
                ord: Any = "fro") -> GPUArray:
    """The standard's ``linalg.matrix_norm`` over the last two dims ('nuc'/2/-2: no SVD)."""
    x = _array("matrix_norm", x, "x")
    if x.ndim < 2:
        raise ValueError(f"matrix_norm: x must have at least 2 dims; got shape {x.shape}")
    return _half_back(x, _matrix_norm(x, ord, (x.ndim - 2, x.ndim - 1), keepdims))


__all__ = ["diagonal", "dot", "inner", "matrix_transpose", "outer", "tensordot", "trace",
           "tril", "triu", "vdot", "vecdot"]
