"""Elementwise math on both backends vs NumPy (computed in float64 for floating results).

Tolerances (relative, plus the same absolute near zero), written down per result dtype:
float16 2e-3 (two ulps), bfloat16 1.6e-2 (two ulps), float32 2e-6 (transcendentals: 1e-5),
float64 1e-12; integer and bool results are exact.
"""

from __future__ import annotations

import warnings
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import pygpukit as gp

BF16 = np.dtype(ml_dtypes.bfloat16)
TOL = {np.dtype(np.float16): 2e-3, BF16: 1.6e-2, np.dtype(np.float32): 2e-6,
       np.dtype(np.float64): 1e-12}
TRANSCENDENTAL_TOL = {np.dtype(np.float32): 1e-5}
FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
INTS = [np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.int64)]
SHAPES = [(0,), (1,), (7,), (3, 5), (2, 1, 9), ()]


def rand(shape: tuple[int, ...], dtype: np.dtype[Any], seed: int = 0, *,
         positive: bool = False) -> np.ndarray:
    """Random values (never zero) representable in ``dtype``."""
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        lo = 1 if positive or dtype.kind == "u" else -9
        v = rng.integers(lo, 10, shape)
        v[v == 0] = 3
        return v.astype(dtype)
    v = rng.uniform(0.25, 4.0, shape)
    if not positive:
        v *= rng.choice([-1.0, 1.0], shape)
    return v.astype(dtype)


def check(got: gp.GPUArray, expected: np.ndarray, *, tol: float | None = None) -> None:
    host = got.to_numpy()
    assert host.dtype == expected.dtype, (host.dtype, expected.dtype)
    assert host.shape == expected.shape
    if expected.dtype in TOL:
        t = tol if tol is not None else TOL[expected.dtype]
        np.testing.assert_allclose(host.astype(np.float64), expected.astype(np.float64),
                                   rtol=t, atol=t, equal_nan=True)
    else:
        np.testing.assert_array_equal(host, expected)


def reference(ufunc: Any, *args: Any) -> np.ndarray:
    """NumPy's result dtype, floating values computed in float64."""
    with np.errstate(all="ignore"):
        exact = ufunc(*args)
        if np.asarray(exact).dtype in TOL:
            wide = [a.astype(np.float64) if isinstance(a, np.ndarray) else a for a in args]
            return np.asarray(ufunc(*wide)).astype(np.asarray(exact).dtype)
        return np.asarray(exact)


ARITH = ["add", "subtract", "multiply", "divide", "maximum", "minimum"]


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
@pytest.mark.parametrize("op", ARITH)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_arithmetic_matches_numpy(backend: str, op: str, dtype: np.dtype[Any],
                                  shape: tuple[int, ...]) -> None:
    a, b = rand(shape, dtype, 1), rand(shape, dtype, 2)
    got = getattr(gp, op)(gp.from_numpy(a), gp.from_numpy(b))
    check(got, reference(getattr(np, "true_divide" if op == "divide" else op), a, b))


OTHER_BINARY = ["power", "floor_divide", "remainder", "bitwise_and", "bitwise_or", "bitwise_xor",
                "logical_and", "logical_or", "logical_xor", "equal", "not_equal", "less",
                "less_equal", "greater", "greater_equal"]
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor")
OTHER_DTYPES = [np.dtype(np.int8), np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float32),
                np.dtype(np.float64), np.dtype(np.float16), BF16]


# Bitwise ops on floating dtypes are the refusal test below, not a case here.
@pytest.mark.parametrize(("op", "dtype"), [
    (op, dtype) for op in OTHER_BINARY for dtype in OTHER_DTYPES
    if op not in BITWISE or dtype.kind in "iu"], ids=str)
def test_other_binary_ops_match_numpy(backend: str, op: str, dtype: np.dtype[Any]) -> None:
    positive = op == "power"
    a, b = rand((4, 33), dtype, 3, positive=positive), rand((4, 33), dtype, 4, positive=positive)
    if op == "power" and dtype.kind in "iu":
        b = (np.abs(b.astype(np.int64)) % 4).astype(dtype)
    tol = 1e-5 if op == "power" and dtype == np.float32 else None
    check(getattr(gp, op)(gp.from_numpy(a), gp.from_numpy(b)), reference(getattr(np, op), a, b),
          tol=tol)


@pytest.mark.parametrize("op", BITWISE)
@pytest.mark.parametrize("dtype", [d for d in OTHER_DTYPES if d.kind not in "iu"], ids=str)
def test_bitwise_ops_refuse_floating_dtypes(backend: str, op: str, dtype: np.dtype[Any]) -> None:
    a, b = rand((4, 33), dtype, 3), rand((4, 33), dtype, 4)
    with pytest.raises(TypeError, match=op):
        getattr(gp, op)(gp.from_numpy(a), gp.from_numpy(b))


