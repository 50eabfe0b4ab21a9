"""Advanced indexing and the functions built on it, against NumPy on both backends."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pygpukit as gp


def rand(shape: tuple[int, ...], dtype: Any = np.float32, seed: int = 0) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    return np.asarray(rng.standard_normal(shape) * 20).astype(dtype)


def on_device(key: Any) -> Any:
    """The key with every NumPy array in it moved to the device."""
    if isinstance(key, tuple):
        return tuple(on_device(k) for k in key)
    if isinstance(key, np.ndarray) and key.ndim > 0:
        return gp.from_numpy(key)
    return key


I = np.array  # noqa: E741 (short for the key table)

# Keys over an array of shape (6, 5, 4): NumPy's rules for where the index dims go.
KEYS: list[Any] = [
    I([0, 2, 5]),
    I([-1, -6, 3]),
    [1, 1, 0],
    I([[0, 1], [2, 3]]),
    (slice(None), I([4, 0, 1])),
    (Ellipsis, I([3, 0])),
    (I([0, 5]), I([1, 4])),                      # adjacent: (2, 4)
    (I([0, 5]), slice(None), I([1, 3])),          # separated: index dims first -> (2, 5)
    (slice(1, 4), I([[0], [4]]), I([1, 2, 3])),   # adjacent after a slice, broadcast (2, 3)
    (I([1, 2]), 3),                               # int counts as advanced: adjacent
    (1, slice(None), I([0, 2])),                  # int and array separated -> (2, 5)
    (None, I([2, 3]), None, slice(None, None, -1)),
    (I([0, 1]), None, I([1, 2])),                 # None between: separated
    (slice(None, None, -2), I([0, 0, 4]), 1),
    I([], dtype=np.int64),
    [],
    (I([], dtype=np.int64), I([], dtype=np.int64)),
    I([3]),
    (I([[1]]), I([[2]]), I([[3]])),
    (Ellipsis, I([1, 0]), slice(None)),
]


@pytest.mark.parametrize("device_indices", [False, True], ids=["host", "device"])
@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_integer_array_get_matches_numpy(backend: str, key: Any, device_indices: bool) -> None:
    host = rand((6, 5, 4))
    arr = gp.from_numpy(host)
    got = arr[on_device(key) if device_indices else key]
    expected = host[key]
    assert got.shape == expected.shape
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got.to_numpy(), expected)


@pytest.mark.parametrize("index_dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64])
def test_any_integer_index_dtype(backend: str, index_dtype: Any) -> None:
    host = rand((7, 3))
    index = np.array([6, 0, 2, 2], dtype=index_dtype)
    if index_dtype != np.uint8:
        index[0] = -1
    arr = gp.from_numpy(host)
    for key in (index, gp.from_numpy(index)):
        np.testing.assert_array_equal(arr[key].to_numpy(), host[index])
        np.testing.assert_array_equal(arr[:, key[1:3]].to_numpy(), host[:, index[1:3]])


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.float16, np.int32, np.float64])
def test_gather_every_element_size(backend: str, dtype: Any) -> None:
    host = rand((9, 4), dtype)
    idx = np.array([8, 1, 1, -9])
    arr = gp.from_numpy(host)
    np.testing.assert_array_equal(arr[gp.from_numpy(idx)].to_numpy(), host[idx])
    np.testing.assert_array_equal(arr[:, [3, 0]].to_numpy(), host[:, [3, 0]])


def test_one_device_index_array(backend: str) -> None:
    # a[idx] / a[idx] = v with one integer GPUArray (the parser's fast path): views, dtypes,
    # an index sharing the target's memory, empty and out-of-range indices.
    host = rand((6, 5, 4))
    arr = gp.from_numpy(host)
    idx = np.array([[5, -6], [0, 3]])
    for view, expected in ((arr, host), (arr[::-2], host[::-2]), (arr.transpose(2, 0, 1),
                                                                   host.transpose(2, 0, 1))):
        key = idx % view.shape[0]
        for dtype in (np.int64, np.int32, np.uint8):
            got = view[gp.from_numpy(key.astype(dtype))]
            assert got.shape == expected[key].shape
            np.testing.assert_array_equal(got.to_numpy(), expected[key])
    ints = np.array([3, 0, 2, 1, 3], np.int64)
    d_ints = gp.from_numpy(ints)
    np.testing.assert_array_equal(d_ints[d_ints].to_numpy(), ints[ints])
    # Distinct destinations: with repeated ones the GPU keeps one of the values, unspecified.
    ints = np.array([3, 0, 2, 1, 4], np.int64)
    d_ints = gp.from_numpy(ints)
    d_ints[d_ints] = gp.from_numpy(np.array([9, 8, 7, 6, 5], np.int64))
    expected_ints = ints.copy()
    expected_ints[ints] = [9, 8, 7, 6, 5]
    np.testing.assert_array_equal(d_ints.to_numpy(), expected_ints)
    target = gp.from_numpy(host.copy())
    target[gp.from_numpy(np.array([4, 1]))] = 2.5
    changed = host.copy()
    changed[[4, 1]] = 2.5
    np.testing.assert_array_equal(target.to_numpy(), changed)
    assert arr[gp.from_numpy(np.array([], np.int64))].shape == (0, 5, 4)
    with pytest.raises(IndexError, match="index 6 is out of bounds for axis 0 with size 6"):
        arr[gp.from_numpy(np.array([0, 6]))]
    with pytest.raises(IndexError, match="index -7 is out of bounds for axis 0 with size 6"):
        target[gp.from_numpy(np.array([-7]))] = 1.0
    np.testing.assert_array_equal(target.to_numpy(), changed)  # nothing written in range


def test_non_contiguous_sources(backend: str) -> None:
    host = rand((6, 5, 4))
    arr = gp.from_numpy(host)
    idx = np.array([4, 0, 3])
    cases = [
        (arr.T, host.T, (slice(None), idx)),
        (arr[::-1], host[::-1], (idx,)),
        (arr[:, ::-2], host[:, ::-2], (Ellipsis, np.array([1, 2]))),
        (arr.transpose(1, 0, 2)[::2], host.transpose(1, 0, 2)[::2], (np.array([0, 2]), 1)),
    ]
    for view, expected_view, key in cases:
        np.testing.assert_array_equal(view[on_device(key)].to_numpy(), expected_view[key])


def test_index_array_non_contiguous_and_broadcast(backend: str) -> None:
    host = rand((8, 8))
    rows = np.array([[0, 7, 3], [1, 2, 6]])
    arr = gp.from_numpy(host)
    idx = gp.from_numpy(rows)
    np.testing.assert_array_equal(arr[idx.T].to_numpy(), host[rows.T])
    np.testing.assert_array_equal(arr[idx[:, ::-1], gp.from_numpy(np.array([5]))].to_numpy(),
                                  host[rows[:, ::-1], np.array([5])])


# -- masks --

def test_boolean_mask_get(backend: str) -> None:
    host = rand((6, 5))
    arr = gp.from_numpy(host)
    np.testing.assert_array_equal(arr[arr > 3].to_numpy(), host[host > 3])
    np.testing.assert_array_equal(arr[host > 3].to_numpy(), host[host > 3])
    rows = host[:, 0] > 0
    np.testing.assert_array_equal(arr[gp.from_numpy(rows)].to_numpy(), host[rows])
    np.testing.assert_array_equal(arr[:, host[0] > 0].to_numpy(), host[:, host[0] > 0])
    np.testing.assert_array_equal(arr[rows, 1:3].to_numpy(), host[rows, 1:3])
    np.testing.assert_array_equal(arr[[True, False, True, True, False, False]].to_numpy(),
                                  host[[True, False, True, True, False, False]])


def test_mask_over_3d_and_non_contiguous(backend: str) -> None:
    host = rand((4, 3, 5))
    arr = gp.from_numpy(host)
    mask = host[..., 0] > 0
    np.testing.assert_array_equal(arr[gp.from_numpy(mask)].to_numpy(), host[mask])
    view, expected = arr.transpose(2, 0, 1), host.transpose(2, 0, 1)
    full = expected > 0
    np.testing.assert_array_equal(view[view > 0].to_numpy(), expected[full])
    strided_mask = gp.from_numpy(full[:, ::-1])  # a reversed mask view
    np.testing.assert_array_equal(view[:, ::-1][strided_mask].to_numpy(),
                                  expected[:, ::-1][full[:, ::-1]])


def test_empty_and_full_masks(backend: str) -> None:
    host = rand((5, 3))
    arr = gp.from_numpy(host)
    none = np.zeros(5, bool)
    got = arr[gp.from_numpy(none)]
    assert got.shape == (0, 3)
    got = arr[arr > 1e9]
    assert got.shape == (0,)
    np.testing.assert_array_equal(arr[arr == arr].to_numpy(), host.reshape(-1))
    single = np.zeros((5, 3), bool)
    single[4, 2] = True
    np.testing.assert_array_equal(arr[gp.from_numpy(single)].to_numpy(), host[single])


@pytest.mark.parametrize("share", [0.0, 0.01, 0.2, 0.3, 0.5, 1.0])
def test_mask_select_keeps_room_only_when_well_used(backend: str, share: float) -> None:
    """One compaction pass: a dense result is a view of room for every element, a sparse one
    (under a quarter of that room) a block of its own; both equal NumPy's."""
    n = 4096
    rng = np.random.default_rng(7)
    host = rng.standard_normal(n).astype(np.float32)
    mask = np.zeros(n, bool)
    mask[rng.permutation(n)[:int(share * n)]] = True
    arr = gp.from_numpy(host)
    got = arr[gp.from_numpy(mask)]
    np.testing.assert_array_equal(got.to_numpy(), host[mask])
    assert got.shape == (int(mask.sum()),) and got.is_contiguous()
    room = n * host.itemsize
    if mask.sum() * 4 >= n:
        assert got._block.size >= room  # a view of the compaction's room
    else:
        assert got._block.size < room
    positions = gp.nonzero(gp.from_numpy(mask))[0]
    np.testing.assert_array_equal(positions.to_numpy(), np.flatnonzero(mask))


