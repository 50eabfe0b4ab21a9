"""Sort and scan on both backends vs NumPy: sort, argsort, topk, cumsum, cumprod, diff,
searchsorted, unique, bincount, histogram.

Sorts, argsorts (stable), searches and counts are exact.  Float cumulative sums / products
differ from NumPy's sequential loop by rounding (the GPU runs a parallel scan); they are
compared with the float64 result within, relative: float16 2e-3, bfloat16 1.6e-2, float32
1e-5 (1e-3 for 2^20 elements), float64 1e-12 (1e-9 for 2^20).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import pygpukit as gp

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
INTS = [np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.int64)]
DTYPES = [np.dtype(np.bool_), *INTS, *FLOATS]
SCAN_TOL = {np.dtype(np.float16): 2e-3, BF16: 1.6e-2, np.dtype(np.float32): 1e-5,
            np.dtype(np.float64): 1e-12}


def data(shape: tuple[int, ...], dtype: np.dtype[Any], seed: int = 0, *,
         specials: bool = True) -> np.ndarray:
    """Random values with many repeats; floats with NaN, +-inf, -0.0 and +0.0 among them."""
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        v = rng.integers(info.min, int(info.max) + 1, shape, dtype=dtype)
        # repeats, and the extremes
        flat = v.reshape(-1)
        if flat.size > 4:
            flat[::3] = flat[0]
            flat[1] = info.min
            flat[2] = info.max
        return v
    v = rng.choice(np.array([-3.5, -1.0, 0.25, 2.0, 7.0, 100.0]), shape)
    v = v + rng.integers(-2, 3, shape)  # few distinct values: ties
    if specials and v.size >= 8:
        flat = v.reshape(-1)
        picks = rng.choice(flat.size, 6, replace=False)
        flat[picks] = [np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0]
    return v.astype(dtype)


def ref_argsort(x: np.ndarray, axis: int | None = -1) -> np.ndarray:
    """NumPy's stable argsort (bfloat16 through float32, where its order is NumPy's)."""
    host = x.astype(np.float32) if x.dtype == BF16 else x
    return np.argsort(host, axis=axis, kind="stable")


def ref_sort(x: np.ndarray, axis: int | None = -1) -> np.ndarray:
    if axis is None:
        x, axis = x.reshape(-1), 0
    return np.take_along_axis(x, ref_argsort(x, axis), axis=axis)


def same(got: gp.GPUArray, expected: np.ndarray) -> None:
    """Equal dtype, shape and values (NaN == NaN, -0.0 == +0.0)."""
    host = got.to_numpy()
    assert host.dtype == expected.dtype, (host.dtype, expected.dtype)
    assert host.shape == expected.shape, (host.shape, expected.shape)
    if host.dtype == BF16:
        host, expected = host.astype(np.float32), expected.astype(np.float32)
    np.testing.assert_array_equal(host, expected)


# -- sort / argsort ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,axis", [((0,), -1), ((1,), -1), ((37,), 0), ((5, 33), -1),
                                        ((5, 33), 0), ((3, 4, 6), 1), ((2, 0, 3), 1),
                                        ((4, 5), None), ((3, 1024), -1), ((2, 1025), 1)])
def test_sort_and_argsort_match_numpy(backend: str, dtype: np.dtype[Any],
                                      shape: tuple[int, ...], axis: int | None) -> None:
    x = data(shape, dtype, seed=len(shape) + (axis or 0))
    g = gp.from_numpy(x)
    same(gp.sort(g, axis=axis), ref_sort(x, axis))
    same(gp.argsort(g, axis=axis), ref_argsort(x, axis))


@pytest.mark.parametrize("dtype", [np.dtype(np.int8), np.dtype(np.float32),
                                   np.dtype(np.float64), np.dtype(np.int64), BF16], ids=str)
def test_sort_of_views(backend: str, dtype: np.dtype[Any]) -> None:
    """Negative strides, transposes and strided slices, along every axis."""
    x = data((9, 14), dtype, seed=3)
    g = gp.from_numpy(x)
    for view, host in [(g[::-1], x[::-1]), (g.T, x.T), (g[:, ::-3], x[:, ::-3]),
                       (g[::2, 1:], x[::2, 1:])]:
        assert not view.is_contiguous() or view is g
        for axis in (0, 1, -1):
            same(gp.sort(view, axis=axis), ref_sort(host, axis))
            same(gp.argsort(view, axis=axis), ref_argsort(host, axis))


def test_argsort_is_stable_over_many_equal_keys(backend: str) -> None:
    rng = np.random.default_rng(7)
    x = rng.integers(0, 3, 100_000).astype(np.int32)
    expected = np.argsort(x, kind="stable")
    same(gp.argsort(gp.from_numpy(x)), expected)
    rows = rng.integers(0, 2, (64, 777)).astype(np.float16)
    same(gp.argsort(gp.from_numpy(rows), axis=1), np.argsort(rows, axis=1, kind="stable"))
    same(gp.argsort(gp.from_numpy(rows), axis=0), np.argsort(rows, axis=0, kind="stable"))


def test_nan_and_signed_zero_placement(backend: str) -> None:
    x = np.array([np.nan, 1.0, -0.0, -np.inf, 0.0, -np.nan, np.inf, -1.0, 0.0, -0.0],
                 np.float32)
    g = gp.from_numpy(x)
    got = gp.sort(g).to_numpy()
    np.testing.assert_array_equal(got, np.sort(x))
    assert np.isnan(got[-2:]).all() and not np.isnan(got[:-2]).any()
    # -0.0 and +0.0 are equal keys: a stable argsort keeps their order, as NumPy's
    same(gp.argsort(g), np.argsort(x, kind="stable"))
    for dtype in FLOATS:
        xd = x.astype(dtype)
        same(gp.argsort(gp.from_numpy(xd)), ref_argsort(xd))


def test_argsort_of_rows_of_8_byte_keys(backend: str) -> None:
    """Rows of 8-byte keys take two stable passes on the GPU (no room for the row id)."""
    rng = np.random.default_rng(11)
    x = rng.integers(-5, 5, (300, 257)).astype(np.int64)
    x[7, :] = 2**62
    x[8, :] = -(2**63)
    same(gp.argsort(gp.from_numpy(x), axis=1), np.argsort(x, axis=1, kind="stable"))
    same(gp.sort(gp.from_numpy(x), axis=1), np.sort(x, axis=1))
    y = x.astype(np.float64) / 3
    same(gp.sort(gp.from_numpy(y), axis=1), np.sort(y, axis=1))


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int16)], ids=str)
def test_sort_of_2_to_the_20(backend: str, dtype: np.dtype[Any]) -> None:
    x = data((1 << 20,), dtype, seed=5)
    g = gp.from_numpy(x)
    same(gp.sort(g), ref_sort(x))
    same(gp.argsort(g), ref_argsort(x))
    rows = x.reshape(256, 4096)
    same(gp.sort(gp.from_numpy(rows), axis=1), ref_sort(rows, 1))


def test_methods(backend: str) -> None:
    x = data((6, 7), np.dtype(np.float32), seed=2)
    g = gp.from_numpy(x)
    same(g.argsort(axis=0), ref_argsort(x, 0))
    same(g.cumsum(axis=1), np.cumsum(x, axis=1))
    same(g.cumprod(), np.cumprod(x))
    view = g[:, ::-1]
    view.sort(axis=1)  # in place, as numpy.ndarray.sort
    expected = x.copy()
    expected[:, ::-1] = np.sort(x[:, ::-1], axis=1)
    same(g, expected)


def test_sort_error_cases(backend: str) -> None:
    g = gp.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds"):
        gp.sort(g, axis=2)
    with pytest.raises(np.exceptions.AxisError, match="-3"):
        gp.argsort(g, axis=-3)
    scalar = gp.from_numpy(np.array(1.0, np.float32))
    with pytest.raises(np.exceptions.AxisError):
        gp.sort(scalar)
    same(gp.sort(scalar, axis=None), np.sort(np.array(1.0, np.float32), axis=None))
    same(gp.argsort(scalar), np.argsort(np.array(1.0, np.float32)))  # [0], as NumPy
    same(gp.cumsum(scalar, axis=0), np.cumsum(np.array(1.0, np.float32), axis=0))
    with pytest.raises(TypeError, match="axis must be an int"):
        gp.sort(g, axis=1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="x must be a GPUArray"):
        gp.sort(np.arange(3))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kind"):
        gp.sort(g, kind="bogus")
    with pytest.raises(TypeError, match="stable"):
        gp.argsort(g, stable="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at the same time"):
        gp.sort(g, kind="stable", stable=True)
    same(gp.argsort(g, kind="quicksort"), np.argsort(g.to_numpy(), kind="stable"))
    # AxisError is numpy's: both a ValueError and an IndexError
    with pytest.raises(ValueError):
        gp.cumsum(g, axis=5)


# -- topk ----------------------------------------------------------------------------------------


def ranks(x: np.ndarray) -> np.ndarray:
    """Dense rank of each element in NumPy's order (NaNs largest and equal, -0.0 == +0.0)."""
    host = x.astype(np.float32) if x.dtype == BF16 else x
    _, inverse = np.unique(host, return_inverse=True)
    result: np.ndarray = inverse.reshape(x.shape).astype(np.int64)
    return result


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int8), BF16,
                                   np.dtype(np.float64), np.dtype(np.bool_)], ids=str)
