"""Argument validation of the launchers: bad arguments return cudaErrorInvalidValue (1)
and empty index spaces return 0, all without touching a device (so this runs without a GPU)."""

from __future__ import annotations

import ctypes
from typing import Any

import pytest

import pygpukit_kernels as pk

INVALID = 1
FAKE = 0x1000  # a non-null "device pointer": never dereferenced on the paths tested here


def i64(*values: int) -> Any:
    return (ctypes.c_int64 * max(len(values), 1))(*values)


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    return pk.load()


def test_launchers_have_their_signatures_set(lib: ctypes.CDLL) -> None:
    assert lib.pgk_copy.restype is ctypes.c_int
    assert len(lib.pgk_copy.argtypes) == 9
    assert len(lib.pgk_fill.argtypes) == 8
    assert len(lib.pgk_arange.argtypes) == 8
    assert len(lib.pgk_linspace.argtypes) == 7


def copy(lib: ctypes.CDLL, *, src: int | None = FAKE, sdt: int = 8, dst: int | None = FAKE,
         ddt: int = 8, shape: tuple[int, ...] = (4,), sst: Any = "c", dstr: Any = "c") -> int:
    nd = len(shape)
    ss = i64(*[4] * nd) if sst == "c" else sst
    ds = i64(*[4] * nd) if dstr == "c" else dstr
    return int(lib.pgk_copy(src, sdt, ss, dst, ddt, ds, nd, i64(*shape), None))


@pytest.mark.parametrize("code", [-1, 10, 99])
def test_copy_rejects_unknown_dtypes(lib: ctypes.CDLL, code: int) -> None:
    assert copy(lib, sdt=code) == INVALID
    assert copy(lib, ddt=code) == INVALID
    assert copy(lib, sdt=code, shape=(0,)) == INVALID  # checked even with no work


def test_copy_rejects_bad_ndim(lib: ctypes.CDLL) -> None:
    strides = i64(*[4] * 17)
    shape = i64(*[1] * 17)
    assert lib.pgk_copy(FAKE, 8, strides, FAKE, 8, strides, 17, shape, None) == INVALID
    assert lib.pgk_copy(FAKE, 8, strides, FAKE, 8, strides, -1, shape, None) == INVALID
    assert lib.pgk_fill(FAKE, 8, strides, 17, shape, 0.0, 0, None) == INVALID


def test_copy_rejects_negative_dims(lib: ctypes.CDLL) -> None:
    assert copy(lib, shape=(3, -1)) == INVALID
    assert copy(lib, shape=(0, -1)) == INVALID  # negative is wrong even next to a 0


def test_copy_rejects_null_pointers_when_there_is_work(lib: ctypes.CDLL) -> None:
    assert copy(lib, src=None) == INVALID
    assert copy(lib, dst=None) == INVALID
    assert copy(lib, src=None, shape=()) == INVALID  # ndim 0 is one element
    assert lib.pgk_copy(FAKE, 8, None, FAKE, 8, i64(4), 1, i64(4), None) == INVALID
    assert lib.pgk_copy(FAKE, 8, i64(4), FAKE, 8, None, 1, i64(4), None) == INVALID
    assert lib.pgk_copy(FAKE, 8, i64(4), FAKE, 8, i64(4), 1, None, None) == INVALID


def test_misaligned_pointers_and_strides_are_rejected(lib: ctypes.CDLL) -> None:
    assert copy(lib, src=FAKE + 2) == INVALID  # float32 at an address not a multiple of 4
    assert copy(lib, dst=FAKE + 1) == INVALID
    assert copy(lib, shape=(4, 2), sst=i64(6, 4)) == INVALID  # stride not a multiple of 4
    assert copy(lib, shape=(4, 2), dstr=i64(8, 2)) == INVALID
    assert lib.pgk_fill(FAKE + 4, 9, i64(8), 1, i64(4), 0.0, 0, None) == INVALID
    assert lib.pgk_fill(FAKE, 9, i64(12), 1, i64(4), 0.0, 0, None) == INVALID
    assert lib.pgk_arange(FAKE + 2, 8, 4, 0.0, 1.0, 0, 1, None) == INVALID
    assert lib.pgk_linspace(FAKE + 1, 6, 4, 0.0, 1.0, 1, None) == INVALID