def test_scalar_bool_index(backend: str) -> None:
    host = rand((3,))
    arr = gp.from_numpy(host)
    assert arr[True].shape == host[True].shape == (1, 3)
    assert arr[False].shape == host[False].shape == (0, 3)
    np.testing.assert_array_equal(arr[True].to_numpy(), host[True])


@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float32, np.float64], ids=str)
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_mask_select_over_many_tiles_and_offsets(backend: str, dtype: Any, offset: int) -> None:
    """Masks over several compaction tiles (4096 elements on the GPU) with a ragged tail, on
    views that start off the 16-byte grid (element-wise loads) and on aligned ones (vector
    loads): sparse, half and dense masks with long runs of true and of false; the positions
    (nonzero) too."""
    n = 15 * 4096 + 777
    rng = np.random.default_rng(11)
    host = (rng.standard_normal(n + offset) * 100).astype(dtype)
    arr = gp.from_numpy(host)[offset:]
    for p in (0.001, 0.5, 0.999):
        mask = rng.random(n) < p
        mask[1000:9000] = True
        mask[20000:30000] = False
        flags = gp.from_numpy(np.concatenate([np.zeros(offset, bool), mask]))[offset:]
        np.testing.assert_array_equal(arr[flags].to_numpy(), host[offset:][mask])
        np.testing.assert_array_equal(gp.nonzero(flags)[0].to_numpy(), np.flatnonzero(mask))