@pytest.mark.parametrize("largest", [True, False])
def test_topk(backend: str, dtype: np.dtype[Any], largest: bool) -> None:
    """Descending (NaN first) or ascending (NaN last); ties keep the lower index first."""
    x = data((6, 40), dtype, seed=9)
    g = gp.from_numpy(x)
    rank = ranks(x)
    for axis, k in ((1, 5), (0, 6), (1, 0), (-1, 40)):
        values, indices = gp.topk(g, k, axis=axis, largest=largest)
        order = np.argsort(-rank if largest else rank, axis=axis, kind="stable")
        order = np.take(order, np.arange(k), axis=axis)
        same(indices, order)
        same(values, np.take_along_axis(x, order, axis=axis))


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float16),
                                   np.dtype(np.int32), np.dtype(np.int8), np.dtype(np.bool_)],
                         ids=str)
@pytest.mark.parametrize("cols", [3000, 40_000, 70_000])
def test_topk_of_long_rows(backend: str, dtype: np.dtype[Any], cols: int) -> None:
    """Rows held in shared memory on the GPU (a select, then a sort of k) and rows too long for
    it (the radix sort): the same first k, ties in index order, NaN placement as a sort."""
    x = data((3, cols), dtype, seed=cols)
    g = gp.from_numpy(x)
    rank = ranks(x)
    for k in (1, 64, 1000, 1024):
        for largest in (True, False):
            values, indices = gp.topk(g, k, largest=largest)
            order = np.argsort(-rank if largest else rank, axis=1, kind="stable")[:, :k]
            same(indices, order)
            same(values, np.take_along_axis(x, order, axis=1))


