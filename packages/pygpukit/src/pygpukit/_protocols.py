"""NumPy's protocols (NEP 13 ``__array_ufunc__``, NEP 18 ``__array_function__``) for GPUArray.

``np.add(a, b)``, ``np.exp(a)``, ``np.sum(a, axis=0)``, ``np.concatenate([a, b])``,
``np.einsum(...)``, ``np.linalg.norm(a)`` ... run on the device through PyGPUkit's own
functions and return GPUArrays.  Two tables say what runs:

* ``UFUNCS``: NumPy ufunc name -> PyGPUkit function, made from the op table
  (``pygpukit._optable``: every binary / unary spec whose name is a NumPy ufunc) plus the
  composed elementwise functions; ``ufunc.reduce`` for add / multiply / maximum / minimum /
  logical_and / logical_or.
* ``FUNCTIONS``: NumPy function -> an adapter taking NumPy's signature, or the name of a
  PyGPUkit function looked up when called (sorting, scans and indexing live in other modules).

What is not in them raises ``TypeError`` naming the NumPy function; NumPy arrays mixed with
GPUArrays raise ``TypeError`` too: nothing is copied between host and device implicitly (and
``np.asarray(gpu_array)`` still refuses).
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from pygpukit import (
    _array,
    _array_api,
    _complex,
    _creation,
    _einsum,
    _elementwise,
    _layout,
    _linalg_extra,
    _ops,
)
from pygpukit._array import GPUArray
from pygpukit._linalg import matmul
from pygpukit._optable import BINARY, UNARY
from pygpukit._transfer import copy_into

_HOST = "(no implicit host/device copies: move NumPy data with pygpukit.asarray(), results " \
        "with .to_numpy())"


def _not_implemented(what: str) -> TypeError:
    return TypeError(f"{what} is not implemented for pygpukit.GPUArray {_HOST}")


def _check_operands(what: str, values: Any) -> None:
    for value in values:
        if isinstance(value, np.ndarray):
            raise TypeError(f"{what}: got a numpy.ndarray operand beside a GPUArray {_HOST}")


def _reject(what: str, **given: tuple[Any, Any]) -> None:
    """TypeError for each NumPy option given a value other than its default."""
    for option, (value, default) in given.items():
        if value is not default and not (isinstance(default, (bool, int, str))
                                         and type(value) is type(default) and value == default):
            raise TypeError(f"{what}: {option}={value!r} is not supported for GPUArray")


# -- ufuncs ----------------------------------------------------------------------------------------
def _ufunc_table() -> dict[str, Callable[..., Any]]:
    table: dict[str, Callable[..., Any]] = {}
    for name in (*(s.name for s in BINARY), *(s.name for s in UNARY)):
        if isinstance(getattr(np, name, None), np.ufunc) and hasattr(_ops, name):
            table[getattr(np, name).__name__] = getattr(_ops, name)
    table.update({
        "arccos": _elementwise.acos, "arccosh": _elementwise.acosh,
        "arcsin": _elementwise.asin, "arcsinh": _elementwise.asinh,
        "arctan": _elementwise.atan, "arctan2": _elementwise.atan2,
        "arctanh": _elementwise.atanh, "cosh": _elementwise.cosh, "sinh": _elementwise.sinh,
        "tan": _elementwise.tan, "log2": _elementwise.log2, "log10": _elementwise.log10,
        "logaddexp": _elementwise.logaddexp, "hypot": _elementwise.hypot,
        "copysign": _elementwise.copysign, "signbit": _elementwise.signbit,
        "nextafter": _elementwise.nextafter, "trunc": _elementwise.trunc,
        "isfinite": _elementwise.isfinite, "positive": _elementwise.positive,
        "conjugate": _complex.conj, "left_shift": _elementwise.bitwise_left_shift,
        "right_shift": _elementwise.bitwise_right_shift, "matmul": matmul,
    })
    return table


UFUNCS: dict[str, Callable[..., Any]] = _ufunc_table()
#: ``ufunc.reduce`` -> reduction.
UFUNC_REDUCTIONS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
                    "logical_and": "all", "logical_or": "any"}


def array_ufunc(ufunc: Any, method: str, inputs: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
    """NEP 13: run ``ufunc`` (``__call__`` or ``reduce``) on GPUArrays."""
    name = getattr(ufunc, "__name__", repr(ufunc))
    what = f"numpy.{name}" if method == "__call__" else f"numpy.{name}.{method}"
    _check_operands(what, inputs)
    out = kwargs.pop("out", None)
    if isinstance(out, tuple):
        if len(out) != 1:
            raise _not_implemented(f"{what} with several outputs")
        out = out[0]
    if out is not None and not isinstance(out, GPUArray):
        raise TypeError(f"{what}: out must be a GPUArray; got {type(out).__name__} {_HOST}")
    dtype = kwargs.pop("dtype", None)
    if dtype is not None and method in ("__call__", "reduce"):
        # NumPy's ``dtype=``: the loop runs in ``dtype``: the GPUArray operands are cast to it.
        inputs = tuple(_cast(x, dtype) if isinstance(x, GPUArray) else x for x in inputs)
        dtype = None
    _reject(what, where=(kwargs.pop("where", True), True),
            dtype=(dtype, None),
            casting=(kwargs.pop("casting", "same_kind"), "same_kind"),
            order=(kwargs.pop("order", "K"), "K"), subok=(kwargs.pop("subok", True), True),
            signature=(kwargs.pop("signature", None), None),
            initial=(kwargs.pop("initial", None), None))
    if method == "__call__":
        function = UFUNCS.get(name)
        if function is None or kwargs:
            raise _not_implemented(what if not kwargs else f"{what} with {sorted(kwargs)}")
        if out is None:
            return function(*inputs)
        return function(*inputs, out=out)
    if method == "reduce" and name in UFUNC_REDUCTIONS:
        axis = kwargs.pop("axis", 0)
        keepdims = kwargs.pop("keepdims", False)
        if kwargs or len(inputs) != 1:
            raise _not_implemented(f"{what} with {sorted(kwargs)}")
        reduction = getattr(_ops, UFUNC_REDUCTIONS[name])
        return reduction(inputs[0], axis, keepdims, out=out)
    raise _not_implemented(what)


# -- functions -------------------------------------------------------------------------------------
def _cast(x: GPUArray, dtype: Any) -> GPUArray:
    # ``dtype is x.dtype``: dask passes the chunk's own dtype object (NumPy's dtypes are
    # singletons), and astype(copy=False) would return x after normalizing it.
    return x if dtype is None or dtype is x.dtype else x.astype(dtype, copy=False)


def _with_out(result: GPUArray, out: Any, what: str) -> GPUArray:
    if out is None:
        return result
    if not isinstance(out, GPUArray):
        raise TypeError(f"{what}: out must be a GPUArray; got {type(out).__name__} {_HOST}")
    if out.shape != result.shape:
        raise ValueError(f"{what}: out has shape {out.shape}; the result has {result.shape}")
    copy_into(result, out)
    return out


def _sum_like(name: str) -> Callable[..., GPUArray]:
    def adapter(a: GPUArray, axis: Any = None, dtype: Any = None, out: Any = None,
                keepdims: bool = False, initial: Any = None, where: Any = True) -> GPUArray:
        if initial is not None or where is not True:
            _reject(f"numpy.{name}", initial=(initial, None), where=(where, True))
        result = getattr(_ops, name)(_cast(a, dtype), axis, keepdims)
        if out is None:
            return _cast(result, dtype)
        return _with_out(_cast(result, dtype), out, f"numpy.{name}")
    return adapter


def _extreme(name: str) -> Callable[..., GPUArray]:
    def adapter(a: GPUArray, axis: Any = None, out: Any = None, keepdims: bool = False,
                initial: Any = None, where: Any = True) -> GPUArray:
        if initial is not None or where is not True:
            _reject(f"numpy.{name}", initial=(initial, None), where=(where, True))
        return getattr(_ops, name)(a, axis, keepdims, out=out)  # type: ignore[no-any-return]
    return adapter


def _mean(a: GPUArray, axis: Any = None, dtype: Any = None, out: Any = None,
          keepdims: bool = False, *, where: Any = True) -> GPUArray:
    if where is not True:
        _reject("numpy.mean", where=(where, True))
    return _with_out(_cast(_ops.mean(_cast(a, dtype), axis, keepdims), dtype), out,
                     "numpy.mean")


def _spread(name: str) -> Callable[..., GPUArray]:
    def adapter(a: GPUArray, axis: Any = None, dtype: Any = None, out: Any = None,
                ddof: float = 0, keepdims: bool = False, *, where: Any = True,
                mean: Any = None, correction: Any = None) -> GPUArray:
        if where is not True or mean is not None:
            _reject(f"numpy.{name}", where=(where, True), mean=(mean, None))
        result = getattr(_ops, name)(_cast(a, dtype), axis, keepdims,
                                     ddof=ddof if correction is None else correction)
        return _with_out(_cast(result, dtype), out, f"numpy.{name}")
    return adapter


def _truth(name: str) -> Callable[..., GPUArray]:
    def adapter(a: GPUArray, axis: Any = None, out: Any = None, keepdims: bool = False, *,
                where: Any = True) -> GPUArray:
        if where is not True:
            _reject(f"numpy.{name}", where=(where, True))
        return getattr(_ops, name)(a, axis, keepdims, out=out)  # type: ignore[no-any-return]
    return adapter


def _arg(name: str) -> Callable[..., GPUArray]:
    def adapter(a: GPUArray, axis: Any = None, out: Any = None, *,
                keepdims: bool = False) -> GPUArray:
        return getattr(_ops, name)(a, axis, keepdims, out=out)  # type: ignore[no-any-return]
    return adapter


def _join(name: str) -> Callable[..., GPUArray]:
    def adapter(arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None,
                casting: str = "same_kind") -> GPUArray:
        _reject(f"numpy.{name}", casting=(casting, "same_kind"))
        items = [_cast(x, dtype) for x in arrays]
        if name == "concatenate" and axis is None:
            items, axis = [x.reshape(-1) for x in items], 0
        result = getattr(_ops, name)(items, axis=axis)
        return _with_out(result, out, f"numpy.{name}")
    return adapter


def _where(condition: Any, *values: Any) -> Any:
    if not values:
        return _deferred("nonzero")(condition)
    if len(values) != 2:
        raise TypeError("numpy.where: either both or neither of x and y should be given")
    return _ops.where(condition, values[0], values[1])


def _clip(a: GPUArray, a_min: Any = None, a_max: Any = None, out: Any = None, *,
          min: Any = None, max: Any = None) -> GPUArray:
    lo = a_min if min is None else min
    hi = a_max if max is None else max
    return _ops.clip(a, lo, hi, out=out)


def _round(a: GPUArray, decimals: int = 0, out: Any = None) -> GPUArray:
    return _ops.round(a, decimals, out=out)


def _reshape(a: GPUArray, shape: Any = None, order: str = "C", *, newshape: Any = None,
             copy: Any = None) -> GPUArray:
    _reject("numpy.reshape", order=(order, "C"))
    return _array_api.reshape(a, newshape if shape is None else shape, copy=copy)


def _transpose(a: GPUArray, axes: Any = None) -> GPUArray:
    return a.transpose() if axes is None else a.transpose(tuple(axes))


def _ravel(a: GPUArray, order: str = "C") -> GPUArray:
    _reject("numpy.ravel", order=(order, "C"))
    return a.reshape(-1)


def _copy(a: GPUArray, order: str = "K", subok: bool = False) -> GPUArray:
    return a.copy()


def _like(name: str) -> Callable[..., GPUArray]:
    def adapter(a: GPUArray, *args: Any, dtype: Any = None, order: str = "K",
                subok: bool = True, shape: Any = None, device: Any = None) -> GPUArray:
        if name == "full_like":
            if not args:
                raise TypeError("numpy.full_like: fill_value is required")
            fill_value, args = args[0], args[1:]
        if args:
            dtype, args = args[0], args[1:]
        if args:
            raise TypeError(f"numpy.{name}: only a, {'fill_value, ' if name == 'full_like' else ''}"
                            "dtype may be positional for GPUArray")
        target = a.shape if shape is None else shape
        dt = a.dtype if dtype is None else dtype
        dev = a._rt.index if device is None else device
        if name == "full_like":
            return _array_api.full(target, fill_value, dtype=dt, device=dev)
        make: Callable[..., GPUArray] = getattr(_array_api, name.removesuffix("_like"))
        return make(target, dtype=dt, device=dev)
    return adapter


def _broadcast_to(array: GPUArray, shape: Any, subok: bool = False) -> GPUArray:
    return _array_api.broadcast_to(array, shape)


def _broadcast_arrays(*args: GPUArray, subok: bool = False) -> tuple[GPUArray, ...]:
    return tuple(_array_api.broadcast_arrays(*args))


def _astype(x: GPUArray, dtype: Any, /, *, copy: bool = True, device: Any = None) -> GPUArray:
    return _array_api.astype(x, dtype, copy=copy, device=device)


def _einsum_adapter(*operands: Any, out: Any = None, dtype: Any = None, order: str = "K",
                    casting: str = "safe", optimize: Any = False) -> GPUArray:
    _reject("numpy.einsum", dtype=(dtype, None), order=(order, "K"), casting=(casting, "safe"))
    subscripts, *arrays = operands
    return _einsum.einsum(subscripts, *arrays, out=out, optimize=optimize)


def _trace(a: GPUArray, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
           out: Any = None) -> GPUArray:
    return _with_out(_linalg_extra.trace(a, offset, axis1, axis2, dtype), out, "numpy.trace")


def _size(a: GPUArray, axis: Any = None) -> int:
    return a.size if axis is None else a.shape[axis]


def _isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> GPUArray:
    """NumPy's ``isclose``: ``|a - b| <= atol + rtol * |b|``.

    Infinities are close only to themselves, NaNs to each other when ``equal_nan``.
    """
    close = _ops.less_equal(_ops.absolute(_ops.subtract(a, b)),
                            _ops.add(_ops.multiply(_ops.absolute(b), rtol), atol)
                            if isinstance(b, GPUArray) else atol + rtol * abs(b))
    result = _ops.logical_or(close, _ops.equal(a, b))
    if equal_nan:
        both = _ops.logical_and(_ops.isnan(a) if isinstance(a, GPUArray) else np.isnan(a),
                                _ops.isnan(b) if isinstance(b, GPUArray) else np.isnan(b))
        result = _ops.logical_or(result, both)
    return result


def _allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
              equal_nan: bool = False) -> bool:
    """NumPy's ``allclose`` (a Python bool: waits for the device, as ``bool(x)`` does)."""
    return bool(_ops.all(_isclose(a, b, rtol, atol, equal_nan)).item())


