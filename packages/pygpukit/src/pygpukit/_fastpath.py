"""The C fast path: ``pygpukit_driver.FastOp`` in front of the Python functions.

For arrays of a few thousand elements the host's cost is the op's cost.  The operators
(``a + b``, ``-a``, ``a < b``, ``a += b`` ...), the elementwise functions (``gp.exp(x)``,
``gp.add(a, b, out=c)``), ``gp.where(c, a, b)``, ``x.astype(t)``, whole-array reductions
(``x.sum()``, ``gp.mean(x)``) and ``gp.softmax(x)`` / ``gp.log_softmax(x)`` are ``FastOp``
objects: for C-contiguous operands on the current stream they look up a plan, take the
result's block from the allocator's C cache (or write into ``out=`` / the in-place operand),
make the GPUArray and launch the ``small_ops`` kernel without running Python code; past the
small kernels' size, elementwise ops, ``where`` and casts call the kernels library's C entry
(``pgk_binary`` ...) the same way.  In every other case (other keyword arguments, other
layouts, a graph capture, the CPU simulation, a partition charging the allocator...) they call
the Python function they wrap, which does the same in Python (:mod:`pygpukit._small`) or takes
the general path.

A plan is made here, by :func:`planner`, once per (op, runtime, operand dtypes or Python scalar
types): the same type resolution, kernels and codes as :mod:`pygpukit._small` (so results are
bit-identical to the Python path), or ``None`` when that key always takes the Python path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from enum import IntEnum
from typing import Any, TypeVar, cast

import ml_dtypes
import numpy as np

from pygpukit import _context, _small
from pygpukit._array import GPUArray
from pygpukit._dtypes import (
    FP8_DTYPES,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    int64,
    kernel_code,
    normalize_dtype,
)
from pygpukit._optable import (
    BINARY,
    BINARY_OPS,
    REDUCE_OPS,
    ROW_NORMS,
    binary_compute,
    compute_dtype,
    reduce_dtypes,
    resolve,
    unary_code,
)
from pygpukit._stream import Stream
from pygpukit_driver import FastOp, configure_fast_ops

F = TypeVar("F", bound=Callable[..., Any])


class Kind(IntEnum):
    """What a FastOp computes (the C side's ``Kind``)."""

    BINARY = 0      #: f(a, b)
    REFLECTED = 1   #: f(self, other) computes op(other, self)
    UNARY = 2       #: f(x)
    WHERE = 3       #: f(cond, a, b)
    ASTYPE = 4      #: f(x, dtype)
    REDUCE = 5      #: f(x): the whole array
    ROW_NORM = 6    #: f(x): over the last axis
    MATMUL = 7      #: f(a, b): 2-D operands
    LINEAR = 8      #: f(x, weight[, bias]): 2-D x
    JIT = 9         #: a JIT kernel's call (pygpukit._jit)
    INPLACE = 10    #: f(self, other): self = op(self, other), an in-place operator


# How a scalar operand reaches the kernel (the C side's ``Conv``).
_ARRAY, _FLOAT, _INT_RANGE, _PYTHON = 0, 1, 2, 3
_SCALAR_TYPE = {"ew_f32": "f", "ew_f64": "d", "ew_i64": "q"}
_COMPUTE: dict[str, np.dtype[Any]] = {"ew_f32": float32, "ew_f64": float64, "ew_i64": int64}
_INT_LOOPS = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
              for t in (np.int8, np.uint8, np.int16, np.int32, np.int64)}


def runtime_part(rt: Any, slot: str | None) -> dict[str, Any] | None:
    """What a plan needs of the runtime, with the launcher of ``slot`` (None: no launcher).

    ``slot=None``: a plan that launches no small kernel (products).  None where the runtime
    has no such launcher (the CPU simulation: every call takes the Python path).
    """
    launcher = rt.small_launchers.get(slot) if slot is not None else None
    if launcher is None and (slot is not None or not rt.small_launchers):
        return None
    allocator = rt.allocator
    return {"launcher": launcher, "allocator": allocator, "cache": allocator.core,
            "default_stream": rt.default_stream, "index": rt.index, "activate": rt.activate,
            "convert": None, "lo": 0, "hi": 0, "max_total": 0, "scalar_type": "f",
            "share_strides": 0}


