"""complex64 / complex128: every operation composed from the real kernels.

No kernel takes a complex dtype (the kernels' C ABI has no complex codes).  A complex array of
shape ``S`` is bytewise a float array of shape ``S + (2,)`` (real part at ``[..., 0]``,
imaginary part at ``[..., 1]``), so its parts are strided float views of the same memory
(:attr:`GPUArray.real` / :attr:`GPUArray.imag`), which every real kernel takes as operands and
as ``out=``.  The ops layer hands complex operands here before anything reaches the op table's
kernel plans (``pygpukit._array.hooks.complex``: elementwise, ``where``, reductions, copies,
fills, casts, ``matmul``, advanced indexing); the C fast path declines them.  Both backends run
the same compositions, so the CPU tier checks what the GPU runs.

Launches per op (runtime calls, counted on the CPU simulation for 64x64 complex64 operands;
each is one kernel launch on the GPU), and how each op is composed (``a = ar + i ai``):

==============================  ==============================================  ========
operation                       composed as                                     launches
==============================  ==============================================  ========
``a + b``, ``a - b``, ``-a``    one real op on the ``(..., 2)`` float views            1
``a * r``, ``a / r`` (r real)   one real op, ``r`` broadcast along the pair axis       1
``a + r``, ``a + 1j``           the real part's op, the imaginary part's copy/op       2
``a * b``                       ``(ar br - ai bi, ar bi + ai br)`` into the parts      6
``a / b``                       scaled by ``max(|br|, |bi|)`` (no overflow)           17
``a ** n`` (int scalar n)       binary powering by ``*`` (``1 / .`` for n < 0)   8 (n=2)
``a ** b``                      ``exp(b log a)``                                     100
``==``, ``!=``                  both parts compared, combined                          3
``conj``                        copy of ``ar``, ``-ai``                                2
``abs`` / ``angle``             ``hypot(ar, ai)`` / ``atan2(ai, ar)``            17 / 53
``exp`` / ``log`` / ``sqrt``    ``e^ar cis(ai)`` / ``(log|a|, angle)`` / Kahan  23/73/43
``sin cos tan``                 ``-i sinh(i a)``, ``cosh(i a)``, ``-i tanh(i a)``  44-84
``sinh cosh tanh``              real ``sinh cosh`` of the parts; tanh: Kahan's     43-85
``expm1`` / ``log1p``           ``expm1(ar) cos ai - 2 sin(ai/2)**2`` / log1p     34 / 98
``asinh asin acos acosh``       ``log1p`` forms over ``sqrt`` (accurate near 0)  260-270
``atanh atan``                  ``(log1p(a) - log1p(-a)) / 2``                   220-230
``sum`` / ``mean``              the real reduction of the float view                   1
``prod``                        pairwise tree of complex products          ~6 per halving
``var`` / ``std``               ``var(ar) + var(ai)`` (real results, NumPy's)        3-4
``cumsum``                      the real scan of the float view                      1-3
``cumprod``                     parallel prefix of complex products      ~7 per doubling
``matmul``                      4 real GEMMs on contiguous planes, 2 combines         10
``astype``                      copies of the parts                                  1-2
==============================  ==============================================  ========

Computation is in the parts' dtype (float32 for complex64, float64 for complex128), as
NumPy's complex loops.  Results agree with NumPy to a few ulp of the part dtype for finite
values, branch cuts included (the sign of a zero part picks the side).  The Array API
standard's special cases (C99's Annex G) of ``exp expm1 sinh cosh tanh atanh acosh sign``
and those the formulas give by themselves hold (``where`` passes on masks of the parts:
several more launches); elsewhere infinities and NaNs follow the formulas (e.g.
``(inf + 0j) * 2`` gives ``inf + 0j`` here, ``inf + nanj`` in NumPy; a complex division by
zero gives NaNs).

Not defined for complex (``TypeError`` naming the op, as NumPy or the Array API): ordering
(``< <= > >=``, ``maximum``, ``minimum``, ``max``, ``min``, ``argmax``, ``argmin``, sorting;
``unique`` orders lexicographically, as NumPy),
``floor_divide``, ``remainder``, bitwise ops, ``floor``/``ceil``/``trunc``, activations.
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from pygpukit import _elementwise, _layout
from pygpukit._array import GPUArray, complex_pairs, from_pairs
from pygpukit._dtypes import (
    bool_,
    complex64,
    complex128,
    complex_unsupported,
    float32,
    float64,
    is_complex,
    normalize_dtype,
)
from pygpukit._linalg import matmul as _real_matmul
from pygpukit._math import _axes, _finish, binary, reduce, unary, where
from pygpukit._transfer import _overlaps, check_same_device, copy_into, empty_on, fill, upload

if TYPE_CHECKING:
    from pygpukit._backend import Runtime

#: A part of a complex operand: a real array, a Python float, or None for an exact zero
#: (the imaginary part of a real operand: terms with it are left out, not computed).
Part: TypeAlias = "GPUArray | float | None"
Pair: TypeAlias = "tuple[GPUArray | float | None, GPUArray | float | None]"

_ORDERED = {"less", "less_equal", "greater", "greater_equal", "maximum", "minimum", "max",
            "min", "argmax", "argmin"}


# -- dtypes and views ------------------------------------------------------------------------------
def part_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The float dtype of a complex dtype's parts (float32 for complex64)."""
    return float64 if dtype == complex128 else float32


