"""Products, diagonals, triangles, norms and einsum on the GEMMs vs NumPy, both backends.

float64 results within 1e-12 of NumPy's; float32 products within 2e-5 (GEMM accumulation
order; FP32-accurate on tensor cores), integer results exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pygpukit as gp


def rand(*shape: int, dtype: Any = np.float64, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed + sum(shape))
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-6, 7, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def check(got: gp.GPUArray, expected: Any, tol: float = 1e-12) -> None:
    expected = np.asarray(expected)
    host = got.to_numpy()
    assert host.dtype == expected.dtype, (host.dtype, expected.dtype)
    assert host.shape == expected.shape, (host.shape, expected.shape)
    if expected.dtype.kind in "iub":
        np.testing.assert_array_equal(host, expected)
    else:
        np.testing.assert_allclose(host, expected, rtol=tol, atol=tol)


G = gp.from_numpy


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_products(backend: str, dtype: Any) -> None:
    a, b = rand(3, 4, dtype=dtype), rand(4, 5, dtype=dtype)
    c, d = rand(2, 3, 4, dtype=dtype), rand(5, 4, 6, dtype=dtype)
    check(gp.dot(G(a), G(b)), np.dot(a, b))
    check(gp.dot(G(a[0]), G(a[1])), np.dot(a[0], a[1]))
    check(gp.dot(G(c), G(d)), np.dot(c, d))
    check(gp.dot(G(c), G(b[:, 0])), np.dot(c, b[:, 0]))
    check(gp.vdot(G(c), G(c)), np.vdot(c, c))
    check(gp.inner(G(c), G(a)), np.inner(c, a))
    check(gp.outer(G(a), G(b)), np.outer(a, b))
    check(gp.tensordot(G(c), G(d), axes=([2], [1])), np.tensordot(c, d, axes=([2], [1])))
    e = rand(3, 4, 2, dtype=dtype)
    check(gp.tensordot(G(c), G(e), 2), np.tensordot(c, e, 2))
    check(gp.tensordot(G(a), G(b), 0), np.tensordot(a, b, 0))


def test_products_float32_noncontiguous_and_empty(backend: str) -> None:
    a = rand(8, 6, dtype=np.float32)
    check(gp.dot(G(a)[::2, ::-1], G(a).T[::-1, 1::2]), np.dot(a[::2, ::-1], a.T[::-1, 1::2]),
          2e-5)
    z = np.zeros((3, 0))
    check(gp.dot(G(z), G(z.T)), np.dot(z, z.T))
    check(gp.tensordot(G(rand(2, 3)), G(rand(3, 0)), 1), np.tensordot(rand(2, 3), rand(3, 0), 1))


def test_product_errors(backend: str) -> None:
    with pytest.raises(ValueError, match="shape mismatch"):
        gp.tensordot(G(rand(2, 3)), G(rand(4, 2)), 1)
    with pytest.raises(TypeError, match="must be a GPUArray"):
        gp.dot(rand(2, 2), G(rand(2, 2)))
    with pytest.raises(ValueError, match="vdot"):
        gp.vdot(G(rand(3)), G(rand(4)))


@pytest.mark.parametrize("k", [-2, -1, 0, 1, 3])
def test_diagonal_trace_triangles(backend: str, k: int) -> None:
    m, c = rand(4, 5), rand(2, 4, 3)
    check(gp.diagonal(G(m), k), np.diagonal(m, k))
    check(gp.diagonal(G(c), k, 2, 1), np.diagonal(c, k, 2, 1))
    check(gp.trace(G(m), k), np.trace(m, k))
    check(gp.trace(G(rand(4, 4, dtype=np.int8)), k), np.trace(rand(4, 4, dtype=np.int8), k))
    check(gp.tril(G(m), k), np.tril(m, k))
    check(gp.triu(G(c), k), np.triu(c, k))


def test_diagonal_is_a_view(backend: str) -> None:
    x = gp.zeros((3, 3))
    d = gp.diagonal(x)
    assert d._block is x._block
    d[...] = 7
    np.testing.assert_array_equal(x.to_numpy(), np.eye(3) * 7)


@pytest.mark.parametrize("ord_", [None, 1, 2, np.inf, -np.inf, 0, 3, 0.5])
def test_vector_norms(backend: str, ord_: Any) -> None:
    v, m = rand(7), rand(3, 5)
    check(gp.linalg.norm(G(v), ord_), np.linalg.norm(v, ord_))
    check(gp.linalg.norm(G(m), ord_, axis=1), np.linalg.norm(m, ord_, axis=1))
    check(gp.linalg.norm(G(m), ord_, axis=0, keepdims=True),
          np.linalg.norm(m, ord_, axis=0, keepdims=True))


@pytest.mark.parametrize("ord_", [None, "fro", 1, -1, np.inf, -np.inf])
def test_matrix_norms(backend: str, ord_: Any) -> None:
    m, c = rand(4, 5), rand(3, 4, 2)
    check(gp.linalg.norm(G(m), ord_), np.linalg.norm(m, ord_))
    check(gp.linalg.norm(G(c), ord_, axis=(2, 0)), np.linalg.norm(c, ord_, axis=(2, 0)))
    check(gp.linalg.norm(G(c), ord_, axis=(0, 1), keepdims=True),
          np.linalg.norm(c, ord_, axis=(0, 1), keepdims=True))


def test_norm_dtypes_and_svd_orders(backend: str) -> None:
    i = rand(3, 4, dtype=np.int16)
    check(gp.linalg.norm(G(i)), np.linalg.norm(i))
    h = rand(20, dtype=np.float16) * 100
    check(gp.linalg.norm(G(h)), np.linalg.norm(h.astype(np.float32)).astype(np.float16), 2e-3)
    for ord_ in ("nuc", 2, -2):
        with pytest.raises(NotImplementedError, match="SVD"):
            gp.linalg.norm(G(rand(3, 3)), ord_)
    check(gp.linalg.vector_norm(G(rand(2, 3)), axis=(0, 1), ord=1),
          np.sum(np.abs(rand(2, 3))))
    check(gp.linalg.matrix_norm(G(rand(2, 3, 3))), np.linalg.matrix_norm(rand(2, 3, 3)))


def test_matrix_transpose_and_vecdot(backend: str) -> None:
    c, a = rand(2, 3, 4), rand(3, 4)
    check(gp.matrix_transpose(G(c)), np.matrix_transpose(c))
    check(G(c).mT, c.swapaxes(-1, -2))
    check(gp.vecdot(G(c), G(a)), np.vecdot(c, a))
    check(gp.vecdot(G(c), G(a[:, :1]).reshape(3, 1), axis=-2),
          np.sum(c * a[:, :1], axis=-2))
    with pytest.raises(ValueError, match="contracted dims differ"):
        gp.vecdot(G(c), G(rand(3, 1)))


EINSUM = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]), ("ij->ji", [(3, 4)]), ("ij->", [(3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 3)]), ("...ij,jk->...ik", [(2, 3, 4), (4, 5)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]), ("i,i", [(4,), (4,)]),
    ("i,j->ij", [(3,), (4,)]), ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]),
    ("ij,ij->i", [(3, 4), (3, 4)]), ("iij,jk->ik", [(3, 3, 4), (4, 5)]),
    ("abc,cd,bd->a", [(2, 3, 4), (4, 2), (3, 2)]), ("ij,kl->ijkl", [(2, 3), (1, 2)]),
    ("bi,bi->b", [(1, 3), (4, 3)]),
]


@pytest.mark.parametrize(("spec", "shapes"), EINSUM, ids=[e[0] for e in EINSUM])
@pytest.mark.parametrize("dtype", [np.float64, np.int8])
def test_einsum_vs_numpy(backend: str, spec: str, shapes: list[tuple[int, ...]],
                         dtype: Any) -> None:
    ops = [rand(*s, dtype=dtype, seed=i) for i, s in enumerate(shapes)]
    check(gp.einsum(spec, *map(G, ops)), np.einsum(spec, *ops))


def test_einsum_float32_out_and_errors(backend: str) -> None:
    a, b = rand(16, 8, dtype=np.float32), rand(8, 4, dtype=np.float32)
    out = gp.empty((16, 4))
    assert gp.einsum("ij,jk->ik", G(a), G(b), out=out, optimize="greedy") is out
    check(out, a @ b, 2e-5)
    check(gp.einsum("ij,jk->ik", G(a), G(b), optimize=False), a @ b, 2e-5)
    with pytest.raises(ValueError, match="einsum"):
        gp.einsum("ij,jk->ik", G(a), G(a))
    with pytest.raises(TypeError, match="subscripts must be a string"):
        gp.einsum(G(a), [0, 1])
    with pytest.raises(TypeError, match="operand 1"):
        gp.einsum("ij,jk", G(a), b)


MATMUL_SHAPES = [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
                 ((2, 1, 3, 4), (5, 4, 2)), ((3, 0), (0, 2)), ((0, 3), (3, 2))]


@pytest.mark.parametrize(("sa", "sb"), MATMUL_SHAPES)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int64, np.bool_])
def test_integer_matmul(backend: str, sa: tuple[int, ...], sb: tuple[int, ...],
                        dtype: Any) -> None:
    rng = np.random.default_rng(len(sa) + 3 * len(sb))
    a = rng.integers(-100, 100, sa).astype(dtype)
    b = rng.integers(-100, 100, sb).astype(dtype)
    check(G(a) @ G(b), a @ b)
    check(gp.matmul(G(a), G(b)), np.matmul(a, b))


def test_integer_matmul_in_blocks_and_out(backend: str, monkeypatch: Any) -> None:
    from pygpukit import _linalg_extra

    monkeypatch.setattr(_linalg_extra, "_BLOCK_ELEMENTS", 7)  # many blocks of K
    a, b = rand(3, 10, dtype=np.int32), rand(10, 4, dtype=np.int32)
    out = gp.empty((3, 4), gp.int32)
    assert gp.matmul(G(a), G(b), out=out) is out
    check(out, a @ b)
    with pytest.raises(ValueError, match="must equal the rows of b"):
        gp.matmul(G(a), G(a))
