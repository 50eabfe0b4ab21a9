"""Differential fuzzing: pygpukit against NumPy on both backends, with hypothesis.

Every example draws shapes (0, 1, odd sizes, now and then one past the small-array and
one-pass reduction limits), any supported dtype, operands that are views (slices with negative
and odd steps, offsets, transposes), broadcasting pairs, Python scalars, and values with NaN,
+-inf, +-0, the largest and the subnormal numbers of the dtype.  On the ``cpu`` backend this
checks the simulation, on ``cuda`` the kernels.

The reference is NumPy.  Integer, bool, index, cast, copy and selection results must be exact
(integers wrap as NumPy's do).  Floating results are compared with NumPy's computed in float64
and rounded to the result dtype: within ``RTOL`` of the result dtype (about two ulps of a half
type) times the larger of the value and an error bound of the op (the operands' magnitude where
float32/float64 compute can cancel, sums of magnitudes for reductions and products), plus the
subnormal spacing (exact IEEE ops) or the smallest normal (transcendentals).  NaN must be where
NumPy has NaN; an infinity must be where NumPy has one, except that an overflow may land on
either side of the largest finite value (treated as one ulp past it).  Where NumPy has no
definition (float to integer casts of NaN/inf/out-of-range values) elements are not compared;
where pygpukit documents its own (integer ``power`` with negative exponents, integer
``reciprocal`` of 0) its rule is the reference.

Budget: ``PYGPUKIT_FUZZ_EXAMPLES`` examples per test (profile in conftest.py); ci/gpu-check's
fuzz step runs 20 000+ on the GPU and a slice under compute-sanitizer memcheck.  A failure
found here that is a pygpukit bug becomes a ``test_regression_*`` below (``xfail(strict)``
until fixed).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import pygpukit as gp

try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    HAVE_HYPOTHESIS = True
except ImportError:  # the suite skips, marked `fuzz`: a failure in CI (conftest.py's rule)
    HAVE_HYPOTHESIS = False

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
BOOL, I64 = np.dtype(np.bool_), np.dtype(np.int64)
DTYPES: tuple[np.dtype[Any], ...] = tuple(gp.SUPPORTED_DTYPES)
FLOATS = (F16, BF16, F32, F64)
INTS = tuple(d for d in DTYPES if d.kind in "iu")

# Relative tolerance per result dtype: about two ulps of the half types (their ops compute in
# float32 and round once more), float32's transcendental error, float64 a few thousand ulps.
RTOL = {F16: 2e-3, BF16: 1.6e-2, F32: 2e-6, F64: 1e-12}
RTOL_TRANSCENDENTAL = {F16: 2e-3, BF16: 1.6e-2, F32: 1e-5, F64: 1e-12}

# Shapes past the small-array launchers (65536 elements), the one-pass reductions (16384) and
# the vector fast paths' even sizes.
BIG_SHAPES = [(16385,), (65537,), (70001,), (3, 20011), (257, 129), (20011, 3)]


def finfo(dtype: np.dtype[Any]) -> Any:
    return ml_dtypes.finfo(dtype) if dtype == BF16 else np.finfo(dtype)


def is_float(dtype: np.dtype[Any]) -> bool:
    return dtype in FLOATS


def compute_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """What pygpukit computes a floating dtype in (half types in float32)."""
    return F64 if dtype == F64 else F32


# -- comparison ---------------------------------------------------------------------------------
def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


def _fail(what: str, bad: np.ndarray, got: np.ndarray, expected: np.ndarray,
          extra: np.ndarray | None = None) -> None:
    where = np.argwhere(bad)[:5]
    rows = [f"  at {tuple(int(i) for i in w)}: got {got[tuple(w)]!r}, expected "
            f"{expected[tuple(w)]!r}" + ("" if extra is None else f", allowed {extra[tuple(w)]:g}")
            for w in where]
    raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} elements differ\n"
                         + "\n".join(rows))


def assert_exact(got: np.ndarray, expected: np.ndarray, *, signed_zero: bool = True,
                 mask: np.ndarray | None = None) -> None:
    """Equal element for element (bit for bit for floats, NaNs equal whatever their payload).

    ``mask`` leaves out elements NumPy does not define; ``signed_zero=False`` takes -0 == +0.
    """
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    care = np.ones(got.shape, bool) if mask is None else mask
    if is_float(got.dtype):
        g, e = got.astype(np.float64), expected.astype(np.float64)
        nan_g, nan_e = np.isnan(g), np.isnan(e)
        same = (_bits(got) == _bits(expected)) if signed_zero else (g == e)
        bad = care & ((nan_g != nan_e) | (~nan_e & ~same))
    else:
        bad = care & (got != expected)
    if bad.any():
        _fail("not exact", bad, got, expected)


def assert_close(got: np.ndarray, ref64: Any, result: np.dtype[Any], *, rtol: float,
                 scale: Any = 0.0, atol: float | None = None, exact_ieee: bool = True) -> None:
    """``got`` (dtype ``result``) against ``ref64``, the float64 reference before rounding.

    Allowed: ``rtol * max(|ref|, scale) + atol``; ``atol`` defaults to two subnormal spacings
    (``exact_ieee``: correctly rounded ops) or the smallest normal number (approximations, whose
    subnormal results may flush to zero).  All arithmetic is on halves, so float64's largest
    value plus an ulp stays finite.
    """
    ref64 = np.asarray(ref64, dtype=np.float64)
    assert got.dtype == result, (got.dtype, result)
    assert got.shape == ref64.shape, (got.shape, ref64.shape)
    fi = finfo(result)
    if atol is None:
        atol = 2 * float(fi.smallest_subnormal) if exact_ieee else float(fi.tiny)
    past_max = float(fi.max) / 2 * (1 + 2 * float(fi.eps))  # an overflow: one ulp past max
    with np.errstate(all="ignore"):
        g = got.astype(np.float64) / 2
        g = np.where(np.isinf(g), np.sign(g) * past_max, g)
        r = np.clip(ref64 / 2, -past_max, past_max)
        true_inf = np.isinf(ref64)  # an infinity NumPy gets from infinities, not by overflow
        allowed = rtol * np.maximum(np.abs(r), np.asarray(scale, np.float64) / 2) + atol / 2
        bad = np.isnan(g) != np.isnan(r)
        bad |= true_inf & (got.astype(np.float64) != ref64)
        finite = ~np.isnan(r) & ~true_inf
        bad |= finite & ~(np.abs(g - r) <= allowed)
    if bad.any():
        _fail(f"not within tolerance ({result.name}, rtol {rtol:g})", bad,
              got.astype(np.float64), ref64, 2 * np.broadcast_to(allowed, bad.shape))


def numpy_call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """NumPy's result, or the exception it raises (warnings silenced, as pygpukit raises none)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return np.asarray(fn(*args, **kwargs))
        except (TypeError, ValueError, OverflowError) as exc:
            return exc