def test_broadcasting_and_strided_views(backend: str) -> None:
    a = rand((6, 1, 10), np.dtype(np.float32), 5)
    b = rand((4, 20), np.dtype(np.float32), 6)
    ga, gb = gp.from_numpy(a), gp.from_numpy(b)
    check(ga + gb[:, ::2], reference(np.add, a, b[:, ::2]))
    check(ga[::-2] * gb.T[::2, :1].T, reference(np.multiply, a[::-2], b.T[::2, :1].T))
    with pytest.raises(ValueError, match="broadcast"):
        ga + gb


@pytest.mark.parametrize("dtype", FLOATS + INTS + [np.dtype(np.bool_)], ids=str)
@pytest.mark.parametrize("scalar", [2, 1.5, True])
def test_weak_scalars_follow_nep50(backend: str, dtype: np.dtype[Any], scalar: Any) -> None:
    a = rand((9,), dtype, 7)
    ga = gp.from_numpy(a)
    for left in (False, True):
        try:
            expected = reference(np.add, scalar, a) if left else reference(np.add, a, scalar)
        except TypeError:
            continue
        got = (scalar + ga) if left else (ga + scalar)
        check(got, expected)
    check(ga * scalar, reference(np.multiply, a, scalar))
    check(ga < scalar, reference(np.less, a, scalar))


def test_python_int_out_of_range_raises_overflow(backend: str) -> None:
    with pytest.raises(OverflowError, match="300"):
        gp.from_numpy(np.ones(3, np.uint8)) + 300


def test_mixed_dtype_promotion(backend: str) -> None:
    a, b = rand((5,), np.dtype(np.int8), 1), rand((5,), np.dtype(np.float16), 2)
    check(gp.from_numpy(a) + gp.from_numpy(b), reference(np.add, a, b))
    c = rand((5,), BF16, 3)
    check(gp.from_numpy(c) * gp.from_numpy(b), reference(np.multiply, c, b))
    d = rand((5,), np.dtype(np.int32), 4)
    check(gp.from_numpy(d) / gp.from_numpy(a), reference(np.true_divide, d, a))


def test_out_and_in_place(backend: str) -> None:
    a, b = rand((3, 4), np.dtype(np.float32), 1), rand((4,), np.dtype(np.float32), 2)
    ga = gp.from_numpy(a)
    out = gp.empty((3, 4), np.float16)
    r = gp.multiply(ga, gp.from_numpy(b), out=out)
    assert r is out
    check(out, reference(np.multiply, a, b).astype(np.float16))
    ga += gp.from_numpy(b)
    ga *= 2
    check(ga, ((a + b) * 2).astype(np.float32))
    gi = gp.from_numpy(np.arange(1, 5, dtype=np.int32))
    with pytest.raises(TypeError, match="same_kind"):
        gi /= 2
    with pytest.raises(ValueError, match="shape"):
        gp.add(ga, ga, out=gp.empty((4,), np.float32))
    v = gp.from_numpy(np.arange(8, dtype=np.float64))
    v[1:] += v[:-1]  # overlapping out: staged, NumPy's result
    expected = np.arange(8, dtype=np.float64)
    expected[1:] = expected[1:] + np.arange(7, dtype=np.float64)
    check(v, expected)


def test_operators(backend: str) -> None:
    a, b = rand((7,), np.dtype(np.int32), 1), rand((7,), np.dtype(np.int32), 2)
    ga, gb = gp.from_numpy(a), gp.from_numpy(b)
    check(ga - gb, a - b)
    check(ga // gb, a // b)
    check(ga % gb, a % b)
    check(ga & gb, a & b)
    check(ga | gb, a | b)
    check(ga ^ gb, a ^ b)
    check(-ga, -a)
    check(abs(ga), abs(a))
    check(~ga, ~a)
    check(ga == gb, a == b)
    check(ga != gb, a != b)
    check(ga >= 0, a >= 0)
    check(10 - ga, 10 - a)
    check(gp.sub(ga, gb), a - b)
    check(gp.mul(ga, gb), a * b)
    check(gp.div(ga, gb), a / b)
    with pytest.raises(TypeError):
        ga + "x"  # type: ignore[operator]
    with pytest.raises(TypeError, match="GPUArray"):
        gp.add(1, 2)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int8,
                                   np.int32, np.int64], ids=lambda t: np.dtype(t).name)
def test_power_of_two_is_square_as_numpy_computes_it(backend: str, dtype: Any) -> None:
    # NumPy's ** operator computes x ** 2 as square(x): the same bits, the dtype kept.
    a = (rand((1000,), np.dtype(np.float32), 3) * 10).astype(dtype)
    g = gp.from_numpy(a)
    for exponent in (2, 2.0) if np.dtype(dtype).kind != "i" else (2,):
        got = (g ** exponent).to_numpy()
        assert got.dtype == a.dtype
        assert np.array_equal(got, np.square(a)), exponent
    # a view, and 16 elements (the small-array path)
    check(g[::3] ** 2, np.square(a[::3]))
    assert np.array_equal((g[:16] ** 2).to_numpy(), np.square(a[:16]))
    # other exponents and reflected power stay pow
    check(g[:8] ** 3, a[:8] ** 3)
    if np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.float64)):  # no overflow
        check(2 ** g[:8], 2 ** a[:8])


