"""float32 products on IEEE special and extreme inputs, against a float64 reference.

What the FP32-accurate (3xTF32) tensor-core kernels do differently from SGEMM is pinned here
(and documented in the README's matmul section): an infinite *input* makes NaN where SGEMM gives
±inf, because each operand is split into a TF32 "big" part and a remainder, and the remainder
of ±inf is inf - inf = NaN (and the big * remainder terms multiply inf by the other operand's
remainder, which is often 0).  Everything else — NaN inputs, overflow of finite products to
±inf, huge and subnormal-range values — behaves as SGEMM does, within the bounds below.
TF32 and the SIMT/streaming kernels (float64, m <= 16) keep IEEE infinities.
"""

from __future__ import annotations

import numpy as np
import pytest

import pygpukit as gp

# (m, k, n): tensor-core tiles, an odd shape, and m <= 16 (the streaming kernel).
SHAPES = [(64, 64, 64), (200, 136, 72), (8, 256, 40)]
PRECISIONS = ["highest", "tf32"]
# Componentwise error bound |C - C64| <= TOL * (|A| @ |B|) + K * tiny: 3xTF32 is within a few
# float32 ulps per product (as SGEMM), TF32 within TF32's 2^-11 rounding of each operand.
TOL = {"highest": 2e-6, "tf32": 2e-3}


def _operands(m: int, k: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(np.float32),
            rng.standard_normal((k, n)).astype(np.float32))


def _product(a: np.ndarray, b: np.ndarray, precision: str) -> tuple[np.ndarray, str]:
    ga, gb = gp.from_numpy(a), gp.from_numpy(b)
    got = gp.matmul(ga, gb, precision=precision)
    return got.to_numpy(), ga._rt.gemm_last_kernel()


def _check_bound(got: np.ndarray, a: np.ndarray, b: np.ndarray, precision: str) -> None:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = a64 @ b64
    bound = TOL[precision] * (np.abs(a64) @ np.abs(b64)) + a.shape[1] * float(
        np.finfo(np.float32).tiny)
    assert np.all(np.isfinite(got)), "finite inputs whose products fit gave a non-finite result"
    excess = np.abs(got.astype(np.float64) - ref) - bound
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape)
    assert excess[worst] <= 0, (f"error {abs(got[worst] - ref[worst]):.3g} at {worst} over the "
                                f"bound {bound[worst]:.3g} (ref {ref[worst]:.6g})")


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("scale", [1e18, 1e-18, 1e-20],
                         ids=["huge", "tiny", "subnormal-products"])
def test_extreme_magnitudes_stay_within_the_bound(backend: str, shape: tuple[int, int, int],
                                                  precision: str, scale: float) -> None:
    # 1e18**2 * K stays below float32's max; 1e-18 / 1e-20 products fall to ~1e-36 / ~1e-40
    # (the latter subnormal in float32, where tensor cores may flush: the K * tiny term covers it).
    a, b = _operands(*shape)
    a, b = (a * np.float32(scale)).astype(np.float32), (b * np.float32(scale)).astype(np.float32)
    got, _ = _product(a, b, precision)
    _check_bound(got, a, b, precision)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_near_max_and_mixed_magnitudes(backend: str, shape: tuple[int, int, int],
                                       precision: str) -> None:
    # The TF32 "big" part rounds toward zero, so operands next to float32's max never overflow
    # in the split; mixed 1e30 / 1e-30 rows keep the small terms' relative accuracy.
    a, b = _operands(*shape, seed=1)
    near_max = (np.clip(a, -1, 1) * np.float32(3.0e38)).astype(np.float32)
    _check_bound(_product(near_max, (b * np.float32(1e-3)).astype(np.float32), precision)[0],
                 near_max, (b * np.float32(1e-3)).astype(np.float32), precision)
    mixed = np.where(np.arange(a.size).reshape(a.shape) % 2 == 0, a * np.float32(1e30),
                     a * np.float32(1e-30)).astype(np.float32)
    _check_bound(_product(mixed, b, precision)[0], mixed, b, precision)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_nan_and_overflow_match_ieee(backend: str, shape: tuple[int, int, int],
                                     precision: str) -> None:
    a, b = _operands(*shape, seed=2)
    a[1, 3] = np.nan
    with np.errstate(invalid="ignore"):
        ref = a.astype(np.float64) @ b.astype(np.float64)
    got, _ = _product(a, b, precision)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    # Finite inputs whose sums pass float32's max: +inf, as SGEMM.
    big = (np.abs(a[:, :]) + 1).astype(np.float32)
    big[np.isnan(big)] = 1
    huge_a = (big * np.float32(1e20)).astype(np.float32)
    huge_b = ((np.abs(b) + 1) * np.float32(1e20)).astype(np.float32)
    got, _ = _product(huge_a, huge_b, precision)
    assert np.all(got == np.inf)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("where", ["a", "b"])
def test_infinite_inputs(backend: str, shape: tuple[int, int, int], precision: str,
                         where: str) -> None:
    a, b = _operands(*shape, seed=3)
    if where == "a":
        a[1, 3], a[2, 5] = np.inf, -np.inf
    else:
        b[4, 1] = np.inf
    with np.errstate(invalid="ignore"):
        ref = a.astype(np.float64) @ b.astype(np.float64)
    got, kernel = _product(a, b, precision)
    infinite = np.isinf(ref)
    assert infinite.any()
    np.testing.assert_array_equal(np.isnan(got) & ~infinite, np.isnan(ref) & ~infinite)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(ref))
    if backend == "cuda" and precision == "highest" and "x3tf32" in kernel:
        # The documented difference: inf - inf in the 3xTF32 split.
        assert np.all(np.isnan(got[infinite])), kernel
    else:
        np.testing.assert_array_equal(got[infinite], ref[infinite])
