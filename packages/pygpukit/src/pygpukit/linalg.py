"""Linear algebra of PyGPUkit (as ``numpy.linalg`` / the standard's ``linalg``, on the GEMMs).

Norms (``norm``, ``vector_norm``, ``matrix_norm``), products (``matmul``, ``outer``,
``tensordot``, ``vecdot``), ``trace``, ``diagonal`` and ``matrix_transpose``.  Factorizations
and solvers (``cholesky``, ``inv``, ``solve``, ``svd``, ``eigh``, ``qr``, ``det``) are not
implemented; the matrix norms that need singular values ('nuc', 2, -2) raise
NotImplementedError.
"""

from __future__ import annotations

from typing import Any

from pygpukit._array import GPUArray
from pygpukit._linalg import matmul
from pygpukit._linalg_extra import diagonal as _diagonal
from pygpukit._linalg_extra import matrix_norm, matrix_transpose, norm, outer, tensordot, vecdot
from pygpukit._linalg_extra import trace as _trace


def trace(x: GPUArray, /, *, offset: int = 0, dtype: Any = None) -> GPUArray:
    """Sum of diagonal ``offset`` of each matrix (the last two dims), as the standard's."""
    return _trace(x, offset, -2, -1, dtype)


def diagonal(x: GPUArray, /, *, offset: int = 0) -> GPUArray:
    """Diagonal ``offset`` of each matrix (the last two dims): a strided view."""
    return _diagonal(x, offset, -2, -1)


def vector_norm(x: GPUArray, /, *, axis: Any = None, keepdims: bool = False,
                ord: Any = 2) -> GPUArray:
    """Vector norm over ``axis`` (all dims when None): ``ord`` 2, 1, inf, -inf, 0 or any p."""
    from pygpukit._linalg_extra import vector_norm as _vector_norm

    return _vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)


__all__ = ["diagonal", "matmul", "matrix_norm", "matrix_transpose", "norm", "outer",
           "tensordot", "trace", "vecdot", "vector_norm"]
