"""Locate the compiled artifacts and read the build description from the library."""

from __future__ import annotations

import ctypes
import enum
import functools
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

#: The C ABI version this Python package was written against (``PGK_ABI_VERSION``).
ABI_VERSION = 5

#: Most dimensions a strided view may have in ``pgk_copy`` / ``pgk_fill`` (``PGK_MAX_DIMS``).
MAX_DIMS = 16


class DType(enum.IntEnum):
    """The dtype codes of the C ABI (``PGK_BOOL`` ...), fixed forever."""

    BOOL = 0
    INT8 = 1
    UINT8 = 2
    INT16 = 3
    INT32 = 4
    INT64 = 5
    FLOAT16 = 6
    BFLOAT16 = 7
    FLOAT32 = 8
    FLOAT64 = 9
    # FP8 storage dtypes: only pgk_fp8_cast and pgk_gemm_fp8 take them.
    FLOAT8_E4M3FN = 10
    FLOAT8_E5M2 = 11


class BinaryOp(enum.IntEnum):
    """Binary op codes of ``pgk_binary`` and the small-array kernels (``PGK_OP_*``)."""

    ADD = 0
    SUBTRACT = 1
    MULTIPLY = 2
    DIVIDE = 3
    MAXIMUM = 4
    MINIMUM = 5
    POWER = 6
    FLOOR_DIVIDE = 7
    REMAINDER = 8
    EQUAL = 9
    NOT_EQUAL = 10
    LESS = 11
    LESS_EQUAL = 12
    GREATER = 13
    GREATER_EQUAL = 14
    LOGICAL_AND = 15
    LOGICAL_OR = 16
    LOGICAL_XOR = 17
    BITWISE_AND = 18
    BITWISE_OR = 19
    BITWISE_XOR = 20


class UnaryOp(enum.IntEnum):
    """Unary op codes of ``pgk_unary`` and the small-array kernels (``PGK_UOP_*``)."""

    NEGATIVE = 0
    ABSOLUTE = 1
    EXP = 2
    LOG = 3
    LOG1P = 4
    EXPM1 = 5
    SQRT = 6
    RSQRT = 7
    SIN = 8
    COS = 9
    TANH = 10
    SIGMOID = 11
    RELU = 12
    GELU_TANH = 13
    GELU_ERF = 14
    SILU = 15
    FLOOR = 16
    CEIL = 17
    RINT = 18
    SIGN = 19
    ISNAN = 20
    ISINF = 21
    LOGICAL_NOT = 22
    INVERT = 23
    SQUARE = 24
    RECIPROCAL = 25


class ReduceOp(enum.IntEnum):
    """Reduction codes of ``pgk_reduce`` and the small-array kernels (``PGK_RED_*``)."""

    SUM = 0
    PROD = 1
    MAX = 2
    MIN = 3
    ARGMAX = 4
    ARGMIN = 5
    MEAN = 6
    VAR = 7
    STD = 8
    ANY = 9
    ALL = 10


class NormOp(enum.IntEnum):
    """Row-wise normalization codes of ``pgk_row_norm`` (``PGK_NORM_*``)."""

    SOFTMAX = 0
    LOG_SOFTMAX = 1
    LAYER = 2
    RMS = 3


class SmallStep(enum.IntEnum):
    """Kernels of a fused CUDA-graph step (``PGK_STEP_*``, run by ``pgk_small_program``).

    The member name is the kernel's name without ``pgk_small_``, upper-cased.
    """

    EW_F32 = 0
    EW_F64 = 1
    EW_I64 = 2
    CAST = 3
    REDUCE_F32 = 4
    REDUCE_F64 = 5
    REDUCE_I64 = 6
    ROW_NORM_F32 = 7
    ROW_NORM_F64 = 8