def test_copy_rejects_overflowing_element_counts(lib: ctypes.CDLL) -> None:
    assert copy(lib, shape=(2**40, 2**40)) == INVALID


def test_copy_of_nothing_launches_nothing(lib: ctypes.CDLL) -> None:
    assert copy(lib, shape=(0,)) == 0
    assert copy(lib, shape=(5, 0, 3)) == 0
    assert copy(lib, src=None, dst=None, shape=(0, 7)) == 0  # no work: null pointers are fine
    assert copy(lib, shape=(2**40, 2**40, 0)) == 0


def test_fill_validation(lib: ctypes.CDLL) -> None:
    assert lib.pgk_fill(FAKE, 10, i64(4), 1, i64(4), 0.0, 0, None) == INVALID
    assert lib.pgk_fill(FAKE, 8, i64(4), 1, i64(-4), 0.0, 0, None) == INVALID
    assert lib.pgk_fill(None, 8, i64(4), 1, i64(4), 0.0, 0, None) == INVALID
    assert lib.pgk_fill(None, 8, None, 0, None, 0.0, 0, None) == INVALID  # ndim 0: one element
    assert lib.pgk_fill(FAKE, 8, None, 1, i64(4), 0.0, 0, None) == INVALID
    assert lib.pgk_fill(None, 8, i64(4, 4), 2, i64(3, 0), 1.0, 1, None) == 0


@pytest.mark.parametrize("name", ["pgk_arange", "pgk_linspace"])
def test_range_validation(lib: ctypes.CDLL, name: str) -> None:
    fn = getattr(lib, name)
    extra = (0.0, 1.0, 0, 1) if name == "pgk_arange" else (0.0, 1.0, 1)
    assert fn(FAKE, 10, 4, *extra, None) == INVALID
    assert fn(FAKE, -1, 4, *extra, None) == INVALID
    assert fn(FAKE, 8, -1, *extra, None) == INVALID
    assert fn(None, 8, 4, *extra, None) == INVALID
    assert fn(None, 8, 0, *extra, None) == 0
    assert fn(FAKE, 9, 0, *extra, None) == 0


# ---- ABI 3: elementwise math and reductions ----
F32, F64, I64 = 8, 9, 5


def binary(lib: ctypes.CDLL, *, op: int = 0, a: int | None = FAKE, b: int | None = FAKE,
           out: int | None = FAKE, dts: tuple[int, int, int] = (F32, F32, F32),
           shape: tuple[int, ...] = (4,), compute: int = F32) -> int:
    nd = len(shape)
    st = i64(*[4] * nd)
    return int(lib.pgk_binary(op, a, dts[0], st, b, dts[1], st, out, dts[2], st, nd,
                              i64(*shape), compute, 0.0, 0, None))


def test_math_launchers_have_their_signatures_set(lib: ctypes.CDLL) -> None:
    assert len(lib.pgk_binary.argtypes) == 16
    assert len(lib.pgk_unary.argtypes) == 11
    assert len(lib.pgk_where.argtypes) == 20
    assert len(lib.pgk_reduce.argtypes) == 15


def test_binary_validation(lib: ctypes.CDLL) -> None:
    assert binary(lib, op=-1) == INVALID
    assert binary(lib, op=21) == INVALID  # PGK_NUM_BINARY_OPS
    assert binary(lib, compute=6) == INVALID  # float16 is not a compute type
    assert binary(lib, op=18, compute=F32) == INVALID  # bitwise needs int64
    assert binary(lib, dts=(10, F32, F32)) == INVALID
    assert binary(lib, a=None, b=None) == INVALID  # at most one scalar operand
    assert binary(lib, out=None) == INVALID
    assert binary(lib, a=FAKE + 2) == INVALID  # misaligned
    assert binary(lib, shape=(-1,)) == INVALID
    assert binary(lib, shape=(3, 0)) == 0  # empty: nothing launched
    assert binary(lib, a=None, shape=(0,)) == 0
    assert lib.pgk_binary(0, FAKE, F32, None, FAKE, F32, i64(4), FAKE, F32, i64(4), 1, i64(4),
                          F32, 0.0, 0, None) == INVALID  # array operand without strides


