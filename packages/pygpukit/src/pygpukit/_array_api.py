"""The Array API standard's (2024.12) functions that differ from PyGPUkit's NumPy-like ones.

Data type functions, creation with ``device=``, manipulation, statistics with ``dtype=`` /
``correction=``, and the inspection namespace.

The namespace users get from ``x.__array_namespace__()`` is :mod:`pygpukit.array_api`; it takes
these and PyGPUkit's own functions where those conform already.  Everything runs on the device
through the existing kernels; nothing here copies to the host.
"""

from __future__ import annotations

import builtins
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from pygpukit import _creation, _layout
from pygpukit._array import GPUArray
from pygpukit._device import Device, device_count, runtime_for
from pygpukit._dtypes import (
    ALL_DTYPES,
    bfloat16,
    bool_,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    normalize_dtype,
    uint8,
)
from pygpukit._math import _broadcast, binary, reduce
from pygpukit._ops import clip as _clip
from pygpukit._ops import concatenate, stack
from pygpukit._transfer import copy_into, empty_on

__array_api_version__ = "2024.12"

#: The standard's dtypes PyGPUkit holds (no uint16/32/64; complex64 / complex128 composed
#: from the real kernels, pygpukit._complex); float16 and bfloat16 work with every function
#: too but are not the standard's.
STANDARD_DTYPES: dict[str, np.dtype[Any]] = {
    "bool": bool_, "int8": int8, "int16": int16, "int32": int32, "int64": int64,
    "uint8": uint8, "float32": float32, "float64": float64, "complex64": complex64,
    "complex128": complex128,
}

_KINDS: dict[str, tuple[np.dtype[Any], ...]] = {
    "bool": (bool_,),
    "signed integer": (int8, int16, int32, int64),
    "unsigned integer": (uint8,),
    "integral": (int8, int16, int32, int64, uint8),
    "real floating": (float16, bfloat16, float32, float64),
    "complex floating": (complex64, complex128),
    "numeric": (int8, int16, int32, int64, uint8, float16, bfloat16, float32, float64,
                complex64, complex128),
}


# -- data type functions ---------------------------------------------------------------------------
def _dtype_of(value: Any, argument: str) -> np.dtype[Any]:
    if isinstance(value, GPUArray):
        return value.dtype
    return normalize_dtype(value, argument=argument)