def complex_of(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The complex dtype whose parts are ``dtype`` (float64: complex128, else complex64)."""
    return complex128 if dtype == float64 else complex64


def parts(x: GPUArray) -> tuple[GPUArray, GPUArray]:
    """The real and imaginary parts of complex ``x``: float views of its memory."""
    return x.real, x.imag


def _pairs_fit(*arrays: GPUArray) -> bool:
    """Whether the ``(..., 2)`` float views of these arrays stay within the kernels' dims."""
    return all(x.ndim < _layout.MAX_DIMS for x in arrays)


pairs = complex_pairs


# -- copies, fills, casts (the transfer layer's complex half) --------------------------------------
def _complex_warning(stacklevel: int = 4) -> None:
    warnings.warn("Casting complex values to real discards the imaginary part",
                  np.exceptions.ComplexWarning, stacklevel=stacklevel)


def copy(src: GPUArray, dst: GPUArray) -> None:
    """``dst[...] = src`` when either is complex: copies of the float parts.

    complex -> complex: one copy of the float views (any precision); real -> complex: the
    value into the real part, zeros into the imaginary part; complex -> real: the real part,
    with NumPy's ``ComplexWarning`` (complex -> bool: whether either part is non-zero).
    """
    if dst.dtype.kind == "c":
        if (src.dtype.kind == "c" and _overlaps(src, dst)
                and not (src._offset == dst._offset and src.strides == dst.strides)):
            staged = empty_on(src._rt, src.shape, src.dtype)
            copy(src, staged)
            src = staged
        dre, dim = parts(dst)
        if src.dtype.kind == "c":
            if _pairs_fit(src, dst):
                strides = _layout.broadcast_strides(src.shape, src.strides, dst.shape)
                view = GPUArray(src._rt, src._block, src._offset, dst.shape, strides, src.dtype)
                copy_into(pairs(view), pairs(dst))
            else:
                sre, sim = parts(src)
                copy_into(sre, dre)
                copy_into(sim, dim)
        else:
            copy_into(src, dre)
            fill(dim, 0)
        return
    if dst.dtype == bool_:
        copy_into(_truth(src), dst)
        return
    _complex_warning()
    copy_into(src.real, dst)


def fill_value(dst: GPUArray, value: Any) -> None:
    """Set every element of ``dst`` to ``value`` when ``dst`` or ``value`` is complex."""
    try:
        c = complex(value)
    except (TypeError, ValueError):
        raise TypeError(f"fill: expected a number; got {type(value).__name__}") from None
    if dst.dtype.kind == "c":
        re, im = parts(dst)
        fill(re, c.real)
        fill(im, c.imag)
        return
    if dst.dtype == bool_:
        fill(dst, c != 0)
        return
    _complex_warning()
    fill(dst, c.real)


def astype(x: GPUArray, dtype: np.dtype[Any]) -> GPUArray:
    """``x.astype(dtype)`` when ``x`` or ``dtype`` is complex: a new array (see :func:`copy`)."""
    out = empty_on(x._rt, x.shape, dtype)
    copy(x, out)
    return out


def _constant(like: GPUArray, value: complex, dtype: np.dtype[Any]) -> GPUArray:
    out = empty_on(like._rt, (), dtype)
    fill_value(out, value)
    return out


# -- arithmetic on parts (None is an exact zero; two scalars are combined in Python) -----------
def _put(value: Part | bool, out: GPUArray | None) -> Any:
    """``value`` itself, or stored into ``out`` (a scalar or None filled in) and ``out``."""
    if out is None:
        return value
    if value is None:
        fill(out, 0)
    elif isinstance(value, GPUArray):
        if value is not out:
            copy_into(value, out)
    else:
        fill(out, value)
    return out


def _scalar_op(name: str, x: float, y: float) -> float | bool:
    ops: dict[str, Callable[[float, float], Any]] = {
        "add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
        "equal": operator.eq, "not_equal": operator.ne, "logical_and": lambda p, q: p and q,
        "logical_or": lambda p, q: p or q, "logical_xor": lambda p, q: bool(p) != bool(q),
    }
    if name == "divide":
        with np.errstate(all="ignore"):
            return float(np.float64(x) / np.float64(y))
    return ops[name](x, y)  # type: ignore[no-any-return]


def _op(name: str, x: Part | bool, y: Part | bool, out: GPUArray | None = None) -> Any:
    """Real binary op ``name`` of two parts (None read as 0)."""
    xv: Any = 0.0 if x is None else x
    yv: Any = 0.0 if y is None else y
    if not isinstance(xv, GPUArray) and not isinstance(yv, GPUArray):
        return _put(_scalar_op(name, xv, yv), out)
    return binary(name, xv, yv, out)


def _add(x: Part, y: Part, out: GPUArray | None = None) -> Part:
    if x is None:
        return _put(y, out)  # type: ignore[no-any-return]
    if y is None:
        return _put(x, out)  # type: ignore[no-any-return]
    return _op("add", x, y, out)  # type: ignore[no-any-return]


def _neg(x: Part, out: GPUArray | None = None) -> Part:
    if x is None:
        return _put(None, out)  # type: ignore[no-any-return]
    if isinstance(x, GPUArray):
        return unary("negative", x, out)
    return _put(-x, out)  # type: ignore[no-any-return]


def _sub(x: Part, y: Part, out: GPUArray | None = None) -> Part:
    if y is None:
        return _put(x, out)  # type: ignore[no-any-return]
    if x is None:
        return _neg(y, out)
    return _op("subtract", x, y, out)  # type: ignore[no-any-return]


def _mul(x: Part, y: Part, out: GPUArray | None = None) -> Part:
    if x is None or y is None:
        return _put(None, out)  # type: ignore[no-any-return]
    return _op("multiply", x, y, out)  # type: ignore[no-any-return]


def _div(x: Part, y: Part, out: GPUArray | None = None) -> Part:
    if x is None and isinstance(y, float) and y != 0:
        return _put(None, out)  # type: ignore[no-any-return]
    return _op("divide", x, y, out)  # type: ignore[no-any-return]


def _fn(name: str, x: Part, out: GPUArray | None = None) -> Part:
    """Real unary kernel ``name`` of a part (scalars: NumPy in float64)."""
    if isinstance(x, GPUArray):
        return unary(name, x, out)
    with np.errstate(all="ignore"):
        value = float(getattr(np, name)(np.float64(0.0 if x is None else x)))
    return _put(value, out)  # type: ignore[no-any-return]


def _array_of(x: Part, like: GPUArray) -> GPUArray:
    """A part as an array of ``like``'s dtype (scalars as 0-d arrays)."""
    if isinstance(x, GPUArray):
        return x
    out = empty_on(like._rt, (), like.dtype)
    fill(out, 0.0 if x is None else x)
    return out


def _lin(terms: list[tuple[int, Part, Part]], out: GPUArray | None) -> Part:
    """``sum(sign * x * y)`` over the terms, zero terms left out."""
    live = [(s, x, y) for s, x, y in terms if x is not None and y is not None]
    if not live:
        return _put(None, out)  # type: ignore[no-any-return]
    if len(live) == 1:
        s, x, y = live[0]
        if s > 0:
            return _mul(x, y, out)
        if isinstance(y, float):
            return _mul(x, -y, out)
        if isinstance(x, float):
            return _mul(-x, y, out)
        return _neg(_mul(x, y), out)
    (s1, x1, y1), (s2, x2, y2) = live
    p1, p2 = _mul(x1, y1), _mul(x2, y2)
    if s1 > 0:
        return (_add if s2 > 0 else _sub)(p1, p2, out)
    return _sub(p2, p1, out) if s2 > 0 else _neg(_add(p1, p2), out)


def _cmul(a: Pair, b: Pair, out: tuple[GPUArray, GPUArray] | None = None) -> Pair:
    (ar, ai), (br, bi) = a, b
    o = out or (None, None)
    re = _lin([(1, ar, br), (-1, ai, bi)], o[0])
    im = _lin([(1, ar, bi), (1, ai, br)], o[1])
    return re, im


def _abs_part(x: Part) -> Part:
    if x is None or isinstance(x, float):
        return None if x is None else abs(x)
    return unary("absolute", x)


def _cdiv(a: Pair, b: Pair, out: tuple[GPUArray, GPUArray] | None = None) -> Pair:
    """``a / b`` scaled by ``s = max(|br|, |bi|)``: no overflow or underflow of ``|b|**2``."""
    (ar, ai), (br, bi) = a, b
    o = out or (None, None)
    if bi is None:
        return _div(ar, br, o[0]), _div(ai, br, o[1])
    if not isinstance(br, GPUArray) and not isinstance(bi, GPUArray):
        divisor = complex(0.0 if br is None else br, 0.0 if bi is None else bi)
        try:
            inv = 1.0 / divisor
        except ZeroDivisionError:
            inv = complex(math.nan, math.nan)
        return _cmul(a, (inv.real, inv.imag), out)
    s = _op("maximum", _abs_part(br), _abs_part(bi)) if br is not None else _abs_part(bi)
    brs = _div(br, s)
    bis = _div(bi, s)
    d = _mul(_add(_mul(brs, brs), _mul(bis, bis)), s)
    re = _div(_lin([(1, ar, brs), (1, ai, bis)], None), d, o[0])
    im = _div(_lin([(1, ai, brs), (-1, ar, bis)], None), d, o[1])
    return re, im


def _hypot(x: Part, y: Part) -> GPUArray:
    like = x if isinstance(x, GPUArray) else y
    assert isinstance(like, GPUArray)
    return _elementwise.hypot(_array_of(x, like), _array_of(y, like))


def _atan2(y: Part, x: Part) -> GPUArray:
    like = x if isinstance(x, GPUArray) else y
    assert isinstance(like, GPUArray)
    return _elementwise.atan2(_array_of(y, like), _array_of(x, like))


# -- special values (the standard's special cases: C99's Annex G) -------------------------------
def _isinf(v: GPUArray) -> GPUArray:
    return unary("isinf", v)


def _unbounded(v: GPUArray) -> GPUArray:
    """Infinite or NaN."""
    return unary("logical_not", _elementwise.isfinite(v))


def _all(*masks: GPUArray) -> GPUArray:
    result = masks[0]
    for mask in masks[1:]:
        result = binary("logical_and", result, mask)
    return result


def _signed(value: float, sign: GPUArray) -> GPUArray:
    """``value`` with the sign (bit) of each element of ``sign``."""
    return _elementwise.copysign(_array_of(value, sign), sign)


def _fix(pair: Pair, like: GPUArray,
         rules: list[tuple[GPUArray, Part | bool, Part | bool]]) -> Pair:
    """Apply special-value rules in order: where ``mask``, the parts given (False: kept)."""
    re, im = _array_of(pair[0], like), _array_of(pair[1], like)
    for mask, new_re, new_im in rules:
        if new_re is not False:
            re = where(mask, _array_of(new_re, like), re)
        if new_im is not False:
            im = where(mask, _array_of(new_im, like), im)
    return re, im


def _cexp(z: Pair) -> Pair:
    x, y = z
    e = _fn("exp", x)
    if y is None:
        return e, None
    re = _mul(e, _fn("cos", y))
    im = _mul(e, _fn("sin", y))
    if not isinstance(x, GPUArray) or not isinstance(y, GPUArray):
        return re, im
    # exp(x + 0j) is real; x = -inf or +inf with y infinite or NaN: 0 + 0j, inf + NaN j
    unbounded = _all(_isinf(x), _unbounded(y))
    return _fix((re, im), x, [
        (binary("equal", y, 0), False, y),
        (_all(unbounded, binary("less", x, 0)), 0.0, 0.0),
        (_all(unbounded, binary("greater", x, 0)), x, False),
    ])


def _clog(z: Pair) -> Pair:
    x, y = z
    return _fn("log", _hypot(x, y)), _atan2(y, x)


def _csqrt(z: Pair) -> Pair:
    """Principal square root: ``t = sqrt(|x|/2 + |z|/2)``, the other part ``|y| / 2t``."""
    x, y = z
    ax = _abs_part(x)
    t = _fn("sqrt", _add(_mul(ax, 0.5), _mul(_hypot(x, y), 0.5)))
    assert isinstance(t, GPUArray)
    other = _div(_abs_part(y), _mul(t, 2.0))
    zero = binary("equal", t, 0)
    other = where(zero, _array_of(0.0, t), _array_of(other, t))
    negative = binary("less", _array_of(x, t), 0)
    re = where(negative, other, t)
    im = where(negative, _elementwise.copysign(t, _array_of(y, t)),
               _elementwise.copysign(other, _array_of(y, t)))
    return re, im


def _sinh_cosh(x: Part) -> tuple[Part, Part]:
    if not isinstance(x, GPUArray):
        v = 0.0 if x is None else x
        return math.sinh(v), math.cosh(v)
    return _elementwise.sinh(x), _elementwise.cosh(x)


def _zero_wins(value: Part, *zeros: Part) -> Part:
    """``value`` where no ``zeros`` part is exactly 0, else that (signed) zero.

    A product ``f(x) g(y)`` with ``f(x) = 0`` because ``x = 0`` is 0 even where ``g(y)`` is
    infinite or NaN (the standard's special cases of sinh, cosh, exp ...).
    """
    if not isinstance(value, GPUArray):
        return value
    for zero in zeros:
        if isinstance(zero, GPUArray):
            value = where(binary("equal", zero, 0), _as_part(zero, value), value)
    return value


def _as_part(x: GPUArray, like: GPUArray) -> GPUArray:
    return x if x.dtype == like.dtype else x.astype(like.dtype)


def _csinh(z: Pair) -> Pair:
    x, y = z
    sh, ch = _sinh_cosh(x)
    pair = (_zero_wins(_mul(sh, _fn("cos", y)), x), _zero_wins(_mul(ch, _fn("sin", y)), y))
    if not isinstance(x, GPUArray) or not isinstance(y, GPUArray):
        return pair
    return _fix(pair, x, [(_all(_isinf(x), _unbounded(y)), x, False)])  # +-inf + NaN j


def _ccosh(z: Pair) -> Pair:
    x, y = z
    sh, ch = _sinh_cosh(x)
    im = _mul(sh, _fn("sin", y))
    if isinstance(im, GPUArray) and isinstance(x, GPUArray) and isinstance(y, GPUArray):
        # cosh(0 + iy) and cosh(x + 0j) are real: a zero imaginary part, signed as x * y
        one = _array_of(1.0, x)
        im = where(binary("equal", x, 0),
                   binary("multiply", _elementwise.copysign(one, y), x), im)
        im = where(binary("equal", y, 0),
                   binary("multiply", _elementwise.copysign(one, x), y), im)
        return _fix((_mul(ch, _fn("cos", y)), im), x, [  # +inf + NaN j
            (_all(_isinf(x), _unbounded(y)), math.inf, False)])
    return _mul(ch, _fn("cos", y)), im


def _csin(z: Pair) -> Pair:
    # sin(z) = -i sinh(iz), iz = -y + ix
    x, y = z
    re, im = _csinh((_neg(y), x))
    return im, _neg(re)


def _ccos(z: Pair) -> Pair:
    # cos(z) = cosh(iz)
    x, y = z
    return _ccosh((_neg(y), x))


def _ctanh(z: Pair) -> Pair:
    """Kahan's tanh: ``t = tan(y)``, ``s = sinh(x)``; ``tanh(x) -> +-1`` for large ``|x|``."""
    x, y = z
    xa = x if isinstance(x, GPUArray) else None
    ya = y if isinstance(y, GPUArray) else None
    like = xa if xa is not None else ya
    assert like is not None
    xa = _array_of(x, like)
    ya = _array_of(y, like)
    t = _elementwise.tan(ya)
    beta = binary("add", binary("multiply", t, t), 1.0)
    s = _elementwise.sinh(xa)
    rho = unary("sqrt", binary("add", binary("multiply", s, s), 1.0))
    denom = binary("add", binary("multiply", beta, binary("multiply", s, s)), 1.0)
    re = binary("divide", binary("multiply", binary("multiply", beta, rho), s), denom)
    im = binary("divide", t, denom)
    big = binary("greater", unary("absolute", xa), 22.0 if like.dtype == float64 else 11.0)
    big_re = _elementwise.copysign(_array_of(1.0, like), xa)
    big_im = binary("multiply", binary("multiply", binary(
        "multiply", unary("sin", ya), unary("cos", ya)), 4.0),
        unary("exp", binary("multiply", unary("absolute", xa), -2.0)))
    pair = (where(big, big_re, re), where(big, big_im, im))
    unbounded = _unbounded(ya)
    zero_x = binary("equal", xa, 0)
    return _fix(pair, like, [
        (binary("equal", ya, 0), False, ya),  # tanh(x + 0j) is real
        (_all(zero_x, unbounded), xa, math.nan),
        (_all(unary("logical_not", zero_x), _elementwise.isfinite(xa), unbounded), math.nan,
         math.nan),
        (_isinf(xa), _signed(1.0, xa), _signed(0.0, ya)),
    ])


def _ctan(z: Pair) -> Pair:
    # tan(z) = -i tanh(iz)
    x, y = z
    re, im = _ctanh((_neg(y), x))
    return im, _neg(re)


def _cexpm1(z: Pair) -> Pair:
    """``expm1(x) cos(y) - 2 sin(y/2)**2`` (accurate near 0), ``e^x sin(y)``."""
    x, y = z
    half = _fn("sin", _mul(y, 0.5))
    re = _sub(_mul(_fn("expm1", x), _fn("cos", y)), _mul(_mul(half, half), 2.0))
    im = _mul(_fn("exp", x), _fn("sin", y))
    if not isinstance(x, GPUArray) or not isinstance(y, GPUArray):
        return re, im
    unbounded = _all(_isinf(x), _unbounded(y))
    return _fix((re, im), x, [
        (binary("equal", y, 0), False, y),  # expm1(x + 0j) is real
        (_all(binary("equal", x, 0), binary("equal", y, 0)), 0.0, False),
        (_all(unbounded, binary("less", x, 0)), -1.0, 0.0),
        (_all(unbounded, binary("greater", x, 0)), x, False),
    ])


def _clog1p(z: Pair) -> Pair:
    """``log1p(x (2 + x) + y**2) / 2`` (accurate near 0), ``atan2(y, 1 + x)``."""
    x, y = z
    inner = _add(_mul(x, _add(x, 2.0)), _mul(y, y))
    re = _mul(_fn("log1p", inner), 0.5)
    shifted = _add(x, 1.0)
    if isinstance(re, GPUArray):  # huge |z|: log|1 + z| (the squares would overflow)
        big = binary("greater", _hypot(x, y), 1e150 if re.dtype == float64 else 1e15)
        re = where(big, unary("log", _hypot(shifted, y)), re)
    return re, _atan2(y, shifted)


def _times_i(z: Pair) -> Pair:
    """``i z``."""
    return _neg(z[1]), z[0]


def _div_i(z: Pair) -> Pair:
    """``-i z`` (``z / i``)."""
    return z[1], _neg(z[0])


def _casinh(z: Pair) -> Pair:
    """``asinh``, odd: for ``re >= 0`` ``log1p(w + w**2 / (1 + sqrt(w**2 + 1)))``.

    Accurate near 0; ``log(2 w)`` for large ``|w|`` (no overflow of ``w**2``).
    """
    x, y = z
    assert isinstance(x, GPUArray)
    yy = _array_of(y, x)
    flip = _elementwise.signbit(x)
    w: Pair = (unary("absolute", x), where(flip, unary("negative", yy), yy))
    w2 = _cmul(w, w)
    r = _csqrt(_pair_arrays((_add(w2[0], 1.0), w2[1]), x))
    small = _clog1p(_cadd(w, _cdiv(w2, (_add(r[0], 1.0), r[1]))))
    big_log = _clog(w)
    big = binary("greater", _hypot(w[0], w[1]), 1e8 if x.dtype == float64 else 1e4)
    re = where(big, _array_of(_add(big_log[0], math.log(2.0)), x), _array_of(small[0], x))
    im = where(big, _array_of(big_log[1], x), _array_of(small[1], x))
    im = where(flip, unary("negative", im), im)
    return where(flip, unary("negative", re), re), where(binary("equal", yy, 0), yy, im)


def _cadd(a: Pair, b: Pair) -> Pair:
    return _add(a[0], b[0]), _add(a[1], b[1])


def _casin(z: Pair) -> Pair:
    """``asin(z) = -i asinh(i z)``."""
    return _div_i(_casinh(_pair_arrays(_times_i(z), _like(z))))


def _cacos(z: Pair) -> Pair:
    """``acos(z) = pi/2 - asin(z)``."""
    re, im = _casin(z)
    return _sub(math.pi / 2, re), _neg(im)


def _catanh(z: Pair) -> Pair:
    """``atanh(z) = (log1p(z) - log1p(-z)) / 2`` (accurate near 0)."""
    like = _like(z)
    plus = _clog1p(_pair_arrays(z, like))
    minus = _clog1p(_pair_arrays((_neg(z[0]), _neg(z[1])), like))
    pair = (_mul(_sub(plus[0], minus[0]), 0.5), _mul(_sub(plus[1], minus[1]), 0.5))
    x, y = _pair_arrays(z, like)
    infinite = binary("logical_or", _isinf(x), _isinf(y))
    return _fix(pair, like, [  # an infinite part: +-0 + +-pi/2 j (NaN j for a NaN y)
        (infinite, _signed(0.0, x), where(unary("isnan", y), y, _signed(math.pi / 2, y))),
        (_all(binary("equal", x, 0), unary("isnan", y)), x, False),
    ])


def _catan(z: Pair) -> Pair:
    """``atan(z) = -i atanh(i z)`` (real for real ``z``: the imaginary zero keeps its sign)."""
    re, im = _div_i(_catanh(_pair_arrays(_times_i(z), _like(z))))
    y = _array_of(z[1], _like(z))
    return re, where(binary("equal", y, 0), y, _array_of(im, y))


def _cacosh(z: Pair) -> Pair:
    """``acosh(z) = log1p((z - 1) + sqrt(z - 1) sqrt(z + 1))`` (Kahan's principal branch)."""
    like = _like(z)
    below = _csqrt(_pair_arrays((_sub(z[0], 1.0), z[1]), like))
    above = _csqrt(_pair_arrays((_add(z[0], 1.0), z[1]), like))
    pair = _clog1p(_pair_arrays(_cadd((_sub(z[0], 1.0), z[1]), _cmul(below, above)), like))
    x, y = _pair_arrays(z, like)
    infinite = binary("logical_or", _isinf(x), _isinf(y))
    angle = _elementwise.copysign(_elementwise.atan2(unary("absolute", y), x), y)
    return _fix(pair, like, [  # an infinite part: +inf + the angle of (x, |y|) j
        (infinite, math.inf, angle),
        (_all(binary("equal", x, 0), unary("isnan", y)), False, math.pi / 2),
    ])


def _like(z: Pair) -> GPUArray:
    like = z[0] if isinstance(z[0], GPUArray) else z[1]
    assert isinstance(like, GPUArray)
    return like


def _cpow_int(z: Pair, n: int, like: GPUArray) -> Pair:
    """``z ** n`` by binary powering (NumPy's method for small integer exponents)."""
    result: Pair | None = None  # one
    base = z
    k = abs(n)
    while k:
        if k & 1:
            result = base if result is None else _cmul(result, base)
        k >>= 1
        if k:
            base = _cmul(base, base)
    if result is None:
        result = (_array_of(1.0, like), None)
    if n < 0:
        result = _cdiv((1.0, None), result)
    return result


# -- operands and results --------------------------------------------------------------------------
def _key(value: Any) -> Any:
    if isinstance(value, (GPUArray, np.generic)):
        return value.dtype
    if isinstance(value, bool):
        return bool_
    if isinstance(value, (int, float, complex)):
        return type(value)
    return None


def _check_operands(name: str, values: tuple[Any, ...]) -> list[GPUArray]:
    arrays = [v for v in values if isinstance(v, GPUArray)]
    if not arrays:
        names = " and ".join(type(v).__name__ for v in values)
        raise TypeError(f"{name}: at least one operand must be a GPUArray; got {names}")
    for value in values:
        if _key(value) is None:
            raise TypeError(f"{name}: operands must be GPUArrays or bool/int/float/complex "
                            f"scalars; got {type(value).__name__}")
    return arrays


def _resolve(name: str, ufunc: Any, values: tuple[Any, ...]) -> np.dtype[Any]:
    keys = tuple(_key(v) for v in values)
    try:
        result: np.dtype[Any] = np.dtype(ufunc.resolve_dtypes((*keys, None))[-1])
    except TypeError:
        kinds = ", ".join(k.name if isinstance(k, np.dtype) else f"Python {k.__name__}"
                          for k in keys)
        raise TypeError(f"{name}: not supported for the input types ({kinds})") from None
    if result.kind == "c" and result not in (complex64, complex128):
        raise TypeError(f"{name}: NumPy gives dtype {result.name}, which PyGPUkit does not hold")
    return result


def _operand(value: Any, result: np.dtype[Any]) -> Pair:
    """An operand's parts in ``result``'s part dtype (Python floats for scalars)."""
    part = part_dtype(result)
    if isinstance(value, GPUArray):
        if value.dtype.kind == "c":
            return parts(value if value.dtype == result else astype(value, result))
        return (value if value.dtype == part else value.astype(part)), None
    if isinstance(value, (complex, np.complexfloating)):
        c = complex(value)
        return c.real, c.imag
    return float(value), None


def _truth(x: GPUArray) -> GPUArray:
    """Bool: whether each element of complex ``x`` is non-zero."""
    re, im = parts(x)
    return binary("logical_or", binary("not_equal", re, 0), binary("not_equal", im, 0))


def _shape_of(arrays: list[GPUArray], out: GPUArray | None) -> tuple[int, ...]:
    shape = _layout.broadcast_shapes(*(x.shape for x in arrays))
    if isinstance(out, GPUArray) and out.shape != shape:
        shape = _layout.broadcast_shapes(shape, out.shape)
    return shape


def _target(name: str, out: GPUArray | None, shape: tuple[int, ...], result: np.dtype[Any],
            runtime: Runtime, inputs: list[GPUArray], mixes: bool
            ) -> tuple[GPUArray, GPUArray | None]:
    """The array the parts are written into (``out`` itself when it is safe), and ``out``.

    ``mixes``: each result part reads both input parts, so an ``out`` that overlaps an input
    (``a *= b``) gets a temporary.
    """
    target, final = _finish(name, out, shape, result, runtime, tuple(inputs))
    if final is None and mixes and any(_overlaps(target, x) for x in inputs):
        final, target = target, empty_on(runtime, shape, result)
    return target, final


def _deliver(target: GPUArray, final: GPUArray | None) -> GPUArray:
    if final is None:
        return target
    copy_into(target, final)
    return final


def _store(pair: Pair, target: GPUArray) -> GPUArray:
    tr, ti = parts(target)
    _put(pair[0], tr)
    _put(pair[1], ti)
    return target


# -- binary ops ------------------------------------------------------------------------------------
_BINARY_UFUNCS: dict[str, Any] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.true_divide,
    "power": np.power, "equal": np.equal, "not_equal": np.not_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}