#: Kernels of ``fatbin/small_ops.fatbin`` (extern "C" names) -> the type codes of their
#: parameters as ``pygpukit_driver.Launcher`` takes them (P pointer, i int32, q int64,
#: f float32, d float64).  Block size :data:`SMALL_BLOCK`; elementwise kernels take a grid,
#: reductions one block, row norms one block per row; ``pgk_small_program`` runs a captured
#: graph's line of them as :class:`SmallStep` steps in one block.
SMALL_KERNELS: dict[str, str] = {
    "pgk_small_ew_f32": "iiPiPiqPiqPiqffq",
    "pgk_small_ew_f64": "iiPiPiqPiqPiqddq",
    "pgk_small_ew_i64": "iiPiPiqPiqPiqqqq",
    "pgk_small_cast": "PiPiqq",
    "pgk_small_reduce_f32": "iPiqPid",
    "pgk_small_reduce_f64": "iPiqPid",
    "pgk_small_reduce_i64": "iPiqPid",
    "pgk_small_row_norm_f32": "iPiqPPPd",
    "pgk_small_row_norm_f64": "iPiqPPPd",
    "pgk_small_program": "Pi",
}

#: Threads per block of every small-array kernel.
SMALL_BLOCK = 256


#: NumPy dtype name (``ml_dtypes`` name for bfloat16) -> C ABI dtype code.
DTYPE_CODES: dict[str, int] = {d.name.lower(): int(d) for d in DType}

_I64P = ctypes.POINTER(ctypes.c_int64)
_VP, _INT, _I64, _DBL = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_double

# argtypes of every launcher; each returns an int (a cudaError_t code).
_LAUNCHERS: dict[str, list[type]] = {
    "pgk_add_f32": [_VP, _VP, _VP, _I64, _VP],
    # src, src_dtype, src_strides, dst, dst_dtype, dst_strides, ndim, shape, stream
    "pgk_copy": [_VP, _INT, _I64P, _VP, _INT, _I64P, _INT, _I64P, _VP],
    # dst, dtype, strides, ndim, shape, dval, ival, stream
    "pgk_fill": [_VP, _INT, _I64P, _INT, _I64P, _DBL, _I64, _VP],
    # dst, dtype, n, dstart, dstep, istart, istep, stream
    "pgk_arange": [_VP, _INT, _I64, _DBL, _DBL, _I64, _I64, _VP],
    # dst, dtype, n, start, stop, endpoint, stream
    "pgk_linspace": [_VP, _INT, _I64, _DBL, _DBL, _INT, _VP],
    # op, a, a_dtype, a_strides, b, b_dtype, b_strides, out, out_dtype, out_strides, ndim,
    # shape, compute_dtype, scalar_f, scalar_i, stream
    "pgk_binary": [_INT, _VP, _INT, _I64P, _VP, _INT, _I64P, _VP, _INT, _I64P, _INT, _I64P,
                   _INT, _DBL, _I64, _VP],
    # op, x, x_dtype, x_strides, out, out_dtype, out_strides, ndim, shape, compute_dtype, stream
    "pgk_unary": [_INT, _VP, _INT, _I64P, _VP, _INT, _I64P, _INT, _I64P, _INT, _VP],
    # cond, cond_dtype, cond_strides, a, a_dtype, a_strides, b, b_dtype, b_strides, out,
    # out_dtype, out_strides, ndim, shape, compute_dtype, a_f, a_i, b_f, b_i, stream
    "pgk_where": [_VP, _INT, _I64P, _VP, _INT, _I64P, _VP, _INT, _I64P, _VP, _INT, _I64P, _INT,
                  _I64P, _INT, _DBL, _I64, _DBL, _I64, _VP],
    # op, x, x_dtype, x_strides, ndim, shape, nred_dims, out, out_dtype, out_strides,
    # compute_dtype, ddof, workspace, chunks, stream
    "pgk_reduce": [_INT, _VP, _INT, _I64P, _INT, _I64P, _INT, _VP, _INT, _I64P, _INT, _DBL, _VP,
                   _INT, _VP],
}

# Row-wise normalizations (ABI 4).
_LAUNCHERS.update({
    # op, x, dtype, rows, cols, x_row_stride, x_col_stride, out, out_row_stride, weight,
    # weight_dtype, weight_stride, bias, bias_dtype, bias_stride, eps, stream
    "pgk_row_norm": [_INT, _VP, _INT, _I64, _I64, _I64, _I64, _VP, _I64, _VP, _INT, _I64, _VP,
                     _INT, _I64, _DBL, _VP],
})