@pytest.mark.parametrize("n", [1, 2, 17, 4095, 4096, 4097, 16383, 16384, 16385, 3 * 16384 + 1])
def test_mask_select_at_tile_boundaries(backend: str, n: int) -> None:
    """Sizes at the GPU compaction's boundaries (tiles of 4096 elements, packed four to a
    block of the counting pass): all-true, all-false, one set at either end, random; values
    (1, 2, 4 and 8 bytes) and positions (nonzero), and the result used at once by more work
    (on the GPU the host has the count before the compaction has finished)."""
    rng = np.random.default_rng(n)
    values = {dt: gp.from_numpy((rng.standard_normal(n) * 100).astype(dt))
              for dt in (np.int8, np.float16, np.float32, np.float64)}
    first, last = np.zeros(n, bool), np.zeros(n, bool)
    first[0] = last[-1] = True
    for mask in (np.ones(n, bool), np.zeros(n, bool), first, last, rng.random(n) < 0.5):
        flags = gp.from_numpy(mask)
        for arr in values.values():
            host = arr.to_numpy()
            got = arr[flags]
            assert got.shape == (int(mask.sum()),)
            np.testing.assert_array_equal(got.to_numpy(), host[mask])
        doubled = (values[np.float32][flags] * 2).to_numpy()
        np.testing.assert_array_equal(doubled, values[np.float32].to_numpy()[mask] * 2)
        np.testing.assert_array_equal(gp.nonzero(flags)[0].to_numpy(), np.flatnonzero(mask))


def test_mask_shape_mismatch(backend: str) -> None:
    arr = gp.zeros((4, 3))
    with pytest.raises(IndexError, match="boolean index did not match indexed array along "
                                         "axis 0; size of axis is 4 but size of corresponding "
                                         "boolean axis is 3"):
        arr[np.ones(3, bool)]


# -- assignment --

SET_KEYS: list[Any] = [
    I([0, 3, 5]),
    (slice(None), I([4, 1])),
    (I([1, 2]), slice(None), I([0, 3])),
    (I([[0], [2]]), I([1, 2, 3])),
    (2, I([0, -1])),
    I([], dtype=np.int64),
]


@pytest.mark.parametrize("device_indices", [False, True], ids=["host", "device"])
@pytest.mark.parametrize("key", SET_KEYS, ids=repr)
def test_integer_array_set_matches_numpy(backend: str, key: Any, device_indices: bool) -> None:
    host = rand((6, 5, 4))
    arr = gp.from_numpy(host)
    k = on_device(key) if device_indices else key
    shape = host[key].shape
    values = rand(shape, seed=3)
    arr[k] = gp.from_numpy(values)
    host[key] = values
    np.testing.assert_array_equal(arr.to_numpy(), host)
    arr[k] = 2.5  # scalar
    host[key] = 2.5
    np.testing.assert_array_equal(arr.to_numpy(), host)
    if shape and shape[-1] > 0:
        row = rand(shape[-1:], seed=4)
        arr[k] = row  # broadcast from a NumPy array
        host[key] = row
        np.testing.assert_array_equal(arr.to_numpy(), host)


def test_set_casts_and_broadcasts(backend: str) -> None:
    host = np.arange(24, dtype=np.int32).reshape(4, 6)
    arr = gp.from_numpy(host)
    values = np.array([[1.9], [-2.7]])
    arr[[0, 3]] = values  # float64 into int32, (2, 1) broadcast to (2, 6)
    host[[0, 3]] = values
    np.testing.assert_array_equal(arr.to_numpy(), host)
    arr[:, gp.from_numpy(np.array([5, 0], np.int16))] = gp.from_numpy(np.array([7.0, 8.0]))
    host[:, [5, 0]] = [7, 8]
    np.testing.assert_array_equal(arr.to_numpy(), host)
    with pytest.raises(ValueError, match="shape mismatch"):
        arr[[0, 1]] = np.ones(5)