def test_unary_where_reduce_validation(lib: ctypes.CDLL) -> None:
    st, sh = i64(4), i64(4)
    assert lib.pgk_unary(26, FAKE, F32, st, FAKE, F32, st, 1, sh, F32, None) == INVALID
    assert lib.pgk_unary(23, FAKE, F32, st, FAKE, F32, st, 1, sh, F32, None) == INVALID
    assert lib.pgk_unary(0, None, F32, st, FAKE, F32, st, 1, sh, F32, None) == INVALID
    assert lib.pgk_unary(0, FAKE, F32, st, FAKE, F32, st, 1, i64(0), F32, None) == 0
    assert lib.pgk_where(None, 0, st, FAKE, F32, st, FAKE, F32, st, FAKE, F32, st, 1, sh, F32,
                         0.0, 0, 0.0, 0, None) == INVALID  # cond is always an array
    assert lib.pgk_where(FAKE, 0, st, FAKE, F32, st, FAKE, F32, st, FAKE, F32, st, 1, sh, 3,
                         0.0, 0, 0.0, 0, None) == INVALID
    # op, x, dtype, strides, ndim, shape, nred, out, dtype, strides, compute, ddof, ws, chunks
    assert lib.pgk_reduce(11, FAKE, F32, st, 1, sh, 1, FAKE, F32, None, F32, 0.0, None, 1,
                          None) == INVALID
    assert lib.pgk_reduce(6, FAKE, I64, i64(8), 1, sh, 1, FAKE, F64, None, I64, 0.0, None, 1,
                          None) == INVALID  # mean needs a floating compute type
    assert lib.pgk_reduce(0, FAKE, F32, st, 1, sh, 2, FAKE, F32, None, F32, 0.0, None, 1,
                          None) == INVALID  # more reduced dims than dims
    assert lib.pgk_reduce(0, FAKE, F32, st, 1, sh, 1, FAKE, F32, None, F32, 0.0, None, 2,
                          None) == INVALID  # two passes need a workspace
    assert lib.pgk_reduce(0, FAKE, F32, st, 1, sh, 1, FAKE, F32, None, F32, 0.0, None, 0,
                          None) == INVALID
    assert lib.pgk_reduce(0, FAKE, F32, i64(4, 4), 2, i64(0, 4), 1, FAKE, F32, i64(4), F32,
                          0.0, None, 1, None) == 0  # no outputs: nothing to do


# ---- ABI 4: matrix multiply ----

def gemm_desc(**changes: Any) -> pk.GemmDesc:
    fields: dict[str, Any] = dict(m=8, n=8, k=8, batch=1, dtype=pk.DType.FLOAT32,
                                  precision=pk.Precision.HIGHEST, activation=pk.Activation.NONE,
                                  b_col_major=0, a=FAKE, lda=8, batch_stride_a=0, b=FAKE, ldb=8,
                                  batch_stride_b=0, c=FAKE, ldc=8, batch_stride_c=0, bias=None)
    fields.update(changes)
    return pk.GemmDesc(**fields)


def gemm(lib: ctypes.CDLL, desc: pk.GemmDesc) -> int:
    """Both entry points must refuse the same descriptors, before touching a device."""
    size = ctypes.c_uint64(0)
    rc_size = int(lib.pgk_gemm_workspace_size(ctypes.byref(desc), ctypes.byref(size)))
    rc = int(lib.pgk_gemm(ctypes.byref(desc), None, 0, None))
    assert rc == rc_size
    return rc


@pytest.mark.parametrize("changes", [
    {"dtype": pk.DType.INT32}, {"dtype": pk.DType.BOOL}, {"dtype": 10}, {"dtype": -1},
    {"precision": 2}, {"precision": -1}, {"activation": 4}, {"activation": -1},
    {"b_col_major": 2},
    {"m": 0}, {"n": 0}, {"k": 0}, {"batch": 0}, {"m": -3}, {"k": 2**31},
    {"a": None}, {"b": None}, {"c": None},
    {"lda": 7}, {"ldb": 7}, {"ldc": 7}, {"b_col_major": 1, "n": 16, "ldb": 7},
    {"batch": 2, "batch_stride_a": -8}, {"batch": 2, "batch_stride_c": 8},  # C batches overlap
    {"a": FAKE + 2}, {"bias": FAKE + 1},  # not aligned to float32
], ids=repr)
def test_gemm_rejects_bad_descriptors(lib: ctypes.CDLL, changes: dict[str, Any]) -> None:
    assert gemm(lib, gemm_desc(**changes)) == INVALID