def test_bool_squared_is_int8_as_numpy(backend: str) -> None:
    a = np.array([True, False, True] * 7)
    got = gp.from_numpy(a) ** 2
    assert got.dtype == (a ** 2).dtype == np.int8
    np.testing.assert_array_equal(got.to_numpy(), a ** 2)


UNARY = ["negative", "absolute", "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tanh",
         "floor", "ceil", "rint", "sign", "isnan", "isinf", "square", "reciprocal"]
POSITIVE_ONLY = {"log", "log1p", "sqrt"}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", UNARY)
def test_unary_matches_numpy(backend: str, op: str, dtype: np.dtype[Any]) -> None:
    a = rand((3, 17), dtype, 8, positive=op in POSITIVE_ONLY)
    tol = TRANSCENDENTAL_TOL.get(dtype)
    check(getattr(gp, op)(gp.from_numpy(a)[:, ::2]), reference(getattr(np, op), a[:, ::2]),
          tol=tol)


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_unary_on_integers(backend: str, dtype: np.dtype[Any]) -> None:
    a = rand((11,), dtype, 9)
    ga = gp.from_numpy(a)
    for op in ("negative", "absolute", "sign", "square", "isnan", "exp", "sqrt", "invert",
               "reciprocal", "floor", "rint"):
        check(getattr(gp, op)(ga), reference(getattr(np, op), a), tol=1e-5)
    with pytest.raises(TypeError, match="negative"):
        gp.negative(gp.from_numpy(np.ones(2, bool)))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _gelu_erf(x: np.ndarray) -> np.ndarray:
    from math import erf

    return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_activations(backend: str, dtype: np.dtype[Any]) -> None:
    a = rand((5, 13), dtype, 10)
    x = a.astype(np.float64)
    ga = gp.from_numpy(a)
    tol = TRANSCENDENTAL_TOL.get(dtype, TOL[dtype])
    check(gp.sigmoid(ga), _sigmoid(x).astype(dtype), tol=tol)
    check(gp.silu(ga), (x * _sigmoid(x)).astype(dtype), tol=tol)
    check(gp.relu(ga), np.maximum(x, 0).astype(dtype))
    check(gp.gelu(ga), _gelu_erf(x).astype(dtype), tol=tol)
    check(gp.gelu(ga, approximate="tanh"), _gelu_tanh(x).astype(dtype), tol=tol)
    check(gp.rsqrt(gp.abs(ga)), (1 / np.sqrt(np.abs(x))).astype(dtype), tol=tol)
    with pytest.raises(ValueError, match="approximate"):
        gp.gelu(ga, approximate="fast")


def test_round_is_half_to_even(backend: str) -> None:
    a = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4, 2.6], np.float32)
    check(gp.round(gp.from_numpy(a)), np.round(a))


def test_where_and_clip(backend: str) -> None:
    a, b = rand((4, 6), np.dtype(np.float32), 1), rand((6,), np.dtype(np.float16), 2)
    cond = a > 0
    ga, gb = gp.from_numpy(a), gp.from_numpy(b)
    check(gp.where(gp.from_numpy(cond), ga, gb), np.where(cond, a, b))
    check(gp.where(ga > 0, ga, 0.0), np.where(cond, a, np.float32(0.0)))
    check(gp.where(ga, 1, gb), np.where(a, np.float16(1), b))
    check(gp.clip(ga, -1.0, 2.0), np.clip(a, -1.0, 2.0))
    check(gp.clip(ga, None, 0.5), np.clip(a, None, np.float32(0.5)))
    check(gp.maximum(gp.from_numpy(np.array([np.nan, 1.0])), 0.0), np.array([np.nan, 1.0]))


REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "argmax", "argmin", "any",
              "all"]
RED_SHAPES = [((1,), None), ((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), (0, 2)),
              ((2, 3, 4), None), ((4, 1, 6), -1), ((70000,), None), ((3, 40000), 1), ((0, 3), 1)]


def _reduction_tol(name: str, dtype: np.dtype[Any], n: int) -> float | None:
    if dtype == np.float32 and name in ("sum", "mean", "var", "std", "prod"):
        return 1e-5 if n < 1000 else 1e-4
    if dtype == np.float64:
        return 1e-10
    return None


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64),
                                   np.dtype(np.float16), BF16, np.dtype(np.int32),
                                   np.dtype(np.int8), np.dtype(np.bool_)], ids=str)
# argmax/argmin take an int axis only (NumPy's rule): their refusal of a tuple is tested in
# test_reductions_keepdims_methods_and_errors.
@pytest.mark.parametrize(("name", "shape", "axis"), [
    (name, shape, axis) for name in REDUCTIONS for shape, axis in RED_SHAPES
    if not (name.startswith("arg") and isinstance(axis, tuple))], ids=str)
