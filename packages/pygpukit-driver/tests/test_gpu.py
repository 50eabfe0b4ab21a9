"""GPU tier: the binding against the real CUDA driver.

Every test is marked ``gpu`` and skipped, with the loader's reason, only when
``pygpukit_driver.is_available()`` is False. Kernels are hand-written PTX (no
toolkit needed): the driver JIT-compiles them for the device at load time.
"""

from __future__ import annotations

import array
import ctypes
import os
import re
from collections.abc import Iterator

import pytest

import pygpukit_driver as drv

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not drv.is_available(), reason=f"CUDA driver unavailable: {drv.unavailable_reason()}"
    ),
]


def _ptx_target(cc: tuple[int, int]) -> str:
    # PTX for sm_80 is JIT-compiled forward to any newer GPU; older GPUs get their own target.
    return "sm_80" if cc >= (8, 0) else f"sm_{cc[0]}{cc[1]}"


def add_one_ptx(target: str) -> bytes:
    """``add_one(unsigned* data, unsigned n)``: data[i] += 1 for i < n; and a global = 7."""
    return f"""
.version 8.0
.target {target}
.address_size 64

.visible .global .align 4 .u32 gcounter = 7;

.visible .entry add_one(
    .param .u64 add_one_param_0,
    .param .u32 add_one_param_1
)
{{
    .reg .pred  %p<2>;
    .reg .b32   %r<7>;
    .reg .b64   %rd<5>;

    ld.param.u64        %rd1, [add_one_param_0];
    ld.param.u32        %r1, [add_one_param_1];
    mov.u32             %r2, %ctaid.x;
    mov.u32             %r3, %ntid.x;
    mov.u32             %r4, %tid.x;
    mad.lo.s32          %r5, %r2, %r3, %r4;
    setp.ge.u32         %p1, %r5, %r1;
    @%p1 bra            DONE;
    cvta.to.global.u64  %rd2, %rd1;
    mul.wide.u32        %rd3, %r5, 4;
    add.s64             %rd4, %rd2, %rd3;
    ld.global.u32       %r6, [%rd4];
    add.s32             %r6, %r6, 1;
    st.global.u32       [%rd4], %r6;
DONE:
    ret;
}}
""".encode()


@pytest.fixture(scope="module")
def ctx() -> Iterator[drv.Context]:
    context = drv.Device(0).primary_context()
    context.set_current()
    yield context
    context.close()


@pytest.fixture(scope="module")
def module(ctx: drv.Context) -> Iterator[drv.Module]:
    mod = drv.Module.load_data(add_one_ptx(_ptx_target(ctx.device.compute_capability)))
    yield mod
    mod.close()


def _u32_array(n: int) -> array.array[int]:
    a = array.array("I")
    assert a.itemsize == 4
    a.frombytes(os.urandom(4 * n))
    return a


def test_device_properties(ctx: drv.Context) -> None:
    assert drv.driver_version() >= 11000
    path = drv.library_path()
    assert path is not None and os.path.exists(path)
    n = drv.device_count()
    assert n >= 1
    for i in range(n):
        d = drv.Device(i)
        assert isinstance(d.name, str) and d.name.strip()
        major, minor = d.compute_capability
        assert 3 <= major <= 20 and 0 <= minor <= 9
        assert d.total_memory > 256 << 20
        assert d.multiprocessor_count > 0
        assert re.fullmatch(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]", d.pci_bus_id, re.I)
        assert re.fullmatch(r"GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", d.uuid)
        assert d.uuid != "GPU-00000000-0000-0000-0000-000000000000"
        assert d.get_attribute(drv.DeviceAttribute.WARP_SIZE) == 32
        assert d.get_attribute(drv.DeviceAttribute.MAX_THREADS_PER_BLOCK) >= 512
    with pytest.raises(ValueError, match="out of range"):
        drv.Device(n)
    assert drv.current_context_handle() == ctx.handle != 0
    free, total = drv.mem_get_info()
    assert 0 < free <= total
    ctx.synchronize()


