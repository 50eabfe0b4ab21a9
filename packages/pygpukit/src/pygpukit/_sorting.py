"""Sorting and scans: sort, argsort, topk, cumsum, cumprod, diff, searchsorted, unique, ...

Also bincount and histogram.

NumPy is the reference.  The work is done by a few runtime primitives (``pgk_sort``,
``pgk_scan``, ``pgk_searchsorted``, ``pgk_run_starts`` / ``pgk_run_scatter``, ``pgk_take_rows``
on the GPU; their NumPy definitions on the CPU simulation) over C-contiguous ``(rows, cols)``
matrices: an operation along ``axis`` moves that axis last into a contiguous temporary (a view
when it already is last and the array is contiguous), runs, and moves the axis back.

Order: NumPy's.  NaNs sort last (all NaNs are equal to each other), ``-0.0`` equals ``+0.0``.
Every sort is stable (``kind`` is accepted for NumPy compatibility and ignored).

Results that need a size known only on the device (``unique``, ``bincount``, ``histogram``
without a range) read one or two scalars back to the host, as NumPy's shapes require.
"""

from __future__ import annotations

import builtins
import operator
from typing import TYPE_CHECKING, Any

import numpy as np

from pygpukit._array import GPUArray, complex_pairs, from_pairs, hooks
from pygpukit._dtypes import (
    SUPPORTED_DTYPES,
    bool_,
    complex_unsupported,
    float32,
    float64,
    int64,
    normalize_dtype,
)
from pygpukit._math import binary, math_prod, reduce
from pygpukit._stream import stream_for_runtime
from pygpukit._transfer import copy_into, empty_on, fill, touch, upload
from pygpukit_kernels import ScanOp, SortFlag

if TYPE_CHECKING:
    from pygpukit._backend import Runtime

_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


# -- argument checks ----------------------------------------------------------------------------


#: No complex form: what orders its input (complex numbers are not ordered), and the weights
#: of ``bincount`` / ``histogram`` (summed in float64).
_NO_COMPLEX = {"sort", "argsort", "topk", "searchsorted", "histogram", "bincount"}


def _array(name: str, x: Any, what: str = "x") -> GPUArray:
    if not isinstance(x, GPUArray):
        raise TypeError(f"{name}: {what} must be a GPUArray; got {type(x).__name__}")
    if x.dtype.kind == "c" and name in _NO_COMPLEX:
        raise TypeError(complex_unsupported(name, x.dtype))
    return x


