"""Moving data: allocation on a device, copies between arrays, host transfers, assignment.

Every function here enqueues on the current stream of the arrays' device and notes the stream
on each block it touches (for the allocator's cross-stream safety and for :meth:`to_numpy`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from pygpukit import _layout, _spill
from pygpukit._array import GPUArray, hooks
from pygpukit._dtypes import is_fp8, normalize_dtype
from pygpukit._stream import Stream
from pygpukit._stream import stream_for_runtime as _stream_of

if TYPE_CHECKING:
    from pygpukit._backend import Runtime


def touch(stream: Stream, *arrays: GPUArray, written: GPUArray | None = None) -> None:
    """Record that ``stream`` uses these arrays' memory (and writes ``written``).

    Every operation calls this before it reads the arrays' addresses: arrays of spill-enabled
    partitions are stamped (LRU), held and, if spilled, brought back here.
    """
    if _spill.active:
        _spill.use(stream, arrays, written)
    keep = stream._keep  # a graph being captured keeps what it uses alive
    for array in arrays:
        block = array._block
        if block.stream is not stream:
            block.record_stream(stream)
            if keep is not None:
                keep.append(block)
    if written is not None:
        written._block.writer = stream
        if written._block.stream is not stream:
            written._block.record_stream(stream)
            if keep is not None:
                keep.append(written._block)


def empty_on(runtime: Runtime, shape: tuple[int, ...], dtype: np.dtype[Any],
             stream: Stream | None = None) -> GPUArray:
    """A new C-contiguous array on ``runtime``'s device, allocated for ``stream``."""
    stream = stream if stream is not None else _stream_of(runtime)
    nbytes = math.prod(shape) * dtype.itemsize
    pool = stream._pool  # a graph's private pool while it is captured
    block = (runtime.allocator if pool is None else pool).malloc(nbytes, stream)
    return GPUArray(runtime, block, 0, shape, _layout.c_strides(shape, dtype.itemsize), dtype,
                    True)


def check_same_device(*arrays: GPUArray, op: str) -> Any:
    """Return the arrays' common runtime, or raise ValueError naming the devices."""
    runtime = arrays[0]._rt
    for array in arrays[1:]:
        if array._rt is not runtime:
            devices = ", ".join(a._rt.describe().split(" ")[0] for a in arrays)
            raise ValueError(
                f"{op}: operands are on different devices ({devices}); "
                "move them with .to(device) first"
            )
    return runtime


def _overlaps(a: GPUArray, b: GPUArray) -> bool:
    if a._block is not b._block:
        return False
    lo_a, hi_a = _layout.extent(a.shape, a.strides, a.itemsize)
    lo_b, hi_b = _layout.extent(b.shape, b.strides, b.itemsize)
    return a._offset + lo_a < b._offset + hi_b and b._offset + lo_b < a._offset + hi_a


def copy_into(src: GPUArray, dst: GPUArray) -> None:
    """``dst[...] = src`` with broadcasting and casting, on ``dst``'s device and stream."""
    if src.dtype.kind == "c" or dst.dtype.kind == "c":  # copies of the float parts
        check_same_device(src, dst, op="copy")
        hooks.complex.copy(src, dst)
        return
    if src.dtype != dst.dtype and (is_fp8(src.dtype) or is_fp8(dst.dtype)):
        _layout.broadcast_shapes(src.shape, dst.shape)
        hooks.fp8_cast_into(src, dst)  # pygpukit._fp8.cast_into
        return
    runtime = check_same_device(src, dst, op="copy")
    if dst.size == 0:
        _layout.broadcast_shapes(src.shape, dst.shape)
        return
    strides = _layout.broadcast_strides(src.shape, src.strides, dst.shape)
    view = GPUArray(src._rt, src._block, src._offset, dst.shape, strides, src.dtype)
    stream = _stream_of(runtime)
    if _overlaps(view, dst) and not (view.strides == dst.strides and view._offset == dst._offset):
        staged = empty_on(runtime, src.shape, src.dtype, stream)
        copy_into(src, staged)
        view = GPUArray(runtime, staged._block, 0, dst.shape,
                        _layout.broadcast_strides(src.shape, staged.strides, dst.shape),
                        src.dtype)
    touch(stream, view, written=dst)
    runtime.copy(view, dst, stream)