def _conversion(loop: np.dtype[Any]) -> tuple[int, Any, int, int]:
    """(conv, converter, lo, hi) of a Python scalar operand of a loop of dtype ``loop``."""
    if loop in (float32, float64):
        return _FLOAT, None, 0, 0
    if loop in _INT_LOOPS:
        lo, hi = _INT_LOOPS[loop]
        return _INT_RANGE, None, lo, hi
    return _PYTHON, _small._scalar_converter(loop), 0, 0  # half types, bool: as NumPy rounds


def _large_part(rt: Any, plan: dict[str, Any], entry: str | None,
                compute: np.dtype[Any] | None) -> None:
    """Let ``plan`` take contiguous operands past the small kernels' size too.

    Those calls go to the C ABI's ``entry`` (``binary``, ``unary``, ``where`` or ``copy``) with
    the arguments the runtime's Python method passes for such operands (dims coalesce to one in
    the kernels library, so one dim of ``n`` elements picks the same kernel); ``entry=None`` or
    a runtime without the C ABI: the Python path takes them.
    """
    entries = rt.elementwise_entry_points() if entry is not None else None
    if entries is None or entry is None or not entries[0].get(entry):
        return
    plan.update(large=entries[0][entry], check=entries[1], context=rt.context_handle,
                compute_code=kernel_code(compute) if compute is not None else 0)


def _itemsizes(keys: tuple[Any, ...]) -> list[int]:
    """Element size of each array operand (0 for a Python scalar)."""
    return [k.itemsize if isinstance(k, np.dtype) else 0 for k in keys]


def _elementwise(rt: Any, slot: str, op: int, out: np.dtype[Any], keys: tuple[Any, ...],
                 loop: np.dtype[Any], entry: str) -> dict[str, Any] | None:
    plan = runtime_part(rt, slot)
    if plan is None:
        return None
    conv = [_ARRAY if isinstance(k, np.dtype) else -1 for k in keys]
    if -1 in conv:
        kind, plan["convert"], plan["lo"], plan["hi"] = _conversion(loop)
        conv = [kind if c == -1 else c for c in conv]
    first = next(k for k in keys if isinstance(k, np.dtype))
    plan.update(op=op, out_dtype=out, out_itemsize=out.itemsize, out_code=kernel_code(out),
                codes=[kernel_code(k) if isinstance(k, np.dtype) else 0 for k in keys],
                conv=conv, scalar_type=_SCALAR_TYPE[slot], max_n=_small.EW_MAX,
                share_strides=int(first.itemsize == out.itemsize), itemsizes=_itemsizes(keys))
    _large_part(rt, plan, entry, _COMPUTE[slot])
    return plan


def _key(k: Any) -> Any:
    return bool_ if k is bool else k


def planner(kind: int, name: str, rt: Any, k0: Any, k1: Any, k2: Any) -> dict[str, Any] | None:
    """The plan of one FastOp call's key, or ``None`` (the key takes the Python path).

    ``k0``..``k2``: the operands' dtypes or Python scalar types, in the op's order (ASTYPE:
    the array's dtype and the requested dtype as given).  Never raises for bad input: the
    Python path reports it.  Complex dtypes (and Python complex scalars) have no kernels:
    their keys always take the Python path, which composes them (``pygpukit._complex``).
    """
    if any(_is_complex_key(k) or _is_fp8_key(k) for k in (k0, k1, k2)):
        return None
    try:
        if kind in (Kind.BINARY, Kind.REFLECTED, Kind.INPLACE):
            keys = (_key(k0), _key(k1))
            loop, result = resolve(name, keys)
            slot = _small._slot(binary_compute(name, keys, loop))
            return _elementwise(rt, slot, BINARY_OPS[name][0], result, (k0, k1), loop,
                                "binary")
        if kind == Kind.UNARY:
            loop, result = resolve(name, (k0,))
            return _elementwise(rt, _small._slot(compute_dtype(loop)), unary_code(name, loop),
                                result, (k0,), loop, "unary")
        if kind == Kind.WHERE:
            keys = (k1, k2)
            result = np.result_type(*(k if isinstance(k, np.dtype) else k(0) for k in keys))
            if kernel_code_or_none(result) is None:
                return None
            return _elementwise(rt, _small._slot(compute_dtype(result)), 0, result,
                                (k0, k1, k2), result, "where")
        if kind == Kind.ASTYPE:
            target = normalize_dtype(k1)
            plan = runtime_part(rt, "cast")
            if plan is not None:
                plan.update(op=0, out_dtype=target, out_itemsize=target.itemsize,
                            out_code=kernel_code(target), codes=[kernel_code(k0)],
                            conv=[_ARRAY], max_n=_small.EW_MAX,
                            share_strides=int(target.itemsize == k0.itemsize),
                            itemsizes=_itemsizes((k0,)))
                # A same-dtype copy is a memcpy on the Python path: only casts go to pgk_copy.
                _large_part(rt, plan, "copy" if target != k0 else None, None)
            return plan
        if kind == Kind.REDUCE:
            result, compute = reduce_dtypes(name, k0)
            plan = runtime_part(rt, _small._REDUCE_SLOTS[compute])
            if plan is not None:
                plan.update(op=REDUCE_OPS[name], out_dtype=result, out_itemsize=result.itemsize,
                            out_code=kernel_code(result), codes=[kernel_code(k0)],
                            conv=[_ARRAY], max_n=_small.REDUCE_MAX)
            return plan
        if kind == Kind.ROW_NORM:
            if k0 not in (float16, bfloat16, float32, float64):
                return None
            plan = runtime_part(rt, "row_norm_f64" if k0 == float64 else "row_norm_f32")
            if plan is not None:
                plan.update(op=ROW_NORMS[name], out_dtype=k0, out_itemsize=k0.itemsize,
                            out_code=kernel_code(k0), codes=[kernel_code(k0)], conv=[_ARRAY],
                            max_n=_small.NORM_MAX_COLS, max_total=_small.NORM_MAX_ELEMENTS,
                            share_strides=1)
            return plan
    except (TypeError, ValueError, KeyError, OverflowError):
        return None  # no loop, an unknown dtype...: the Python path raises
    return None


