"""Creation functions against NumPy, on both backends."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import pygpukit as gp

ALL = [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64, np.float16,
       ml_dtypes.bfloat16, np.float32, np.float64]


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: np.dtype(d).name)
def test_full_and_likes(backend: str, dtype: Any) -> None:
    value = 3 if np.dtype(dtype).kind != "b" else True
    arr = gp.full((3, 5), value, dtype)
    np.testing.assert_array_equal(arr.to_numpy(), np.full((3, 5), value, dtype))
    for fn, expected in [(gp.zeros_like, 0), (gp.ones_like, 1)]:
        like = fn(arr)
        assert like.dtype == arr.dtype and like.shape == arr.shape
        np.testing.assert_array_equal(like.to_numpy(), np.full((3, 5), expected, dtype))
    assert gp.empty_like(arr, shape=(2,)).shape == (2,)
    np.testing.assert_array_equal(gp.full_like(arr, 0, dtype=np.float64).to_numpy(),
                                  np.zeros((3, 5)))


def test_full_infers_dtype_and_wraps_like_numpy(backend: str) -> None:
    assert gp.full(2, 1.5).dtype == gp.float32
    assert gp.full(2, 7).dtype == gp.int64
    assert gp.full(2, True).dtype == gp.bool_
    np.testing.assert_array_equal(gp.full(3, -1, gp.uint8).to_numpy(), np.full(3, 255, np.uint8))
    np.testing.assert_array_equal(gp.full(3, np.nan, gp.bfloat16).to_numpy().astype(np.float32),
                                  np.full(3, np.nan, np.float32))


@pytest.mark.parametrize(
    ("args", "dtype"),
    [((10,), None), ((2, 11, 3), None), ((5, -7, -2), None), ((0,), None), ((3, 3), None),
     ((0.0, 1.0, 0.1), None), ((-1.5, 2.0, 0.25), np.float64), ((10,), np.float16),
     ((1, 200, 7), np.uint8), ((0, 5), np.bool_), ((100,), ml_dtypes.bfloat16)],
    ids=repr,
)
def test_arange(backend: str, args: tuple[Any, ...], dtype: Any) -> None:
    got = gp.arange(*args, dtype=dtype)
    is_int = all(isinstance(a, int) for a in args)
    start, _stop, step = (0, args[0], 1) if len(args) == 1 else (
        (args[0], args[1], 1) if len(args) == 2 else args)
    n = len(np.arange(*args))
    ref = (np.arange(n, dtype=np.int64) * step + start) if is_int else (
        np.arange(n, dtype=np.float64) * step + start)
    want = np.dtype(dtype) if dtype is not None else (np.dtype(np.int64) if is_int else gp.float32)
    expected = (ref != 0) if want == np.bool_ else ref.astype(want)
    assert got.dtype == want
    np.testing.assert_array_equal(got.to_numpy(), expected)


def test_arange_errors(backend: str) -> None:
    with pytest.raises(ValueError, match="step must not be zero"):
        gp.arange(0, 5, 0)
    with pytest.raises(TypeError, match="must be an int or float"):
        gp.arange("3")  # type: ignore[arg-type]


@pytest.mark.parametrize("num", [0, 1, 2, 7, 1000])
@pytest.mark.parametrize("endpoint", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int32])
def test_linspace(backend: str, num: int, endpoint: bool, dtype: Any) -> None:
    got = gp.linspace(-2.5, 7.0, num, endpoint=endpoint, dtype=dtype)
    expected = np.linspace(-2.5, 7.0, num, endpoint=endpoint, dtype=dtype)
    np.testing.assert_array_equal(got.to_numpy(), expected)


@pytest.mark.parametrize(
    ("n", "m", "k"), [(4, None, 0), (3, 5, 1), (5, 3, -2), (2, 2, 5), (0, 0, 0)]
)
def test_eye(backend: str, n: int, m: Any, k: int) -> None:
    np.testing.assert_array_equal(gp.eye(n, m, k).to_numpy(), np.eye(n, m, k, dtype=np.float32))


def test_asarray_sources(backend: str) -> None:
    assert gp.asarray([1.0, 2.0]).dtype == gp.float32
    assert gp.asarray([1, 2]).dtype == gp.int64
    assert gp.asarray(3.0).shape == ()
    np.testing.assert_array_equal(gp.asarray([[1, 2], [3, 4]], dtype="int8").to_numpy(),
                                  np.array([[1, 2], [3, 4]], np.int8))
    host = np.arange(6, dtype=np.float64).reshape(2, 3)
    assert gp.asarray(host).dtype == gp.float64
    arr = gp.asarray(host)
    assert gp.asarray(arr) is arr
    assert gp.asarray(arr, dtype="float32").dtype == gp.float32
    with pytest.raises(TypeError, match="expected one of"):
        gp.asarray(np.array(["a"]))


def test_seed_basic_operations_block(backend: str) -> None:
    # The seed README's "Basic Operations" block, minus matmul (issue 05).
    x = gp.zeros((1024, 1024), dtype="float32")
    y = gp.ones((1024, 1024), dtype="float32")
    z = gp.add(x, y)
    arr = z.to_numpy()
    garr = gp.from_numpy(arr)
    assert garr.shape == (1024, 1024) and bool((garr.to_numpy() == 1).all())


def test_seed_bf16_astype_block(backend: str) -> None:
    arr = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    a_bf16 = gp.from_numpy(arr).astype(gp.bfloat16)
    result = a_bf16.astype(gp.float32)
    np.testing.assert_array_equal(result.to_numpy(),
                                  arr.astype(ml_dtypes.bfloat16).astype(np.float32))