def _array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    """NumPy's ``array_equal`` (a Python bool: waits for the device)."""
    if not isinstance(a1, GPUArray) or not isinstance(a2, GPUArray) or a1.shape != a2.shape:
        return False
    equal = _ops.equal(a1, a2)
    if equal_nan and a1.dtype.kind == "f":
        equal = _ops.logical_or(equal, _ops.logical_and(_ops.isnan(a1), _ops.isnan(a2)))
    return bool(_ops.all(equal).item())


def _deferred(name: str) -> Callable[..., Any]:
    """A function of PyGPUkit's public namespace, looked up when called."""
    def call(*args: Any, **kwargs: Any) -> Any:
        function = getattr(sys.modules.get("pygpukit"), name, None)
        if function is None:
            raise _not_implemented(f"numpy.{name}")
        return function(*args, **kwargs)
    return call


_ADAPTERS: dict[str, Callable[..., Any]] = {
    "sum": _sum_like("sum"), "prod": _sum_like("prod"), "mean": _mean,
    "max": _extreme("max"), "amax": _extreme("max"), "min": _extreme("min"),
    "amin": _extreme("min"), "var": _spread("var"), "std": _spread("std"),
    "any": _truth("any"), "all": _truth("all"), "argmax": _arg("argmax"),
    "argmin": _arg("argmin"), "concatenate": _join("concatenate"), "concat": _join("concatenate"),
    "stack": _join("stack"), "where": _where, "clip": _clip, "round": _round, "around": _round,
    "reshape": _reshape, "transpose": _transpose, "permute_dims": _transpose,
    "swapaxes": lambda a, axis1, axis2: a.swapaxes(axis1, axis2),
    "squeeze": lambda a, axis=None: a.squeeze(tuple(axis) if isinstance(axis, list) else axis),
    "expand_dims": lambda a, axis: a.expand_dims(tuple(axis) if isinstance(axis, list)
                                                 else axis),
    "ravel": _ravel, "copy": _copy, "moveaxis": _array_api.moveaxis,
    "broadcast_to": _broadcast_to, "broadcast_arrays": _broadcast_arrays,
    "zeros_like": _like("zeros_like"), "ones_like": _like("ones_like"),
    "empty_like": _like("empty_like"), "full_like": _like("full_like"), "astype": _astype,
    "dot": _linalg_extra.dot, "vdot": _linalg_extra.vdot, "inner": _linalg_extra.inner,
    "outer": _linalg_extra.outer, "tensordot": _linalg_extra.tensordot,
    "einsum": _einsum_adapter, "trace": _trace, "diagonal": _linalg_extra.diagonal,
    "tril": _linalg_extra.tril, "triu": _linalg_extra.triu,
    "matrix_transpose": _linalg_extra.matrix_transpose,
    "linalg.norm": _linalg_extra.norm, "linalg.vector_norm": _linalg_extra.vector_norm,
    "linalg.matrix_norm": _linalg_extra.matrix_norm,
    "linalg.matrix_transpose": _linalg_extra.matrix_transpose,
    "linalg.outer": _linalg_extra.outer, "linalg.tensordot": _linalg_extra.tensordot,
    "linalg.trace": lambda x, /, *, offset=0, dtype=None: _linalg_extra.trace(
        x, offset, -2, -1, dtype),
    "linalg.diagonal": lambda x, /, *, offset=0: _linalg_extra.diagonal(x, offset, -2, -1),
    "linalg.vecdot": _linalg_extra.vecdot, "linalg.matmul": matmul,
    "count_nonzero": lambda a, axis=None, *, keepdims=False: _array_api.count_nonzero(
        a, axis=axis, keepdims=keepdims),
    "shape": lambda a: a.shape, "ndim": lambda a: a.ndim, "size": _size,
    "real": _complex.real, "imag": _complex.imag, "conj": _complex.conj,
    "conjugate": _complex.conj, "angle": _complex.angle, "iscomplexobj": _complex.iscomplexobj,
    "result_type": _array_api.result_type, "isclose": _isclose, "allclose": _allclose,
    "array_equal": _array_equal,
}
#: NumPy functions other parts of PyGPUkit implement (sorting, scans, indexing): called by
#: the same name in ``pygpukit`` when present.
_DEFERRED = ("sort", "argsort", "cumsum", "cumprod", "diff", "searchsorted", "unique",
             "take", "take_along_axis", "put", "nonzero", "argwhere", "compress", "repeat",
             "tile", "flip", "roll", "bincount", "histogram", "unique_all", "unique_counts",
             "unique_inverse", "unique_values", "cumulative_sum", "cumulative_prod")



