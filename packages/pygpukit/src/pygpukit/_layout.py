"""Array layout arithmetic: shapes, byte strides, views and broadcasting (no data is touched).

Everything here is pure Python over tuples, shared by both backends, so a view computed on the
CPU simulation is exactly the view computed on the GPU.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence
from typing import Any

#: The most dimensions an array may have (the kernels' PGK_MAX_DIMS).
MAX_DIMS = 16

Shape = tuple[int, ...]
Strides = tuple[int, ...]


def as_shape(shape: object, *, argument: str = "shape") -> Shape:
    """Normalize an int or a sequence of ints to a shape tuple, or raise a clear error."""
    try:
        if isinstance(shape, Sequence) or hasattr(shape, "__iter__"):
            dims = tuple(operator.index(d) for d in shape)
        else:
            dims = (operator.index(shape),)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"{argument}: expected an int or a sequence of ints; got {shape!r}"
        ) from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{argument}: dimensions must be >= 0; got {dims}")
    if len(dims) > MAX_DIMS:
        raise ValueError(
            f"{argument}: at most {MAX_DIMS} dimensions are supported; got {len(dims)}"
        )
    return dims


@functools.lru_cache(maxsize=1024)
def c_strides(shape: Shape, itemsize: int) -> Strides:
    """Byte strides of a C-contiguous array of ``shape``."""
    strides = []
    step = itemsize
    for dim in reversed(shape):
        strides.append(step)
        step *= max(dim, 1)
    return tuple(reversed(strides))


@functools.lru_cache(maxsize=1024)
def is_c_contiguous(shape: Shape, strides: Strides, itemsize: int) -> bool:
    """Whether the layout is C-contiguous (strides of size-1 dims do not matter, as in NumPy)."""
    if 0 in shape:
        return True
    expected = itemsize
    for dim, stride in zip(reversed(shape), reversed(strides), strict=True):
        if dim != 1 and stride != expected:
            return False
        expected *= dim
    return True


def extent(shape: Shape, strides: Strides, itemsize: int) -> tuple[int, int]:
    """Lowest and one-past-highest byte offset touched by a view (relative to its origin)."""
    if 0 in shape:
        return 0, 0
    low = sum(s * (d - 1) for d, s in zip(shape, strides, strict=True) if s < 0)
    high = sum(s * (d - 1) for d, s in zip(shape, strides, strict=True) if s > 0)
    return low, high + itemsize


def normalize_axis(axis: int, ndim: int, *, argument: str = "axis") -> int:
    """Map a possibly negative axis into ``range(ndim)`` or raise numpy's AxisError wording."""
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise IndexError(f"{argument} {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def broadcast_shapes(*shapes: Shape) -> Shape:
    """NumPy's broadcasting of several shapes into one, or ValueError naming them."""
    ndim = max((len(s) for s in shapes), default=0)
    result = []
    for i in range(-ndim, 0):
        sizes = {s[i] for s in shapes if len(s) >= -i} - {1}
        if len(sizes) > 1:
            listed = " ".join(str(s) for s in shapes)
            raise ValueError(f"operands could not be broadcast together with shapes {listed}")
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def broadcast_strides(shape: Shape, strides: Strides, target: Shape) -> Strides:
    """Strides that view an array of ``shape`` as ``target`` (stride 0 along broadcast dims)."""
    lead = len(target) - len(shape)
    if lead < 0:
        raise ValueError(f"cannot broadcast shape {shape} to {target}")
    out = [0] * lead
    for dim, stride, want in zip(shape, strides, target[lead:], strict=True):
        if dim == want:
            out.append(stride)
        elif dim == 1:
            out.append(0)
        else:
            raise ValueError(f"cannot broadcast shape {shape} to {target}")
    return tuple(out)


def reshape_strides(
    shape: Shape, strides: Strides, new_shape: Shape, itemsize: int
) -> Strides | None:
    """Strides for viewing ``shape``/``strides`` as ``new_shape`` without a copy, or ``None``.

    The same algorithm as NumPy's ``_attempt_nocopy_reshape``: runs of old dimensions that are
    contiguous with respect to each other may be regrouped freely.
    """
    if math.prod(shape) != math.prod(new_shape):
        return None
    if math.prod(shape) == 0 or not new_shape:
        return c_strides(new_shape, itemsize)
    old = [(d, s) for d, s in zip(shape, strides, strict=True) if d != 1]
    new_strides = [0] * len(new_shape)
    oi, ni = 0, 0
    while ni < len(new_shape) and oi < len(old):
        np_, op = new_shape[ni], old[oi][0]
        nj, oj = ni + 1, oi + 1
        while np_ != op:
            if np_ < op:
                np_ *= new_shape[nj]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        new_strides[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            new_strides[k - 1] = new_strides[k] * new_shape[k]
        ni, oi = nj, oj
    # Trailing size-1 dimensions of the new shape.
    last = new_strides[ni - 1] if ni else itemsize
    for k in range(ni, len(new_shape)):
        new_strides[k] = last
    return tuple(new_strides)


def resolve_reshape(size: int, shape: Shape | tuple[int, ...]) -> Shape:
    """Fill in a single -1 in a requested shape, checking the element count."""
    dims = list(shape)
    unknown = [i for i, d in enumerate(dims) if d == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    if any(d < -1 for d in dims):
        raise ValueError(f"negative dimensions not allowed in {tuple(shape)}")
    known = math.prod(d for d in dims if d != -1)
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
        dims[unknown[0]] = size // known
    elif known != size:
        raise ValueError(f"cannot reshape array of size {size} into shape {tuple(shape)}")
    return as_shape(tuple(dims))


def _is_integer(item: Any) -> bool:
    if isinstance(item, bool):
        return False
    try:
        operator.index(item)
    except TypeError:
        return False
    return True


class AdvancedIndex(TypeError):  # noqa: N818 (a signal, caught by GPUArray.__getitem__)
    """A key with advanced items (arrays, lists, masks, bools): not a view."""


def _slices_view(shape: Shape, strides: Strides,
                 key: tuple[Any, ...]) -> tuple[Shape, Strides, int] | None:
    """:func:`index_view` of a tuple of slices only (dask's chunk getter), else ``None``."""
    out_shape = list(shape)
    out_strides = list(strides)
    offset = 0
    for dim, item in enumerate(key):
        if item.__class__ is not slice:
            return None
        start, stop, step = item.indices(shape[dim])
        length = len(range(start, stop, step))
        if length:
            offset += start * strides[dim]
        out_shape[dim] = length
        out_strides[dim] = strides[dim] * step
    return tuple(out_shape), tuple(out_strides), offset


def index_view(
    shape: Shape, strides: Strides, key: Any
) -> tuple[Shape, Strides, int]:
    """Apply a basic index (ints, slices, ``...``, ``None``) to a layout.

    Returns the view's shape, strides and the byte offset of its origin.

    Raises
    ------
    IndexError
        Out-of-range integers, too many indices, or more than one ellipsis.
    AdvancedIndex
        The key has an item that is not basic (an array, a list, a bool, ...): advanced
        indexing, done by ``pygpukit._indexing``.
    """
    if key.__class__ is tuple and len(key) <= len(shape):
        view = _slices_view(shape, strides, key)
        if view is not None:
            return view
    items = key if isinstance(key, tuple) else (key,)
    n_ellipsis = sum(1 for k in items if k is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for k in items if k is not None and k is not Ellipsis)
    if consumed > len(shape):
        if any(k is not None and k is not Ellipsis and not isinstance(k, slice)
               and not _is_integer(k) for k in items):
            raise AdvancedIndex("advanced index")
        raise IndexError(
            f"too many indices for array: array is {len(shape)}-dimensional, "
            f"but {consumed} were indexed"
        )
    if n_ellipsis == 0:
        items = (*items, Ellipsis)
    out_shape: list[int] = []
    out_strides: list[int] = []
    offset = 0
    dim = 0
    for item in items:
        if item is Ellipsis:
            for _ in range(len(shape) - consumed):
                out_shape.append(shape[dim])
                out_strides.append(strides[dim])
                dim += 1
        elif item is None:
            out_shape.append(1)
            out_strides.append(0)
        elif isinstance(item, slice):
            start, stop, step = item.indices(shape[dim])
            length = len(range(start, stop, step))
            if length:
                offset += start * strides[dim]
            out_shape.append(length)
            out_strides.append(strides[dim] * step)
            dim += 1
        elif isinstance(item, bool) or getattr(item, "ndim", 0) != 0:
            # Arrays of any kind go straight to advanced indexing: trying their __index__
            # first costs a formatted TypeError per call (tens of microseconds of a[idx]).
            raise AdvancedIndex("advanced index")
        else:
            try:
                index = operator.index(item)
            except TypeError:  # arrays, lists, numpy.bool_, floats, ...
                raise AdvancedIndex("advanced index") from None
            size = shape[dim]
            if not -size <= index < size:
                raise IndexError(
                    f"index {index} is out of bounds for axis {dim} with size {size}"
                )
            offset += (index % size) * strides[dim]
            dim += 1
    return tuple(out_shape), tuple(out_strides), offset
