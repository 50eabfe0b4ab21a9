"""The op-spec table: every elementwise op, reduction and row norm, described once.

Each spec names the op, its code in the kernels' C ABI (taken from ``pygpukit_kernels``' enums,
which a test checks against ``pygpukit_kernels.h``), the NumPy ufunc whose type resolution gives
its result dtype (NEP 50), the CPU simulation's implementation, and the ``GPUArray`` operators
it backs.  The public functions, the operators and the CPU backend's op tables are all made
from these specs; type resolution is cached per (op, operand dtypes).

This module depends on NumPy and the dtype list only (no arrays), so every layer may use it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pygpukit._dtypes import (
    FP8_DTYPES,
    SUPPORTED_DTYPES,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    fp8_unsupported,
    int64,
)
from pygpukit_kernels import BinaryOp, NormOp, ReduceOp, UnaryOp

HostFn = Callable[..., Any]


# -- the CPU simulation's implementations (NumPy, in the compute dtype, as the kernels) --------
def _int_power(x: Any, y: Any) -> Any:
    """Integer power; negative exponents give 0 (1 / -1 for bases 1 / -1), as the kernel."""
    positive = np.power(x, np.maximum(y, 0))
    negative = np.where(x == 1, 1, np.where(x == -1, np.where(y % 2 == 1, -1, 1), 0))
    return np.where(y < 0, negative, positive)


def _power(x: Any, y: Any) -> Any:
    if np.asarray(x).dtype.kind == "i":
        return _int_power(x, y)
    return np.power(x, y)


def _floor_divide(x: Any, y: Any) -> Any:
    if np.asarray(x).dtype.kind == "i":  # y == -1: wraps like the kernel (NumPy warns)
        return np.where(y == -1, -x, np.floor_divide(x, np.where(y == -1, 1, y)))
    return np.floor_divide(x, y)


def _gelu_tanh(x: Any) -> Any:
    k0, k1 = x.dtype.type(0.7978845608028654), x.dtype.type(0.044715)
    return x.dtype.type(0.5) * x * (1 + np.tanh(k0 * (x + k1 * x * x * x)))


def _gelu_erf(x: Any) -> Any:
    erf_v = np.vectorize(math.erf, otypes=[np.float64])
    r = 0.5 * x.astype(np.float64) * (1 + erf_v(x.astype(np.float64) * 0.7071067811865476))
    return r.astype(x.dtype)


def _relu(x: Any) -> Any:
    if x.dtype.kind == "f":
        return np.where(x > 0, x, np.where(np.isnan(x), x, 0))
    return np.maximum(x, 0)


def _reciprocal(x: Any) -> Any:
    return 1 / x if x.dtype.kind == "f" else np.where(np.abs(x) == 1, x, 0)


# -- the specs ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BinarySpec:
    """A binary elementwise op.

    ``operators``: the GPUArray operator names it backs (``"add"`` gives ``__add__``,
    ``__radd__`` and ``__iadd__``); empty for function-only ops.
    """

    name: str
    code: int
    ufunc: Any
    host: HostFn
    operators: tuple[str, ...] = ()
    reflected: bool = True
    inplace: bool = True


@dataclass(frozen=True)
class UnarySpec:
    """A unary elementwise op; ``ufunc`` resolves its dtypes (``sqrt`` for float-only ops)."""

    name: str
    code: int
    ufunc: Any
    host: HostFn
    operator: str | None = None


@dataclass(frozen=True)
class ReduceSpec:
    """A reduction over axes; ``host`` reduces the last axis of a NumPy array (with ddof)."""

    name: str
    code: int
    host: Callable[[Any, float], Any]


def _binary(name: str, ufunc: Any, host: HostFn | None = None, operators: tuple[str, ...] = (),
            reflected: bool = True, inplace: bool = True) -> BinarySpec:
    return BinarySpec(name, int(BinaryOp[name.upper()]), ufunc, host or ufunc, operators,
                      reflected, inplace)


BINARY: tuple[BinarySpec, ...] = (
    _binary("add", np.add, operators=("add",)),
    _binary("subtract", np.subtract, operators=("sub",)),
    _binary("multiply", np.multiply, operators=("mul",)),
    _binary("divide", np.true_divide, operators=("truediv",)),
    _binary("maximum", np.maximum),
    _binary("minimum", np.minimum),
    _binary("power", np.power, _power, operators=("pow",)),
    _binary("floor_divide", np.floor_divide, _floor_divide, operators=("floordiv",)),
    _binary("remainder", np.remainder, operators=("mod",)),
    _binary("equal", np.equal, operators=("eq",), reflected=False, inplace=False),
    _binary("not_equal", np.not_equal, operators=("ne",), reflected=False, inplace=False),
    _binary("less", np.less, operators=("lt",), reflected=False, inplace=False),
    _binary("less_equal", np.less_equal, operators=("le",), reflected=False, inplace=False),
    _binary("greater", np.greater, operators=("gt",), reflected=False, inplace=False),
    _binary("greater_equal", np.greater_equal, operators=("ge",), reflected=False,
            inplace=False),
    _binary("logical_and", np.logical_and),
    _binary("logical_or", np.logical_or),
    _binary("logical_xor", np.logical_xor),
    _binary("bitwise_and", np.bitwise_and, operators=("and",)),
    _binary("bitwise_or", np.bitwise_or, operators=("or",)),
    _binary("bitwise_xor", np.bitwise_xor, operators=("xor",)),
)


def _unary(name: str, ufunc: Any, host: HostFn | None = None,
           operator: str | None = None) -> UnarySpec:
    return UnarySpec(name, int(UnaryOp[name.upper()]), ufunc, host or ufunc, operator)


# Ops NumPy has no ufunc for resolve like ``sqrt`` (floating results; integers go to a float
# type) or, for relu, like ``negative`` (dtype kept, bool refused).
UNARY: tuple[UnarySpec, ...] = (
    _unary("negative", np.negative, operator="neg"),
    _unary("absolute", np.absolute, operator="abs"),
    _unary("exp", np.exp),
    _unary("log", np.log),
    _unary("log1p", np.log1p),
    _unary("expm1", np.expm1),
    _unary("sqrt", np.sqrt),
    _unary("rsqrt", np.sqrt, lambda x: 1 / np.sqrt(x)),
    _unary("sin", np.sin),
    _unary("cos", np.cos),
    _unary("tanh", np.tanh),
    _unary("sigmoid", np.sqrt, lambda x: 1 / (1 + np.exp(-x))),
    _unary("relu", np.negative, _relu),
    _unary("gelu_tanh", np.sqrt, _gelu_tanh),
    _unary("gelu_erf", np.sqrt, _gelu_erf),
    _unary("silu", np.sqrt, lambda x: x / (1 + np.exp(-x))),
    _unary("floor", np.floor),
    _unary("ceil", np.ceil),
    _unary("rint", np.rint),
    _unary("sign", np.sign),
    _unary("isnan", np.isnan),
    _unary("isinf", np.isinf),
    _unary("logical_not", np.logical_not),
    _unary("invert", np.invert, operator="invert"),
    _unary("square", np.square),
    _unary("reciprocal", np.reciprocal, _reciprocal),
)

REDUCE: tuple[ReduceSpec, ...] = tuple(
    ReduceSpec(name, int(ReduceOp[name.upper()]), host) for name, host in (
        ("sum", lambda d, _: d.sum(-1)),
        ("prod", lambda d, _: d.prod(-1)),
        ("max", lambda d, _: d.max(-1)),
        ("min", lambda d, _: d.min(-1)),
        ("argmax", lambda d, _: d.argmax(-1)),
        ("argmin", lambda d, _: d.argmin(-1)),
        ("mean", lambda d, _: d.mean(-1)),
        ("var", lambda d, ddof: d.var(-1, ddof=ddof)),
        ("std", lambda d, ddof: d.std(-1, ddof=ddof)),
        ("any", lambda d, _: (d != 0).any(-1)),
        ("all", lambda d, _: (d != 0).all(-1)),
    )
)

#: Row-wise normalizations: public name -> C ABI code.
ROW_NORMS: dict[str, int] = {"softmax": int(NormOp.SOFTMAX),
                             "log_softmax": int(NormOp.LOG_SOFTMAX),
                             "layer_norm": int(NormOp.LAYER), "rms_norm": int(NormOp.RMS)}

#: name -> (C ABI code, the ufunc whose type resolution is used).
BINARY_OPS: dict[str, tuple[int, Any]] = {s.name: (s.code, s.ufunc) for s in BINARY}
UNARY_OPS: dict[str, tuple[int, Any]] = {s.name: (s.code, s.ufunc) for s in UNARY}
REDUCE_OPS: dict[str, int] = {s.name: s.code for s in REDUCE}

_LOGICAL = {"logical_and", "logical_or", "logical_xor"}
_FLOATS = (float16, bfloat16, float32, float64)


# -- type resolution (NumPy's, cached) ------------------------------------------------------------
def compute_dtype(loop: np.dtype[Any]) -> np.dtype[Any]:
    """The type a loop of dtype ``loop`` computes in: float32, float64 or int64."""
    if loop in (float16, bfloat16, float32):
        return float32
    if loop == float64:
        return float64
    return int64


@functools.lru_cache(maxsize=4096)
def unary_code(name: str, loop: np.dtype[Any]) -> int:
    """The kernel op code of unary ``name`` on a ``loop``-dtype loop.

    NumPy's ``invert`` of bool is logical not; the integer kernel would compute ``~1`` (-2),
    which is true again.
    """
    if name == "invert" and loop == bool_:
        name = "logical_not"
    return UNARY_OPS[name][0]


#: ``resolve``'s answers, per (op, operand keys): ``ufunc.resolve_dtypes`` costs about a
#: microsecond, paid by every general-path op.  Failures are not kept (they raise each time).
_RESOLVED: dict[tuple[str, tuple[Any, ...]], tuple[np.dtype[Any], np.dtype[Any]]] = {}
_RESOLVED_MAX = 4096


def resolve(name: str, keys: tuple[Any, ...]) -> tuple[np.dtype[Any], np.dtype[Any]]:
    """(loop dtype, result dtype) of elementwise op ``name`` over operand keys.

    A key is a dtype, or a Python scalar type (weak, NEP 50); complex keys raise TypeError
    (the kernel plans never see them).
    """
    try:
        return _RESOLVED[name, keys]
    except KeyError:
        cache = len(_RESOLVED) < _RESOLVED_MAX
    except TypeError:  # an unhashable key: resolved (and refused) below, not kept
        cache = False
    found = _resolve(name, keys)
    if cache:
        _RESOLVED[name, keys] = found
    return found


def _resolve(name: str, keys: tuple[Any, ...]) -> tuple[np.dtype[Any], np.dtype[Any]]:
    ufunc = (BINARY_OPS.get(name) or UNARY_OPS[name])[1]
    for key in keys:  # no kernel takes complex: pygpukit._complex composes those ops
        if key is complex or (isinstance(key, np.dtype) and key.kind == "c"):
            raise TypeError(f"{name}: the kernels take no complex operand ({key})")
        if key in FP8_DTYPES:  # storage only (as in torch): no elementwise kernels
            raise TypeError(fp8_unsupported(name, key))
    try:
        dtypes = ufunc.resolve_dtypes((*keys, None))
    except TypeError as exc:
        names = ", ".join(k.name if isinstance(k, np.dtype) else f"Python {k.__name__}"
                          for k in keys)
        raise TypeError(f"{name}: not supported for the input types ({names})") from exc
    loop, result = np.dtype(dtypes[0]), np.dtype(dtypes[-1])
    if len(keys) == 2 and np.dtype(dtypes[1]) != loop:
        loop = np.result_type(loop, dtypes[1])
    if result not in SUPPORTED_DTYPES or loop not in SUPPORTED_DTYPES:
        raise TypeError(f"{name}: NumPy gives dtype {result.name}, which PyGPUkit does not hold")
    return loop, result


def binary_compute(name: str, keys: tuple[Any, ...], loop: np.dtype[Any]) -> np.dtype[Any]:
    """The compute dtype of binary op ``name`` over operand keys (dtypes or scalar types).

    Logical ops compare truthiness: in float64 when an operand is floating, else in int64.
    """
    if name in _LOGICAL:
        if any(k in _FLOATS for k in keys) or any(k is float for k in keys):
            return float64
        return int64
    return compute_dtype(loop)


@functools.lru_cache(maxsize=1024)
def reduce_dtypes(name: str, dtype: np.dtype[Any]) -> tuple[np.dtype[Any], np.dtype[Any]]:
    """(result dtype, compute dtype) of reduction ``name`` over ``dtype``.

    The result dtype is NumPy's, except that unsigned sums (NumPy's uint64) give int64:
    PyGPUkit has no uint64.
    """
    if dtype.kind == "c":  # no kernel takes complex: pygpukit._complex composes them
        raise TypeError(f"{name}: the kernels take no complex dtype ({dtype.name})")
    if dtype in FP8_DTYPES:
        raise TypeError(fp8_unsupported(name, dtype))
    sample = np.ones(2, dtype)
    with np.errstate(all="ignore"):
        try:
            result = np.asarray(getattr(np, name)(sample)).dtype
        except TypeError as exc:
            raise TypeError(f"{name}: not supported for dtype {dtype.name}") from exc
    if result == np.uint64:
        result = int64
    if result not in SUPPORTED_DTYPES:
        raise TypeError(f"{name}: NumPy gives dtype {result.name}, which PyGPUkit does not hold")
    compute: np.dtype[Any]
    if name in ("mean", "var", "std"):
        compute = float32 if dtype in (float16, bfloat16, float32) else float64
    elif dtype in _FLOATS:
        compute = float64 if dtype == float64 else float32
    else:
        compute = int64
    return result, compute


__all__ = [
    "BINARY", "BINARY_OPS", "REDUCE", "REDUCE_OPS", "ROW_NORMS", "UNARY", "UNARY_OPS",
    "BinarySpec", "ReduceSpec", "UnarySpec", "binary_compute", "compute_dtype",
    "reduce_dtypes", "resolve",
]
