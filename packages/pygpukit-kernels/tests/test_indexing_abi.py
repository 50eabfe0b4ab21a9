"""Argument validation of the advanced-indexing launchers (gather_scatter.cu): bad arguments
return cudaErrorInvalidValue (1) before anything touches a device (so this runs without a GPU)."""

from __future__ import annotations

import ctypes

import pytest

import pygpukit_kernels as pk

INVALID = 1
FAKE = 0x1000  # a non-null, aligned "device pointer": never dereferenced on these paths


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    return pk.load()


def desc(**fields: int) -> pk.IndexDesc:
    """A valid gather of 4 float32 elements by one index array, with ``fields`` changed."""
    d = pk.IndexDesc()
    d.base = FAKE
    d.dtype = int(pk.DType.FLOAT32)
    d.mode = int(pk.IndexMode.RAISE)
    d.n_index = 1
    d.count = 4
    d.index[0] = FAKE
    d.index_size[0] = 10
    d.index_stride[0] = 4
    for name, value in fields.items():
        setattr(d, name, value)
    return d


def gather(lib: ctypes.CDLL, d: pk.IndexDesc, out: int | None = FAKE) -> int:
    return int(lib.pgk_index_gather(ctypes.byref(d), out, None, None))


def test_index_desc_matches_the_header_layout() -> None:
    # void* + 6 int32 + int64 + 4 x 16 int64 + 16 pointers + 2 x 16 int64 (x86-64, aarch64)
    assert ctypes.sizeof(pk.IndexDesc) == 8 + 24 + 8 + 4 * 128 + 128 + 2 * 128
    assert pk.IndexDesc.count.offset == 32


@pytest.mark.parametrize("fields", [
    {"dtype": -1}, {"dtype": 10}, {"mode": 3}, {"mode": -1}, {"n_index": 17},
    {"n_outer": -1}, {"n_inner": 17}, {"count": -1}, {"base": 0}, {"base": FAKE + 2},
    {"flags": 2}, {"flags": -1}, {"flags": pk.INDEX_ERROR_PRESET | 4},
])
def test_gather_rejects_bad_descriptors(lib: ctypes.CDLL, fields: dict[str, int]) -> None:
    assert gather(lib, desc(**fields)) == INVALID
    assert lib.pgk_index_scatter(ctypes.byref(desc(**fields)), FAKE, None, None) == INVALID


def test_gather_rejects_bad_strides_and_pointers(lib: ctypes.CDLL) -> None:
    d = desc()
    d.index_stride[0] = 6  # not a multiple of 4 bytes
    assert gather(lib, d) == INVALID
    d = desc()
    d.index[0] = None  # null index array with elements
    assert gather(lib, d) == INVALID
    d = desc(n_inner=1)
    d.inner_shape[0] = 3
    d.inner_strides[0] = 2
    assert gather(lib, d) == INVALID
    assert gather(lib, desc(), out=None) == INVALID
    assert gather(lib, desc(), out=FAKE + 1) == INVALID
    assert lib.pgk_index_gather(None, FAKE, None, None) == INVALID


def test_empty_gather_launches_nothing(lib: ctypes.CDLL) -> None:
    assert gather(lib, desc(count=0)) == 0
    d = desc(n_outer=1)
    d.outer_shape[0] = 0
    d.outer_strides[0] = 16
    assert gather(lib, d) == 0


def test_index_check_validates_without_touching_the_device(lib: ctypes.CDLL) -> None:
    preset = pk.INDEX_ERROR_PRESET
    for fields in ({"dtype": -1}, {"mode": 3}, {"n_index": 17}, {"count": -1}, {"flags": 2}):
        assert lib.pgk_index_check(ctypes.byref(desc(**fields)), FAKE, None) == INVALID
    assert lib.pgk_index_check(None, FAKE, None) == INVALID
    assert lib.pgk_index_check(ctypes.byref(desc()), None, None) == INVALID  # the slot is required
    assert lib.pgk_index_check(ctypes.byref(desc()), FAKE + 4, None) == INVALID  # misaligned
    d = desc()
    d.index[0] = None  # null index array with elements
    assert lib.pgk_index_check(ctypes.byref(d), FAKE, None) == INVALID
    # The target is never read: a null base is valid; an empty space launches nothing.
    assert lib.pgk_index_check(ctypes.byref(desc(count=0, base=0, flags=preset)), FAKE,
                               None) == 0


