"""Creation, transfer and add, identical on the CPU simulation and the CUDA backend."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import pygpukit as gp

ALL_DTYPES = [
    np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64,
    np.float16, ml_dtypes.bfloat16, np.float32, np.float64,
]


def random_array(shape: tuple[int, ...], dtype: Any, seed: int = 0) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    values = np.asarray(rng.standard_normal(shape) * 50)
    if np.dtype(dtype) == np.bool_:
        return np.asarray(values > 0)
    return values.astype(dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (3, 5), (2, 0, 4), (33, 17, 3)])
def test_round_trip_is_exact(backend: str, dtype: Any, shape: tuple[int, ...]) -> None:
    host = random_array(shape, dtype, seed=len(shape))
    arr = gp.from_numpy(host)
    assert arr.shape == shape
    assert arr.dtype == np.dtype(dtype)
    assert arr.size == host.size and arr.nbytes == host.nbytes and arr.ndim == host.ndim
    back = arr.to_numpy()
    assert back.dtype == host.dtype
    assert back.shape == host.shape
    np.testing.assert_array_equal(back.reshape(-1).view(np.uint8), host.reshape(-1).view(np.uint8))


def test_bfloat16_comes_back_as_ml_dtypes(backend: str) -> None:
    host = np.array([1.5, -2.25, 3e38], dtype=ml_dtypes.bfloat16)
    back = gp.from_numpy(host).to_numpy()
    assert back.dtype == np.dtype(ml_dtypes.bfloat16)
    assert back.astype(np.float32).tolist() == host.astype(np.float32).tolist()


def test_non_contiguous_input_is_copied_in_logical_order(backend: str) -> None:
    host = random_array((6, 9), np.float32)
    view = host.T[::2]
    np.testing.assert_array_equal(gp.from_numpy(view).to_numpy(), view)


def test_source_can_change_after_from_numpy(backend: str) -> None:
    host = random_array((1000,), np.float32)
    expected = host.copy()
    arr = gp.from_numpy(host)
    host[:] = 0
    np.testing.assert_array_equal(arr.to_numpy(), expected)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("maker, value", [(gp.zeros, 0), (gp.ones, 1)])
def test_zeros_and_ones(backend: str, dtype: Any, maker: Any, value: int) -> None:
    arr = maker((5, 3001), dtype=dtype)
    assert arr.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(arr.to_numpy(), np.full((5, 3001), value, dtype=dtype))


def test_default_dtype_and_int_shape(backend: str) -> None:
    arr = gp.zeros(10)
    assert arr.shape == (10,) and arr.dtype == gp.float32
    assert gp.empty((2, 3), "bfloat16").dtype == gp.bfloat16
    assert gp.ones((2,), dtype="float16").dtype == np.float16


def test_empty_has_the_requested_layout(backend: str) -> None:
    arr = gp.empty((4, 0, 2), gp.int64)
    assert arr.shape == (4, 0, 2) and arr.size == 0 and arr.to_numpy().shape == (4, 0, 2)


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 1023, 100_003])
def test_add_matches_numpy_exactly(backend: str, n: int) -> None:
    x, y = random_array((n,), np.float32, 1), random_array((n,), np.float32, 2)
    np.testing.assert_array_equal(gp.add(gp.from_numpy(x), gp.from_numpy(y)).to_numpy(), x + y)
    np.testing.assert_array_equal((gp.from_numpy(x) + gp.from_numpy(y)).to_numpy(), x + y)


def test_add_multidimensional_and_out(backend: str) -> None:
    x, y = random_array((37, 29), np.float32, 3), random_array((37, 29), np.float32, 4)
    gx, gy = gp.from_numpy(x), gp.from_numpy(y)
    out = gp.empty((37, 29))
    assert gp.add(gx, gy, out=out) is out
    np.testing.assert_array_equal(out.to_numpy(), x + y)
    gp.add(gx, gy, out=gx)  # in place, aliasing an operand
    np.testing.assert_array_equal(gx.to_numpy(), x + y)


def test_add_on_unaligned_sizes_and_chains(backend: str) -> None:
    x = random_array((4099,), np.float32, 5)
    acc = gp.from_numpy(x)
    for _ in range(5):
        acc = acc + gp.from_numpy(x)
    expected = x.copy()
    for _ in range(5):
        expected = expected + x
    np.testing.assert_array_equal(acc.to_numpy(), expected)
    gp.synchronize()


def test_add_rejects_bad_operands(backend: str) -> None:
    a = gp.ones((4,))
    with pytest.raises(ValueError, match=r"broadcast together with shapes \(4,\) \(5,\)"):
        gp.add(a, gp.ones((5,)))
    assert gp.add(a, gp.ones((4,), gp.float64)).dtype == np.float64  # NumPy's promotion
    with pytest.raises(TypeError, match="GPUArrays or bool/int/float scalars; got ndarray"):
        gp.add(a, np.ones(4, np.float32))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="broadcast"):
        gp.add(a, a, out=gp.empty((3,)))
    with pytest.raises(TypeError, match="out must be a GPUArray"):
        gp.add(a, a, out=np.empty(4))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _ = a + "1"  # type: ignore[operator]


def test_no_implicit_host_conversion(backend: str) -> None:
    with pytest.raises(TypeError, match=r"to_numpy\(\)"):
        np.asarray(gp.zeros((2,)))
    with pytest.raises(TypeError):
        np.add(np.ones(2, np.float32), gp.zeros((2,)))


def test_bad_arguments_are_named(backend: str) -> None:
    with pytest.raises(TypeError, match="dtype: expected one of"):
        gp.zeros((2,), dtype="uint32")
    with pytest.raises(TypeError, match="dtype: expected one of"):
        gp.zeros((2,), dtype="not-a-dtype")
    with pytest.raises(ValueError, match="dimensions must be >= 0"):
        gp.empty((2, -1))
    with pytest.raises(TypeError, match="shape: expected an int or a sequence of ints"):
        gp.empty((2.5,))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"array: expected a numpy.ndarray; got list"):
        gp.from_numpy([1.0, 2.0])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"array\.dtype: expected one of"):
        gp.from_numpy(np.zeros(2, np.uint64))


def test_array_metadata(backend: str) -> None:
    arr = gp.zeros((3, 4), gp.float16)
    assert (arr.ndim, arr.size, arr.itemsize, arr.nbytes, len(arr)) == (2, 12, 2, 24, 3)
    assert arr.backend == backend
    assert repr(arr) == f"GPUArray(shape=(3, 4), dtype=float16, device={backend}:0)"
    with pytest.raises(TypeError, match="len"):
        len(gp.zeros(()))