# -- creation with ``like=``, partitions, flat indices (what dask.array calls on its chunks) ------
# NumPy dispatches ``np.asarray(data, like=x)`` / ``np.empty(shape, like=x)`` ... to
# ``x.__array_function__``: the caller asked for an array of x's type, so host data is copied to
# the device here (an explicit request, unlike ``np.asarray(gpu_array)``, which still refuses).
def _like_asarray(a: Any, dtype: Any = None, order: Any = None, *, copy: Any = None,
                  device: Any = None, ndmin: int = 0) -> GPUArray:
    _reject("numpy.asarray(like=GPUArray)", order=(order, None), device=(device, None))
    if isinstance(a, GPUArray):
        result = a if dtype is None else a.astype(dtype, copy=False)
        result = result.copy() if copy and result is a else result
    else:
        if copy is False:
            raise ValueError("numpy.asarray(like=GPUArray): copy=False is impossible for host "
                             f"data ({type(a).__name__}); it must be copied to the device")
        result = _creation.asarray(np.asarray(a, dtype=dtype) if dtype is not None else a)
    if result.ndim < ndmin:
        result = result.reshape((1,) * (ndmin - result.ndim) + result.shape)
    return result


def _like_array(a: Any, dtype: Any = None, *, copy: Any = True, order: Any = "K",
                subok: bool = False, ndmin: int = 0) -> GPUArray:
    _reject("numpy.array(like=GPUArray)", order=(order, "K"), subok=(subok, False))
    return _like_asarray(a, dtype, copy=copy, ndmin=ndmin)


