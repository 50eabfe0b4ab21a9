"""Advanced indexing: integer-array and boolean-mask indices, and the functions built on them.

``GPUArray.__getitem__`` / ``__setitem__`` come here only for keys that are not basic (an
integer array, a list, a mask, a bool); basic keys stay views and never reach this module.

A key is turned into an :class:`~pygpukit._indexplan.IndexPlan` as NumPy defines advanced
indexing: integers and slices are applied first (a view), masks become the integer arrays of
their ``nonzero()``, the integer arrays broadcast together to a shape ``B``, and ``B`` replaces
the indexed dims where they stand when the advanced indices (integer scalars counting as such)
are adjacent in the key, else it goes first.  One kernel then gathers (``a[key]``), scatters
(``a[key] = v``) or accumulates (:func:`add_at`) over the index space.

Index checks: NumPy arrays and lists are checked on the host before anything is launched.
Indices on the device are checked by the kernel itself: it records the first out-of-range index
in an 8-byte slot, read back once per operation (one small device-to-host copy, which waits for
the kernel), and :class:`IndexError` is raised naming the axis and its size, as NumPy does.  An
assignment or scatter-add runs that check alone before it writes (``pgk_index_check``), so a
failed one writes nothing, as in NumPy; a failed gather returns nothing.  Inside a graph
capture the slot cannot be read: out-of-range elements are skipped there (a gather gives 0).
With ``gp.set_index_check("deferred")`` the slot is read at the stream's next synchronization
instead of at the call (pygpukit._index_errors): no wait per operation, and a failed write has
written its in-range elements.
"""

from __future__ import annotations

import contextlib
import math
import operator
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from pygpukit import _array, _index_errors, _layout, _math
from pygpukit._array import GPUArray, complex_pairs, from_pairs
from pygpukit._context import state as _context_state
from pygpukit._dtypes import normalize_dtype
from pygpukit._fastpath import Kind, fast
from pygpukit._index_errors import bounds_message
from pygpukit._indexplan import IndexMode, IndexPlan
from pygpukit._stream import stream_for_runtime
from pygpukit._transfer import assign, check_same_device, copy_into, empty_on, touch, upload

if TYPE_CHECKING:
    from pygpukit._backend import Runtime
    from pygpukit._stream import Stream

_INT64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)
_ONLY_VALID = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
               "integer or boolean arrays are valid indices")
_ARRAY_DTYPE = "arrays used as indices must be of integer (or boolean) type"
_MODES = {"raise": IndexMode.RAISE, "wrap": IndexMode.WRAP, "clip": IndexMode.CLIP}
_MISSING: Any = object()


# -- parsing a key ------------------------------------------------------------------------------

class _Ints:
    """An integer index array: on the host (NumPy, int64) or on the device (any int dtype)."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray[Any, Any] | GPUArray) -> None:
        self.array = array

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)


class _Mask:
    """A boolean index: on the host (NumPy) or on the device."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray[Any, Any] | GPUArray) -> None:
        self.array = array

    @property
    def ndim(self) -> int:
        return len(self.array.shape)


def _convert(item: Any) -> Any:
    """One item of a key: None, Ellipsis, slice, int, :class:`_Ints` or :class:`_Mask`."""
    if item is None or item is Ellipsis or isinstance(item, slice):
        return item
    if isinstance(item, (bool, np.bool_)):
        return _Mask(np.asarray(bool(item)))
    if isinstance(item, GPUArray):
        if item.dtype == _BOOL:
            return _Mask(item)
        if item.dtype.kind in "iu":
            return _Ints(item)
        raise IndexError(f"{_ARRAY_DTYPE}; got a GPUArray of {item.dtype}")
    if isinstance(item, np.ndarray) and item.ndim == 0 and item.dtype.kind in "iu":
        return operator.index(item)
    if isinstance(item, (list, tuple, np.ndarray)):
        try:
            host = np.asarray(item)
        except ValueError as exc:  # ragged nested lists
            raise IndexError(f"{_ONLY_VALID}; {exc}") from None
        if host.dtype == _BOOL:
            return _Mask(host)
        if host.dtype.kind in "iu":
            if host.dtype.kind == "u" and host.size and int(host.max()) > np.iinfo(np.int64).max:
                raise IndexError(f"index {int(host.max())} does not fit int64")
            return _Ints(host.astype(np.int64, copy=False))
        if host.size == 0 and host.dtype.kind == "f" and not isinstance(item, np.ndarray):
            return _Ints(host.astype(np.int64))  # [] means an empty integer index, as NumPy
        raise IndexError(f"{_ARRAY_DTYPE}; got {host.dtype}")
    if hasattr(item, "__index__"):
        return operator.index(item)
    raise IndexError(f"{_ONLY_VALID}; got {type(item).__name__}")


def _check_host(index: np.ndarray[Any, Any], size: int, axis: int) -> None:
    """Raise NumPy's IndexError for the first element of ``index`` outside ``[-size, size)``."""
    if index.size == 0:
        return
    if int(index.min()) >= -size and int(index.max()) < size:
        return
    flat = index.reshape(-1)
    bad = int(np.argmax((flat < -size) | (flat >= size)))
    raise IndexError(bounds_message(int(flat[bad]), axis, size))


class _Parsed:
    """A key applied to an array: the basic view, the advanced entries, the result layout."""

    __slots__ = ("adjacent", "entries", "insert", "view")

    def __init__(self, view: GPUArray, entries: list[tuple[int, int, Any]], adjacent: bool,
                 insert: int) -> None:
        self.view = view
        self.entries = entries  # (view dim, source axis, host ndarray | device GPUArray)
        self.adjacent = adjacent
        self.insert = insert  # view dim where the broadcast index dims go (adjacent case)


def _nonzero_rows(mask: Any) -> list[Any]:
    """The integer arrays of ``mask.nonzero()`` (host arrays for a host mask)."""
    if isinstance(mask, GPUArray):
        return list(_nonzero_matrix(mask))
    return list(np.nonzero(mask))