@pytest.mark.gpu
@pytest.mark.usefixtures("cuda_backend")
def test_topk_of_rows_in_shared_memory_takes_no_sort_workspace() -> None:
    """A top-k the select kernel serves allocates its outputs only (the radix sort's workspace
    for these rows would be ~100 MiB); a full sort of the same rows does take a workspace."""
    x = data((256, 16384), np.dtype(np.float32), seed=3, specials=False)
    g = gp.from_numpy(x)
    gp.synchronize()
    before = gp.memory_stats()["allocated_bytes"]
    gp.reset_peak_memory_stats()
    values, indices = gp.topk(g, 64)
    gp.synchronize()
    outputs = 256 * 64 * (4 + 8)
    assert gp.memory_stats()["peak_allocated_bytes"] - before <= outputs + (1 << 20)
    order = np.argsort(-x, axis=1, kind="stable")[:, :64]
    same(indices, order)
    same(values, np.take_along_axis(x, order, axis=1))
    del values, indices
    gp.reset_peak_memory_stats()
    gp.sort(g, axis=-1)
    gp.synchronize()
    assert gp.memory_stats()["peak_allocated_bytes"] - before > 2 * x.nbytes


def test_topk_errors(backend: str) -> None:
    g = gp.from_numpy(np.arange(5, dtype=np.float32))
    with pytest.raises(ValueError, match="k must be in"):
        gp.topk(g, 6)
    with pytest.raises(TypeError, match="k must be an int"):
        gp.topk(g, 2.0)  # type: ignore[arg-type]
    with pytest.raises(np.exceptions.AxisError):
        gp.topk(g, 1, axis=1)


# -- cumsum / cumprod / diff ---------------------------------------------------------------------


def _expected_scan_dtype(fn: Any, x: np.ndarray) -> np.dtype[Any]:
    dtype = fn(x[:0]).dtype
    return np.dtype(np.int64) if dtype == np.uint64 else dtype