def test_reductions_match_numpy(backend: str, name: str, dtype: np.dtype[Any],
                                shape: tuple[int, ...], axis: Any) -> None:
    if name == "prod":
        x = rand(shape, dtype, 11, positive=True)
        if dtype.kind == "f" or dtype == BF16:
            x = (1 + (x.astype(np.float64) - 1) / 1e3).astype(dtype)  # products stay finite
    else:
        x = rand(shape, dtype, 11)
    gx = gp.from_numpy(x)
    numpy_fn = getattr(np, name)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        exact = np.asarray(numpy_fn(x, axis=axis))
        wide = np.asarray(numpy_fn(x.astype(np.float64) if x.dtype in TOL else x, axis=axis))
    result_dtype = np.dtype(np.int64) if exact.dtype == np.uint64 else exact.dtype
    got = getattr(gp, name)(gx, axis=axis)
    if name.startswith("arg"):
        check(got, exact)  # exact: the first extreme, ties included
    else:
        with np.errstate(over="ignore"):
            expected = wide.astype(result_dtype)
        check(got, expected, tol=_reduction_tol(name, dtype, max(1, x.size)))


def test_reductions_keepdims_methods_and_errors(backend: str) -> None:
    x = rand((3, 4, 5), np.dtype(np.float32), 12)
    gx = gp.from_numpy(x)
    check(gx.sum(axis=(0, 2), keepdims=True), x.astype(np.float64).sum(axis=(0, 2),
                                                                       keepdims=True)
          .astype(np.float32), tol=1e-5)
    check(gx[:, ::2, ::-1].max(axis=1), x[:, ::2, ::-1].max(axis=1))
    check(gx.argmin(axis=1, keepdims=True), x.argmin(axis=1, keepdims=True))
    check(gx.var(ddof=1), np.asarray(x.astype(np.float64).var(ddof=1)).astype(np.float32),
          tol=1e-5)
    check(gx.any(axis=0), x.any(axis=0))
    check(gx.all(), np.asarray(x.all()))
    assert gx.sum().dtype == np.float32 and gx.mean().item() == pytest.approx(x.mean(), 1e-5)
    with pytest.raises(ValueError, match="duplicate"):
        gx.sum(axis=(0, 0))
    with pytest.raises(IndexError, match="out of bounds"):
        gx.sum(axis=3)
    with pytest.raises(TypeError, match="int or None"):
        gp.argmax(gx, axis=(0, 1))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="empty"):
        gp.argmax(gp.empty((0,)))
    nan = gp.from_numpy(np.array([1.0, np.nan, 3.0, np.nan], np.float32))
    assert np.isnan(nan.max().item()) and nan.argmax().item() == 1


def test_reductions_are_deterministic(backend: str) -> None:
    x = gp.from_numpy(rand((300000,), np.dtype(np.float32), 13))
    first = x.sum().item()
    assert all(x.sum().item() == first for _ in range(5))


def test_reduction_out_and_strided_out(backend: str) -> None:
    x = rand((4, 6), np.dtype(np.float32), 14)
    gx = gp.from_numpy(x)
    out = gp.zeros((4, 2), np.float64)
    view = out[:, 1]  # strided: written through a temporary
    assert gp.sum(gx, axis=1, out=view) is view
    check(out, np.stack([np.zeros(4), x.astype(np.float64).sum(axis=1)], axis=1)
          .astype(np.float64), tol=1e-5)
    with pytest.raises(ValueError, match="shape"):
        gp.max(gx, axis=0, out=gp.empty((4,)))


def test_reduction_plans_are_reused_and_keep_the_checks(backend: str) -> None:
    # Plans are cached per (op, dtype, layout, axis, keepdims): the second call of each
    # spelling takes the cached plan and gives the same bits; refused spellings stay refused.
    x = rand((5, 6, 7), np.dtype(np.float32), 40)
    gx = gp.from_numpy(x)
    for view, host in ((gx, x), (gx[1:4, ::2, ::-1], x[1:4, ::2, ::-1])):
        for axis in (None, 0, -1, (0, 2), (1,), ()):
            for keepdims in (False, True):
                first = view.sum(axis=axis, keepdims=keepdims)
                again = view.sum(axis=axis, keepdims=keepdims)
                assert first.shape == again.shape == host.sum(axis=axis, keepdims=keepdims).shape
                assert first.to_numpy().tobytes() == again.to_numpy().tobytes()
                check(first, host.astype(np.float64).sum(axis=axis, keepdims=keepdims)
                      .astype(np.float32), tol=1e-5)
    gx.sum(axis=1)
    with pytest.raises(TypeError):
        gx.sum(axis=1.0)  # type: ignore[arg-type]  # equal to the cached 1, still refused
    gx.sum(axis=(1,))
    with pytest.raises(TypeError):
        gx.sum(axis=(1.0,))  # type: ignore[arg-type]
    assert gx.sum(axis=np.int64(1)).shape == (5, 7)
    with pytest.raises(TypeError):
        gx.sum(axis=[0, 2])  # type: ignore[arg-type]  # a list (unhashable): refused as before
    for _ in range(2):
        with pytest.raises(ValueError, match="no identity"):
            gp.empty((0, 3)).max(axis=0)
    assert gp.argmax(gx, keepdims=True).shape == (1, 1, 1)
    assert gp.argmax(gx, axis=1, keepdims=True).shape == (5, 1, 7)
    # keepdims into out=: a contiguous out, and a strided one written through a temporary.
    out = gp.zeros((5, 1, 7), np.float32)
    assert gp.sum(gx, axis=1, keepdims=True, out=out) is out
    wide = gp.zeros((5, 1, 14), np.float32)
    strided = wide[:, :, ::2]
    assert gp.sum(gx, axis=1, keepdims=True, out=strided) is strided
    assert out.to_numpy().tobytes() == strided.to_numpy().tobytes()
    check(out, x.astype(np.float64).sum(axis=1, keepdims=True).astype(np.float32), tol=1e-5)


