"""FP8 (float8_e4m3fn, float8_e5m2): storage, casts, scaled casts and scaled products.

Every test runs on the CPU simulation and, in the GPU tier, on CUDA (the ``backend`` fixture):
casts are compared bit for bit with ml_dtypes (torch's rounding: nearest even, overflow to NaN
for E4M3 and to inf for E5M2), quantization with a NumPy reference of the same float32
arithmetic, and products with a float64 reference of the dequantized operands.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import pygpukit as gp
from pygpukit import _fp8

E4 = np.dtype(ml_dtypes.float8_e4m3fn)
E5 = np.dtype(ml_dtypes.float8_e5m2)
FP8 = [E4, E5]
FLOATS = [np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32),
          np.dtype(np.float64)]
IDS = {E4: "e4m3", E5: "e5m2"}


def _same(got: np.ndarray, want: np.ndarray) -> None:
    """Equal values, NaN where NaN (FP8 NaN bit patterns may differ in the sign)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w))
    ok = ~np.isnan(w)
    bad = np.flatnonzero(g[ok] != w[ok])
    assert bad.size == 0, f"{bad.size} values differ, first {g[ok][bad[0]]} != {w[ok][bad[0]]}"


def _specials(dtype: np.dtype[Any], n: int = 4096, seed: int = 0) -> np.ndarray:
    """Random values over the FP8 range and beyond, subnormals, ties, zeros, inf and NaN."""
    rng = np.random.default_rng(seed)
    mags = np.exp2(rng.uniform(-20, 18, n)) * rng.choice([-1, 1], n)
    extra = [0.0, -0.0, np.inf, -np.inf, np.nan, 448.0, 464.0, 465.0, 480.0, 57344.0, 61440.0,
             61441.0, 2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -11, 2.0 ** -16, 2.0 ** -17, 1e30]
    return np.concatenate([mags, extra]).astype(dtype)


@pytest.mark.parametrize("dtype", FP8, ids=IDS.get)
def test_round_trip_and_views(backend: str, dtype: np.dtype[Any]) -> None:
    host = _specials(np.dtype(np.float32)).astype(dtype)
    g = gp.from_numpy(host)
    assert g.dtype == dtype and g.itemsize == 1
    assert g.to_numpy().tobytes() == host.tobytes()
    m = host[:4000].reshape(40, 100)
    gm = gp.from_numpy(m)
    assert gm.T.copy().to_numpy().tobytes() == np.ascontiguousarray(m.T).tobytes()
    assert gm[:, 1::3].to_numpy().tobytes() == np.ascontiguousarray(m[:, 1::3]).tobytes()


