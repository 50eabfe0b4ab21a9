"""Zero-copy interop: DLPack 1.x (versioned and legacy capsules) and the CUDA Array Interface v3.

Exporting hands out the array's memory and keeps the array alive until the consumer calls the
deleter; the consumer's stream is made to wait (an event, no host wait) for the stream that
last wrote the array.  Importing wraps the producer's memory; the producer's deleter runs when
the last GPUArray viewing it is gone.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import ml_dtypes
import numpy as np

from pygpukit import _spill
from pygpukit._array import GPUArray
from pygpukit._dtypes import normalize_dtype

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13
_KDL_INT, _KDL_UINT, _KDL_FLOAT, _KDL_BFLOAT, _KDL_COMPLEX, _KDL_BOOL = 0, 1, 2, 4, 5, 6
# DLPack 1.1's FP8 codes (kDLFloat8_e4m3fn, kDLFloat8_e5m2), as torch exports its FP8 tensors.
_KDL_FP8: dict[int, np.dtype[Any]] = {10: np.dtype(ml_dtypes.float8_e4m3fn),
                                      12: np.dtype(ml_dtypes.float8_e5m2)}
_FLAG_READ_ONLY = 1


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_DLManagedTensor._fields_ = [
    ("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER),
]


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", _DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER),
        ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor),
    ]


# Capsule names: PyCapsule_New keeps the pointer, so these bytes live as long as the module.
_NAME = b"dltensor"
_NAME_VERSIONED = b"dltensor_versioned"
_USED = b"used_dltensor"
_USED_VERSIONED = b"used_dltensor_versioned"

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_set_name = ctypes.pythonapi.PyCapsule_SetName
_set_name.restype = ctypes.c_int
_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
# The capsule destructor receives the dying capsule: raw pointers only, no new references.
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))

# Exported tensors alive on the consumer side, by the address of their managed struct.
_exports: dict[int, tuple[Any, ...]] = {}
_exports_lock = threading.Lock()


def _export_deleter_impl(address: int | None) -> None:
    with _exports_lock:
        entry = _exports.pop(address or 0, None)
    if entry is not None:
        _spill.unpin(entry[3])  # the consumer is done with the memory: it may spill again


def _capsule_destructor_impl(capsule: int | None) -> None:
    # A capsule nobody consumed still owns its tensor (the consumer renames it when it does).
    for name in (_NAME_VERSIONED, _NAME):
        if _raw_is_valid(capsule, name):
            address = _raw_get_pointer(capsule, name)
            with _exports_lock:
                entry = _exports.pop(address or 0, None)
            if entry is not None:
                _spill.unpin(entry[3])
            return


_export_deleter = _DELETER(_export_deleter_impl)
_capsule_destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_capsule_destructor_impl)
_DESTRUCTOR_ADDRESS = ctypes.cast(_capsule_destructor, ctypes.c_void_p).value


def _dl_dtype(dtype: np.dtype[Any]) -> _DLDataType:
    if dtype == np.bool_:
        return _DLDataType(_KDL_BOOL, 8, 1)
    if dtype == np.dtype(ml_dtypes.bfloat16):
        return _DLDataType(_KDL_BFLOAT, 16, 1)
    for fp8_code, fp8 in _KDL_FP8.items():
        if dtype == fp8:
            return _DLDataType(fp8_code, 8, 1)
    code = {"i": _KDL_INT, "u": _KDL_UINT, "f": _KDL_FLOAT, "c": _KDL_COMPLEX}[dtype.kind]
    return _DLDataType(code, dtype.itemsize * 8, 1)


def _np_dtype(dl: _DLDataType) -> np.dtype[Any]:
    if dl.lanes != 1:
        raise TypeError(f"DLPack tensors with {dl.lanes} lanes are not supported")
    if dl.code == _KDL_BOOL and dl.bits == 8:
        return np.dtype(np.bool_)
    if dl.code == _KDL_BFLOAT and dl.bits == 16:
        bf16: np.dtype[Any] = np.dtype(ml_dtypes.bfloat16)
        return bf16
    if dl.code in _KDL_FP8 and dl.bits == 8:
        return _KDL_FP8[dl.code]
    kinds = {_KDL_INT: "i", _KDL_UINT: "u", _KDL_FLOAT: "f", _KDL_COMPLEX: "c"}
    if dl.code not in kinds:
        raise TypeError(f"DLPack dtype code {dl.code} is not supported")
    dtype: np.dtype[Any] = normalize_dtype(np.dtype(f"{kinds[dl.code]}{dl.bits // 8}"))
    return dtype


def device_tuple(array: GPUArray) -> tuple[int, int]:
    """``__dlpack_device__``: (kDLCUDA, ordinal) on the GPU, (kDLCPU, 0) on the simulation."""
    from pygpukit._backend import get_backend

    cuda = get_backend().name == "cuda"
    return (KDL_CUDA, array._rt.index) if cuda else (KDL_CPU, 0)


def _sync_consumer(array: GPUArray, stream: Any) -> None:
    """Make the consumer's stream wait for the work that last wrote ``array``."""
    import pygpukit_driver as drv

    if stream == -1:
        return
    handle = 1 if stream is None else int(stream)  # 1 = CU_STREAM_LEGACY, 2 = per-thread
    if handle == 0 or handle < -1:
        raise ValueError(f"stream: {stream} is not a valid DLPack CUDA stream (0 is ambiguous)")
    writer = array._block.writer
    if writer.handle == handle:
        return
    array._rt.activate()
    event = drv.Event(timing=False)
    event.record(writer.handle)
    drv.stream_wait_event(handle, event)
    array._block.record_stream(_ForeignStream(handle))