def test_numpy_sum_with_dtype_and_keepdims(backend: str) -> None:
    # What dask's chunk step calls: np.sum(chunk, axis=(0,), dtype=<its dtype>, keepdims=True).
    x = rand((300,), np.dtype(np.float32), 41)
    gx = gp.from_numpy(x)
    got = np.sum(gx, axis=(0,), dtype=np.dtype(np.float32), keepdims=True)
    assert isinstance(got, gp.GPUArray) and got.shape == (1,) and got.dtype == np.float32
    assert got.to_numpy().tobytes() == gx.sum(axis=(0,), keepdims=True).to_numpy().tobytes()
    wide = np.sum(gx, axis=0, dtype=np.float64)
    assert wide.dtype == np.float64
    check(wide, np.asarray(x.astype(np.float64).sum()), tol=1e-12)
    with pytest.raises(TypeError, match="initial"):
        np.sum(gx, initial=1.0)
    with pytest.raises(TypeError, match="where"):
        np.sum(gx, where=np.True_)


def test_elementwise_type_resolution_is_cached_not_its_errors(backend: str) -> None:
    a = gp.from_numpy(rand((9,), np.dtype(np.int16), 42))
    for _ in range(2):
        assert (a + 1).dtype == np.int16 and (a + 1.5).dtype == np.float64
        assert (a + np.float32(1)).dtype == np.float32
        assert gp.sqrt(a).dtype == np.float32
        with pytest.raises(TypeError):
            gp.bitwise_and(gp.ones(3), gp.ones(3))


def test_concatenate_promotes_skips_empty_and_joins_any_axis(backend: str) -> None:
    a = rand((2, 3, 4), np.dtype(np.int32), 43)
    b = rand((2, 5, 4), np.dtype(np.float32), 44)
    ga, gb = gp.from_numpy(a), gp.from_numpy(b)
    empty = gp.empty((2, 0, 4), np.int32)
    got = gp.concatenate([ga, empty, gb, ga[:, ::-2]], axis=1)
    want = np.concatenate([a, np.empty((2, 0, 4), np.int32), b, a[:, ::-2]], axis=1)
    assert got.dtype == want.dtype == np.float64
    check(got, want)
    same = gp.concatenate([ga, ga[:, :1], ga], axis=-2)
    assert same.dtype == np.int32
    check(same, np.concatenate([a, a[:, :1], a], axis=-2))
    assert gp.concatenate([empty, empty], axis=1).shape == (2, 0, 4)
    check(gp.concatenate([ga[:1], ga]), np.concatenate([a[:1], a]))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_softmax_and_norms(backend: str, dtype: np.dtype[Any]) -> None:
    x = rand((3, 4, 33), dtype, 15)
    w, b = rand((33,), dtype, 16), rand((33,), dtype, 17)
    xd, wd, bd = (v.astype(np.float64) for v in (x, w, b))
    gx = gp.from_numpy(x)
    tol = {np.dtype(np.float32): 1e-5}.get(dtype, TOL[dtype] * 2)
    e = np.exp(xd - xd.max(-1, keepdims=True))
    check(gp.softmax(gx), (e / e.sum(-1, keepdims=True)).astype(dtype), tol=tol)
    e0 = np.exp(xd - xd.max(0, keepdims=True))
    check(gp.softmax(gx, axis=0), (e0 / e0.sum(0, keepdims=True)).astype(dtype), tol=tol)
    lsm = xd - xd.max(-1, keepdims=True)
    lsm = lsm - np.log(np.exp(lsm).sum(-1, keepdims=True))
    check(gp.log_softmax(gx), lsm.astype(dtype), tol=tol * 4)
    mu, var = xd.mean(-1, keepdims=True), xd.var(-1, keepdims=True)
    ln = (xd - mu) / np.sqrt(var + 1e-5) * wd + bd
    check(gp.layer_norm(gx, gp.from_numpy(w), gp.from_numpy(b)), ln.astype(dtype), tol=tol * 4)
    rms = xd / np.sqrt((xd * xd).mean(-1, keepdims=True) + 1e-6) * wd
    check(gp.rms_norm(gx, gp.from_numpy(w)), rms.astype(dtype), tol=tol * 4)
    with pytest.raises(TypeError, match="floating"):
        gp.softmax(gp.from_numpy(np.ones(3, np.int32)))


