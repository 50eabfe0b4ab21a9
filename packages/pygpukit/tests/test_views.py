"""Views, indexing, reshape and assignment, checked against NumPy on both backends."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import pygpukit as gp


def rand(shape: tuple[int, ...], dtype: Any = np.float32, seed: int = 0) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    return np.asarray(rng.standard_normal(shape) * 20).astype(dtype)


KEYS = [
    0, -1, 2, slice(None), slice(1, None, 2), slice(None, None, -1), slice(5, 1, -2),
    (Ellipsis, 1), (None, 0), (1, Ellipsis, None), (slice(None), None, slice(0, 3)),
    (-2, slice(None, None, 3), 1), (), Ellipsis, (slice(2, 2),),
    # Tuples of slices only (dask's chunk getter takes a shortcut for them).
    (slice(1, 4), slice(None, None, -2)), (slice(0, 6), slice(3, 1), slice(None)),
    (slice(-100, 100), slice(None, None, 2), slice(1, 3, 1)), (slice(np.int64(1), None),),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_basic_indexing_matches_numpy(backend: str, key: Any) -> None:
    host = rand((6, 5, 4))
    arr = gp.from_numpy(host)
    view = arr[key]
    expected = host[key]
    assert view.shape == expected.shape
    assert view.strides == expected.strides or expected.size == 0
    np.testing.assert_array_equal(view.to_numpy(), expected)


def test_views_share_memory(backend: str) -> None:
    arr = gp.zeros((4, 6), gp.int32)
    view = arr[1:3, ::2]
    view[...] = 7
    expected = np.zeros((4, 6), np.int32)
    expected[1:3, ::2] = 7
    np.testing.assert_array_equal(arr.to_numpy(), expected)
    assert view.data_ptr == arr.data_ptr + 1 * arr.strides[0]


@pytest.mark.parametrize("bad", [(0, 0, 0, 0), 6, -7, (Ellipsis, Ellipsis)], ids=repr)
def test_bad_indices(backend: str, bad: Any) -> None:
    arr = gp.zeros((6, 5, 4))
    with pytest.raises(IndexError):
        arr[bad]


def test_invalid_index_items_raise_index_error(backend: str) -> None:
    # Advanced indexing is tested in test_indexing.py; what is no index at all says so.
    arr = gp.zeros((4,))
    with pytest.raises(IndexError, match="only integers, slices"):
        arr[1.5]
    with pytest.raises(IndexError, match="only integers, slices"):
        arr["a"]


def test_transpose_swapaxes_T(backend: str) -> None:
    host = rand((2, 3, 4))
    arr = gp.from_numpy(host)
    for got, expected in [
        (arr.T, host.T), (arr.transpose(1, 0, 2), host.transpose(1, 0, 2)),
        (arr.transpose((2, 0, 1)), host.transpose((2, 0, 1))),
        (arr.swapaxes(0, -1), host.swapaxes(0, -1)),
    ]:
        assert got.shape == expected.shape and got.strides == expected.strides
        assert not got.is_contiguous()
        np.testing.assert_array_equal(got.to_numpy(), expected)
    with pytest.raises(ValueError, match="don't match"):
        arr.transpose(0, 0, 1)
    with pytest.raises(IndexError, match="out of bounds"):
        arr.swapaxes(0, 3)


def test_squeeze_expand_dims(backend: str) -> None:
    host = rand((1, 3, 1, 2))
    arr = gp.from_numpy(host)
    assert arr.squeeze().shape == (3, 2)
    assert arr.squeeze(0).shape == (3, 1, 2)
    assert arr.squeeze((0, -2)).shape == (3, 2)
    with pytest.raises(ValueError, match="size not equal to one"):
        arr.squeeze(1)
    assert arr.expand_dims(0).shape == (1, 1, 3, 1, 2)
    assert arr.expand_dims((-1, 1)).shape == np.expand_dims(host, (-1, 1)).shape
    np.testing.assert_array_equal(arr.expand_dims(2).to_numpy(), np.expand_dims(host, 2))


@pytest.mark.parametrize(
    ("view", "new_shape"),
    [
        (lambda a: a, (4, 6)), (lambda a: a, (-1,)), (lambda a: a, (2, -1, 3)),
        (lambda a: a.T, (24,)), (lambda a: a[:, ::2], (12,)), (lambda a: a[::2], (2, 2, 3)),
        (lambda a: a[:, 1:4], (4, 3)), (lambda a: a.T[::-1], (6, 2, 2)),
    ],
)
def test_reshape_views_when_numpy_does(backend: str, view: Any, new_shape: Any) -> None:
    host = rand((4, 6))
    arr = gp.from_numpy(host)
    expected_view = view(host)
    got = view(arr).reshape(new_shape)
    expected = expected_view.reshape(new_shape)
    np.testing.assert_array_equal(got.to_numpy(), expected)
    numpy_shares = np.shares_memory(expected, host)
    assert (got._block is arr._block) == numpy_shares


def test_reshape_errors(backend: str) -> None:
    arr = gp.zeros((4, 6))
    with pytest.raises(ValueError, match="cannot reshape array of size 24 into shape"):
        arr.reshape(5, 5)
    with pytest.raises(ValueError, match="only specify one unknown"):
        arr.reshape(-1, -1)
    assert arr.reshape(2, 12).shape == arr.reshape((2, 12)).shape == (2, 12)
    assert arr.ravel().shape == (24,) and arr.flatten()._block is not arr._block


def test_ascontiguousarray(backend: str) -> None:
    host = rand((5, 7))
    arr = gp.from_numpy(host)
    assert gp.ascontiguousarray(arr) is arr
    t = gp.ascontiguousarray(arr.T)
    assert t.is_contiguous() and t.strides == (20, 4)
    np.testing.assert_array_equal(t.to_numpy(), host.T)
    np.testing.assert_array_equal(gp.ascontiguousarray(arr[::-1, ::3]).to_numpy(), host[::-1, ::3])


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (slice(None), 3.5), ((1, slice(None)), np.arange(7)), ((slice(None), 2), -1),
        ((slice(None, None, 2), slice(1, None, 3)), np.float64(2.25)),
        (Ellipsis, np.arange(7, dtype=np.int8)), ((0, 0), True),
        ((slice(None), slice(None)), [[1.0] * 7] * 5),
    ],
    ids=repr,
)
def test_setitem_broadcasts_and_casts(backend: str, key: Any, value: Any) -> None:
    host = rand((5, 7), np.float16)
    arr = gp.from_numpy(host)
    host[key] = value
    arr[key] = value
    np.testing.assert_array_equal(arr.to_numpy(), host)


def test_setitem_from_gpuarray_with_cast_and_overlap(backend: str) -> None:
    host = rand((8,), np.int32)
    arr = gp.from_numpy(host)
    arr[1:] = arr[:-1]  # overlapping source and destination
    host[1:] = host[:-1].copy()
    np.testing.assert_array_equal(arr.to_numpy(), host)
    other = gp.from_numpy(rand((8,), np.float64, 3))
    arr[::-1] = other
    host[::-1] = rand((8,), np.float64, 3).astype(np.int32)
    np.testing.assert_array_equal(arr.to_numpy(), host)
    with pytest.raises(ValueError, match=r"could not be broadcast|cannot broadcast"):
        arr[:3] = gp.zeros((2,))


@pytest.mark.parametrize("src", [np.float32, np.int64, np.uint8, np.bool_, ml_dtypes.bfloat16,
                                 np.float16, np.float64, np.int8, np.int16, np.int32])
@pytest.mark.parametrize("dst", [np.float32, np.int32, np.bool_, ml_dtypes.bfloat16, np.float64])
def test_astype_matches_numpy(backend: str, src: Any, dst: Any) -> None:
    host = rand((3, 33), np.float32, 5)
    if np.dtype(src).kind in "iu":
        host = np.clip(host, -100, 100)
        host = np.abs(host) if np.dtype(src).kind == "u" else host
    host = host.astype(src)
    arr = gp.from_numpy(host)
    got = arr.astype(dst)
    assert got.dtype == np.dtype(dst)
    np.testing.assert_array_equal(got.to_numpy(), host.astype(dst))
    np.testing.assert_array_equal(arr.T.astype(dst).to_numpy(), host.T.astype(dst))
    assert arr.astype(src, copy=False) is arr


def test_item_tolist_bool_float(backend: str) -> None:
    arr = gp.from_numpy(np.array([[1.5, 2.0], [3.0, -4.0]], np.float32))
    assert arr[1, 0].item() == 3.0 and isinstance(arr[1, 0].item(), float)
    assert arr.tolist() == [[1.5, 2.0], [3.0, -4.0]]
    assert float(arr[0, 1]) == 2.0 and int(arr[1, 1]) == -4 and bool(arr[0, 0])
    with pytest.raises(ValueError, match="size 1"):
        arr.item()
    with pytest.raises(ValueError, match="ambiguous"):
        bool(arr)
    assert [row.tolist() for row in arr] == [[1.5, 2.0], [3.0, -4.0]]
    assert "[[ 1.5" in str(arr)
