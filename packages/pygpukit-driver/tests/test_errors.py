"""The Python exception classes (no driver needed)."""

from __future__ import annotations

import pickle

import pytest

import pygpukit_driver as drv
from pygpukit_driver import _errors


def test_message_format() -> None:
    e = _errors._from_native(2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory", "cuMemAlloc", "")
    assert type(e) is drv.CudaOutOfMemoryError
    assert str(e) == "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"
    assert (e.code, e.name, e.description, e.api, e.detail) == (
        2,
        "CUDA_ERROR_OUT_OF_MEMORY",
        "out of memory",
        "cuMemAlloc",
        None,
    )
    assert isinstance(e, MemoryError) and isinstance(e, RuntimeError)


def test_detail_is_appended() -> None:
    e = drv.CudaError(500, "CUDA_ERROR_NOT_FOUND", "named symbol not found", "cuX", "function 'f'")
    assert str(e).endswith("named symbol not found; function 'f'")


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (1, drv.CudaInvalidValueError),
        (2, drv.CudaOutOfMemoryError),
        (101, drv.CudaInvalidDeviceError),
        (201, drv.CudaInvalidContextError),
        (218, drv.CudaInvalidImageError),
        (400, drv.CudaInvalidHandleError),
        (500, drv.CudaNotFoundError),
        (719, drv.CudaLaunchError),
        (999, drv.CudaError),
    ],
)
def test_class_by_code(code: int, cls: type[drv.CudaError]) -> None:
    assert drv.error_class(code) is cls
    assert type(_errors._from_native(code, "N", "d", "api", "")) is cls


def test_pickle_round_trip() -> None:
    e = drv.CudaOutOfMemoryError(2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory", "cuMemAlloc")
    e2 = pickle.loads(pickle.dumps(e))
    assert type(e2) is drv.CudaOutOfMemoryError and str(e2) == str(e) and e2.code == 2


def test_unavailable_error() -> None:
    e = _errors._unavailable_from_native(
        100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected", "dlopen", "tried x"
    )
    assert isinstance(e, drv.CudaUnavailableError) and isinstance(e, drv.CudaError)
    assert str(e) == "CUDA driver unavailable: tried x" and e.reason == "tried x"


def test_public_api_surface() -> None:
    from importlib.metadata import version

    assert drv.__version__ == version("pygpukit-driver")
    for name in drv.__all__:
        assert hasattr(drv, name), name
    assert drv.FUNC_ATTRIBUTE_NUM_REGS == 4
    assert int(drv.DeviceAttribute.MULTIPROCESSOR_COUNT) == 16
    assert drv.DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == 75
