"""The standard's composed elementwise functions (pygpukit._elementwise) vs NumPy, both backends.

References are NumPy's in float64, rounded to the result dtype.  Tolerances (relative, on
finite values): float32 4e-6 (the compositions chain several rounded kernels), float64 1e-13,
float16/bfloat16 two ulps of the half type.  Special values (signed zeros, infinities, NaN)
are compared exactly, signs of zeros included.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import pygpukit as gp

BF16 = np.dtype(ml_dtypes.bfloat16)
TOL = {np.dtype(np.float32): 4e-6, np.dtype(np.float64): 1e-13, np.dtype(np.float16): 2e-3,
       BF16: 1.6e-2}
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1e-30, -1e-30,
           1e30, -1e30, 0.999, -0.999, 30.0, -30.0]

UNARY = [("acos", np.arccos), ("asin", np.arcsin), ("atan", np.arctan), ("acosh", np.arccosh),
         ("asinh", np.arcsinh), ("atanh", np.arctanh), ("sinh", np.sinh), ("cosh", np.cosh),
         ("tan", np.tan), ("log2", np.log2), ("log10", np.log10), ("trunc", np.trunc),
         ("isfinite", np.isfinite), ("signbit", np.signbit)]
BINARY = [("atan2", np.arctan2), ("hypot", np.hypot), ("logaddexp", np.logaddexp),
          ("copysign", np.copysign), ("nextafter", np.nextafter)]


def values(dtype: np.dtype[Any], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    random = np.concatenate([rng.uniform(-4, 4, 60), rng.uniform(-1, 1, 30)])
    return np.concatenate([random, SPECIAL]).astype(dtype)


def compare(got: gp.GPUArray, expected: np.ndarray) -> None:
    host = got.to_numpy()
    assert host.dtype == expected.dtype and host.shape == expected.shape
    if expected.dtype.kind in "iub":
        np.testing.assert_array_equal(host, expected)
        return
    h, e = host.astype(np.float64), expected.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(h), np.isnan(e))
    finite = np.isfinite(e)
    np.testing.assert_array_equal(h[~finite & ~np.isnan(e)], e[~finite & ~np.isnan(e)])
    tol = TOL[expected.dtype]
    np.testing.assert_allclose(h[finite], e[finite], rtol=tol, atol=tol * 1e-3)
    zeros = finite & (e == 0)
    np.testing.assert_array_equal(np.signbit(h[zeros]), np.signbit(e[zeros]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("name", "ref"), UNARY, ids=[u[0] for u in UNARY])
def test_unary_vs_numpy(backend: str, name: str, ref: Any, dtype: Any) -> None:
    x = values(np.dtype(dtype))
    with np.errstate(all="ignore"):
        expected = ref(x.astype(np.float64)).astype(ref(x).dtype)
    compare(getattr(gp, name)(gp.from_numpy(x)), expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("name", "ref"), BINARY, ids=[b[0] for b in BINARY])
def test_binary_vs_numpy(backend: str, name: str, ref: Any, dtype: Any) -> None:
    x = values(np.dtype(dtype))
    y = np.random.default_rng(1).permutation(x)
    with np.errstate(all="ignore"):
        expected = (ref(x, y) if name == "nextafter"
                    else ref(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype))
    compare(getattr(gp, name)(gp.from_numpy(x), gp.from_numpy(y)), expected)


def test_atan2_quadrants_and_scalars(backend: str) -> None:
    ys = np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, np.inf, np.inf, -np.inf, 1.0, 1.0])
    xs = np.array([0.0, 0.0, -0.0, -0.0, 0.0, -0.0, np.inf, -np.inf, 5.0, np.inf, -np.inf])
    compare(gp.atan2(gp.from_numpy(ys), gp.from_numpy(xs)), np.arctan2(ys, xs))
    compare(gp.atan2(gp.from_numpy(ys), 2.0), np.arctan2(ys, 2.0))
    compare(gp.atan2(1.0, gp.from_numpy(xs)), np.arctan2(1.0, xs))


@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_half_types_compute_in_float32(backend: str, dtype: Any) -> None:
    x = np.linspace(-0.9, 0.9, 37).astype(dtype)
    for name, ref in [("asin", np.arcsin), ("atanh", np.arctanh), ("tan", np.tan)]:
        expected = ref(x.astype(np.float64)).astype(dtype)
        compare(getattr(gp, name)(gp.from_numpy(x)), expected)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64])
def test_shifts_vs_numpy(backend: str, dtype: Any) -> None:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    a = rng.integers(info.min, info.max, 300, dtype=dtype, endpoint=True)
    s = rng.integers(0, 8 * np.dtype(dtype).itemsize + 4, 300).astype(dtype)
    ga, gs = gp.from_numpy(a), gp.from_numpy(s)
    compare(gp.bitwise_left_shift(ga, gs), np.left_shift(a, s))
    compare(gp.bitwise_right_shift(ga, gs), np.right_shift(a, s))
    compare(gp.bitwise_right_shift(ga, 3), np.right_shift(a, 3))


def test_integer_inputs_and_identities(backend: str) -> None:
    i = np.array([-3, 0, 7], np.int16)
    compare(gp.trunc(gp.from_numpy(i)), np.trunc(i))
    compare(gp.isfinite(gp.from_numpy(i)), np.isfinite(i))
    compare(gp.signbit(gp.from_numpy(i)), np.signbit(i))
    compare(gp.acos(gp.from_numpy(np.array([0, 1], np.int8))),
            np.arccos(np.array([0, 1], np.int8)))
    f = np.array([1.5, -2.0], np.float32)
    compare(gp.positive(gp.from_numpy(f)), f)
    compare(gp.real(gp.from_numpy(f)), f)
    compare(gp.imag(gp.from_numpy(f)), np.zeros_like(f))
    compare(gp.conj(gp.from_numpy(f)), f)
    compare(gp.pow(gp.from_numpy(f), 2), f**2)


def test_out_and_errors(backend: str) -> None:
    x = gp.from_numpy(np.array([0.25, 0.5], np.float32))
    out = gp.empty(2, gp.float64)
    assert gp.atan(x, out=out) is out
    np.testing.assert_allclose(out.to_numpy(), np.arctan([0.25, 0.5]), rtol=1e-6)
    with pytest.raises(TypeError, match="x must be a GPUArray"):
        gp.tan([1.0])
    with pytest.raises(TypeError, match="at least one operand"):
        gp.hypot(1.0, 2.0)
    with pytest.raises(TypeError, match="bitwise_left_shift"):
        gp.bitwise_left_shift(x, 1)
    with pytest.raises(ValueError, match="out has shape"):
        gp.sinh(x, out=gp.empty(3))