def fill(dst: GPUArray, value: Any) -> None:
    """Set every element of ``dst`` to the scalar ``value`` (cast as NumPy would)."""
    if dst.dtype.kind == "c" or isinstance(value, (complex, np.complexfloating)):
        hooks.complex.fill(dst, value)
        return
    stream = _stream_of(dst._rt)
    touch(stream, written=dst)
    if dst.size:
        dst._rt.fill(dst, value, stream)


def assign(dst: GPUArray, value: Any) -> None:
    """``dst[...] = value`` for a GPUArray, a NumPy array, a nested list or a scalar."""
    if isinstance(value, GPUArray):
        copy_into(value, dst)
    elif isinstance(value, (bool, int, float, complex, np.generic)) and np.ndim(value) == 0:
        _layout.broadcast_shapes((), dst.shape)
        fill(dst, value)
    else:
        host = np.asarray(value)
        if host.dtype.kind not in "biufc" and host.dtype != np.dtype("V2"):
            normalize_dtype(host.dtype, argument="value.dtype")
        copy_into(upload(dst._rt, host), dst)


def upload(runtime: Runtime, host: np.ndarray[Any, Any]) -> GPUArray:
    """Copy a NumPy array (any layout, supported dtype) to a new array on ``runtime``."""
    dtype = normalize_dtype(host.dtype, argument="array.dtype")
    if not host.flags.c_contiguous:
        host = host.copy(order="C")
    out = empty_on(runtime, host.shape, dtype)
    if out.nbytes:
        stream = _stream_of(runtime)
        touch(stream, written=out)
        runtime.upload(out, host.reshape(-1).view(np.uint8).data, stream)
    return out


def _packed(array: GPUArray) -> GPUArray:
    """``array`` if contiguous, else a contiguous copy made after the array's last writer.

    The copy runs on the current stream, which first waits (an event, no host wait) for the
    stream that last wrote the array: a view read right after another stream wrote its
    base must not see the old bytes.
    """
    if array.is_contiguous():
        return array
    writer: Stream = array._block.writer
    stream = _stream_of(array._rt)
    if writer is not stream:
        stream.wait_event(writer.record())
    return array.copy()


def to_numpy(array: GPUArray) -> np.ndarray[Any, Any]:
    """Copy ``array`` to the host after the work that last wrote it (that stream only)."""
    if _spill.active:
        _spill.ensure(array, "read to the host")
    source = _packed(array)
    host = np.empty(array.shape, array.dtype)
    if host.nbytes:
        stream: Stream = source._block.writer
        array._rt.download(source, host.reshape(-1).view(np.uint8).data, stream)
        if stream._index_checks is not None:  # that stream is synchronized: its deferred checks
            from pygpukit import _index_errors

            _index_errors.check(array._rt, stream)
    return host


def to_device(array: GPUArray, device: Any) -> GPUArray:
    """Copy ``array`` to ``device`` (itself if already there)."""
    from pygpukit._device import runtime_for

    runtime = runtime_for(device)
    if runtime is array._rt:
        return array
    if _spill.active:
        _spill.ensure(array, "copied to another device")
    source = _packed(array)
    # The copy runs on the destination's stream after the source's writer has finished.
    out = empty_on(runtime, array.shape, array.dtype)
    stream = _stream_of(runtime)
    if out.nbytes:
        writer: Stream = source._block.writer
        stream.wait_event(writer.record())
        touch(stream, written=out)
        runtime.copy_from_device(source, out, stream)
        # The source's memory may be reused only after the copy: its allocating stream waits
        # for it (events work across devices; nothing waits on the host).
        owner: Stream = source._block.stream
        owner.wait_event(stream.record())
    return out


