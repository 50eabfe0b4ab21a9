"""pgk_row_norm argument validation (ABI 4): bad arguments return cudaErrorInvalidValue (1),
empty problems return 0, all without touching a device (so this runs without a GPU).  The
kernels themselves are checked against NumPy on the GPU by pygpukit's test_math.py
(``test_row_norms_*``, cuda backend)."""

from __future__ import annotations

import ctypes

import pytest

import pygpukit_kernels as pk

INVALID = 1
FAKE = 0x1000  # a non-null, 16-byte aligned "device pointer": never dereferenced here
F16, BF16, F32, F64, I32 = 6, 7, 8, 9, 4


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    return pk.load()


def norm(lib: ctypes.CDLL, *, op: int = 2, x: int | None = FAKE, dtype: int = F32,
         rows: int = 4, cols: int = 8, xrs: int = 32, xcs: int = 4, out: int | None = FAKE,
         ors: int = 32, w: int | None = None, wdt: int = F32, ws: int = 4,
         b: int | None = None, bdt: int = F32, bs: int = 4, eps: float = 1e-5) -> int:
    return int(lib.pgk_row_norm(op, x, dtype, rows, cols, xrs, xcs, out, ors, w, wdt, ws, b, bdt,
                                bs, eps, None))


def test_signature_is_set(lib: ctypes.CDLL) -> None:
    assert lib.pgk_row_norm.restype is ctypes.c_int
    assert len(lib.pgk_row_norm.argtypes) == 17


def test_empty_problems_launch_nothing(lib: ctypes.CDLL) -> None:
    assert norm(lib, rows=0, x=None, out=None) == 0
    assert norm(lib, cols=0, x=None, out=None) == 0


@pytest.mark.parametrize("kwargs", [
    {"op": -1}, {"op": 4}, {"dtype": I32}, {"dtype": 10}, {"rows": -1}, {"cols": -1},
    {"rows": 2**31}, {"cols": 2**31}, {"x": None}, {"out": None}, {"eps": -1.0},
    {"eps": float("nan")}, {"x": FAKE + 2}, {"out": FAKE + 2}, {"xrs": 6}, {"xcs": 2},
    {"ors": 6}, {"w": FAKE, "wdt": F16}, {"b": FAKE, "bdt": F64}, {"w": FAKE + 2},
    {"w": FAKE, "ws": 2}, {"b": FAKE, "bs": 6}, {"dtype": F64, "w": FAKE, "wdt": F32},
], ids=str)
def test_bad_arguments_are_refused(lib: ctypes.CDLL, kwargs: dict[str, object]) -> None:
    assert norm(lib, **kwargs) == INVALID  # type: ignore[arg-type]


def test_weight_and_bias_ignored_where_unused(lib: ctypes.CDLL) -> None:
    # softmax takes no weight: a bad one is ignored (checked with an empty problem: no launch)
    assert norm(lib, op=0, rows=0, w=FAKE + 2, wdt=I32) == 0
