"""matmul / @ / linear on both backends against a float64 NumPy reference.

Accuracy is the relative Frobenius error ||C - ref|| / ||ref||, ref computed in float64 from
the very (dtype-rounded) inputs.  Tolerances, written down per dtype and precision:
float32 "highest" 1e-5, float32 "tf32" 2e-3, float16 and bfloat16 1e-2, float64 1e-12.
Results must never contain NaN.
"""

from __future__ import annotations

import functools
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import pygpukit as gp

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
TOL = {F16: 1e-2, BF16: 1e-2, F32: 1e-5, F64: 1e-12}
TF32_TOL = 2e-3
FLOATS = [F16, BF16, F32, F64]
# (m, k, n): ones, odd sizes, every small m of the streaming kernels, tile residues, and sizes
# that take the tensor-core kernels.
SHAPES = [(1, 1, 1), (1, 64, 40), (2, 3, 5), (7, 13, 5), (16, 64, 33), (17, 8, 9),
          (33, 130, 65), (64, 128, 256), (129, 257, 127), (256, 512, 384)]


def rand(shape: tuple[int, ...], dtype: np.dtype[Any], seed: int = 0) -> np.ndarray:
    """Random values of both signs, never zero, representable in ``dtype``."""
    rng = np.random.default_rng(seed)
    v = rng.uniform(0.25, 1.0, shape) * rng.choice([-1.0, 1.0], shape)
    return v.astype(dtype)


def ref_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def rel_error(got: np.ndarray, ref: np.ndarray) -> float:
    got = got.astype(np.float64)
    assert not np.isnan(got).any(), "NaN in the result"
    denom = float(np.linalg.norm(ref)) or 1.0
    return float(np.linalg.norm(got - ref)) / denom


