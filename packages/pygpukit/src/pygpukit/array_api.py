"""The Array API standard (2024.12) namespace of PyGPUkit: what ``x.__array_namespace__()`` gives.

Libraries written against the standard (scikit-learn, SciPy, array-api-extra, through
``array_api_compat.array_namespace(x)``) use this module; users of the NumPy-like API keep
``import pygpukit as gp``.  The two share one implementation: where PyGPUkit's function
already has the standard's signature and semantics it is the same object; the others
(creation with ``dtype=None`` meaning float32, ``std(correction=)``, ``sum(dtype=)``,
``clip(min=, max=)``, ``concat``, ``permute_dims``, ...) come from ``pygpukit._array_api``.

What PyGPUkit holds of the standard: dtypes ``bool int8 int16 int32 int64 uint8 float32
float64 complex64 complex128`` (no uint16/32/64; complex composed from the real kernels, see
``pygpukit._complex``); the elementwise, creation, data type, manipulation,
statistical, searching, utility and linear algebra functions.  Elementwise functions without a
kernel of their own (``acos``, ``atan2``, ``hypot``, ...) are composed from existing kernels
(``pygpukit._elementwise`` lists how).  Sorting, sets, scans and indexing come from
``pygpukit._sorting`` / ``pygpukit._indexing``, with the standard's keyword-only options
(``descending``, ``include_initial``, ``prepend``/``append``, the ``unique_*`` named tuples)
added by ``pygpukit._array_api_sorting``.
The ``linalg`` and ``fft`` extensions are not offered: they need factorizations and FFTs that
PyGPUkit does not have (``pygpukit.linalg`` has the norms and products it does have).
"""

from __future__ import annotations

import sys
from typing import Any

from pygpukit import _array
from pygpukit._array_api import (
    __array_api_version__,
    __array_namespace_info__,
    arange,
    asarray,
    astype,
    broadcast_arrays,
    broadcast_to,
    can_cast,
    clip,
    concat,
    count_nonzero,
    e,
    empty,
    empty_like,
    expand_dims,
    eye,
    finfo,
    floor_divide,
    from_dlpack,
    full,
    full_like,
    iinfo,
    inf,
    isdtype,
    linspace,
    meshgrid,
    moveaxis,
    nan,
    newaxis,
    ones,
    ones_like,
    permute_dims,
    pi,
    prod,
    reshape,
    result_type,
    round,
    squeeze,
    std,
    sum,
    unstack,
    var,
    zeros,
    zeros_like,
)
from pygpukit._array_api_sorting import (
    argsort,
    cumulative_prod,
    cumulative_sum,
    diff,
    sort,
    take_along_axis,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
)
from pygpukit._complex import conj, imag, real
from pygpukit._dtypes import bool_ as bool
from pygpukit._dtypes import (
    complex64,
    complex128,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from pygpukit._elementwise import (
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_right_shift,
    copysign,
    cosh,
    hypot,
    isfinite,
    log2,
    log10,
    logaddexp,
    nextafter,
    positive,
    pow,
    signbit,
    sinh,
    tan,
    trunc,
)
from pygpukit._indexing import flip, nonzero, repeat, roll, take, tile
from pygpukit._linalg import matmul
from pygpukit._linalg_extra import matrix_transpose, tensordot, tril, triu, vecdot
from pygpukit._ops import (
    abs,
    add,
    all,
    any,
    argmax,
    argmin,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    ceil,
    cos,
    divide,
    equal,
    exp,
    expm1,
    floor,
    greater,
    greater_equal,
    isinf,
    isnan,
    less,
    less_equal,
    log,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    max,
    maximum,
    mean,
    min,
    minimum,
    multiply,
    negative,
    not_equal,
    reciprocal,
    remainder,
    sign,
    sin,
    sqrt,
    square,
    stack,
    subtract,
    tanh,
    where,
)
from pygpukit._sorting import searchsorted


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def _namespace(x: Any, api_version: str | None) -> Any:
    """``GPUArray.__array_namespace__``: this module, for the versions it implements."""
    if api_version is not None and api_version not in ("2021.12", "2022.12", "2023.12",
                                                       "2024.12"):
        raise ValueError(f"__array_namespace__: unsupported api_version {api_version!r}; "
                         f"PyGPUkit implements {__array_api_version__}")
    return sys.modules[__name__]


_array.hooks.array_namespace = _namespace

__all__ = [
    "__array_api_version__", "__array_namespace_info__", "abs", "acos", "acosh", "add", "all",
    "any", "arange", "argmax", "argmin", "argsort", "asarray", "asin", "asinh", "astype", "atan",
    "atan2", "atanh", "bitwise_and", "bitwise_invert", "bitwise_left_shift", "bitwise_or",
    "bitwise_right_shift", "bitwise_xor", "bool", "broadcast_arrays", "broadcast_to", "can_cast",
    "ceil", "clip", "complex64", "complex128", "concat", "conj", "copysign", "cos", "cosh",
    "count_nonzero",
    "cumulative_prod", "cumulative_sum", "diff", "divide", "e", "empty", "empty_like", "equal",
    "exp", "expand_dims", "expm1", "eye", "finfo", "flip", "float32", "float64", "floor",
    "floor_divide", "from_dlpack", "full", "full_like", "greater", "greater_equal", "hypot",
    "iinfo", "imag", "inf", "int16", "int32", "int64", "int8", "isdtype", "isfinite", "isinf",
    "isnan", "less", "less_equal", "linspace", "log", "log10", "log1p", "log2", "logaddexp",
    "logical_and", "logical_not", "logical_or", "logical_xor", "matmul", "matrix_transpose",
    "max", "maximum", "mean", "meshgrid", "min", "minimum", "moveaxis", "multiply", "nan",
    "negative", "newaxis", "nextafter", "nonzero", "not_equal", "ones", "ones_like",
    "permute_dims", "pi", "positive", "pow", "prod", "real", "reciprocal", "remainder", "repeat",
    "reshape", "result_type", "roll", "round", "searchsorted", "sign", "signbit", "sin", "sinh",
    "sort", "sqrt", "square", "squeeze", "stack", "std", "subtract", "sum", "take",
    "take_along_axis", "tan", "tanh", "tensordot", "tile", "tril", "triu", "trunc", "uint8",
    "unique_all", "unique_counts", "unique_inverse", "unique_values", "unstack", "var", "vecdot",
    "where", "zeros", "zeros_like",
]