def _parse(a: GPUArray, key: Any) -> _Parsed:
    """Apply ``key`` to ``a`` as NumPy's advanced indexing (see the module docstring)."""
    raw = key if isinstance(key, tuple) else (key,)
    items = [_convert(item) for item in raw]
    if sum(1 for item in items if item is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = 0
    for item in items:
        if isinstance(item, _Mask):
            consumed += item.ndim
        elif item is not None and item is not Ellipsis:
            consumed += 1
    if consumed > a.ndim:
        raise IndexError(f"too many indices for array: array is {a.ndim}-dimensional, but "
                         f"{consumed} were indexed")
    # Each item with its position in the key: the slices an Ellipsis stands for share its
    # position, and an Ellipsis of no dims still separates advanced items (as in NumPy).
    fill = [slice(None)] * (a.ndim - consumed)
    placed = [(pos, item) for pos, item in enumerate(items) if item is not Ellipsis]
    if Ellipsis in items:
        at = next(i for i, item in enumerate(items) if item is Ellipsis)
        placed[at:at] = [(at, item) for item in fill]
    else:
        placed.extend((len(items), item) for item in fill)
    basic: list[Any] = []
    entries: list[tuple[int, int, Any]] = []
    positions: list[int] = []  # items that are advanced (arrays, masks, and then ints too)
    insert = -1
    src = view_dim = 0
    for pos, item in placed:
        if item is None:
            basic.append(None)
            view_dim += 1
        elif isinstance(item, slice):
            basic.append(item)
            src += 1
            view_dim += 1
        elif isinstance(item, int):
            basic.append(item)
            positions.append(pos)
            if insert < 0:
                insert = view_dim
            src += 1
        elif isinstance(item, _Ints):
            basic.append(slice(None))
            entries.append((view_dim, src, item.array))
            positions.append(pos)
            if insert < 0:
                insert = view_dim
            src += 1
            view_dim += 1
        else:  # a mask over item.ndim dims
            mask = item.array
            if mask.ndim == 0:  # a[True] / a[False]: a new axis indexed by [0] or []
                basic.append(None)
                taken = np.zeros(1 if bool(_host_scalar(mask)) else 0, np.int64)
                entries.append((view_dim, src, taken))
            else:
                for d, size in enumerate(mask.shape):
                    # NumPy takes an empty mask along any axis (it selects nothing)
                    if size != a.shape[src + d] and math.prod(mask.shape) != 0:
                        raise IndexError(
                            f"boolean index did not match indexed array along axis {src + d}; "
                            f"size of axis is {a.shape[src + d]} but size of corresponding "
                            f"boolean axis is {size}")
                for d, rows in enumerate(_nonzero_rows(mask)):
                    basic.append(slice(None))
                    entries.append((view_dim + d, src + d, rows))
                src += mask.ndim
            positions.append(pos)
            if insert < 0:
                insert = view_dim
            view_dim += max(mask.ndim, 1)
    shape, strides, offset = _layout.index_view(a.shape, a.strides, tuple(basic))
    return _Parsed(a._view(shape, strides, offset), entries, _adjacent(positions),
                   max(insert, 0))


def _adjacent(positions: list[int]) -> bool:
    """Whether the advanced items stand next to each other in the key (NumPy's rule)."""
    return not positions or positions == list(range(positions[0],
                                                    positions[0] + len(positions)))


def _host_scalar(mask: Any) -> Any:
    return mask.item() if isinstance(mask, GPUArray) else mask[()]


# -- plans --------------------------------------------------------------------------------------

class _Prepared:
    """A plan, the result layout of its index space, and whether the device must check it."""

    __slots__ = ("check", "plan", "result_shape")

    def __init__(self, plan: IndexPlan, result_shape: tuple[int, ...], check: bool) -> None:
        self.plan = plan
        self.result_shape = result_shape
        self.check = check


def _device_index(view: GPUArray, index: GPUArray, index_shape: tuple[int, ...]) -> GPUArray:
    """A device index array as the kernels read it: int64, C-contiguous, of ``index_shape``."""
    check_same_device(view, index, op="indexing")
    if (index.dtype == _INT64 and index.shape == index_shape and index.is_contiguous()
            and index._block is not view._block):  # an index the kernel may write
        return index
    widened = empty_on(view._rt, index_shape, _INT64)  # broadcast and widen in one copy
    copy_into(index, widened)
    return widened


def _plan_one(a: GPUArray, index: GPUArray, mode: IndexMode) -> _Prepared:
    """``_plan(_parse(a, index))`` for the most common key: one integer GPUArray (axis 0).

    The same plan, without the general parser's passes over a key of one item: a[idx] is
    bound by host time for all but large arrays.
    """
    index_shape = index.shape
    result_shape = index_shape + a.shape[1:]
    _layout.as_shape(result_shape)  # at most MAX_DIMS dimensions
    count = math.prod(index_shape)
    size = a.shape[0]
    if mode != IndexMode.RAISE and size == 0 and count:
        raise IndexError("cannot do a non-empty take from an empty axes.")
    shape, strides = a.shape, a.strides
    plan = IndexPlan(
        base=a,
        outer=(),
        inner=tuple((shape[d], strides[d]) for d in range(1, a.ndim) if shape[d] != 1),
        indices=(_device_index(a, index, index_shape),),
        sizes=(size,),
        strides=(strides[0],),
        axes=(0,),
        count=count,
        mode=mode,
    )
    return _Prepared(plan, result_shape, mode == IndexMode.RAISE)


def _one_index_array(a: GPUArray, key: Any) -> bool:
    """Whether ``a[key]`` is the case of :func:`_plan_one`."""
    return isinstance(key, GPUArray) and key.dtype.kind in "iu" and a.ndim > 0


def _plan(parsed: _Parsed, mode: IndexMode) -> _Prepared:
    """Broadcast the index arrays, put them in int64 on the device, lay out the index space."""
    view = parsed.view
    runtime = view._rt
    shapes = [tuple(index.shape) for _, _, index in parsed.entries]
    try:
        index_shape = _layout.broadcast_shapes(*shapes)
    except ValueError:
        listed = " ".join(str(s) for s in shapes)
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {listed}") from None
    count = math.prod(index_shape)
    indexed = {dim for dim, _, _ in parsed.entries}
    check = False
    arrays: list[GPUArray] = []
    for dim, axis, index in parsed.entries:
        size = view.shape[dim]
        if isinstance(index, GPUArray):
            arrays.append(_device_index(view, index, index_shape))
            check = check or mode == IndexMode.RAISE
        else:
            host = np.broadcast_to(np.asarray(index, np.int64), index_shape)
            if mode == IndexMode.RAISE:
                _check_host(host, size, axis)
            elif size == 0 and host.size:
                raise IndexError("cannot do a non-empty take from an empty axes.")
            arrays.append(upload(runtime, np.ascontiguousarray(host)))
        if isinstance(index, GPUArray) and mode != IndexMode.RAISE and size == 0 and count:
            raise IndexError("cannot do a non-empty take from an empty axes.")
    rest = [d for d in range(view.ndim) if d not in indexed]
    if parsed.adjacent:
        before = [d for d in rest if d < parsed.insert]
        after = [d for d in rest if d >= parsed.insert]
    else:
        before, after = [], rest
    result_shape = (tuple(view.shape[d] for d in before) + index_shape
                    + tuple(view.shape[d] for d in after))
    _layout.as_shape(result_shape)  # at most MAX_DIMS dimensions
    plan = IndexPlan(
        base=view,
        outer=tuple((view.shape[d], view.strides[d]) for d in before if view.shape[d] != 1),
        inner=tuple((view.shape[d], view.strides[d]) for d in after if view.shape[d] != 1),
        indices=tuple(arrays),
        sizes=tuple(view.shape[dim] for dim, _, _ in parsed.entries),
        strides=tuple(view.strides[dim] for dim, _, _ in parsed.entries),
        axes=tuple(axis for _, axis, _ in parsed.entries),
        count=count,
        mode=mode,
    )
    return _Prepared(plan, result_shape, check)


@contextlib.contextmanager
def _error_slot(runtime: Runtime, prepared: _Prepared, stream: Stream, op: str
                ) -> Iterator[tuple[GPUArray | None, bool]]:
    """The kernel's 8-byte error slot (None: unchecked) and whether it is a deferred one.

    The launch goes inside the ``with`` block.  No slot when the device indices need no check
    or a graph is being captured.  A deferred slot (pygpukit._index_errors) is already reset,
    is read at the next synchronization, and is held (the stream's lock) until the block ends,
    so that another thread's synchronization of the stream does not read it before the launch.
    """
    if not prepared.check or _context_state.capturing:
        yield None, False
        return
    if _index_errors.deferred():
        def make_ring() -> GPUArray:
            ring = empty_on(runtime, (_index_errors.RING,), _INT64, stream)
            runtime.fill(ring, -1, stream)
            return ring

        checks = _index_errors.stream_checks(stream, make_ring)
        with checks.lock:
            slot = _index_errors.take_slot(checks, runtime, stream, prepared.plan, op)
            ring = checks.ring
            yield GPUArray(runtime, ring._block, ring._offset + 8 * slot, (1,), (8,), _INT64), True
        return
    error = empty_on(runtime, (1,), _INT64)
    touch(stream, written=error)
    yield error, False


def _check_first(runtime: Runtime, prepared: _Prepared, error: GPUArray | None, deferred: bool,
                 stream: Stream) -> GPUArray | None:
    """Before a write with an immediate check: the bounds check alone, raising IndexError.

    NumPy writes nothing when an index is out of range, so the indices are checked (one read
    of them, one wait) before the scatter, which then runs unchecked (None returned).  A
    deferred check cannot wait: its write skips the out-of-range elements only.
    """
    if error is None or deferred:
        return error
    runtime.index_check(prepared.plan, error, stream)
    _raise_recorded(prepared, error)
    return None


def _raise_recorded(prepared: _Prepared, error: GPUArray | None) -> None:
    """Read an immediate error slot (one 8-byte copy) and raise NumPy's IndexError if it was set."""
    if error is None:
        return
    code = int(error.to_numpy()[0])
    if code < 0:
        return
    plan = prepared.plan
    k, m = divmod(code, plan.count)
    value = int(plan.indices[k][m].item())
    raise IndexError(bounds_message(value, plan.axes[k], plan.sizes[k]))


def _gather(prepared: _Prepared) -> GPUArray:
    plan = prepared.plan
    runtime = plan.base._rt
    out = empty_on(runtime, prepared.result_shape, plan.base.dtype)
    if plan.size == 0:
        return out
    stream = stream_for_runtime(runtime)
    with _error_slot(runtime, prepared, stream, "gather (a[index])") as (error, deferred):
        touch(stream, plan.base, *plan.indices, written=out)
        runtime.index_gather(plan, out, error, stream, preset=deferred)
    if not deferred:  # a deferred slot is read at the stream's next synchronization
        _raise_recorded(prepared, error)
    return out


def _values_for(value: Any, prepared: _Prepared, *, what: str) -> GPUArray:
    """``value`` broadcast to the index space and cast to the target's dtype, C-contiguous."""
    plan = prepared.plan
    runtime = plan.base._rt
    shape, dtype = prepared.result_shape, plan.base.dtype
    if isinstance(value, GPUArray):
        check_same_device(plan.base, value, op="assignment")
        if (value.dtype == dtype and value.shape == shape and value.is_contiguous()
                and value._block is not plan.base._block):
            return value
        source = value
    elif isinstance(value, (bool, int, float, np.generic)) and np.ndim(value) == 0:
        out = empty_on(runtime, shape, dtype)
        if out.size:
            assign(out, value)
        return out
    else:
        host = np.asarray(value)
        normalize_dtype(host.dtype, argument=f"{what}: value.dtype")
        source = upload(runtime, host)
    try:
        _layout.broadcast_strides(source.shape, source.strides, shape)
    except ValueError:
        raise ValueError(f"shape mismatch: value array of shape {source.shape} could not be "
                         f"broadcast to indexing result of shape {shape}") from None
    out = empty_on(runtime, shape, dtype)
    copy_into(source, out)
    return out


def _scatter(prepared: _Prepared, value: Any) -> None:
    plan = prepared.plan
    values = _values_for(value, prepared, what="__setitem__")
    if plan.size == 0:
        return
    runtime = plan.base._rt
    stream = stream_for_runtime(runtime)
    with _error_slot(runtime, prepared, stream, "assignment (a[index] = v)") as (error, deferred):
        touch(stream, values, *plan.indices, written=plan.base)
        error = _check_first(runtime, prepared, error, deferred, stream)
        runtime.index_scatter(plan, values, error, stream, preset=deferred)


# -- masks ---------------------------------------------------------------------------------------

def _device_mask(mask: Any, runtime: Runtime) -> GPUArray:
    return mask if isinstance(mask, GPUArray) else upload(runtime, np.asarray(mask))


def _single_mask(a: GPUArray, key: Any) -> Any:
    """The mask when ``key`` is one boolean array over leading dims of ``a``, else None."""
    item = key[0] if isinstance(key, tuple) and len(key) == 1 else key
    if isinstance(item, (GPUArray, np.ndarray)):
        is_mask = item.dtype == _BOOL
    else:
        return None
    if not is_mask or item.ndim == 0 or item.ndim > a.ndim:
        return None
    if tuple(item.shape) != a.shape[:item.ndim]:
        return None
    return item


def _count_true(flags: GPUArray) -> int:
    """Set flags of a contiguous bool array, read back (the result's size depends on it)."""
    runtime = flags._rt
    out = empty_on(runtime, (1,), _INT64)
    stream = stream_for_runtime(runtime)
    touch(stream, flags, written=out)
    runtime.count_flags(flags, out, stream)
    return int(out.to_numpy()[0])


def _flags(x: GPUArray) -> GPUArray:
    """A C-contiguous bool array: ``x != 0`` (``x`` itself when already so)."""
    if x.dtype == _BOOL:
        return x if x.is_contiguous() else x.copy()
    return _math.binary("not_equal", x, 0)


#: A compaction's result stays a view of its room for every element while it fills at least
#: 1 / _KEEP_SHARE of it; a sparser one is copied into a block of its own (a copy of at most a
#: quarter of the room), so a few selected elements never hold memory for the whole input.
_KEEP_SHARE = 4


def _compact(x: GPUArray | None, flags: GPUArray, dtype: np.dtype[Any]) -> GPUArray:
    """The flagged elements of ``x`` (flat, C order), or their flat positions (``x`` None).

    The compaction writes into room for every element; the runtime returns the count (the one
    host read that the result's size needs) as soon as the counting pass has it, while the
    compaction itself may still run on the stream (later work on the result queues behind it).
    """
    runtime = flags._rt
    n = flags.size
    out = empty_on(runtime, (n,), dtype)
    if n == 0:
        return out
    stream = stream_for_runtime(runtime)
    touch(stream, flags, *([] if x is None else [x]), written=out)
    count = runtime.select_flagged_counted(x, flags, out, stream)
    selected = out[:count]
    return selected if count * _KEEP_SHARE >= n else selected.copy()


def _masked_get(a: GPUArray, mask: Any) -> GPUArray:
    """``a[mask]`` for a mask of ``a``'s shape: one compaction of ``a``'s elements."""
    flags = _flags(_device_mask(mask, a._rt))
    check_same_device(a, flags, op="indexing")
    source = a if a.is_contiguous() else a.copy()
    return _compact(source, flags, a.dtype)


def _masked_fill(a: GPUArray, mask: Any, value: Any) -> None:
    """``a[mask] = scalar``: ``where(mask, value, a)`` written into ``a`` (no host read)."""
    device_mask = _device_mask(mask, a._rt)
    cond = device_mask.reshape(device_mask.shape + (1,) * (a.ndim - device_mask.ndim))
    fill: Any
    if isinstance(value, GPUArray):
        fill = value.reshape(()).astype(a.dtype, copy=False)
    else:
        fill = np.asarray(value).astype(a.dtype)[()] if np.ndim(value) == 0 else None
        if fill is None:
            raise ValueError("a scalar value was expected")
        fill = _scalar_for(fill, a.dtype)
    _math.where(cond, fill, a, out=a)


def _scalar_for(value: Any, dtype: np.dtype[Any]) -> Any:
    """A NumPy scalar of ``dtype`` as the weak Python scalar ``where`` takes."""
    if dtype == _BOOL:
        return bool(value)
    if dtype.kind in "iu":
        return int(value)
    return float(value)


def _is_scalar_value(value: Any) -> bool:
    if isinstance(value, GPUArray):
        return value.size == 1
    return isinstance(value, (bool, int, float, np.generic)) or (
        isinstance(value, np.ndarray) and value.size == 1)


# -- GPUArray's hooks ----------------------------------------------------------------------------

def getitem(a: GPUArray, key: Any) -> GPUArray:
    """``a[key]`` for a key with advanced items (a new array, as in NumPy)."""
    if _one_index_array(a, key):
        return _gather(_plan_one(a, key, IndexMode.RAISE))
    mask = _single_mask(a, key)
    if mask is not None and mask.ndim == a.ndim:
        return _masked_get(a, mask)
    return _gather(_plan(_parse(a, key), IndexMode.RAISE))


def setitem(a: GPUArray, key: Any, value: Any) -> None:
    """``a[key] = value`` for a key with advanced items (casting and broadcasting as NumPy)."""
    if _one_index_array(a, key):
        _scatter(_plan_one(a, key, IndexMode.RAISE), value)
        return
    mask = _single_mask(a, key)
    if mask is not None and _is_scalar_value(value):
        if not isinstance(value, GPUArray):
            value = np.asarray(value).reshape(())[()]
        _masked_fill(a, mask, value)
        return
    _scatter(_plan(_parse(a, key), IndexMode.RAISE), value)


# -- nonzero and friends ---------------------------------------------------------------------------

def _nonzero_matrix(x: GPUArray) -> GPUArray:
    """``(x.ndim, count)`` int64: row ``d`` holds the coordinates along axis ``d``."""
    if x.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar)"
                         ".nonzero() instead.")
    flat = _compact(None, _flags(x), _INT64)
    count = flat.size
    if x.ndim == 1:
        return flat.reshape(1, count)
    out = empty_on(x._rt, (x.ndim, count), _INT64)
    if count:
        _unravel(flat, x.shape, IndexMode.WRAP, out)
    return out