def export_capsule(array: GPUArray, *, stream: Any, max_version: Any, dl_device: Any,
                   copy: Any) -> Any:
    """Build the ``__dlpack__`` capsule of ``array``."""
    device = device_tuple(array)
    if dl_device is not None and tuple(dl_device) == (KDL_CPU, 0) and device[0] == KDL_CUDA:
        # The standard's export to the host: a copy (refused when copy=False).
        if copy is False:
            raise BufferError("dl_device: the host (1, 0) needs a copy of a CUDA array; "
                              "copy=False forbids it")
        host = array.to_numpy()
        try:
            return host.__dlpack__(max_version=max_version)
        except TypeError:  # NumPy before 2.1 takes no max_version
            return host.__dlpack__()
    if dl_device is not None and tuple(dl_device) != device:
        raise BufferError(f"dl_device: {tuple(dl_device)} differs from the array's {device}; "
                          "only export on the array's own device is supported")
    if copy:
        array = array.copy()
    # Another library holds the pointer until the deleter runs: the array stays on the device.
    _spill.pin(array, "exported through DLPack")
    if device[0] == KDL_CUDA:
        _sync_consumer(array, stream)
    shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
    strides = (ctypes.c_int64 * max(array.ndim, 1))(
        *(s // array.itemsize for s in array.strides))
    tensor = _DLTensor(array.data_ptr, _DLDevice(*device), array.ndim, _dl_dtype(array.dtype),
                       shape, strides, 0)
    versioned = max_version is not None and next(iter(max_version)) >= 1
    managed: Any
    if versioned:
        managed = _DLManagedTensorVersioned(_DLPackVersion(1, 0), None, _export_deleter,
                                            2 if copy else 0, tensor)
        name = _NAME_VERSIONED
    else:
        managed = _DLManagedTensor(tensor, None, _export_deleter)
        name = _NAME
    address = ctypes.addressof(managed)
    with _exports_lock:
        _exports[address] = (managed, shape, strides, array)
    return _capsule_new(address, name, _DESTRUCTOR_ADDRESS)


class _ForeignStream:
    """A stream of another library, known only by its handle."""

    __slots__ = ("handle",)

    def __init__(self, handle: int) -> None:
        self.handle = handle

    def synchronize(self) -> None:
        import pygpukit_driver as drv

        event = drv.Event(timing=False)
        event.record(self.handle)
        event.synchronize()


class _ForeignOwner:
    """Keeps imported memory alive; runs the producer's deleter when the last view goes."""

    __slots__ = ("_deleter", "_keep", "_managed")

    def __init__(self, keep: Any, managed: int | None = None, deleter: Any = None) -> None:
        self._keep, self._managed, self._deleter = keep, managed, deleter

    def __del__(self) -> None:
        if self._deleter is not None and self._managed:
            self._deleter(self._managed)


def _wrap(runtime: Any, address: int, shape: tuple[int, ...], strides: tuple[int, ...],
          dtype: np.dtype[Any], owner: _ForeignOwner) -> GPUArray:
    from pygpukit._stream import stream_for_runtime

    # Never returned to an allocator: the owner frees the memory.
    block = runtime.allocator.external(address, owner, stream_for_runtime(runtime))
    return GPUArray(runtime, block, 0, shape, strides, dtype)


def from_dlpack(obj: Any) -> GPUArray:
    """Wrap a DLPack-exporting object's memory without copying (GPU to GPU).

    The producer is asked to make the current stream wait for its pending work.  On the CPU
    simulation, and for host tensors on the GPU backend, the data is copied instead.
    """
    from pygpukit._backend import get_backend
    from pygpukit._creation import from_numpy
    from pygpukit._device import runtime_for
    from pygpukit._stream import stream_for_runtime

    if not hasattr(obj, "__dlpack__"):
        raise TypeError(f"obj: {type(obj).__name__} does not implement __dlpack__")
    dev_type, dev_id = obj.__dlpack_device__()
    if get_backend().name != "cuda" or dev_type in (KDL_CPU, KDL_CUDA_HOST):
        return from_numpy(np.from_dlpack(obj))
    if dev_type not in (KDL_CUDA, KDL_CUDA_MANAGED):
        raise BufferError(f"obj: DLPack device type {dev_type} is not a CUDA device")
    runtime = runtime_for(int(dev_id))
    stream = stream_for_runtime(runtime).handle or 1
    try:
        capsule = obj.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:
        capsule = obj.__dlpack__(stream=stream)
    if _is_valid(capsule, _NAME_VERSIONED):
        address = _get_pointer(capsule, _NAME_VERSIONED)
        managed: Any = _DLManagedTensorVersioned.from_address(address)
        if managed.version.major != 1:
            raise BufferError(f"DLPack major version {managed.version.major} is not supported")
        _set_name(capsule, _USED_VERSIONED)
    elif _is_valid(capsule, _NAME):
        address = _get_pointer(capsule, _NAME)
        managed = _DLManagedTensor.from_address(address)
        _set_name(capsule, _USED)
    else:
        raise BufferError("obj.__dlpack__() did not return a DLPack capsule")
    tensor = managed.dl_tensor
    dtype = _np_dtype(tensor.dtype)
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    if tensor.strides:
        strides = tuple(tensor.strides[i] * dtype.itemsize for i in range(tensor.ndim))
    else:
        from pygpukit._layout import c_strides

        strides = c_strides(shape, dtype.itemsize)
    deleter = managed.deleter if managed.deleter else None
    owner = _ForeignOwner(None, address, deleter)
    return _wrap(runtime, (tensor.data or 0) + tensor.byte_offset, shape, strides, dtype, owner)


def cuda_array_interface(array: GPUArray) -> dict[str, Any]:
    """``__cuda_array_interface__`` (v3) of an array on the CUDA backend."""
    from pygpukit._backend import get_backend

    if get_backend().name != "cuda":
        raise AttributeError("__cuda_array_interface__ exists on the CUDA backend only")
    if array.dtype == np.dtype(ml_dtypes.bfloat16):
        raise AttributeError("bfloat16 has no CUDA Array Interface typestr; use DLPack")
    if array.dtype in _KDL_FP8.values():
        raise AttributeError(f"{array.dtype.name} has no CUDA Array Interface typestr; use DLPack")
    # The consumer may keep the pointer as long as it holds the array: it stays on the device.
    _spill.pin_for_good(array, "exported through __cuda_array_interface__")
    handle = array._block.writer.handle
    return {
        "shape": array.shape,
        "typestr": array.dtype.str,
        "data": (array.data_ptr if array.size else 0, False),
        "version": 3,
        "strides": None if array.is_contiguous() else array.strides,
        "descr": [("", array.dtype.str)],
        "stream": handle or 1,
    }


def from_cuda_array_interface(obj: Any) -> GPUArray:
    """Wrap an object exposing ``__cuda_array_interface__`` (v2/v3) without copying."""
    import pygpukit_driver as drv
    from pygpukit._device import runtime_for
    from pygpukit._layout import c_strides
    from pygpukit._stream import stream_for_runtime

    cai = obj.__cuda_array_interface__
    if cai.get("mask") is not None:
        raise TypeError("masked CUDA Array Interface arrays are not supported")
    dtype = normalize_dtype(np.dtype(cai["typestr"]), argument="typestr")
    shape = tuple(int(d) for d in cai["shape"])
    strides = tuple(cai["strides"]) if cai.get("strides") else c_strides(shape, dtype.itemsize)
    runtime = runtime_for(None)
    foreign_stream = cai.get("stream")
    if foreign_stream is not None:
        # Our stream waits for the producer's, as the interface asks of consumers.
        runtime.activate()
        event = drv.Event(timing=False)
        event.record(int(foreign_stream))
        drv.stream_wait_event(stream_for_runtime(runtime).handle, event)
    return _wrap(runtime, int(cai["data"][0]), shape, strides, dtype, _ForeignOwner(obj))


def from_foreign(obj: Any) -> GPUArray:
    """Zero-copy import through the CUDA Array Interface, else DLPack."""
    from pygpukit._backend import get_backend

    if get_backend().name == "cuda" and hasattr(obj, "__cuda_array_interface__"):
        return from_cuda_array_interface(obj)
    return from_dlpack(obj)
