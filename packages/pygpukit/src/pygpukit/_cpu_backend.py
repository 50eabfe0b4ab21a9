"""The CPU simulation backend: NumPy arrays behind the same API, for machines without a GPU."""

from __future__ import annotations

from typing import Any

import numpy as np

from pygpukit._array import GPUArray


class CpuBackend:
    """Runs every operation with NumPy on the host; results match the CUDA backend's."""

    name = "cpu"

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def describe(self) -> str:
        """Say why the CPU simulation is in use."""
        return f"cpu (simulation; {self.reason})"

    @staticmethod
    def _data(array: GPUArray) -> np.ndarray[Any, Any]:
        storage = array._storage
        assert isinstance(storage, np.ndarray)
        return storage

    def empty(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> GPUArray:
        """Allocate an uninitialized host array."""
        return GPUArray(self, np.empty(shape, dtype), shape, dtype)

    def full(self, shape: tuple[int, ...], dtype: np.dtype[Any], value: object) -> GPUArray:
        """Allocate a host array filled with ``value``."""
        return GPUArray(self, np.full(shape, value, dtype), shape, dtype)

    def from_numpy(self, array: np.ndarray[Any, Any]) -> GPUArray:
        """Copy ``array`` so later changes to it are not seen (as with a device copy)."""
        return GPUArray(self, array.copy(), array.shape, array.dtype)

    def to_numpy(self, array: GPUArray) -> np.ndarray[Any, Any]:
        """Return a copy of the data."""
        copy: np.ndarray[Any, Any] = self._data(array).copy()
        return copy

    def add(self, a: GPUArray, b: GPUArray, out: GPUArray) -> None:
        """``out = a + b`` with NumPy."""
        np.add(self._data(a), self._data(b), out=self._data(out))

    def synchronize(self) -> None:
        """Nothing is ever pending on the CPU."""