class GemmDesc(ctypes.Structure):
    """``pgk_gemm_desc``: one (batched) matrix product for ``pgk_gemm`` (strides in elements).

    ``C[b] = act(A[b] @ B[b] + bias)``; A row-major (m, k) with leading dimension ``lda``; B
    (k, n) row-major (``b_col_major = 0``, ``ldb >= n``) or column-major (``ldb >= k``); C
    row-major (m, n).  See ``include/pygpukit_kernels.h``.
    """

    _fields_ = [
        ("m", ctypes.c_int64), ("n", ctypes.c_int64), ("k", ctypes.c_int64),
        ("batch", ctypes.c_int64),
        ("dtype", ctypes.c_int32), ("precision", ctypes.c_int32),
        ("activation", ctypes.c_int32), ("b_col_major", ctypes.c_int32),
        ("a", ctypes.c_void_p), ("lda", ctypes.c_int64), ("batch_stride_a", ctypes.c_int64),
        ("b", ctypes.c_void_p), ("ldb", ctypes.c_int64), ("batch_stride_b", ctypes.c_int64),
        ("c", ctypes.c_void_p), ("ldc", ctypes.c_int64), ("batch_stride_c", ctypes.c_int64),
        ("bias", ctypes.c_void_p),
    ]


class Activation(enum.IntEnum):
    """Epilogue activations of ``pgk_gemm`` (``PGK_ACT_*``)."""

    NONE = 0
    RELU = 1
    GELU = 2
    GELU_TANH = 3


class Precision(enum.IntEnum):
    """float32 product precision of ``pgk_gemm`` (``PGK_PRECISION_*``)."""

    HIGHEST = 0
    TF32 = 1


_GEMM_DESC_P = ctypes.POINTER(GemmDesc)
_LAUNCHERS.update({
    # desc, bytes (out)
    "pgk_gemm_workspace_size": [_GEMM_DESC_P, ctypes.POINTER(ctypes.c_uint64)],
    # desc, workspace, workspace_bytes, stream
    "pgk_gemm": [_GEMM_DESC_P, _VP, ctypes.c_uint64, _VP],
})



# ---- FP8 (float8_e4m3fn / float8_e5m2): scaled casts and the FP8 product --------------------
class Fp8GemmDesc(ctypes.Structure):
    """``pgk_gemm_fp8_desc``: ``C = act(A @ B^T * scale_a * scale_b + bias)`` for ``pgk_gemm_fp8``.

    A (m, k) and B (n, k) FP8, both row-major (strides in elements); C row-major (m, n) of
    ``out_dtype``; scales float32 (one value, or one per row of A / per row of B when the
    ``*_per_*`` flag is 1).  See ``include/pygpukit_kernels.h``.
    """

    _fields_ = [
        ("m", ctypes.c_int64), ("n", ctypes.c_int64), ("k", ctypes.c_int64),
        ("a_dtype", ctypes.c_int32), ("b_dtype", ctypes.c_int32),
        ("out_dtype", ctypes.c_int32), ("activation", ctypes.c_int32),
        ("a", ctypes.c_void_p), ("lda", ctypes.c_int64),
        ("b", ctypes.c_void_p), ("ldb", ctypes.c_int64),
        ("c", ctypes.c_void_p), ("ldc", ctypes.c_int64),
        ("scale_a", ctypes.c_void_p), ("scale_b", ctypes.c_void_p),
        ("scale_a_per_row", ctypes.c_int32), ("scale_b_per_col", ctypes.c_int32),
        ("bias", ctypes.c_void_p),
    ]


_LAUNCHERS.update({
    # src, src_dtype, dst, dst_dtype, n, scale, row_len, saturate, stream
    "pgk_fp8_cast": [_VP, _INT, _VP, _INT, _I64, _VP, _I64, _INT, _VP],
    # desc, stream
    "pgk_gemm_fp8": [ctypes.POINTER(Fp8GemmDesc), _VP],
    # config (test hook)
    "pgk_gemm_fp8_force_config": [_INT],
})
# ---- end FP8 ------------------------------------------------------------------------------------


class SortFlag(enum.IntFlag):
    """Flags of ``pgk_sort`` / ``pgk_sort_workspace_size`` (``PGK_SORT_*``)."""

    INDICES = 1
    DESCENDING = 2