@pytest.mark.parametrize("src", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("dtype", FP8, ids=IDS.get)
def test_astype_to_fp8_matches_ml_dtypes(backend: str, dtype: np.dtype[Any],
                                         src: np.dtype[Any]) -> None:
    with np.errstate(all="ignore"):
        x = _specials(np.dtype(np.float64)).astype(src)
        _same(gp.from_numpy(x).astype(dtype).to_numpy(), x.astype(dtype))


@pytest.mark.parametrize("dst", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("dtype", FP8, ids=IDS.get)
def test_astype_from_fp8_is_exact(backend: str, dtype: np.dtype[Any], dst: np.dtype[Any]) -> None:
    every = np.arange(256, dtype=np.uint8).view(dtype)  # every FP8 value
    _same(gp.from_numpy(every).astype(dst).to_numpy(), every.astype(np.float32).astype(dst))


def test_astype_between_fp8_ints_and_views(backend: str) -> None:
    every = np.arange(256, dtype=np.uint8).view(E5)
    with np.errstate(all="ignore"):
        _same(gp.from_numpy(every).astype(E4).to_numpy(), every.astype(np.float32).astype(E4))
    ints = np.arange(-440, 440, 7, dtype=np.int32)
    _same(gp.from_numpy(ints).astype(E4).to_numpy(), ints.astype(np.float32).astype(E4))
    back = gp.from_numpy(ints.astype(E4)).astype(np.int32).to_numpy()
    assert np.array_equal(back, ints.astype(E4).astype(np.float32).astype(np.int32))
    x = np.random.default_rng(1).standard_normal((30, 50)).astype(np.float32) * 50
    g = gp.from_numpy(x)
    _same(g.T.astype(E4).to_numpy(), x.T.astype(E4))  # a transposed source
    target = gp.from_numpy(np.zeros((50, 30), E4))
    target[...] = g.T  # a cast into an existing FP8 array
    _same(target.to_numpy(), x.T.astype(E4))
    row = gp.from_numpy(np.zeros((4, 50), np.float32))
    row[...] = gp.from_numpy(x[0].astype(E4))  # broadcast FP8 -> float32
    _same(row.to_numpy(), np.broadcast_to(x[0].astype(E4).astype(np.float32), (4, 50)).copy())


def _quantize_ref(x: np.ndarray, dtype: np.dtype[Any], per_row: bool
                  ) -> tuple[np.ndarray, np.ndarray]:
    f32 = np.float32
    mag = np.abs(x).astype(f32)
    amax = mag.max(axis=-1, keepdims=True) if per_row else mag.max()
    scale = (np.maximum(amax, f32(1e-12)) / f32(_fp8.FP8_MAX[dtype])).astype(f32)
    fmax = _fp8.FP8_MAX[dtype]
    q = np.clip(x.astype(f32) / scale, -fmax, fmax).astype(dtype)
    return q, np.asarray(scale, f32)


@pytest.mark.parametrize("mode", ["tensor", "row"])
@pytest.mark.parametrize("src", [np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16)],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("dtype", FP8, ids=IDS.get)
def test_quantize_matches_reference(backend: str, dtype: np.dtype[Any], src: np.dtype[Any],
                                    mode: str) -> None:
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((37, 300)) * np.exp2(rng.uniform(-8, 8, (37, 1)))).astype(src)
    x[3] = 0  # an all-zero row: the amax floor
    q, s = gp.quantize_fp8(gp.from_numpy(x), dtype, scale=mode)
    _, s_ref = _quantize_ref(x, dtype, mode == "row")
    assert s.dtype == np.float32 and s.shape == ((37, 1) if mode == "row" else ())
    s_got = s.to_numpy()
    np.testing.assert_allclose(s_got, s_ref, rtol=2e-7, atol=0)  # amax / max in float32
    fmax = _fp8.FP8_MAX[dtype]
    q_ref = np.clip(x.astype(np.float32) / s_got, -fmax, fmax).astype(dtype)
    _same(q.to_numpy(), q_ref)  # the scaled cast itself: bit for bit
    back = gp.dequantize_fp8(q, s, "float32").to_numpy()
    np.testing.assert_array_equal(back, q_ref.astype(np.float32) * s_got)
    # Saturation: a given scale smaller than amax/max clamps, never overflows to NaN/inf.
    small = gp.from_numpy(np.array(1e-3, np.float32))
    qs, _ = gp.quantize_fp8(gp.from_numpy(x), dtype, scale=small)
    assert np.all(np.isfinite(qs.to_numpy().astype(np.float32)))


def _dequant(q: np.ndarray, s: np.ndarray | None, axis_shape: tuple[int, ...]) -> np.ndarray:
    d = q.astype(np.float64)
    return d if s is None else d * s.astype(np.float64).reshape(axis_shape)


def _rel(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref))


TOL = {"bfloat16": 1e-2, "float16": 2e-3, "float32": 2e-3}
ACTS = {None: lambda v: v, "relu": lambda v: np.maximum(v, 0.0)}


