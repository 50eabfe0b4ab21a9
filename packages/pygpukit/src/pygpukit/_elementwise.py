"""The Array API standard's elementwise functions that have no kernel of their own.

Each is composed from the op table's kernels (``binary`` / ``unary`` / ``where``), so it runs
on both backends with no new device code, in several passes instead of one:

==========================  =================================================================
function                    composed as
==========================  =================================================================
``atan``                    Cephes' range reduction and polynomial (rational for float64)
``atan2``                   ``atan(|y| / |x|)`` with the standard's zero/infinity quadrants
``asin`` / ``acos``         ``atan2(x, sqrt((1-x)(1+x)))`` / ``atan2(sqrt(...), x)``
``asinh`` / ``acosh``       ``log1p`` forms, ``log(|x|) + ln 2`` for large arguments
``atanh``                   ``log1p(2x / (1 - x)) / 2``
``sinh`` / ``cosh``         ``expm1`` / ``exp``, halved exponents for large arguments
``tan``                     ``sin / cos``
``log2`` / ``log10``        ``log(x) / ln 2`` / ``log(x) / ln 10``
``logaddexp``               ``max + log1p(exp(-|a - b|))``
``hypot``                   ``max * sqrt(1 + (min / max)**2)`` (no overflow)
``copysign`` / ``signbit``  the sign bit read through an integer view of the same memory
``nextafter``               integer arithmetic on that view
``trunc``                   ``where(x < 0, ceil(x), floor(x))``
``isfinite``                ``x - x == 0``
``bitwise_left_shift``      ``x1 * 2**x2`` (wrapping), ``bitwise_right_shift``: ``x1 // 2**x2``
==========================  =================================================================

Half types (float16, bfloat16) are computed in float32 and rounded once at the end, as the
kernels do; result dtypes are NumPy's (``ufunc.resolve_dtypes``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pygpukit import _array
from pygpukit._array import GPUArray
from pygpukit._dtypes import (
    SUPPORTED_DTYPES,
    bfloat16,
    bool_,
    complex_unsupported,
    float16,
    float32,
    float64,
)
from pygpukit._math import _scalar_key, binary, unary, where
from pygpukit._transfer import copy_into, empty_on, fill

_HALF = (float16, bfloat16)
_INT_OF_SIZE: dict[int, np.dtype[Any]] = {2: np.dtype(np.int16), 4: np.dtype(np.int32),
                                           8: np.dtype(np.int64)}


# -- helpers ---------------------------------------------------------------------------------------
def _check(name: str, x: Any) -> GPUArray:
    if not isinstance(x, GPUArray):
        raise TypeError(f"{name}: x must be a GPUArray; got {type(x).__name__}")
    return x


def _resolve(name: str, ufunc: Any, keys: tuple[Any, ...]) -> np.dtype[Any]:
    """NumPy's result dtype of ``ufunc`` over operand keys (dtypes or weak scalar types)."""
    try:
        result: np.dtype[Any] = np.dtype(ufunc.resolve_dtypes((*keys, None))[-1])
    except TypeError:
        names = ", ".join(k.name if isinstance(k, np.dtype) else f"Python {k.__name__}"
                          for k in keys)
        raise TypeError(f"{name}: not supported for the input types ({names})") from None
    if result.kind == "c":
        _no_complex(name, result)
    if result not in SUPPORTED_DTYPES:
        raise TypeError(f"{name}: NumPy gives dtype {result.name}, which PyGPUkit does not hold")
    return result


def _no_complex(name: str, dtype: np.dtype[Any]) -> None:
    """Raise for a complex operand of a function without a complex form (hypot, atan2 ...)."""
    raise TypeError(complex_unsupported(name, dtype))


def _complex_unary(name: str, x: Any, out: GPUArray | None) -> GPUArray | None:
    """The complex form of ``name`` (pygpukit._complex) for a complex ``x``, else None."""
    if isinstance(x, GPUArray) and x.dtype.kind == "c":
        return _array.hooks.complex.unary(name, x, out)
    return None


