"""GPUArray: an n-dimensional array living on the backend's device."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from pygpukit._backend import Backend


class GPUArray:
    """An n-dimensional, C-contiguous array on the GPU (or on the CPU simulation backend).

    Arrays are made by :func:`pygpukit.empty`, :func:`pygpukit.zeros`, :func:`pygpukit.ones`
    and :func:`pygpukit.from_numpy`, not by calling this class.  Operations enqueue work on the
    array's stream and return at once; only reading the data on the host (:meth:`to_numpy`)
    waits, and only for that stream.

    Attributes
    ----------
    shape
        Extent of each dimension.
    dtype
        Element type (a NumPy dtype; bfloat16 is ``ml_dtypes.bfloat16``).
    """

    __slots__ = ("__weakref__", "_backend", "_storage", "dtype", "shape")

    # NumPy must not turn a GPUArray into an object array behind the user's back.
    __array_ufunc__ = None

    def __init__(
        self, backend: Backend, storage: object, shape: tuple[int, ...], dtype: np.dtype[Any]
    ) -> None:
        self._backend = backend
        self._storage = storage
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of element data."""
        return self.size * self.dtype.itemsize

    @property
    def backend(self) -> str:
        """Name of the backend holding the data: ``"cuda"`` or ``"cpu"``."""
        return self._backend.name

    def to_numpy(self) -> np.ndarray[Any, Any]:
        """Copy the data into a new NumPy array, waiting for this array's pending work only."""
        return self._backend.to_numpy(self)

    def __add__(self, other: object) -> GPUArray:
        if not isinstance(other, GPUArray):
            return NotImplemented
        from pygpukit._ops import add

        return add(self, other)

    def __radd__(self, other: object) -> GPUArray:
        if not isinstance(other, GPUArray):
            return NotImplemented
        from pygpukit._ops import add

        return add(other, self)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d GPUArray")
        return self.shape[0]

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray[Any, Any]:
        # CuPy's convention: no implicit device-to-host copies.
        raise TypeError(
            "Implicit conversion of a GPUArray to a NumPy array is not allowed: "
            "call .to_numpy() to copy it to the host explicitly"
        )

    def __repr__(self) -> str:
        return f"GPUArray(shape={self.shape}, dtype={self.dtype.name}, backend={self.backend!r})"