def _power_exponent(b: Any) -> int | None:
    """A scalar exponent NumPy raises by repeated multiplication (an integer, |n| < 100)."""
    if isinstance(b, (GPUArray, bool)):
        return None
    value = complex(b)
    if value.imag != 0 or not math.isfinite(value.real) or value.real != int(value.real):
        return None
    n = int(value.real)
    return n if abs(n) < 100 else None


def binary_op(name: str, a: Any, b: Any, out: GPUArray | None) -> GPUArray:
    """Binary op ``name`` where an operand is complex (an array, or a complex scalar)."""
    if name in _ORDERED:
        raise TypeError(f"{name}: not supported for complex operands (complex numbers are "
                        "not ordered)")
    ufunc = _BINARY_UFUNCS.get(name)
    if ufunc is None:
        dtype = next((v.dtype for v in (a, b) if isinstance(v, GPUArray) and is_complex(v)),
                     complex128)
        raise TypeError(complex_unsupported(name, dtype))
    arrays = _check_operands(name, (a, b))
    result = _resolve(name, ufunc, (a, b))
    runtime = check_same_device(*arrays, op=name)
    shape = _shape_of(arrays, out)
    if result == bool_:
        return _logical(name, a, b, out, shape, runtime, arrays)
    if result.kind != "c":  # a complex scalar with a real array can give a real dtype
        raise TypeError(f"{name}: NumPy gives dtype {result.name} for complex operands")
    mixes = name in ("multiply", "divide", "power")
    target, final = _target(name, out, shape, result, runtime, arrays, mixes)
    tr, ti = parts(target)
    if (name in ("add", "subtract") and all(isinstance(v, GPUArray) and v.dtype == result
                                            for v in (a, b)) and _pairs_fit(a, b, target)):
        binary(name, pairs(a), pairs(b), pairs(target))  # one launch on the float views
        return _deliver(target, final)
    scaled = _scale_by_real(name, a, b, result, target)
    if scaled:
        return _deliver(target, final)
    pa, pb = _operand(a, result), _operand(b, result)
    if name == "add":
        _add(pa[0], pb[0], tr)
        _add(pa[1], pb[1], ti)
    elif name == "subtract":
        _sub(pa[0], pb[0], tr)
        _sub(pa[1], pb[1], ti)
    elif name == "multiply":
        _cmul(pa, pb, (tr, ti))
    elif name == "divide":
        _cdiv(pa, pb, (tr, ti))
    else:  # power
        n = _power_exponent(b)
        like = tr
        if n is not None and isinstance(a, GPUArray):
            _store(_cpow_int(pa, n, like), target)
        else:
            _store(_cexp(_cmul(pb, _clog(_pair_arrays(pa, like)))), target)
    return _deliver(target, final)