def check_scan(got: gp.GPUArray, x: np.ndarray, fn: Any, axis: int | None,
               dtype: Any = None, tol: float | None = None) -> None:
    expected_dtype = np.dtype(dtype) if dtype is not None else _expected_scan_dtype(fn, x)
    host = got.to_numpy()
    assert host.dtype == expected_dtype
    if expected_dtype.kind in "biu":
        with np.errstate(all="ignore"):
            exact = fn(x.astype(np.int64) if x.dtype != np.bool_ or dtype is None else x,
                       axis=axis).astype(expected_dtype)
        if dtype is not None and np.dtype(dtype) != np.bool_:
            exact = fn(x.astype(dtype), axis=axis, dtype=np.int64).astype(dtype)
        np.testing.assert_array_equal(host, exact)
        return
    with np.errstate(all="ignore"):
        exact = fn(x.astype(np.float64), axis=axis)
    t = tol if tol is not None else SCAN_TOL[expected_dtype]
    assert host.shape == exact.shape
    np.testing.assert_allclose(host.astype(np.float64), exact, rtol=t, atol=t, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,axis", [((0,), None), ((1,), 0), ((50,), None), ((7, 30), 1),
                                        ((7, 30), 0), ((2, 3, 40), -2), ((3, 4), None)])
def test_cumsum_cumprod(backend: str, dtype: np.dtype[Any], shape: tuple[int, ...],
                        axis: int | None) -> None:
    rng = np.random.default_rng(1)
    if dtype.kind == "f" or dtype == BF16:
        x = rng.uniform(0.5, 1.5, shape).astype(dtype)  # positive: no cancellation
    else:
        x = data(shape, dtype, specials=False)
    g = gp.from_numpy(x)
    check_scan(gp.cumsum(g, axis=axis), x, np.cumsum, axis)
    check_scan(gp.cumprod(g, axis=axis), x, np.cumprod, axis)


def test_cumsum_integer_wraps_as_numpy(backend: str) -> None:
    x = np.array([2**62, 2**62, 2**62, -5], np.int64)
    same(gp.cumsum(gp.from_numpy(x)), np.cumsum(x))
    y = np.full(100, 7, np.int8)
    same(gp.cumsum(gp.from_numpy(y)), np.cumsum(y))  # int64: no wrap at 127
    same(gp.cumprod(gp.from_numpy(y)), np.cumprod(y))  # int64 wraps, as NumPy's
    same(gp.cumsum(gp.from_numpy(y), dtype=np.int8), np.cumsum(y, dtype=np.int8))
    b = np.array([True, False, True, True])
    same(gp.cumsum(gp.from_numpy(b)), np.cumsum(b))
    z = np.array([1, -1, 0, 2], np.int32)
    same(gp.cumsum(gp.from_numpy(z), dtype=bool), np.cumsum(z, dtype=bool))
    same(gp.cumsum(gp.from_numpy(z), dtype=np.float32), np.cumsum(z, dtype=np.float32))


def test_cumsum_of_views_and_2_to_the_20(backend: str) -> None:
    rng = np.random.default_rng(4)
    x = rng.uniform(0.5, 1.5, (64, 48)).astype(np.float32)
    g = gp.from_numpy(x)
    for view, host in [(g[::-1], x[::-1]), (g.T, x.T), (g[:, ::5], x[:, ::5])]:
        for axis in (0, 1, None):
            check_scan(gp.cumsum(view, axis=axis), host, np.cumsum, axis)
    big = rng.uniform(0.5, 1.5, 1 << 20).astype(np.float32)
    check_scan(gp.cumsum(gp.from_numpy(big)), big, np.cumsum, None, tol=1e-3)
    big64 = big.astype(np.float64)
    check_scan(gp.cumsum(gp.from_numpy(big64)), big64, np.cumsum, None, tol=1e-9)
    ints = rng.integers(-1000, 1000, 1 << 20).astype(np.int32)
    same(gp.cumsum(gp.from_numpy(ints)), np.cumsum(ints))
    rows = ints.reshape(2048, 512)  # many rows: one block per row on the GPU
    same(gp.cumsum(gp.from_numpy(rows), axis=1), np.cumsum(rows, axis=1))
    few = ints.reshape(4, 1 << 18)  # few long rows: one device-wide scan per row
    same(gp.cumsum(gp.from_numpy(few), axis=1), np.cumsum(few, axis=1))