def expect_same_error(exc: BaseException, call: Callable[[], Any]) -> None:
    """pygpukit raises where NumPy does (UFuncTypeError is a TypeError)."""
    kind = next(k for k in (TypeError, OverflowError, ValueError) if isinstance(exc, k))
    with pytest.raises(kind):
        call()


def wide(x: Any) -> Any:
    """An operand in float64 (arrays), a Python scalar as is."""
    return x.astype(np.float64) if isinstance(x, np.ndarray) else x


# -- views --------------------------------------------------------------------------------------
@dataclass
class View:
    """``base[index]`` transposed by ``perm``: the same view of a NumPy and a GPU array."""

    base: np.ndarray
    index: tuple[slice, ...]
    perm: tuple[int, ...]

    def numpy(self) -> np.ndarray:
        view = self.base[self.index] if self.index else self.base
        return view.transpose(self.perm) if self.perm else view

    def of(self, g: gp.GPUArray) -> gp.GPUArray:
        """This view of a GPU copy of ``base``."""
        view = g[self.index] if self.index else g
        return view.transpose(*self.perm) if self.perm else view

    def gpu(self) -> gp.GPUArray:
        return self.of(gp.from_numpy(self.base))

    def __repr__(self) -> str:
        base = (repr(self.base) if self.base.size <= 64
                else f"<{self.base.dtype} array of shape {self.base.shape}>")
        return f"View(base={base}, index={self.index}, perm={self.perm})"


def representable(bound: float, width: int) -> float:
    """``bound`` rounded towards zero to a float of ``width`` bits (hypothesis' bounds must be)."""
    kind = {16: np.float16, 32: np.float32, 64: np.float64}[width]
    with np.errstate(over="ignore"):
        b = kind(bound)
    if not np.isfinite(b) or float(b) > bound:
        b = np.nextafter(kind(min(bound, float(np.finfo(kind).max))), kind(0))
    return float(b)


if HAVE_HYPOTHESIS:
    FUZZ = settings.get_profile("pygpukit-fuzz")

    def extremes(dtype: np.dtype[Any], bound: float | None) -> list[Any]:
        """The values kernels get wrong first: limits, +-1, 0, the smallest normal and
        subnormal numbers, NaN and infinities (within ``bound``, which keeps NaN/inf)."""
        if dtype == BOOL:
            return [False, True]
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            found = {int(info.min), int(info.max), int(info.min) + 1, -1, 0, 1}
            return sorted(v for v in found if info.min <= v <= info.max
                          and (bound is None or abs(v) <= bound))
        fi = finfo(dtype)
        finite = [float(v) for v in (fi.max, fi.tiny, fi.smallest_subnormal, fi.eps, 1.0)]
        finite = [v for v in finite if bound is None or v <= bound] + [0.0]
        return [*finite, *(-v for v in finite), math.nan, math.inf, -math.inf]

    def elements(dtype: np.dtype[Any], bound: float | None = None,
                 specials: bool = True) -> st.SearchStrategy[Any]:
        """Any value of ``dtype``; floats within +-bound (NaN/inf too if ``specials``); one
        element in eight an extreme value."""
        if dtype == BOOL:
            return st.booleans()
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            lo, hi = int(info.min), int(info.max)
            if bound is not None:
                lo, hi = max(lo, -int(bound)), min(hi, int(bound))
            plain: st.SearchStrategy[Any] = st.integers(lo, hi)
            edge = extremes(dtype, bound)
        else:
            width = {F16: 16, F64: 64}.get(dtype, 32)  # bfloat16 values are float32s rounded
            edge = [v for v in extremes(dtype, bound) if specials or math.isfinite(v)]
            if bound is None:
                plain = st.floats(width=width, allow_nan=specials, allow_infinity=specials)
            else:
                b = representable(min(bound, float(finfo(dtype).max)), width)
                plain = st.floats(-b, b, width=width)
        return st.integers(0, 7).flatmap(lambda i: st.sampled_from(edge) if i == 7 else plain)

    @st.composite
    def values(draw: Any, dtype: np.dtype[Any], shape: tuple[int, ...],
               bound: float | None = None, specials: bool = True) -> np.ndarray:
        """An array of ``shape``: hypothesis' values, or for big arrays a seeded mix of normal
        values and a drawn palette (so NaN, inf, huge and tiny values reach them too)."""
        gen = F32 if dtype == BF16 else dtype  # bfloat16: float32 values, rounded below
        size = math.prod(shape)
        if size <= 512:
            out = np.array(draw(hnp.arrays(gen, shape, elements=elements(dtype, bound,
                                                                          specials))))
            # Up to 3 extreme values at drawn places: the engine's simple examples seldom
            # hold NaN or infinities otherwise.
            edge = [v for v in extremes(dtype, bound) if specials or not isinstance(v, float)
                    or math.isfinite(v)]
            for _ in range(draw(st.integers(0, min(3, size)))):
                out.flat[draw(st.integers(0, size - 1))] = draw(st.sampled_from(edge))
            return out.astype(dtype)
        palette = np.array(draw(st.lists(elements(dtype, bound, specials), min_size=1,
                                         max_size=8)), dtype=gen)
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        if dtype.kind in "biu":
            lo, hi = (0, 2) if dtype == BOOL else (max(-1000, int(np.iinfo(dtype).min)), 1000)
            out = rng.integers(lo, hi, shape).astype(dtype)
        else:
            limit = min(bound or 1e4, 1e4)
            out = np.clip(rng.standard_normal(shape) * 10.0, -limit, limit).astype(gen)
        picks = rng.random(shape) < 0.05
        out[picks] = rng.choice(palette, int(picks.sum()))
        return out.astype(dtype)

    @st.composite
    def shapes(draw: Any, min_dims: int = 0, max_dims: int = 3, max_side: int = 7,
               big: bool = True) -> tuple[int, ...]:
        """Small shapes with 0, 1 and odd sides; one draw in ten a big one."""
        if big and draw(st.integers(0, 9)) == 9:  # shrinks towards the small shapes
            shape = draw(st.sampled_from([s for s in BIG_SHAPES if len(s) >= min_dims]))
            return tuple(shape)
        return tuple(draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0,
                                           max_side=max_side)))

    @st.composite
    def views(draw: Any, shape: tuple[int, ...], dtype: np.dtype[Any],
              bound: float | None = None, specials: bool = True,
              strided: bool | None = None) -> View:
        """A ``View`` of ``shape``: contiguous, or sliced with steps +-1..3 and offsets from a
        bigger base, and perhaps transposed."""
        ndim = len(shape)
        if strided is None:
            strided = math.prod(shape) <= 4096 and draw(st.booleans())
        if not strided:
            return View(draw(values(dtype, shape, bound, specials)), (), ())
        perm = tuple(draw(st.permutations(range(ndim)))) if ndim > 1 else ()
        inverse = tuple(int(i) for i in np.argsort(perm)) if perm else ()
        stored = [shape[p] for p in perm] if perm else list(shape)
        base_shape, index = [], []
        for n in stored:
            step = draw(st.sampled_from([1, -1, 2, -2, 3, -3]))
            pad = draw(st.integers(0, 2))
            start = draw(st.integers(0, pad))
            span = (n - 1) * abs(step) + 1 if n else 0
            base_shape.append(span + pad)
            if n == 0:
                index.append(slice(start, start, step))
            elif step > 0:
                index.append(slice(start, start + span, step))
            else:
                index.append(slice(start + span - 1, start - 1 if start else None, step))
        base = draw(values(dtype, tuple(base_shape), bound, specials))
        view = View(base, tuple(index), inverse)
        assert view.numpy().shape == shape, (view, shape)
        return view

    def scalars() -> st.SearchStrategy[Any]:
        """A Python scalar (weak, NEP 50): bool, int (in and out of a dtype's range), float."""
        return st.one_of(st.booleans(), st.integers(-(2**63), 2**63 - 1),
                         st.integers(-300, 300), st.floats(allow_nan=True, allow_infinity=True))

    def dtypes() -> st.SearchStrategy[np.dtype[Any]]:
        return st.sampled_from(DTYPES)