def _unravel(flat: GPUArray, shape: tuple[int, ...], mode: IndexMode, out: GPUArray,
             axis: int = 0) -> None:
    """Coordinates of C-order flat indices into ``out`` (``(len(shape), n)``, any strides)."""
    runtime = flat._rt
    stream = stream_for_runtime(runtime)
    check = mode == IndexMode.RAISE and not _context_state.capturing
    error = empty_on(runtime, (1,), _INT64) if check else None
    touch(stream, flat, written=out)
    if error is not None:
        touch(stream, written=error)
    runtime.unravel_index(flat, shape, int(mode), out, error, stream)
    if error is not None:
        code = int(error.to_numpy()[0])
        if code >= 0:
            value = int(flat[code].item())
            raise IndexError(bounds_message(value, axis, math.prod(shape)))


def nonzero(a: GPUArray) -> tuple[GPUArray, ...]:
    """Indices of the non-zero elements, one int64 array per dimension (NumPy's ``nonzero``).

    The count is read back to size the result (one small device-to-host copy).

    Parameters
    ----------
    a
        Any array of at least one dimension.

    Returns
    -------
    tuple of GPUArray
        ``a.ndim`` int64 arrays of equal length, in C order of the elements.
    """
    _require_array(a, "nonzero", "a")
    matrix = _nonzero_matrix(a)
    return tuple(matrix[d] for d in range(a.ndim))