class ScanOp(enum.IntEnum):
    """Cumulative ops of ``pgk_scan`` (``PGK_SCAN_*``)."""

    SUM = 0
    PROD = 1


# Sort, scan, searchsorted, runs of equal keys, row gathers (sort.cu, scan.cu).
_U64P = ctypes.POINTER(ctypes.c_uint64)
_LAUNCHERS.update({
    # dtype, rows, cols, flags, bytes (out)
    "pgk_sort_workspace_size": [_INT, _I64, _I64, _INT, _I64, _U64P],
    # x, dtype, rows, cols, flags, k, values_out, indices_out, workspace, workspace_bytes, stream
    "pgk_sort": [_VP, _INT, _I64, _I64, _INT, _I64, _VP, _VP, _VP, ctypes.c_uint64, _VP],
    # a, dtype, n, sorter, v, m, side_right, out, stream
    "pgk_searchsorted": [_VP, _INT, _I64, _VP, _VP, _I64, _INT, _VP, _VP],
    # sorted, dtype, n, flags, stream
    "pgk_run_starts": [_VP, _INT, _I64, _VP, _VP],
    # gid, n, sorted, dtype, perm, uniq_out, starts_out, first_out, inverse_out, stream
    "pgk_run_scatter": [_VP, _I64, _VP, _INT, _VP, _VP, _VP, _VP, _VP, _VP],
    # src, dtype, rows, cols, idx, k, dst, stream
    "pgk_take_rows": [_VP, _INT, _I64, _I64, _VP, _I64, _VP, _VP],
    # op, dtype, rows, cols, bytes (out)
    "pgk_scan_workspace_size": [_INT, _INT, _I64, _I64, _U64P],
    # op, x, out, dtype, rows, cols, workspace, workspace_bytes, stream
    "pgk_scan": [_INT, _VP, _VP, _INT, _I64, _I64, _VP, ctypes.c_uint64, _VP],
})


class RandomDist(enum.IntEnum):
    """Distributions of ``pgk_random`` (``PGK_RAND_*``): Philox4x32-10 streams."""

    UNIFORM = 0
    NORMAL = 1
    BITS = 2


_U64, _U32 = ctypes.c_uint64, ctypes.c_uint32
_LAUNCHERS.update({
    # dist, out, dtype, n, key, counter, stream_id, a, b, stream
    "pgk_random": [_INT, _VP, _INT, _I64, _U64, _U64, _U32, _DBL, _DBL, _VP],
    # out, dtype, n, key, counter, stream_id, low, span, stream
    "pgk_random_integers": [_VP, _INT, _I64, _U64, _U64, _U32, _I64, _U64, _VP],
    # out, n, cdf, ncat, last, key, counter, stream_id, stream
    "pgk_random_choice": [_VP, _I64, _VP, _I64, _I64, _U64, _U64, _U32, _VP],
})


# ---- advanced indexing (gather_scatter.cu) ----

#: Most outer / inner dims and index arrays of one ``pgk_index_desc`` (``PGK_INDEX_MAX``).
INDEX_MAX = 16
#: ``pgk_index_desc.flags``: the caller already set the error slot to -1 (no reset launched).
INDEX_ERROR_PRESET = 1


class IndexMode(enum.IntEnum):
    """What an out-of-range index does (``PGK_INDEX_*``; NumPy's ``take`` modes)."""

    RAISE = 0
    WRAP = 1
    CLIP = 2


class IndexDesc(ctypes.Structure):
    """``pgk_index_desc``: a gather / scatter / scatter-add over an index space.

    Element ``(p, m, q)`` of the space ``(outer..., count, inner...)`` is at byte offset
    ``outer(p) + sum_k index[k][m] * index_stride[k] + inner(q)`` from ``base``.  See
    ``include/pygpukit_kernels.h``.
    """

    _fields_ = [
        ("base", ctypes.c_void_p),
        ("dtype", ctypes.c_int32), ("mode", ctypes.c_int32),
        ("n_outer", ctypes.c_int32), ("n_inner", ctypes.c_int32),
        ("n_index", ctypes.c_int32), ("flags", ctypes.c_int32),
        ("count", ctypes.c_int64),
        ("outer_shape", ctypes.c_int64 * INDEX_MAX),
        ("outer_strides", ctypes.c_int64 * INDEX_MAX),
        ("inner_shape", ctypes.c_int64 * INDEX_MAX),
        ("inner_strides", ctypes.c_int64 * INDEX_MAX),
        ("index", ctypes.c_void_p * INDEX_MAX),
        ("index_size", ctypes.c_int64 * INDEX_MAX),
        ("index_stride", ctypes.c_int64 * INDEX_MAX),
    ]


