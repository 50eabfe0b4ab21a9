"""Creating arrays: empty/zeros/ones/full, ranges, eye, the *_like forms, and conversion."""

from __future__ import annotations

import copyreg
import math
from typing import Any

import numpy as np

from pygpukit import _layout
from pygpukit._array import GPUArray
from pygpukit._device import runtime_for
from pygpukit._dtypes import complex64, complex128, default_dtype_for, float32, normalize_dtype
from pygpukit._stream import stream_for_runtime
from pygpukit._transfer import copy_into, empty_on, fill, touch, upload


def _dtype_or(dtype: Any, fallback: np.dtype[Any]) -> np.dtype[Any]:
    return fallback if dtype is None else normalize_dtype(dtype)


def empty(shape: Any, dtype: Any = float32, *, device: Any = None) -> GPUArray:
    """Return a new array of ``shape`` and ``dtype`` with uninitialized contents.

    Parameters
    ----------
    shape
        An int or a sequence of ints.
    dtype
        Element type; float32 by default (the default floating dtype of PyGPUkit).
    device
        Device index or :class:`~pygpukit.Device`; the current device if omitted.
    """
    return empty_on(runtime_for(device), _layout.as_shape(shape), normalize_dtype(dtype))


def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: Any = None) -> GPUArray:
    """Return a new array filled with ``fill_value`` (dtype inferred from it if omitted)."""
    if isinstance(fill_value, GPUArray):
        out = empty(shape, _dtype_or(dtype, fill_value.dtype), device=device)
        copy_into(fill_value, out)
        return out
    out = empty(shape, _dtype_or(dtype, default_dtype_for(fill_value)), device=device)
    fill(out, fill_value)
    return out


def zeros(shape: Any, dtype: Any = float32, *, device: Any = None) -> GPUArray:
    """Return a new array of ``shape`` and ``dtype`` filled with zeros."""
    return full(shape, 0, dtype, device=device)


def ones(shape: Any, dtype: Any = float32, *, device: Any = None) -> GPUArray:
    """Return a new array of ``shape`` and ``dtype`` filled with ones."""
    return full(shape, 1, dtype, device=device)


def _like(a: GPUArray, dtype: Any, shape: Any) -> tuple[Any, np.dtype[Any], tuple[int, ...]]:
    if not isinstance(a, GPUArray):
        raise TypeError(f"a: expected a GPUArray; got {type(a).__name__}")
    return (a._rt.index, _dtype_or(dtype, a.dtype),
            a.shape if shape is None else _layout.as_shape(shape))


def empty_like(a: GPUArray, dtype: Any = None, *, shape: Any = None) -> GPUArray:
    """A new uninitialized array with ``a``'s shape, dtype and device (unless overridden)."""
    device, dt, sh = _like(a, dtype, shape)
    return empty(sh, dt, device=device)


def zeros_like(a: GPUArray, dtype: Any = None, *, shape: Any = None) -> GPUArray:
    """Zeros with ``a``'s shape, dtype and device (unless overridden)."""
    device, dt, sh = _like(a, dtype, shape)
    return zeros(sh, dt, device=device)


def ones_like(a: GPUArray, dtype: Any = None, *, shape: Any = None) -> GPUArray:
    """Ones with ``a``'s shape, dtype and device (unless overridden)."""
    device, dt, sh = _like(a, dtype, shape)
    return ones(sh, dt, device=device)


def full_like(a: GPUArray, fill_value: Any, dtype: Any = None, *, shape: Any = None) -> GPUArray:
    """``fill_value`` everywhere, with ``a``'s shape, dtype and device (unless overridden)."""
    device, dt, sh = _like(a, dtype, shape)
    return full(sh, fill_value, dt, device=device)


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None, *,
           device: Any = None) -> GPUArray:
    """Evenly spaced values in ``[start, stop)``, computed on the device.

    Like ``numpy.arange``, but a float range defaults to float32 (PyGPUkit's default float);
    element ``i`` is ``start + i * step`` computed in float64 (int64 for integer dtypes) and
    rounded once to ``dtype``.
    """
    if stop is None:
        start, stop = 0, start
    for name, value in (("start", start), ("stop", stop), ("step", step)):
        if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
            raise TypeError(f"arange: {name} must be an int or float; got {value!r}")
    if step == 0:
        raise ValueError("arange: step must not be zero")
    is_int = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
    n = (len(range(int(start), int(stop), int(step))) if is_int
         else max(0, math.ceil((float(stop) - float(start)) / float(step))))
    dt = _dtype_or(dtype, np.dtype(np.int64) if is_int else float32)
    if dt.kind == "c":  # the real range, then cast (no kernel takes complex)
        part = np.dtype(np.float64) if dt.itemsize == 16 else float32
        return arange(start, stop, step, part, device=device).astype(dt)
    out = empty((n,), dt, device=device)
    if n:
        stream = stream_for_runtime(out._rt)
        touch(stream, written=out)
        out._rt.arange(out, start, step, stream)
    return out