def argwhere(a: GPUArray) -> GPUArray:
    """Coordinates of the non-zero elements as a ``(count, a.ndim)`` int64 array."""
    _require_array(a, "argwhere", "a")
    if a.ndim == 0:
        truthy = _count_true(_flags(a.reshape(1)))
        return empty_on(a._rt, (truthy, 0), _INT64)
    return _nonzero_matrix(a).T.copy()


@fast(Kind.WHERE, "where")  # the three-argument call of small arrays: in C
def where(cond: Any, a: Any = _MISSING, b: Any = _MISSING, *,
          out: GPUArray | None = None) -> Any:
    """Elements of ``a`` where ``cond`` is true, else of ``b``; ``where(cond)`` is ``nonzero``.

    Parameters
    ----------
    cond
        Condition (its truthiness); a GPUArray.
    a, b
        GPUArrays or scalars, broadcast with ``cond``; give both or neither.
    out
        Optional output (three-argument form only).
    """
    if b is not _MISSING:
        return _math.where(cond, a, b) if out is None else _math.where(cond, a, b, out=out)
    if a is not _MISSING:
        raise ValueError("either both or neither of x and y should be given")
    if out is not None:
        raise TypeError("where: out= needs the three-argument form where(cond, a, b)")
    return nonzero(cond)