def fuzz_test(ops: list[str] | None = None) -> Callable[[Callable[..., None]], Any]:
    """A fuzz test, marked ``fuzz``: the profile's budget, ``data`` to draw from, and one test
    per op in ``ops`` (its ``name`` argument), so that each op gets the whole budget."""

    def decorate(fn: Callable[..., None]) -> Any:
        test: Any
        if HAVE_HYPOTHESIS:
            test = FUZZ(given(data=st.data())(fn))
        else:
            def needs_hypothesis(name: str) -> None:
                pytest.skip("the fuzz suite needs hypothesis (pip install hypothesis)")

            def needs_hypothesis_noop() -> None:
                pytest.skip("the fuzz suite needs hypothesis (pip install hypothesis)")

            test = needs_hypothesis if ops else needs_hypothesis_noop
            test.__name__ = fn.__name__
        if ops:
            test = pytest.mark.parametrize("name", ops)(test)
        return pytest.mark.fuzz(test)

    return decorate


def draw_operand(data: Any, shape: tuple[int, ...], dtype: np.dtype[Any], **kw: Any) -> View:
    return data.draw(views(shape, dtype, **kw), label="operand")


# -- elementwise binary ops ---------------------------------------------------------------------
ARITHMETIC = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
              "floor_divide", "remainder"]
COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
               "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
               "bitwise_xor"]


def _int_power(a: np.ndarray, b: np.ndarray, result: np.dtype[Any]) -> np.ndarray:
    """pygpukit's documented integer power: NumPy's where b >= 0 (wrapping); for b < 0 (NumPy
    raises) 1 and -1 keep their exact answers and every other base gives 0."""
    a64, b64 = np.asarray(a).astype(np.int64), np.asarray(b).astype(np.int64)
    a64, b64 = np.broadcast_arrays(a64, b64)
    with np.errstate(all="ignore"):
        positive = np.power(a64, np.maximum(b64, 0))
    negative = np.where(a64 == 1, 1, np.where(a64 == -1, np.where(b64 % 2 == 1, -1, 1), 0))
    return np.where(b64 < 0, negative, positive).astype(result)


def check_binary(name: str, a: Any, b: Any, got_fn: Callable[[], gp.GPUArray]) -> None:
    """pygpukit's ``name(a, b)`` (from ``got_fn``) against NumPy's, for NumPy operands."""
    ufunc = getattr(np, "true_divide" if name == "divide" else name)
    native = numpy_call(ufunc, a, b)
    if isinstance(native, BaseException):
        int_power = name == "power" and isinstance(native, ValueError)
        if not int_power:  # NumPy's negative integer powers: pygpukit's own rule, below
            expect_same_error(native, got_fn)
            return
        native = _int_power(a, b, np.dtype(np.result_type(a, b)))
    result = native.dtype
    if result == np.uint64 or result not in DTYPES:
        with pytest.raises(TypeError):
            got_fn()
        return
    got = got_fn().to_numpy()
    if not is_float(result):
        if name == "power":
            native = _int_power(a, b, result)
        assert_exact(got, native)
        return
    if name in ("maximum", "minimum"):  # no rounding: NumPy's own result, NaN propagated
        assert_exact(got, native, signed_zero=False)
        return
    # Scalars are converted to the loop dtype first (NEP 50), as NumPy does.
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sa = np.asarray(a, result) if not isinstance(a, np.ndarray) else a
        sb = np.asarray(b, result) if not isinstance(b, np.ndarray) else b
    if name in ("floor_divide", "remainder"):
        # Discontinuous: the reference is NumPy's own algorithm in pygpukit's compute dtype
        # (fmod-based divmod, as the kernels), and a quotient may step by one.
        c = compute_dtype(result)
        ref = numpy_call(ufunc, np.asarray(sa).astype(c), np.asarray(sb).astype(c))
        scale = np.abs(np.asarray(sb, np.float64)) if name == "remainder" else 1.0
        assert_close(got, ref.astype(np.float64), result, rtol=RTOL[result],
                     scale=np.broadcast_to(scale, got.shape))
        return
    ref = numpy_call(ufunc, wide(np.asarray(sa)), wide(np.asarray(sb)))
    transcendental = name == "power"
    assert_close(got, ref, result,
                 rtol=(RTOL_TRANSCENDENTAL if transcendental else RTOL)[result],
                 exact_ieee=not transcendental)


