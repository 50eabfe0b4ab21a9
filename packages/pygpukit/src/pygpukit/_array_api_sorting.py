"""The Array API standard's sorting, set, scan and indexing functions (its signatures).

PyGPUkit's own functions (:mod:`pygpukit._sorting`, :mod:`pygpukit._indexing`) follow NumPy;
these wrap them with the standard's keyword-only options: ``descending`` sorts, ``unique_*``
named tuples, ``cumulative_sum(include_initial=)``, ``diff(prepend=, append=)`` and
``take_along_axis(x, indices, /, *, axis=-1)``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pygpukit import _indexing, _sorting
from pygpukit._array import GPUArray
from pygpukit._ops import concatenate
from pygpukit._transfer import empty_on, fill


class UniqueAllResult(NamedTuple):
    """``unique_all``'s result."""

    values: GPUArray
    indices: GPUArray
    inverse_indices: GPUArray
    counts: GPUArray


class UniqueCountsResult(NamedTuple):
    """``unique_counts``' result."""

    values: GPUArray
    counts: GPUArray


class UniqueInverseResult(NamedTuple):
    """``unique_inverse``'s result."""

    values: GPUArray
    inverse_indices: GPUArray


def _ordered(name: str, x: Any, axis: int, descending: bool, indices: bool) -> GPUArray:
    """Sorted values (or the indices that sort) along ``axis``; stable in both directions."""
    if not isinstance(descending, bool):
        raise TypeError(f"{name}: descending must be a bool; got {type(descending).__name__}")
    if not descending:
        return _sorting.argsort(x, axis) if indices else _sorting.sort(x, axis)
    array, ax = _sorting._prepare(name, x, axis)
    x2, moved, order = _sorting._rows(array, ax)
    vals, idx = _sorting._sort_rows(x2, x2.shape[1], values=not indices, indices=indices,
                                    descending=True)
    result = idx if indices else vals
    assert result is not None
    return _sorting._unrows(result, moved, order, x2.shape[1])


def sort(x: GPUArray, /, *, axis: int = -1, descending: bool = False,
         stable: bool = True) -> GPUArray:
    """A sorted copy of ``x`` along ``axis`` (stable in both directions)."""
    return _ordered("sort", x, axis, descending, indices=False)


def argsort(x: GPUArray, /, *, axis: int = -1, descending: bool = False,
            stable: bool = True) -> GPUArray:
    """The int64 indices that sort ``x`` along ``axis`` (stable in both directions)."""
    return _ordered("argsort", x, axis, descending, indices=True)


def _cumulative(name: str, x: GPUArray, axis: int | None, dtype: Any,
                include_initial: bool, identity: int) -> GPUArray:
    array = _sorting._array(name, x)
    if axis is None:
        if array.ndim > 1:
            raise ValueError(f"{name}: axis must be given for arrays of more than one "
                             f"dimension; got {array.ndim} dimensions")
        axis = 0
    fn = _sorting.cumsum if identity == 0 else _sorting.cumprod
    result = fn(array, axis, dtype)
    if not include_initial:
        return result
    ax = _sorting._axis(name, axis, array.ndim)
    shape = list(result.shape)
    shape[ax] = 1
    initial = empty_on(result._rt, tuple(shape), result.dtype)
    fill(initial, identity)
    return concatenate([initial, result], axis=ax)


def cumulative_sum(x: GPUArray, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> GPUArray:
    """The cumulative sum along ``axis`` (None only for 1-D x), optionally led by 0."""
    return _cumulative("cumulative_sum", x, axis, dtype, include_initial, 0)


def cumulative_prod(x: GPUArray, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> GPUArray:
    """The cumulative product along ``axis`` (None only for 1-D x), optionally led by 1."""
    return _cumulative("cumulative_prod", x, axis, dtype, include_initial, 1)


def diff(x: GPUArray, /, *, axis: int = -1, n: int = 1, prepend: GPUArray | None = None,
         append: GPUArray | None = None) -> GPUArray:
    """The n-th discrete difference along ``axis`` of ``prepend``, ``x`` and ``append``."""
    array = _sorting._array("diff", x)
    if prepend is not None or append is not None:
        ax = _sorting._axis("diff", axis, array.ndim)
        parts = [p for p in (prepend, array, append) if p is not None]
        array = concatenate(parts, axis=ax)
    return _sorting.diff(array, n, axis)


def unique_all(x: GPUArray, /) -> UniqueAllResult:
    """Unique values, the index of each one's first occurrence, the inverse and the counts."""
    values, indices, inverse, counts = _sorting.unique(
        x, return_index=True, return_inverse=True, return_counts=True)
    return UniqueAllResult(values, indices, inverse, counts)


def unique_counts(x: GPUArray, /) -> UniqueCountsResult:
    """Unique values and how often each occurs."""
    values, counts = _sorting.unique(x, return_counts=True)
    return UniqueCountsResult(values, counts)


def unique_inverse(x: GPUArray, /) -> UniqueInverseResult:
    """Unique values and the inverse indices (of x's shape)."""
    values, inverse = _sorting.unique(x, return_inverse=True)
    return UniqueInverseResult(values, inverse)


def unique_values(x: GPUArray, /) -> GPUArray:
    """The sorted unique values."""
    result: GPUArray = _sorting.unique(x)
    return result


def take_along_axis(x: GPUArray, indices: GPUArray, /, *, axis: int = -1) -> GPUArray:
    """Elements of ``x`` picked along ``axis`` by ``indices`` (x's ndim)."""
    return _indexing.take_along_axis(x, indices, axis)


__all__ = ["UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult", "argsort",
           "cumulative_prod", "cumulative_sum", "diff", "sort", "take_along_axis",
           "unique_all", "unique_counts", "unique_inverse", "unique_values"]
