"""Argument validation of the sort / scan launchers (sort.cu, scan.cu): bad arguments return
cudaErrorInvalidValue (1) and empty work returns 0, without touching a device (runs without a
GPU); the header declares every launcher and its codes."""

from __future__ import annotations

import ctypes

import pytest

import pygpukit_kernels as pk

INVALID = 1
FAKE = 0x1000  # a non-null, 256-byte aligned "device pointer": never dereferenced here
F32, I64, F16, BOOL = int(pk.DType.FLOAT32), int(pk.DType.INT64), int(pk.DType.FLOAT16), 0
IDX = int(pk.SortFlag.INDICES)


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    return pk.load()


def test_header_declares_the_sort_and_scan_launchers() -> None:
    header = pk.header_path().read_text()
    for symbol in ("pgk_sort_workspace_size", "pgk_sort", "pgk_searchsorted", "pgk_run_starts",
                   "pgk_run_scatter", "pgk_take_rows", "pgk_scan_workspace_size", "pgk_scan"):
        assert f"PGK_API int {symbol}(" in header


def test_sort_workspace_query_validates(lib: ctypes.CDLL) -> None:
    size = ctypes.c_uint64(123)
    assert lib.pgk_sort_workspace_size(F32, 4, 8, 0, 8, None) == INVALID
    assert lib.pgk_sort_workspace_size(10, 4, 8, 0, 8, ctypes.byref(size)) == INVALID
    assert lib.pgk_sort_workspace_size(-1, 4, 8, 0, 8, ctypes.byref(size)) == INVALID
    assert lib.pgk_sort_workspace_size(F32, -1, 8, 0, 8, ctypes.byref(size)) == INVALID
    assert lib.pgk_sort_workspace_size(F32, 4, -8, 0, 8, ctypes.byref(size)) == INVALID
    assert lib.pgk_sort_workspace_size(F32, 4, 8, 4, 8, ctypes.byref(size)) == INVALID  # flag
    assert lib.pgk_sort_workspace_size(F32, 4, 8, 0, 9, ctypes.byref(size)) == INVALID  # k > cols
    assert lib.pgk_sort_workspace_size(F32, 4, 8, 0, -1, ctypes.byref(size)) == INVALID
    assert lib.pgk_sort_workspace_size(F32, 2**40, 2**40, 0, 1, ctypes.byref(size)) == INVALID
    assert lib.pgk_sort_workspace_size(F32, 0, 8, IDX, 8, ctypes.byref(size)) == 0
    assert size.value == 0  # empty: no workspace
    size.value = 123
    assert lib.pgk_sort_workspace_size(F32, 4, 8, IDX, 0, ctypes.byref(size)) == 0
    assert size.value == 0  # k == 0: nothing written


def test_sort_validates(lib: ctypes.CDLL) -> None:
    def sort(x: int | None = FAKE, dtype: int = F32, rows: int = 2, cols: int = 8,
             flags: int = IDX, k: int = 8, values: int | None = FAKE,
             indices: int | None = FAKE, ws: int | None = FAKE, nbytes: int = 1 << 30) -> int:
        return int(lib.pgk_sort(x, dtype, rows, cols, flags, k, values, indices, ws, nbytes,
                                None))

    assert sort(dtype=10) == INVALID
    assert sort(k=9) == INVALID  # k > cols
    assert sort(k=-1) == INVALID
    assert sort(indices=None) == INVALID  # flag without the output
    assert sort(flags=0) == INVALID  # output without the flag
    assert sort(x=None) == INVALID
    assert sort(values=None, indices=None, flags=0) == INVALID  # no output at all
    assert sort(ws=None) == INVALID
    assert sort(ws=FAKE + 16) == INVALID  # workspace not 256-byte aligned
    assert sort(x=FAKE + 2) == INVALID  # misaligned float32
    assert sort(indices=FAKE + 4) == INVALID  # misaligned int64
    assert sort(rows=0, x=None, values=None, ws=None) == 0  # empty: nothing launched
    assert sort(cols=0, k=0, x=None, ws=None) == 0
    assert sort(k=0, ws=None) == 0


def test_scan_validates(lib: ctypes.CDLL) -> None:
    size = ctypes.c_uint64(7)
    assert lib.pgk_scan_workspace_size(2, F32, 1, 8, ctypes.byref(size)) == INVALID  # op
    assert lib.pgk_scan_workspace_size(0, F16, 1, 8, ctypes.byref(size)) == INVALID  # dtype
    assert lib.pgk_scan_workspace_size(0, F32, -1, 8, ctypes.byref(size)) == INVALID
    assert lib.pgk_scan_workspace_size(0, F32, 1, 8, None) == INVALID
    assert lib.pgk_scan_workspace_size(0, I64, 0, 8, ctypes.byref(size)) == 0
    assert size.value == 0
    assert lib.pgk_scan(0, FAKE, FAKE, BOOL, 1, 8, None, 0, None) == INVALID
    assert lib.pgk_scan(1, None, FAKE, F32, 1, 8, None, 0, None) == INVALID
    assert lib.pgk_scan(0, FAKE + 4, FAKE, I64, 1, 8, None, 0, None) == INVALID
    assert lib.pgk_scan(0, None, None, F32, 3, 0, None, 0, None) == 0


def test_search_runs_and_gathers_validate(lib: ctypes.CDLL) -> None:
    assert lib.pgk_searchsorted(FAKE, 11, 4, None, FAKE, 4, 0, FAKE, None) == INVALID
    assert lib.pgk_searchsorted(FAKE, F32, -1, None, FAKE, 4, 0, FAKE, None) == INVALID
    assert lib.pgk_searchsorted(None, F32, 4, None, FAKE, 4, 0, FAKE, None) == INVALID
    assert lib.pgk_searchsorted(FAKE, F32, 4, FAKE + 4, FAKE, 4, 0, FAKE, None) == INVALID
    assert lib.pgk_searchsorted(None, F32, 4, None, None, 0, 0, None, None) == 0
    assert lib.pgk_run_starts(FAKE, F32, 4, None, None) == INVALID
    assert lib.pgk_run_starts(FAKE + 1, F16, 4, FAKE, None) == INVALID
    assert lib.pgk_run_starts(None, F32, 0, None, None) == 0
    # first_out without perm; uniq_out without the sorted values
    assert lib.pgk_run_scatter(FAKE, 4, FAKE, F32, None, None, None, FAKE, None,
                               None) == INVALID
    assert lib.pgk_run_scatter(FAKE, 4, None, F32, None, FAKE, None, None, None,
                               None) == INVALID
    assert lib.pgk_run_scatter(None, 0, None, F32, None, None, None, None, None, None) == 0
    assert lib.pgk_take_rows(FAKE, F32, 2, 0, FAKE, 3, FAKE, None) == INVALID  # cols 0, k > 0
    assert lib.pgk_take_rows(FAKE, F32, 2, 4, FAKE + 4, 3, FAKE, None) == INVALID
    assert lib.pgk_take_rows(None, F32, 0, 4, None, 3, None, None) == 0