def _axis(name: str, axis: Any, ndim: int) -> int:
    """``axis`` in ``range(ndim)``, or NumPy's AxisError (a ValueError and an IndexError)."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{name}: axis must be an int or None; got {type(axis).__name__}")
    value = int(axis)
    if not -ndim <= value < ndim:
        raise np.exceptions.AxisError(value, ndim, msg_prefix=name)
    return value % ndim


def _kind(name: str, kind: Any, stable: Any) -> None:
    if kind not in _KINDS:
        raise ValueError(f"{name}: kind must be one of {_KINDS[1:]} or None; got {kind!r}")
    if stable not in (None, True, False):
        raise TypeError(f"{name}: stable must be a bool or None; got {stable!r}")
    if kind is not None and stable is not None:
        raise ValueError(f"{name}: `kind` and `stable` parameters can't be provided at the "
                         "same time")


# -- layout: the axis last, as a contiguous (rows, cols) matrix -----------------------------------


def _contiguous(x: GPUArray) -> GPUArray:
    return x if x.is_contiguous() else x.copy()


def _rows(x: GPUArray, axis: int) -> tuple[GPUArray, tuple[int, ...], tuple[int, ...]]:
    """Return x with ``axis`` moved last, as a contiguous (rows, cols) matrix.

    Returns the matrix, the moved shape and the permutation that moved the axis.
    """
    order = (*(d for d in range(x.ndim) if d != axis), axis)
    moved = x.transpose(order) if axis != x.ndim - 1 else x
    packed = _contiguous(moved)
    cols = moved.shape[-1]
    return packed.reshape(math_prod(moved.shape[:-1]), cols), moved.shape, order


def _unrows(result: GPUArray, moved_shape: tuple[int, ...], order: tuple[int, ...],
            cols: int) -> GPUArray:
    """A (rows, cols) result back in the input's axis order (contiguous, as NumPy's)."""
    shaped = result.reshape((*moved_shape[:-1], cols))
    if order == tuple(range(len(order))):
        return shaped
    inverse = tuple(order.index(d) for d in range(len(order)))
    return shaped.transpose(inverse).copy()


def _new(runtime: Runtime, shape: tuple[int, ...], dtype: np.dtype[Any]) -> GPUArray:
    return empty_on(runtime, shape, dtype, stream_for_runtime(runtime))


# -- sort, argsort, topk --------------------------------------------------------------------------


def _sort_rows(x2: GPUArray, k: int, *, values: bool, indices: bool,
               descending: bool = False) -> tuple[GPUArray | None, GPUArray | None]:
    """Sort each row of a contiguous (rows, cols) matrix; the first k columns of the results."""
    runtime = x2._rt
    rows, _ = x2.shape
    stream = stream_for_runtime(runtime)
    vals = empty_on(runtime, (rows, k), x2.dtype, stream) if values else None
    idx = empty_on(runtime, (rows, k), int64, stream) if indices else None
    flags = (SortFlag.INDICES if indices else 0) | (SortFlag.DESCENDING if descending else 0)
    touch(stream, x2)
    for out in (vals, idx):
        if out is not None:
            touch(stream, written=out)
    if x2.size and k:
        runtime.sort(x2, int(flags), k, vals, idx, stream)
    return vals, idx


def _prepare(name: str, x: Any, axis: Any) -> tuple[GPUArray, int]:
    """Return x (flattened for axis=None) and the normalized axis."""
    array = _array(name, x)
    if axis is None:
        return _contiguous(array).reshape(-1), 0
    return array, _axis(name, axis, array.ndim)


def sort(x: GPUArray, axis: int | None = -1, kind: str | None = None, *,
         stable: bool | None = None) -> GPUArray:
    """Return a sorted copy of ``x`` along ``axis`` (NumPy's ``sort``).

    Parameters
    ----------
    x
        The array (any supported dtype, any strides).
    axis
        The axis to sort along; None sorts the flattened array.
    kind, stable
        Accepted for NumPy compatibility: the sort is always stable (a radix sort).

    Returns
    -------
    GPUArray
        The sorted array, of x's shape (1-D for ``axis=None``) and dtype.  NaNs come last (as the
        dtype's default NaN); ``-0.0`` and ``+0.0`` compare equal (either may come first).

    Raises
    ------
    TypeError
        If x is not a GPUArray, or axis / kind / stable have the wrong type.
    numpy.exceptions.AxisError
        If axis is out of range (also for a 0-d x with an integer axis, as NumPy).
    """
    _kind("sort", kind, stable)
    array, ax = _prepare("sort", x, axis)
    x2, moved, order = _rows(array, ax)
    vals, _ = _sort_rows(x2, x2.shape[1], values=True, indices=False)
    assert vals is not None
    return _unrows(vals, moved, order, x2.shape[1])


def argsort(x: GPUArray, axis: int | None = -1, kind: str | None = None, *,
            stable: bool | None = None) -> GPUArray:
    """Return the int64 indices that sort ``x`` along ``axis`` (NumPy's stable ``argsort``).

    Equal elements keep their order (NaNs last, all equal; ``-0.0 == +0.0``), so the result is
    exactly ``numpy.argsort(x, axis, kind="stable")``.  ``axis=None`` sorts the flattened array.
    ``kind`` / ``stable`` are accepted for NumPy compatibility (always stable).

    Raises
    ------
    TypeError
        If x is not a GPUArray, or axis / kind / stable have the wrong type.
    numpy.exceptions.AxisError
        If axis is out of range.
    """
    _kind("argsort", kind, stable)
    # NumPy's argsort of a 0-d array is [0], for any axis.
    array, ax = _prepare("argsort", x, None if _array("argsort", x).ndim == 0 else axis)
    x2, moved, order = _rows(array, ax)
    _, idx = _sort_rows(x2, x2.shape[1], values=False, indices=True)
    assert idx is not None
    return _unrows(idx, moved, order, x2.shape[1])


def topk(x: GPUArray, k: int, axis: int = -1, largest: bool = True,
         sorted: bool = True) -> tuple[GPUArray, GPUArray]:
    """The ``k`` largest (or smallest) elements along ``axis`` and their int64 indices.

    Parameters
    ----------
    x
        The array (at least 1-D).
    k
        How many, ``0 <= k <= x.shape[axis]``.
    axis
        The axis to select along.
    largest
        The largest (descending order; NaN counts as the largest, as in torch) or the smallest
        (ascending; NaN last).
    sorted
        Accepted for torch compatibility: the results are always in sorted order.

    Returns
    -------
    (values, indices)
        Of x's shape with ``axis`` of length k.  Ties keep the lower index first.

    Notes
    -----
    On the GPU, rows that fit in shared memory (keys of at most 4 bytes, k <= 1024, up to
    about 55 000 columns on an H100 or H200) are selected in shared memory: no memory beyond the
    results.  Longer rows, 8-byte dtypes and larger k take a radix sort of whole rows, with a
    workspace several times the size of x.

    Raises
    ------
    TypeError
        If x is not a GPUArray or k is not an int.
    ValueError
        If k is out of range.
    numpy.exceptions.AxisError
        If axis is out of range.
    """
    array = _array("topk", x)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"topk: k must be an int; got {type(k).__name__}")
    if array.ndim == 0:
        raise ValueError("topk: x must have at least one dimension")
    ax = _axis("topk", axis, array.ndim)
    n = array.shape[ax]
    if not 0 <= k <= n:
        raise ValueError(f"topk: k must be in [0, {n}] (the length of axis {ax}); got {k}")
    x2, moved, order = _rows(array, ax)
    vals, idx = _sort_rows(x2, int(k), values=True, indices=True, descending=bool(largest))
    assert vals is not None and idx is not None
    return _unrows(vals, moved, order, int(k)), _unrows(idx, moved, order, int(k))


def _sort_method(self: GPUArray, axis: int = -1, kind: str | None = None, *,
                 stable: bool | None = None) -> None:
    """In-place ``GPUArray.sort`` (as ``numpy.ndarray.sort``): sort, then copy back."""
    if self.ndim == 0:
        raise np.exceptions.AxisError(axis, 0, msg_prefix="sort")
    copy_into(sort(self, axis, kind, stable=stable), self)


# -- scans ----------------------------------------------------------------------------------------


def _scan_dtypes(name: str, x: GPUArray, dtype: Any) -> tuple[np.dtype[Any], np.dtype[Any]]:
    """(result dtype, accumulator dtype) as NumPy 2 gives them (int64 for small ints)."""
    if dtype is None:
        result = int64 if x.dtype.kind in "biu" else x.dtype
    else:
        result = normalize_dtype(dtype, argument=f"{name}: dtype")
    if result.kind in "biu":
        return result, int64
    return result, float64 if result == float64 else float32


def _scan(name: str, op: ScanOp, x: Any, axis: Any, dtype: Any) -> GPUArray:
    array = _array(name, x)
    result_dtype, acc = _scan_dtypes(name, array, dtype)
    if result_dtype.kind == "c":  # composed from the real kernels (pygpukit._complex)
        if axis is None or array.ndim == 0:
            array = array.reshape(-1)
        ax = 0 if axis is None else _axis(name, axis, array.ndim)
        if array.dtype != result_dtype:
            array = array.astype(result_dtype)
        if name == "cumprod":  # a parallel prefix of complex products
            return hooks.complex.cumprod(array, ax)
        return from_pairs(_scan(name, op, complex_pairs(array), ax, None))  # the float view's
    if axis is None or array.ndim == 0:  # NumPy scans a 0-d array as one element
        array = _contiguous(array).reshape(-1)
    ax = 0 if axis is None else _axis(name, axis, array.ndim)
    # NumPy casts the input to the result dtype, then accumulates (a bool dtype: 0/1).
    if array.dtype != result_dtype and (result_dtype == bool_ or result_dtype != acc):
        array = array.astype(result_dtype)
    x2, moved, order = _rows(array, ax)
    runtime = x2._rt
    stream = stream_for_runtime(runtime)
    src = x2 if x2.dtype == acc else x2.astype(acc)
    out = empty_on(runtime, x2.shape, acc, stream)
    touch(stream, src, written=out)
    if out.size:
        runtime.scan(int(op), src, out, stream)
    if result_dtype != acc:
        out = out.astype(result_dtype)
    return _unrows(out, moved, order, x2.shape[1])


def cumsum(x: GPUArray, axis: int | None = None, dtype: Any = None) -> GPUArray:
    """Cumulative sum along ``axis`` (NumPy's ``cumsum``; ``axis=None`` flattens).

    Result dtype as NumPy 2: bool and integers give int64 (PyGPUkit holds no uint64: uint8
    gives int64 too), floats their own dtype, or ``dtype``.  Integers accumulate in int64
    (wrapping, then narrowed: NumPy's results); float16 / bfloat16 / float32 in float32,
    float64 in float64.  Float results differ from NumPy's left-to-right loop by rounding:
    the GPU adds in a parallel order (float16 results, which NumPy rounds at every step, may
    differ more).  On the GPU a single long row is scanned with CUB's decoupled look-back,
    whose float results may differ between runs in the last bits; many rows are scanned one
    block per row in a fixed order; integer results are exact.

    Raises
    ------
    TypeError
        If x is not a GPUArray or dtype is not supported.
    numpy.exceptions.AxisError
        If axis is out of range.
    """
    return _scan("cumsum", ScanOp.SUM, x, axis, dtype)


def cumprod(x: GPUArray, axis: int | None = None, dtype: Any = None) -> GPUArray:
    """Cumulative product along ``axis`` (NumPy's ``cumprod``; dtypes as :func:`cumsum`)."""
    return _scan("cumprod", ScanOp.PROD, x, axis, dtype)


def diff(x: GPUArray, n: int = 1, axis: int = -1) -> GPUArray:
    """The n-th discrete difference along ``axis`` (NumPy's ``diff``).

    ``out[i] = x[i+1] - x[i]`` applied n times, in x's dtype (integers wrap as NumPy's); bool
    arrays give ``x[i+1] != x[i]``.  ``n=0`` returns x.

    Raises
    ------
    TypeError
        If x is not a GPUArray or n is not an int.
    ValueError
        If n is negative or x is 0-d.
    numpy.exceptions.AxisError
        If axis is out of range.
    """
    array = _array("diff", x)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"diff: n must be an int; got {type(n).__name__}")
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    if array.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    ax = _axis("diff", axis, array.ndim)
    op = "not_equal" if array.dtype == bool_ else "subtract"
    for _ in range(int(n)):
        length = array.shape[ax]
        if length <= 1:
            shape = tuple(0 if d == ax else s for d, s in enumerate(array.shape))
            return _new(array._rt, shape, array.dtype)
        hi = tuple(slice(1, None) if d == ax else slice(None) for d in range(array.ndim))
        lo = tuple(slice(None, -1) if d == ax else slice(None) for d in range(array.ndim))
        array = binary(op, array[hi], array[lo])
    return array


# -- searchsorted, unique, bincount, histogram ----------------------------------------------------


def _as_operand(name: str, value: Any, runtime: Runtime, what: str) -> GPUArray:
    """A GPUArray operand; a Python / NumPy scalar or sequence is uploaded as NumPy types it."""
    if isinstance(value, GPUArray):
        if value._rt is not runtime:
            raise ValueError(f"{name}: {what} is on another device than a")
        return value
    if isinstance(value, (bool, int, float, np.generic, list, tuple, np.ndarray)):
        return upload(runtime, np.asarray(value))
    raise TypeError(f"{name}: {what} must be a GPUArray, a scalar or a sequence; "
                    f"got {type(value).__name__}")


def searchsorted(a: GPUArray, v: Any, side: str = "left", sorter: GPUArray | None = None
                 ) -> GPUArray:
    """Indices where ``v`` would be inserted into the sorted 1-D ``a`` (NumPy's searchsorted).

    Parameters
    ----------
    a
        1-D array sorted ascending (NaNs last), or any order with ``sorter``.
    v
        Values to insert: a GPUArray, a scalar (0-d result) or a sequence.
    side
        ``"left"``: the first suitable index; ``"right"``: the last.
    sorter
        Optional 1-D integer GPUArray of a's length that sorts ``a`` (e.g. from argsort).

    Returns
    -------
    GPUArray
        int64 indices of v's shape.  a and v are compared in their common dtype (NumPy's
        ``result_type``), with NaN largest and ``-0.0 == +0.0``.

    Raises
    ------
    TypeError
        If a (or sorter) is not a GPUArray or sorter is not of an integer dtype.
    ValueError
        If a is not 1-D, side is not "left"/"right", sorter's length differs from a's, or a
        sorter index is out of range (checked with one host read).
    """
    array = _array("searchsorted", a, "a")
    if array.ndim != 1:
        raise ValueError(f"searchsorted: a must be 1-D; got {array.ndim}-D")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right' (got {side!r})")
    runtime = array._rt
    values = _as_operand("searchsorted", v, runtime, "v")
    common = np.result_type(array.dtype, values.dtype)
    if common not in SUPPORTED_DTYPES:
        raise TypeError(f"searchsorted: no common supported dtype for {array.dtype.name} "
                        f"and {values.dtype.name}")
    keys = _contiguous(array if array.dtype == common else array.astype(common))
    probes = _contiguous(values if values.dtype == common else values.astype(common))
    order = None
    if sorter is not None:
        order = _array("searchsorted", sorter, "sorter")
        if order.dtype.kind not in "iu" or order.ndim != 1:
            raise TypeError("searchsorted: sorter must be a 1-D integer GPUArray")
        if order.shape != array.shape:
            raise ValueError(f"searchsorted: sorter has length {order.shape[0]}, a has "
                             f"{array.shape[0]}")
        if order.size:
            lo = int(reduce("min", order).item())
            hi = int(reduce("max", order).item())
            if lo < 0 or hi >= array.size:
                raise ValueError("searchsorted: sorter index out of range")
        order = _contiguous(order if order.dtype == int64 else order.astype(int64))
    stream = stream_for_runtime(runtime)
    out = empty_on(runtime, probes.shape, int64, stream)
    touch(stream, keys, probes, *((order,) if order is not None else ()), written=out)
    if out.size:
        runtime.searchsorted(keys, order, probes, side == "right", out, stream)
    return out


def unique(x: GPUArray, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *,
           equal_nan: bool = True) -> Any:
    """The sorted unique elements of ``x`` (NumPy 2's ``unique`` with ``axis=None``).

    Returns the unique values (1-D), and as NumPy, when asked for: the int64 index of the first
    occurrence of each, the int64 inverse (of x's shape: ``uniq[inverse] == x``) and the int64
    counts.  All NaNs count as one value (``equal_nan=True``), ``-0.0`` as ``+0.0``.  The number
    of unique values is read back to the host (the result's shape needs it).

    Raises
    ------
    TypeError
        If x is not a GPUArray.
    ValueError
        If axis is not None or equal_nan is False (not supported).
    """
    array = _array("unique", x)
    if axis is not None:
        raise ValueError("unique: only axis=None is supported")
    if not equal_nan:
        raise ValueError("unique: only equal_nan=True is supported")
    if array.dtype.kind == "c":  # lexicographic: composed (pygpukit._complex)
        return hooks.complex.unique(array, return_index, return_inverse, return_counts)
    runtime = array._rt
    flat = _contiguous(array).reshape(1, -1)
    n = flat.shape[1]
    need_perm = bool(return_index or return_inverse)
    sorted_, perm = _sort_rows(flat, n, values=True, indices=need_perm)
    assert sorted_ is not None
    stream = stream_for_runtime(runtime)
    count = 0
    gid = None
    if n:
        flags = empty_on(runtime, (1, n), int64, stream)
        touch(stream, sorted_, written=flags)
        runtime.run_starts(sorted_, flags, stream)
        gid = empty_on(runtime, (1, n), int64, stream)
        touch(stream, flags, written=gid)
        runtime.scan(int(ScanOp.SUM), flags, gid, stream)
        count = int(gid[0, n - 1].item())
    uniq = empty_on(runtime, (count,), array.dtype, stream)
    starts = empty_on(runtime, (count,), int64, stream) if return_counts else None
    first = empty_on(runtime, (count,), int64, stream) if return_index else None
    inverse = empty_on(runtime, array.shape, int64, stream) if return_inverse else None
    if gid is not None:
        outs = [a for a in (uniq, starts, first, inverse) if a is not None]
        touch(stream, gid, sorted_, *((perm,) if perm is not None else ()))
        for o in outs:
            touch(stream, written=o)
        runtime.run_scatter(gid, sorted_, perm, uniq, starts, first, inverse, stream)
    results: list[GPUArray] = [uniq]
    if first is not None:
        results.append(first)
    if inverse is not None:
        results.append(inverse)
    if return_counts:
        results.append(_run_lengths(runtime, starts, n))
    return results[0] if len(results) == 1 else tuple(results)


def _run_lengths(runtime: Runtime, starts: GPUArray | None, n: int) -> GPUArray:
    """``counts[g] = starts[g+1] - starts[g]`` with ``starts[count] = n``."""
    assert starts is not None
    count = starts.shape[0]
    if count == 0:
        return _new(runtime, (0,), int64)
    ends = _new(runtime, (count + 1,), int64)
    copy_into(starts, ends[:count])
    fill(ends[count:], n)
    return binary("subtract", ends[1:], ends[:count])


def _weighted_bins(runtime: Runtime, perm: GPUArray, weights: GPUArray, bounds: GPUArray,
                   n: int) -> GPUArray:
    """Sums of the weights between consecutive bounds (positions in the sorted order), float64.

    ``prefix = [0, cumsum(weights[perm])]``, then ``prefix[bounds[1:]] - prefix[bounds[:-1]]``.
    """
    stream = stream_for_runtime(runtime)
    w = _contiguous(weights.reshape(1, -1) if weights.dtype == float64
                    else weights.astype(float64).reshape(1, -1))
    ordered = empty_on(runtime, (1, n), float64, stream)
    touch(stream, w, perm, written=ordered)
    runtime.take_rows(w, perm, ordered, stream)
    prefix = empty_on(runtime, (1, n + 1), float64, stream)
    fill(prefix[:, :1], 0.0)
    running = prefix[:, 1:]
    touch(stream, ordered, written=prefix)
    runtime.scan(int(ScanOp.SUM), ordered, running, stream)
    b = bounds.reshape(1, -1)
    at = empty_on(runtime, b.shape, float64, stream)
    touch(stream, prefix, b, written=at)
    runtime.take_rows(prefix, b, at, stream)
    return binary("subtract", at[0, 1:], at[0, :-1])


def bincount(x: GPUArray, weights: GPUArray | None = None, minlength: int = 0) -> GPUArray:
    """Count occurrences of each value of a 1-D non-negative integer array (NumPy's bincount).

    Returns int64 counts of length ``max(x.max() + 1, minlength)``, or with ``weights`` (a
    GPUArray of x's shape) the float64 sums of the weights of each value.  Deterministic: a
    sort of x, then bin boundaries by binary search (weights: differences of a float64 prefix
    sum, so a bin's sum may differ from NumPy's by rounding relative to the running total).
    x.max() and x.min() are read back to the host.

    Raises
    ------
    TypeError
        If x is not a GPUArray of bool or integer dtype, or weights is not a GPUArray.
    ValueError
        If x is not 1-D, has negative values, minlength is negative, or weights' shape differs.
    """
    array = _array("bincount", x)
    if array.dtype.kind not in "biu":
        raise TypeError(f"bincount: cannot cast array data from dtype('{array.dtype.name}') to "
                        "dtype('int64') according to the rule 'safe'")
    if array.ndim != 1:
        raise ValueError(f"bincount: x must be 1-D; got {array.ndim}-D")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError("bincount: 'minlength' must not be negative")
    w = None
    if weights is not None:
        w = _array("bincount", weights, "weights")
        if w.shape != array.shape:
            raise ValueError(f"bincount: weights has shape {w.shape}, x has {array.shape}")
        if w._rt is not array._rt:
            raise ValueError("bincount: weights is on another device than x")
    runtime = array._rt
    n = array.shape[0]
    result_dtype = float64 if w is not None else int64
    if n == 0:
        empty = _new(runtime, (minlength,), result_dtype)
        fill(empty, 0)
        return empty
    lo = int(reduce("min", array).item())
    if lo < 0:
        raise ValueError("bincount: 'list' argument must have no negative elements")
    nbins = builtins.max(int(reduce("max", array).item()) + 1, minlength)
    keys = _contiguous(array if array.dtype == int64 else array.astype(int64)).reshape(1, n)
    sorted_, perm = _sort_rows(keys, n, values=True, indices=w is not None)
    assert sorted_ is not None
    edges = _new(runtime, (nbins + 1,), int64)
    stream = stream_for_runtime(runtime)
    touch(stream, written=edges)
    runtime.arange(edges, 0, 1, stream)
    bounds = searchsorted(sorted_.reshape(-1), edges)
    if w is None:
        return binary("subtract", bounds[1:], bounds[:-1])
    assert perm is not None
    return _weighted_bins(runtime, perm, w, bounds, n)


def _outer_edges(x: GPUArray, value_range: Any) -> tuple[Any, Any]:
    """Return NumPy's ``_get_outer_edges``: the range, or x's min and max.

    The min and max are NumPy scalars of x's dtype (read to the host), as NumPy computes the
    edges from them; equal ends are widened by 0.5 each way.
    """
    if value_range is not None:
        first, last = value_range
        if first > last:
            raise ValueError("histogram: max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"histogram: supplied range of [{first}, {last}] is not finite")
    elif x.size == 0:
        first, last = 0, 1
    else:
        first = reduce("min", x).to_numpy()[()]
        last = reduce("max", x).to_numpy()[()]
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"histogram: autodetected range of [{first}, {last}] is not finite")
    if first == last:
        first = first - 0.5
        last = last + 0.5
    return first, last


def histogram(x: GPUArray, bins: Any = 10, range: Any = None,
              weights: GPUArray | None = None) -> tuple[GPUArray, GPUArray]:
    """Histogram of ``x`` (NumPy's ``histogram``): returns ``(hist, bin_edges)``.

    Parameters
    ----------
    x
        Data (flattened), any real dtype.
    bins
        The number of equal-width bins in ``range``, or the bin edges (a GPUArray or sequence,
        increasing monotonically).
    range
        ``(lower, upper)``; default x's min and max (read to the host).  Values outside are
        ignored (NaN too).
    weights
        Optional GPUArray of x's shape: each value adds its weight instead of 1.

    Returns
    -------
    (hist, bin_edges)
        hist: int64 counts (weights: the weights' dtype, summed in float64 from a prefix sum, so
        a bin may differ from NumPy's sum by rounding relative to the running total);
        bin_edges: ``len(hist) + 1`` edges, NumPy's (float64 for integer x, else x's dtype).
        Every bin is half open ``[edges[i], edges[i+1])`` but the last, which is closed.

    Raises
    ------
    TypeError
        If x or weights is not a GPUArray, or bins is of the wrong type.
    ValueError
        If bins < 1, edges are not increasing, the range is inverted or not finite, or weights'
        shape differs from x's.
    """
    array = _array("histogram", x)
    runtime = array._rt
    flat = _contiguous(array).reshape(-1)
    w = None
    if weights is not None:
        w = _array("histogram", weights, "weights")
        if w.shape != array.shape:
            raise ValueError(f"histogram: weights has shape {w.shape}, x has {array.shape}")
        w = _contiguous(w).reshape(-1)
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if bins < 1:
            raise ValueError("histogram: `bins` must be positive, when an integer")
        first, last = _outer_edges(flat, range)
        bin_type = np.result_type(first, last, np.empty(0, array.dtype))
        if bin_type.kind in "biu":
            bin_type = np.result_type(bin_type, float)
        host_edges = np.linspace(first, last, int(bins) + 1, endpoint=True, dtype=bin_type)
        edges = upload(runtime, host_edges)
    elif isinstance(bins, (GPUArray, list, tuple, np.ndarray)):
        edges = _as_operand("histogram", bins, runtime, "bins")
        if edges.ndim != 1 or edges.shape[0] < 2:
            raise ValueError("histogram: `bins` must be 1d, when an array, with at least 2 "
                             "edges")
        host = edges.to_numpy()
        if np.any(host[:-1] > host[1:]):
            raise ValueError("histogram: `bins` must increase monotonically, when an array")
    else:
        raise TypeError(f"histogram: bins must be an int or a sequence of edges; got "
                        f"{type(bins).__name__}")
    common = np.result_type(flat.dtype, edges.dtype)
    data = flat if flat.dtype == common else flat.astype(common)
    probes = edges if edges.dtype == common else edges.astype(common)
    n = data.shape[0]
    nbins = edges.shape[0] - 1
    data2 = data.reshape(1, n)
    sorted_, perm = _sort_rows(data2, n, values=True, indices=w is not None)
    assert sorted_ is not None
    sorted_flat = sorted_.reshape(-1)
    # Elements below each edge; the last edge counts the elements equal to it (closed bin).
    bounds = _new(runtime, (nbins + 1,), int64)
    copy_into(searchsorted(sorted_flat, probes[:nbins], "left"), bounds[:nbins])
    copy_into(searchsorted(sorted_flat, probes[nbins:], "right"), bounds[nbins:])
    if w is None:
        return binary("subtract", bounds[1:], bounds[:-1]), edges
    if n == 0:
        hist = _new(runtime, (nbins,), w.dtype)
        fill(hist, 0)
        return hist, edges
    assert perm is not None
    sums = _weighted_bins(runtime, perm, w, bounds, n)
    return (sums if w.dtype == float64 else sums.astype(w.dtype)), edges


# -- GPUArray's methods ---------------------------------------------------------------------------


def _argsort_method(self: GPUArray, axis: int | None = -1, kind: str | None = None, *,
                    stable: bool | None = None) -> GPUArray:
    return argsort(self, axis, kind, stable=stable)


def _cumsum_method(self: GPUArray, axis: int | None = None, dtype: Any = None) -> GPUArray:
    return cumsum(self, axis, dtype)


def _cumprod_method(self: GPUArray, axis: int | None = None, dtype: Any = None) -> GPUArray:
    return cumprod(self, axis, dtype)


hooks.sort = _sort_method
hooks.argsort = _argsort_method
hooks.cumsum = _cumsum_method
hooks.cumprod = _cumprod_method

__all__ = ["argsort", "bincount", "cumprod", "cumsum", "diff", "histogram", "searchsorted",
           "sort", "topk", "unique"]
