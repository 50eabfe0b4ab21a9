"""Arithmetic on arrays: argument checking, then the device runtime launches the kernel."""

from __future__ import annotations

from pygpukit._array import GPUArray
from pygpukit._creation import ascontiguousarray
from pygpukit._dtypes import float32
from pygpukit._stream import stream_for_runtime
from pygpukit._transfer import check_same_device, copy_into, empty_on, touch

#: dtypes with a precompiled ``add`` kernel; both backends accept exactly these, so a program
#: that runs on the CPU simulation runs on the GPU too.
ADD_DTYPES = (float32,)


def add(a: GPUArray, b: GPUArray, *, out: GPUArray | None = None) -> GPUArray:
    """Elementwise ``a + b``, enqueued on the current stream; returns without waiting.

    Parameters
    ----------
    a, b
        Arrays of the same shape and dtype (float32 in this version) on the same device; any
        strides (views are gathered first).
    out
        Optional array of that shape and dtype to write into; it may be ``a`` or ``b``.

    Raises
    ------
    TypeError
        If an operand is not a GPUArray or the dtypes are unsupported or differ.
    ValueError
        If the shapes differ or the operands are on different devices.
    """
    if (out is None and type(a) is GPUArray and type(b) is GPUArray and a.dtype is float32
            and b.dtype is float32 and a.shape == b.shape and a._rt is b._rt
            and a.is_contiguous() and b.is_contiguous()):
        # The common case, with the checks below folded into one test.
        runtime = a._rt
        stream = stream_for_runtime(runtime)
        target = empty_on(runtime, a.shape, float32, stream)
        touch(stream, a, b, written=target)
        if target.size:
            runtime.add_f32(a, b, target, stream)
        return target
    for name, value in (("a", a), ("b", b)):
        if not isinstance(value, GPUArray):
            raise TypeError(f"add: {name} must be a GPUArray; got {type(value).__name__}")
    if a.dtype != b.dtype:
        raise TypeError(f"add: dtypes differ ({a.dtype.name} and {b.dtype.name})")
    if a.dtype not in ADD_DTYPES:
        supported = ", ".join(d.name for d in ADD_DTYPES)
        raise TypeError(f"add: no kernel for dtype {a.dtype.name} (supported: {supported})")
    if a.shape != b.shape:
        raise ValueError(f"add: operand shapes differ: {a.shape} and {b.shape}")
    runtime = check_same_device(a, b, op="add")
    if out is not None:
        if not isinstance(out, GPUArray):
            raise TypeError(f"add: out must be a GPUArray; got {type(out).__name__}")
        if out.shape != a.shape or out.dtype != a.dtype:
            raise ValueError(
                f"add: out has shape {out.shape} and dtype {out.dtype.name}; "
                f"expected {a.shape} and {a.dtype.name}"
            )
        check_same_device(a, out, op="add")
    stream = stream_for_runtime(runtime)
    a_c, b_c = ascontiguousarray(a), ascontiguousarray(b)
    target = out if out is not None and out.is_contiguous() else empty_on(
        runtime, a.shape, a.dtype, stream)
    touch(stream, a_c, b_c, written=target)
    if target.size:
        runtime.add_f32(a_c, b_c, target, stream)
    if out is not None and target is not out:
        copy_into(target, out)
        return out
    return target