def _scale_by_real(name: str, a: Any, b: Any, result: np.dtype[Any], target: GPUArray) -> bool:
    """``a * r``, ``r * a``, ``a / r`` for a real ``r``: one op on the float view, if it fits.

    ``r`` (a real array, or a real scalar) is broadcast along the pair axis.
    """
    if name not in ("multiply", "divide"):
        return False
    operands = [(a, b)] if name == "divide" else [(a, b), (b, a)]
    for z, r in operands:
        if not (isinstance(z, GPUArray) and z.dtype == result and not is_complex(r)
                and _pairs_fit(z, target)):
            continue
        part = part_dtype(result)
        if isinstance(r, GPUArray):
            if r.dtype != part:
                r = r.astype(part)
            r = r.expand_dims(r.ndim)  # (..., 1): broadcast along the pair axis
        else:
            r = float(r)
        left, right = (pairs(z), r) if z is a or name == "multiply" else (r, pairs(z))
        binary(name, left, right, pairs(target))
        return True
    return False


def _pair_arrays(z: Pair, like: GPUArray) -> tuple[GPUArray, GPUArray]:
    """Both parts as arrays (a scalar base of ``a ** b`` with an array exponent)."""
    return _array_of(z[0], like), _array_of(z[1], like)


def _logical(name: str, a: Any, b: Any, out: GPUArray | None, shape: tuple[int, ...],
             runtime: Runtime, arrays: list[GPUArray]) -> GPUArray:
    """``==``, ``!=`` and the logical ops: bool results from comparisons of the parts."""
    target, final = _finish(name, out, shape, bool_, runtime, tuple(arrays))
    if name in ("equal", "not_equal"):
        common = _resolve(name, np.add, (a, b))  # the parts compare in its part dtype
        (ar, ai), (br, bi) = _operand(a, common), _operand(b, common)
        join = "logical_and" if name == "equal" else "logical_or"
        _op(join, _op(name, ar, br), _op(name, ai, bi), target)
    else:
        truths = [_truth(v) if isinstance(v, GPUArray) and v.dtype.kind == "c"
                  else (v if isinstance(v, GPUArray) else bool(v)) for v in (a, b)]
        _op(name, truths[0], truths[1], target)
    return _deliver(target, final)