def _is_fp8_key(key: Any) -> bool:
    """Whether a plan key is (or names) an FP8 dtype: those take the Python path."""
    if isinstance(key, np.dtype):
        return key in FP8_DTYPES
    if isinstance(key, str):
        try:
            return normalize_dtype(key) in FP8_DTYPES
        except TypeError:
            return False
    return key in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2)


def _is_complex_key(key: Any) -> bool:
    """Whether a plan key is a complex dtype or a complex scalar type."""
    if isinstance(key, np.dtype):
        return key.kind == "c"
    if isinstance(key, type):
        return issubclass(key, (complex, np.complexfloating))
    try:  # ASTYPE's requested dtype, as the caller spelled it
        return bool(np.dtype(key).kind == "c")
    except (TypeError, ValueError):
        return False


def kernel_code_or_none(dtype: np.dtype[Any]) -> int | None:
    """The C ABI code of ``dtype``, or None for a dtype the kernels do not take."""
    try:
        return kernel_code(dtype)
    except (TypeError, KeyError, ValueError):
        return None


Planner = Callable[[int, str, Any, Any, Any, Any], "dict[str, Any] | None"]


def fast(kind: Kind, name: str, plan: Planner = planner) -> Callable[[F], F]:
    """Decorator: the function, with the C fast path of ``kind`` for op ``name`` in front.

    ``plan`` makes the plans (default: :func:`planner`; products bring their own).
    """
    def wrap(fn: F) -> F:
        op = FastOp(int(kind), name, fn, plan)
        functools.update_wrapper(op, fn)
        return cast(F, op)  # calls like fn (same signature)

    return wrap


def install_operators() -> None:
    """Put FastOps in front of GPUArray's operators and small-array methods."""
    cls = GPUArray
    for spec in BINARY:
        if spec.name == "power":
            continue  # ``x ** 2`` is square(x) (GPUArray.__pow__): the C path would call pow
        for operator in spec.operators:
            dunder = f"__{operator}__"
            setattr(cls, dunder, fast(Kind.BINARY, spec.name)(cls.__dict__[dunder]))
            if spec.reflected:
                rdunder = f"__r{operator}__"
                setattr(cls, rdunder, fast(Kind.REFLECTED, spec.name)(cls.__dict__[rdunder]))
            idunder = f"__i{operator}__"
            if idunder in cls.__dict__:  # a += b: into a itself when the result fits it
                setattr(cls, idunder, fast(Kind.INPLACE, spec.name)(cls.__dict__[idunder]))
    for dunder, name in (("__neg__", "negative"), ("__abs__", "absolute"),
                         ("__invert__", "invert")):
        setattr(cls, dunder, fast(Kind.UNARY, name)(cls.__dict__[dunder]))
    for name in REDUCE_OPS:
        setattr(cls, name, fast(Kind.REDUCE, name)(cls.__dict__[name]))
    cls.astype = fast(Kind.ASTYPE, "astype")(cls.__dict__["astype"])  # type: ignore[method-assign]


configure_fast_ops(GPUArray, Stream, _context.state)