@pytest.mark.parametrize("offset", [0, 3])
def test_float32_cumsum_of_a_long_row(backend: str, offset: int) -> None:
    """float32 cumsum of a row of ~21M elements (thousands of single-pass scan tiles on the GPU),
    close to the float64 sums; a view 3 elements in (off the 16-byte grid) too.  Not compared
    bit for bit between calls: the GPU's decoupled look-back may round differently per run."""
    n = 5 * (1 << 22) + 123
    x = np.random.default_rng(9).uniform(0.5, 1.5, n + offset).astype(np.float32)
    g = gp.from_numpy(x)[offset:]
    check_scan(gp.cumsum(g), x[offset:], np.cumsum, None, tol=1e-3)


@pytest.mark.parametrize("n", [4095, 4096, 4097, 3 * 4096 + 1, 65536 * 3 + 5])
def test_float32_cumsum_around_scan_tiles(backend: str, n: int) -> None:
    """float32 sums at the GPU scan's tile boundaries (4096 elements on sm_90), one row and a
    few long rows (one device-wide scan per row)."""
    x = np.random.default_rng(n).uniform(-1.0, 1.5, n).astype(np.float32)
    check_scan(gp.cumsum(gp.from_numpy(x)), x, np.cumsum, None, tol=1e-3)
    rows = np.random.default_rng(1).uniform(0.5, 1.5, (3, n)).astype(np.float32)
    check_scan(gp.cumsum(gp.from_numpy(rows), axis=1), rows, np.cumsum, 1, tol=1e-3)


def test_scan_errors(backend: str) -> None:
    g = gp.from_numpy(np.arange(4, dtype=np.int32))
    with pytest.raises(TypeError, match="dtype"):
        gp.cumsum(g, dtype="uint32")
    with pytest.raises(np.exceptions.AxisError):
        gp.cumprod(g, axis=1)
    with pytest.raises(TypeError):
        gp.cumsum([1, 2])  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_diff(backend: str, dtype: np.dtype[Any]) -> None:
    x = data((5, 9), dtype, seed=8, specials=False)
    g = gp.from_numpy(x)
    with np.errstate(all="ignore"):
        for n, axis in ((1, -1), (2, 0), (3, 1), (0, 0), (9, 1), (12, 1)):
            expected = np.diff(x, n=n, axis=axis)
            got = gp.diff(g, n=n, axis=axis)
            same(got, expected)
    same(gp.diff(g[::-1, ::2], axis=0), np.diff(x[::-1, ::2], axis=0))


def test_diff_errors(backend: str) -> None:
    g = gp.from_numpy(np.arange(4, dtype=np.int32))
    with pytest.raises(ValueError, match="non-negative"):
        gp.diff(g, n=-1)
    with pytest.raises(ValueError, match="at least one dimensional"):
        gp.diff(g[0])
    with pytest.raises(np.exceptions.AxisError):
        gp.diff(g, axis=1)


# -- searchsorted --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(backend: str, dtype: np.dtype[Any], side: str) -> None:
    a = ref_sort(data((60,), dtype, seed=12))
    v = data((4, 25), dtype, seed=13)
    host_a = a.astype(np.float32) if dtype == BF16 else a
    host_v = v.astype(np.float32) if dtype == BF16 else v
    expected = np.searchsorted(host_a, host_v, side=side)  # type: ignore[call-overload]
    same(gp.searchsorted(gp.from_numpy(a), gp.from_numpy(v), side=side), expected)
    # with a sorter, on the unsorted array
    raw = data((60,), dtype, seed=12)
    sorter = ref_argsort(raw)
    host_raw = raw.astype(np.float32) if dtype == BF16 else raw
    expected = np.searchsorted(host_raw, host_v, side=side,  # type: ignore[call-overload]
                               sorter=sorter)
    same(gp.searchsorted(gp.from_numpy(raw), gp.from_numpy(v), side=side,
                         sorter=gp.from_numpy(sorter)), expected)


