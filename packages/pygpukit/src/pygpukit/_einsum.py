"""``einsum`` on the GEMMs: opt_einsum chooses the order, each step is one batched matmul.

``opt_einsum`` (a dependency) parses the subscripts (ellipses, implicit output) and picks the
pairwise contraction order.  Each pairwise step is views (diagonals of repeated indices,
transposes, reshapes), sums of the indices only one operand carries, and one batched
:func:`~pygpukit.matmul` of ``(batch, M, K) @ (batch, K, N)`` (integer dtypes: a broadcast
multiply and one sum reduction).  Nothing loops over elements in Python.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from pygpukit._array import GPUArray
from pygpukit._linalg_extra import _bmm
from pygpukit._math import reduce
from pygpukit._transfer import check_same_device, copy_into

Operand = tuple[GPUArray, str]


def _diagonal_view(x: GPUArray, subs: str) -> Operand:
    """Collapse repeated indices of one operand (``ii`` -> ``i``) into a strided view."""
    if len(set(subs)) == len(subs):
        return x, subs
    letters: list[str] = []
    shape: list[int] = []
    strides: list[int] = []
    for letter, size, stride in zip(subs, x.shape, x.strides, strict=True):
        if letter in letters:
            at = letters.index(letter)
            if shape[at] != size:
                raise ValueError(f"einsum: index {letter!r} has sizes {shape[at]} and {size} "
                                 "in one operand")
            strides[at] += stride
        else:
            letters.append(letter)
            shape.append(size)
            strides.append(stride)
    view = GPUArray(x._rt, x._block, x._offset, tuple(shape), tuple(strides), x.dtype)
    return view, "".join(letters)


def _sum_out(x: GPUArray, subs: str, keep: set[str]) -> Operand:
    """Sum over the indices not in ``keep``."""
    drop = tuple(i for i, letter in enumerate(subs) if letter not in keep)
    if not drop:
        return x, subs
    return reduce("sum", x, drop), "".join(c for c in subs if c in keep)


def _expand(x: GPUArray, subs: str, sizes: dict[str, int]) -> GPUArray:
    """Broadcast size-1 dims to the index's size elsewhere (stride 0 views)."""
    shape = tuple(sizes[c] for c in subs)
    if shape == x.shape:
        return x
    strides = tuple(0 if n == 1 and sizes[c] != 1 else s
                    for c, n, s in zip(subs, x.shape, x.strides, strict=True))
    return GPUArray(x._rt, x._block, x._offset, shape, strides, x.dtype)


def _pair(left: Operand, right: Operand, keep: set[str], sizes: dict[str, int]) -> Operand:
    """Contract two operands over their shared indices not in ``keep`` (one batched GEMM)."""
    a, sa = left
    b, sb = right
    a, sa = _sum_out(a, sa, keep | set(sb))
    b, sb = _sum_out(b, sb, keep | set(sa))
    a, b = _expand(a, sa, sizes), _expand(b, sb, sizes)
    batch = [c for c in sa if c in sb and c in keep]
    summed = [c for c in sa if c in sb and c not in keep]
    only_a = [c for c in sa if c not in sb]
    only_b = [c for c in sb if c not in sa]

    def size(letters: Sequence[str]) -> int:
        return math.prod(sizes[c] for c in letters)

    a3 = a.transpose([sa.index(c) for c in batch + only_a + summed]).reshape(
        size(batch), size(only_a), size(summed))
    b3 = b.transpose([sb.index(c) for c in batch + summed + only_b]).reshape(
        size(batch), size(summed), size(only_b))
    product = _bmm("einsum", a3, b3)
    letters = batch + only_a + only_b
    return product.reshape(tuple(sizes[c] for c in letters)), "".join(letters)


def _result_dtype(operands: Sequence[GPUArray]) -> np.dtype[Any]:
    """NumPy's einsum dtype: the operands' common type (as multiply resolves it, pairwise)."""
    dtype = operands[0].dtype
    for x in operands[1:]:
        dtype = np.dtype(np.multiply.resolve_dtypes((dtype, x.dtype, None))[-1])
    return dtype