@fuzz_test(ARITHMETIC + COMPARISONS)
def test_fuzz_binary_ops(backend: str, name: str, data: Any,
                         fuzz_count: Callable[[], None]) -> None:
    """Arithmetic, comparisons, logical and bitwise ops: any dtypes (mixed), broadcasting views,
    a Python scalar on either side, ``out=`` a strided view."""
    fuzz_count()
    sa, sb = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=6),
                       label="shapes").input_shapes
    if data.draw(st.integers(0, 9), label="big") == 9:
        sa = sb = data.draw(st.sampled_from(BIG_SHAPES), label="big shape")
    da = data.draw(dtypes(), label="dtype a")
    db = data.draw(st.one_of(st.just(da), dtypes()), label="dtype b")
    va = draw_operand(data, sa, da)
    scalar_side = data.draw(st.sampled_from(["none", "none", "a", "b"]), label="scalar")
    if scalar_side == "none":
        vb = draw_operand(data, sb, db)
        a, b = va.numpy(), vb.numpy()
        ga, gb = va.gpu(), vb.gpu()
    else:
        s = data.draw(scalars(), label="python scalar")
        if (name in COMPARISONS[:6] and type(s) is int and da.kind in "iu"
                and not np.iinfo(da).min <= s <= np.iinfo(da).max):
            # Known: pygpukit raises where NumPy compares (test_regression_comparison_...).
            s = data.draw(st.integers(int(np.iinfo(da).min), int(np.iinfo(da).max)),
                          label="python scalar in range")
        a, b = (s, va.numpy()) if scalar_side == "a" else (va.numpy(), s)
        ga, gb = (s, va.gpu()) if scalar_side == "a" else (va.gpu(), s)
    fn = getattr(gp, name)
    check_binary(name, a, b, lambda: fn(ga, gb))
    # The same op into a strided view of the result's dtype (pygpukit's out=, staging).
    native = numpy_call(getattr(np, "true_divide" if name == "divide" else name), a, b)
    if (isinstance(native, np.ndarray) and native.dtype in DTYPES and native.ndim
            and data.draw(st.booleans(), label="out=")):
        target = data.draw(views(native.shape, native.dtype, strided=True), label="out")
        gbase = gp.from_numpy(target.base)
        fn(ga, gb, out=target.of(gbase))
        outside = np.ones(target.base.shape, bool)
        outside[target.index] = False  # elements no view covers must keep their bits
        assert_exact(gbase.to_numpy(), target.base, mask=outside)
        check_binary(name, a, b, lambda: target.of(gbase))