def test_gemm_rejects_null_descriptor_and_output(lib: ctypes.CDLL) -> None:
    size = ctypes.c_uint64(0)
    assert lib.pgk_gemm_workspace_size(None, ctypes.byref(size)) == INVALID
    assert lib.pgk_gemm_workspace_size(ctypes.byref(gemm_desc()), None) == INVALID
    assert lib.pgk_gemm(None, None, 0, None) == INVALID



# ---- random numbers (pgk_random, pgk_random_integers, pgk_random_choice) ----
UNIFORM, NORMAL, BITS = 0, 1, 2
F16, BF16, F32, F64, I8, I32, I64, BOOL = 6, 7, 8, 9, 1, 4, 5, 0


def random(lib: ctypes.CDLL, dist: int = UNIFORM, out: int | None = FAKE, dtype: int = F32,
           n: int = 4, a: float = 0.0, b: float = 1.0) -> int:
    return int(lib.pgk_random(dist, out, dtype, n, 1, 0, 0, a, b, None))


def test_random_rejects_bad_arguments(lib: ctypes.CDLL) -> None:
    assert random(lib, dist=3) == INVALID
    assert random(lib, dist=-1) == INVALID
    for dist, dtype in ((UNIFORM, I32), (UNIFORM, BOOL), (NORMAL, F16), (NORMAL, BF16),
                        (BITS, F32), (BITS, I8), (UNIFORM, 10)):
        assert random(lib, dist=dist, dtype=dtype) == INVALID, (dist, dtype)
        assert random(lib, dist=dist, dtype=dtype, n=0) == INVALID  # even with no work
    assert random(lib, n=-1) == INVALID
    assert random(lib, out=None) == INVALID
    assert random(lib, out=FAKE + 2) == INVALID  # float32 at an address not a multiple of 4
    assert random(lib, dtype=F64, out=FAKE + 4) == INVALID
    assert random(lib, a=float("nan")) == INVALID
    assert random(lib, b=float("inf")) == INVALID
    assert random(lib, b=1e39) == INVALID  # not finite in float32
    assert random(lib, dtype=F64, n=0, b=1e39) == 0  # finite in float64; nothing to do


def test_random_empty_launches_nothing(lib: ctypes.CDLL) -> None:
    for dist, dtype in ((UNIFORM, F16), (UNIFORM, BF16), (UNIFORM, F64), (NORMAL, F32),
                        (BITS, I32), (BITS, I64)):
        assert random(lib, dist=dist, dtype=dtype, n=0, out=None) == 0


def test_random_integers_rejects_bad_arguments(lib: ctypes.CDLL) -> None:
    for dtype in (F16, BF16, F32, F64, 10, -1):
        assert lib.pgk_random_integers(FAKE, dtype, 4, 1, 0, 0, 0, 9, None) == INVALID
    assert lib.pgk_random_integers(FAKE, I64, -1, 1, 0, 0, 0, 9, None) == INVALID
    assert lib.pgk_random_integers(None, I64, 4, 1, 0, 0, 0, 9, None) == INVALID
    assert lib.pgk_random_integers(FAKE + 4, I64, 4, 1, 0, 0, 0, 9, None) == INVALID
    assert lib.pgk_random_integers(None, I8, 0, 1, 0, 0, 0, 9, None) == 0


def test_random_choice_rejects_bad_arguments(lib: ctypes.CDLL) -> None:
    assert lib.pgk_random_choice(FAKE, 4, FAKE, 0, 0, 1, 0, 0, None) == INVALID  # no category
    assert lib.pgk_random_choice(FAKE, 4, FAKE, 3, 3, 1, 0, 0, None) == INVALID  # last >= ncat
    assert lib.pgk_random_choice(FAKE, 4, FAKE, 3, -1, 1, 0, 0, None) == INVALID
    assert lib.pgk_random_choice(FAKE, -1, FAKE, 3, 2, 1, 0, 0, None) == INVALID
    assert lib.pgk_random_choice(FAKE, 4, None, 3, 2, 1, 0, 0, None) == INVALID
    assert lib.pgk_random_choice(FAKE + 4, 4, FAKE, 3, 2, 1, 0, 0, None) == INVALID
    assert lib.pgk_random_choice(None, 0, None, 3, 2, 1, 0, 0, None) == 0