def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether ``dtype`` is of ``kind``.

    ``kind`` is a kind name (``"bool"``, ``"signed integer"``, ``"unsigned integer"``,
    ``"integral"``, ``"real floating"``, ``"complex floating"``, ``"numeric"``), a dtype, or a
    tuple of those.
    """
    if not isinstance(dtype, np.dtype) or dtype not in ALL_DTYPES:
        raise TypeError(f"isdtype: dtype must be a dtype of PyGPUkit; got {dtype!r}")
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in _KINDS:
                raise ValueError(f"isdtype: unknown kind {k!r}; expected one of "
                                 f"{', '.join(map(repr, _KINDS))}")
            if dtype in _KINDS[k]:
                return True
        elif isinstance(k, np.dtype):
            if dtype == k:
                return True
        else:
            raise TypeError(f"isdtype: kind must be a string, a dtype or a tuple of them; "
                            f"got {k!r}")
    return False


def _promote(a: Any, b: Any) -> np.dtype[Any]:
    """Two dtypes (or a dtype and a weak Python scalar type) promoted as NumPy / ml_dtypes."""
    try:
        return np.dtype(np.result_type(a, b))
    except TypeError:
        key = type(b) if isinstance(b, (bool, int, float, complex)) else b
        return np.dtype(np.multiply.resolve_dtypes((a, key, None))[-1])


def result_type(*arrays_and_dtypes: Any) -> np.dtype[Any]:
    """The dtype of an operation over these arrays, dtypes and Python scalars (weak)."""
    dtypes: list[np.dtype[Any]] = []
    scalars: list[Any] = []
    for item in arrays_and_dtypes:
        if isinstance(item, GPUArray):
            dtypes.append(item.dtype)
        elif isinstance(item, (bool, int, float, complex)):
            scalars.append(item)
        else:
            dtypes.append(normalize_dtype(item, argument="arrays_and_dtypes"))
    if not dtypes:
        raise ValueError("result_type: at least one array or dtype is required")
    result = dtypes[0]
    try:
        for dtype in dtypes[1:]:
            result = _promote(result, dtype)
        for scalar in scalars:  # the value itself: NumPy 2 treats Python scalars as weak
            result = _promote(result, scalar)
    except TypeError:
        names = ", ".join(d.name for d in dtypes)
        raise TypeError(f"result_type: no common dtype for {names}") from None
    if result not in ALL_DTYPES:
        raise TypeError(f"result_type: the promoted dtype {result.name} is not one PyGPUkit "
                        "holds")
    return result


def can_cast(from_: Any, to: Any, /) -> bool:
    """Whether ``from_`` (a dtype or array) casts to ``to`` under the promotion rules."""
    source = _dtype_of(from_, "from_")
    target = normalize_dtype(to, argument="to")
    return bool(np.can_cast(source, target, "safe"))


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 (the standard's name)
    """Machine limits of a floating dtype (the standard's ``finfo`` fields, as Python floats)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype[Any]


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801 (the standard's name)
    """Limits of an integer dtype (the standard's ``iinfo`` fields)."""

    bits: int
    max: int
    min: int
    dtype: np.dtype[Any]


def finfo(type: Any, /) -> finfo_object:
    """Machine limits of a floating dtype (or of an array's dtype).

    For a complex dtype, those of its parts' real dtype (``dtype`` is float32 for complex64),
    as the standard says.
    """
    dtype = _dtype_of(type, "type")
    if dtype.kind == "c":
        dtype = float64 if dtype == complex128 else float32
    if dtype == bfloat16:
        info: Any = ml_dtypes.finfo(bfloat16)  # type: ignore[no-untyped-call]
    elif dtype.kind == "f":
        info = np.finfo(dtype)
    else:
        raise TypeError(f"finfo: expected a floating dtype; got {dtype.name}")
    return finfo_object(int(info.bits), float(info.eps), float(info.max), float(info.min),
                        float(info.smallest_normal), dtype)


def iinfo(type: Any, /) -> iinfo_object:
    """Limits of an integer dtype (or of an array's dtype)."""
    dtype = _dtype_of(type, "type")
    if dtype.kind not in "iu":
        raise TypeError(f"iinfo: expected an integer dtype; got {dtype.name}")
    info = np.iinfo(dtype)
    return iinfo_object(int(info.bits), int(info.max), int(info.min), dtype)


def astype(x: GPUArray, dtype: Any, /, *, copy: bool = True, device: Any = None) -> GPUArray:
    """``x`` converted to ``dtype`` (and moved to ``device``).

    ``copy=False`` returns ``x`` itself when nothing changes.
    """
    if not isinstance(x, GPUArray):
        raise TypeError(f"astype: x must be a GPUArray; got {type(x).__name__}")
    if device is not None:
        x = x.to(device)
    return x.astype(dtype, copy=copy)


# -- creation --------------------------------------------------------------------------------------
def _float_default(dtype: Any) -> Any:
    return float32 if dtype is None else dtype


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None,
            copy: bool | None = None) -> GPUArray:
    """Convert ``obj`` to an array.

    ``obj``: a GPUArray, a DLPack / CUDA array interface object, a NumPy array, a nested
    sequence (of scalars or arrays) or a scalar.  ``copy=True`` always copies, ``copy=False``
    never (ValueError when it would have to), ``None`` copies only when needed.
    """
    if isinstance(obj, GPUArray):
        target = obj.dtype if dtype is None else normalize_dtype(dtype)
        moves = device is not None and runtime_for(device) is not obj._rt
        if copy is False and (moves or target != obj.dtype):
            raise ValueError("asarray: copy=False, but the conversion needs a copy")
        result = obj.to(device) if moves else obj
        if target != result.dtype or (copy and result is obj):
            result = result.astype(target, copy=True)
        return result
    if copy is False and not (hasattr(obj, "__dlpack__") or
                              hasattr(obj, "__cuda_array_interface__")):
        raise ValueError("asarray: copy=False, but a host object must be copied to the device")
    if isinstance(obj, (list, tuple)) and _holds_arrays(obj):
        return _asarray_nested(obj, dtype, device)
    result = _creation.asarray(obj, dtype, device=device)
    if copy and result is obj:
        result = result.copy()
    return result


def _holds_arrays(obj: Sequence[Any]) -> bool:
    return builtins.any(isinstance(item, GPUArray) or (isinstance(item, (list, tuple))
                                                       and _holds_arrays(item))
                        for item in obj)


def _asarray_nested(obj: Sequence[Any], dtype: Any, device: Any) -> GPUArray:
    """A sequence that holds arrays (e.g. 0-d results): stacked on the device."""
    items = [asarray(item, dtype=dtype, device=device) for item in obj]
    common = result_type(*items)
    return stack([item.astype(common, copy=False) for item in items])


def empty(shape: Any, *, dtype: Any = None, device: Any = None) -> GPUArray:
    """An uninitialized array (float32 unless ``dtype`` is given)."""
    return _creation.empty(shape, _float_default(dtype), device=device)


def zeros(shape: Any, *, dtype: Any = None, device: Any = None) -> GPUArray:
    """Zeros (float32 unless ``dtype`` is given)."""
    return _creation.zeros(shape, _float_default(dtype), device=device)


def ones(shape: Any, *, dtype: Any = None, device: Any = None) -> GPUArray:
    """Ones (float32 unless ``dtype`` is given)."""
    return _creation.ones(shape, _float_default(dtype), device=device)


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> GPUArray:
    """``fill_value`` everywhere (dtype from it: bool, int64, float32 or complex64)."""
    return _creation.full(shape, fill_value, dtype, device=device)


def _like_device(x: GPUArray, device: Any) -> Any:
    if not isinstance(x, GPUArray):
        raise TypeError(f"x: expected a GPUArray; got {type(x).__name__}")
    return x._rt.index if device is None else device


def empty_like(x: GPUArray, /, *, dtype: Any = None, device: Any = None) -> GPUArray:
    """Uninitialized, with ``x``'s shape and (unless given) dtype and device."""
    dev = _like_device(x, device)
    return _creation.empty(x.shape, x.dtype if dtype is None else dtype, device=dev)


def zeros_like(x: GPUArray, /, *, dtype: Any = None, device: Any = None) -> GPUArray:
    """Zeros with ``x``'s shape and (unless given) dtype and device."""
    dev = _like_device(x, device)
    return _creation.zeros(x.shape, x.dtype if dtype is None else dtype, device=dev)


def ones_like(x: GPUArray, /, *, dtype: Any = None, device: Any = None) -> GPUArray:
    """Ones with ``x``'s shape and (unless given) dtype and device."""
    dev = _like_device(x, device)
    return _creation.ones(x.shape, x.dtype if dtype is None else dtype, device=dev)


def full_like(x: GPUArray, /, fill_value: Any, *, dtype: Any = None,
              device: Any = None) -> GPUArray:
    """``fill_value`` with ``x``'s shape and (unless given) dtype and device."""
    dev = _like_device(x, device)
    return _creation.full(x.shape, fill_value, x.dtype if dtype is None else dtype,
                          device=dev)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None,
        device: Any = None) -> GPUArray:
    """Ones on diagonal ``k`` of an ``n_rows`` by ``n_cols`` matrix."""
    return _creation.eye(n_rows, n_cols, k, _float_default(dtype), device=device)