@pytest.mark.parametrize("out_dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("kind", ["tensor", "row"])
@pytest.mark.parametrize("shape", [(1, 40, 20), (64, 128, 256), (200, 72, 136), (130, 4096, 96)],
                         ids=lambda s: "x".join(map(str, s)))
def test_linear_fp8_vs_float64(backend: str, shape: tuple[int, int, int], kind: str,
                               out_dtype: str) -> None:
    m, k, n = shape
    rng = np.random.default_rng(m + k + n)
    x = rng.standard_normal((m, k)).astype(np.float32) * 3
    w = rng.standard_normal((n, k)).astype(np.float32) * 0.1
    bias = rng.standard_normal(n).astype(np.float32)
    qx, sx = gp.quantize_fp8(gp.from_numpy(x), "float8_e4m3fn", scale=kind)
    qw, sw = gp.quantize_fp8(gp.from_numpy(w), "float8_e4m3fn", scale=kind)
    xd = _dequant(qx.to_numpy(), sx.to_numpy(), (-1, 1) if kind == "row" else ())
    wd = _dequant(qw.to_numpy(), sw.to_numpy(), (-1, 1) if kind == "row" else ())
    for act in (None, "relu"):
        for b in (None, bias):
            y = gp.linear(qx, qw, None if b is None else gp.from_numpy(b), act, scale_x=sx,
                          scale_weight=sw, out_dtype=out_dtype)
            assert y.dtype == np.dtype(gp.bfloat16 if out_dtype == "bfloat16" else out_dtype)
            assert y.shape == (m, n)
            ref = ACTS[act](xd @ wd.T + (0 if b is None else b.astype(np.float64)))
            got = y.to_numpy()
            assert _rel(got, ref) < TOL[out_dtype], (act, b is None)
            if backend == "cuda":
                # m <= 16: the small-M streaming kernel (sm_89+), except on Hopper.
                family = ("sm90_fp8" if tuple(y._rt.compute_capability) == (9, 0) else
                          "sm89_fp8_gemv" if m <= 16 else "sm89_fp8")
                assert y._rt.gemm_last_kernel().startswith(family), y._rt.gemm_last_kernel()


@pytest.mark.parametrize("pair", [(E4, E4), (E4, E5), (E5, E4)],
                         ids=lambda p: f"{IDS[p[0]]}x{IDS[p[1]]}")
def test_matmul_fp8_layouts_and_pairs(backend: str, pair: tuple[np.dtype[Any], ...]) -> None:
    rng = np.random.default_rng(7)
    m, k, n = 96, 160, 72
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    qa, sa = gp.quantize_fp8(gp.from_numpy(a), pair[0], scale="row")
    qw, sw = gp.quantize_fp8(gp.from_numpy(w), pair[1], scale="tensor")
    ref = _dequant(qa.to_numpy(), sa.to_numpy(), (-1, 1)) @ _dequant(qw.to_numpy(),
                                                                     sw.to_numpy(), ()).T
    # b as a transposed view of (N, K) (read in place) and as a row-major (K, N) copy.
    for b in (qw.T, qw.T.copy()):
        got = gp.matmul(qa, b, scale_a=sa, scale_b=sw, out_dtype="float32").to_numpy()
        assert got.dtype == np.float32
        assert _rel(got, ref) < TOL["float32"]
    # No scales: the raw FP8 product; a (1, N) column scale.
    raw = gp.matmul(qa, qw.T, out_dtype="float32").to_numpy()
    assert _rel(raw, qa.to_numpy().astype(np.float64) @ qw.to_numpy().astype(np.float64).T) < 2e-3
    cols = gp.from_numpy(rng.uniform(0.5, 2, (1, n)).astype(np.float32))
    got = gp.matmul(qa, qw.T, scale_b=cols, out_dtype="float32").to_numpy()
    want = qa.to_numpy().astype(np.float64) @ qw.to_numpy().astype(np.float64).T
    assert _rel(got, want * cols.to_numpy().astype(np.float64)) < 2e-3


def test_linear_fp8_batched_input_and_gelu(backend: str) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 48)).astype(np.float32)
    w = rng.standard_normal((32, 48)).astype(np.float32)
    qx, sx = gp.quantize_fp8(gp.from_numpy(x), scale="row")
    qw, sw = gp.quantize_fp8(gp.from_numpy(w), scale="row")
    assert sx.shape == (2, 3, 1)
    y = gp.linear(qx, qw, scale_x=sx, scale_weight=sw, activation="gelu", out_dtype="float32")
    assert y.shape == (2, 3, 32)
    xd = _dequant(qx.to_numpy(), sx.to_numpy(), (2, 3, 1))
    wd = _dequant(qw.to_numpy(), sw.to_numpy(), (-1, 1))
    pre = xd @ wd.T
    from math import erf

    ref = 0.5 * pre * (1 + np.vectorize(erf)(pre / np.sqrt(2)))
    assert _rel(y.to_numpy(), ref) < 2e-3