def _like_filled(name: str) -> Callable[..., GPUArray]:
    def adapter(shape: Any, dtype: Any = None, order: Any = "C", *, device: Any = None
                ) -> GPUArray:
        _reject(f"numpy.{name}(like=GPUArray)", order=(order, "C"), device=(device, None))
        kind = np.dtype(float) if dtype is None else dtype
        make: Callable[..., GPUArray] = getattr(_creation, name)
        return make(shape, kind)
    return adapter


def _like_full(shape: Any, fill_value: Any, dtype: Any = None, order: Any = "C", *,
               device: Any = None) -> GPUArray:
    _reject("numpy.full(like=GPUArray)", order=(order, "C"), device=(device, None))
    if dtype is None and not isinstance(fill_value, GPUArray):
        dtype = np.asarray(fill_value).dtype
    return _creation.full(shape, fill_value, dtype)


def _like_arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None, *,
                 device: Any = None) -> GPUArray:
    _reject("numpy.arange(like=GPUArray)", device=(device, None))
    return _creation.arange(start, stop, step, dtype)


def _partition(name: str) -> Callable[..., GPUArray]:
    """``partition`` / ``argpartition`` as a full sort.

    A sorted array is a valid partition for every ``kth`` (NumPy leaves the order within each
    side unspecified).
    """
    def adapter(a: GPUArray, kth: Any, axis: int | None = -1, kind: str = "introselect",
                order: Any = None) -> GPUArray:
        _reject(f"numpy.{name}", kind=(kind, "introselect"), order=(order, None))
        length = a.size if axis is None else a.shape[_layout.normalize_axis(axis, a.ndim)]
        for k in np.atleast_1d(np.asarray(kth)).tolist():
            if not isinstance(k, int) or not -length <= k < length:
                raise ValueError(f"numpy.{name}: kth={kth!r} is out of bounds for an axis of "
                                 f"size {length}")
        sort = getattr(sys.modules["pygpukit"], "sort" if name == "partition" else "argsort")
        return sort(a, axis=axis)  # type: ignore[no-any-return]
    return adapter