def linspace(start: float | complex, stop: float | complex, /, num: int, *,
             dtype: Any = None, device: Any = None, endpoint: bool = True) -> GPUArray:
    """``num`` evenly spaced values from ``start`` to ``stop`` (complex: each part spaced)."""
    return _creation.linspace(start, stop, num, endpoint, dtype, device=device)


def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None,
           device: Any = None) -> GPUArray:
    """Evenly spaced values in ``[start, stop)`` (see :func:`pygpukit.arange`)."""
    return _creation.arange(start, stop, step, dtype, device=device)


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> GPUArray:
    """An array from a DLPack producer (zero-copy on the same device unless ``copy``)."""
    from pygpukit._dlpack import from_dlpack as _from_dlpack

    if isinstance(x, GPUArray):
        return asarray(x, device=device, copy=copy)
    result = _from_dlpack(x)
    if device is not None:
        result = result.to(device)
    return result.copy() if copy else result


def meshgrid(*arrays: GPUArray, indexing: str = "xy") -> list[GPUArray]:
    """Coordinate matrices from 1-D coordinate arrays (``"xy"`` or ``"ij"`` indexing)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij'; got {indexing!r}")
    for x in arrays:
        if not isinstance(x, GPUArray) or x.ndim != 1:
            raise ValueError("meshgrid: every array must be a 1-D GPUArray")
    if arrays:
        result_type(*arrays)
    sizes = [x.shape[0] for x in arrays]
    if indexing == "xy" and len(arrays) > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, x in enumerate(arrays):
        position = i
        if indexing == "xy" and len(arrays) > 1 and i < 2:
            position = 1 - i
        shape = [1] * len(arrays)
        shape[position] = x.shape[0]
        grid = empty_on(x._rt, tuple(sizes), result_type(*arrays))
        copy_into(x.reshape(tuple(shape)), grid)
        out.append(grid)
    return out


# -- manipulation ----------------------------------------------------------------------------------
def broadcast_to(x: GPUArray, /, shape: Any) -> GPUArray:
    """A read-only-in-spirit view of ``x`` broadcast to ``shape`` (stride 0 where repeated)."""
    target = _layout.as_shape(shape)
    if not isinstance(x, GPUArray):
        raise TypeError(f"broadcast_to: x must be a GPUArray; got {type(x).__name__}")
    if _layout.broadcast_shapes(x.shape, target) != target:
        raise ValueError(f"broadcast_to: shape {x.shape} does not broadcast to {target}")
    return _broadcast(x, target)


def broadcast_arrays(*arrays: GPUArray) -> list[GPUArray]:
    """Views of the arrays broadcast to one shape."""
    shape = _layout.broadcast_shapes(*(x.shape for x in arrays))
    return [broadcast_to(x, shape) for x in arrays]


def concat(arrays: Sequence[GPUArray], /, *, axis: int | None = 0) -> GPUArray:
    """Join arrays along an existing axis (``axis=None``: of the flattened arrays)."""
    items = list(arrays)
    if axis is None:
        return concatenate([x.reshape(-1) for x in items], axis=0)
    return concatenate(items, axis=axis)


def permute_dims(x: GPUArray, /, axes: Sequence[int]) -> GPUArray:
    """Permute the dimensions (a view)."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"permute_dims: x must be a GPUArray; got {type(x).__name__}")
    return x.transpose(tuple(axes))