def test_fp8_bad_input_is_refused_clearly(backend: str) -> None:
    rng = np.random.default_rng(4)
    a = gp.from_numpy(rng.standard_normal((8, 32)).astype(np.float32))
    qa, sa = gp.quantize_fp8(a)
    qe5 = a.astype(E5)
    with pytest.raises(TypeError, match="float8_e5m2 x float8_e5m2"):
        gp.matmul(qe5, qe5.T)
    with pytest.raises(TypeError, match="two FP8 operands"):
        gp.matmul(qa, a.T)
    with pytest.raises(TypeError, match="two FP8 operands"):
        gp.matmul(a, a.T, scale_a=sa)
    with pytest.raises(ValueError, match=r"scale_a must have one element .* shape \(8, 1\)"):
        gp.matmul(qa, qa.T, scale_a=gp.from_numpy(np.ones((1, 8), np.float32)))
    with pytest.raises(ValueError, match=r"scale_weight must have one element .* \(8, 1\)"):
        gp.linear(qa, qa, scale_weight=gp.from_numpy(np.ones((1, 8), np.float32)))
    with pytest.raises(TypeError, match="scale_b must be float32"):
        gp.matmul(qa, qa.T, scale_b=gp.from_numpy(np.ones((), np.float16)))
    with pytest.raises(TypeError, match="out_dtype must be bfloat16, float16 or float32"):
        gp.matmul(qa, qa.T, out_dtype="float64")
    with pytest.raises(ValueError, match="bias must have shape"):
        gp.linear(qa, qa, gp.from_numpy(np.ones(3, np.float32)))
    with pytest.raises(ValueError, match="inner dimensions"):
        gp.matmul(qa, qa)
    with pytest.raises(ValueError, match="2-D operands"):
        gp.matmul(qa.reshape(2, 4, 32), qa.T)
    with pytest.raises(TypeError, match="not supported for float8_e4m3fn"):
        qa + qa
    with pytest.raises(TypeError, match="not supported for float8_e4m3fn"):
        qa.sum()
    with pytest.raises(TypeError, match="not supported for float8_e4m3fn"):
        gp.exp(qa)
    with pytest.raises(ValueError, match="scale must be 'tensor', 'row'"):
        gp.quantize_fp8(a, scale="column")
    with pytest.raises(TypeError, match="expected float8_e4m3fn or float8_e5m2"):
        gp.quantize_fp8(a, "bfloat16")
    with pytest.raises(TypeError, match="x must be float16, bfloat16, float32 or float64"):
        gp.quantize_fp8(gp.from_numpy(np.ones(4, np.int32)))
    with pytest.raises(TypeError, match="q must be float8_e4m3fn or float8_e5m2"):
        gp.dequantize_fp8(a)


class _FakeRuntime:
    def __init__(self, cc: tuple[int, int]) -> None:
        self.compute_capability = cc

    def describe(self) -> str:
        return "cuda:0 (Fake GPU)"


def test_fp8_products_need_compute_capability_8_9() -> None:
    for cc in ((7, 5), (8, 0), (8, 6)):
        with pytest.raises(NotImplementedError,
                           match=rf"compute capability 8\.9 or newer.*{cc[0]}\.{cc[1]}"):
            _fp8._check_device(_FakeRuntime(cc), "matmul")  # type: ignore[arg-type]
    for cc in ((8, 9), (9, 0), (10, 0), (10, 3), (12, 0), (12, 1)):
        _fp8._check_device(_FakeRuntime(cc), "linear")  # type: ignore[arg-type]