_INDEX_DESC_P = ctypes.POINTER(IndexDesc)
_LAUNCHERS.update({
    # desc, out, error, stream
    "pgk_index_gather": [_INDEX_DESC_P, _VP, _VP, _VP],
    "pgk_index_check": [_INDEX_DESC_P, _VP, _VP],
    # desc, values, error, stream
    "pgk_index_scatter": [_INDEX_DESC_P, _VP, _VP, _VP],
    # desc, bytes (out)
    "pgk_index_add_workspace_size": [_INDEX_DESC_P, _U64P],
    # desc, values, error, workspace, workspace_bytes, stream
    "pgk_index_add": [_INDEX_DESC_P, _VP, _VP, _VP, ctypes.c_uint64, _VP],
    # desc, values, error, stream
    "pgk_index_add_atomic": [_INDEX_DESC_P, _VP, _VP, _VP],
    # dtype, positions, n, bytes (out)
    "pgk_select_flagged_workspace_size": [_INT, _INT, _I64, _U64P],
    # x, dtype, flags, n, out, workspace, workspace_bytes, stream
    "pgk_select_flagged": [_VP, _INT, _VP, _I64, _VP, _VP, ctypes.c_uint64, _VP],
    # flags, n, workspace, workspace_bytes, stream
    "pgk_select_flagged_count": [_VP, _I64, _VP, ctypes.c_uint64, _VP],
    # x, dtype, n, out, workspace, workspace_bytes, stream
    "pgk_select_flagged_compact": [_VP, _INT, _I64, _VP, _VP, ctypes.c_uint64, _VP],
    # flags, n, count (out), stream
    "pgk_count_flags": [_VP, _I64, _VP, _VP],
    # flat, count, ndim, shape, mode, out, out_stride_dim, out_stride_i, error, stream
    "pgk_unravel_index": [_VP, _I64, _INT, _I64P, _INT, _VP, _I64, _I64, _VP, _VP],
})

_PKG_DIR = Path(__file__).resolve().parent


def _library_name() -> str:
    if sys.platform == "win32":
        return "pygpukit_kernels.dll"
    if sys.platform == "darwin":
        return "libpygpukit_kernels.dylib"
    return "libpygpukit_kernels.so"


def library_path() -> Path:
    """Return the path of the kernels shared library.

    Raises
    ------
    FileNotFoundError
        If the package was installed without its compiled library (a broken install).
    """
    lib_dir = _PKG_DIR / ("bin" if sys.platform == "win32" else "lib")
    path = lib_dir / _library_name()
    if not path.is_file():
        raise FileNotFoundError(
            f"pygpukit-kernels library missing at {path}; reinstall pygpukit-kernels"
        )
    return path


def header_path() -> Path:
    """Return the path of the C ABI header ``pygpukit_kernels.h``."""
    return _PKG_DIR / "include" / "pygpukit_kernels.h"


def fatbin_path(name: str) -> Path:
    """Return the path of the fatbin compiled from ``cuda/<name>.cu``.

    Parameters
    ----------
    name
        Source module name, e.g. ``"elementwise"``.

    Raises
    ------
    FileNotFoundError
        If no such fatbin was shipped; the message lists the available ones.
    """
    fat_dir = _PKG_DIR / "fatbin"
    for candidate in (fat_dir / f"{name}.fatbin", fat_dir / f"{name}.cu.fatbin"):
        if candidate.is_file():
            return candidate
    available = sorted(p.name.split(".")[0] for p in fat_dir.glob("*.fatbin"))
    raise FileNotFoundError(f"no fatbin named {name!r}; available: {available}")