# -- elementwise unary ops ----------------------------------------------------------------------
def _gelu_erf(x: np.ndarray) -> np.ndarray:
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return 0.5 * x * (1 + erf(x * 0.7071067811865476))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def _relu(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "f":
        return np.where(x > 0, x, np.where(np.isnan(x), x, 0))
    return np.maximum(x, 0)


# name -> (pygpukit call, float64 reference, the ufunc pygpukit resolves dtypes with, exact?)
UNARY: dict[str, tuple[Callable[[Any], gp.GPUArray], Callable[[Any], Any], Any, bool]] = {
    "negative": (gp.negative, np.negative, np.negative, True),
    "absolute": (gp.absolute, np.absolute, np.absolute, True),
    "floor": (gp.floor, np.floor, np.floor, True),
    "ceil": (gp.ceil, np.ceil, np.ceil, True),
    "rint": (gp.rint, np.rint, np.rint, True),
    "sign": (gp.sign, np.sign, np.sign, True),
    "isnan": (gp.isnan, np.isnan, np.isnan, True),
    "isinf": (gp.isinf, np.isinf, np.isinf, True),
    "logical_not": (gp.logical_not, np.logical_not, np.logical_not, True),
    "invert": (gp.invert, np.invert, np.invert, True),
    "relu": (gp.relu, _relu, np.negative, True),
    "square": (gp.square, np.square, np.square, False),
    "reciprocal": (gp.reciprocal, np.reciprocal, np.reciprocal, False),
    "sqrt": (gp.sqrt, np.sqrt, np.sqrt, False),
    "exp": (gp.exp, np.exp, np.exp, False),
    "log": (gp.log, np.log, np.log, False),
    "log1p": (gp.log1p, np.log1p, np.log1p, False),
    "expm1": (gp.expm1, np.expm1, np.expm1, False),
    "sin": (gp.sin, np.sin, np.sin, False),
    "cos": (gp.cos, np.cos, np.cos, False),
    "tanh": (gp.tanh, np.tanh, np.tanh, False),
    "rsqrt": (gp.rsqrt, lambda x: 1 / np.sqrt(x), np.sqrt, False),
    "sigmoid": (gp.sigmoid, lambda x: 1 / (1 + np.exp(-x)), np.sqrt, False),
    "silu": (gp.silu, lambda x: x / (1 + np.exp(-x)), np.sqrt, False),
    "gelu": (gp.gelu, _gelu_erf, np.sqrt, False),
    "gelu_tanh": (lambda x: gp.gelu(x, approximate="tanh"), _gelu_tanh, np.sqrt, False),
}
IEEE_UNARY = {"square", "reciprocal", "sqrt"}  # correctly rounded in float32/float64
# Ops whose float32 error is absolute in |x| (cancellation in 1 + erf/tanh for x << 0).
SCALED_BY_X = {"gelu", "gelu_tanh"}
# x * sigmoid(x) and the GELUs far below 0: the factor (e^x, 1 + e^-x = inf) leaves the dtype's
# range before the product, so results within 2^7 of the smallest normal number come out 0 (as
# torch's silu/gelu do on the GPU); found by the GPU run of test_fuzz_unary_ops (silu, int16
# -91 -> -2.7e-38 expected, -0.0 given).
UNDERFLOW_NEAR_TINY = {"sigmoid", "silu", "gelu", "gelu_tanh"}


@fuzz_test(sorted(UNARY))
def test_fuzz_unary_ops(backend: str, name: str, data: Any,
                        fuzz_count: Callable[[], None]) -> None:
    """Every unary op over every dtype, views, NaN/inf/huge/subnormal values."""
    fuzz_count()
    call, ref_fn, resolver, exact = UNARY[name]
    # Known: invert of bool (test_regression_invert_of_bool_is_logical_not).
    dtype = data.draw(st.sampled_from([d for d in DTYPES if name != "invert" or d != BOOL]),
                      label="dtype")
    view = draw_operand(data, data.draw(shapes(), label="shape"), dtype)
    x = view.numpy()
    try:
        dt = resolver.resolve_dtypes((x.dtype, None))
        result = np.dtype(dt[-1])
    except TypeError:
        with pytest.raises(TypeError):
            call(view.gpu())
        return
    if result not in DTYPES:
        with pytest.raises(TypeError):
            call(view.gpu())
        return
    got = call(view.gpu()).to_numpy()
    if not is_float(result):
        if name == "reciprocal":  # NumPy's integer 1/0 is undefined; pygpukit documents 0
            with np.errstate(all="ignore"):
                expected = np.where(x == 0, 0, np.reciprocal(np.where(x == 0, 1, x)))
            assert_exact(got, expected.astype(result))
        else:
            assert_exact(got, numpy_call(ref_fn, x).astype(result))
        return
    if exact:  # no rounding at all: NumPy's own result in the dtype
        assert_exact(got, numpy_call(ref_fn, x).astype(result), signed_zero=False)
        return
    x64 = x.astype(np.float64)
    ref = numpy_call(ref_fn, x64)
    table = RTOL if name in IEEE_UNARY else RTOL_TRANSCENDENTAL
    scale = np.abs(x64) if name in SCALED_BY_X else 0.0
    atol = 2.0 ** 7 * float(finfo(result).tiny) if name in UNDERFLOW_NEAR_TINY else None
    assert_close(got, ref, result, rtol=table[result], scale=scale, atol=atol,
                 exact_ieee=name in IEEE_UNARY)


# -- casts, copies, views -----------------------------------------------------------------------
def defined_cast(x: np.ndarray, target: np.dtype[Any]) -> np.ndarray:
    """Elements whose cast NumPy defines: float to integer only for finite values in range."""
    if not (is_float(x.dtype) and target.kind in "iu"):
        return np.ones(x.shape, bool)
    info = np.iinfo(target)
    with np.errstate(all="ignore"):
        t = np.trunc(x.astype(np.float64))
        return np.isfinite(t) & (t >= int(info.min)) & (t <= int(info.max))


@fuzz_test()
def test_fuzz_astype(backend: str, data: Any, fuzz_count: Callable[[], None]) -> None:
    """``astype`` between every pair of dtypes, from views: bit for bit NumPy's cast."""
    fuzz_count()
    src, dst = data.draw(dtypes(), label="from"), data.draw(dtypes(), label="to")
    view = draw_operand(data, data.draw(shapes(), label="shape"), src)
    x = view.numpy()
    got = view.gpu().astype(dst).to_numpy()
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = x.astype(dst)
    assert_exact(got, expected, mask=defined_cast(x, dst))


@fuzz_test()
def test_fuzz_views_round_trip(backend: str, data: Any, fuzz_count: Callable[[], None]) -> None:
    """``to_numpy``, ``copy``, ``ascontiguousarray`` of views, ``from_numpy`` of NumPy views."""
    fuzz_count()
    dtype = data.draw(dtypes(), label="dtype")
    view = draw_operand(data, data.draw(shapes(), label="shape"), dtype, strided=True)
    x = view.numpy()
    g = view.gpu()
    assert g.shape == x.shape and g.dtype == x.dtype
    assert_exact(g.to_numpy(), x)
    assert_exact(g.copy().to_numpy(), x)
    contiguous = gp.ascontiguousarray(g)
    assert contiguous.is_contiguous()
    assert_exact(contiguous.to_numpy(), x)
    assert_exact(gp.from_numpy(x).to_numpy(), x)  # a non-contiguous NumPy source


@fuzz_test()
def test_fuzz_setitem_into_views(backend: str, data: Any, fuzz_count: Callable[[], None]) -> None:
    """``view[...] = value``: a scalar, a broadcast array of another dtype (cast as NumPy), or an
    overlapping view of the same array; elements outside the view keep their bits."""
    fuzz_count()
    dtype = data.draw(dtypes(), label="dtype")
    shape = data.draw(shapes(min_dims=1), label="shape")
    dest = draw_operand(data, shape, dtype, strided=True)
    base = dest.base.copy()
    gbase = gp.from_numpy(base)
    gview = dest.of(gbase)
    kind = data.draw(st.sampled_from(["scalar", "array", "overlap"]), label="value")
    expected = base.copy()
    target = View(expected, dest.index, dest.perm).numpy()
    if kind == "overlap":  # the same view reversed along an axis: pygpukit must stage it
        axis = data.draw(st.integers(0, len(shape) - 1), label="axis")
        flip = tuple(slice(None, None, -1) if d == axis else slice(None) for d in range(len(shape)))
        target[...] = target[flip]
        gview[...] = gview[flip]
    elif kind == "scalar":
        value: Any
        if dtype.kind in "iu":  # in range (NumPy refuses a Python int outside, and a float
            info = np.iinfo(dtype)  # outside or NaN has no defined cast)
            lo, hi = int(info.min), int(info.max)
            value = data.draw(st.one_of(st.integers(lo, hi), st.booleans(),
                                        st.floats(float(lo), float(hi))), label="scalar")
        else:
            value = data.draw(st.one_of(st.floats(), st.integers(-(2**63), 2**63 - 1),
                                        st.booleans()), label="scalar")
        target[...] = value
        gview[...] = value
    else:
        src_dtype = data.draw(dtypes(), label="value dtype")
        # A shape that broadcasts to the view's: a suffix of it, some sides made 1.
        keep = data.draw(st.integers(0, len(shape)), label="value ndim")
        src_shape = tuple(1 if data.draw(st.booleans()) else d
                          for d in shape[len(shape) - keep:])
        src = draw_operand(data, src_shape, src_dtype).numpy()
        if is_float(src_dtype) and dtype.kind in "iu":  # undefined casts: not drawn
            src = np.where(defined_cast(src, dtype), src, 0).astype(src_dtype)
        with np.errstate(all="ignore"):
            target[...] = src
        gview[...] = gp.from_numpy(np.ascontiguousarray(src))
    assert_exact(gbase.to_numpy(), expected)


# -- where ------------------------------------------------------------------------------------
@fuzz_test()
def test_fuzz_where(backend: str, data: Any, fuzz_count: Callable[[], None]) -> None:
    """``where(cond, a, b)``: cond of any dtype (NaN is true), arrays or Python scalars,
    broadcasting views; NumPy's result dtype, the selected values exactly."""
    fuzz_count()
    shapes3 = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=5),
                        label="shapes").input_shapes
    cv = draw_operand(data, shapes3[0], data.draw(dtypes(), label="cond dtype"))
    # Each of a, b: an array of a drawn dtype, or a Python bool/int/float (weak, NEP 50).
    kinds = [data.draw(st.sampled_from([None, None, None, bool, int, float]), label=f"scalar {i}")
             or data.draw(dtypes(), label=f"dtype {i}") for i in (1, 2)]
    weak_scalar = {bool: True, int: 0, float: 0.0}  # a value of each Python scalar type
    try:
        result = np.result_type(*(weak_scalar.get(k, np.zeros((), k)) for k in kinds))
    except TypeError:  # no common dtype: NumPy's error is compared below
        result = I64
    operands: list[tuple[Any, Any]] = []
    for i, kind in zip((1, 2), kinds, strict=True):
        if kind is bool:
            s: Any = data.draw(st.booleans(), label=f"bool {i}")
        elif kind is int:  # within the result dtype (NumPy's where wraps others: regression
            info = np.iinfo(result) if result.kind in "iu" else np.iinfo(np.int64)  # test)
            s = data.draw(st.integers(int(info.min), int(info.max)), label=f"int {i}")
        elif kind is float:
            s = data.draw(st.floats(), label=f"float {i}")
        else:
            v = draw_operand(data, shapes3[i], kind)
            operands.append((v.numpy(), v.gpu()))
            continue
        operands.append((s, s))
    (a, ga), (b, gb) = operands
    native = numpy_call(np.where, cv.numpy(), a, b)
    if isinstance(native, BaseException):
        expect_same_error(native, lambda: gp.where(cv.gpu(), ga, gb))
        return
    if native.dtype not in DTYPES:
        with pytest.raises(TypeError):
            gp.where(cv.gpu(), ga, gb)
        return
    assert_exact(gp.where(cv.gpu(), ga, gb).to_numpy(), native)