# -- the mma.sync FP8 kernels (sm_89+), forced on Hopper ------------------------------------
@pytest.fixture
def mma_fp8(backend: str) -> Iterator[str]:
    """On CUDA: pgk_gemm_fp8_force_config(4) (the mma.sync FP8 kernels, which run by default on
    compute capability 8.9, 10.x and 12.x, also on Hopper) for the test, 0 after it."""
    if backend != "cuda":
        yield backend
        return
    import pygpukit_kernels

    cc = tuple(gp.from_numpy(np.zeros(1, np.float32))._rt.compute_capability)
    if cc < (8, 9):
        pytest.skip(f"no FP8 tensor cores (compute capability {cc[0]}.{cc[1]})")
    force = pygpukit_kernels.load().pgk_gemm_fp8_force_config
    assert force(4) == 0
    try:
        yield backend
    finally:
        assert force(0) == 0


def _mma_ran(backend: str, y: gp.GPUArray) -> None:
    if backend == "cuda":
        assert y._rt.gemm_last_kernel().startswith("sm89_fp8_"), y._rt.gemm_last_kernel()


@pytest.mark.parametrize("out_dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("pair", [(E4, E4), (E4, E5), (E5, E4)],
                         ids=lambda p: f"{IDS[p[0]]}x{IDS[p[1]]}")
def test_mma_fp8_pairs_scales_bias_and_activations(mma_fp8: str, pair: tuple[np.dtype[Any], ...],
                                                   out_dtype: str) -> None:
    rng = np.random.default_rng(11)
    m, k, n = 96, 160, 72
    x = rng.standard_normal((m, k)).astype(np.float32) * 3
    w = rng.standard_normal((n, k)).astype(np.float32) * 0.1
    bias = rng.standard_normal(n).astype(np.float32)
    for kind in ("tensor", "row"):
        qx, sx = gp.quantize_fp8(gp.from_numpy(x), pair[0], scale=kind)
        qw, sw = gp.quantize_fp8(gp.from_numpy(w), pair[1], scale=kind)
        xd = _dequant(qx.to_numpy(), sx.to_numpy(), (-1, 1) if kind == "row" else ())
        wd = _dequant(qw.to_numpy(), sw.to_numpy(), (-1, 1) if kind == "row" else ())
        pre = xd @ wd.T
        for act, ref_act in (("relu", ACTS["relu"]), ("gelu", _gelu), ("gelu_tanh", _gelu_tanh),
                             (None, ACTS[None])):
            for b in (None, bias):
                y = gp.linear(qx, qw, None if b is None else gp.from_numpy(b), act, scale_x=sx,
                              scale_weight=sw, out_dtype=out_dtype)
                _mma_ran(mma_fp8, y)
                ref = ref_act(pre + (0 if b is None else b.astype(np.float64)))
                assert _rel(y.to_numpy(), ref) < TOL[out_dtype], (kind, act, b is None)
    # No scales at all: the raw FP8 product.
    qa = gp.from_numpy(x).astype(pair[0])
    qb = gp.from_numpy(w).astype(pair[1])
    raw = gp.matmul(qa, qb.T, out_dtype=out_dtype)
    _mma_ran(mma_fp8, raw)
    want = qa.to_numpy().astype(np.float64) @ qb.to_numpy().astype(np.float64).T
    assert _rel(raw.to_numpy(), want) < TOL[out_dtype]


def _gelu(v: np.ndarray) -> np.ndarray:
    from math import erf

    return 0.5 * v * (1 + np.vectorize(erf)(v / np.sqrt(2)))


def _gelu_tanh(v: np.ndarray) -> np.ndarray:
    return 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))


@pytest.mark.parametrize("out_dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("shape", [(1, 16, 8), (1, 16, 1), (3, 16, 5), (1, 20, 3),
                                   (130, 48, 33), (257, 4096, 130)],
                         ids=lambda s: "x".join(map(str, s)))