@functools.cache
def load() -> ctypes.CDLL:
    """Load the kernels library (once per process) and check its ABI version.

    Loading needs no GPU: cudart, linked statically, opens the driver only at first use.
    Every launcher comes with its ``argtypes`` / ``restype`` set (pointers and streams as
    ``c_void_p``, so ints work; shapes and strides as ``POINTER(c_int64)``, so a
    ``(c_int64 * ndim)`` array or ``None`` works).

    Raises
    ------
    ImportError
        If the library's ABI version differs from :data:`ABI_VERSION`.
    """
    lib = ctypes.CDLL(str(library_path()))
    lib.pgk_abi_version.restype = ctypes.c_int
    lib.pgk_abi_version.argtypes = []
    got = lib.pgk_abi_version()
    if got != ABI_VERSION:
        raise ImportError(
            f"{library_path()} has C ABI version {got}, this pygpukit_kernels expects "
            f"{ABI_VERSION}: the package files are mixed from two builds; reinstall it"
        )
    for info in (lib.pgk_build_info, lib.pgk_gemm_last_kernel):
        info.restype = ctypes.c_char_p
        info.argtypes = []
    for fn in (lib.pgk_error_name, lib.pgk_error_string):
        fn.restype = ctypes.c_char_p
        fn.argtypes = [ctypes.c_int]
    for name, argtypes in _LAUNCHERS.items():
        fn = getattr(lib, name)
        fn.restype = ctypes.c_int
        fn.argtypes = argtypes
    return lib


@dataclass(frozen=True)
class BuildInfo:
    """What the kernels were compiled for.

    Attributes
    ----------
    abi
        C ABI version of the library.
    cuda_archs
        The CMake ``CUDA_ARCHITECTURES`` entries, e.g. ``("80-real", ..., "120")``.
    sass_archs
        Compute capabilities with machine code (SASS), as integers like ``90``.
    ptx_archs
        Compute capabilities with PTX, which the driver JIT-compiles for newer GPUs.
    nvcc
        Version of the nvcc that built the library.
    """

    abi: int
    cuda_archs: tuple[str, ...]
    sass_archs: tuple[int, ...]
    ptx_archs: tuple[int, ...]
    nvcc: str


def _parse_arch(entry: str) -> tuple[int, bool, bool]:
    """Split a CMake CUDA_ARCHITECTURES entry into (arch, has_sass, has_ptx)."""
    number, _, kind = entry.partition("-")
    arch = int(number.rstrip("af"))  # "90a" / "100f" feature suffixes
    if kind == "real":
        return arch, True, False
    if kind == "virtual":
        return arch, False, True
    return arch, True, True


@functools.cache
def build_info() -> BuildInfo:
    """Describe the build of the installed kernels library."""
    raw = json.loads(load().pgk_build_info().decode())
    entries = tuple(e for e in str(raw["cuda_archs"]).replace(";", ",").split(",") if e)
    parsed = [_parse_arch(e) for e in entries]
    return BuildInfo(
        abi=int(raw["abi"]),
        cuda_archs=entries,
        sass_archs=tuple(sorted({a for a, sass, _ in parsed if sass})),
        ptx_archs=tuple(sorted({a for a, _, ptx in parsed if ptx})),
        nvcc=str(raw["nvcc"]),
    )


def covers(major: int, minor: int) -> Literal["sass", "ptx"] | None:
    """Tell how a GPU of compute capability ``major.minor`` runs the shipped kernels.

    Returns
    -------
    ``"sass"`` when machine code for that exact arch is shipped, ``"ptx"`` when the driver can
    JIT-compile shipped PTX of an older arch, ``None`` when the GPU is too old (below every
    shipped arch).

    Notes
    -----
    SASS of ``sm_XY`` also runs on ``sm_XZ`` with ``Z > Y`` (same major), as CUDA's binary
    compatibility rules allow, so an sm_87 device is covered by sm_86 SASS.
    """
    info = build_info()
    cc = major * 10 + minor
    if any(a // 10 == major and a % 10 <= minor for a in info.sass_archs):
        return "sass"
    if any(a <= cc for a in info.ptx_archs):
        return "ptx"
    return None