def test_scatter_add_rejects_dtypes_without_arithmetic(lib: ctypes.CDLL) -> None:
    size = ctypes.c_uint64(0)
    for dtype in (pk.DType.BOOL, pk.DType.INT8, pk.DType.FLOAT16, pk.DType.BFLOAT16):
        d = desc(dtype=int(dtype))
        d.index_stride[0] = 8
        assert lib.pgk_index_add_workspace_size(ctypes.byref(d), ctypes.byref(size)) == INVALID
        assert lib.pgk_index_add(ctypes.byref(d), FAKE, None, FAKE, 1 << 20, None) == INVALID
        assert lib.pgk_index_add_atomic(ctypes.byref(d), FAKE, None, None) == INVALID
    assert lib.pgk_index_add_workspace_size(ctypes.byref(desc()), None) == INVALID
    assert lib.pgk_index_add_atomic(None, FAKE, None, None) == INVALID
    assert lib.pgk_index_add_atomic(ctypes.byref(desc()), None, None, None) == INVALID
    assert lib.pgk_index_add_atomic(ctypes.byref(desc()), FAKE + 1, None, None) == INVALID
    assert lib.pgk_index_add_atomic(ctypes.byref(desc(count=0)), None, None, None) == 0
    assert lib.pgk_index_add_workspace_size(ctypes.byref(desc(count=0)),
                                            ctypes.byref(size)) == 0
    assert size.value == 0


def test_select_unravel_count_reject_bad_arguments(lib: ctypes.CDLL) -> None:
    dt = int(pk.DType.FLOAT32)
    assert lib.pgk_select_flagged(FAKE, dt, FAKE, -1, FAKE, FAKE, 1024, None) == INVALID
    assert lib.pgk_select_flagged(FAKE, 10, FAKE, 4, FAKE, FAKE, 1024, None) == INVALID
    assert lib.pgk_select_flagged(FAKE, dt, None, 4, FAKE, FAKE, 1024, None) == INVALID
    assert lib.pgk_select_flagged(FAKE, dt, FAKE, 4, FAKE, None, 1024, None) == INVALID
    assert lib.pgk_select_flagged(FAKE, dt, FAKE, 0, None, None, 0, None) == 0  # empty
    size = ctypes.c_uint64(0)
    assert lib.pgk_select_flagged_workspace_size(10, 0, 4, ctypes.byref(size)) == INVALID
    assert lib.pgk_select_flagged_workspace_size(dt, 0, -1, ctypes.byref(size)) == INVALID
    assert lib.pgk_select_flagged_workspace_size(dt, 0, 4, ctypes.byref(size)) == 0
    big = size.value
    count, compact = lib.pgk_select_flagged_count, lib.pgk_select_flagged_compact
    assert count(FAKE, -1, FAKE, big, None) == INVALID
    assert count(None, 4, FAKE, big, None) == INVALID
    assert count(FAKE, 4, None, big, None) == INVALID
    assert count(FAKE, 4, FAKE, big - 1, None) == INVALID  # workspace too small
    assert count(None, 0, None, 0, None) == 0  # empty
    assert compact(FAKE, 10, 4, FAKE, FAKE, big, None) == INVALID  # dtype
    assert compact(FAKE, dt, 4, None, FAKE, big, None) == INVALID
    assert compact(FAKE, dt, 4, FAKE, None, big, None) == INVALID
    assert compact(FAKE, dt, 4, FAKE, FAKE, big - 1, None) == INVALID
    assert compact(None, dt, 0, None, None, 0, None) == 0
    shape = (ctypes.c_int64 * 2)(3, 4)
    unravel = lib.pgk_unravel_index
    assert unravel(FAKE, 4, 0, shape, 0, FAKE, 8, 16, None, None) == INVALID  # ndim 0
    assert unravel(FAKE, 4, 17, shape, 0, FAKE, 8, 16, None, None) == INVALID
    assert unravel(FAKE, -1, 2, shape, 0, FAKE, 8, 16, None, None) == INVALID
    assert unravel(FAKE, 4, 2, shape, 3, FAKE, 8, 16, None, None) == INVALID  # mode
    assert unravel(FAKE, 4, 2, None, 0, FAKE, 8, 16, None, None) == INVALID
    assert unravel(FAKE, 0, 2, shape, 0, FAKE, 8, 16, None, None) == 0  # empty, no error slot
    assert lib.pgk_count_flags(FAKE, -1, FAKE, None) == INVALID
    assert lib.pgk_count_flags(FAKE, 4, None, None) == INVALID
    assert lib.pgk_count_flags(None, 4, FAKE, None) == INVALID