# -- take, put and the rest ---------------------------------------------------------------

def _require_array(value: Any, op: str, argument: str) -> None:
    if not isinstance(value, GPUArray):
        raise TypeError(f"{op}: {argument} must be a GPUArray; got {type(value).__name__}")


def _mode(mode: str, op: str) -> IndexMode:
    try:
        return _MODES[mode]
    except (KeyError, TypeError):
        raise ValueError(f"{op}: mode must be 'raise', 'wrap' or 'clip'; got {mode!r}") from None


def _index_operand(indices: Any, op: str) -> Any:
    """``indices`` as an index item (GPUArray, NumPy array or int), refusing other types."""
    if isinstance(indices, GPUArray):
        if indices.dtype.kind not in "iu":
            raise IndexError(f"{op}: {_ARRAY_DTYPE}; got {indices.dtype}")
        return indices
    host = np.asarray(indices)
    if host.dtype.kind not in "iu" and not (host.size == 0 and host.dtype.kind == "f"):
        raise IndexError(f"{op}: {_ARRAY_DTYPE}; got {host.dtype}")
    if host.ndim == 0:
        return int(host)
    return host.astype(np.int64)


def take(a: GPUArray, indices: Any, axis: int | None = None, *, mode: str = "raise"
         ) -> GPUArray:
    """Elements of ``a`` at ``indices`` along ``axis`` (of the flattened array for None).

    Parameters
    ----------
    a
        Source array.
    indices
        Integer indices: a GPUArray, a NumPy array, a list or an int.
    axis
        Axis to take along; None takes from ``a.ravel()``.
    mode
        ``"raise"`` (default: out-of-range indices raise IndexError; negative ones count from
        the end), ``"wrap"`` (modulo the size) or ``"clip"``; the last two never read back.
    """
    _require_array(a, "take", "a")
    index = _index_operand(indices, "take")
    source = a.reshape(-1) if axis is None else a
    dim = 0 if axis is None else _layout.normalize_axis(axis, a.ndim)
    index_mode = _mode(mode, "take")
    if isinstance(index, int):
        index = np.asarray(index, np.int64)
    key = (slice(None),) * dim + (_Ints(index),)
    return _gather_items(source, key, index_mode)