def test_set_non_contiguous_targets(backend: str) -> None:
    host = rand((5, 6))
    arr = gp.from_numpy(host)
    arr.T[[0, 5]] = 1.0
    host.T[[0, 5]] = 1.0
    arr[::-1][gp.from_numpy(np.array([0, 2]))] = gp.from_numpy(rand((2, 6), seed=1))
    host[::-1][[0, 2]] = rand((2, 6), seed=1)
    np.testing.assert_array_equal(arr.to_numpy(), host)


def test_set_from_overlapping_values(backend: str) -> None:
    host = rand((6,))
    arr = gp.from_numpy(host)
    arr[[0, 1, 2]] = arr[3:]
    host[[0, 1, 2]] = host[3:].copy()
    np.testing.assert_array_equal(arr.to_numpy(), host)


def test_mask_set(backend: str) -> None:
    host = rand((6, 5))
    arr = gp.from_numpy(host)
    arr[arr > 3] = 0
    host[host > 3] = 0
    np.testing.assert_array_equal(arr.to_numpy(), host)
    mask = host < -5
    values = rand((int(mask.sum()),), seed=2)
    arr[gp.from_numpy(mask)] = gp.from_numpy(values)
    host[mask] = values
    np.testing.assert_array_equal(arr.to_numpy(), host)
    rows = np.array([True, False, False, True, False, True])
    arr[rows] = gp.from_numpy(np.arange(5, dtype=np.float32))  # broadcast over rows
    host[rows] = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(arr.to_numpy(), host)
    arr[gp.from_numpy(rows)] = -1  # a scalar over leading dims
    host[rows] = -1
    np.testing.assert_array_equal(arr.to_numpy(), host)
    arr[np.zeros((6, 5), bool)] = 9.0  # empty mask: nothing changes
    np.testing.assert_array_equal(arr.to_numpy(), host)
    ints = gp.from_numpy(np.arange(6, dtype=np.int16))
    ints[ints > 2] = 7.9  # cast as NumPy's assignment does
    expected = np.arange(6, dtype=np.int16)
    expected[expected > 2] = 7.9
    np.testing.assert_array_equal(ints.to_numpy(), expected)


# -- errors --

@pytest.mark.parametrize("device_indices", [False, True], ids=["host", "device"])
def test_out_of_range_names_axis_and_size(backend: str, device_indices: bool) -> None:
    arr = gp.zeros((5, 3))

    def key(*items: Any) -> Any:
        return on_device(tuple(np.array(i) for i in items)) if device_indices else tuple(
            np.array(i) for i in items)

    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        arr[key([0, 7, 9])]
    with pytest.raises(IndexError, match="index -6 is out of bounds for axis 0 with size 5"):
        arr[key([-6])]
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"):
        arr[:, key([1, 3])[0]]
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5"):
        arr[key([5, 1])] = 1.0
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 3"):
        arr[key([0, 1], [0, 4])]


def test_invalid_index_types(backend: str) -> None:
    arr = gp.zeros((5, 3))
    with pytest.raises(IndexError, match="arrays used as indices must be of integer"):
        arr[np.array([0.0, 1.0])]
    with pytest.raises(IndexError, match="arrays used as indices must be of integer"):
        arr[gp.from_numpy(np.array([0.0, 1.0], np.float32))]
    with pytest.raises(IndexError, match="only integers, slices"):
        arr[0.5]
    with pytest.raises(IndexError, match="too many indices"):
        arr[[0], [0], [0]]
    with pytest.raises(IndexError, match="could not be broadcast together"):
        arr[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="single ellipsis"):
        arr[..., [0], ...]


# -- take, put, nonzero and friends --

def test_take(backend: str) -> None:
    host = rand((4, 5, 3))
    arr = gp.from_numpy(host)
    idx = np.array([[4, 0], [-1, 2]])
    for axis in (None, 0, 1, 2, -1):
        ok = idx % (host.size if axis is None else host.shape[axis])
        got = gp.take(arr, gp.from_numpy(ok), axis=axis)
        np.testing.assert_array_equal(got.to_numpy(), np.take(host, ok, axis=axis))
    np.testing.assert_array_equal(gp.take(arr, 2, axis=1).to_numpy(), np.take(host, 2, axis=1))
    np.testing.assert_array_equal(gp.take(arr.T, [0, 2], axis=0).to_numpy(),
                                  np.take(host.T, [0, 2], axis=0))
    big = np.array([7, -9, 12])
    for mode in ("wrap", "clip"):
        for index in (big, gp.from_numpy(big)):
            got = gp.take(arr, index, axis=1, mode=mode)
            np.testing.assert_array_equal(got.to_numpy(), np.take(host, big, axis=1, mode=mode))
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 1 with size 5"):
        gp.take(arr, gp.from_numpy(big), axis=1)
    with pytest.raises(ValueError, match="mode must be"):
        gp.take(arr, [0], mode="nearest")
    empty = gp.zeros((0,))
    for index in ([1], gp.from_numpy(np.array([1]))):
        with pytest.raises(IndexError, match="non-empty take from an empty axes"):
            gp.take(empty, index, mode="wrap")
        with pytest.raises(IndexError, match="index 1 is out of bounds for axis 0 with size 0"):
            gp.take(empty, index)
    assert gp.take(empty, np.array([], np.int64), mode="clip").shape == (0,)