def _unravel_index(indices: GPUArray, shape: Any, order: str = "C") -> tuple[GPUArray, ...]:
    """``unravel_index`` on the device: integer division and remainder per axis."""
    _reject("numpy.unravel_index", order=(order, "C"))
    dims = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
    if indices.dtype.kind not in "iu":
        raise TypeError(f"numpy.unravel_index: indices must be integers; got {indices.dtype}")
    size = 1
    for n in dims:
        size *= n
    if size == 0 and indices.size:
        raise ValueError(f"numpy.unravel_index: no index is valid for shape {dims}")
    if indices.size and bool(_ops.logical_or(_ops.any(_ops.less(indices, 0)),
                                             _ops.any(_ops.greater_equal(indices, size))).item()):
        raise ValueError(f"numpy.unravel_index: an index is out of bounds for shape {dims} "
                         f"(size {size})")
    coords: list[GPUArray] = []
    rest = indices.astype(np.int64, copy=False)
    for n in reversed(dims):
        coords.append(_ops.remainder(rest, n))
        rest = _ops.floor_divide(rest, n)
    return tuple(reversed(coords))


def _ravel_multi_index(multi_index: Any, dims: Any, mode: str = "raise",
                       order: str = "C") -> GPUArray:
    """``ravel_multi_index`` on the device: the flat C-order index of each coordinate tuple."""
    _reject("numpy.ravel_multi_index", order=(order, "C"))
    shape = (int(dims),) if isinstance(dims, (int, np.integer)) else tuple(int(n) for n in dims)
    coords = list(multi_index)
    if len(coords) != len(shape):
        raise ValueError(f"numpy.ravel_multi_index: {len(coords)} coordinate arrays for "
                         f"{len(shape)} dimensions {shape}")
    modes = (mode,) * len(shape) if isinstance(mode, str) else tuple(mode)
    flat: GPUArray | None = None
    for axis, (coord, n, how) in enumerate(zip(coords, shape, modes, strict=True)):
        c = coord.astype(np.int64, copy=False) if isinstance(coord, GPUArray) else \
            _creation.asarray(np.asarray(coord, dtype=np.int64))
        if how == "wrap":
            c = _ops.remainder(c, n)
        elif how == "clip":
            c = _ops.clip(c, 0, n - 1)
        elif how != "raise":
            raise ValueError(f"numpy.ravel_multi_index: mode {how!r} is not 'raise', 'wrap' "
                             "or 'clip'")
        elif c.size and bool(_ops.logical_or(_ops.any(_ops.less(c, 0)),
                                             _ops.any(_ops.greater_equal(c, n))).item()):
            raise ValueError(f"numpy.ravel_multi_index: invalid entry in coordinates of axis "
                             f"{axis} (size {n})")
        flat = c if flat is None else _ops.add(_ops.multiply(flat, n), c)
    if flat is None:
        raise ValueError("numpy.ravel_multi_index: at least one dimension is required")
    return flat