# -- reductions ---------------------------------------------------------------------------------
def _reduced_count(shape: tuple[int, ...], axis: Any) -> int:
    axes = range(len(shape)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
    return math.prod(shape[a] for a in axes)


def _sum_bound(n: int, compute: np.dtype[Any]) -> float:
    """Relative (to sum |x|) error bound of a float sum of n terms in ``compute``: every order of
    recursive summation stays within (n - 1) u; capped assuming no thread adds more than 2048
    terms in a row (both backends combine partial sums in trees)."""
    eps = float(finfo(compute).eps)
    return eps * (min(n, 2048) + 2 * math.ceil(math.log2(n + 1)) + 2)


REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "argmax", "argmin", "any",
              "all"]


@fuzz_test(REDUCTIONS)
def test_fuzz_reductions(backend: str, name: str, data: Any,
                         fuzz_count: Callable[[], None]) -> None:
    """Reductions along an int, a tuple or every axis, keepdims, ddof, views, every dtype."""
    fuzz_count()
    dtype = data.draw(dtypes(), label="dtype")
    shape = data.draw(shapes(), label="shape")
    ndim = len(shape)
    axis: Any = None
    if ndim and data.draw(st.booleans(), label="along axes"):
        if name.startswith("arg") or data.draw(st.booleans()):
            axis = data.draw(st.integers(-ndim, ndim - 1), label="axis")
        else:
            axis = tuple(data.draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim,
                                            unique=True), label="axes"))
    keepdims = data.draw(st.booleans(), label="keepdims")
    kwargs: dict[str, Any] = {"axis": axis, "keepdims": keepdims}
    if name in ("var", "std"):
        kwargs["ddof"] = data.draw(st.integers(0, 1), label="ddof")
    if name in ("max", "min", "argmax", "argmin") and ndim and _reduced_count(shape, axis) == 0:
        # Over nothing NumPy raises; keep the other sides non-empty. Known: pygpukit returns an
        # empty result when they are empty (test_regression_max_over_nothing_...).
        reduced = {a % ndim for a in (range(ndim) if axis is None else
                                      axis if isinstance(axis, tuple) else (axis,))}
        shape = tuple(1 if d not in reduced and side == 0 else side
                      for d, side in enumerate(shape))
    n = max(1, _reduced_count(shape, axis))
    compute = compute_dtype(dtype) if is_float(dtype) else F64
    cmax = float(finfo(compute).max)
    # Finite values small enough that no partial result can overflow (which would make the
    # result depend on the order of summation); NaN/inf still come in.
    bound: float | None = None
    if is_float(dtype) and name in ("sum", "mean"):
        bound = cmax / (4 * n + 4)
    elif is_float(dtype) and name in ("var", "std"):
        bound = math.sqrt(cmax) / (4 * n + 4)
    elif is_float(dtype) and name == "prod":  # |product| within [2^-e, 2^e] of the normals
        e = max(0, (finfo(compute).maxexp - 2) // (n + 1))
        bound = 2.0**e
    # Known: empty strided views crash the CPU simulation's reductions
    # (test_regression_reduction_of_an_empty_strided_view): empty operands come contiguous.
    view = draw_operand(data, shape, dtype, bound=bound,
                        strided=None if math.prod(shape) else False)
    if is_float(dtype) and name == "prod":  # and no magnitude below 2^-e (no underflow)
        tiny = 2.0 ** -math.floor(math.log2(bound or 1.0))
        b64 = view.base.astype(np.float64)
        small = np.isfinite(b64) & (b64 != 0) & (np.abs(b64) < tiny)
        view = View(np.where(small, np.copysign(tiny, b64), b64).astype(dtype), view.index,
                    view.perm)
    x = view.numpy()
    native = numpy_call(getattr(np, name), x, **kwargs)
    gx = view.gpu()
    if isinstance(native, BaseException):
        expect_same_error(native, lambda: getattr(gp, name)(gx, **kwargs))
        return
    result = I64 if native.dtype == np.uint64 else native.dtype  # pygpukit has no uint64
    got = getattr(gp, name)(gx, **kwargs).to_numpy()
    if not is_float(result) or name in ("max", "min"):
        if native.dtype == np.uint64:
            native = native.astype(I64)  # wraps as pygpukit's int64 sum does
        assert_exact(got, native, signed_zero=name not in ("max", "min"))
        return
    x64 = x.astype(np.float64)
    ref = numpy_call(getattr(np, name), x64, **kwargs)
    finite = np.where(np.isfinite(x64), x64, 0.0)
    with np.errstate(all="ignore"):
        if name in ("sum", "mean"):
            scale = np.sum(np.abs(finite), axis=axis, keepdims=keepdims) * _sum_bound(n, compute)
            if name == "mean":
                scale = scale / n
        elif name == "prod":
            scale = np.abs(ref) * _sum_bound(n, compute)
        else:  # var, std: bounded by the mean of squares (one-pass and two-pass alike)
            ms = np.sum(finite * finite, axis=axis, keepdims=keepdims) / max(
                n - kwargs["ddof"], 1)
            scale = 4 * ms * _sum_bound(n, compute)
            if name == "std":
                scale = np.sqrt(scale)
    assert_close(got, ref, result, rtol=RTOL_TRANSCENDENTAL[result],
                 scale=scale / RTOL_TRANSCENDENTAL[result], exact_ieee=False)


# -- row norms ----------------------------------------------------------------------------------
def _norm_reference(name: str, x: np.ndarray, axis: int, w: np.ndarray | None,
                    b: np.ndarray | None, eps: float) -> np.ndarray:
    """The documented formulas in float64 (the CPU simulation's, in wider precision)."""
    v = x.astype(np.float64)
    with np.errstate(all="ignore"):
        if name in ("softmax", "log_softmax"):
            shifted = v - v.max(axis=axis, keepdims=True)
            total = np.exp(shifted).sum(axis=axis, keepdims=True)
            return np.exp(shifted) / total if name == "softmax" else shifted - np.log(total)
        n = v.shape[-1]
        if name == "layer_norm":
            centered = v - v.sum(axis=-1, keepdims=True) / n
            var = (centered * centered).sum(axis=-1, keepdims=True) / n
            out = centered * (1 / np.sqrt(var + eps))
        else:
            out = v * (1 / np.sqrt((v * v).sum(axis=-1, keepdims=True) / n + eps))
        if w is not None:
            out = out * w.astype(np.float64)
        if b is not None:
            out = out + b.astype(np.float64)
        return out


@fuzz_test(["softmax", "log_softmax", "layer_norm", "rms_norm"])
def test_fuzz_row_norms(backend: str, name: str, data: Any,
                        fuzz_count: Callable[[], None]) -> None:
    """softmax/log_softmax along any axis, layer_norm/rms_norm with weight and bias, views."""
    fuzz_count()
    dtype = data.draw(st.sampled_from(FLOATS), label="dtype")
    shape = data.draw(shapes(min_dims=1), label="shape")
    ndim = len(shape)
    axis = data.draw(st.integers(-ndim, ndim - 1), label="axis") if "softmax" in name else -1
    cols = shape[axis]
    compute = compute_dtype(dtype)
    ceps = float(finfo(compute).eps)
    # Norms square their inputs: keep squares and their sums finite in the compute dtype.
    bound = None if "softmax" in name else math.sqrt(float(finfo(compute).max)) / (4 * cols + 4)
    view = draw_operand(data, shape, dtype, bound=bound)
    x = view.numpy()
    gx = view.gpu()
    w = b = None
    gw = gb = None
    eps = 0.0
    if "norm" in name:
        eps = data.draw(st.sampled_from([1e-6, 1e-5, 1e-2]), label="eps")
        if data.draw(st.booleans(), label="weight"):
            w = data.draw(values(dtype, (cols,), 4.0, False), label="weight values")
            gw = gp.from_numpy(w)
        if name == "layer_norm" and data.draw(st.booleans(), label="bias"):
            b = data.draw(values(dtype, (cols,), 4.0, False), label="bias values")
            gb = gp.from_numpy(b)
    if name == "softmax":
        got = gp.softmax(gx, axis=axis)
    elif name == "log_softmax":
        got = gp.log_softmax(gx, axis=axis)
    elif name == "layer_norm":
        got = gp.layer_norm(gx, gw, gb, eps=eps)
    else:
        got = gp.rms_norm(gx, gw, eps=eps)
    host = got.to_numpy()
    if x.size == 0:
        assert host.shape == x.shape and host.dtype == x.dtype
        return
    ref = _norm_reference(name, x, axis, w, b, eps)
    x64 = x.astype(np.float64)
    err = ceps * (cols + 8) * 4  # relative error of a row's sum and the per-element ops
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows
        if name == "softmax":
            spread = np.abs(x64 - np.nanmax(np.where(np.isfinite(x64), x64, np.nan), axis=axis,
                                           keepdims=True))
            scale = np.abs(ref) * (err + ceps * np.nan_to_num(spread))
        elif name == "log_softmax":
            scale = err * (np.nan_to_num(np.abs(ref)) + math.log(cols + 1) + 1)
        else:
            finite = np.where(np.isfinite(x64), x64, 0.0)
            size = np.max(np.abs(finite), axis=-1, keepdims=True)
            if name == "layer_norm":
                var = np.var(finite, axis=-1, keepdims=True)
                size = (size + np.abs(np.mean(finite, axis=-1, keepdims=True))) / np.sqrt(
                    var + eps)
            else:
                size = size / np.sqrt(np.mean(finite * finite, axis=-1, keepdims=True) + eps)
            wmag = 1.0 if w is None else np.abs(w.astype(np.float64))
            bmag = 0.0 if b is None else np.abs(b.astype(np.float64))
            scale = err * (size * wmag + bmag)
    rtol = RTOL_TRANSCENDENTAL[dtype]
    assert_close(host, ref, dtype, rtol=rtol, scale=np.nan_to_num(scale) / rtol,
                 exact_ieee=False)


# -- matmul -------------------------------------------------------------------------------------
@fuzz_test()
def test_fuzz_matmul(backend: str, data: Any, fuzz_count: Callable[[], None]) -> None:
    """``a @ b`` on small shapes: 1-D operands, broadcast batches, transposed and sliced views,
    mixed float dtypes (integer and bool operands exact, as NumPy's), NaN/inf now and then."""
    fuzz_count()
    m, k, n = (data.draw(st.sampled_from([0, 1, 2, 3, 5, 7, 8, 9, 16, 17, 33, 64, 65]),
                         label=d) for d in "mkn")
    batch = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3),
                      label="batch").input_shapes
    one_d = data.draw(st.sampled_from(["", "", "", "a", "b", "ab"]), label="1-D")
    sa = (k,) if "a" in one_d else (*batch[0], m, k)
    sb = (k,) if "b" in one_d else (*batch[1], k, n)
    da = data.draw(st.sampled_from(DTYPES), label="dtype a")
    db = data.draw(st.one_of(st.just(da), st.sampled_from(DTYPES)), label="dtype b")
    native = numpy_call(np.matmul, np.zeros(sa, da), np.zeros(sb, db))
    # pygpukit's documented result dtype: multiply's promotion (bfloat16 @ bfloat16 is bfloat16;
    # NumPy, which has no bfloat16 matmul loop, gives float32). The same as NumPy's otherwise.
    promoted = numpy_call(lambda: np.multiply.resolve_dtypes((da, db, None))[-1])
    result = (np.dtype(promoted.item()) if isinstance(native, np.ndarray)
              and isinstance(promoted, np.ndarray) else None)
    compute = compute_dtype(result) if result is not None and is_float(result) else F64
    # Every partial sum finite in the compute dtype: |a||b| summed over k stays below max.
    bound = math.sqrt(float(finfo(compute).max) / (4 * k + 4))
    specials = data.draw(st.integers(0, 3), label="specials") == 3
    va = draw_operand(data, sa, da, bound=bound, specials=specials)
    vb = draw_operand(data, sb, db, bound=bound, specials=specials)
    a, b = va.numpy(), vb.numpy()
    if isinstance(native, BaseException) or result is None:
        with pytest.raises((TypeError, ValueError)):
            gp.matmul(va.gpu(), vb.gpu())
        return
    if result not in FLOATS:  # integer / bool products (no GEMM): exact, wrapping as NumPy's
        assert_exact(gp.matmul(va.gpu(), vb.gpu()).to_numpy(), numpy_call(np.matmul, a, b))
        return
    got = gp.matmul(va.gpu(), vb.gpu()).to_numpy()
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = numpy_call(np.matmul, a64, b64)
    with np.errstate(all="ignore"):
        magnitude = np.matmul(np.nan_to_num(np.abs(a64), posinf=0.0),
                              np.nan_to_num(np.abs(b64), posinf=0.0))
    # fp32 accumulation of exact half products; float32's 3xTF32 products within ~2 ulps.
    gamma = float(finfo(compute).eps) * (k + 4) * 2
    rtol = RTOL[result]
    assert_close(got, ref, result, rtol=rtol, scale=gamma * magnitude / rtol,
                 atol=float(finfo(result).tiny) * (k + 1), exact_ieee=False)