def _parse_items(a: GPUArray, key: tuple[Any, ...]) -> _Parsed:
    """:func:`_parse` for a key already made of converted items (an ``_Ints`` kept as is)."""
    entries: list[tuple[int, int, Any]] = []
    basic: list[Any] = []
    positions: list[int] = []
    insert = -1
    for dim, item in enumerate(key):
        if isinstance(item, _Ints):
            basic.append(slice(None))
            entries.append((dim, dim, item.array))
            positions.append(dim)
            insert = dim if insert < 0 else insert
        else:
            basic.append(item)
    shape, strides, offset = _layout.index_view(a.shape, a.strides, tuple(basic))
    return _Parsed(a._view(shape, strides, offset), entries, _adjacent(positions),
                   max(insert, 0))


def _gather_items(source: GPUArray, key: tuple[Any, ...], mode: IndexMode) -> GPUArray:
    """Gather ``source[key]`` (a key of converted items); complex: the float view's gather.

    A complex array is gathered as its ``(..., 2)`` float view, the pair axis a trailing
    slice (no kernel takes complex).
    """
    if source.dtype.kind == "c":
        _complex_fits(source, "indexing")
        return from_pairs(_gather(_plan(_parse_items(complex_pairs(source), key), mode)))
    return _gather(_plan(_parse_items(source, key), mode))


def _scatter_items(target: GPUArray, key: tuple[Any, ...], mode: IndexMode,
                   values: GPUArray) -> None:
    """Scatter ``values`` into ``target[key]``; complex: into the float view."""
    if target.dtype.kind == "c":
        _complex_fits(target, "put")
        if values.dtype != target.dtype:
            values = values.astype(target.dtype)
        _scatter(_plan(_parse_items(complex_pairs(target), key), mode), complex_pairs(values))
        return
    _scatter(_plan(_parse_items(target, key), mode), values)


def _complex_fits(a: GPUArray, name: str) -> None:
    if a.ndim >= _layout.MAX_DIMS:
        raise NotImplementedError(f"{name}: complex arrays of {_layout.MAX_DIMS} dims take "
                                  "basic indices only")


def take_along_axis(arr: GPUArray, indices: Any, axis: int | None) -> GPUArray:
    """NumPy's ``take_along_axis``: ``indices`` has ``arr``'s ndim and picks along ``axis``."""
    _require_array(arr, "take_along_axis", "arr")
    index = _index_operand(indices, "take_along_axis")
    if isinstance(index, int):
        raise ValueError("take_along_axis: indices must be an array, not a scalar")
    if axis is None:
        if len(index.shape) != 1:
            raise ValueError("take_along_axis: when axis=None, indices must be 1-D")
        return take(arr, index, None)
    dim = _layout.normalize_axis(axis, arr.ndim)
    if len(index.shape) != arr.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    key: list[Any] = []
    for d in range(arr.ndim):
        if d == dim:
            key.append(_Ints(index))
        else:
            grid = np.arange(arr.shape[d], dtype=np.int64).reshape(
                (1,) * d + (-1,) + (1,) * (arr.ndim - d - 1))
            key.append(_Ints(grid))
    return _gather_items(arr, tuple(key), IndexMode.RAISE)


def put(a: GPUArray, ind: Any, v: Any, mode: str = "raise") -> None:
    """Set ``a.flat[ind] = v`` in place; ``v`` repeats when shorter than ``ind`` (NumPy's put)."""
    _require_array(a, "put", "a")
    index_mode = _mode(mode, "put")
    index = _index_operand(ind, "put")
    if isinstance(index, int):
        index = np.asarray([index], np.int64)
    n = math.prod(index.shape)
    if isinstance(v, GPUArray):
        values = v.reshape(-1)
    else:
        host = np.asarray(v).reshape(-1)
        values = upload(a._rt, host.astype(a.dtype) if host.dtype.kind in "biufc" else host)
    if n == 0:
        return
    if values.size == 0:
        raise ValueError("put: cannot replace the elements with an empty array")
    if values.size != n:  # NumPy repeats v cyclically
        values = take(values, np.arange(n, dtype=np.int64), None, mode="wrap")
    flat_index = index.reshape(-1)
    if a.is_contiguous() or a.ndim <= 1:
        target = a.reshape(-1) if a.ndim != 1 else a
        _scatter_items(target, (_Ints(flat_index),), index_mode, values)
        return
    # A strided array: flat indices become one coordinate array per axis.
    if not isinstance(flat_index, GPUArray) and index_mode == IndexMode.RAISE:
        _check_host(flat_index, a.size, 0)
    device_index = (flat_index if isinstance(flat_index, GPUArray)
                    else upload(a._rt, np.ascontiguousarray(flat_index)))
    if device_index.dtype != _INT64 or not device_index.is_contiguous():
        device_index = device_index.astype(_INT64)
    coords = empty_on(a._rt, (a.ndim, n), _INT64)
    _unravel(device_index, a.shape, index_mode, coords)
    key = tuple(_Ints(coords[d]) for d in range(a.ndim))
    _scatter_items(a, key, IndexMode.WRAP, values)


def compress(condition: Any, a: GPUArray, axis: int | None = None) -> GPUArray:
    """Slices of ``a`` along ``axis`` where ``condition`` (1-D) is true (NumPy's compress)."""
    _require_array(a, "compress", "a")
    source = a.reshape(-1) if axis is None else a
    dim = 0 if axis is None else _layout.normalize_axis(axis, a.ndim)
    cond: Any
    if isinstance(condition, GPUArray):
        cond = condition if condition.dtype == _BOOL else _math.binary("not_equal", condition, 0)
    else:
        cond = np.asarray(condition).astype(bool)
    if len(cond.shape) != 1:
        raise ValueError("condition must be a 1-d array")
    length = source.shape[dim]
    if cond.shape[0] > length:
        if bool(_host_any(cond, length)):
            raise IndexError(bounds_message(length, dim, length))
        cond = cond[:length]
    if isinstance(cond, GPUArray):
        picked: Any = _nonzero_matrix(cond)[0]
    else:
        picked = np.flatnonzero(cond)
    key = (slice(None),) * dim + (_Ints(picked),)
    return _gather_items(source, key, IndexMode.WRAP)