def test_concatenate_and_stack(backend: str) -> None:
    a, b = rand((2, 3), np.dtype(np.float32), 18), rand((4, 3), np.dtype(np.float16), 19)
    ga, gb = gp.from_numpy(a), gp.from_numpy(b)
    check(gp.concatenate([ga, gb]), np.concatenate([a, b]))
    check(gp.concatenate([ga.T, gb[::2].T], axis=1), np.concatenate([a.T, b[::2].T], axis=1))
    check(gp.stack([ga, ga * 2], axis=1), np.stack([a, a * 2], axis=1))
    check(gp.stack([ga, ga], axis=-1), np.stack([a, a], axis=-1))
    with pytest.raises(ValueError, match="must match exactly"):
        gp.concatenate([ga, gb], axis=1)
    with pytest.raises(ValueError, match="same shape"):
        gp.stack([ga, gb])
    with pytest.raises(ValueError, match="at least one"):
        gp.concatenate([])


# -- fast paths: contiguous unary, 2-D broadcast, vectorized reductions, fused row norms ------
# The vectorized kernels take 16-byte packs: sizes below cover multiples of the pack, tails,
# odd sizes and misaligned starts (views at an offset), on both backends.
FAST_SIZES = [1, 7, 64, 1000, 4099]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("n", FAST_SIZES)
def test_unary_contiguous_fast_path(backend: str, dtype: np.dtype[Any], n: int) -> None:
    a = rand((n + 1,), dtype, 30, positive=True)
    g = gp.from_numpy(a)
    tol = {np.dtype(np.float32): 1e-5}.get(dtype, TOL[dtype] * 2)
    for view, host in ((g[:n], a[:n]), (g[1:], a[1:])):  # aligned and misaligned starts
        for op in UNARY:
            check(getattr(gp, op)(view), reference(getattr(np, op), host), tol=tol)
        xd = host.astype(np.float64)
        gelu = 0.5 * xd * (1 + np.tanh(0.7978845608028654 * (xd + 0.044715 * xd ** 3)))
        check(gp.gelu(view, approximate="tanh"), gelu.astype(dtype), tol=tol)
        check(gp.sigmoid(view), (1 / (1 + np.exp(-xd))).astype(dtype), tol=tol)
        check(gp.rsqrt(view), (1 / np.sqrt(xd)).astype(dtype), tol=tol)
        check(gp.relu(-view), np.maximum(-xd, 0).astype(dtype))
        check(gp.silu(view), (xd / (1 + np.exp(-xd))).astype(dtype), tol=tol)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("n", [1000, 20011, 70003])
def test_binary_contiguous_fast_path(backend: str, dtype: np.dtype[Any], n: int) -> None:
    # Sizes spanning several blocks of the unrolled vector kernel, with a tail, aligned and
    # misaligned views, both scalar sides; add / multiply bit-exact vs NumPy's own dtype
    # arithmetic (float16 / bfloat16: computed in float32, rounded once, as ml_dtypes).
    a, b = rand((n + 1,), dtype, 36), rand((n + 1,), dtype, 37)
    ga, gb = gp.from_numpy(a), gp.from_numpy(b)
    for (va, ha), (vb, hb) in (((ga[:n], a[:n]), (gb[:n], b[:n])),
                               ((ga[1:], a[1:]), (gb[1:], b[1:]))):
        for op in ARITH:
            check(getattr(gp, op)(va, vb), reference(getattr(np, op), ha, hb))
        for op in ("add", "multiply"):
            want = getattr(np, op)(ha, hb)
            assert getattr(gp, op)(va, vb).to_numpy().tobytes() == want.tobytes()
        check(va * 1.5, reference(np.multiply, ha, 1.5))
        check(2.5 - va, reference(np.subtract, 2.5, ha))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize(("shape", "other"), [((5, 64), (64,)), ((5, 64), (5, 1)),
                                              ((3, 8), (1, 8)), ((4, 24), (4, 24)),
                                              ((2, 3, 16), (3, 16)), ((6, 7), (7,)),
                                              ((1, 32), (32,)), ((0, 16), (16,))], ids=str)
def test_broadcast_rows_fast_path(backend: str, dtype: np.dtype[Any], shape: tuple[int, ...],
                                  other: tuple[int, ...]) -> None:
    a, b = rand(shape, dtype, 31), rand(other, dtype, 32)
    ga, gb = gp.from_numpy(a), gp.from_numpy(b)
    for op in ("add", "subtract", "multiply", "divide", "maximum", "minimum"):
        check(getattr(gp, op)(ga, gb), reference(getattr(np, op), a, b))
        check(getattr(gp, op)(gb, ga), reference(getattr(np, op), b, a))
    if len(shape) == 2 and shape[0] > 1:  # rows further apart than their length: a view
        big = rand((shape[0], shape[1] + 8), dtype, 33)
        gbig = gp.from_numpy(big)[:, 8:]
        check(gp.add(gbig, gb), reference(np.add, big[:, 8:], b))
    check(ga * 2.5, reference(np.multiply, a, 2.5))


VEC_SHAPES = [((4099,), None), ((3, 1000), -1), ((7, 33), 1), ((2, 5, 64), (1, 2)), ((1, 1), -1),
              ((300001,), None), ((2, 0), -1), ((5, 24), 0)]


