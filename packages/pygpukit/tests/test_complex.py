"""complex64 / complex128 on both backends vs NumPy (pygpukit._complex composes them).

Tolerances (relative, plus the same absolute near zero) per complex dtype: complex64 2e-6 for
arithmetic, 2e-5 for composed transcendental functions (several float32 roundings), 1e-5 for
products and reductions; complex128 1e-12 (1e-10 for the transcendental compositions).
"""

from __future__ import annotations

import warnings
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import pygpukit as gp
from pygpukit import _fastpath
from pygpukit._dtypes import kernel_code

C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
COMPLEX = [C64, C128]
TOL = {C64: 2e-6, C128: 1e-12, F32: 2e-6, F64: 1e-12}
TRANSCENDENTAL = {C64: 2e-5, C128: 1e-10, F32: 2e-5, F64: 1e-10}
ACCUMULATED = {C64: 1e-5, C128: 1e-12, F32: 1e-5, F64: 1e-12}


def crand(shape: tuple[int, ...], dtype: np.dtype[Any], seed: int = 0) -> Any:
    """Random complex values with parts in +-[0.25, 4) (never zero)."""
    rng = np.random.default_rng(seed)
    parts = rng.uniform(0.25, 4.0, (2, *shape)) * rng.choice([-1.0, 1.0], (2, *shape))
    return (parts[0] + 1j * parts[1]).astype(dtype)