# -- regression tests for failures the fuzzer found ---------------------------------------------
# Each is a pygpukit divergence from NumPy found above, xfail(strict=True) until it is fixed
# (then the strict xfail fails: drop the marker).


def test_regression_silu_far_below_zero(backend: str) -> None:
    # Found on the GPU: silu(-91) in float32 is -2.7e-38 but comes out -0.0 (e^91 overflows in
    # x / (1 + e^-x)); within 2^7 of float32's smallest normal such results may be 0, while
    # larger ones keep the relative accuracy.
    x = np.array([-91, -88, -80, -40, -10, 0, 10], np.int16)
    got = gp.silu(gp.from_numpy(x)).to_numpy()
    x64 = x.astype(np.float64)
    ref = x64 / (1 + np.exp(-x64))
    assert got.dtype == np.float32 and np.all(np.isfinite(got))
    near_tiny = np.abs(ref) < 2.0 ** 7 * float(np.finfo(np.float32).tiny)
    np.testing.assert_allclose(got[near_tiny], ref[near_tiny], rtol=0,
                               atol=2.0 ** 7 * float(np.finfo(np.float32).tiny))
    np.testing.assert_allclose(got[~near_tiny], ref[~near_tiny], rtol=1e-5)


@pytest.mark.xfail(strict=True, raises=OverflowError, reason=(
    "found by test_fuzz_where: gp.where raises OverflowError for a Python int outside the "
    "result dtype; NumPy's where casts it (C cast: where(True, -1, uint8) == 255)"))
