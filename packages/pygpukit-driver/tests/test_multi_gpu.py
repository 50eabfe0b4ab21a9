"""GPU tier, several GPUs: per-device primary contexts, peer access and peer copies.

Skipped with a reason where fewer than two GPUs are present; marked ``multigpu`` (not ``gpu``) so
a single-GPU run of the GPU tier does not count them as failures, while a multi-GPU run
(``PYGPUKIT_REQUIRE_MULTI_GPU=1``) does.
"""

from __future__ import annotations

import os

import pytest

import pygpukit_driver as drv

pytestmark = [
    pytest.mark.multigpu,
    pytest.mark.skipif(
        not drv.is_available(), reason=f"CUDA driver unavailable: {drv.unavailable_reason()}"
    ),
    pytest.mark.skipif(
        drv.is_available() and drv.device_count() < 2, reason="needs two or more GPUs"
    ),
]


def test_per_device_contexts() -> None:
    ctxs = [drv.Device(i).primary_context() for i in range(drv.device_count())]
    try:
        assert len({c.handle for c in ctxs}) == len(ctxs)
        for c in ctxs:
            c.set_current()
            assert drv.current_context_handle() == c.handle
            p = drv.mem_alloc(1 << 20)
            s = drv.Stream()  # made in (and keeping alive) this device's context
            drv.memset_d8_async(p, c.device.ordinal, 1 << 20, s)
            out = bytearray(16)
            drv.memcpy_dtoh_async(out, p, s)
            s.synchronize()
            assert out == bytes([c.device.ordinal]) * 16
            s.close()
            drv.mem_free(p)
    finally:
        for c in ctxs:
            c.close()


def test_peer_copy_between_two_gpus() -> None:
    d0, d1 = drv.Device(0), drv.Device(1)
    c0, c1 = d0.primary_context(), d1.primary_context()
    n = (8 << 20) + 4
    data = os.urandom(n)
    try:
        if d0.can_access_peer(d1):
            first = c0.enable_peer_access(c1)
            assert c0.enable_peer_access(c1) is False  # already enabled: not an error
            assert isinstance(first, bool)
        c1.set_current()
        dst = drv.mem_alloc(n)
        c0.set_current()
        src = drv.mem_alloc(n)
        drv.memcpy_htod(src, data)
        with drv.Stream() as s:
            drv.memcpy_peer_async(dst, c1, src, c0, n, s)
            s.synchronize()
        drv.memcpy_peer(src, c0, dst, c1.handle, 16)  # and back, synchronously
        c1.set_current()
        out = bytearray(n)
        drv.memcpy_dtoh(out, dst)
        assert out == data
        drv.mem_free(dst)
        c0.set_current()
        drv.mem_free(src)
    finally:
        c0.close()
        c1.close()