# Left out: products of more than 5000 values (they leave the float range), and max/min of
# nothing (a ValueError: test_max_min_of_an_empty_axis_raise_like_numpy).
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize(("name", "shape", "axis"), [
    (name, shape, axis) for name in ("sum", "mean", "prod", "max", "min")
    for shape, axis in VEC_SHAPES
    if not (name == "prod" and int(np.prod(shape)) > 5000)
    and not (name in ("max", "min") and int(np.prod(shape)) == 0)], ids=str)
def test_vectorized_reductions(backend: str, dtype: np.dtype[Any], shape: tuple[int, ...],
                               axis: Any, name: str) -> None:
    x = rand(shape, dtype, 34, positive=name == "prod")
    if name == "prod":  # keep products finite: few values near 1
        x = (1 + (x.astype(np.float64) - 2) / 64).astype(dtype)
    gx = gp.from_numpy(x)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        dtype_out = np.asarray(getattr(np, name)(x, axis=axis)).dtype
        want = np.asarray(getattr(np, name)(x.astype(np.float64), axis=axis)).astype(dtype_out)
    n = max(1, x.size // max(1, want.size))
    tol = {np.dtype(np.float32): 1e-6 * float(np.sqrt(n)) + 2e-6}.get(dtype_out, TOL[dtype_out])
    check(getattr(gp, name)(gx, axis=axis), want, tol=tol)
    # a misaligned start: the same values reduced in the same order, bit for bit
    if x.ndim == 1 and x.size > 2:
        view = gp.from_numpy(np.concatenate([x[:1], x]))[1:]
        assert (getattr(gp, name)(view).to_numpy().tobytes()
                == getattr(gp, name)(gx).to_numpy().tobytes())


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize(("shape", "axis"), [((2, 0), -1), ((0,), None), ((3, 0, 2), 1)],
                         ids=str)
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_of_an_empty_axis_raise_like_numpy(backend: str, dtype: np.dtype[Any],
                                                   shape: tuple[int, ...], axis: Any,
                                                   name: str) -> None:
    x = np.zeros(shape, dtype)
    with pytest.raises(ValueError, match="zero-size array"):
        getattr(np, name)(x, axis=axis)  # the rule followed: NumPy's (no identity)
    with pytest.raises(ValueError, match="zero-size array"):
        getattr(gp, name)(gp.from_numpy(x), axis=axis)


def test_vectorized_max_propagates_nan(backend: str) -> None:
    x = rand((5000,), np.dtype(np.float32), 35)
    x[1234] = np.nan
    assert np.isnan(gp.max(gp.from_numpy(x)).item())
    assert np.isnan(gp.min(gp.from_numpy(x.reshape(50, 100)), axis=1).to_numpy()[12])


def test_vectorized_sum_is_bit_identical_across_runs(backend: str) -> None:
    x = gp.from_numpy(rand((1 << 20,), np.dtype(np.float32), 36))
    first = x.sum().to_numpy()
    rows = x.reshape(256, 4096).sum(axis=-1).to_numpy()
    for _ in range(3):
        assert x.sum().to_numpy().tobytes() == first.tobytes()
        assert x.reshape(256, 4096).sum(axis=-1).to_numpy().tobytes() == rows.tobytes()


def _norm_refs(xd: np.ndarray, wd: np.ndarray | None, bd: np.ndarray | None,
               eps: float) -> dict[str, np.ndarray]:
    e = np.exp(xd - xd.max(-1, keepdims=True))
    lsm = xd - xd.max(-1, keepdims=True)
    lsm = lsm - np.log(np.exp(lsm).sum(-1, keepdims=True))
    mu, var = xd.mean(-1, keepdims=True), xd.var(-1, keepdims=True)
    ln = (xd - mu) / np.sqrt(var + eps)
    rms = xd / np.sqrt((xd * xd).mean(-1, keepdims=True) + eps)
    if wd is not None:
        ln, rms = ln * wd, rms * wd
    if bd is not None:
        ln = ln + bd
    return {"softmax": e / e.sum(-1, keepdims=True), "log_softmax": lsm, "layer_norm": ln,
            "rms_norm": rms}


# Row lengths crossing every kernel configuration: a warp per row (1, 2, 4 groups per lane),
# a block per row (1, 2, 4, 8 groups per thread) and the looped kernel for longer rows.
NORM_COLS = [1, 3, 33, 128, 300, 1024, 4096, 9000, 40000]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("cols", NORM_COLS)
def test_row_norms_match_numpy(backend: str, dtype: np.dtype[Any], cols: int) -> None:
    rows = 3 if cols > 4096 else 5
    x = rand((rows, cols), dtype, 40)
    w, b = rand((cols,), np.dtype(np.float32), 41), rand((cols,), np.dtype(np.float32), 42)
    xd = x.astype(np.float64)
    refs = _norm_refs(xd, w.astype(np.float64), b.astype(np.float64), 1e-5)
    tol = {np.dtype(np.float32): 1e-5}.get(dtype, TOL[dtype] * 2)
    gx, gw, gb = gp.from_numpy(x), gp.from_numpy(w), gp.from_numpy(b)
    check(gp.softmax(gx), refs["softmax"].astype(dtype), tol=tol)
    check(gp.log_softmax(gx), refs["log_softmax"].astype(dtype), tol=tol * 4)
    check(gp.layer_norm(gx, gw, gb), refs["layer_norm"].astype(dtype), tol=tol * 4)
    rms = _norm_refs(xd, w.astype(np.float64), None, 1e-6)["rms_norm"]
    check(gp.rms_norm(gx, gw), rms.astype(dtype), tol=tol * 4)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16], ids=str)