def _path(subscripts: str, operands: Sequence[GPUArray], optimize: Any
          ) -> tuple[list[tuple[int, ...]], list[str], str]:
    import opt_einsum

    strategy: Any = optimize
    if optimize is True or optimize is None:
        strategy = "auto"
    elif optimize is False:
        strategy = [(0, 1)] * (len(operands) - 1) if len(operands) > 1 else [(0,)]
    try:
        path, info = opt_einsum.contract_path(subscripts, *(x.shape for x in operands),
                                              shapes=True, optimize=strategy)
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"einsum: {exc}") from None
    return ([tuple(step) for step in path], info.input_subscripts.split(","),
            info.output_subscript)


def einsum(subscripts: str, *operands: GPUArray, out: GPUArray | None = None,
           optimize: Any = "auto") -> GPUArray:
    """Einstein summation (NumPy's ``einsum``, string subscripts with ``...`` and ``->``).

    Parameters
    ----------
    subscripts
        E.g. ``"ij,jk->ik"``, ``"bij,bjk->bik"``, ``"ii->i"``, ``"...ij,...jk"``.
    operands
        GPUArrays on one device.
    out
        Optional array of the result's shape and dtype to copy the result into.
    optimize
        opt_einsum's strategy (``"auto"``, ``"greedy"``, ``"optimal"``, ...) or an explicit
        contraction path; ``False`` contracts left to right.

    Returns
    -------
    GPUArray
        The result, of NumPy's dtype (float products through the GEMMs: float16 / bfloat16
        accumulate in float32).

    Raises
    ------
    TypeError
        For non-string subscripts or non-GPUArray operands.
    ValueError
        For subscripts that do not match the operands, or operands on different devices.
    """
    if not isinstance(subscripts, str):
        raise TypeError("einsum: subscripts must be a string (the interleaved operand/sublist "
                        f"form is not supported); got {type(subscripts).__name__}")
    if not operands:
        raise ValueError("einsum: at least one operand is required")
    for i, x in enumerate(operands):
        if not isinstance(x, GPUArray):
            raise TypeError(f"einsum: operand {i} must be a GPUArray; got {type(x).__name__}")
    check_same_device(*operands, op="einsum")
    path, inputs, output = _path(subscripts.replace(" ", ""), operands, optimize)
    sizes: dict[str, int] = {}
    for x, subs in zip(operands, inputs, strict=True):
        for letter, n in zip(subs, x.shape, strict=True):
            if sizes.get(letter, 1) not in (1, n) and n != 1:
                raise ValueError(f"einsum: index {letter!r} has sizes {sizes[letter]} and {n}")
            sizes[letter] = max(sizes.get(letter, 1), n)
    pending: list[Operand] = [_diagonal_view(x, s) for x, s in zip(operands, inputs, strict=True)]
    for step in path:
        chosen = [pending[i] for i in step]
        for i in sorted(step, reverse=True):
            del pending[i]
        keep = set(output).union(*(set(s) for _, s in pending))
        current = chosen[0]
        if len(chosen) == 1:
            current = _sum_out(*current, keep)
        for j in range(1, len(chosen)):
            rest = keep.union(*(set(s) for _, s in chosen[j + 1:]))
            current = _pair(current, chosen[j], rest, sizes)
        pending.append(current)
    (result, subs), = pending
    result, subs = _sum_out(result, subs, set(output))
    result = _expand(result, subs, sizes)
    if subs != output:
        result = result.transpose([subs.index(c) for c in output])
    dtype = _result_dtype(operands)
    if result.dtype != dtype:
        result = result.astype(dtype)
    if out is None:
        return result
    if not isinstance(out, GPUArray):
        raise TypeError(f"einsum: out must be a GPUArray; got {type(out).__name__}")
    if out.shape != result.shape:
        raise ValueError(f"einsum: out has shape {out.shape}; the result has {result.shape}")
    copy_into(result, out)
    return out


__all__ = ["einsum"]
