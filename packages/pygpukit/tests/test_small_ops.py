"""Small arrays (pygpukit._small) against the general path and NumPy, both backends.

On the GPU, ops on small contiguous arrays run the ``small_ops`` fatbin's kernels through
prepared launchers; with ``out=`` (or a strided operand) the same op takes the C ABI's general
kernels.  Elementwise results must agree bit for bit; reductions and row norms (their own
fixed order) agree with NumPy within the usual tolerances and repeat exactly.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import pygpukit as gp
from pygpukit import _small

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(t) for t in (np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64,
                                np.float16, np.float32, np.float64)] + [BF16]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
          "floor_divide", "remainder", "less", "equal", "logical_xor", "bitwise_and"]
UNARY = ["negative", "absolute", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "silu",
         "floor", "rint", "sign", "isnan", "logical_not", "square", "reciprocal", "invert"]
SIZES = [1, 16, 257, 5000]


def values(n: int, dtype: np.dtype[Any], seed: int, *, nan: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dtype.kind in "iu":
        v = rng.integers(1 if dtype.kind == "u" else -9, 10, n)
        v[v == 0] = 3
        return v.astype(dtype)
    v = rng.uniform(-4, 4, n)
    if nan and n > 7:
        v[::7] = np.nan
    return v.astype(dtype)


def same(got: gp.GPUArray, expected: gp.GPUArray) -> None:
    a, b = got.to_numpy(), expected.to_numpy()
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.reshape(-1).view(np.uint8),  # bits, NaNs included
                                  b.reshape(-1).view(np.uint8))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", BINARY)
def test_binary_matches_the_general_path(backend: str, name: str, n: int) -> None:
    fn = getattr(gp, name)
    for dtype in DTYPES:
        a, b = gp.from_numpy(values(n, dtype, 1)), gp.from_numpy(values(n, dtype, 2))
        for x, y in ((a, b), (a, 3), (a, 2.5), (a, True), (3, a), (2.5, a), (True, a)):
            try:
                fast = fn(x, y)
            except TypeError:
                continue                        # no NumPy loop for these types: refused alike
            general = gp.empty_like(fast)
            fn(x, y, out=general)               # out= takes the general kernels
            same(fast, general)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "less", "maximum"])
def test_one_element_operands_broadcast_as_the_general_path(backend: str, name: str) -> None:
    fn = getattr(gp, name)
    for dtype in (np.dtype(np.float32), np.dtype(np.int64), BF16):
        a = gp.from_numpy(values(300, dtype, 1).reshape(3, 100))
        for one in (values(1, dtype, 2).reshape(()), values(1, dtype, 3).reshape(1, 1),
                    values(1, dtype, 4).reshape(1)):
            b = gp.from_numpy(one)
            for x, y in ((a, b), (b, a)):
                fast = fn(x, y)
                expected = getattr(np, name)(x.to_numpy(), y.to_numpy())
                assert fast.shape == expected.shape and fast.dtype == expected.dtype
                general = gp.empty_like(fast)
                fn(x, y, out=general)           # out= takes the general kernels
                same(fast, general)
    wide = gp.from_numpy(np.ones((1, 1, 1), np.float32))  # more dims than the other: general
    assert fn(gp.from_numpy(np.arange(4, dtype=np.float32)), wide).shape == (1, 1, 4)


@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_the_general_path(backend: str, name: str) -> None:
    for dtype in DTYPES:
        x_h = values(300, dtype, 3)
        try:
            fast = getattr(gp, name)(gp.from_numpy(x_h))
        except TypeError:
            continue
        general = gp.empty_like(fast)
        getattr(gp, name)(gp.from_numpy(x_h), out=general)
        same(fast, general)


def test_where_and_astype_match_the_general_path(backend: str) -> None:
    cond = gp.from_numpy(values(999, np.dtype(np.bool_), 4))
    for dtype in DTYPES:
        a = gp.from_numpy(values(999, dtype, 5, nan=False))  # NaN -> int is undefined
        b = gp.from_numpy(values(999, dtype, 6))
        fast = gp.where(cond, a, b)
        general = gp.empty_like(fast)
        gp.where(cond, a, b, out=general)
        same(fast, general)
        for target in DTYPES:
            cast = a.astype(target)
            assigned = gp.empty(a.shape, target)
            assigned[...] = a                   # the strided copy kernel's conversion
            same(cast, assigned)


def test_small_and_large_elementwise_agree(backend: str) -> None:
    """One op, one dtype: the small path (<= EW_MAX) and the vectorized one above it."""
    n = _small.EW_MAX + 1000
    for dtype in (np.dtype(np.float32), np.dtype(np.float16), BF16):
        a_h, b_h = values(n, dtype, 7), values(n, dtype, 8)
        large = (gp.from_numpy(a_h) * gp.from_numpy(b_h)).to_numpy()
        small = (gp.from_numpy(a_h[:1000]) * gp.from_numpy(b_h[:1000])).to_numpy()
        np.testing.assert_array_equal(small.view(np.uint8), large[:1000].view(np.uint8))


@pytest.mark.parametrize("n", [1, 2, 255, 256, 257, 4099, _small.REDUCE_MAX])
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "argmax",
                                  "argmin", "any", "all"])
def test_whole_array_reductions(backend: str, name: str, n: int) -> None:
    for dtype in (np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64),
                  np.dtype(np.int32), np.dtype(np.bool_)):
        if name in ("var", "std", "mean") and dtype == np.bool_:
            continue
        data = values(n, dtype, 9)
        if dtype.kind == "f":
            data[np.isnan(data)] = 1.0
            if name == "prod":  # near 1: no overflow in float16 over thousands of factors
                data = (1 + data.astype(np.float64) / 4000).astype(dtype)
            if n > 3:
                data[n // 2] = np.nan if name in ("max", "argmin") else data[n // 2]
        x = gp.from_numpy(data)
        got = getattr(x, name)()
        again = getattr(x, name)()
        same(got, again)                        # deterministic
        with np.errstate(all="ignore"):
            expected = np.asarray(getattr(np, name)(data.astype(np.float64)
                                                    if dtype.kind == "f" else data))
        host = got.to_numpy()
        assert host.shape == ()
        if name in ("argmax", "argmin", "any", "all") or (dtype.kind != "f"
                                                          and name not in ("var", "std")):
            if dtype.kind == "f" or name in ("argmax", "argmin", "any", "all"):
                np.testing.assert_array_equal(host, expected.astype(host.dtype))
            else:
                np.testing.assert_array_equal(host, np.asarray(getattr(np, name)(data)))
        elif dtype.kind != "f":  # var / std of integers: computed in float64
            np.testing.assert_allclose(host, expected, rtol=1e-12)
        else:
            tol = {np.float16: 2e-2, np.float32: 1e-5, np.float64: 1e-12}[dtype.type]
            if name == "prod":
                tol *= 10
            np.testing.assert_allclose(host.astype(np.float64), expected, rtol=tol, atol=tol,
                                       equal_nan=True)
        kept = getattr(x, name)(keepdims=True) if name not in ("argmax", "argmin") else None
        if kept is not None:
            assert kept.shape == (1,)


@pytest.mark.parametrize("shape", [(1, 1), (4, 64), (3, 257), (2, 4096), (33, 100)])
@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float16), BF16,
                                   np.dtype(np.float64)])
def test_row_norms(backend: str, shape: tuple[int, int], dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(10)
    x_h = (rng.standard_normal(shape) * 3).astype(dtype)
    w_h = rng.standard_normal(shape[1])
    b_h = rng.standard_normal(shape[1])
    x = gp.from_numpy(x_h)
    compute = np.float64 if dtype == np.float64 else np.float32
    w, b = gp.from_numpy(w_h.astype(compute)), gp.from_numpy(b_h.astype(compute))
    v = x_h.astype(np.float64)
    e = np.exp(v - v.max(-1, keepdims=True))
    mean = v.mean(-1, keepdims=True)
    var = ((v - mean) ** 2).mean(-1, keepdims=True)
    expected = {
        "softmax": (gp.softmax(x), e / e.sum(-1, keepdims=True)),
        "log_softmax": (gp.log_softmax(x), np.log(e / e.sum(-1, keepdims=True))),
        "layer_norm": (gp.layer_norm(x, w, b, eps=1e-5),
                       (v - mean) / np.sqrt(var + 1e-5) * w_h + b_h),
        "rms_norm": (gp.rms_norm(x, w, eps=1e-6),
                     v / np.sqrt((v * v).mean(-1, keepdims=True) + 1e-6) * w_h),
    }
    tol = {np.dtype(np.float16): 4e-3, BF16: 3e-2, np.dtype(np.float32): 2e-5,
           np.dtype(np.float64): 1e-12}[dtype]
    for name, (got, ref) in expected.items():
        host = got.to_numpy()
        assert host.dtype == dtype and host.shape == shape, name
        scale = np.maximum(1.0, np.abs(ref))
        np.testing.assert_allclose(host.astype(np.float64) / scale, ref / scale, rtol=tol,
                                   atol=tol, err_msg=name)