def moveaxis(x: GPUArray, source: Any, destination: Any, /) -> GPUArray:
    """Move axes to new positions, the others keeping their order (a view)."""
    src = [_layout.normalize_axis(a, x.ndim, argument="source")
           for a in (source if isinstance(source, (tuple, list)) else (source,))]
    dst = [_layout.normalize_axis(a, x.ndim, argument="destination")
           for a in (destination if isinstance(destination, (tuple, list)) else (destination,))]
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("moveaxis: source and destination must be distinct axes of equal "
                         "number")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return x.transpose(order)


def reshape(x: GPUArray, /, shape: Any, *, copy: bool | None = None) -> GPUArray:
    """``x`` with a new shape: a view when possible (``copy=False``: or ValueError)."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"reshape: x must be a GPUArray; got {type(x).__name__}")
    if copy:
        return x.copy().reshape(shape)
    result = x.reshape(shape)
    if copy is False and result._block is not x._block:
        raise ValueError("reshape: copy=False, but this reshape needs a copy")
    return result


def squeeze(x: GPUArray, /, axis: Any) -> GPUArray:
    """Drop the size-1 dims ``axis`` (a view)."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"squeeze: x must be a GPUArray; got {type(x).__name__}")
    return x.squeeze(tuple(axis) if isinstance(axis, list) else axis)


def expand_dims(x: GPUArray, /, axis: int = 0) -> GPUArray:
    """Insert a size-1 dim at ``axis`` (a view)."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"expand_dims: x must be a GPUArray; got {type(x).__name__}")
    return x.expand_dims(axis)


def unstack(x: GPUArray, /, *, axis: int = 0) -> tuple[GPUArray, ...]:
    """Views of ``x``'s slices along ``axis``."""
    ax = _layout.normalize_axis(axis, x.ndim)
    moved = moveaxis(x, ax, 0)
    return tuple(moved[i] for i in range(moved.shape[0]))


# -- statistics, utility, searching ----------------------------------------------------------------
def _summed(name: str, x: GPUArray, axis: Any, dtype: Any, keepdims: bool) -> GPUArray:
    if not isinstance(x, GPUArray):
        raise TypeError(f"{name}: x must be a GPUArray; got {type(x).__name__}")
    if dtype is not None:
        target = normalize_dtype(dtype)
        if target != x.dtype:
            x = x.astype(target)
        result = reduce(name, x, axis, keepdims)
        return result if result.dtype == target else result.astype(target)
    return reduce(name, x, axis, keepdims)


def sum(x: GPUArray, /, *, axis: Any = None, dtype: Any = None,
        keepdims: bool = False) -> GPUArray:
    """Sum over ``axis``, accumulated and returned in ``dtype`` if given."""
    return _summed("sum", x, axis, dtype, keepdims)


def prod(x: GPUArray, /, *, axis: Any = None, dtype: Any = None,
         keepdims: bool = False) -> GPUArray:
    """Product over ``axis``, accumulated and returned in ``dtype`` if given."""
    return _summed("prod", x, axis, dtype, keepdims)


def std(x: GPUArray, /, *, axis: Any = None, correction: float = 0.0,
        keepdims: bool = False) -> GPUArray:
    """Standard deviation over ``axis`` (divisor ``n - correction``)."""
    return reduce("std", x, axis, keepdims, ddof=correction)