def test_searchsorted_scalars_and_mixed_dtypes(backend: str) -> None:
    a = np.array([1, 3, 3, 5, 9], np.int32)
    g = gp.from_numpy(a)
    got = gp.searchsorted(g, 3)
    assert got.shape == () and got.item() == 1
    assert gp.searchsorted(g, 3, side="right").item() == 3
    same(gp.searchsorted(g, [0.5, 3.0, 9.5]), np.searchsorted(a, [0.5, 3.0, 9.5]))
    same(gp.searchsorted(gp.from_numpy(a[:0]), gp.from_numpy(a)), np.zeros(5, np.int64))
    with pytest.raises(ValueError, match="side"):
        gp.searchsorted(g, 3, side="middle")
    with pytest.raises(ValueError, match="1-D"):
        gp.searchsorted(gp.from_numpy(a.reshape(5, 1)), 3)
    with pytest.raises(ValueError, match="out of range"):
        gp.searchsorted(g, 3, sorter=gp.from_numpy(np.array([0, 1, 2, 3, 5])))
    with pytest.raises(TypeError, match="v must be"):
        gp.searchsorted(g, "3")


# -- unique / bincount / histogram ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(0,), (1,), (200,), (7, 11)])
def test_unique(backend: str, dtype: np.dtype[Any], shape: tuple[int, ...]) -> None:
    x = data(shape, dtype, seed=21)
    host = x.astype(np.float32) if dtype == BF16 else x
    u, index, inverse, counts = np.unique(host, return_index=True, return_inverse=True,
                                          return_counts=True)
    g = gp.from_numpy(x)
    got = gp.unique(g, return_index=True, return_inverse=True, return_counts=True)
    assert isinstance(got, tuple) and len(got) == 4
    same(got[0], u.astype(dtype))
    same(got[1], index.astype(np.int64))
    same(got[2], inverse.astype(np.int64).reshape(x.shape))  # NumPy 2: x's shape
    same(got[3], counts.astype(np.int64))
    same(gp.unique(g), u.astype(dtype))
    only_counts = gp.unique(g, return_counts=True)
    same(only_counts[1], counts.astype(np.int64))


def test_unique_collapses_nans(backend: str) -> None:
    x = np.array([np.nan, 1.0, np.nan, -0.0, 0.0, 1.0], np.float64)
    got = gp.unique(gp.from_numpy(x), return_counts=True)
    np.testing.assert_array_equal(got[0].to_numpy(), [0.0, 1.0, np.nan])
    np.testing.assert_array_equal(got[1].to_numpy(), [2, 2, 2])
    with pytest.raises(ValueError, match="axis=None"):
        gp.unique(gp.from_numpy(x), axis=0)


@pytest.mark.parametrize("dtype", [np.dtype(np.bool_), *INTS], ids=str)
def test_bincount(backend: str, dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(31)
    x = rng.integers(0, 2 if dtype == np.bool_ else 50, 500).astype(dtype)
    g = gp.from_numpy(x)
    same(gp.bincount(g), np.bincount(x))
    same(gp.bincount(g, minlength=80), np.bincount(x, minlength=80))
    w = rng.uniform(-1, 1, 500)
    got = gp.bincount(g, weights=gp.from_numpy(w)).to_numpy()
    np.testing.assert_allclose(got, np.bincount(x, weights=w), rtol=1e-12, atol=1e-12)
    assert got.dtype == np.float64
    same(gp.bincount(gp.from_numpy(x[:0]), minlength=3), np.bincount(x[:0], minlength=3))


def test_bincount_errors(backend: str) -> None:
    with pytest.raises(ValueError, match="negative"):
        gp.bincount(gp.from_numpy(np.array([1, -1, 2], np.int32)))
    with pytest.raises(TypeError, match="cannot cast"):
        gp.bincount(gp.from_numpy(np.array([1.0, 2.0], np.float32)))
    with pytest.raises(ValueError, match="minlength"):
        gp.bincount(gp.from_numpy(np.array([1], np.int32)), minlength=-1)
    with pytest.raises(ValueError, match="1-D"):
        gp.bincount(gp.from_numpy(np.zeros((2, 2), np.int32)))


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64),
                                   np.dtype(np.int32), np.dtype(np.uint8),
                                   np.dtype(np.float16)], ids=str)