def test_regression_where_wraps_an_out_of_range_python_int(backend: str) -> None:
    cond, b = np.array([True, False, True]), np.array([0, 7, 9], np.uint8)
    expected = np.where(cond, -1, b)
    assert expected.dtype == np.uint8 and expected.tolist() == [255, 7, 255]
    assert_exact(gp.where(gp.from_numpy(cond), -1, gp.from_numpy(b)).to_numpy(), expected)


def test_regression_comparison_with_an_out_of_range_python_int(backend: str) -> None:
    x = np.array([-128, 0, 127], np.int8)
    g = gp.from_numpy(x)
    for op, value in (("equal", 128), ("less", 128), ("greater", -129), ("not_equal", 1000)):
        assert_exact(getattr(gp, op)(g, value).to_numpy(), getattr(np, op)(x, value))
        assert_exact(getattr(gp, op)(value, g).to_numpy(), getattr(np, op)(value, x))


def test_regression_invert_of_bool_is_logical_not(backend: str) -> None:
    x = np.array([True, False, True])
    assert_exact(gp.invert(gp.from_numpy(x)).to_numpy(), np.invert(x))
    assert_exact((~gp.from_numpy(x)).to_numpy(), ~x)


def test_regression_max_over_nothing_raises_even_with_an_empty_result(backend: str) -> None:
    x = np.zeros((0, 0), np.float32)
    for name in ("max", "min", "argmax", "argmin"):
        with pytest.raises(ValueError, match=r"empty|zero-size"):
            getattr(np, name)(x, axis=0)
        with pytest.raises(ValueError, match=r"empty|zero-size"):
            getattr(gp, name)(gp.from_numpy(x), axis=0)


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "var", "any"])
def test_regression_reduction_of_an_empty_strided_view(backend: str, name: str) -> None:
    # Was: the CPU simulation made a NumPy view of the 0-byte block and NumPy refused the strides.
    base = np.zeros((7, 11, 0))
    x = base[6::-2, 0:9:2, 0:0].transpose(0, 2, 1)
    g = gp.from_numpy(base)[6::-2, 0:9:2, 0:0].transpose(0, 2, 1)
    assert g.shape == x.shape == (4, 0, 5)
    expected = numpy_call(getattr(np, name), x, axis=1)  # (4, 5): 0, 1, NaN, NaN, False
    assert_exact(getattr(gp, name)(g, axis=1).to_numpy(), expected)