def test_take_along_axis(backend: str) -> None:
    host = rand((4, 6))
    arr = gp.from_numpy(host)
    order = np.argsort(host, axis=1)
    np.testing.assert_array_equal(gp.take_along_axis(arr, gp.from_numpy(order), 1).to_numpy(),
                                  np.take_along_axis(host, order, 1))
    first = np.argsort(host, axis=0)[:2]
    np.testing.assert_array_equal(gp.take_along_axis(arr, first, axis=0).to_numpy(),
                                  np.take_along_axis(host, first, axis=0))
    col = np.array([[1], [0], [5], [2]])
    np.testing.assert_array_equal(gp.take_along_axis(arr, col, axis=-1).to_numpy(),
                                  np.take_along_axis(host, col, axis=-1))


def test_put(backend: str) -> None:
    host = rand((3, 4))
    arr = gp.from_numpy(host)
    gp.put(arr, [0, -1, 5], gp.from_numpy(np.array([1.0, 2.0, 3.0], np.float32)))
    np.put(host, [0, -1, 5], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(arr.to_numpy(), host)
    gp.put(arr, gp.from_numpy(np.array([1, 2, 3, 4])), [9.0, 8.0])  # values repeat
    np.put(host, [1, 2, 3, 4], [9.0, 8.0])
    np.testing.assert_array_equal(arr.to_numpy(), host)
    gp.put(arr, [20, -30], [5.0], mode="wrap")
    np.put(host, [20, -30], [5.0], mode="wrap")
    np.testing.assert_array_equal(arr.to_numpy(), host)
    gp.put(arr, [20, -30], [6.0, 7.0], mode="clip")
    np.put(host, [20, -30], [6.0, 7.0], mode="clip")
    np.testing.assert_array_equal(arr.to_numpy(), host)
    with pytest.raises(IndexError, match="index 12 is out of bounds for axis 0 with size 12"):
        gp.put(arr, gp.from_numpy(np.array([12])), [1.0])


def test_put_into_strided_array(backend: str) -> None:
    host = rand((4, 6))
    arr = gp.from_numpy(host)
    view, expected = arr[:, ::2].T, host[:, ::2].T  # flat order of the view
    # Distinct destinations (-1 is 11): which of repeated ones wins is unspecified on the GPU.
    for index in ([0, 5, 10, -1], gp.from_numpy(np.array([0, 5, 10, -1]))):
        gp.put(view, index, [1.0, 2.0, 3.0, 4.0])
        np.put(expected, [0, 5, 10, -1], [1.0, 2.0, 3.0, 4.0])
        np.testing.assert_array_equal(arr.to_numpy(), host)
    with pytest.raises(IndexError, match="index 12 is out of bounds for axis 0 with size 12"):
        gp.put(view, gp.from_numpy(np.array([12])), [1.0])


def test_repeated_destinations_keep_one_of_their_values(backend: str) -> None:
    arr = gp.from_numpy(np.zeros(6, np.float32))
    gp.put(arr, [1, 4, -5, 4], [1.0, 2.0, 3.0, 4.0])  # 1 and -5 name one element, 4 twice
    got = arr.to_numpy()
    assert got[1] in (1.0, 3.0) and got[4] in (2.0, 4.0), got
    assert got[[0, 2, 3, 5]].tolist() == [0.0, 0.0, 0.0, 0.0]
    arr[gp.from_numpy(np.array([2, 2, 2]))] = gp.from_numpy(np.array([5.0, 6.0, 7.0], np.float32))
    assert arr.to_numpy()[2] in (5.0, 6.0, 7.0)


@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 4), (0, 3), (1,)])
def test_nonzero_argwhere_where(backend: str, shape: tuple[int, ...]) -> None:
    host = np.round(rand(shape) / 15).astype(np.int32)
    arr = gp.from_numpy(host)
    got = gp.nonzero(arr)
    expected = np.nonzero(host)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == np.int64
        np.testing.assert_array_equal(g.to_numpy(), e)
    for g, e in zip(arr.nonzero(), expected, strict=True):
        np.testing.assert_array_equal(g.to_numpy(), e)
    for g, e in zip(gp.where(arr), np.where(host), strict=True):
        np.testing.assert_array_equal(g.to_numpy(), e)
    np.testing.assert_array_equal(gp.argwhere(arr).to_numpy(), np.argwhere(host))
    np.testing.assert_array_equal(gp.argwhere(arr > 0).to_numpy(), np.argwhere(host > 0))
    if len(shape) > 1 and host.size:  # strided input
        np.testing.assert_array_equal(gp.argwhere(arr.T).to_numpy(), np.argwhere(host.T))


def test_nonzero_of_bools_and_floats(backend: str) -> None:
    host = np.array([0.0, -0.0, np.nan, 1e-30, 2.0], np.float32)
    arr = gp.from_numpy(host)
    np.testing.assert_array_equal(gp.nonzero(arr)[0].to_numpy(), np.nonzero(host)[0])
    flags = np.array([[True, False], [False, True]])
    np.testing.assert_array_equal(gp.argwhere(gp.from_numpy(flags)).to_numpy(),
                                  np.argwhere(flags))
    with pytest.raises(ValueError, match="0d"):
        gp.nonzero(gp.from_numpy(np.array(1.0)))
    assert gp.argwhere(gp.from_numpy(np.array(3))).shape == np.argwhere(np.array(3)).shape