_ADAPTERS.update({
    "ravel_multi_index": _ravel_multi_index,
    "unravel_index": _unravel_index,
    "asarray": _like_asarray, "asanyarray": _like_asarray, "array": _like_array,
    "empty": _like_filled("empty"), "zeros": _like_filled("zeros"),
    "ones": _like_filled("ones"), "full": _like_full, "arange": _like_arange,
    "partition": _partition("partition"), "argpartition": _partition("argpartition"),
})


def _numpy_function(path: str) -> Any:
    owner: Any = np
    for part in path.split("."):
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    return owner


def _function_table() -> dict[Any, tuple[str, Callable[..., Any]]]:
    table: dict[Any, tuple[str, Callable[..., Any]]] = {}
    entries: list[tuple[str, Callable[..., Any]]] = [
        *_ADAPTERS.items(), *((name, _deferred(name)) for name in _DEFERRED)]
    for path, adapter in entries:
        function = _numpy_function(path)
        if function is not None and not isinstance(function, np.ufunc):
            table.setdefault(function, (path, adapter))
    return table


FUNCTIONS: dict[Any, tuple[str, Callable[..., Any]]] = _function_table()


def array_function(func: Any, types: Any, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> Any:
    """NEP 18: run NumPy function ``func`` on GPUArrays through PyGPUkit."""
    entry = FUNCTIONS.get(func)
    if entry is not None and types.__class__ is tuple and len(types) == 1 and \
            types[0] is GPUArray:
        return entry[1](*args, **kwargs)  # the common case: only GPUArrays, a known function
    name = getattr(func, "__name__", repr(func))
    module = getattr(func, "__module__", None) or "numpy"
    what = f"numpy.{entry[0]}" if entry else f"{module}.{name}"
    if builtins.any(issubclass(t, np.ndarray) for t in types):
        raise TypeError(f"{what}: got numpy.ndarray arguments beside GPUArrays {_HOST}")
    if not builtins.all(issubclass(t, GPUArray) for t in types):
        return NotImplemented
    if entry is None:
        raise _not_implemented(what)
    return entry[1](*args, **kwargs)


_array.hooks.array_ufunc = array_ufunc
_array.hooks.array_function = array_function

__all__ = ["FUNCTIONS", "UFUNCS", "array_function", "array_ufunc"]