def test_round_trip_random_bytes(ctx: drv.Context) -> None:
    data = os.urandom((1 << 20) + 13)
    n = len(data)
    p, q = drv.mem_alloc(n), drv.mem_alloc(n)
    try:
        drv.memcpy_htod(p, data)
        drv.memcpy_dtod(q, p, n)
        out = bytearray(n)
        drv.memcpy_dtoh(out, q)
        assert out == data
        with drv.Stream() as s:
            drv.memset_d8_async(q, 0, n, s)
            drv.memcpy_htod_async(q, data[::-1], s.handle)  # the slice is alive until sync
            back = bytearray(n)
            drv.memcpy_dtoh_async(back, q, s)
            s.synchronize()
            assert back == data[::-1]
            drv.memset_d32_async(p, 0xDEADBEEF, 16, s)
            first = bytearray(64)
            drv.memcpy_dtoh_async(first, p, s)
            s.synchronize()
            assert first == (0xDEADBEEF).to_bytes(4, "little") * 16
    finally:
        drv.mem_free(p)
        drv.mem_free(q)


def test_ptx_kernel_add_one(ctx: drv.Context, module: drv.Module) -> None:
    f = module.get_function("add_one")
    assert f.get_attribute(drv.FUNC_ATTRIBUTE_NUM_REGS) > 0
    assert f.get_attribute(drv.FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) >= 256
    n = 1_000_003
    host = _u32_array(n)
    p = drv.mem_alloc(4 * n)
    try:
        drv.memcpy_htod(p, host)
        with drv.Stream() as s:
            drv.launch_kernel(
                f,
                ((n + 255) // 256,),
                (256, 1, 1),
                [ctypes.c_uint64(p), ctypes.c_uint32(n)],
                stream=s,
            )
            s.synchronize()
        out = array.array("I", bytes(4 * n))
        drv.memcpy_dtoh(out, p)
        expected = array.array("I", [(x + 1) & 0xFFFFFFFF for x in host])
        assert out == expected
    finally:
        drv.mem_free(p)


def test_module_global_and_missing_names(ctx: drv.Context, module: drv.Module) -> None:
    ptr, size = module.get_global("gcounter")
    assert size == 4 and ptr != 0
    out = bytearray(4)
    drv.memcpy_dtoh(out, ptr)
    assert int.from_bytes(out, "little") == 7
    with pytest.raises(drv.CudaNotFoundError, match="no_such_kernel") as info:
        module.get_function("no_such_kernel")
    assert info.value.code == 500 and info.value.name == "CUDA_ERROR_NOT_FOUND"


def test_bad_ptx_reports_jit_log(ctx: drv.Context) -> None:
    bad = add_one_ptx(_ptx_target(ctx.device.compute_capability)).replace(
        b"add.s32", b"add.bogus32"
    )
    with pytest.raises(drv.CudaError) as info:
        drv.Module.load_data(bad)
    e = info.value
    assert e.api == "cuModuleLoadDataEx" and e.code != 0
    assert "JIT error log" in str(e), str(e)


def test_stream_event_timing(ctx: drv.Context, module: drv.Module) -> None:
    f = module.get_function("add_one")
    n = 1 << 24
    p = drv.mem_alloc(4 * n)
    try:
        with drv.Stream() as s, drv.Event() as start, drv.Event() as end:
            drv.memset_d32_async(p, 0, n, s)
            start.record(s)
            for _ in range(20):
                drv.launch_kernel(f, n // 256, 256, [ctypes.c_uint64(p), ctypes.c_uint32(n)], 0, s)
            end.record(s)
            end.synchronize()
            assert end.query() and s.query()
            ms = start.elapsed_time(end)
            assert ms > 0.0
            other = drv.Stream(non_blocking=True, priority=drv.stream_priority_range()[1])
            drv.stream_wait_event(other, end)
            other.synchronize()
            other.close()
        check = array.array("I", bytes(16))
        drv.memcpy_dtoh(check, p)
        assert list(check) == [20, 20, 20, 20]
    finally:
        drv.mem_free(p)


def test_out_of_memory(ctx: drv.Context) -> None:
    with pytest.raises(drv.CudaOutOfMemoryError) as info:
        drv.mem_alloc(1 << 50)  # 1 PiB
    e = info.value
    assert isinstance(e, MemoryError)
    assert e.code == 2 and e.name == "CUDA_ERROR_OUT_OF_MEMORY" and e.api == "cuMemAlloc"


def test_resources_outlive_closed_context_handle(ctx: drv.Context) -> None:
    extra = drv.Device(0).primary_context()
    extra.close()  # releasing one retain does not destroy the context others hold
    s = drv.Stream()
    s.synchronize()
    s.close()
    assert drv.current_context_handle() == ctx.handle