def linspace(start: float | complex, stop: float | complex, num: int = 50,
             endpoint: bool = True, dtype: Any = None, *, device: Any = None) -> GPUArray:
    """Return ``num`` evenly spaced values from ``start`` to ``stop``.

    NumPy's formula, computed in float64 and rounded once to ``dtype`` (float32 by default;
    complex64 for a complex ``start`` or ``stop``, whose parts are spaced separately).
    """
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative; got {num}")
    complex_ends = isinstance(start, (complex, np.complexfloating)) or isinstance(
        stop, (complex, np.complexfloating))
    dt = _dtype_or(dtype, complex64 if complex_ends else float32)
    if dt.kind == "c" or complex_ends:
        first, last = complex(start), complex(stop)
        cdt = dt if dt.kind == "c" else complex64
        part = np.dtype(np.float64) if cdt == complex128 else float32
        spaced = [linspace(a, b, num, endpoint, part, device=device)
                  for a, b in ((first.real, last.real), (first.imag, last.imag))]
        out = empty((int(num),), cdt, device=device)
        copy_into(spaced[0], out.real)
        copy_into(spaced[1], out.imag)
        return out if dt.kind == "c" else out.astype(dt)  # NumPy's ComplexWarning
    out = empty((int(num),), dt, device=device)
    if num:
        stream = stream_for_runtime(out._rt)
        touch(stream, written=out)
        out._rt.linspace(out, float(start.real), float(stop.real), bool(endpoint), stream)
    return out


def eye(n: int, m: int | None = None, k: int = 0, dtype: Any = float32, *,
        device: Any = None) -> GPUArray:
    """Return an ``n`` by ``m`` array with ones on diagonal ``k`` and zeros elsewhere."""
    m = n if m is None else m
    out = zeros((n, m), dtype, device=device)
    # The diagonal is a strided view: one step down and one right at a time.
    first = (max(-k, 0), max(k, 0))
    length = max(0, min(n - first[0], m - first[1]))
    if length:
        diag = GPUArray(out._rt, out._block, first[0] * out.strides[0] + first[1] * out.strides[1],
                        (length,), (out.strides[0] + out.strides[1],), out.dtype)
        fill(diag, 1)
    return out


def from_numpy(array: np.ndarray[Any, Any], *, device: Any = None) -> GPUArray:
    """Copy a NumPy array to a new array on the device (any layout; the result is C-contiguous).

    The copy is enqueued on the current stream; the host array may be modified or freed as soon
    as this returns.
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"array: expected a numpy.ndarray; got {type(array).__name__}")
    return upload(runtime_for(device), array)


def asarray(obj: Any, dtype: Any = None, *, device: Any = None) -> GPUArray:
    """Convert ``obj`` to a GPUArray, without copying when possible.

    Accepts GPUArrays (returned as is, or converted with ``astype``), objects with
    ``__cuda_array_interface__`` or ``__dlpack__`` (zero-copy when on the same device), NumPy
    arrays, nested lists and scalars (copied to the device).
    """
    if isinstance(obj, GPUArray):
        out = obj if device is None else obj.to(device)
        return out if dtype is None else out.astype(dtype, copy=False)
    if not isinstance(obj, np.ndarray) and (
        hasattr(obj, "__cuda_array_interface__") or hasattr(obj, "__dlpack__")
    ):
        from pygpukit._dlpack import from_foreign

        out = from_foreign(obj)
        if device is not None:
            out = out.to(device)
        return out if dtype is None else out.astype(dtype, copy=False)
    if isinstance(obj, (bool, int, float, complex)) and dtype is None:
        host = np.asarray(obj, dtype=default_dtype_for(obj))
    else:
        host = np.asarray(obj, dtype=None if dtype is None else normalize_dtype(dtype))
        if dtype is None and host.dtype == np.float64 and not isinstance(obj, np.ndarray):
            host = host.astype(float32)  # Python floats become the default float dtype
        if dtype is None and host.dtype == complex128 and not isinstance(obj, np.ndarray):
            host = host.astype(complex64)  # and Python complex numbers the default complex
    return upload(runtime_for(device), host)


def ascontiguousarray(a: Any, dtype: Any = None) -> GPUArray:
    """``a`` itself if it is C-contiguous (and of ``dtype``), else a contiguous copy."""
    if not isinstance(a, GPUArray):
        return asarray(a, dtype)
    if a.is_contiguous() and (dtype is None or normalize_dtype(dtype) == a.dtype):
        return a
    out = empty_on(a._rt, a.shape, _dtype_or(dtype, a.dtype))
    copy_into(a, out)
    return out


def to_numpy(array: GPUArray) -> np.ndarray[Any, Any]:
    """Copy ``array`` to a new NumPy array (same as ``array.to_numpy()``)."""
    if not isinstance(array, GPUArray):
        raise TypeError(f"array: expected a GPUArray; got {type(array).__name__}")
    return array.to_numpy()


# -- pickling --------------------------------------------------------------------------------------
def _rebuild(host: np.ndarray[Any, Any]) -> GPUArray:
    """Unpickle a GPUArray: its host bytes copied to the current device (``pickle`` support)."""
    return from_numpy(host)


def _reduce(array: GPUArray) -> tuple[Any, tuple[np.ndarray[Any, Any]]]:
    """Pickle a GPUArray as a host copy of its elements (C order; waits for its stream).

    The array is rebuilt on the *current* device of the process that unpickles it (a Dask
    worker's own GPU), not on the device it came from.  NumPy's pickling of the host copy
    supports protocol 5's out-of-band buffers, which ``distributed`` uses.
    """
    return _rebuild, (array.to_numpy(),)


copyreg.pickle(GPUArray, _reduce)