def test_mma_fp8_odd_shapes(mma_fp8: str, shape: tuple[int, int, int], out_dtype: str) -> None:
    # m = 1, K at the 16-element minimum (and 20, zero-padded to 32), N below one vector of
    # the output and not a multiple of 8; per-row x per-column scales with a bias (no
    # activation: a relu could zero a 1x1 result, whose relative error is then undefined).
    m, k, n = shape
    rng = np.random.default_rng(m * 7 + k + n)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    qx, sx = gp.quantize_fp8(gp.from_numpy(x), scale="row")
    qw, sw = gp.quantize_fp8(gp.from_numpy(w), scale="row")
    y = gp.linear(qx, qw, gp.from_numpy(bias), scale_x=sx, scale_weight=sw, out_dtype=out_dtype)
    _mma_ran(mma_fp8, y)
    assert y.shape == (m, n)
    xd = _dequant(qx.to_numpy(), sx.to_numpy(), (-1, 1))
    wd = _dequant(qw.to_numpy(), sw.to_numpy(), (-1, 1))
    ref = xd @ wd.T + bias.astype(np.float64)
    assert _rel(y.to_numpy(), ref) < TOL[out_dtype]
    # matmul with a (1, N) column scale and a per-tensor scale of a (2**-10: the unscaled FP8
    # values reach 448, their products over K would overflow float16).
    cols = gp.from_numpy(rng.uniform(0.5, 2, (1, n)).astype(np.float32))
    got = gp.matmul(qx, qw.T, scale_a=gp.from_numpy(np.float32([2.0 ** -10])), scale_b=cols,
                    out_dtype=out_dtype)
    _mma_ran(mma_fp8, got)
    want = 2.0 ** -10 * (qx.to_numpy().astype(np.float64) @ qw.to_numpy().astype(np.float64).T) \
        * cols.to_numpy().astype(np.float64)
    assert _rel(got.to_numpy(), want) < TOL[out_dtype]


# -- the small-M streaming kernel (m <= 16, sm_89+) and the 128x224 sm_90a configuration -----
def _force_fp8(backend: str, config: int, min_cc: tuple[int, int], only_cc: bool = False
               ) -> Iterator[str]:
    """On CUDA: pgk_gemm_fp8_force_config(config) for the test, 0 after it; skipped below
    min_cc (or on any other compute capability when only_cc)."""
    if backend != "cuda":
        yield backend
        return
    import pygpukit_kernels

    cc = tuple(gp.from_numpy(np.zeros(1, np.float32))._rt.compute_capability)
    if cc < min_cc or (only_cc and cc != min_cc):
        pytest.skip(f"configuration {config} needs compute capability {min_cc}, not {cc}")
    force = pygpukit_kernels.load().pgk_gemm_fp8_force_config
    assert force(config) == 0
    try:
        yield backend
    finally:
        assert force(0) == 0


@pytest.fixture(params=["forced", "auto"])
def gemv_fp8(request: pytest.FixtureRequest, backend: str) -> Iterator[tuple[str, str]]:
    """The small-M kernel forced (config 5), or the shape heuristic's kernel for m <= 16: the
    small-M kernel, except on Hopper (an sm_90a kernel: for e4m3 x e4m3 the swapped 128x32 one,
    faster there; test_fp8_small_m_dispatch names it).  Yields the backend and the expected
    kernel name's prefix."""
    for b in _force_fp8(backend, 5 if request.param == "forced" else 0, (8, 9)):
        prefix = GEMV
        if b == "cuda" and request.param == "auto" and _cc() == (9, 0):
            prefix = "sm90_fp8_"
        yield b, prefix


def _cc() -> tuple[int, ...]:
    return tuple(gp.from_numpy(np.zeros(1, np.float32))._rt.compute_capability)


# pgk_gemm_fp8_force_config codes of the sm_90a configurations added for the LLM shapes, and
# the kernel names they note.
TILES = {6: "sm90_fp8_e4e4_128x224x128_c1x1_coop_", 7: "sm90_fp8_e4e4_128x32x128_c1x1_coop_t_"}


@pytest.fixture(params=sorted(TILES), ids=lambda c: {6: "w", 7: "t"}[c])
def tile_fp8(request: pytest.FixtureRequest, backend: str) -> Iterator[tuple[str, int]]:
    """The 128x224 cooperative kernel ("w", config 6) or the 128x32 cooperative kernel on the
    swapped problem ("t", config 7) forced: compute capability 9.0."""
    for b in _force_fp8(backend, request.param, (9, 0), only_cc=True):
        yield b, request.param


