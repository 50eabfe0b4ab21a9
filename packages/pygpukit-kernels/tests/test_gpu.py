"""The shipped kernels on a real GPU: the C ABI launcher and the fatbin through the driver API."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest

import pygpukit_kernels as pk

# The driver binding is not a dependency of the kernels wheel: without it every test skips
# through the `gpu` marker below (so the skip-to-fail rule sees it), not at import.
drv: Any
try:
    import pygpukit_driver as drv
except ImportError:
    drv = None

_REASON = ("pygpukit-driver is needed for GPU tests (not installed)" if drv is None
           else None if drv.is_available() else f"no CUDA driver: {drv.unavailable_reason()}")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


@pytest.fixture(scope="module")
def context() -> object:
    ctx = drv.Device(0).primary_context()
    ctx.set_current()
    return ctx


def _upload(host: np.ndarray) -> int:
    ptr = drv.mem_alloc(host.nbytes)
    drv.memcpy_htod(ptr, host)
    return ptr


def test_device_is_covered(context: object) -> None:
    major, minor = drv.Device(0).compute_capability
    assert pk.covers(major, minor) == "sass", "the lent GPUs (sm_90) must run shipped SASS"


@pytest.mark.parametrize("n", [1, 3, 4, 1000, 1 << 20, (1 << 20) + 3])
def test_c_abi_launcher(context: object, n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    px, py, pz = _upload(x), _upload(y), drv.mem_alloc(x.nbytes)
    stream = drv.Stream()
    try:
        drv.memset_d32_async(pz, 0x7FC00000, n, stream.handle)  # poison with NaN
        fn = pk.load().pgk_add_f32
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64, ctypes.c_void_p]
        assert fn(px, py, pz, n, stream.handle) == 0
        stream.synchronize()
        out = np.empty_like(x)
        drv.memcpy_dtoh(out, pz)
        np.testing.assert_array_equal(out, x + y)
    finally:
        for p in (px, py, pz):
            drv.mem_free(p)
        stream.close()


def test_unaligned_pointers_take_the_scalar_path(context: object) -> None:
    n = 4097
    x = np.random.default_rng(1).standard_normal(n + 1, dtype=np.float32)
    px, pz = _upload(x), drv.mem_alloc(x.nbytes)
    try:
        fn = pk.load().pgk_add_f32
        fn.restype = ctypes.c_int
        fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64, ctypes.c_void_p]
        assert fn(px + 4, px, pz + 4, n, None) == 0  # offsets of one float: 4-byte aligned only
        context.synchronize()  # type: ignore[attr-defined]
        out = np.empty(n + 1, np.float32)
        drv.memcpy_dtoh(out, pz)
        np.testing.assert_array_equal(out[1:], x[1:] + x[:-1])
    finally:
        drv.mem_free(px)
        drv.mem_free(pz)


def test_fatbin_through_the_driver_api(context: object) -> None:
    module = drv.Module.load_data(pk.fatbin_path("elementwise").read_bytes())
    kernel = module.get_function("pgk_add_f32_kernel")
    n = 100_003
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    px, py, pz = _upload(x), _upload(y), drv.mem_alloc(x.nbytes)
    try:
        args = [ctypes.c_uint64(px), ctypes.c_uint64(py), ctypes.c_uint64(pz),
                ctypes.c_int64(n)]
        drv.launch_kernel(kernel, grid=(n + 1023) // 1024, block=256, args=args)
        context.synchronize()  # type: ignore[attr-defined]
        out = np.empty_like(x)
        drv.memcpy_dtoh(out, pz)
        np.testing.assert_array_equal(out, x + y)
    finally:
        for p in (px, py, pz):
            drv.mem_free(p)
        module.close()