# -- unary ops -------------------------------------------------------------------------------------
_COMPLEX_RESULT: dict[str, Callable[[Pair], Pair]] = {
    "exp": _cexp, "log": _clog, "sqrt": _csqrt, "sin": _csin, "cos": _ccos, "tan": _ctan,
    "sinh": _csinh, "cosh": _ccosh, "tanh": _ctanh, "expm1": _cexpm1, "log1p": _clog1p,
    "asinh": _casinh, "asin": _casin, "acos": _cacos, "atanh": _catanh, "atan": _catan,
    "acosh": _cacosh,
}


def unary_op(name: str, x: GPUArray, out: GPUArray | None) -> GPUArray:
    """Unary op ``name`` of complex ``x`` (``conjugate`` also takes real ``x``: a copy)."""
    if name == "conjugate" and x.dtype.kind != "c":
        return _finish_copy(x.copy(), out, name)
    runtime = x._rt
    if name in ("absolute", "angle"):
        re, im = parts(x)
        value = _hypot(re, im) if name == "absolute" else _atan2(im, re)
        return _finish_copy(value, out, name)
    if name in ("isnan", "isinf", "isfinite", "logical_not"):
        return _classify(name, x, out)
    if name in ("negative", "positive", "conjugate", "rint", "square", "reciprocal", "sign",
                "log2", "log10") or name in _COMPLEX_RESULT:
        target, final = _target(name, out, x.shape, x.dtype, runtime, [x], mixes=True)
        tr, ti = parts(target)
        zr, zi = parts(x)
        z: Pair = (zr, zi)
        if name == "negative" and _pairs_fit(x):
            unary("negative", pairs(x), pairs(target))
        elif name == "positive":
            copy(x, target)
        elif name == "negative":
            _neg(zr, tr)
            _neg(zi, ti)
        elif name == "conjugate":
            copy_into(zr, tr)
            _neg(zi, ti)
        elif name == "rint":
            unary("rint", zr, tr)
            unary("rint", zi, ti)
        elif name == "square":
            _cmul(z, z, (tr, ti))
        elif name == "reciprocal":
            _cdiv((1.0, None), z, (tr, ti))
        elif name == "sign":
            magnitude = _hypot(zr, zi)
            zero = binary("equal", magnitude, 0)
            safe = where(zero, _array_of(1.0, magnitude), magnitude)
            _store(_fix((_div(zr, safe), _div(zi, safe)), zr, [(zero, 0.0, 0.0)]), target)
        elif name in ("log2", "log10"):
            lre, lim = _clog(z)
            scale = math.log(2.0 if name == "log2" else 10.0)
            _div(lre, scale, tr)
            _div(lim, scale, ti)
        else:
            _store(_COMPLEX_RESULT[name](z), target)
        return _deliver(target, final)
    raise TypeError(complex_unsupported(name, x.dtype))