def test_three_argument_where_still_works(backend: str) -> None:
    a, b = rand((4,)), rand((4,), seed=1)
    cond = a > b
    got = gp.where(gp.from_numpy(cond), gp.from_numpy(a), gp.from_numpy(b))
    np.testing.assert_array_equal(got.to_numpy(), np.where(cond, a, b))
    got = gp.where(gp.from_numpy(cond), 1.0, gp.from_numpy(b))
    np.testing.assert_array_equal(got.to_numpy(), np.where(cond, np.float32(1.0), b))
    with pytest.raises(ValueError, match="both or neither"):
        gp.where(gp.from_numpy(cond), gp.from_numpy(a))


def test_compress(backend: str) -> None:
    host = rand((4, 5))
    arr = gp.from_numpy(host)
    cond = np.array([True, False, True])
    for axis in (None, 0, 1):
        np.testing.assert_array_equal(gp.compress(cond, arr, axis=axis).to_numpy(),
                                      np.compress(cond, host, axis=axis))
        np.testing.assert_array_equal(
            gp.compress(gp.from_numpy(cond), arr, axis=axis).to_numpy(),
            np.compress(cond, host, axis=axis))
    ints = np.array([0, 1, 1, 0, 0, 0])  # truthiness of any dtype
    np.testing.assert_array_equal(gp.compress(ints, arr, axis=1).to_numpy(),
                                  np.compress(ints.astype(bool), host, axis=1))


def test_repeat(backend: str) -> None:
    host = rand((3, 4))
    arr = gp.from_numpy(host)
    for repeats, axis in ((2, None), (3, 0), (2, 1), (0, 1), ([1, 0, 2], 0),
                          (np.array([2, 1, 0, 3]), -1)):
        np.testing.assert_array_equal(gp.repeat(arr, repeats, axis=axis).to_numpy(),
                                      np.repeat(host, repeats, axis=axis))
    counts = gp.from_numpy(np.array([1, 2, 3]))
    np.testing.assert_array_equal(gp.repeat(arr.T, counts, axis=1).to_numpy(),
                                  np.repeat(host.T, [1, 2, 3], axis=1))
    with pytest.raises(ValueError, match="negative"):
        gp.repeat(arr, -1)


def test_tile(backend: str) -> None:
    host = rand((2, 3))
    arr = gp.from_numpy(host)
    for reps in (2, (2, 1), (1, 3), (2, 2, 2), (0, 2), (1, 1)):
        np.testing.assert_array_equal(gp.tile(arr, reps).to_numpy(), np.tile(host, reps))
    np.testing.assert_array_equal(gp.tile(arr.T[::-1], (3, 2)).to_numpy(),
                                  np.tile(host.T[::-1], (3, 2)))


def test_flip_is_a_view(backend: str) -> None:
    host = rand((3, 4, 2))
    arr = gp.from_numpy(host)
    for axis in (None, 0, 1, -1, (0, 2)):
        got = gp.flip(arr, axis)
        expected = np.flip(host, axis)
        assert got.strides == expected.strides
        np.testing.assert_array_equal(got.to_numpy(), expected)
    view = gp.flip(arr, 0)
    view[0, 0, 0] = 123.0  # writes through to the base
    assert arr.to_numpy()[2, 0, 0] == 123.0


def test_roll(backend: str) -> None:
    host = rand((3, 5))
    arr = gp.from_numpy(host)
    for shift, axis in ((2, None), (-7, None), (1, 0), (-2, 1), (7, 1), ((1, 2), (0, 1)),
                        (3, (0, 1)), (0, 0)):
        np.testing.assert_array_equal(gp.roll(arr, shift, axis).to_numpy(),
                                      np.roll(host, shift, axis))
    np.testing.assert_array_equal(gp.roll(arr.T, 1, 0).to_numpy(), np.roll(host.T, 1, 0))


# -- scatter-add --

def test_add_at_accumulates_duplicates(backend: str) -> None:
    host = rand((6, 3), np.float64)
    arr = gp.from_numpy(host)
    idx = np.array([0, 2, 2, 5, 0, 0])
    values = rand((6, 3), np.float64, seed=1)
    gp.add_at(arr, gp.from_numpy(idx), gp.from_numpy(values))
    np.add.at(host, idx, values)
    np.testing.assert_allclose(arr.to_numpy(), host, rtol=1e-12)
    key: Any = (idx[:3], 1)
    gp.add_at(arr, key, 2.0)
    np.add.at(host, key, 2.0)
    np.testing.assert_allclose(arr.to_numpy(), host, rtol=1e-12)
    gp.add_at(arr, np.array([], np.int64), 1.0)  # nothing
    np.testing.assert_allclose(arr.to_numpy(), host, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8, np.float16, np.bool_])
