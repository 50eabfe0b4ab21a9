"""Array creation, transfer and arithmetic: argument checking, then the backend does the work."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pygpukit._array import GPUArray
from pygpukit._backend import get_backend, shape_tuple
from pygpukit._dtypes import float32, normalize_dtype

ShapeLike = int | Sequence[int]

#: dtypes with a precompiled ``add`` kernel; both backends accept exactly these, so a program
#: that runs on the CPU simulation runs on the GPU too.
ADD_DTYPES = (float32,)


def empty(shape: ShapeLike, dtype: object = float32) -> GPUArray:
    """Return a new array of ``shape`` and ``dtype`` without initializing its elements."""
    return get_backend().empty(shape_tuple(shape), normalize_dtype(dtype))


def zeros(shape: ShapeLike, dtype: object = float32) -> GPUArray:
    """Return a new array of ``shape`` and ``dtype`` filled with zeros."""
    return get_backend().full(shape_tuple(shape), normalize_dtype(dtype), 0)


def ones(shape: ShapeLike, dtype: object = float32) -> GPUArray:
    """Return a new array of ``shape`` and ``dtype`` filled with ones."""
    return get_backend().full(shape_tuple(shape), normalize_dtype(dtype), 1)


def from_numpy(array: np.ndarray[Any, Any]) -> GPUArray:
    """Copy a NumPy array to a new GPUArray (on the GPU when the CUDA backend is in use).

    The copy is enqueued on the array's stream; the host array may be modified or freed as
    soon as this returns.

    Raises
    ------
    TypeError
        If ``array`` is not a NumPy array or its dtype is not supported.
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"array: expected a numpy.ndarray; got {type(array).__name__}")
    normalize_dtype(array.dtype, argument="array.dtype")
    # Not np.ascontiguousarray: it turns 0-d arrays into 1-d ones.
    contiguous = array if array.flags.c_contiguous else array.copy(order="C")
    return get_backend().from_numpy(contiguous)


def to_numpy(array: GPUArray) -> np.ndarray[Any, Any]:
    """Copy ``array`` to a new NumPy array (same as ``array.to_numpy()``)."""
    if not isinstance(array, GPUArray):
        raise TypeError(f"array: expected a GPUArray; got {type(array).__name__}")
    return array.to_numpy()


def add(a: GPUArray, b: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise ``a + b``, enqueued on the GPU; returns without waiting for the result.

    Parameters
    ----------
    a, b
        Arrays of the same shape and dtype (float32 in this version).
    out
        Optional array of that shape and dtype to write the result into; it may be ``a`` or
        ``b`` itself.

    Raises
    ------
    TypeError
        If an operand is not a GPUArray or the dtypes are unsupported or differ.
    ValueError
        If the shapes differ, or the arrays are on different backends.
    """
    for name, value in (("a", a), ("b", b)):
        if not isinstance(value, GPUArray):
            raise TypeError(f"add: {name} must be a GPUArray; got {type(value).__name__}")
    if a.dtype != b.dtype:
        raise TypeError(f"add: dtypes differ ({a.dtype.name} and {b.dtype.name})")
    if a.dtype not in ADD_DTYPES:
        supported = ", ".join(d.name for d in ADD_DTYPES)
        raise TypeError(f"add: no kernel for dtype {a.dtype.name} (supported: {supported})")
    if a.shape != b.shape:
        raise ValueError(f"add: operand shapes differ: {a.shape} and {b.shape}")
    if a._backend is not b._backend:
        raise ValueError(f"add: operands are on different backends ({a.backend}, {b.backend})")
    if out is None:
        out = a._backend.empty(a.shape, a.dtype)
    else:
        if not isinstance(out, GPUArray):
            raise TypeError(f"add: out must be a GPUArray; got {type(out).__name__}")
        if out.shape != a.shape or out.dtype != a.dtype:
            raise ValueError(
                f"add: out has shape {out.shape} and dtype {out.dtype.name}; "
                f"expected {a.shape} and {a.dtype.name}"
            )
        if out._backend is not a._backend:
            raise ValueError("add: out is on a different backend than the operands")
    a._backend.add(a, b, out)
    return out


def synchronize() -> None:
    """Wait until all work enqueued by PyGPUkit in this process has finished."""
    get_backend().synchronize()