def _ran(backend: str, y: gp.GPUArray, prefix: str) -> None:
    if backend == "cuda":
        assert y._rt.gemm_last_kernel().startswith(prefix), y._rt.gemm_last_kernel()


GEMV = "sm89_fp8_gemv_"


@pytest.mark.parametrize("out_dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("shape", [(1, 80, 14336), (2, 4112, 1000), (7, 96, 1000),
                                   (16, 4112, 136), (16, 64, 8), (5, 16, 1), (9, 48, 13)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gemv_fp8_shapes_scales_and_bias(gemv_fp8: tuple[str, str], shape: tuple[int, int, int],
                                         out_dtype: str) -> None:
    # K not a multiple of the kernel's k64 chunk (80, 4112 = 4096 + 16, 16, 48), odd N (a
    # partial last block of 16 columns), every m of one m-tile; per-tensor and per-row/column
    # scales, with and without a bias.
    backend, prefix = gemv_fp8
    m, k, n = shape
    rng = np.random.default_rng(m * 31 + k + n)
    x = rng.standard_normal((m, k)).astype(np.float32) * 3
    w = rng.standard_normal((n, k)).astype(np.float32) * 0.1
    bias = rng.standard_normal(n).astype(np.float32)
    for kind in ("tensor", "row"):
        qx, sx = gp.quantize_fp8(gp.from_numpy(x), scale=kind)
        qw, sw = gp.quantize_fp8(gp.from_numpy(w), scale=kind)
        xd = _dequant(qx.to_numpy(), sx.to_numpy(), (-1, 1) if kind == "row" else ())
        wd = _dequant(qw.to_numpy(), sw.to_numpy(), (-1, 1) if kind == "row" else ())
        pre = xd @ wd.T
        for b in (None, bias):
            y = gp.linear(qx, qw, None if b is None else gp.from_numpy(b), scale_x=sx,
                          scale_weight=sw, out_dtype=out_dtype)
            _ran(backend, y, prefix)
            assert y.shape == (m, n)
            ref = pre + (0 if b is None else b.astype(np.float64))
            assert _rel(y.to_numpy(), ref) < TOL[out_dtype], (kind, b is None)
    # No scales: the raw FP8 product (a = x / 8: products over K stay finite in float16).
    qa = gp.from_numpy(x / 8).astype(E4)
    qb = gp.from_numpy(w).astype(E4)
    raw = gp.matmul(qa, qb.T, out_dtype=out_dtype)
    _ran(backend, raw, prefix)
    want = qa.to_numpy().astype(np.float64) @ qb.to_numpy().astype(np.float64).T
    assert _rel(raw.to_numpy(), want) < TOL[out_dtype]


@pytest.mark.parametrize("out_dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("pair", [(E4, E4), (E4, E5), (E5, E4)],
                         ids=lambda p: f"{IDS[p[0]]}x{IDS[p[1]]}")
def test_gemv_fp8_pairs_and_activations(gemv_fp8: tuple[str, str],
                                        pair: tuple[np.dtype[Any], ...], out_dtype: str) -> None:
    backend, prefix = gemv_fp8
    rng = np.random.default_rng(17)
    m, k, n = 3, 208, 1000
    x = rng.standard_normal((m, k)).astype(np.float32) * 3
    w = rng.standard_normal((n, k)).astype(np.float32) * 0.1
    bias = rng.standard_normal(n).astype(np.float32)
    qx, sx = gp.quantize_fp8(gp.from_numpy(x), pair[0], scale="row")
    qw, sw = gp.quantize_fp8(gp.from_numpy(w), pair[1], scale="tensor")
    pre = _dequant(qx.to_numpy(), sx.to_numpy(), (-1, 1)) @ _dequant(qw.to_numpy(),
                                                                     sw.to_numpy(), ()).T
    for act, ref_act in (("relu", ACTS["relu"]), ("gelu", _gelu), ("gelu_tanh", _gelu_tanh),
                         (None, ACTS[None])):
        for b in (None, bias):
            y = gp.linear(qx, qw, None if b is None else gp.from_numpy(b), act, scale_x=sx,
                          scale_weight=sw, out_dtype=out_dtype)
            _ran(backend, y, prefix)
            ref = ref_act(pre + (0 if b is None else b.astype(np.float64)))
            assert _rel(y.to_numpy(), ref) < TOL[out_dtype], (act, b is None)


def test_fp8_small_m_dispatch(backend: str) -> None:
    """The shape heuristic: the small-M kernel up to m = 16 (sm_89+; on Hopper the swapped 128x32
    sm_90a kernel), a tile kernel from 17 on; configurations 1-4 bypass it, 5 forces it only
    where it can run."""
    if backend != "cuda":
        pytest.skip("kernel names exist on CUDA only")
    import pygpukit_kernels

    rt = gp.from_numpy(np.zeros(1, np.float32))._rt
    cc = tuple(rt.compute_capability)
    if cc < (8, 9):
        pytest.skip("no FP8 tensor cores")
    force = pygpukit_kernels.load().pgk_gemm_fp8_force_config
    rng = np.random.default_rng(5)
    w = gp.from_numpy(rng.standard_normal((40, 64)).astype(np.float32)).astype(E4)
    hopper = cc == (9, 0)
    tile = "sm90_fp8_" if hopper else "sm89_fp8_e"
    small = TILES[7] if hopper else GEMV  # Hopper: the swapped 128x32 WGMMA kernel up to m = 32
    try:
        for config, m, prefix in ((0, 1, small), (0, 16, small), (0, 17, tile), (0, 32, tile),
                                  (5, 1, GEMV), (5, 16, GEMV), (5, 17, tile),
                                  (4, 1, "sm89_fp8_e4e4_"), (1 if hopper else 4, 1, tile)):
            assert force(config) == 0
            x = gp.from_numpy(rng.standard_normal((m, 64)).astype(np.float32)).astype(E4)
            y = gp.linear(x, w, out_dtype="float32")
            _ran(backend, y, prefix)
            want = x.to_numpy().astype(np.float64) @ w.to_numpy().astype(np.float64).T
            assert _rel(y.to_numpy(), want) < TOL["float32"], (config, m)
    finally:
        assert force(0) == 0


@pytest.mark.parametrize("out_dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("shape", [(256, 512, 1000), (300, 4096, 448), (1, 64, 8),
                                   (130, 160, 232), (32, 4096, 1000), (20, 80, 136)],
                         ids=lambda s: "x".join(map(str, s)))