# ---- FP8: pgk_fp8_cast, pgk_gemm_fp8 ----
E4M3, E5M2 = int(pk.DType.FLOAT8_E4M3FN), int(pk.DType.FLOAT8_E5M2)


@pytest.mark.parametrize("args", [
    (FAKE, 8, FAKE, 8, 4, None, 0, 0),  # neither side FP8
    (FAKE, 4, FAKE, E4M3, 4, None, 0, 0),  # int32 -> FP8: through float32 in pygpukit
    (FAKE, E4M3, FAKE, 1, 4, None, 0, 0),  # FP8 -> int8
    (FAKE, 8, FAKE, E4M3, -1, None, 0, 0),  # negative count
    (FAKE, 8, FAKE, E4M3, 4, None, 0, 2),  # saturate not 0/1
    (FAKE, 8, FAKE, E4M3, 6, FAKE, 4, 1),  # n not a multiple of row_len
    (FAKE, 8, FAKE, E4M3, 8, None, 4, 1),  # per-row without a scale
    (None, 8, FAKE, E4M3, 4, None, 0, 0),
    (FAKE + 2, 8, FAKE, E4M3, 4, None, 0, 0),  # float32 source not aligned
], ids=repr)
def test_fp8_cast_rejects_bad_arguments(lib: ctypes.CDLL, args: tuple[Any, ...]) -> None:
    assert lib.pgk_fp8_cast(*args, None) == INVALID


def test_fp8_cast_of_nothing_does_nothing(lib: ctypes.CDLL) -> None:
    assert lib.pgk_fp8_cast(None, 8, None, E5M2, 0, None, 0, 0, None) == 0


def fp8_desc(**changes: Any) -> pk.Fp8GemmDesc:
    fields: dict[str, Any] = dict(m=8, n=8, k=32, a_dtype=E4M3, b_dtype=E4M3,
                                  out_dtype=int(pk.DType.BFLOAT16), activation=0, a=FAKE, lda=32,
                                  b=FAKE, ldb=32, c=FAKE, ldc=8, scale_a=None, scale_b=None,
                                  scale_a_per_row=0, scale_b_per_col=0, bias=None)
    fields.update(changes)
    return pk.Fp8GemmDesc(**fields)


@pytest.mark.parametrize("changes", [
    {"a_dtype": 8}, {"b_dtype": int(pk.DType.BFLOAT16)}, {"out_dtype": 9}, {"out_dtype": E4M3},
    {"activation": 4}, {"m": 0}, {"k": 2**31}, {"a": None}, {"c": None},
    {"lda": 16}, {"ldb": 31}, {"ldc": 7}, {"bias": FAKE + 1}, {"scale_a": FAKE + 2},
    {"scale_a_per_row": 1}, {"scale_b_per_col": 1}, {"scale_b_per_col": 2},
], ids=repr)
def test_gemm_fp8_rejects_bad_descriptors(lib: ctypes.CDLL, changes: dict[str, Any]) -> None:
    assert lib.pgk_gemm_fp8(ctypes.byref(fp8_desc(**changes)), None) == INVALID


def test_gemm_fp8_rejects_null_descriptor_and_bad_config(lib: ctypes.CDLL) -> None:
    assert lib.pgk_gemm_fp8(None, None) == INVALID
    assert lib.pgk_gemm_fp8_force_config(8) == INVALID
    assert lib.pgk_gemm_fp8_force_config(-1) == INVALID
    # 4 and 5: the mma.sync FP8 tile and small-M kernels (sm_89+), built whenever the build
    # covers an arch >= 8.9.
    assert lib.pgk_gemm_fp8_force_config(4) == 0
    assert lib.pgk_gemm_fp8_force_config(5) == 0
    assert lib.pgk_gemm_fp8_force_config(0) == 0