def check(got: Any, expected: Any, tol: float | None = None) -> None:
    """Same dtype and shape as NumPy's result, values within the dtype's tolerance."""
    host = got.to_numpy()
    assert host.dtype == expected.dtype, (host.dtype, expected.dtype)
    assert host.shape == expected.shape, (host.shape, expected.shape)
    if expected.dtype.kind in "cf":
        t = tol if tol is not None else TOL[expected.dtype]
        np.testing.assert_allclose(host.astype(C128), expected.astype(C128), rtol=t, atol=t,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(host, expected)


# -- dtypes, creation, transfer --------------------------------------------------------------------
def test_names_and_dtype_normalization() -> None:
    assert gp.complex64 == C64 and gp.complex128 == C128
    assert gp.COMPLEX_DTYPES == (C64, C128)
    assert set(gp.ALL_DTYPES) == set(gp.SUPPORTED_DTYPES) | {C64, C128} | set(gp.FP8_DTYPES)
    assert C64 not in gp.SUPPORTED_DTYPES  # the real dtypes: the ones with kernels
    spelling: Any
    for spelling in ("complex64", np.complex64, C64, "complex", "c8"):
        assert gp.empty(1, spelling).dtype == C64
    for spelling in ("complex128", np.complex128, "cdouble", complex):
        assert gp.empty(1, spelling).dtype == C128


def test_no_kernel_code_for_complex() -> None:
    with pytest.raises(TypeError, match="complex dtype complex64"):
        kernel_code(C64)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_creation(backend: str, dtype: np.dtype[Any]) -> None:
    check(gp.zeros((2, 3), dtype), np.zeros((2, 3), dtype))
    check(gp.ones(4, dtype), np.ones(4, dtype))
    check(gp.full((3,), 1.5 - 2j, dtype), np.full((3,), 1.5 - 2j, dtype))
    check(gp.eye(3, 4, 1, dtype), np.eye(3, 4, 1, dtype=dtype))
    check(gp.arange(0, 5, 1, dtype), np.arange(0, 5, 1, dtype=dtype))
    check(gp.linspace(0, 1j + 2, 7, dtype=dtype), np.linspace(0, 1j + 2, 7, dtype=dtype))
    assert gp.empty((2, 2), dtype).dtype == dtype
    like = gp.zeros((2, 2), dtype)
    check(gp.ones_like(like), np.ones((2, 2), dtype))
    check(gp.full_like(gp.zeros(3, F32), 2j, dtype=dtype), np.full(3, 2j, dtype))


def test_default_complex_is_complex64(backend: str) -> None:
    """Python complex scalars get complex64, as Python floats get float32."""
    assert gp.full(2, 1 + 1j).dtype == C64
    assert gp.asarray(2 - 1j).dtype == C64
    assert gp.asarray([1j, 2]).dtype == C64
    assert gp.asarray(np.array([1j])).dtype == C128  # a NumPy array keeps its dtype
    assert gp.linspace(0, 1j, 3).dtype == C64


@pytest.mark.parametrize("dtype", COMPLEX)
def test_transfer_round_trip(backend: str, dtype: np.dtype[Any]) -> None:
    host = crand((5, 6), dtype)
    x = gp.from_numpy(host)
    assert (x.dtype, x.shape, x.itemsize, x.nbytes) == (dtype, (5, 6), dtype.itemsize,
                                                       host.nbytes)
    np.testing.assert_array_equal(x.to_numpy(), host)
    np.testing.assert_array_equal(gp.from_numpy(host[::2, ::-3]).to_numpy(), host[::2, ::-3])
    np.testing.assert_array_equal(x[1:4, ::2].to_numpy(), host[1:4, ::2])  # strided view
    np.testing.assert_array_equal(x.T.copy().to_numpy(), host.T)
    item = x[2, 3].item()
    assert type(item) is complex and item == complex(host[2, 3])
    assert complex(x[0, 0]) == complex(host[0, 0])
    assert x[0].tolist() == host[0].tolist()
    assert "dtype=complex" in repr(x) and str(x[0, :2]) == str(host[0, :2])
    import pickle

    np.testing.assert_array_equal(pickle.loads(pickle.dumps(x)).to_numpy(), host)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_dlpack(backend: str, dtype: np.dtype[Any]) -> None:
    host = crand((3, 4), dtype, seed=1)
    x = gp.from_dlpack(host)  # a NumPy producer (the CPU device)
    assert x.dtype == dtype
    np.testing.assert_array_equal(x.to_numpy(), host)
    if backend == "cpu":  # a NumPy consumer reads host memory only
        np.testing.assert_array_equal(np.from_dlpack(x), host)
    y = gp.from_dlpack(x[:, ::2])  # on the GPU: the capsule (kDLComplex), zero-copy
    assert y.dtype == dtype
    np.testing.assert_array_equal(y.to_numpy(), host[:, ::2])


def test_dlpack_complex_code() -> None:
    from pygpukit import _dlpack

    for dtype in COMPLEX:
        code = _dlpack._dl_dtype(dtype)
        assert (code.code, code.bits, code.lanes) == (5, 8 * dtype.itemsize, 1)  # kDLComplex
        assert _dlpack._np_dtype(code) == dtype


@pytest.mark.parametrize("dtype", COMPLEX)
def test_real_imag_are_views(backend: str, dtype: np.dtype[Any]) -> None:
    host = crand((4, 3), dtype)
    x = gp.from_numpy(host)
    part = F64 if dtype == C128 else F32
    check(x.real, host.real)
    check(x.imag, host.imag)
    check(gp.real(x), np.real(host))
    check(gp.imag(x[:, ::2]), np.imag(host[:, ::2]))
    assert x.real.dtype == part and x.imag.dtype == part
    x.imag[1] = 7.0  # writes through, as NumPy's .imag
    host.imag[1] = 7.0
    check(x, host)
    x.real[...] = x.imag
    host.real[...] = host.imag
    check(x, host)
    r = gp.from_numpy(np.arange(3, dtype=np.float32))
    assert r.real is r
    check(r.imag, np.zeros(3, np.float32))
    check(gp.real(r), np.arange(3, dtype=np.float32))


# -- casting and promotion -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", COMPLEX)
def test_astype(backend: str, dtype: np.dtype[Any]) -> None:
    host = crand((7,), dtype)
    x = gp.from_numpy(host)
    other = C128 if dtype == C64 else C64
    check(x.astype(other), host.astype(other))
    for real in (np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.int32):
        r = np.arange(-3, 4).astype(real)
        check(gp.from_numpy(r).astype(dtype), r.astype(dtype))
    with pytest.warns(np.exceptions.ComplexWarning):
        got = x.astype(np.float32)
    check(got, host.real.astype(np.float32))
    with pytest.warns(np.exceptions.ComplexWarning):
        got = x.astype(np.int64)
    check(got, host.real.astype(np.int64))
    zeros = np.array([0, 1j, 2, 0], dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # complex -> bool warns in neither
        check(gp.from_numpy(zeros).astype(bool), zeros.astype(bool))


PROMOTE = [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64, np.float16,
           ml_dtypes.bfloat16, np.float32, np.float64, np.complex64, np.complex128]


@pytest.mark.parametrize("other", PROMOTE)
@pytest.mark.parametrize("dtype", COMPLEX)
def test_promotion_table(backend: str, dtype: np.dtype[Any], other: Any) -> None:
    a, b = np.ones(2, dtype), np.ones(2, other)
    ga, gb = gp.from_numpy(a), gp.from_numpy(b)
    expected = np.add.resolve_dtypes((a.dtype, b.dtype, None))[-1]
    assert (ga + gb).dtype == expected
    assert (gb * ga).dtype == expected
    assert gp.result_type(ga, gb) == expected
    assert gp.array_api.result_type(dtype, np.dtype(other)) == expected


def test_scalar_promotion(backend: str) -> None:
    """Python scalars are weak (NEP 50), NumPy scalars strong."""
    f32 = gp.from_numpy(np.ones(2, np.float32))
    c64 = gp.from_numpy(np.ones(2, np.complex64))
    assert (f32 + 1j).dtype == C64
    assert (f32 * np.complex128(1j)).dtype == C128
    assert (c64 + 1.5).dtype == C64
    assert (c64 + np.float64(1.5)).dtype == C128
    assert (gp.from_numpy(np.ones(2, np.int32)) + 1j).dtype == np.result_type(np.int32, 1j)
    check(2j * f32, 2j * np.ones(2, np.float32))


# -- elementwise -----------------------------------------------------------------------------------
ARITHMETIC = ["add", "subtract", "multiply", "divide", "power"]


def _numpy(name: str) -> Any:
    return {"divide": np.true_divide}.get(name, getattr(np, name))


@pytest.mark.parametrize("name", ARITHMETIC)
@pytest.mark.parametrize("dtype", COMPLEX)
def test_binary_arrays(backend: str, name: str, dtype: np.dtype[Any]) -> None:
    a, b = crand((3, 1), dtype, 1), crand((4,), dtype, 2)  # broadcast to (3, 4)
    tol = TRANSCENDENTAL[dtype] if name == "power" else TOL[dtype]
    check(getattr(gp, name)(gp.from_numpy(a), gp.from_numpy(b)), _numpy(name)(a, b), tol)


@pytest.mark.parametrize("name", ARITHMETIC)
@pytest.mark.parametrize("dtype", COMPLEX)
def test_binary_mixed_real(backend: str, name: str, dtype: np.dtype[Any]) -> None:
    part = F64 if dtype == C128 else F32
    a = crand((2, 5), dtype, 3)
    r = np.random.default_rng(4).uniform(0.5, 3.0, (5,)).astype(part)
    tol = TRANSCENDENTAL[dtype] if name == "power" else TOL[dtype]
    fn, ref = getattr(gp, name), _numpy(name)
    check(fn(gp.from_numpy(a), gp.from_numpy(r)), ref(a, r), tol)
    check(fn(gp.from_numpy(r), gp.from_numpy(a)), ref(r, a), tol)


@pytest.mark.parametrize("scalar", [2.5 - 1.25j, 3, -0.5, 1j, np.complex64(0.5 + 2j)])
@pytest.mark.parametrize("name", ARITHMETIC)
@pytest.mark.parametrize("dtype", COMPLEX)
def test_binary_scalars(backend: str, name: str, dtype: np.dtype[Any], scalar: Any) -> None:
    a = crand((6,), dtype, 5)
    tol = TRANSCENDENTAL[dtype] if name == "power" else TOL[dtype]
    fn, ref = getattr(gp, name), _numpy(name)
    check(fn(gp.from_numpy(a), scalar), ref(a, scalar), tol)
    check(fn(scalar, gp.from_numpy(a)), ref(scalar, a), tol)


def test_real_array_with_complex_scalar(backend: str) -> None:
    r = np.linspace(0.5, 3, 6).astype(np.float32)
    for name in ARITHMETIC:
        tol = TRANSCENDENTAL[C64] if name == "power" else TOL[C64]
        check(getattr(gp, name)(gp.from_numpy(r), 1.5 - 2j), _numpy(name)(r, 1.5 - 2j), tol)
        check(getattr(gp, name)(-2j, gp.from_numpy(r)), _numpy(name)(-2j, r), tol)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_operators_and_non_contiguous(backend: str, dtype: np.dtype[Any]) -> None:
    a, b = crand((6, 8), dtype, 6), crand((8, 6), dtype, 7)
    ga, gb = gp.from_numpy(a)[::2, 1::2], gp.from_numpy(b).T[::2, 1::2]
    na, nb = a[::2, 1::2], b.T[::2, 1::2]
    assert not ga.is_contiguous() and not gb.is_contiguous()
    check(ga + gb, na + nb)
    check(ga - gb, na - nb)
    check(ga * gb, na * nb)
    check(ga / gb, na / nb)
    check(ga ** 3, na ** 3, TRANSCENDENTAL[dtype])
    check(ga ** -2, na ** -2.0, TRANSCENDENTAL[dtype])
    check(ga ** 0, na ** 0)
    check(-ga, -na)
    check(+ga, +na)
    check(abs(ga), np.abs(na))
    check(ga == gb, na == nb)
    check(ga != ga, na != na)
    check(ga == na[0, 0].item(), na == na[0, 0].item())


@pytest.mark.parametrize("dtype", COMPLEX)
def test_in_place(backend: str, dtype: np.dtype[Any]) -> None:
    a, b = crand((3, 4), dtype, 8), crand((4,), dtype, 9)
    x = gp.from_numpy(a)
    x *= gp.from_numpy(b)  # the result aliases an input: computed before it is written
    a *= b
    check(x, a)
    x /= gp.from_numpy(b)
    a /= b
    check(x, a)
    x += 1j
    a += 1j
    check(x, a)
    x -= 2
    a -= 2
    check(x, a)
    y = gp.from_numpy(a)
    gp.multiply(y, y, out=y)
    check(y, a * a)
    out = gp.zeros((3, 4), C128)
    gp.add(gp.from_numpy(a), 1, out=out)  # out of a wider dtype
    check(out, (a + 1).astype(C128))
    with pytest.raises(TypeError, match="same_kind"):
        gp.add(gp.from_numpy(a), 1, out=gp.zeros((3, 4), F64))
    r = gp.zeros((3, 4), dtype)
    gp.add(gp.ones((3, 4)), gp.ones((3, 4)), out=r)  # real result into a complex out
    check(r, np.full((3, 4), 2, dtype))


UNARY = ["negative", "exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
         "expm1", "log1p", "log2", "log10", "square", "reciprocal", "sign", "conj", "rint",
         "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", COMPLEX)
def test_unary(backend: str, name: str, dtype: np.dtype[Any]) -> None:
    a = crand((4, 5), dtype, 10) * 0.5  # |im| < 2: sinh/cosh/tanh well inside range
    a[0, 0], a[0, 1] = 0.0, -2.0
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(a)
    tol = TRANSCENDENTAL[dtype]
    fn = getattr(gp, name)
    x = gp.from_numpy(a)
    if name in ("log", "log2", "log10"):
        a[0, 0] = 1.0  # log(0) = -inf + 0j: not compared (NumPy's -inf + nan*j is C99's)
        x = gp.from_numpy(a)
        expected = getattr(np, name)(a)
    check(fn(x), expected, tol)
    check(fn(x[:, ::2]), expected[:, ::2], tol)  # strided input


@pytest.mark.parametrize("dtype", COMPLEX)
def test_unary_accuracy_near_zero(backend: str, dtype: np.dtype[Any]) -> None:
    """expm1 / log1p / sqrt keep their relative accuracy for tiny arguments."""
    a = np.array([1e-6 + 1e-7j, -3e-5 + 2e-6j, 1e-30 - 1e-30j], dtype)
    x = gp.from_numpy(a)
    for name in ("expm1", "log1p", "sqrt"):
        check(getattr(gp, name)(x), getattr(np, name)(a), TRANSCENDENTAL[dtype])


@pytest.mark.parametrize("name", ["sqrt", "log", "arcsin", "arccos", "arctan", "arcsinh",
                                  "arccosh", "arctanh"])
@pytest.mark.parametrize("dtype", COMPLEX)
def test_branch_cuts(backend: str, dtype: np.dtype[Any], name: str) -> None:
    """On the branch cuts the sign of a zero part picks the side, as in NumPy."""
    values = [complex(r, i) for r in (2.0, -2.0, 0.5, -0.5) for i in (0.0, -0.0)]
    values += [complex(r, i) for r in (0.0, -0.0) for i in (2.0, -2.0, 0.5)]
    a = np.array(values, dtype)
    got = getattr(gp, name)(gp.from_numpy(a)).to_numpy()
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(a)
    np.testing.assert_allclose(got, expected, rtol=TRANSCENDENTAL[dtype],
                               atol=TRANSCENDENTAL[dtype])
    zero = expected.imag == 0
    np.testing.assert_array_equal(np.signbit(got.imag[zero]), np.signbit(expected.imag[zero]))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_large_and_tiny(backend: str, dtype: np.dtype[Any]) -> None:
    """No overflow of intermediate squares; relative accuracy kept for tiny arguments."""
    big = 1e30 if dtype == C64 else 1e300
    a = np.array([big + big * 1j, -big * 1j, 1e-20 + 1e-21j, -3e-8 + 2e-9j], dtype)
    x = gp.from_numpy(a)
    for name in ("arcsinh", "arcsin", "arctanh", "arctan", "sqrt", "log"):
        check(getattr(gp, name)(x), getattr(np, name)(a), TRANSCENDENTAL[dtype])
    check(gp.abs(x), np.abs(a), TRANSCENDENTAL[dtype])
    check(x / x[0], a / a[0], TOL[dtype] * 4)  # the scaled division: no overflow


@pytest.mark.parametrize("dtype", COMPLEX)
def test_special_values(backend: str, dtype: np.dtype[Any]) -> None:
    """Infinite and NaN parts where the standard's special cases are implemented."""
    inf, nan = np.inf, np.nan
    a = np.array([complex(-inf, inf), complex(-inf, nan), complex(inf, 0.0), complex(0.0, inf),
                  complex(0.0, nan), complex(inf, -0.0)], dtype)
    x = gp.from_numpy(a)
    with np.errstate(all="ignore"):
        check(gp.exp(x)[:3], np.exp(a)[:3])
        check(gp.sinh(x)[2:], np.sinh(a)[2:])
        check(gp.cosh(x)[[2, 5]], np.cosh(a)[[2, 5]])


@pytest.mark.parametrize("dtype", COMPLEX)
def test_sqrt_branches(backend: str, dtype: np.dtype[Any]) -> None:
    a = np.array([-4, -4 - 0j, 4j, -4j, 3 + 4j, -3 - 4j, 0, 1e30 + 1e30j], dtype)
    a[1] = complex(-4.0, -0.0)
    check(gp.sqrt(gp.from_numpy(a)), np.sqrt(a), TRANSCENDENTAL[dtype])


@pytest.mark.parametrize("dtype", COMPLEX)
def test_abs_angle_conj(backend: str, dtype: np.dtype[Any]) -> None:
    a = crand((3, 7), dtype, 11)
    a[0, 0] = 0
    a[0, 1] = 1e30 + 1e30j if dtype == C64 else 1e300 + 1e300j  # hypot: no overflow
    x = gp.from_numpy(a)
    part = F64 if dtype == C128 else F32
    assert gp.abs(x).dtype == part and gp.absolute(x).dtype == part
    check(gp.abs(x), np.abs(a), TRANSCENDENTAL[dtype])
    check(gp.angle(x), np.angle(a), TRANSCENDENTAL[dtype])
    check(gp.angle(x, deg=True), np.angle(a, deg=True), TRANSCENDENTAL[dtype])
    check(gp.angle(gp.from_numpy(np.array([-2.0, 3.0], np.float32))),
          np.angle(np.array([-2.0, 3.0], np.float32)))
    check(gp.conj(x), np.conj(a))
    check(x.conj(), a.conj())
    check(gp.conjugate(x[::-1]), np.conjugate(a[::-1]))
    check(gp.conj(gp.from_numpy(np.arange(3.0))), np.arange(3.0))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_classification(backend: str, dtype: np.dtype[Any]) -> None:
    inf, nan = np.inf, np.nan
    a = np.array([1 + 1j, complex(inf, 0), complex(0, -inf), complex(nan, 1), complex(1, nan),
                  0, 1j], dtype)
    x = gp.from_numpy(a)
    for name in ("isnan", "isinf", "isfinite", "logical_not"):
        check(getattr(gp, name)(x), getattr(np, name)(a))
    check(gp.logical_and(x, gp.from_numpy(a[::-1])), np.logical_and(a, a[::-1]))
    check(gp.logical_or(x, 0j), np.logical_or(a, 0j))
    check(gp.logical_xor(x, gp.ones(7)), np.logical_xor(a, np.ones(7, np.float32)))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_where(backend: str, dtype: np.dtype[Any]) -> None:
    a, b = crand((3, 4), dtype, 12), crand((4,), dtype, 13)
    cond = np.random.default_rng(14).integers(0, 2, (3, 4)).astype(bool)
    gc, ga, gb = gp.from_numpy(cond), gp.from_numpy(a), gp.from_numpy(b)
    check(gp.where(gc, ga, gb), np.where(cond, a, b))
    check(gp.where(gc, ga, 2 - 1j), np.where(cond, a, np.array(2 - 1j, dtype)))
    check(gp.where(gc, 1j, gp.ones(4)), np.where(cond, np.complex64(1j), np.ones(4, np.float32)))
    check(gp.where(gp.from_numpy(a.real > 0) , ga, 0), np.where(a.real > 0, a, 0))
    check(gp.where(ga, 1.0, 2.0), np.where(a, 1.0, 2.0))  # a complex condition: its truth


# -- reductions ------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), ()])
@pytest.mark.parametrize("dtype", COMPLEX)
def test_sum_mean(backend: str, dtype: np.dtype[Any], axis: Any) -> None:
    a = crand((3, 4, 5), dtype, 15)
    x = gp.from_numpy(a)
    tol = ACCUMULATED[dtype]
    for keepdims in (False, True):
        check(gp.sum(x, axis, keepdims), np.sum(a, axis, keepdims=keepdims), tol)
        check(x.mean(axis, keepdims), a.mean(axis, keepdims=keepdims), tol)
    check(x[:, ::2].sum(axis), a[:, ::2].sum(axis), tol)


@pytest.mark.parametrize("shape,axis", [((7,), None), ((3, 5), 1), ((4, 6, 3), (0, 2)),
                                         ((2, 9), 0), ((3, 0), 1), ((5, 1), None)])
@pytest.mark.parametrize("dtype", COMPLEX)
def test_prod(backend: str, dtype: np.dtype[Any], shape: tuple[int, ...], axis: Any) -> None:
    a = crand(shape, dtype, 16) * 0.5
    x = gp.from_numpy(a)
    check(gp.prod(x, axis), np.prod(a, axis), ACCUMULATED[dtype] * 10)
    check(x.prod(axis, keepdims=True), np.prod(a, axis, keepdims=True), ACCUMULATED[dtype] * 10)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_var_std_any_all(backend: str, dtype: np.dtype[Any]) -> None:
    a = crand((4, 6), dtype, 17)
    a[1] = 0
    a[2, 3] = 1j
    x = gp.from_numpy(a)
    tol = ACCUMULATED[dtype]
    for axis in (None, 0, 1):
        check(gp.var(x, axis), np.var(a, axis), tol)
        check(gp.std(x, axis, ddof=1), np.std(a, axis, ddof=1), tol)
        check(gp.any(x, axis), np.any(a, axis))
        check(x.all(axis), np.all(a, axis))
    assert gp.var(x).dtype == (F32 if dtype == C64 else F64)


def test_reduction_out(backend: str) -> None:
    a = crand((3, 4), C64, 18)
    out = gp.zeros(4, C128)
    gp.sum(gp.from_numpy(a), 0, out=out)
    check(out, a.sum(0).astype(C128), 1e-5)


# -- products --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", COMPLEX)
def test_matmul(backend: str, dtype: np.dtype[Any]) -> None:
    tol = ACCUMULATED[dtype]
    a, b = crand((5, 7), dtype, 19), crand((7, 3), dtype, 20)
    ga, gb = gp.from_numpy(a), gp.from_numpy(b)
    check(ga @ gb, a @ b, tol)
    check(gp.matmul(ga.T.T, gb), a @ b, tol)
    check(gp.from_numpy(b).T @ ga.T, b.T @ a.T, tol)  # transposed (strided) operands
    batch_a, batch_b = crand((2, 1, 4, 6), dtype, 21), crand((3, 6, 2), dtype, 22)
    check(gp.from_numpy(batch_a) @ gp.from_numpy(batch_b), batch_a @ batch_b, tol)
    v = crand((7,), dtype, 23)
    check(ga @ gp.from_numpy(v), a @ v, tol)
    check(gp.from_numpy(v) @ gb, v @ b, tol)
    real = np.random.default_rng(24).standard_normal((7, 3)).astype(np.float32)
    check(ga @ gp.from_numpy(real), a @ real, tol)
    check(gp.from_numpy(real.T) @ gb, real.T @ b, tol)
    out = gp.empty((5, 3), dtype)
    assert gp.matmul(ga, gb, out=out) is out
    check(out, a @ b, tol)
    with pytest.raises(ValueError, match="out has shape"):
        gp.matmul(ga, gb, out=gp.empty((5, 3), C128 if dtype == C64 else C64))


def test_dot_vdot_vecdot(backend: str) -> None:
    a, b = crand((6,), C128, 25), crand((6,), C128, 26)
    ga, gb = gp.from_numpy(a), gp.from_numpy(b)
    check(gp.vdot(ga, gb), np.asarray(np.vdot(a, b)), 1e-12)  # conjugates a
    check(gp.dot(ga, gb), np.asarray(np.dot(a, b)), 1e-12)
    m, n = crand((3, 6), C128, 27), crand((6, 2), C128, 28)
    xp = gp.array_api
    check(gp.dot(gp.from_numpy(m), gp.from_numpy(n)), np.dot(m, n), 1e-12)
    check(gp.tensordot(gp.from_numpy(m), gp.from_numpy(n), 1), np.tensordot(m, n, 1), 1e-12)
    expected = np.sum(np.conj(m) * a, axis=-1)  # the standard's vecdot conjugates x1
    check(xp.vecdot(gp.from_numpy(m), ga), expected, 1e-12)
    check(gp.einsum("ij,jk->ik", gp.from_numpy(m), gp.from_numpy(n)),
          np.einsum("ij,jk->ik", m, n), 1e-12)
    check(gp.outer(ga, gb), np.outer(a, b), 1e-12)
    check(gp.trace(gp.from_numpy(m[:, :3])), np.asarray(np.trace(m[:, :3])), 1e-12)
    for ord_ in (None, 1, 2, np.inf, -np.inf, 0, 3):
        check(gp.linalg.norm(ga, ord_), np.asarray(np.linalg.norm(a, ord_)), 1e-12)
    for ord_ in (None, "fro", 1, np.inf):
        check(gp.linalg.norm(gp.from_numpy(m), ord_), np.asarray(np.linalg.norm(m, ord_)),
              1e-12)
    check(gp.linalg.vector_norm(gp.from_numpy(m), axis=1), np.linalg.vector_norm(m, axis=1),
          1e-12)


# -- indexing and joins ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", COMPLEX)
def test_indexing(backend: str, dtype: np.dtype[Any]) -> None:
    a = crand((4, 5), dtype, 29)
    x = gp.from_numpy(a)
    check(x[[2, 0, 3]], a[[2, 0, 3]])
    check(x[..., [4, 1]], a[..., [4, 1]])
    check(x[1:, [0, 2]], a[1:, [0, 2]])
    mask = a.real > 0
    check(x[gp.from_numpy(mask)], a[mask])
    check(x[x.real > 0], a[a.real > 0])
    idx = gp.from_numpy(np.array([3, 1]))
    check(x[idx, 2], a[[3, 1], 2])
    x[[0, 2]] = 5 - 1j
    a[[0, 2]] = 5 - 1j
    check(x, a)
    x[gp.from_numpy(mask)] = gp.from_numpy(np.arange(int(mask.sum()), dtype=np.float32))
    a[mask] = np.arange(int(mask.sum()))
    check(x, a)
    x[:, 1] = gp.from_numpy(crand((4,), dtype, 30))
    a[:, 1] = crand((4,), dtype, 30)
    check(x, a)
    x[1, 1:3] = [1j, 2 + 2j]
    a[1, 1:3] = [1j, 2 + 2j]
    check(x, a)
    a[3] = 0
    x[3] = 0
    rows, cols = x.nonzero()
    er, ec = a.nonzero()
    np.testing.assert_array_equal(rows.to_numpy(), er)
    np.testing.assert_array_equal(cols.to_numpy(), ec)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_indexing_functions(backend: str, dtype: np.dtype[Any]) -> None:
    a = crand((3, 5), dtype, 34)
    x = gp.from_numpy(a)
    check(gp.take(x, [4, 0, 4], axis=1), np.take(a, [4, 0, 4], axis=1))
    check(gp.take(x, gp.from_numpy(np.array([7, 1]))), np.take(a, [7, 1]))
    check(gp.repeat(x, [1, 0, 2], axis=0), np.repeat(a, [1, 0, 2], axis=0))
    check(gp.repeat(x, 2), np.repeat(a, 2))
    check(gp.compress([True, False, True], x, axis=0), np.compress([True, False, True], a, 0))
    order = np.argsort(a.real, axis=1)
    check(gp.take_along_axis(x, gp.from_numpy(order), 1), np.take_along_axis(a, order, 1))
    check(gp.flip(x, 1), np.flip(a, 1))
    check(gp.roll(x, 2, 1), np.roll(a, 2, 1))
    check(gp.tile(x, (2, 1)), np.tile(a, (2, 1)))
    gp.put(x, [0, 7], [1j, 2.5])
    np.put(a, [0, 7], [1j, 2.5])
    check(x, a)
    idx = np.array([0, 2, 0, 0])
    gp.add_at(x, gp.from_numpy(idx), gp.from_numpy(crand((4, 5), dtype, 37)))
    np.add.at(a, idx, crand((4, 5), dtype, 37))
    check(x, a, ACCUMULATED[dtype])
    gp.add_at(x, (idx, 1), 1 - 2j)
    np.add.at(a, (idx, 1), 1 - 2j)
    check(x, a, ACCUMULATED[dtype])
    gp.index_add(x, 1, [4, 4], gp.from_numpy(np.ones((3, 2), np.float32)))
    a[:, 4] += 2
    check(x, a, ACCUMULATED[dtype])
    with pytest.raises(TypeError, match="same_kind"):
        gp.add_at(gp.zeros(3), [0], gp.from_numpy(np.ones(1, dtype)))
    t = gp.from_numpy(a).T  # strided: the coordinates path
    gp.put(t, [1, 2], gp.from_numpy(np.array([3 - 3j, 4j], dtype)))
    expected = a.T.copy()
    np.put(expected, [1, 2], [3 - 3j, 4j])
    check(t, expected)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_unique(backend: str, dtype: np.dtype[Any]) -> None:
    """Sorted lexicographically (real, then imaginary part), as NumPy."""
    rng = np.random.default_rng(36)
    a = (rng.integers(-2, 3, (4, 6)) + 1j * rng.integers(-1, 2, (4, 6))).astype(dtype)
    a[0, 0] = complex(-0.0, 0.0)
    got = gp.unique(gp.from_numpy(a), return_index=True, return_inverse=True,
                    return_counts=True)
    expected = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    for g, e in zip(got, expected, strict=True):
        check(g, e)
    nans = np.array([complex(np.nan, 1), 1j, complex(1, np.nan), 1j], dtype)
    values, counts = gp.unique(gp.from_numpy(nans), return_counts=True)
    check(values[:1], nans[1:2])
    check(counts, np.array([2, 2]))  # the NaNs count as one value, sorted last
    assert np.isnan(values.to_numpy()[1])
    check(gp.unique(gp.zeros(0, dtype)), np.zeros(0, dtype))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_concatenate_stack(backend: str, dtype: np.dtype[Any]) -> None:
    a, b = crand((2, 3), dtype, 31), crand((1, 3), dtype, 32)
    check(gp.concatenate([gp.from_numpy(a), gp.from_numpy(b)]), np.concatenate([a, b]))
    check(gp.stack([gp.from_numpy(a), gp.from_numpy(a)], 1), np.stack([a, a], 1))
    check(gp.cumsum(gp.from_numpy(a), axis=1), np.cumsum(a, axis=1), ACCUMULATED[dtype])
    check(gp.cumsum(gp.from_numpy(a)), np.cumsum(a), ACCUMULATED[dtype])
    check(gp.cumsum(gp.from_numpy(a.real.copy()), dtype=dtype), np.cumsum(a.real, dtype=dtype),
          ACCUMULATED[dtype])
    long = crand((3, 37), dtype, 35) * 0.6
    for axis in (0, 1, None):
        check(gp.cumprod(gp.from_numpy(long), axis=axis), np.cumprod(long, axis=axis),
              ACCUMULATED[dtype] * 10)
    check(gp.cumprod(gp.from_numpy(long[:, :0]), axis=1), np.cumprod(long[:, :0], axis=1))
    xp = gp.array_api
    check(xp.cumulative_prod(gp.from_numpy(long), axis=1, include_initial=True),
          np.cumulative_prod(long, axis=1, include_initial=True), ACCUMULATED[dtype] * 10)
    f = np.ones((1, 3), np.float32)
    check(gp.concatenate([gp.from_numpy(a), gp.from_numpy(f)]), np.concatenate([a, f]))


# -- what complex numbers do not have --------------------------------------------------------------
def test_unsupported_raise_naming_the_op(backend: str) -> None:
    z = gp.from_numpy(crand((3,), C64))
    for op in ("less", "less_equal", "greater", "greater_equal", "maximum", "minimum"):
        with pytest.raises(TypeError, match=f"{op}: .*not ordered"):
            getattr(gp, op)(z, z)
    with pytest.raises(TypeError, match="less"):
        _ = z < 1j
    with pytest.raises(TypeError, match="greater_equal"):
        _ = z >= z
    for name in ("max", "min", "argmax", "argmin"):
        with pytest.raises(TypeError, match=f"{name}: .*not ordered"):
            getattr(z, name)()
    for fn, name in ((gp.floor_divide, "floor_divide"), (gp.remainder, "remainder"),
                     (gp.bitwise_and, "bitwise_and")):
        with pytest.raises(TypeError, match=name):
            fn(z, z)
    for name in ("floor", "ceil", "relu", "sigmoid", "invert", "trunc", "signbit"):
        with pytest.raises(TypeError, match=name):
            getattr(gp, name)(z)
    with pytest.raises(TypeError, match="hypot"):
        gp.hypot(z, z)
    for fn, name in ((gp.sort, "sort"), (gp.argsort, "argsort"), (gp.topk, "topk")):
        with pytest.raises(TypeError, match=f"{name}: not supported for complex"):
            fn(z) if name != "topk" else fn(z, 1)
    with pytest.raises(TypeError, match="bincount: not supported for complex"):
        gp.bincount(gp.from_numpy(np.array([0, 1, 1])), weights=z)
    with pytest.raises(TypeError, match="histogram: not supported for complex"):
        gp.histogram(gp.ones(3), weights=z)
    with pytest.raises(TypeError, match="searchsorted: not supported for complex"):
        gp.searchsorted(z, z)
    with pytest.raises(TypeError, match="complex"):
        gp.random.default_rng(0).random(3, dtype=gp.complex64)


def test_fast_path_declines_complex(backend: str) -> None:
    """The C fast path's planner makes no plan for complex keys (the Python path composes)."""
    from pygpukit._fastpath import Kind

    rt = gp.zeros(1)._rt
    for kind, name, keys in ((Kind.BINARY, "add", (C64, C64, None)),
                             (Kind.BINARY, "multiply", (F32, complex, None)),
                             (Kind.UNARY, "absolute", (C128, None, None)),
                             (Kind.REDUCE, "sum", (C64, None, None)),
                             (Kind.ASTYPE, "astype", (F32, "complex64", None)),
                             (Kind.ASTYPE, "astype", (C64, np.float32, None)),
                             (Kind.WHERE, "where", (np.dtype(bool), C64, F32))):
        assert _fastpath.planner(int(kind), name, rt, *keys) is None


def test_small_array_plans_decline_complex() -> None:
    """The GPU's small-array plans (pygpukit._small, taken before any routing) make none for a
    complex operand, so complex operands always reach the compositions (the CPU simulation
    has no small launchers, so this is checked on the plans directly)."""
    from pygpukit import _small
    from pygpukit._optable import BINARY, REDUCE, UNARY

    for spec in BINARY:
        for keys in ((C64, C64), (C128, F32), (F64, C64), (C64, complex), (complex, F32)):
            assert _small._binary_plan(spec.name, *keys) is None, (spec.name, keys)
            assert _fastpath.planner(int(_fastpath.Kind.BINARY), spec.name, None, *keys,
                                     None) is None
    for uspec in UNARY:
        for dtype in COMPLEX:
            assert _small._unary_plan(uspec.name, dtype) is None, uspec.name
            assert _fastpath.planner(int(_fastpath.Kind.UNARY), uspec.name, None, dtype, None,
                                     None) is None
    for rspec in REDUCE:
        for dtype in COMPLEX:
            assert _fastpath.planner(int(_fastpath.Kind.REDUCE), rspec.name, None, dtype, None,
                                     None) is None
    for keys in ((np.dtype(bool), C64, F32), (C64, F32, F32), (np.dtype(bool), complex, float)):
        assert _small._where_plan(*keys) is None, keys


# -- NumPy's protocols and the Array API namespace -------------------------------------------------
def test_numpy_protocols(backend: str) -> None:
    a = crand((3, 4), C64, 33)
    x = gp.from_numpy(a)
    check(np.add(x, x), a + a)
    check(np.multiply(x, 2j), a * 2j)
    check(np.exp(x), np.exp(a), TRANSCENDENTAL[C64])
    check(np.abs(x), np.abs(a), TRANSCENDENTAL[C64])
    check(np.conjugate(x), np.conjugate(a))
    check(np.conj(x), np.conj(a))
    check(np.real(x), np.real(a))
    check(np.imag(x), np.imag(a))
    check(np.angle(x), np.angle(a), TRANSCENDENTAL[C64])
    check(np.sum(x, axis=0), np.sum(a, axis=0), ACCUMULATED[C64])
    check(np.add.reduce(x, axis=1), np.add.reduce(a, axis=1), ACCUMULATED[C64])
    check(np.matmul(x, x.T), a @ a.T, ACCUMULATED[C64])
    assert np.iscomplexobj(x) and not np.iscomplexobj(x.real)


def test_array_api_namespace(backend: str) -> None:
    xp = gp.array_api
    info = xp.__array_namespace_info__()
    assert info.dtypes(kind="complex floating") == {"complex64": C64, "complex128": C128}
    assert set(info.dtypes(kind="numeric")) >= {"complex64", "complex128", "float32"}
    assert info.default_dtypes()["complex floating"] == C64
    assert xp.complex64 == C64 and xp.complex128 == C128
    assert xp.isdtype(xp.complex64, "complex floating")
    assert xp.isdtype(xp.complex128, "numeric")
    assert not xp.isdtype(xp.complex64, "real floating")
    assert xp.result_type(xp.float32, xp.complex64) == C64
    assert xp.result_type(xp.float64, xp.complex64) == C128
    assert xp.result_type(xp.float32, 1j) == C64
    assert xp.finfo(xp.complex64).dtype == F32
    assert xp.finfo(xp.complex128).eps == np.finfo(np.float64).eps
    assert xp.can_cast(xp.float32, xp.complex64)
    assert not xp.can_cast(xp.complex64, xp.float64)
    z = xp.asarray([1 + 2j, -3j], dtype=xp.complex64)
    assert z.dtype == C64
    check(xp.abs(z), np.abs(np.array([1 + 2j, -3j], C64)), TRANSCENDENTAL[C64])
    assert xp.abs(z).dtype == F32
    check(xp.real(z), np.array([1, 0], np.float32))
    check(xp.imag(z), np.array([2, -3], np.float32))
    check(xp.conj(z), np.array([1 - 2j, 3j], C64))
    check(xp.full(2, 1j), np.full(2, 1j, C64))
    check(xp.linspace(0, 2j, 3), np.linspace(0, 2j, 3).astype(C64))
    check(xp.sum(z), np.asarray(np.sum(np.array([1 + 2j, -3j], C64))))
    check(xp.sum(z, dtype=xp.complex128), np.asarray(1 - 1j, C128))
    assert complex(xp.asarray(1 - 1j)) == 1 - 1j


# -- how the compositions run ----------------------------------------------------------------------
_RUNTIME_CALLS = ("copy", "fill", "binary", "unary", "reduce", "where", "gemm", "index_gather",
                  "index_scatter", "scan")


def _launches(fn: Any) -> int:
    """Runtime calls (kernel launches on the GPU) ``fn`` makes on the CPU simulation."""
    from pygpukit import _cpu_backend

    calls = [0]
    originals = {name: getattr(_cpu_backend.CpuRuntime, name) for name in _RUNTIME_CALLS}

    def counting(original: Any) -> Any:
        def counted(self: Any, *args: Any) -> None:
            calls[0] += 1
            original(self, *args)
        return counted

    try:
        for name, original in originals.items():
            setattr(_cpu_backend.CpuRuntime, name, counting(original))
        fn()
    finally:
        for name, original in originals.items():
            setattr(_cpu_backend.CpuRuntime, name, original)
    return calls[0]


def test_launch_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The launches the module's table documents for the one-pass compositions."""
    monkeypatch.setenv("PYGPUKIT_BACKEND", "cpu")
    assert gp.backend() == "cpu"
    a = gp.from_numpy(crand((8, 8), C64, 40))
    b = gp.from_numpy(crand((8, 8), C64, 41))
    r = gp.from_numpy(np.ones((8, 8), np.float32))
    expected = {"a + b": (lambda: a + b, 1), "-a": (lambda: -a, 1), "a * r": (lambda: a * r, 1),
                "a / 2": (lambda: a / 2, 1), "a * b": (lambda: a * b, 6),
                "a / b": (lambda: a / b, 17), "a == b": (lambda: a == b, 3),
                "conj": (lambda: gp.conj(a), 2), "sum": (lambda: a.sum(axis=0), 1),
                "mean": (lambda: a.mean(), 1), "matmul": (lambda: a @ b, 10),
                "astype": (lambda: a.astype(C128), 1)}
    got = {label: _launches(fn) for label, (fn, _) in expected.items()}
    assert got == {label: n for label, (_, n) in expected.items()}


@pytest.mark.parametrize("backend", ["cpu"], indirect=True)
def test_runtime_refuses_complex(backend: str) -> None:
    """The CPU runtime's kernel calls refuse complex arrays, as the kernels' dtype codes do:
    every test here that passes on the CPU ran only real kernels (a check of the CPU
    simulation, so it runs there only)."""
    z = gp.zeros(3, C64)
    with pytest.raises(TypeError, match="unary: not supported for complex dtype complex64"):
        z._rt.unary(0, z, z, F32, gp.current_stream())


def test_sixteen_dimensions(backend: str) -> None:
    """At the kernels' 16 dims the float views would need 17: the part-wise forms run."""
    a = crand((1,) * 12 + (2, 2, 2, 2), C64, 42)
    x = gp.from_numpy(a)
    check(x + x, a + a)
    check(x * x, a * a)
    check(-x, -a)
    check(x * 2.0, a * 2.0)
    check(x.sum(axis=(3, 13)), a.sum(axis=(3, 13)), ACCUMULATED[C64])
    check(x.T.copy(), a.T)
    check(gp.exp(x), np.exp(a), TRANSCENDENTAL[C64])
    with pytest.raises(NotImplementedError, match="16 dims"):
        x[[0]]