def _host_any(cond: Any, start: int) -> bool:
    tail = cond[start:]
    if isinstance(tail, GPUArray):
        return _count_true(_flags(tail)) > 0
    return bool(np.any(tail))


def repeat(a: GPUArray, repeats: Any, axis: int | None = None) -> GPUArray:
    """Repeat each element (``axis=None``: of the flattened array) ``repeats`` times.

    ``repeats`` is an int (one broadcast copy) or one count per element along the axis (a
    GPUArray of counts is read back: the result's size depends on it).
    """
    _require_array(a, "repeat", "a")
    source = a.reshape(-1) if axis is None else a
    dim = 0 if axis is None else _layout.normalize_axis(axis, a.ndim)
    counts = repeats.to_numpy() if isinstance(repeats, GPUArray) else np.asarray(repeats)
    if counts.dtype.kind not in "iu" and not (counts.dtype.kind == "b"):
        raise TypeError(f"repeat: repeats must be integers; got {counts.dtype}")
    counts = counts.astype(np.int64)
    if counts.size and int(counts.min()) < 0:
        raise ValueError("repeat: repeats may not contain negative values")
    n = source.shape[dim]
    if counts.ndim == 0 or counts.size == 1:
        r = int(counts.reshape(-1)[0]) if counts.size else 0
        # (..., n, 1, ...) broadcast to (..., n, r, ...), copied, merged into n * r.
        expanded = source.expand_dims(dim + 1)
        shape = (*source.shape[:dim + 1], r, *source.shape[dim + 1:])
        strides = _layout.broadcast_strides(expanded.shape, expanded.strides, shape)
        tiled = empty_on(a._rt, shape, a.dtype)
        copy_into(GPUArray(a._rt, expanded._block, expanded._offset, shape, strides, a.dtype),
                  tiled)
        return tiled.reshape((*source.shape[:dim], n * r, *source.shape[dim + 1:]))
    if counts.ndim != 1 or counts.size != n:
        raise ValueError(f"repeat: operands could not be broadcast together with shape ({n},) "
                         f"({counts.size},)")
    index = np.repeat(np.arange(n, dtype=np.int64), counts)
    key = (slice(None),) * dim + (_Ints(index),)
    return _gather_items(source, key, IndexMode.WRAP)


def tile(a: GPUArray, reps: Any) -> GPUArray:
    """Repeat the whole array ``reps`` times along each axis (NumPy's ``tile``): one copy."""
    _require_array(a, "tile", "a")
    counts = (reps,) if isinstance(reps, int) else tuple(operator.index(r) for r in reps)
    if any(r < 0 for r in counts):
        raise ValueError(f"tile: negative repetitions in {counts}")
    ndim = max(a.ndim, len(counts))
    counts = (1,) * (ndim - len(counts)) + counts
    source = a.reshape((1,) * (ndim - a.ndim) + a.shape)
    if all(r == 1 for r in counts):
        return source.copy()
    shape: list[int] = []
    strides: list[int] = []
    for r, d, s in zip(counts, source.shape, source.strides, strict=True):
        if r != 1:
            shape.append(r)
            strides.append(0)
        shape.append(d)
        strides.append(s)
    result_shape = tuple(r * d for r, d in zip(counts, source.shape, strict=True))
    if len(shape) > _layout.MAX_DIMS:  # too many dims for one copy: one axis at a time
        out = source
        for axis, r in enumerate(counts):
            if r != 1:
                out = tile(out, (1,) * axis + (r,) + (1,) * (ndim - axis - 1))
        return out
    view = GPUArray(a._rt, source._block, source._offset, tuple(shape), tuple(strides), a.dtype)
    out = empty_on(a._rt, tuple(shape), a.dtype)
    copy_into(view, out)
    return out.reshape(result_shape)


def flip(m: GPUArray, axis: int | tuple[int, ...] | None = None) -> GPUArray:
    """Reverse the order of elements along ``axis`` (all axes for None): a view, as NumPy."""
    _require_array(m, "flip", "m")
    if axis is None:
        axes = set(range(m.ndim))
    else:
        raw = axis if isinstance(axis, tuple) else (axis,)
        axes = {_layout.normalize_axis(x, m.ndim) for x in raw}
    return m[tuple(slice(None, None, -1) if d in axes else slice(None) for d in range(m.ndim))]


def roll(a: GPUArray, shift: Any, axis: int | tuple[int, ...] | None = None) -> GPUArray:
    """Shift elements along ``axis`` cyclically (the flattened array for None): a new array."""
    _require_array(a, "roll", "a")
    if axis is None:
        return roll(a.reshape(-1), shift, 0).reshape(a.shape)
    axes = axis if isinstance(axis, tuple) else (axis,)
    shifts = shift if isinstance(shift, tuple) else (shift,)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences of the same "
                         "length")
    total = [0] * a.ndim
    for s, ax in zip(shifts, axes, strict=True):
        total[_layout.normalize_axis(ax, a.ndim)] += operator.index(s)
    out = empty_on(a._rt, a.shape, a.dtype)
    if out.size == 0:
        return out
    # Each axis splits into at most two runs: copy the 2^k blocks once each.
    pieces: list[tuple[tuple[slice, ...], tuple[slice, ...]]] = [((), ())]
    for d in range(a.ndim):
        n = a.shape[d]
        s = total[d] % n if n else 0
        grown = []
        for src_key, dst_key in pieces:
            if s == 0:
                grown.append(((*src_key, slice(None)), (*dst_key, slice(None))))
            else:
                grown.append(((*src_key, slice(0, n - s)), (*dst_key, slice(s, n))))
                grown.append(((*src_key, slice(n - s, n)), (*dst_key, slice(0, s))))
        pieces = grown
    for src_key, dst_key in pieces:
        copy_into(a[src_key], out[dst_key])
    return out