def _work(result: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype a composition computes in: float32 for half types, else the result's."""
    return float32 if result in _HALF else result


def _as(x: GPUArray, dtype: np.dtype[Any]) -> GPUArray:
    return x if x.dtype == dtype else x.astype(dtype)


def _const(like: GPUArray, value: Any, dtype: np.dtype[Any]) -> GPUArray:
    """A 0-d array holding ``value`` on ``like``'s device."""
    out = empty_on(like._rt, (), dtype)
    fill(out, value)
    return out


def _finish(value: GPUArray, result: np.dtype[Any], out: GPUArray | None) -> GPUArray:
    value = _as(value, result)
    if out is None:
        return value
    if not isinstance(out, GPUArray):
        raise TypeError(f"out must be a GPUArray; got {type(out).__name__}")
    if out.shape != value.shape:
        raise ValueError(f"out has shape {out.shape}; the result has shape {value.shape}")
    if not np.can_cast(result, out.dtype, "same_kind"):
        raise TypeError(f"cannot cast the result from {result.name} to out's dtype "
                        f"{out.dtype.name} with casting rule 'same_kind'")
    copy_into(value, out)
    return out


def _unary_float(name: str, ufunc: Any, x: Any) -> tuple[GPUArray, np.dtype[Any]]:
    """``x`` converted to the compute dtype of float function ``name``, and the result dtype."""
    x = _check(name, x)
    result = _resolve(name, ufunc, (x.dtype,))
    return _as(x, _work(result)), result


def _binary_operands(name: str, ufunc: Any, x1: Any, x2: Any
                     ) -> tuple[GPUArray, GPUArray, np.dtype[Any]]:
    """Both operands as arrays of the compute dtype (scalars as 0-d arrays), result dtype."""
    keys = (_scalar_key(x1), _scalar_key(x2))
    if not isinstance(x1, GPUArray) and not isinstance(x2, GPUArray):
        raise TypeError(f"{name}: at least one operand must be a GPUArray; got "
                        f"{type(x1).__name__} and {type(x2).__name__}")
    for key, value in zip(keys, (x1, x2), strict=True):
        if key is None:
            raise TypeError(f"{name}: operands must be GPUArrays or bool/int/float scalars; "
                            f"got {type(value).__name__}")
    result = _resolve(name, ufunc, keys)
    work = _work(result)
    like = x1 if isinstance(x1, GPUArray) else x2
    a = _as(x1, work) if isinstance(x1, GPUArray) else _const(like, x1, work)
    b = _as(x2, work) if isinstance(x2, GPUArray) else _const(like, x2, work)
    return a, b, result


def _bits(x: GPUArray) -> GPUArray:
    """The same memory seen as signed integers of the same width (a view, no copy)."""
    return GPUArray(x._rt, x._block, x._offset, x.shape, x.strides, _INT_OF_SIZE[x.itemsize])


def _from_bits(bits: GPUArray, dtype: np.dtype[Any]) -> GPUArray:
    return GPUArray(bits._rt, bits._block, bits._offset, bits.shape, bits.strides, dtype)


def _neg_if(cond: GPUArray, x: GPUArray) -> GPUArray:
    return where(cond, unary("negative", x), x)


def _sign_bit(x: GPUArray) -> GPUArray:
    """Bool: the sign bit of each float (set for -0.0 and negative NaNs too)."""
    if x.dtype.kind != "f" and x.dtype != bfloat16:
        return binary("less", x, 0)
    bits = _bits(x) if x.is_contiguous() or x.size == 0 else _bits(x.copy())
    return binary("less", bits, 0)


# -- trigonometric and hyperbolic ------------------------------------------------------------------
_ATAN_F32 = (8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1)
_ATAN_P = (-8.750608600031904122785e-1, -1.615753718733365076637e1,
           -7.500855792314704667340e1, -1.228866684490136173410e2,
           -6.485021904942025371773e1)
_ATAN_Q = (2.485846490142306297962e1, 1.650270098316988542046e2,
           4.328810604912902668951e2, 4.853903996359136964868e2,
           1.945506571482613964425e2)
_MOREBITS = 6.123233995736765886130e-17


def _polyval(z: GPUArray, coeffs: tuple[float, ...], leading_one: bool = False) -> GPUArray:
    """Horner's rule over ``coeffs`` (highest power first; with an implicit leading 1)."""
    if leading_one:
        acc, rest = binary("add", z, coeffs[0]), coeffs[1:]
    else:
        acc, rest = binary("add", binary("multiply", z, coeffs[0]), coeffs[1]), coeffs[2:]
    for c in rest:
        acc = binary("add", binary("multiply", acc, z), c)
    return acc


def _atan_work(x: GPUArray) -> GPUArray:
    """Atan of a float32 / float64 array (Cephes' atanf / atan reductions)."""
    a = unary("absolute", x)
    f64 = x.dtype == float64
    big = binary("greater", a, 2.414213562373095)
    mid = binary("greater", a, 0.66 if f64 else 0.4142135623730950)
    mid = binary("logical_and", mid, unary("logical_not", big))
    reduced = where(big, unary("negative", unary("reciprocal", a)),
                    where(mid, binary("divide", binary("subtract", a, 1.0),
                                      binary("add", a, 1.0)), a))
    offset = where(big, math.pi / 2, where(mid, math.pi / 4, 0.0))
    z = binary("multiply", reduced, reduced)
    if f64:
        p = _polyval(z, _ATAN_P)
        q = _polyval(z, _ATAN_Q, leading_one=True)
        poly = binary("multiply", z, binary("divide", p, q))
        tail = where(big, _MOREBITS, where(mid, 0.5 * _MOREBITS, 0.0))
        offset = binary("add", offset, tail)
    else:
        poly = binary("multiply", z, _polyval(z, _ATAN_F32))
    y = binary("add", binary("multiply", reduced, poly), reduced)
    y = binary("add", _as(offset, x.dtype), y)
    return _neg_if(_sign_bit(x), y)


def atan(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise inverse tangent (radians); composed (see the module's table)."""
    if (c := _complex_unary("atan", x, out)) is not None:
        return c
    w, result = _unary_float("atan", np.arctan, x)
    return _finish(_atan_work(w), result, out)


def _atan2_work(y: GPUArray, x: GPUArray) -> GPUArray:
    ay, ax = unary("absolute", y), unary("absolute", x)
    t = _atan_work(binary("divide", ay, ax))
    t = where(binary("equal", ay, 0), _const(t, 0.0, t.dtype), t)
    both_inf = binary("logical_and", unary("isinf", ay), unary("isinf", ax))
    t = where(both_inf, _const(t, math.pi / 4, t.dtype), t)
    t = where(_sign_bit(x), binary("subtract", math.pi, t), t)
    t = _neg_if(_sign_bit(y), t)
    nan = binary("logical_or", unary("isnan", x), unary("isnan", y))
    return where(nan, _const(t, math.nan, t.dtype), t)


def atan2(x1: Any, x2: Any, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise angle of the point ``(x2, x1)`` in radians, in ``[-pi, pi]``.

    The standard's special cases hold (signed zeros choose the half-plane, infinities give
    multiples of pi/4).  Composed from ``atan`` (see the module's table).
    """
    y, x, result = _binary_operands("atan2", np.arctan2, x1, x2)
    return _finish(_atan2_work(y, x), result, out)


def _one_minus_x2_sqrt(x: GPUArray) -> GPUArray:
    return unary("sqrt", binary("multiply", binary("subtract", 1.0, x), binary("add", x, 1.0)))


def asin(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise inverse sine (NaN outside [-1, 1]); ``atan2(x, sqrt(1 - x**2))``."""
    if (c := _complex_unary("asin", x, out)) is not None:
        return c
    w, result = _unary_float("asin", np.arcsin, x)
    return _finish(_atan2_work(w, _one_minus_x2_sqrt(w)), result, out)


def acos(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise inverse cosine (NaN outside [-1, 1]); ``atan2(sqrt(1 - x**2), x)``."""
    if (c := _complex_unary("acos", x, out)) is not None:
        return c
    w, result = _unary_float("acos", np.arccos, x)
    return _finish(_atan2_work(_one_minus_x2_sqrt(w), w), result, out)


def _large(x: GPUArray) -> float:
    """Above this magnitude the ``log(|x|) + ln 2`` forms are exact to the dtype."""
    return 1e8 if x.dtype == float64 else 1e4


def asinh(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise inverse hyperbolic sine."""
    if (c := _complex_unary("asinh", x, out)) is not None:
        return c
    w, result = _unary_float("asinh", np.arcsinh, x)
    a = unary("absolute", w)
    a2 = binary("multiply", a, a)
    small = unary("log1p", binary("add", a, binary("divide", a2, binary(
        "add", unary("sqrt", binary("add", a2, 1.0)), 1.0))))
    large = binary("add", unary("log", a), math.log(2.0))
    r = where(binary("greater", a, _large(w)), large, small)
    return _finish(_neg_if(_sign_bit(w), r), result, out)


def acosh(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise inverse hyperbolic cosine (NaN below 1)."""
    if (c := _complex_unary("acosh", x, out)) is not None:
        return c
    w, result = _unary_float("acosh", np.arccosh, x)
    t = binary("subtract", w, 1.0)
    small = unary("log1p", binary("add", t, unary("sqrt", binary(
        "multiply", t, binary("add", t, 2.0)))))
    large = binary("add", unary("log", w), math.log(2.0))
    r = where(binary("greater", w, _large(w)), large, small)
    r = where(binary("less", w, 1.0), _const(r, math.nan, r.dtype), r)  # (x-1)(x+1) < 0 only
    return _finish(r, result, out)


def atanh(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise inverse hyperbolic tangent (+-inf at +-1, NaN outside [-1, 1])."""
    if (c := _complex_unary("atanh", x, out)) is not None:
        return c
    w, result = _unary_float("atanh", np.arctanh, x)
    a = unary("absolute", w)  # odd: the ratio is >= 0, where log1p keeps its accuracy
    ratio = binary("divide", binary("multiply", a, 2.0), binary("subtract", 1.0, a))
    r = binary("multiply", unary("log1p", ratio), 0.5)
    return _finish(_neg_if(_sign_bit(w), r), result, out)


def _half_exp_squared(a: GPUArray) -> GPUArray:
    """``exp(a) / 2`` without overflowing before the result does."""
    e = unary("exp", binary("multiply", a, 0.5))
    return binary("multiply", binary("multiply", e, 0.5), e)


def sinh(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise hyperbolic sine (``expm1`` form: accurate near 0)."""
    if (c := _complex_unary("sinh", x, out)) is not None:
        return c
    w, result = _unary_float("sinh", np.sinh, x)
    a = unary("absolute", w)
    u = unary("expm1", a)
    small = binary("multiply", binary("add", u, binary("divide", u, binary("add", u, 1.0))),
                   0.5)
    r = where(binary("greater", a, 20.0), _half_exp_squared(a), small)
    return _finish(_neg_if(_sign_bit(w), r), result, out)


def cosh(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise hyperbolic cosine."""
    if (c := _complex_unary("cosh", x, out)) is not None:
        return c
    w, result = _unary_float("cosh", np.cosh, x)
    a = unary("absolute", w)
    e = unary("exp", a)
    small = binary("multiply", binary("add", e, unary("reciprocal", e)), 0.5)
    r = where(binary("greater", a, 20.0), _half_exp_squared(a), small)
    return _finish(r, result, out)


def tan(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise tangent, ``sin(x) / cos(x)``."""
    if (c := _complex_unary("tan", x, out)) is not None:
        return c
    w, result = _unary_float("tan", np.tan, x)
    return _finish(binary("divide", unary("sin", w), unary("cos", w)), result, out)


# -- exponents and logarithms ----------------------------------------------------------------------
def log2(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise base-2 logarithm, ``log(x) / ln 2``."""
    if (c := _complex_unary("log2", x, out)) is not None:
        return c
    w, result = _unary_float("log2", np.log2, x)
    return _finish(binary("divide", unary("log", w), math.log(2.0)), result, out)


def log10(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise base-10 logarithm, ``log(x) / ln 10``."""
    if (c := _complex_unary("log10", x, out)) is not None:
        return c
    w, result = _unary_float("log10", np.log10, x)
    return _finish(binary("divide", unary("log", w), math.log(10.0)), result, out)


def logaddexp(x1: Any, x2: Any, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise ``log(exp(x1) + exp(x2))`` without overflow."""
    a, b, result = _binary_operands("logaddexp", np.logaddexp, x1, x2)
    m = binary("maximum", a, b)
    d = unary("absolute", binary("subtract", a, b))
    r = binary("add", m, unary("log1p", unary("exp", unary("negative", d))))
    r = where(binary("equal", a, b), binary("add", m, math.log(2.0)), r)
    return _finish(r, result, out)


def hypot(x1: Any, x2: Any, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise ``sqrt(x1**2 + x2**2)`` without intermediate overflow or underflow."""
    a, b, result = _binary_operands("hypot", np.hypot, x1, x2)
    a, b = unary("absolute", a), unary("absolute", b)
    hi, lo = binary("maximum", a, b), binary("minimum", a, b)
    ratio = binary("divide", lo, hi)
    r = binary("multiply", hi, unary("sqrt", binary("add", binary("multiply", ratio, ratio),
                                                     1.0)))
    r = where(binary("equal", hi, 0), _const(r, 0.0, r.dtype), r)
    inf = binary("logical_or", unary("isinf", a), unary("isinf", b))
    return _finish(where(inf, _const(r, math.inf, r.dtype), r), result, out)


# -- sign, rounding, classification ----------------------------------------------------------------
def signbit(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise: whether the sign bit is set (true for -0.0 and negative NaNs)."""
    x = _check("signbit", x)
    if x.dtype.kind == "c":
        raise TypeError(complex_unsupported("signbit", x.dtype))
    if x.dtype == bool_:
        raise TypeError("signbit: not supported for the input types (bool)")
    return _finish(_sign_bit(x), bool_, out)


def copysign(x1: Any, x2: Any, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise magnitude of ``x1`` with the sign (bit) of ``x2``."""
    a, b, result = _binary_operands("copysign", np.copysign, x1, x2)
    magnitude = unary("absolute", a)
    return _finish(where(_sign_bit(b), unary("negative", magnitude), magnitude), result, out)


def nextafter(x1: Any, x2: Any, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise next representable value after ``x1`` towards ``x2`` (in x1's dtype)."""
    keys = (_scalar_key(x1), _scalar_key(x2))
    if not any(isinstance(x, GPUArray) for x in (x1, x2)):
        raise TypeError("nextafter: at least one operand must be a GPUArray")
    result = _resolve("nextafter", np.nextafter, tuple(k for k in keys))
    like = x1 if isinstance(x1, GPUArray) else x2
    a = _as(x1, result) if isinstance(x1, GPUArray) else _const(like, x1, result)
    b = _as(x2, result) if isinstance(x2, GPUArray) else _const(like, x2, result)
    shape = tuple(np.broadcast_shapes(a.shape, b.shape))
    if a.shape != shape or not a.is_contiguous():
        full = empty_on(a._rt, shape, result)
        copy_into(a, full)
        a = full
    ia = _bits(a)
    int_dtype = ia.dtype
    towards_inf = binary("equal", binary("less", a, b), binary("greater", a, 0))
    stepped = where(towards_inf, binary("add", ia, 1), binary("subtract", ia, 1))
    info = np.iinfo(int_dtype)
    tiny = where(binary("greater", b, 0), int_dtype.type(1), int_dtype.type(info.min + 1))
    bits = _as(where(binary("equal", a, 0), tiny, stepped), int_dtype)
    if not bits.is_contiguous():
        bits = bits.copy()
    r = _from_bits(bits, result)
    r = where(binary("equal", a, b), b, r)
    nan = binary("logical_or", unary("isnan", a), unary("isnan", b))
    return _finish(where(nan, _const(r, math.nan, result), r), result, out)


def trunc(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise rounding towards zero (integers: a copy of the same dtype)."""
    x = _check("trunc", x)
    if x.dtype.kind == "c":
        raise TypeError(complex_unsupported("trunc", x.dtype))
    if x.dtype.kind in "iub":
        if x.dtype == bool_:
            raise TypeError("trunc: not supported for the input types (bool)")
        return _finish(x.copy(), x.dtype, out)
    w = _as(x, _work(x.dtype))
    r = where(binary("less", w, 0), unary("ceil", w), unary("floor", w))
    return _finish(r, x.dtype, out)


def isfinite(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise: neither infinite nor NaN (always true for integers and bool)."""
    x = _check("isfinite", x)
    if (c := _complex_unary("isfinite", x, out)) is not None:
        return c
    if x.dtype.kind in "iub":
        r = empty_on(x._rt, x.shape, bool_)
        fill(r, True)
        return _finish(r, bool_, out)
    return _finish(binary("equal", binary("subtract", x, x), 0), bool_, out)


def positive(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise ``+x`` (a copy)."""
    x = _check("positive", x)
    if (c := _complex_unary("positive", x, out)) is not None:
        return c
    if x.dtype == bool_:
        raise TypeError("positive: not supported for the input types (bool)")
    return _finish(x.copy(), x.dtype, out)


# -- shifts ----------------------------------------------------------------------------------------
def _shift_operands(name: str, x1: Any, x2: Any) -> tuple[GPUArray, GPUArray, np.dtype[Any]]:
    keys = (_scalar_key(x1), _scalar_key(x2))
    if not any(isinstance(x, GPUArray) for x in (x1, x2)):
        raise TypeError(f"{name}: at least one operand must be a GPUArray")
    ufunc = np.left_shift if name == "bitwise_left_shift" else np.right_shift
    result = _resolve(name, ufunc, keys)
    if result.kind not in "iu":
        raise TypeError(f"{name}: integer operands required; got {result.name}")
    like = x1 if isinstance(x1, GPUArray) else x2
    a = _as(x1, result) if isinstance(x1, GPUArray) else _const(like, x1, result)
    b = _as(x2, result) if isinstance(x2, GPUArray) else _const(like, x2, result)
    return a, b, result


def bitwise_left_shift(x1: Any, x2: Any, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise ``x1 << x2`` (bits shifted past the width are lost; ``x2 >= 0``)."""
    a, b, result = _shift_operands("bitwise_left_shift", x1, x2)
    bits = 8 * result.itemsize
    count = binary("minimum", b, bits)  # 2**bits wraps to 0 in the dtype: the product is 0
    power = binary("power", _const(a, 2, np.dtype(np.int64)), count)
    product = binary("multiply", _as(a, np.dtype(np.int64)), power)
    return _finish(product, result, out)


def bitwise_right_shift(x1: Any, x2: Any, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise arithmetic ``x1 >> x2`` (``x2 >= 0``; large shifts give 0 or -1)."""
    a, b, result = _shift_operands("bitwise_right_shift", x1, x2)
    bits = 8 * result.itemsize
    limit = bits - 1 if result.kind == "i" else bits
    count = binary("minimum", _as(b, np.dtype(np.int64)), min(limit, 62))
    power = binary("power", _const(a, 2, np.dtype(np.int64)), count)
    shifted = binary("floor_divide", _as(a, np.dtype(np.int64)), power)
    if result.kind == "i":
        sign = where(binary("less", a, 0), -1, 0)
        shifted = where(binary("greater_equal", b, limit), sign, shifted)
    return _finish(shifted, result, out)


def pow(x1: Any, x2: Any, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise ``x1 ** x2`` (the standard's name for :func:`pygpukit.power`)."""
    return binary("power", x1, x2, out)


def bitwise_invert(x: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise ``~x`` (the standard's name for :func:`pygpukit.invert`)."""
    return unary("invert", x, out)


def _shift_operator(name: str, x1: Any, x2: Any, out: GPUArray | None) -> GPUArray:
    """``<<`` / ``>>`` (and their reflected and in-place forms) of GPUArray."""
    shift = bitwise_left_shift if name == "bitwise_left_shift" else bitwise_right_shift
    return shift(x1, x2, out=out)


_array.hooks.shift = _shift_operator

arccos, arcsin, arctan, arctan2 = acos, asin, atan, atan2
arccosh, arcsinh, arctanh = acosh, asinh, atanh
left_shift, right_shift = bitwise_left_shift, bitwise_right_shift

__all__ = [
    "acos", "acosh", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh",
    "asin", "asinh", "atan", "atan2", "atanh", "bitwise_invert", "bitwise_left_shift",
    "bitwise_right_shift", "copysign", "cosh", "hypot", "isfinite",
    "left_shift", "log2", "log10", "logaddexp", "nextafter", "positive", "pow",
    "right_shift", "signbit", "sinh", "tan", "trunc",
]