def test_histogram(backend: str, dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(41)
    x = (rng.normal(0, 20, 3000) if dtype.kind == "f" else rng.integers(0, 200, 3000))
    x = x.astype(dtype)
    g = gp.from_numpy(x)
    for bins, value_range in ((10, None), (7, (-10, 30)), (1, None), (33, (0, 0))):
        hist, edges = gp.histogram(g, bins=bins, range=value_range)
        eh, ee = np.histogram(x, bins=bins, range=value_range)
        same(edges, ee)
        same(hist, eh.astype(np.int64))
    edges_in = np.array([-50.0, -3.0, 0.0, 0.5, 17.0, 90.0])
    hist, edges = gp.histogram(g, bins=gp.from_numpy(edges_in))
    same(hist, np.histogram(x, bins=edges_in)[0].astype(np.int64))
    w = rng.uniform(0, 2, 3000)
    hist, _ = gp.histogram(g, bins=5, weights=gp.from_numpy(w))
    np.testing.assert_allclose(hist.to_numpy(), np.histogram(x, bins=5, weights=w)[0],
                               rtol=1e-12, atol=1e-11)


def test_histogram_nan_and_errors(backend: str) -> None:
    x = np.array([1.0, np.nan, 2.0, 3.0], np.float32)
    g = gp.from_numpy(x)
    with pytest.raises(ValueError, match="not finite"):
        gp.histogram(g)
    hist, _ = gp.histogram(g, bins=2, range=(0, 4))
    same(hist, np.histogram(x, bins=2, range=(0, 4))[0].astype(np.int64))
    with pytest.raises(ValueError, match="monotonically"):
        gp.histogram(g, bins=[1.0, 0.0, 2.0])
    with pytest.raises(ValueError, match="positive"):
        gp.histogram(g, bins=0)
    with pytest.raises(ValueError, match="larger than min"):
        gp.histogram(g, bins=2, range=(3, 1))
    hist, edges = gp.histogram(gp.from_numpy(x[:0]))
    eh, ee = np.histogram(x[:0])
    same(hist, eh.astype(np.int64))
    same(edges, ee)


# -- more than 2^31 elements (GPU) ---------------------------------------------------------------


@pytest.mark.gpu
def test_sort_of_more_than_2_to_the_31_int8() -> None:
    """int8 sort of 2^31 + 1000 elements: 64-bit sizes end to end (~9 GiB of device memory)."""
    if not gp.is_cuda_available():
        pytest.skip("needs the CUDA backend")
    import pygpukit_driver as drv

    assert gp.backend() == "cuda"
    free, _ = drv.mem_get_info()
    if free < 16 * 2**30:
        pytest.skip(f"needs 16 GiB of free device memory; {free / 2**30:.1f} GiB free")
    n = 2**31 + 1000
    pattern = (np.arange(256 * 7 + 13, dtype=np.int64) * 37 % 256 - 128).astype(np.int8)
    x = np.resize(pattern, n)
    counts = np.bincount(x.view(np.uint8) ^ np.uint8(0x80), minlength=256)  # by value + 128
    g = gp.from_numpy(x)
    del x
    result = gp.sort(g).to_numpy()
    del g
    gp.empty_cache()
    assert result.shape == (n,)
    expected = np.repeat(np.arange(-128, 128, dtype=np.int8), counts)
    assert np.array_equal(result, expected)


@pytest.mark.gpu
def test_float32_cumsum_of_more_than_2_to_the_31() -> None:
    """float32 cumsum of 2^31 + 1000 elements: 64-bit offsets in the single-pass scan (~17 GiB
    of device memory).  Mostly zeros with a few ones, so every partial sum is a small integer:
    exact in any summation order."""
    if not gp.is_cuda_available():
        pytest.skip("needs the CUDA backend")
    import pygpukit_driver as drv

    assert gp.backend() == "cuda"
    gp.zeros((1,))  # the device's primary context is current from here on
    gp.empty_cache()
    free, _ = drv.mem_get_info()
    if free < 24 * 2**30:
        pytest.skip(f"needs 24 GiB of free device memory; {free / 2**30:.1f} GiB free")
    n = 2**31 + 1000
    ones = [0, 4095, 4096, 2**27 + 3, 2**30, 2**31 - 1, 2**31 + 999]
    g = gp.zeros((n,), gp.float32)
    for i in ones:
        g[i] = 1.0
    got = gp.cumsum(g)
    del g
    for i in [0, 1, 4095, 4096, 4097, 2**27 + 2, 2**27 + 3, 2**30 + 5, 2**31 - 2, 2**31 - 1,
              2**31, n - 2, n - 1]:
        assert float(got[i].to_numpy()) == sum(1 for j in ones if j <= i), i
    del got
    gp.empty_cache()