def _finish_copy(value: GPUArray, out: GPUArray | None, name: str) -> GPUArray:
    """A computed result, or copied into ``out`` (checked as the elementwise functions do)."""
    if out is None:
        return value
    target, final = _finish(name, out, value.shape, value.dtype, value._rt, (value,))
    copy_into(value, final if final is not None else target)
    return final if final is not None else target


def _classify(name: str, x: GPUArray, out: GPUArray | None) -> GPUArray:
    re, im = parts(x)
    if name == "logical_not":
        value = binary("logical_and", binary("equal", re, 0), binary("equal", im, 0))
    elif name == "isfinite":
        value = binary("logical_and", _elementwise.isfinite(re), _elementwise.isfinite(im))
    else:
        value = binary("logical_or", unary(name, re), unary(name, im))
    return _finish_copy(value, out, name)


# -- where, reductions -----------------------------------------------------------------------------
def where_op(cond: GPUArray, a: Any, b: Any, out: GPUArray | None) -> GPUArray:
    """``where(cond, a, b)`` with a complex operand (or a complex ``cond``: its truth)."""
    if cond.dtype.kind == "c":
        cond = _truth(cond)
        if not is_complex(a) and not is_complex(b):
            return where(cond, a, b, out=out)
    arrays = _check_operands("where", (a, b)) if any(
        isinstance(v, GPUArray) for v in (a, b)) else []
    for value in (a, b):
        if _key(value) is None:
            raise TypeError(f"where: operands must be GPUArrays or bool/int/float/complex "
                            f"scalars; got {type(value).__name__}")
    result = np.dtype(np.result_type(*(v.dtype if isinstance(v, GPUArray) else v
                                       for v in (a, b))))
    if result.kind != "c":
        return where(cond, a, b, out=out)
    runtime = check_same_device(cond, *arrays, op="where")
    shape = _shape_of([cond, *arrays], out)
    target, final = _target("where", out, shape, result, runtime, [cond, *arrays], mixes=False)
    tr, ti = parts(target)
    (ar, ai), (br, bi) = _operand(a, result), _operand(b, result)
    where(cond, 0.0 if ar is None else ar, 0.0 if br is None else br, out=tr)
    where(cond, 0.0 if ai is None else ai, 0.0 if bi is None else bi, out=ti)
    return _deliver(target, final)


