"""The Array API namespace (pygpukit.array_api), both backends: the standard's signatures,
dtypes, promotion, creation with device=, and the inspection namespace."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import pygpukit as gp
from pygpukit import array_api as xp


def test_namespace_and_info(backend: str) -> None:
    x = gp.ones(3)
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2024.12") is xp
    with pytest.raises(ValueError, match="api_version"):
        x.__array_namespace__(api_version="2030.12")
    assert xp.__array_api_version__ == "2024.12"
    info = gp.__array_namespace_info__()
    assert info.default_device() == x.device
    assert x.device in info.devices()
    assert info.default_dtypes() == {"real floating": xp.float32, "integral": xp.int64,
                                     "indexing": xp.int64, "complex floating": xp.complex64}
    assert set(info.dtypes()) == {"bool", "int8", "int16", "int32", "int64", "uint8",
                                  "float32", "float64", "complex64", "complex128"}
    assert set(info.dtypes(kind="real floating")) == {"float32", "float64"}
    assert set(info.dtypes(kind=("bool", "unsigned integer"))) == {"bool", "uint8"}
    assert info.capabilities()["max dimensions"] == 16


def test_dtype_functions() -> None:
    assert xp.isdtype(xp.int8, "signed integer") and not xp.isdtype(xp.uint8, "signed integer")
    assert xp.isdtype(xp.float32, ("integral", "real floating"))
    assert xp.isdtype(xp.bool, xp.bool) and not xp.isdtype(xp.bool, "numeric")
    with pytest.raises(ValueError, match="unknown kind"):
        xp.isdtype(xp.int8, "integer")
    assert xp.result_type(xp.int8, xp.uint8) == xp.int16
    assert xp.result_type(xp.int8, 1) == xp.int8
    assert xp.result_type(xp.float32, 1.0, xp.int16) == xp.float32
    assert xp.result_type(gp.bfloat16, gp.float16) == xp.float32
    with pytest.raises(ValueError, match="at least one"):
        xp.result_type(1, 2.0)
    assert xp.can_cast(xp.int8, xp.int16) and not xp.can_cast(xp.float64, xp.float32)
    f = xp.finfo(xp.float32)
    assert (f.bits, f.eps, f.max, f.smallest_normal) == (
        32, float(np.finfo(np.float32).eps), float(np.finfo(np.float32).max),
        float(np.finfo(np.float32).smallest_normal))
    assert isinstance(f.max, float) and f.dtype == xp.float32
    assert xp.finfo(gp.bfloat16).bits == 16
    i = xp.iinfo(xp.uint8)
    assert (i.bits, i.min, i.max) == (8, 0, 255)
    with pytest.raises(TypeError, match="floating"):
        xp.finfo(xp.int8)


def test_creation(backend: str) -> None:
    assert xp.zeros((2, 3)).dtype == xp.float32
    assert xp.ones(4, dtype=xp.int16).dtype == xp.int16
    assert xp.empty((2,)).shape == (2,)
    assert xp.full((2,), True).dtype == xp.bool and xp.full((2,), 3).dtype == xp.int64
    assert xp.eye(3, 4, k=1).to_numpy().tolist() == np.eye(3, 4, k=1).tolist()
    np.testing.assert_allclose(xp.linspace(0, 1, num=5, endpoint=False).to_numpy(),
                               np.linspace(0, 1, 5, endpoint=False))
    x = xp.arange(6, dtype=xp.int32)
    assert x.dtype == xp.int32 and x.to_numpy().tolist() == list(range(6))
    assert xp.zeros_like(x, dtype=xp.float64).dtype == xp.float64
    assert xp.full_like(x, 7).to_numpy().tolist() == [7] * 6
    assert xp.asarray([1.5, 2]).dtype == xp.float32
    assert xp.asarray([[True]], dtype=xp.int8).to_numpy().tolist() == [[1]]
    assert xp.asarray(x) is x
    assert xp.asarray(x, copy=True) is not x
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray(x, dtype=xp.int64, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray([1, 2], copy=False)
    stacked = xp.asarray([xp.sum(x), xp.max(x)])
    assert stacked.to_numpy().tolist() == [15, 5]
    grids = xp.meshgrid(xp.arange(3), xp.arange(2))
    for got, want in zip(grids, np.meshgrid(np.arange(3), np.arange(2)), strict=True):
        np.testing.assert_array_equal(got.to_numpy(), want)
    grids = xp.meshgrid(xp.arange(3), xp.arange(2), indexing="ij")
    for got, want in zip(grids, np.meshgrid(np.arange(3), np.arange(2), indexing="ij"),
                         strict=True):
        np.testing.assert_array_equal(got.to_numpy(), want)
    assert xp.astype(x, xp.float64, device=x.device).dtype == xp.float64
    assert x.to_device(x.device) is x
    assert xp.from_dlpack(x, copy=True).to_numpy().tolist() == list(range(6))


def test_manipulation(backend: str) -> None:
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = gp.from_numpy(a)
    np.testing.assert_array_equal(xp.permute_dims(x, (2, 0, 1)).to_numpy(),
                                  a.transpose(2, 0, 1))
    np.testing.assert_array_equal(xp.moveaxis(x, (0, 1), (2, 0)).to_numpy(),
                                  np.moveaxis(a, (0, 1), (2, 0)))
    np.testing.assert_array_equal(xp.concat([x, x], axis=None).to_numpy(),
                                  np.concat([a, a], axis=None))
    np.testing.assert_array_equal(xp.broadcast_to(x[0, 0], (3, 4)).to_numpy(),
                                  np.broadcast_to(a[0, 0], (3, 4)))
    b1, b2 = xp.broadcast_arrays(x[:, :1], x[0])
    assert b1.shape == b2.shape == (2, 3, 4)
    parts = xp.unstack(x, axis=1)
    assert len(parts) == 3 and parts[1].to_numpy().tolist() == a[:, 1].tolist()
    assert xp.reshape(x, (6, 4), copy=False)._block is x._block
    with pytest.raises(ValueError, match="copy=False"):
        xp.reshape(x.mT, (-1,), copy=False)
    assert xp.squeeze(x[:, :1], axis=1).shape == (2, 4)
    assert xp.expand_dims(x, axis=-1).shape == (2, 3, 4, 1)


def test_statistics_and_utilities(backend: str) -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    x = gp.from_numpy(a)
    np.testing.assert_allclose(xp.std(x, axis=0, correction=1).to_numpy(),
                               a.std(0, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(xp.var(x, correction=0.5).to_numpy(), a.var(ddof=0.5),
                               rtol=1e-6)
    s = xp.sum(xp.astype(x, xp.int8), dtype=xp.int16, axis=1)
    assert s.dtype == xp.int16 and s.to_numpy().tolist() == a.sum(1).astype(int).tolist()
    assert xp.prod(x, dtype=xp.float64).dtype == xp.float64
    assert xp.count_nonzero(x, axis=1).to_numpy().tolist() == [4, 3, 4]
    c = xp.clip(xp.astype(x, xp.int8), min=-1, max=2)
    assert c.dtype == xp.int8 and c.to_numpy().tolist() == np.clip(a, -1, 2).astype(
        np.int8).tolist()
    assert xp.clip(x).to_numpy().tolist() == a.tolist()


@pytest.mark.parametrize("name", ["add", "atan2", "clip", "std", "sum", "asarray", "arange",
                                  "linspace", "eye", "full_like", "vecdot", "tensordot",
                                  "permute_dims", "concat", "reshape", "astype", "can_cast"])
def test_signatures_follow_the_standard(name: str) -> None:
    params = inspect.signature(getattr(xp, name)).parameters
    expected: dict[str, Any] = {
        "clip": ["x", "min", "max"], "std": ["x", "axis", "correction", "keepdims"],
        "sum": ["x", "axis", "dtype", "keepdims"], "asarray": ["obj", "dtype", "device", "copy"],
        "linspace": ["start", "stop", "num", "dtype", "device", "endpoint"],
        "vecdot": ["x1", "x2", "axis"], "astype": ["x", "dtype", "copy", "device"],
    }
    if name in expected:
        assert list(params)[:len(expected[name])] == expected[name]
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in params.values())


def test_indexing_and_search_functions_are_pygpukits_own() -> None:
    from pygpukit import _indexing, _sorting

    for name in ("flip", "nonzero", "repeat", "roll", "take", "tile"):
        assert getattr(xp, name) is getattr(_indexing, name)
    assert xp.searchsorted is _sorting.searchsorted
    with pytest.raises(AttributeError):
        xp.no_such_function  # noqa: B018


def test_standard_semantics_where_numpy_differs(backend: str) -> None:
    x = xp.asarray(np.array([np.inf, -np.inf, 3.0, -3.0, 3.0, 7.0, np.inf, np.nan]))
    y = xp.asarray(np.array([2.0, 2.0, -np.inf, np.inf, np.inf, 2.0, np.inf, 1.0]))
    got = xp.floor_divide(x, y).to_numpy()
    want = np.array([np.inf, -np.inf, -0.0, -0.0, 0.0, 3.0, np.nan, np.nan])
    np.testing.assert_array_equal(got, want)
    zeros = want == 0
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]))
    ints = xp.asarray([7, -7])
    assert xp.floor_divide(ints, 2).to_numpy().tolist() == [3, -4]
    r = xp.round(xp.asarray([3, -2], dtype=xp.int16))
    assert r.dtype == xp.int16 and r.to_numpy().tolist() == [3, -2]
    v = xp.vecdot(xp.asarray([[1, 2]], dtype=xp.int8), xp.asarray([3, 4], dtype=xp.int8))
    assert v.dtype == xp.int8 and v.to_numpy().tolist() == [11]


def test_operators_of_the_standard(backend: str) -> None:
    a = xp.asarray([1, -8, 5], dtype=xp.int16)
    assert (a << 2).to_numpy().tolist() == [4, -32, 20]
    assert (a >> 1).to_numpy().tolist() == [0, -4, 2]
    assert (1 << xp.asarray([3], dtype=xp.int8)).to_numpy().tolist() == [8]
    b = xp.asarray([1, 2], dtype=xp.int32)
    b <<= 3
    assert b.to_numpy().tolist() == [8, 16]
    b >>= 2
    assert b.to_numpy().tolist() == [2, 4]
    assert [10, 20, 30][xp.asarray(2)] == 30
    with pytest.raises(TypeError, match="0-d integer"):
        [1][xp.asarray(0.0)]  # type: ignore[index]
    assert complex(xp.asarray(2.5)) == 2.5 + 0j
