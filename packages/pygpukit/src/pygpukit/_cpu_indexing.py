"""The CPU simulation of the advanced-indexing kernels (``cuda/gather_scatter.cu``), in NumPy.

Each function follows its kernel's definition (see ``include/pygpukit_kernels.h``): the same
index arithmetic, the same treatment of out-of-range indices and the same error slot, so the
planning in :mod:`pygpukit._indexing` is exercised identically on both backends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pygpukit._indexplan import IndexMode

if TYPE_CHECKING:
    from pygpukit._array import GPUArray
    from pygpukit._indexplan import IndexPlan


def _typed_block(array: GPUArray) -> tuple[np.ndarray[Any, Any], int]:
    """The whole block of ``array`` as elements of its dtype, and the view origin's position."""
    payload: np.ndarray[Any, Any] = array._block.payload
    itemsize = array.itemsize
    usable = (payload.size // itemsize) * itemsize
    typed = payload[:usable].view(array.dtype)
    return typed, array._offset // itemsize


def _grid_offsets(dims: tuple[tuple[int, int], ...]) -> np.ndarray[Any, Any]:
    """Byte offsets of every element of the dims ``(size, stride)``, in C order (flat)."""
    offsets = np.zeros(1, np.int64)
    for size, stride in dims:
        offsets = (offsets[:, None] + np.arange(size, dtype=np.int64)[None, :] * stride)
        offsets = offsets.reshape(-1)
    return offsets


def _index_offsets(plan: IndexPlan, error: GPUArray | None
                   ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Byte offsets over ``count`` and which of them are in range (recording the first error)."""
    from pygpukit._cpu_backend import host_view

    offsets = np.zeros(plan.count, np.int64)
    valid = np.ones(plan.count, bool)
    first = -1
    for k, (array, size, stride) in enumerate(
            zip(plan.indices, plan.sizes, plan.strides, strict=True)):
        idx = host_view(array).astype(np.int64, copy=True).reshape(-1)
        if size and plan.mode == IndexMode.WRAP:
            idx = idx % size
        elif size and plan.mode == IndexMode.CLIP:
            idx = np.clip(idx, 0, size - 1)
        else:  # RAISE, and an empty axis in every mode
            bad = (idx < -size) | (idx >= size)
            if first < 0 and bad.any():
                first = k * plan.count + int(np.argmax(bad))
            valid &= ~bad
            idx = np.where(bad, 0, np.where(idx < 0, idx + size, idx))
        offsets += idx * stride
    if error is not None:
        host_view(error)[...] = first
    return offsets, valid


def _space(plan: IndexPlan, error: GPUArray | None
           ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Element positions (in the base's typed block) over the plan's index space, C order."""
    offsets, valid = _index_offsets(plan, error)
    outer = _grid_offsets(plan.outer)
    inner = _grid_offsets(plan.inner)
    total = outer[:, None, None] + offsets[None, :, None] + inner[None, None, :]
    mask = np.broadcast_to(valid[None, :, None], total.shape)
    itemsize = plan.base.itemsize
    _, origin = _typed_block(plan.base)
    return (origin + total // itemsize).reshape(-1), mask.reshape(-1)


def gather(plan: IndexPlan, out: GPUArray, error: GPUArray | None) -> None:
    """``out[p, m, q] = base[...]`` (0 where an index is out of range); ``out`` contiguous."""
    from pygpukit._cpu_backend import host_view

    positions, valid = _space(plan, error)
    typed, _ = _typed_block(plan.base)
    values = np.zeros(positions.size, plan.base.dtype)
    values[valid] = typed[positions[valid]]
    host_view(out).reshape(-1)[...] = values


def check(plan: IndexPlan, error: GPUArray) -> None:
    """``error`` = the first out-of-range index's code (-1: none), as ``pgk_index_check``."""
    from pygpukit._cpu_backend import host_view

    if plan.size == 0:  # no element: nothing is out of range
        host_view(error)[...] = -1
    else:
        _index_offsets(plan, error)


def scatter(plan: IndexPlan, values: GPUArray, error: GPUArray | None) -> None:
    """``base[...] = values[p, m, q]`` for every in-range element; ``values`` contiguous."""
    from pygpukit._cpu_backend import host_view

    positions, valid = _space(plan, error)
    typed, _ = _typed_block(plan.base)
    typed[positions[valid]] = host_view(values).reshape(-1)[valid]


def add(plan: IndexPlan, values: GPUArray, error: GPUArray | None) -> None:
    """``base[...] += values[p, m, q]``; duplicates accumulate, in index-space order."""
    from pygpukit._cpu_backend import host_view

    positions, valid = _space(plan, error)
    typed, _ = _typed_block(plan.base)
    with np.errstate(all="ignore"):
        np.add.at(typed, positions[valid], host_view(values).reshape(-1)[valid])


def select(x: GPUArray | None, flags: GPUArray, out: GPUArray) -> int:
    """``out[:k] = x[flags]`` (flat, C order), or with ``x`` None the flags' flat positions.

    Returns ``k``, the number selected.
    """
    from pygpukit._cpu_backend import host_view

    mask = host_view(flags).reshape(-1) != 0
    values = np.flatnonzero(mask) if x is None else host_view(x).reshape(-1)[mask]
    host_view(out).reshape(-1)[:values.size] = values
    return int(values.size)


def unravel(flat: GPUArray, shape: tuple[int, ...], mode: int, out: GPUArray,
            error: GPUArray | None) -> None:
    """``out[d, i]`` = coordinate ``d`` of flat C-order index ``flat[i]`` in ``shape``."""
    from pygpukit._cpu_backend import host_view

    size = int(np.prod(shape, dtype=np.int64))
    idx = host_view(flat).astype(np.int64, copy=True).reshape(-1)
    first = -1
    if size and mode == IndexMode.WRAP:
        idx = idx % size
    elif size and mode == IndexMode.CLIP:
        idx = np.clip(idx, 0, size - 1)
    else:  # RAISE, and an empty array in every mode
        bad = (idx < -size) | (idx >= size)
        if bad.any():
            first = int(np.argmax(bad))
        idx = np.where(bad, 0, np.where(idx < 0, idx + size, idx))
    if error is not None:
        host_view(error)[...] = first
    target = host_view(out)
    for d in range(len(shape) - 1, -1, -1):
        target[d] = idx % shape[d] if shape[d] else 0
        idx = idx // shape[d] if shape[d] else idx


def count(flags: GPUArray, out: GPUArray) -> None:
    """``out[0]`` = the number of non-zero elements of the contiguous ``flags``."""
    from pygpukit._cpu_backend import host_view

    host_view(out)[...] = np.count_nonzero(host_view(flags))