def reduce_op(name: str, x: GPUArray, axis: Any, keepdims: bool, ddof: float,
              out: GPUArray | None) -> GPUArray:
    """Reduction ``name`` of complex ``x`` over ``axis``."""
    if name in _ORDERED:
        raise TypeError(f"{name}: not supported for complex dtype {x.dtype.name} (complex "
                        "numbers are not ordered)")
    axes = _axes(axis, x.ndim, name)
    value: GPUArray
    if name in ("sum", "mean"):
        if _pairs_fit(x):
            value = from_pairs(reduce(name, pairs(x), axes, keepdims))
        else:
            re, im = parts(x)
            value = empty_on(x._rt, _reduced_shape(x.shape, axes, keepdims), x.dtype)
            vr, vi = parts(value)
            reduce(name, re, axes, keepdims, out=vr)
            reduce(name, im, axes, keepdims, out=vi)
    elif name in ("var", "std"):
        re, im = parts(x)
        value = binary("add", reduce("var", re, axes, keepdims, ddof=ddof),
                       reduce("var", im, axes, keepdims, ddof=ddof))
        if name == "std":
            value = unary("sqrt", value)
    elif name in ("any", "all"):
        value = reduce(name, _truth(x), axes, keepdims)
    elif name == "prod":
        value = _prod(x, axes, keepdims)
    else:
        raise TypeError(complex_unsupported(name, x.dtype))
    return _finish_copy(value, out, name)


def _reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...],
                   keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if d in axes else n for d, n in enumerate(shape))
    return tuple(n for d, n in enumerate(shape) if d not in axes)


def _prod(x: GPUArray, axes: tuple[int, ...], keepdims: bool) -> GPUArray:
    """Product over ``axes``: a pairwise tree of complex products (deterministic)."""
    kept = tuple(d for d in range(x.ndim) if d not in axes)
    rows = math.prod(x.shape[d] for d in kept)
    n = math.prod(x.shape[d] for d in axes)
    final_shape = _reduced_shape(x.shape, axes, keepdims)
    if n == 0 or rows == 0:
        out = empty_on(x._rt, final_shape, x.dtype)
        fill_value(out, 1.0)
        return out
    z = x.transpose(kept + axes).reshape(rows, n)
    while n > 1:
        h, odd = n // 2, n % 2
        nxt = empty_on(x._rt, (rows, h + odd), x.dtype)
        left, right = z[:, :h], z[:, h:2 * h]
        nr, ni = parts(nxt[:, :h])
        _cmul(parts(left), parts(right), (nr, ni))
        if odd:
            copy(z[:, 2 * h:], nxt[:, h:])
        z, n = nxt, h + odd
    return z.reshape(final_shape)


def cumprod(x: GPUArray, axis: int) -> GPUArray:
    """Cumulative product of complex ``x`` along ``axis``: a parallel prefix of products.

    ``ceil(log2(n))`` rounds (Hillis-Steele), each one complex product of the array with itself
    shifted by ``d`` (6 launches) and a copy of the first ``d`` elements: element ``i`` is a
    product tree of ``x[..., :i + 1]`` (error growing as ``log n``, not ``n``; results differ
    from NumPy's sequential loop by rounding).
    """
    moved = x.swapaxes(axis, -1) if axis != x.ndim - 1 else x
    shape = moved.shape
    n = shape[-1] if shape else 1
    z = astype(moved, x.dtype).reshape(-1, n) if x.size else empty_on(x._rt, shape, x.dtype)
    if x.size:
        d = 1
        while d < n:
            nxt = empty_on(x._rt, z.shape, x.dtype)
            _cmul(parts(z[:, d:]), parts(z[:, :n - d]), parts(nxt[:, d:]))
            copy(z[:, :d], nxt[:, :d])
            z, d = nxt, 2 * d
    result = z.reshape(shape)
    return result.swapaxes(axis, -1) if axis != x.ndim - 1 else result


def unique(x: GPUArray, return_index: bool, return_inverse: bool,
           return_counts: bool) -> Any:
    """NumPy's ``unique`` (``axis=None``) of complex ``x``: sorted by real, then imaginary part.

    Two stable argsorts of the parts (the imaginary part first) order the elements
    lexicographically; runs of equal elements start where either part differs.  Elements with
    a NaN part sort last and count as one value (``equal_nan``, as the real path); ``-0`` equals
    ``+0``.  The number of unique values is read back (the result's shape needs it).
    """
    from pygpukit import _sorting

    flat = x.reshape(-1)
    n = flat.size
    runtime = x._rt
    re, im = parts(flat)
    nan = binary("logical_or", unary("isnan", re), unary("isnan", im))
    missing = _array_of(math.nan, re)
    by_im = _sorting.argsort(where(nan, missing, im), kind="stable")
    re_key = where(nan, missing, re)
    perm = by_im[_sorting.argsort(re_key[by_im], kind="stable")] if n else by_im
    ordered = flat[perm] if n else flat
    flags = empty_on(runtime, (n,), bool_)
    if n:
        fill(flags[:1], True)
    if n > 1:
        sr, si = parts(ordered)
        snan = nan[perm]
        differ = binary("logical_or", binary("not_equal", sr[1:], sr[:-1]),
                        binary("not_equal", si[1:], si[:-1]))
        both_nan = binary("logical_and", snan[1:], snan[:-1])
        binary("logical_and", differ, unary("logical_not", both_nan), flags[1:])
    starts = flags.nonzero()[0]
    results: list[GPUArray] = [ordered[starts] if n else ordered]
    if return_index:
        results.append(perm[starts] if n else starts)
    if return_inverse:
        inverse = empty_on(runtime, (n,), np.dtype(np.int64))
        if n:
            groups = binary("subtract", _sorting.cumsum(flags), 1)
            inverse[perm] = groups
        results.append(inverse.reshape(x.shape))
    if return_counts:
        k = starts.shape[0]
        bounds = empty_on(runtime, (k + 1,), np.dtype(np.int64))
        copy_into(starts, bounds[:k])
        fill(bounds[k:], n)
        results.append(binary("subtract", bounds[1:], bounds[:-1]))
    return results[0] if len(results) == 1 else tuple(results)