def test_add_at_dtypes(backend: str, dtype: Any) -> None:
    host = (np.arange(10) % 3).astype(dtype)
    arr = gp.from_numpy(host)
    idx = np.array([1, 1, 9, 4, 1])
    values = np.ones(5, dtype)
    gp.add_at(arr, idx, gp.from_numpy(values))
    np.add.at(host, idx, values)
    np.testing.assert_array_equal(arr.to_numpy(), host)


def test_add_at_non_contiguous_target_and_index_add(backend: str) -> None:
    host = rand((4, 5), np.float64)
    arr = gp.from_numpy(host)
    gp.add_at(arr.T, [4, 0, 4], rand((3, 4), np.float64, seed=5))
    np.add.at(host.T, [4, 0, 4], rand((3, 4), np.float64, seed=5))
    np.testing.assert_allclose(arr.to_numpy(), host, rtol=1e-12)
    values = rand((4, 3), np.float64, seed=6)
    gp.index_add(arr, 1, gp.from_numpy(np.array([2, 2, 0])), gp.from_numpy(values))
    columns: Any = (slice(None), [2, 2, 0])
    np.add.at(host, columns, values)
    np.testing.assert_allclose(arr.to_numpy(), host, rtol=1e-12)
    with pytest.raises(TypeError, match="same_kind"):
        gp.add_at(gp.zeros((3,), gp.int32), [0], 1.5)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        gp.add_at(gp.zeros((3,)), gp.from_numpy(np.array([0, 3])), 1.0)


def test_add_at_is_deterministic(backend: str) -> None:
    # Many float32 duplicates, spanning several of the kernel's 2048-element chunks.
    rng = np.random.default_rng(7)
    n = 50_000
    idx = rng.integers(0, 37, n)
    idx[:9000] = 5  # one destination across several chunks
    values = rng.standard_normal(n).astype(np.float32)
    d_idx, d_values = gp.from_numpy(idx), gp.from_numpy(values)
    results = []
    for _ in range(2):
        target = gp.zeros((40,), gp.float32)
        gp.add_at(target, d_idx, d_values)
        results.append(target.to_numpy())
    assert results[0].tobytes() == results[1].tobytes()
    reference = np.zeros(40)
    np.add.at(reference, idx, values.astype(np.float64))
    np.testing.assert_allclose(results[0], reference, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.int8,
                                   np.float16, np.complex64])
def test_add_at_with_atomics(backend: str, dtype: Any) -> None:
    # deterministic=False: one atomic add per element; integer sums are exact, float sums equal
    # the reference within rounding; the same errors as the deterministic path.
    rng = np.random.default_rng(11)
    n = 20_000
    idx = rng.integers(-30, 30, n)
    idx[:5000] = 7
    host = (np.arange(30) % 5).astype(dtype)
    values = (rng.integers(-3, 4, n) if np.dtype(dtype).kind in "iu"
              else rng.standard_normal(n)).astype(dtype)
    arr = gp.from_numpy(host)
    gp.add_at(arr, gp.from_numpy(idx), gp.from_numpy(values), deterministic=False)
    if np.dtype(dtype).kind in "iu":
        expected = host.copy()
        np.add.at(expected, idx, values)
        np.testing.assert_array_equal(arr.to_numpy(), expected)
    else:
        wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
        expected = host.astype(wide)
        np.add.at(expected, idx, values.astype(wide))
        tol = 1e-2 if dtype == np.float16 else 1e-3
        np.testing.assert_allclose(arr.to_numpy(), expected, rtol=tol, atol=tol * 10)
    # Other index forms, 2-D targets, index_add, errors.
    grid = rand((4, 5), np.float64)
    target = gp.from_numpy(grid)
    gp.add_at(target, (slice(None), [4, 0, 4]), 1.5, deterministic=False)
    gp.index_add(target, 0, [3, 3], gp.from_numpy(np.ones((2, 5))), deterministic=False)
    np.add.at(grid, (slice(None), [4, 0, 4]), 1.5)
    np.add.at(grid, [3, 3], np.ones((2, 5)))
    np.testing.assert_allclose(target.to_numpy(), grid, rtol=1e-12)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        gp.add_at(gp.zeros((3,)), gp.from_numpy(np.array([0, 3])), 1.0, deterministic=False)
    with pytest.raises(TypeError, match="deterministic must be a bool"):
        gp.add_at(gp.zeros((3,)), [0], 1.0, deterministic=None)  # type: ignore[arg-type]


# -- large --

@pytest.mark.gpu
def test_gather_beyond_2_31_elements() -> None:
    """Gathers from an int8 array of 2^31 + 1000 elements: 64-bit offsets (GPU only)."""
    if not gp.is_cuda_available():
        pytest.skip("needs the CUDA backend (> 2 GiB of device memory)")
    import pygpukit_driver as drv

    assert gp.backend() == "cuda"
    gp.zeros((1,))  # the device's primary context is current from here on
    gp.empty_cache()
    free, _ = drv.mem_get_info()
    if free < 16 * 2**30:
        pytest.skip(f"needs 16 GiB of free device memory; {free / 2**30:.1f} GiB free")
    n = 2**31 + 1000
    arr = gp.zeros((n,), gp.int8)
    arr[n - 10:] = gp.from_numpy(np.arange(1, 11, dtype=np.int8))
    idx = np.array([n - 1, n - 10, 0, 2**31 + 5, -1])
    got = arr[gp.from_numpy(idx)].to_numpy()
    np.testing.assert_array_equal(got, [10, 1, 0, 0, 10])
    big = arr.reshape(2, -1)  # a 2-D view: column gather with 64-bit offsets
    np.testing.assert_array_equal(big[:, [-1]].to_numpy().reshape(-1), [0, 10])
    flags = arr > 5
    np.testing.assert_array_equal(arr[flags].to_numpy(), np.arange(6, 11, dtype=np.int8))
    np.testing.assert_array_equal(gp.nonzero(flags)[0].to_numpy(), np.arange(n - 5, n))


