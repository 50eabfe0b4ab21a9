"""NumPy's protocols on GPUArray (NEP 13 / NEP 18), both backends: NumPy calls run on the device
and return GPUArrays; what is not implemented, and NumPy arrays mixed in, raise TypeError."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pygpukit as gp
from pygpukit import _protocols


def arrays() -> tuple[np.ndarray, np.ndarray, gp.GPUArray, gp.GPUArray]:
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 2.0, (3, 4)).astype(np.float32)
    b = rng.uniform(0.5, 2.0, (3, 4)).astype(np.float32)
    return a, b, gp.from_numpy(a), gp.from_numpy(b)


def check(got: Any, expected: Any, tol: float = 2e-6) -> None:
    assert isinstance(got, gp.GPUArray), type(got)
    expected = np.asarray(expected)
    host = got.to_numpy()
    assert host.shape == expected.shape and host.dtype == expected.dtype, (
        host.shape, host.dtype, expected.shape, expected.dtype)
    np.testing.assert_allclose(host.astype(np.float64), expected.astype(np.float64),
                               rtol=tol, atol=tol)


UFUNC_CALLS = [
    lambda m, a, b: m.add(a, b), lambda m, a, b: m.exp(a), lambda m, a, b: m.multiply(a, 2.0),
    lambda m, a, b: m.subtract(3, a), lambda m, a, b: m.maximum(a, b),
    lambda m, a, b: m.less(a, b), lambda m, a, b: m.sqrt(a), lambda m, a, b: m.arctan2(a, b),
    lambda m, a, b: m.hypot(a, b), lambda m, a, b: m.matmul(a, b.T),
    lambda m, a, b: m.logaddexp(a, b), lambda m, a, b: m.isfinite(a),
    lambda m, a, b: m.add.reduce(a, axis=1), lambda m, a, b: m.maximum.reduce(a),
    lambda m, a, b: m.float32(2) * a, lambda m, a, b: a ** m.float32(2),
]
FUNCTION_CALLS = [
    lambda m, a, b: m.sum(a), lambda m, a, b: m.sum(a, axis=0, keepdims=True),
    lambda m, a, b: m.sum(a, dtype=m.float64), lambda m, a, b: m.mean(a, axis=0),
    lambda m, a, b: m.std(a, axis=1, ddof=1), lambda m, a, b: m.max(a, axis=1),
    lambda m, a, b: m.argmin(a, axis=0), lambda m, a, b: m.any(a > 1),
    lambda m, a, b: m.concatenate([a, b]), lambda m, a, b: m.concatenate([a, b], axis=None),
    lambda m, a, b: m.stack([a, b], axis=1), lambda m, a, b: m.where(a > b, a, b),
    lambda m, a, b: m.reshape(a, (4, 3)), lambda m, a, b: m.transpose(a),
    lambda m, a, b: m.swapaxes(a, 0, 1), lambda m, a, b: m.expand_dims(a, 0),
    lambda m, a, b: m.clip(a, 0.8, 1.5), lambda m, a, b: m.round(a),
    lambda m, a, b: m.zeros_like(a), lambda m, a, b: m.full_like(a, 3),
    lambda m, a, b: m.dot(a, b.T), lambda m, a, b: m.tensordot(a, b, ([1], [1])),
    lambda m, a, b: m.einsum("ij,kj->ik", a, b), lambda m, a, b: m.trace(a),
    lambda m, a, b: m.tril(a), lambda m, a, b: m.linalg.norm(a, axis=1),
    lambda m, a, b: m.moveaxis(a, 0, 1), lambda m, a, b: m.broadcast_to(a[0], (2, 4)),
    lambda m, a, b: m.diagonal(a), lambda m, a, b: m.outer(a[0], b[0]),
]


@pytest.mark.parametrize("call", UFUNC_CALLS)
def test_ufuncs_run_on_the_device(backend: str, call: Any) -> None:
    a, b, ga, gb = arrays()
    check(call(np, ga, gb), call(np, a, b))


@pytest.mark.parametrize("call", FUNCTION_CALLS)
def test_functions_run_on_the_device(backend: str, call: Any) -> None:
    a, b, ga, gb = arrays()
    check(call(np, ga, gb), call(np, a, b), 2e-5)


def test_out_is_honoured(backend: str) -> None:
    a, b, ga, gb = arrays()
    out = gp.empty((3, 4))
    assert np.add(ga, gb, out=out) is out
    check(out, a + b)
    assert np.exp(ga, out=(out,)) is out
    check(out, np.exp(a))
    red = gp.empty((4,))
    assert np.sum(ga, axis=0, out=red) is red
    check(red, a.sum(0), 2e-5)
    mm = gp.empty((3, 3))
    assert np.matmul(ga, gb.T, out=mm) is mm
    check(mm, a @ b.T, 2e-5)


def test_host_results_and_shape_queries(backend: str) -> None:
    _, _, ga, gb = arrays()
    assert np.allclose(ga, ga) is True
    assert np.allclose(ga, gb) is False
    assert np.array_equal(ga, ga) is True
    assert np.shape(ga) == (3, 4) and np.ndim(ga) == 2 and np.size(ga) == 12


@pytest.mark.parametrize(("call", "message"), [
    (lambda ga: np.add.accumulate(ga), "numpy.add.accumulate is not implemented"),
    (lambda ga: np.fft.fft(ga), "numpy.fft.fft is not implemented"),
    (lambda ga: np.linalg.svd(ga), "is not implemented"),
    (lambda ga: np.sum(ga, where=ga > 1), "where="),
    (lambda ga: np.add(ga, 1, casting="unsafe"), "casting="),
    (lambda ga: np.add(ga, np.ones(4, np.float32)), "numpy.ndarray"),
    (lambda ga: np.concatenate([ga, np.ones((1, 4))]), "numpy.ndarray"),
    (lambda ga: np.asarray(ga), "Implicit conversion"),
    (lambda ga: np.array(ga), "Implicit conversion"),
    (lambda ga: np.ones(4) + ga, "numpy.ndarray"),
])
def test_unimplemented_and_host_mixes_raise(backend: str, call: Any, message: str) -> None:
    _, _, ga, _ = arrays()
    with pytest.raises(TypeError, match=message):
        call(ga)


def test_tables_cover_the_op_table() -> None:
    from pygpukit._optable import BINARY, UNARY

    for spec in (*BINARY, *UNARY):
        ufunc = getattr(np, spec.name, None)
        if isinstance(ufunc, np.ufunc):
            assert ufunc.__name__ in _protocols.UFUNCS, spec.name
    assert np.sum in _protocols.FUNCTIONS and np.linalg.norm in _protocols.FUNCTIONS


def test_deferred_functions_resolve_when_present(backend: str, monkeypatch: Any) -> None:
    _, _, ga, _ = arrays()
    monkeypatch.setattr(gp, "sort", lambda a, axis=-1: gp.negative(a), raising=False)
    check(np.sort(ga), -arrays()[0])