def check(got: gp.GPUArray, ref: np.ndarray, tol: float) -> None:
    host = got.to_numpy()
    assert host.shape == ref.shape
    err = rel_error(host, ref)
    assert err <= tol, f"relative error {err:.3g} > {tol:g}"


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("mkn", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_matches_numpy(backend: str, dtype: np.dtype[Any], mkn: tuple[int, ...]) -> None:
    m, k, n = mkn
    a, b = rand((m, k), dtype, 1), rand((k, n), dtype, 2)
    c = gp.from_numpy(a) @ gp.from_numpy(b)
    assert c.dtype == dtype and c.shape == (m, n)
    check(c, ref_matmul(a, b), TOL[dtype])


@pytest.mark.parametrize("mkn", [(5, 9, 3), (16, 256, 96), (200, 384, 136), (512, 1024, 256)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("how", ["set", "precision", "use_tf32"])
def test_tf32_when_asked(backend: str, mkn: tuple[int, ...], how: str) -> None:
    m, k, n = mkn
    a, b = rand((m, k), F32, 3), rand((k, n), F32, 4)
    ga, gb = gp.from_numpy(a), gp.from_numpy(b)
    assert gp.get_matmul_precision() == "highest"
    if how == "set":
        gp.set_matmul_precision("tf32")
        try:
            assert gp.get_matmul_precision() == "tf32"
            c = ga @ gb
        finally:
            gp.set_matmul_precision("highest")
    elif how == "precision":
        c = gp.matmul(ga, gb, precision="tf32")
    else:
        c = gp.matmul(ga, gb, use_tf32=True)
    check(c, ref_matmul(a, b), TF32_TOL)
    check(gp.matmul(ga, gb, use_tf32=False), ref_matmul(a, b), TOL[F32])


@pytest.mark.parametrize("dtype", [F16, BF16, F32], ids=str)
def test_transposed_and_strided_views(backend: str, dtype: np.dtype[Any]) -> None:
    a, b = rand((96, 136), dtype, 5), rand((72, 136), dtype, 6)
    ga, gb = gp.from_numpy(a), gp.from_numpy(b)
    # b.T: column-major B, read in place.
    check(ga @ gb.T, ref_matmul(a, b.T), TOL[dtype])
    # a.T: copied to row-major first.
    check(gb.T.T @ ga.T, ref_matmul(b, a.T), TOL[dtype])
    # Steps in both dims and a negative step.
    check(ga[::2, 1::3] @ gb[::-3, 1::3].T, ref_matmul(a[::2, 1::3], b[::-3, 1::3].T), TOL[dtype])
    # Row slices keep a leading dimension larger than the row.
    check(ga[:, 8:72] @ gb[:, :64].T, ref_matmul(a[:, 8:72], b[:, :64].T), TOL[dtype])


@pytest.mark.parametrize("dtype", [F16, F32, F64], ids=str)
def test_batched_and_broadcast(backend: str, dtype: np.dtype[Any]) -> None:
    x = rand((4, 3, 24, 40), dtype, 7)
    w = rand((40, 56), dtype, 8)
    # One weight for every batch: folded into a single taller product.
    check(gp.from_numpy(x) @ gp.from_numpy(w), ref_matmul(x, w), TOL[dtype])
    # Batch dims broadcasting both ways: (2, 1, m, k) @ (3, k, n) -> (2, 3, m, n).
    a, b = rand((2, 1, 9, 16), dtype, 9), rand((3, 16, 11), dtype, 10)
    check(gp.from_numpy(a) @ gp.from_numpy(b), ref_matmul(a, b), TOL[dtype])
    # A batch of transposed B (column-major) and a stride-0 A.
    bb = rand((5, 12, 16), dtype, 11)
    gbb = gp.from_numpy(bb)
    ga = gp.from_numpy(a[0, 0])
    check(ga @ gbb.swapaxes(1, 2), ref_matmul(a[0, 0], bb.swapaxes(1, 2)), TOL[dtype])
    # Non-contiguous batch (every other matrix).
    check(gbb[::2] @ gbb[::2].swapaxes(1, 2), ref_matmul(bb[::2], bb[::2].swapaxes(1, 2)),
          TOL[dtype])
    # Batches walked backwards (negative batch strides: the GEMMs take none), for a, b and
    # out; the fuzz suite's first find was (1, 2, 1, 1)[:, ::-1] @ (1, 1).
    rev = gbb[::-1]
    check(rev @ gbb.swapaxes(1, 2), ref_matmul(bb[::-1], bb.swapaxes(1, 2)), TOL[dtype])
    check(gbb @ rev.swapaxes(1, 2), ref_matmul(bb, bb[::-1].swapaxes(1, 2)), TOL[dtype])
    tiny = rand((2, 1, 1), dtype, 23)
    gt = gp.from_numpy(tiny)[::-1][None]
    check(gt @ gp.from_numpy(tiny[0]), ref_matmul(tiny[::-1][None], tiny[0]), TOL[dtype])
    out = gp.zeros((5, 12, 12), dtype=dtype)
    gp.matmul(gbb, gbb.swapaxes(1, 2), out=out[::-1])
    check(out, ref_matmul(bb, bb.swapaxes(1, 2))[::-1], TOL[dtype])


def test_vector_operands_follow_numpy(backend: str) -> None:
    a, b, v = rand((6, 5), F32, 12), rand((5, 4), F32, 13), rand((5,), F32, 14)
    ga, gb, gv = gp.from_numpy(a), gp.from_numpy(b), gp.from_numpy(v)
    check(gv @ gb, ref_matmul(v, b), TOL[F32])
    check(ga @ gv, ref_matmul(a, v), TOL[F32])
    got = (gv @ gv).to_numpy()
    assert got.shape == () and abs(float(got) - float(v.astype(np.float64) @ v)) < 1e-4
    batch = rand((3, 6, 5), F32, 15)
    check(gp.from_numpy(batch) @ gv, ref_matmul(batch, v), TOL[F32])


def test_dtype_promotion(backend: str) -> None:
    a, b = rand((8, 16), F16, 16), rand((16, 4), F32, 17)
    c = gp.from_numpy(a) @ gp.from_numpy(b)
    assert c.dtype == F32
    check(c, ref_matmul(a, b), TOL[F32])
    c = gp.from_numpy(rand((8, 16), BF16, 18)) @ gp.from_numpy(rand((16, 4), F16, 19))
    assert c.dtype == np.multiply.resolve_dtypes((BF16, F16, None))[-1] == F32


def test_out_and_inplace(backend: str) -> None:
    a, b = rand((32, 48), F32, 20), rand((48, 32), F32, 21)
    ga, gb = gp.from_numpy(a), gp.from_numpy(b)
    out = gp.empty((32, 32))
    assert gp.matmul(ga, gb, out=out) is out
    check(out, ref_matmul(a, b), TOL[F32])
    # A strided out: computed aside, then copied in.
    big = gp.zeros((32, 64))
    view = big[:, ::2]
    gp.matmul(ga, gb, out=view)
    check(view, ref_matmul(a, b), TOL[F32])
    assert (big.to_numpy()[:, 1::2] == 0).all()
    # out overlapping an operand: a @= b with a square b.
    sq = rand((32, 32), F32, 22)
    g = gp.from_numpy(a[:, :32].copy())
    before = a[:, :32].copy()
    g @= gp.from_numpy(sq)
    check(g, ref_matmul(before, sq), TOL[F32])


def test_zero_sized_products(backend: str) -> None:
    assert (gp.zeros((0, 5)) @ gp.zeros((5, 3))).shape == (0, 3)
    assert (gp.zeros((4, 5)) @ gp.zeros((5, 0))).shape == (4, 0)
    assert (gp.zeros((2, 0, 5)) @ gp.zeros((5, 3))).shape == (2, 0, 3)
    c = gp.ones((4, 0)) @ gp.ones((0, 3))
    assert c.shape == (4, 3) and (c.to_numpy() == 0).all()
    y = gp.linear(gp.ones((2, 0)), gp.ones((3, 0)), gp.from_numpy(np.array([1, -2, 3], F32)),
                  activation="relu")
    np.testing.assert_array_equal(y.to_numpy(), [[1, 0, 3], [1, 0, 3]])


def _act(x: np.ndarray, activation: str | None) -> np.ndarray:
    from math import erf, sqrt

    if activation == "relu":
        return np.maximum(x, 0)
    if activation == "gelu":
        return 0.5 * x * (1 + np.vectorize(erf)(x / sqrt(2)))
    if activation == "gelu_tanh":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    return x


@pytest.mark.parametrize("dtype", [F16, BF16, F32], ids=str)
@pytest.mark.parametrize("activation", [None, "relu", "gelu", "gelu_tanh"])
@pytest.mark.parametrize("mkn", [(1, 64, 48), (16, 128, 72), (96, 256, 200)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "nobias"])
def test_linear_fuses_bias_and_activation(backend: str, dtype: np.dtype[Any],
                                          activation: str | None, mkn: tuple[int, ...],
                                          with_bias: bool) -> None:
    m, k, n = mkn
    x, w, bias = rand((m, k), dtype, 23), rand((n, k), dtype, 24), rand((n,), dtype, 25)
    ref = ref_matmul(x, w.T) + (bias.astype(np.float64) if with_bias else 0)
    y = gp.linear(gp.from_numpy(x), gp.from_numpy(w),
                  gp.from_numpy(bias) if with_bias else None, activation=activation)
    assert y.dtype == dtype and y.shape == (m, n)
    check(y, _act(ref, activation), TOL[dtype])


def test_linear_batched_input(backend: str) -> None:
    x, w, bias = rand((2, 5, 32), F32, 26), rand((24, 32), F32, 27), rand((24,), F32, 28)
    y = gp.linear(gp.from_numpy(x), gp.from_numpy(w), gp.from_numpy(bias), activation="gelu")
    check(y, _act(ref_matmul(x, w.T) + bias, "gelu"), TOL[F32])


@pytest.mark.parametrize("activation", [None, "relu", "gelu_tanh"])
@pytest.mark.parametrize("mkn", [(8, 64, 40), (136, 200, 264), (520, 96, 300)],
                         ids=lambda s: "x".join(map(str, s)))
def test_tf32_linear_with_row_major_weight_t(backend: str, activation: str | None,
                                             mkn: tuple[int, ...]) -> None:
    """weight given as the transpose of a (k, n) array: a row-major B (Hopper: C^T = B^T A^T)."""
    m, k, n = mkn
    x, wt, bias = rand((m, k), F32, 40), rand((k, n), F32, 41), rand((n,), F32, 42)
    y = gp.linear(gp.from_numpy(x), gp.from_numpy(wt).T, gp.from_numpy(bias),
                  activation=activation, precision="tf32")
    check(y, _act(ref_matmul(x, wt) + bias, activation), TF32_TOL)


def test_tf32_batched_row_major_b(backend: str) -> None:
    a, b = rand((3, 72, 40), F32, 43), rand((3, 40, 56), F32, 44)
    check(gp.matmul(gp.from_numpy(a), gp.from_numpy(b), precision="tf32"), ref_matmul(a, b),
          TF32_TOL)
    shared = rand((40, 56), F32, 45)  # one B for every batch (folded into the rows of A)
    check(gp.matmul(gp.from_numpy(a), gp.from_numpy(shared), precision="tf32"),
          ref_matmul(a, shared), TF32_TOL)


def test_seed_fp16_bf16_block(backend: str) -> None:
    a = gp.from_numpy(np.random.randn(1024, 1024).astype(np.float16))
    b = gp.from_numpy(np.random.randn(1024, 1024).astype(np.float16))
    c = a @ b  # FP16 matmul
    assert c.dtype == F16
    arr = np.random.randn(1024, 1024).astype(np.float32)
    a_bf16 = gp.from_numpy(arr).astype(gp.bfloat16)
    b_bf16 = gp.from_numpy(arr).astype(gp.bfloat16)
    c_bf16 = a_bf16 @ b_bf16  # BF16 matmul
    result = c_bf16.astype(gp.float32)
    ref = ref_matmul(arr.astype(BF16), arr.astype(BF16))
    check(result, ref, TOL[BF16])


# ---- errors ----

def test_bad_dtypes_and_types(backend: str) -> None:
    ints = gp.from_numpy(np.ones((3, 3), np.int32))
    with pytest.raises(TypeError, match=r"linear: supported for float16, bfloat16, float32 and "
                       r"float64 only; got int32, int32"):
        gp.linear(ints, ints)
    # Integer products take no GEMM (test_linalg_extra.py checks their values).
    np.testing.assert_array_equal((ints @ ints).to_numpy(), np.full((3, 3), 3, np.int32))
    with pytest.raises(TypeError, match="matmul: b must be a GPUArray; got ndarray"):
        gp.matmul(gp.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(TypeError, match=r"numpy\.ndarray operand beside a GPUArray"):
        gp.ones((2, 2)) @ np.ones((2, 2))  # type: ignore[operator]
    with pytest.raises(TypeError, match="unsupported operand"):
        gp.ones((2, 2)) @ [[1.0, 2.0], [3.0, 4.0]]  # type: ignore[operator]


def test_bad_shapes(backend: str) -> None:
    with pytest.raises(ValueError, match=r"matmul: a has shape \(3, 4\) and b \(5, 2\): the last "
                       r"dim of a \(4\) must equal the rows of b \(5\)"):
        gp.ones((3, 4)) @ gp.ones((5, 2))
    with pytest.raises(ValueError, match="at least one dimension"):
        gp.matmul(gp.ones(()), gp.ones((2, 2)))
    with pytest.raises(ValueError, match=r"batch dimensions \(2,\) and \(3,\) do not broadcast"):
        gp.ones((2, 4, 4)) @ gp.ones((3, 4, 4))
    with pytest.raises(ValueError, match=r"out has shape \(2, 3\), the result has \(2, 2\)"):
        gp.matmul(gp.ones((2, 3)), gp.ones((3, 2)), out=gp.empty((2, 3)))
    with pytest.raises(TypeError, match="out has dtype float64, the result has float32"):
        gp.matmul(gp.ones((2, 3)), gp.ones((3, 2)), out=gp.empty((2, 2), gp.float64))


def test_bad_linear_arguments(backend: str) -> None:
    x, w = gp.ones((2, 4)), gp.ones((3, 4))
    with pytest.raises(ValueError, match=r"linear: bias must have shape \(3,\); got \(4,\)"):
        gp.linear(x, w, gp.ones((4,)))
    with pytest.raises(ValueError, match="linear: activation must be one of None, 'relu', "
                       "'gelu', 'gelu_tanh'; got 'swish'"):
        gp.linear(x, w, activation="swish")
    with pytest.raises(ValueError, match=r"weight must be 2-D \(out_features, in_features\)"):
        gp.linear(x, gp.ones((2, 3, 4)))
    with pytest.raises(ValueError, match=r"the last dim of a \(4\) must equal the in_features "
                       r"of weight \(5\)"):
        gp.linear(x, gp.ones((3, 5)))


def test_bad_precision(backend: str) -> None:
    a = gp.ones((2, 2))
    with pytest.raises(ValueError, match=r"precision must be one of .*; got 'medium'"):
        gp.set_matmul_precision("medium")
    with pytest.raises(ValueError, match="got 'bf16'"):
        gp.matmul(a, a, precision="bf16")
    with pytest.raises(TypeError, match="either precision= or use_tf32="):
        gp.matmul(a, a, precision="tf32", use_tf32=True)
    with pytest.raises(TypeError, match="use_tf32 must be a bool"):
        gp.matmul(a, a, use_tf32=1)  # type: ignore[arg-type]
    assert gp.get_matmul_precision() == "highest"


def test_errors_leave_memory_at_baseline(backend: str) -> None:
    a, b = gp.ones((64, 32)), gp.ones((16, 8))
    gp.synchronize()
    before = gp.memory_stats()["allocated_bytes"]
    for bad in (lambda: a @ b, lambda: gp.linear(a, b), lambda: gp.matmul(a, a.T, out=a)):
        with pytest.raises(ValueError):
            bad()
    assert gp.memory_stats()["allocated_bytes"] == before


@pytest.mark.parametrize("dtype", [F16, BF16, F32, F64], ids=str)
@pytest.mark.parametrize("mkn", [(1, 64, 40), (16, 72, 24), (37, 53, 29), (256, 512, 384)],
                         ids=lambda s: "x".join(map(str, s)))
def test_every_output_element_is_written(backend: str, dtype: np.dtype[Any],
                                         mkn: tuple[int, ...]) -> None:
    """``out=`` prefilled with NaN: the kernel itself must write each element (no NaN left)."""
    m, k, n = mkn
    a, b = rand((m, k), dtype, 40), rand((k, n), dtype, 41)
    out = gp.full((m, n), np.nan, dtype)
    gp.matmul(gp.from_numpy(a), gp.from_numpy(b), out=out, precision="tf32")
    check(out, ref_matmul(a, b), TF32_TOL if dtype == F32 else TOL[dtype])


@pytest.mark.parametrize("dtype", [F16, BF16, F32], ids=str)
def test_default_keywords_and_bias_keyword(backend: str, dtype: np.dtype[Any]) -> None:
    # Keywords left at None (the C fast path takes these calls too) and linear's bias=.
    a, b = rand((24, 40), dtype, 40), rand((40, 56), dtype, 41)
    w, bias = rand((56, 40), dtype, 42), rand((56,), dtype, 43)
    ga, gb, gw, gbias = (gp.from_numpy(x) for x in (a, b, w, bias))
    tol = TOL[dtype]
    check(gp.matmul(ga, gb, precision=None), ref_matmul(a, b), tol)
    check(gp.matmul(ga, gb, out=None, use_tf32=None, scale_a=None, scale_b=None,
                    out_dtype=None), ref_matmul(a, b), tol)
    ref_lin = ref_matmul(a, w.T) + bias.astype(np.float64)
    check(gp.linear(ga, gw, bias=gbias), ref_lin, tol)
    check(gp.linear(ga, gw, bias=gbias, activation=None, precision=None), ref_lin, tol)
    check(gp.linear(ga, gw, bias=None, scale_x=None), ref_matmul(a, w.T), tol)
    with pytest.raises(TypeError, match="precison"):
        gp.matmul(ga, gb, precison=None)  # a misspelt keyword is refused, None or not
    with pytest.raises(TypeError, match="bias"):
        gp.matmul(ga, gb, bias=None)  # matmul has no bias


@pytest.mark.parametrize("dtype", [F16, BF16], ids=str)
@pytest.mark.parametrize("m", [2, 5, 16])
def test_few_rows_against_a_large_weight(backend: str, dtype: np.dtype[Any], m: int) -> None:
    # n * k = 2**25, 64 tiles of 256 columns: on the H200 the TMA kernel for few rows
    # (sm90_gemm.cu's small_m), elsewhere the streaming kernels; an odd n runs the streaming
    # kernels on every GPU.
    a = rand((m, 2048), dtype, 40)
    for n in (16384, 16383):
        b = _large_weight(dtype, n)
        check(gp.from_numpy(a) @ gp.from_numpy(b), ref_matmul(a, b), TOL[dtype])


@functools.cache
def _large_weight(dtype: np.dtype[Any], n: int) -> np.ndarray:
    return rand((2048, n), dtype, 41)


@pytest.mark.gpu
@pytest.mark.usefixtures("cuda_backend")
def test_tensor_core_kernels_are_used() -> None:
    a = gp.from_numpy(rand((512, 512), F16, 30))
    c = a @ a
    name = c._rt.gemm_last_kernel()
    major, _ = gp.Device(0).compute_capability
    assert name.startswith("sm90" if major == 9 else "sm80"), name
    gp.from_numpy(rand((4, 512), F16, 31)) @ a
    assert a._rt.gemm_last_kernel().startswith("gemv"), a._rt.gemm_last_kernel()
    if major == 9:
        # The 16-bit shape table is per GPU model (sm90_gemm.cu): at 2048^3 the H200's takes the
        # 128x128 ping-pong kernel, the one of every other sm_90 part the 128x256 cooperative one.
        g = gp.from_numpy(rand((2048, 2048), F16, 36))
        g @ g
        want = ("sm90_f16_128x128x64_c1x1_pp_kn" if "H200" in gp.Device(0).name
                else "sm90_f16_128x256x64_c2x1_coop_kn")
        assert g._rt.gemm_last_kernel() == want, (gp.Device(0).name, g._rt.gemm_last_kernel())
        # 2..16 rows against a large row-major weight (n * k >= 2**25) of at least ~0.3 x SMs
        # 256-column tiles: on the H200 the TMA ping-pong 64x256 kernel (the streaming kernels
        # elsewhere); one row, fewer tiles, a small weight or a column-major one: the streaming
        # kernels.
        w = gp.from_numpy(_large_weight(F16, 16384))
        few = ("sm90_f16_64x256x64_c1x1_pp_kn" if "H200" in gp.Device(0).name
               else "gemv_f16_mma_rowb")
        for m, want in ((16, few), (1, "gemv_f16_mma_rowb")):
            gp.from_numpy(rand((m, 2048), F16, 38)) @ w
            assert w._rt.gemm_last_kernel() == want, (m, w._rt.gemm_last_kernel())
        narrow = gp.from_numpy(rand((4096, 8192), F16, 37))  # 32 tiles
        gp.from_numpy(rand((16, 4096), F16, 38)) @ narrow
        assert w._rt.gemm_last_kernel() == "gemv_f16_mma_rowb", w._rt.gemm_last_kernel()
        # A linear layer's (N, K) weight is a column-major B.
        weight = gp.from_numpy(rand((8192, 4096), F16, 39))
        gp.linear(gp.from_numpy(rand((16, 4096), F16, 39)), weight)
        assert w._rt.gemm_last_kernel() == "gemv_f16_mma_colb", w._rt.gemm_last_kernel()
    # TF32 with a row-major B: on Hopper the transposed-problem kernel, no staged copy of B.
    f = gp.from_numpy(rand((256, 384), F32, 34))
    gp.matmul(f, gp.from_numpy(rand((384, 320), F32, 35)), precision="tf32")
    name = a._rt.gemm_last_kernel()
    if major == 9:
        assert name.startswith("sm90_tf32") and name.endswith("_kn_t"), name
    else:
        assert name.startswith("sm80_tf32"), name
    gp.from_numpy(rand((64, 64), F64, 32)) @ gp.from_numpy(rand((64, 64), F64, 33))
    assert a._rt.gemm_last_kernel().startswith("simt"), a._rt.gemm_last_kernel()


def test_cuda_descriptor_packing() -> None:
    """The struct-packed pgk_gemm_desc has the C layout and element strides (no GPU needed)."""
    import ctypes
    from types import SimpleNamespace

    import pygpukit_kernels as pk
    from pygpukit import _cuda_backend

    assert _cuda_backend._GEMM_FORMAT.size == ctypes.sizeof(pk.GemmDesc)
    block = SimpleNamespace(address=0x10000)

    def view(offset: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> gp.GPUArray:
        return gp.GPUArray(None, block, offset, shape, strides, F16)  # type: ignore[arg-type]

    # (3 batches of) a (5, 7) A with lda 8, B col-major (7, 4) with ldb 9, C (5, 4) with ldc 4.
    a = view(2, (3, 5, 7), (80, 16, 2))
    b = view(0, (3, 7, 4), (0, 2, 18))
    c = view(64, (3, 5, 4), (40, 8, 2))
    bias = view(6, (4,), (2,))
    desc, key = _cuda_backend._gemm_desc(a, b, c, True, bias, 2, 1)
    got = {name: getattr(desc, name) for name, _ in pk.GemmDesc._fields_}
    assert got == dict(m=5, n=4, k=7, batch=3, dtype=pk.DType.FLOAT16, precision=1, activation=2,
                       b_col_major=1, a=0x10002, lda=8, batch_stride_a=40, b=0x10000, ldb=9,
                       batch_stride_b=0, c=0x10040, ldc=4, batch_stride_c=20, bias=0x10006)
    # The plan key: everything but the addresses, plus their alignment.
    assert key == (5, 4, 7, 3, pk.DType.FLOAT16, 1, 2, 1, 8, 40, 9, 0, 4, 20, True,
                   (0x10002 | 0x10000 | 0x10040 | 0x10006) & 255)
    # 2-D row-major B and a single row: ld of one row is its minimum.
    desc, _ = _cuda_backend._gemm_desc(view(0, (1, 7), (14, 2)), view(0, (7, 4), (10, 2)),
                                    view(0, (1, 4), (8, 2)), False, None, 0, 0)
    assert (desc.m, desc.batch, desc.lda, desc.ldb, desc.ldc, desc.bias) == (1, 1, 7, 5, 4, None)