# -- random keys --

def _random_key(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """A random mix of slices, ints, None, Ellipsis, integer arrays and masks for ``shape``."""
    key: list[Any] = []
    dim = 0
    while dim < len(shape) and rng.random() < 0.8:
        size, r = shape[dim], rng.random()
        if r < 0.15:
            key.append(None)
            continue
        if r < 0.35:
            start, stop = (int(v) for v in rng.integers(-size - 1, size + 1, 2))
            key.append(slice(start, stop, int(rng.choice([1, 2, -1, -2, 3]))))
        elif r < 0.5 and size:
            key.append(int(rng.integers(-size, size)))
        elif r < 0.8:
            dims = [(3,), (2, 1), (1,), (0,), (2, 3), ()][int(rng.integers(6))]
            key.append(rng.integers(-size, size, dims) if size else np.zeros(0, np.int64))
        elif r < 0.9:
            key.append(rng.random(size) < 0.5)
        else:
            key.append(slice(None))
        dim += 1
    if rng.random() < 0.2:
        key.insert(int(rng.integers(len(key) + 1)), Ellipsis)
    return tuple(key)


def test_random_keys_match_numpy(backend: str) -> None:
    rng = np.random.default_rng(11)
    checked = 0
    for trial in range(300):
        shape = tuple(int(d) for d in rng.integers(0 if trial % 10 == 0 else 1, 5,
                                                   int(rng.integers(1, 5))))
        host = rng.standard_normal(shape).astype(np.float32)
        arr = gp.from_numpy(host)
        if len(shape) >= 2 and rng.random() < 0.3:
            host, arr = host.T, arr.T
        if rng.random() < 0.3:
            host, arr = host[::-1], arr[::-1]
        key = _random_key(rng, host.shape)
        device_key = on_device(key) if rng.random() < 0.5 else key
        try:
            expected = host[key]
        except IndexError:
            with pytest.raises(IndexError):
                arr[device_key]
            continue
        got = arr[device_key]
        assert got.shape == expected.shape, (shape, key)
        np.testing.assert_array_equal(got.to_numpy(), expected, err_msg=repr((shape, key)))
        values = rng.standard_normal(expected.shape).astype(np.float32)
        target, reference = gp.from_numpy(np.ascontiguousarray(host)), host.copy()
        target[device_key] = values
        reference[key] = values
        # Repeated destinations take one of their values: compare where NumPy's is unambiguous
        # (every destination written once), else only that each element came from somewhere.
        touched = np.zeros(host.shape, np.int64)
        np.add.at(touched, key, 1)
        once = touched <= 1
        np.testing.assert_array_equal(target.to_numpy()[once], reference[once])
        accumulated, reference_sum = gp.from_numpy(np.ascontiguousarray(host)), host.copy()
        gp.add_at(accumulated, device_key, values)
        np.add.at(reference_sum, key, values)
        np.testing.assert_allclose(accumulated.to_numpy(), reference_sum, rtol=1e-5, atol=1e-5)
        checked += 1
    assert checked > 150


def test_index_array_that_is_also_the_target(backend: str) -> None:
    host = np.array([2, 0, 1, 4, 3], np.int64)
    arr = gp.from_numpy(host)
    arr[arr[:3]] = gp.from_numpy(np.array([5, 6, 7], np.int64))
    host[host[:3].copy()] = [5, 6, 7]
    np.testing.assert_array_equal(arr.to_numpy(), host)
    arr = gp.from_numpy(np.array([1, 0, 2], np.int64))
    gp.add_at(arr, arr, 10)
    expected = np.array([1, 0, 2], np.int64)
    np.add.at(expected, expected.copy(), 10)
    np.testing.assert_array_equal(arr.to_numpy(), expected)


@pytest.mark.parametrize("shape,mask_shape", [((1,), (0,)), ((2,), (0,)), ((2, 3), (0,)),
                                              ((2, 3), (0, 3))])
def test_empty_mask_on_any_axis(backend: str, shape: tuple[int, ...],
                                mask_shape: tuple[int, ...]) -> None:
    """NumPy takes an empty boolean mask along an axis of any size (it selects nothing)."""
    host = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    mask = np.zeros(mask_shape, bool)
    x = gp.from_numpy(host)
    got = x[gp.from_numpy(mask)]
    assert got.shape == host[mask].shape
    x[gp.from_numpy(mask)] = 5.0
    np.testing.assert_array_equal(x.to_numpy(), host)