def test_fp8_tile_configs(tile_fp8: tuple[str, int], shape: tuple[int, int, int],
                          out_dtype: str) -> None:
    # Partial tiles in M and N; per-row x per-column scales, bias and gelu.
    backend, config = tile_fp8
    m, k, n = shape
    rng = np.random.default_rng(m + 3 * k + n)
    x = rng.standard_normal((m, k)).astype(np.float32) * 3
    w = rng.standard_normal((n, k)).astype(np.float32) * 0.1
    bias = rng.standard_normal(n).astype(np.float32)
    for kind, act, ref_act in (("row", "gelu", _gelu), ("tensor", None, ACTS[None])):
        qx, sx = gp.quantize_fp8(gp.from_numpy(x), scale=kind)
        qw, sw = gp.quantize_fp8(gp.from_numpy(w), scale=kind)
        xd = _dequant(qx.to_numpy(), sx.to_numpy(), (-1, 1) if kind == "row" else ())
        wd = _dequant(qw.to_numpy(), sw.to_numpy(), (-1, 1) if kind == "row" else ())
        y = gp.linear(qx, qw, gp.from_numpy(bias), act, scale_x=sx, scale_weight=sw,
                      out_dtype=out_dtype)
        _ran(backend, y, TILES[config])
        ref = ref_act(xd @ wd.T + bias.astype(np.float64))
        assert _rel(y.to_numpy(), ref) < TOL[out_dtype], kind