# -- products --------------------------------------------------------------------------------------
def matmul_op(a: GPUArray, b: GPUArray, out: GPUArray | None, precision: str) -> GPUArray:
    """``a @ b`` with a complex operand: real GEMMs on contiguous real / imaginary planes.

    Four products (two when one operand is real), combined as ``(rr - ii, ri + ir)``: the
    accuracy of the real GEMMs (no 3-multiplication trick, which loses accuracy).
    """
    result = np.dtype(np.multiply.resolve_dtypes((a.dtype, b.dtype, None))[-1])
    if result.kind != "c" or result not in (complex64, complex128):
        raise TypeError(f"matmul: no complex result dtype for {a.dtype.name} and "
                        f"{b.dtype.name}")
    check_same_device(a, b, op="matmul")
    part = part_dtype(result)

    def planes(v: GPUArray) -> Pair:
        if v.dtype.kind == "c":
            re, im = parts(v)
            return re.astype(part), im.astype(part)
        return (v if v.dtype == part else v.astype(part)), None

    (ar, ai), (br, bi) = planes(a), planes(b)

    def product(x: Part, y: Part) -> Part:
        if x is None or y is None:
            return None
        assert isinstance(x, GPUArray) and isinstance(y, GPUArray)
        return _real_matmul(x, y, precision=precision)

    rr, ii, ri, ir = product(ar, br), product(ai, bi), product(ar, bi), product(ai, br)
    first = next(p for p in (rr, ii, ri, ir) if isinstance(p, GPUArray))
    assert isinstance(first, GPUArray)
    shape = first.shape
    if out is not None:
        if not isinstance(out, GPUArray):
            raise TypeError(f"matmul: out must be a GPUArray; got {type(out).__name__}")
        if out.shape != shape or out.dtype != result:
            raise ValueError(f"matmul: out has shape {out.shape} and dtype {out.dtype.name}; "
                             f"the result has {shape} and {result.name}")
    target, final = _target("matmul", out, shape, result, a._rt, [a, b], mixes=True)
    tr, ti = parts(target)
    _sub(rr, ii, tr)
    _add(ri, ir, ti)
    return _deliver(target, final)


# -- advanced indexing: the same index on the float views (the pair axis a trailing slice) --------
def _pair_key(key: Any) -> tuple[Any, ...]:
    return (*(key if isinstance(key, tuple) else (key,)), slice(None))


def _complex_array(x: GPUArray, value: Any) -> GPUArray:
    """``value`` as a complex GPUArray of ``x``'s dtype on ``x``'s device."""
    if isinstance(value, GPUArray):
        check_same_device(x, value, op="setitem")
        return value if value.dtype == x.dtype else astype(value, x.dtype)
    if isinstance(value, (bool, int, float, complex, np.generic)) and np.ndim(value) == 0:
        return _constant(x, complex(value), x.dtype)
    return upload(x._rt, np.asarray(value).astype(x.dtype))


def _require_pairs(x: GPUArray) -> None:
    """Advanced indexing goes through the float view, which needs one dimension to spare."""
    if not _pairs_fit(x):
        raise NotImplementedError(f"indexing: complex arrays of {_layout.MAX_DIMS} dims take "
                                  "basic indices only")


def getitem(x: GPUArray, key: Any) -> GPUArray:
    """``x[key]`` with integer arrays or masks: the gather of the float view."""
    _require_pairs(x)
    return from_pairs(pairs(x)[_pair_key(key)])


def setitem(x: GPUArray, key: Any, value: Any) -> None:
    """``x[key] = value`` with integer arrays or masks: a scatter into the float view."""
    _require_pairs(x)
    pairs(x)[_pair_key(key)] = pairs(_complex_array(x, value))


def nonzero(x: GPUArray) -> tuple[GPUArray, ...]:
    """Indices of the non-zero elements (either part non-zero)."""
    return _truth(x).nonzero()


def imag_of_real(x: GPUArray) -> GPUArray:
    """The imaginary part of a real array: zeros of its dtype (a new array)."""
    out = empty_on(x._rt, x.shape, x.dtype)
    fill(out, 0)
    return out


class _Ops:
    """The complex operations the lower layers reach through ``_array.hooks.complex``."""

    binary = staticmethod(binary_op)
    unary = staticmethod(unary_op)
    where = staticmethod(where_op)

    @staticmethod
    def reduce(name: str, x: GPUArray, axis: Any, keepdims: bool, ddof: float,
               out: GPUArray | None) -> GPUArray:
        return reduce_op(name, x, axis, keepdims, ddof, out)

    copy = staticmethod(copy)
    fill = staticmethod(fill_value)
    astype = staticmethod(astype)
    matmul = staticmethod(matmul_op)
    getitem = staticmethod(getitem)
    setitem = staticmethod(setitem)
    nonzero = staticmethod(nonzero)
    imag = staticmethod(imag_of_real)
    cumprod = staticmethod(cumprod)
    unique = staticmethod(unique)


#: Installed as ``_array.hooks.complex`` by ``pygpukit._ops``.
OPS = _Ops()


# -- public functions ------------------------------------------------------------------------------
def _check(name: str, x: Any) -> GPUArray:
    if not isinstance(x, GPUArray):
        raise TypeError(f"{name}: x must be a GPUArray; got {type(x).__name__}")
    return x


def real(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Real part: a float view of a complex array's memory (as ``numpy.real``).

    For a real array, a copy of it.
    """
    x = _check("real", x)
    value = x.real if x.dtype.kind == "c" else x.copy()
    return value if out is None else _finish_copy(value, out, "real")


def imag(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Imaginary part: a float view of a complex array's memory; zeros for a real array."""
    x = _check("imag", x)
    value = x.imag
    return value if out is None else _finish_copy(value, out, "imag")


def conj(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Complex conjugate (a new array; a copy of a real array): 2 launches."""
    return unary_op("conjugate", _check("conj", x), out)


conjugate = conj


def angle(z: GPUArray, deg: bool = False) -> GPUArray:
    """The argument of each element, ``atan2(imag, real)``, in radians (degrees if ``deg``).

    A real array gives 0 or pi (by sign), in float64 for integers, as NumPy.
    """
    z = _check("angle", z)
    if z.dtype.kind == "c":
        value = unary_op("angle", z, None)
    else:
        work = z if z.dtype.kind == "f" or z.dtype.name == "bfloat16" else z.astype(float64)
        value = _elementwise.atan2(_array_of(0.0, work), work)
    return binary("multiply", value, 180.0 / math.pi) if deg else value


def iscomplexobj(x: Any) -> bool:
    """Whether ``x`` has a complex dtype (NumPy's ``iscomplexobj``)."""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return isinstance(x, complex)
    return normalize_dtype(dtype).kind == "c"


__all__ = ["angle", "conj", "conjugate", "imag", "iscomplexobj", "real"]