# -- scatter-add ---------------------------------------------------------------------------------

_ADD_COMPUTE = {np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32), _INT64}


def add_at(x: GPUArray, indices: Any, values: Any, *, deterministic: bool = True) -> None:
    """``x[indices] += values`` with repeated indices accumulating (NumPy's ``add.at``).

    Deterministic by default: the destinations are sorted stably (a radix sort of their
    positions) and each destination's values are summed in a fixed order that depends on the
    index pattern only, never on timing; the same call gives the same bits every time.
    float16/bfloat16 accumulate in float32, small integer types in int64 (both rounded/wrapped
    once at the end).

    Parameters
    ----------
    x
        Target array, updated in place.
    indices
        Any index ``x[indices]`` accepts (integer arrays, masks, slices, ...).
    values
        Broadcast to the shape of ``x[indices]`` and cast to ``x``'s dtype (``same_kind``).
    deterministic
        False: one atomic add per element on the GPU (what torch's ``index_add_`` does by
        default), several times faster with many indices, no workspace; floating-point sums of
        repeated destinations are then rounded in an order that can change from run to run
        (integer sums are exact either way).  The CPU simulation is deterministic either way.
    """
    _require_array(x, "add_at", "x")
    if not isinstance(deterministic, bool):
        raise TypeError(f"add_at: deterministic must be a bool; got "
                        f"{type(deterministic).__name__}")
    _check_add_cast(x.dtype, values)
    key = indices if isinstance(indices, tuple) else (indices,)
    if x.dtype.kind == "c":  # the float view's scatter-add, the pair axis a trailing slice
        _complex_fits(x, "add_at")
        add_at(complex_pairs(x), (*key, slice(None)), complex_pairs(_as_complex(x, values)),
               deterministic=deterministic)
        return
    if x.dtype not in _ADD_COMPUTE:
        compute = np.dtype(np.float32) if x.dtype.kind == "f" else _INT64
        staged = x.astype(compute)
        add_at(staged, indices, values if not isinstance(values, GPUArray)
               else values.astype(compute), deterministic=deterministic)
        if x.dtype == _BOOL:
            staged = _math.binary("not_equal", staged, 0)
        copy_into(staged, x)
        return
    prepared = _plan(_parse(x, key), IndexMode.RAISE)
    staged_values = _values_for(values, prepared, what="add_at")
    plan = prepared.plan
    if plan.size == 0:
        return
    runtime = x._rt
    stream = stream_for_runtime(runtime)
    with _error_slot(runtime, prepared, stream, "add_at") as (error, deferred):
        touch(stream, staged_values, *plan.indices, written=plan.base)
        error = _check_first(runtime, prepared, error, deferred, stream)
        if deterministic:
            runtime.index_add(plan, staged_values, error, stream, preset=deferred)
        else:
            runtime.index_add_atomic(plan, staged_values, error, stream, preset=deferred)


def _as_complex(x: GPUArray, values: Any) -> GPUArray:
    """``values`` as a complex GPUArray of ``x``'s dtype on ``x``'s device."""
    if isinstance(values, GPUArray):
        check_same_device(x, values, op="add_at")
        return values if values.dtype == x.dtype else values.astype(x.dtype)
    host = np.asarray(values).astype(x.dtype)
    if host.ndim == 0:  # a scalar: filled on the device (no upload)
        out = empty_on(x._rt, (), x.dtype)
        out[...] = complex(host)
        return out
    return upload(x._rt, host)


def _check_add_cast(dtype: np.dtype[Any], values: Any) -> None:
    """TypeError unless NumPy's ``add`` of ``values`` into ``dtype`` casts ``same_kind``."""
    if isinstance(values, GPUArray):
        operand: Any = values.dtype
    elif isinstance(values, (bool, int, float, complex)):
        operand = values  # a weak Python scalar (NEP 50)
    else:
        operand = np.asarray(values).dtype
    try:
        result = np.result_type(dtype, operand)
    except TypeError as exc:
        raise TypeError(f"add_at: no common dtype of {dtype} and the values ({exc})") from None
    if not np.can_cast(result, dtype, "same_kind"):
        raise TypeError(f"add_at: cannot cast the sum ({result}) to {dtype} with casting rule "
                        "'same_kind'")


def index_add(x: GPUArray, axis: int, index: Any, values: Any, *,
              deterministic: bool = True) -> None:
    """``x[..., index, ...] += values`` along ``axis``, duplicates accumulating (in place).

    The same scatter-add as :func:`add_at` (deterministic unless ``deterministic=False``), with
    torch's ``index_add_`` layout: ``index`` is 1-D and ``values`` has ``x``'s shape with
    ``len(index)`` along ``axis``.
    """
    _require_array(x, "index_add", "x")
    dim = _layout.normalize_axis(axis, x.ndim)
    item = _index_operand(index, "index_add")
    if isinstance(item, int) or len(item.shape) != 1:
        raise ValueError("index_add: index must be 1-D")
    add_at(x, (slice(None),) * dim + (item,), values, deterministic=deterministic)


def _attach_hooks() -> None:
    hooks = _array.hooks
    hooks.getitem = getitem
    hooks.setitem = setitem
    hooks.nonzero = nonzero


_attach_hooks()

# (where() is exported through pygpukit._ops, with the other elementwise functions.)
__all__ = ["add_at", "argwhere", "compress", "flip", "index_add", "nonzero", "put", "repeat",
           "roll", "take", "take_along_axis", "tile"]
