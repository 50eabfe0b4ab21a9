"""The dtypes PyGPUkit arrays can hold, and normalization of user-given dtypes."""

from __future__ import annotations

from typing import Any, TypeAlias

import ml_dtypes
import numpy as np

import pygpukit_kernels

bool_ = np.dtype(np.bool_)
int8 = np.dtype(np.int8)
uint8 = np.dtype(np.uint8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
float16 = np.dtype(np.float16)
#: bfloat16 on the host is ml_dtypes' type, so ``to_numpy()`` gives real bfloat16 values.
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
#: Complex dtypes: interleaved (real, imaginary) pairs of float32 / float64.  No kernel takes
#: them: every operation on them is composed from the real kernels over float views of the
#: same memory (``pygpukit._complex``).
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

#: FP8 storage dtypes (ml_dtypes' types on the host): OCP E4M3 without infinities (max 448)
#: and E5M2 (max 57344, with infinities).  Arrays of them are made, moved, viewed, copied and
#: converted (``astype``, :func:`pygpukit.quantize_fp8`), and multiplied by the FP8 products
#: (``matmul`` / ``linear`` with scales); no other kernel takes them (as in torch).
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)

#: The real dtypes: each has a code in the kernels' C ABI and kernels of its own.
SUPPORTED_DTYPES: tuple[np.dtype[Any], ...] = (
    bool_, int8, uint8, int16, int32, int64, float16, bfloat16, float32, float64,
)
COMPLEX_DTYPES: tuple[np.dtype[Any], ...] = (complex64, complex128)
FP8_DTYPES: tuple[np.dtype[Any], ...] = (float8_e4m3fn, float8_e5m2)
#: Every dtype an array may hold: the real ones, the complex ones and the FP8 ones.
ALL_DTYPES: tuple[np.dtype[Any], ...] = SUPPORTED_DTYPES + COMPLEX_DTYPES + FP8_DTYPES

_ALIASES: dict[str, np.dtype[Any]] = {
    "bool": bool_,
    "bf16": bfloat16,
    "fp16": float16,
    "half": float16,
    "fp32": float32,
    "float": float32,
    "fp64": float64,
    "double": float64,
    "complex": complex64,
    "cfloat": complex64,
    "cdouble": complex128,
    "fp8_e4m3": float8_e4m3fn,
    "fp8_e5m2": float8_e5m2,
}

DTypeLike: TypeAlias = "np.dtype[Any] | type | str"


def normalize_dtype(dtype: object, *, argument: str = "dtype") -> np.dtype[Any]:
    """Return the NumPy dtype for ``dtype`` if PyGPUkit supports it.

    Parameters
    ----------
    dtype
        A NumPy dtype or scalar type, an ml_dtypes type, or a name such as ``"float32"`` or
        ``"bfloat16"``.
    argument
        Name of the argument being checked, used in the error message.

    Raises
    ------
    TypeError
        If the dtype is not understood or not supported; the message lists the supported ones.
    """
    try:
        return _NORMALIZED[dtype]  # every op that takes a dtype: once per spelling
    except (KeyError, TypeError):
        pass
    if isinstance(dtype, str) and dtype.lower() in _ALIASES:
        resolved = _ALIASES[dtype.lower()]
    else:
        try:
            resolved = np.dtype(dtype)  # type: ignore[call-overload]
        except TypeError:
            resolved = None
    if resolved is None or resolved not in ALL_DTYPES:
        names = ", ".join(d.name for d in ALL_DTYPES)
        raise TypeError(f"{argument}: expected one of {names}; got {dtype!r}")
    if isinstance(dtype, (str, type, np.dtype)) and len(_NORMALIZED) < 256:
        _NORMALIZED[dtype] = resolved
    return resolved


_NORMALIZED: dict[object, np.dtype[Any]] = {}


#: The dtype codes of the kernels' C ABI, as pygpukit_kernels exports them (by dtype name).
_KERNEL_CODES: dict[np.dtype[Any], int] = {dt: pygpukit_kernels.DTYPE_CODES[dt.name]
                                           for dt in SUPPORTED_DTYPES}


def kernel_code(dtype: np.dtype[Any]) -> int:
    """The kernels' C ABI code of a real dtype.

    Raises
    ------
    TypeError
        For a complex dtype: no kernel takes one (complex operations are composed from the
        real kernels before anything reaches a kernel; this is the last guard).
    """
    try:
        return _KERNEL_CODES[dtype]
    except KeyError:
        if getattr(dtype, "kind", None) == "c":
            raise TypeError(complex_unsupported("this kernel", dtype)) from None
        if dtype in FP8_DTYPES:
            raise TypeError(fp8_unsupported("this operation", dtype)) from None
        raise


def complex_unsupported(what: str, dtype: np.dtype[Any]) -> str:
    """The message of an operation that takes no complex dtype (``what`` names it)."""
    return (f"{what}: not supported for complex dtype {dtype.name} (PyGPUkit composes complex "
            "arithmetic, reductions and matmul from its real kernels; this operation has no "
            "complex form)")


#: The C ABI codes of the FP8 dtypes (``PGK_FLOAT8_*``), taken by the FP8 kernels only.
FP8_CODES: dict[np.dtype[Any], int] = {dt: pygpukit_kernels.DTYPE_CODES[dt.name]
                                       for dt in FP8_DTYPES}


def is_fp8(dtype: object) -> bool:
    """Whether ``dtype`` is one of the FP8 dtypes (float8_e4m3fn, float8_e5m2)."""
    return dtype in FP8_DTYPES


def fp8_unsupported(what: str, dtype: np.dtype[Any]) -> str:
    """The message of an operation that takes no FP8 operand (``what`` names it)."""
    return (f"{what}: not supported for {dtype.name} (FP8 arrays are storage: convert them "
            "with astype() or pygpukit.dequantize_fp8() first; the FP8 products are "
            "pygpukit.matmul / pygpukit.linear with scale arguments)")


def is_complex(value: object) -> bool:
    """Whether ``value`` is a complex dtype, a complex scalar or an array of a complex dtype."""
    if isinstance(value, np.dtype):
        return value.kind == "c"
    dtype = getattr(value, "dtype", None)  # GPUArray, NumPy scalars and arrays
    if isinstance(dtype, np.dtype):
        return dtype.kind == "c"
    return isinstance(value, complex)


def default_dtype_for(value: object) -> np.dtype[Any]:
    """The dtype PyGPUkit gives a Python scalar: bool, int64, or the default float (float32).

    A Python complex gets complex64, the complex dtype of the default float.
    """
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, np.generic):
        return normalize_dtype(value.dtype)
    if isinstance(value, int):
        return int64
    if isinstance(value, float):
        return float32
    if isinstance(value, complex):
        return complex64
    raise TypeError(f"expected a bool, int, float or complex scalar; got {type(value).__name__}")