def test_row_norms_views_broadcast_and_empty(backend: str, dtype: np.dtype[Any]) -> None:
    x = rand((4, 6, 40), dtype, 43)
    gx = gp.from_numpy(x)
    tol = {np.dtype(np.float32): 1e-5}.get(dtype, TOL[dtype] * 2)
    # strided views: every other row and column, a transposed view, an offset start
    for gview, host in ((gx[:, ::2, ::3], x[:, ::2, ::3]), (gx.swapaxes(1, 2), x.swapaxes(1, 2)),
                        (gx[1:, :, 1:], x[1:, :, 1:])):
        hd = host.astype(np.float64)
        refs = _norm_refs(hd, None, None, 1e-5)
        check(gp.softmax(gview), refs["softmax"].astype(dtype), tol=tol)
        check(gp.layer_norm(gview), refs["layer_norm"].astype(dtype), tol=tol * 4)
        check(gp.rms_norm(gview, eps=1e-5), refs["rms_norm"].astype(dtype), tol=tol * 4)
    # softmax over another axis
    e = np.exp(x.astype(np.float64) - x.astype(np.float64).max(1, keepdims=True))
    check(gp.softmax(gx, axis=1), (e / e.sum(1, keepdims=True)).astype(dtype), tol=tol)
    # weight/bias: (1, n), a scalar-like (1,), a strided view, another dtype
    w = rand((2, 40), np.dtype(np.float64), 44)
    xd = x.astype(np.float64)
    ln = _norm_refs(xd, w[0], np.float64(w[1, 0]), 1e-3)["layer_norm"]
    got = gp.layer_norm(gx, gp.from_numpy(w)[:1], gp.from_numpy(w)[1, :1], eps=1e-3)
    check(got, ln.astype(dtype), tol=tol * 4)
    ws = rand((80,), np.dtype(np.float32), 45)
    rms = _norm_refs(xd, ws[::2].astype(np.float64), None, 1e-6)["rms_norm"]
    check(gp.rms_norm(gx, gp.from_numpy(ws)[::2]), rms.astype(dtype), tol=tol * 4)
    # shapes with 0 and 1
    for shape in ((0, 5), (3, 0), (1, 1), (1,), (2, 1)):
        h = rand(shape, dtype, 46)
        if h.size == 0:
            check(gp.softmax(gp.from_numpy(h)), h)
            check(gp.layer_norm(gp.from_numpy(h)), h)
            continue
        refs = _norm_refs(h.astype(np.float64), None, None, 1e-5)
        check(gp.softmax(gp.from_numpy(h)), refs["softmax"].astype(dtype), tol=tol)
        check(gp.layer_norm(gp.from_numpy(h)), refs["layer_norm"].astype(dtype), tol=tol)


def test_row_norm_nan_and_determinism(backend: str) -> None:
    x = rand((4, 4096), np.dtype(np.float32), 47)
    x[2, 100] = np.nan
    got = gp.softmax(gp.from_numpy(x)).to_numpy()
    assert np.isnan(got[2]).all() and not np.isnan(got[[0, 1, 3]]).any()
    g = gp.from_numpy(rand((64, 4096), np.dtype(np.float32), 48))
    first = gp.layer_norm(g).to_numpy().tobytes()
    assert all(gp.layer_norm(g).to_numpy().tobytes() == first for _ in range(3))


def test_row_norm_errors(backend: str) -> None:
    gx = gp.from_numpy(rand((3, 8), np.dtype(np.float32), 49))
    with pytest.raises(TypeError, match="floating"):
        gp.layer_norm(gp.from_numpy(np.ones((2, 3), np.int64)))
    with pytest.raises(TypeError, match="GPUArray"):
        gp.softmax(np.ones(3))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one dimension"):
        gp.softmax(gp.from_numpy(np.array(1.0, np.float32)))
    with pytest.raises(ValueError, match="broadcast"):
        gp.layer_norm(gx, gp.from_numpy(np.ones(5, np.float32)))
    with pytest.raises(ValueError, match="broadcast"):
        gp.rms_norm(gx, gp.from_numpy(np.ones((3, 8), np.float32)))
    with pytest.raises(TypeError, match="weight must be a GPUArray"):
        gp.layer_norm(gx, np.ones(8, np.float32))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="eps"):
        gp.layer_norm(gx, eps=-1.0)
    with pytest.raises(IndexError, match="axis"):
        gp.softmax(gx, axis=2)