def var(x: GPUArray, /, *, axis: Any = None, correction: float = 0.0,
        keepdims: bool = False) -> GPUArray:
    """Variance over ``axis`` (divisor ``n - correction``)."""
    return reduce("var", x, axis, keepdims, ddof=correction)


def count_nonzero(x: GPUArray, /, *, axis: Any = None, keepdims: bool = False) -> GPUArray:
    """Number of non-zero elements over ``axis`` (int64)."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"count_nonzero: x must be a GPUArray; got {type(x).__name__}")
    return reduce("sum", binary("not_equal", x, 0), axis, keepdims)


def clip(x: GPUArray, /, min: Any = None, max: Any = None) -> GPUArray:
    """``x`` limited to ``[min, max]`` (either may be None), keeping ``x``'s dtype."""
    if not isinstance(x, GPUArray):
        raise TypeError(f"clip: x must be a GPUArray; got {type(x).__name__}")
    if min is None and max is None:
        return x.copy()
    result = _clip(x, min, max)
    return result if result.dtype == x.dtype else result.astype(x.dtype)


def floor_divide(x1: Any, x2: Any, /) -> GPUArray:
    """``floor(x1 / x2)`` elementwise, with the standard's infinities.

    NumPy (and :func:`pygpukit.floor_divide`) give NaN for an infinite dividend and -1 / 0 for
    an infinite divisor; the standard asks ``x1 / x2`` there (an infinity, a signed zero).
    Floating operands cost three more passes for that.
    """
    from pygpukit._math import unary, where

    result = binary("floor_divide", x1, x2)
    if result.dtype.kind != "f" and result.dtype != bfloat16:
        return result
    a = x1 if isinstance(x1, GPUArray) else asarray(x1, dtype=result.dtype, device=result.device)
    b = x2 if isinstance(x2, GPUArray) else asarray(x2, dtype=result.dtype, device=result.device)
    infinite = binary("not_equal", unary("isinf", a), unary("isinf", b))
    return where(infinite, binary("divide", a, b), result)


def round(x: GPUArray, /) -> GPUArray:
    """Round to the nearest integer, halves to even; integers are returned as a copy."""
    from pygpukit._ops import round as _round

    if isinstance(x, GPUArray) and x.dtype.kind in "iu":
        return x.copy()
    return _round(x)


# -- inspection ------------------------------------------------------------------------------------
class Info:
    """What ``pygpukit.__array_namespace_info__()`` returns: the library's capabilities."""

    __module__ = "pygpukit"

    def capabilities(self) -> dict[str, Any]:
        """Boolean indexing, data-dependent shapes and max dimensions.

        The first two are present once ``nonzero`` is; max dimensions is the kernels'
        limit, 16.
        """
        dynamic = hasattr(sys.modules.get("pygpukit"), "nonzero")
        return {"boolean indexing": dynamic, "data-dependent shapes": dynamic,
                "max dimensions": 16}

    def default_device(self) -> Device:
        """The current device."""
        return Device()

    def devices(self) -> list[Device]:
        """Every device of the backend in use."""
        return [Device(i) for i in range(device_count())]

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype[Any]]:
        """The defaults: float32, complex64, and int64 for integral and indexing."""
        return {"real floating": float32, "complex floating": complex64, "integral": int64,
                "indexing": int64}

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, np.dtype[Any]]:
        """The standard's dtypes PyGPUkit holds, optionally only those of ``kind``."""
        if kind is None:
            return dict(STANDARD_DTYPES)
        return {name: dt for name, dt in STANDARD_DTYPES.items() if isdtype(dt, kind)}


def __array_namespace_info__() -> Info:  # noqa: N807 (the standard's name)
    """The Array API inspection namespace (capabilities, devices, dtypes)."""
    return Info()


#: The standard's constants.
e, inf, nan, pi = math.e, math.inf, math.nan, math.pi
newaxis = None

__all__ = [
    "__array_api_version__", "__array_namespace_info__", "arange", "asarray", "astype",
    "broadcast_arrays", "broadcast_to", "can_cast", "clip", "concat", "count_nonzero", "e",
    "empty", "empty_like", "expand_dims", "eye", "finfo", "floor_divide", "from_dlpack",
    "full", "full_like", "iinfo", "inf", "isdtype", "linspace", "meshgrid", "moveaxis", "nan",
    "newaxis", "ones", "ones_like", "permute_dims", "pi", "prod", "reshape", "result_type",
    "round", "squeeze", "std", "sum", "unstack", "var", "zeros", "zeros_like",
]
