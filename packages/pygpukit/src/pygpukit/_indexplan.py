"""What an advanced-indexing kernel launch needs: the layout of one gather/scatter.

``pygpukit._indexing`` turns a NumPy index (integer arrays, masks, slices, ...) into an
:class:`IndexPlan`; both runtimes execute it (``pgk_index_gather`` / ``pgk_index_scatter`` /
``pgk_index_add`` on the GPU, the same definition in NumPy on the CPU simulation).

The index space of a plan is ``(outer..., count, inner...)`` in C order: the ``outer`` and
``inner`` dims are basic (sliced) dims of the indexed array, ``count`` enumerates the broadcast
integer index arrays.  Element ``(p, m, q)`` of that space is the array element at byte offset
``outer_offset(p) + sum_k idx_k[m] * strides[k] + inner_offset(q)`` from the view's origin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pygpukit_kernels import IndexMode

if TYPE_CHECKING:
    from pygpukit._array import GPUArray


@dataclass(frozen=True, slots=True)
class IndexPlan:
    """One gather/scatter over an indexed view.

    Attributes
    ----------
    base
        The view being indexed: only its memory (block, offset) and dtype are used.
    outer, inner
        ``(size, byte stride)`` of the basic dims before / after the indexed ones, outermost
        first (dims of size 1 left out).
    indices
        One C-contiguous int64 array of ``count`` elements per indexed axis.
    sizes, strides
        Length and byte stride of each indexed axis.
    axes
        The axis each index array indexes, as NumPy names it in error messages.
    count
        Length of every index array.
    mode
        What an out-of-range index does (``pygpukit_kernels.IndexMode``: ``RAISE`` skips the
        element and records it, ``WRAP`` takes it modulo the size, ``CLIP`` clips it).
    """

    base: GPUArray
    outer: tuple[tuple[int, int], ...]
    inner: tuple[tuple[int, int], ...]
    indices: tuple[GPUArray, ...]
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    axes: tuple[int, ...]
    count: int
    mode: IndexMode

    @property
    def outer_size(self) -> int:
        """Elements of the outer dims."""
        n = 1
        for size, _ in self.outer:
            n *= size
        return n

    @property
    def inner_size(self) -> int:
        """Elements of the inner dims."""
        n = 1
        for size, _ in self.inner:
            n *= size
        return n

    @property
    def size(self) -> int:
        """Elements of the index space."""
        return self.outer_size * self.count * self.inner_size


__all__ = ["IndexMode", "IndexPlan"]
