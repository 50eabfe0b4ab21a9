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


# --------------------------------------------------------------------------------------------
# The rest of the driver API: properties, pools, pinned memory, 2D/peer copies, host functions,
# occupancy, launch attributes, the prepared Launcher, graphs, green contexts, tensor maps.
# --------------------------------------------------------------------------------------------


def test_device_more_properties(ctx: drv.Context) -> None:
    d = ctx.device
    assert d.l2_cache_size >= 1 << 20
    assert d.clock_rate > 100_000  # kHz
    assert d.memory_clock_rate > 0 and d.memory_bus_width >= 64
    assert d.warp_size == 32 and d.max_threads_per_block == 1024
    assert d.max_threads_per_multiprocessor >= 1024
    assert d.max_shared_memory_per_block == 48 * 1024
    assert d.max_shared_memory_per_block_optin >= d.max_shared_memory_per_block
    assert d.max_shared_memory_per_multiprocessor >= d.max_shared_memory_per_block_optin
    assert d.max_registers_per_block >= 32 * 1024
    assert d.cooperative_launch is True
    assert d.cluster_launch is (d.compute_capability >= (9, 0))
    assert d.l2_cache_size == d.get_attribute(drv.DeviceAttribute.L2_CACHE_SIZE)
    assert d.can_access_peer(d) is False


def test_mem_pool_release_threshold_and_usage(ctx: drv.Context) -> None:
    pool = drv.MemPool(0)
    assert pool.device == 0 and pool.handle != 0
    old = pool.release_threshold
    try:
        pool.release_threshold = 64 << 20
        assert pool.release_threshold == 64 << 20
        assert pool.get_attribute(drv.MemPoolAttribute.RELEASE_THRESHOLD) == 64 << 20
        with drv.Stream() as s:
            base = pool.used_mem_current
            p = pool.alloc_async(32 << 20, s)
            q = drv.mem_alloc_async(16 << 20, s)
            drv.memset_d8_async(p, 1, 32 << 20, s)
            assert pool.used_mem_current >= base + (48 << 20)
            assert pool.reserved_mem_current >= pool.used_mem_current
            assert pool.used_mem_high >= pool.used_mem_current
            drv.mem_free_async(p, s)
            drv.mem_free_async(q, s)
            s.synchronize()
        assert pool.used_mem_current == base
        pool.trim_to(0)
        assert pool.reserved_mem_current <= (64 << 20) or pool.used_mem_current > 0
        pool.reset_peaks()
        assert pool.used_mem_high == pool.used_mem_current
    finally:
        pool.release_threshold = old


def test_pinned_host_memory_and_registration(ctx: drv.Context) -> None:
    n = 1 << 20
    data = os.urandom(n)
    p = drv.mem_alloc(n)
    try:
        with drv.HostMemory(n) as h, drv.Stream() as s:
            assert len(h) == h.size == n and h.ptr != 0
            mv = memoryview(h)
            mv[:] = data
            drv.memcpy_htod_async(p, h, s)
            back = drv.HostMemory(n, portable=True)
            drv.memcpy_dtoh_async(back, p, s)
            s.synchronize()
            assert bytes(memoryview(back)) == data
            with pytest.raises(BufferError):
                h.close()  # a memoryview still uses it
            mv.release()
            back.close()
            assert back.closed
            with pytest.raises(BufferError):
                memoryview(back)
        mapped = drv.HostMemory(4096, device_map=True)
        assert mapped.device_pointer != 0
        mapped.close()
        buf = bytearray(n)
        with drv.host_register(buf) as reg:
            assert reg.ptr != 0 and reg.size == n
            drv.memcpy_dtoh_async(buf, p, 0)
            ctx.synchronize()
            assert bytes(buf) == data
        assert reg.closed
        buf.extend(b"x")  # the buffer is released again: resizable
    finally:
        drv.mem_free(p)


def test_memcpy_2d_and_memset_d16(ctx: drv.Context) -> None:
    rows, width, hpitch, dpitch = 37, 100, 128, 512
    host = os.urandom(rows * hpitch)
    d = drv.mem_alloc(rows * dpitch)
    try:
        drv.memcpy_2d(d, dpitch, host, hpitch, width, rows)
        out = bytearray(rows * width)
        drv.memcpy_2d(out, width, d, dpitch, width, rows)
        expected = b"".join(host[r * hpitch : r * hpitch + width] for r in range(rows))
        assert out == expected
        with drv.Stream() as s:
            d2 = drv.mem_alloc(rows * dpitch)
            drv.memcpy_2d_async(d2, dpitch, d, dpitch, width, rows, s)  # device to device
            out2 = bytearray(rows * width)
            drv.memcpy_2d_async(out2, width, d2, dpitch, width, rows, s)
            drv.memset_d16_async(d2, 0xBEEF, 8, s)
            first = bytearray(16)
            drv.memcpy_dtoh_async(first, d2, s)
            s.synchronize()
            drv.mem_free(d2)
        assert out2 == expected
        assert first == (0xBEEF).to_bytes(2, "little") * 8
        with pytest.raises(ValueError, match="too small"):
            drv.memcpy_2d(bytearray(10), width, d, dpitch, width, rows)
        q = drv.mem_alloc(1024)
        drv.memcpy_peer(q, ctx, d, ctx.handle, 1024)  # same device: a plain copy
        chk = bytearray(width)
        drv.memcpy_dtoh(chk, q)
        assert chk == host[:width]
        drv.mem_free(q)
    finally:
        drv.mem_free(d)


def test_host_func_runs_in_order_and_reports_errors(
    ctx: drv.Context, module: drv.Module, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc
    import sys
    import threading
    import weakref

    seen: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))
    f = module.get_function("add_one")
    n = 1 << 20
    p = drv.mem_alloc(4 * n)
    order: list[tuple[str, int]] = []

    class Probe:
        def __call__(self) -> None:
            out = array.array("I", bytes(4))
            order.append(("cb", threading.get_ident()))
            del out

    try:
        with drv.Stream() as s:
            drv.memset_d32_async(p, 0, n, s)
            for i in range(3):
                drv.launch_kernel(f, n // 256, 256, [ctypes.c_uint64(p), ctypes.c_uint32(n)], 0, s)
                drv.launch_host_func(s, lambda i=i: order.append(("k", i)))
            probe = Probe()
            ref = weakref.ref(probe)
            drv.launch_host_func(s, probe)
            del probe

            def boom() -> None:
                raise RuntimeError("from a host function")

            drv.launch_host_func(s, boom)
            s.synchronize()
        gc.collect()
        assert [x for x in order if x[0] == "k"] == [("k", 0), ("k", 1), ("k", 2)]
        cb = [x for x in order if x[0] == "cb"]
        assert len(cb) == 1 and cb[0][1] != threading.get_ident()  # on a driver thread
        assert ref() is None  # the callable was released after it ran
        assert len(seen) == 1 and isinstance(seen[0], RuntimeError)
        with pytest.raises(TypeError):
            drv.launch_host_func(0, 5)  # type: ignore[arg-type]
    finally:
        drv.mem_free(p)


def test_occupancy_and_launch_ex(ctx: drv.Context, module: drv.Module) -> None:
    f = module.get_function("add_one")
    assert f.max_active_blocks_per_multiprocessor(256) >= 1
    assert f.max_active_blocks_per_multiprocessor(256, 1024) >= 1
    min_grid, block = f.max_potential_block_size()
    assert min_grid >= ctx.device.multiprocessor_count and 32 <= block <= 1024
    assert f.max_potential_block_size(0, 128)[1] <= 128
    n = 1 << 16
    p = drv.mem_alloc(4 * n)
    try:
        with drv.Stream() as s:
            drv.memset_d32_async(p, 5, n, s)
            args = [ctypes.c_uint64(p), ctypes.c_uint32(n)]
            drv.launch_kernel_ex(f, n // 256, 256, args, 0, s)
            drv.launch_kernel_ex(
                f, n // 256, 256, args, 0, s, priority=drv.stream_priority_range()[1]
            )
            drv.launch_kernel_ex(
                f, 8, 256, [ctypes.c_uint64(p), ctypes.c_uint32(8 * 256)], 0, s, cooperative=True
            )
            expected = 8
            if ctx.device.cluster_launch:
                drv.launch_kernel_ex(f, n // 256, 256, args, 0, s, cluster=(2, 1, 1))
                expected += 1
            out = array.array("I", bytes(4 * n))
            drv.memcpy_dtoh_async(out, p, s)
            s.synchronize()
        assert out[0] == expected and out[n - 1] == expected - 1
    finally:
        drv.mem_free(p)


def test_launcher_fast_path(ctx: drv.Context, module: drv.Module) -> None:
    f = module.get_function("add_one")
    n = 1_000_003
    host = _u32_array(n)
    p = drv.mem_alloc(4 * n)
    try:
        drv.memcpy_htod(p, host)
        with drv.Stream() as s:
            launch = drv.Launcher(f, (n + 255) // 256, 256, "PI", stream=s)
            assert launch.arg_types == "PI" and launch.grid == ((n + 255) // 256, 1, 1)
            for _ in range(3):
                launch(p, n)
            f.prepare((n + 255) // 256, 256, "PI", 0, s)(p, n)
            with pytest.raises(TypeError, match="expects 2"):
                launch(p)
            with pytest.raises(TypeError):
                launch(p, 1.5)
            with pytest.raises(ValueError, match="out of range"):
                launch(p, -1)
            s.synchronize()
        out = array.array("I", bytes(4 * n))
        drv.memcpy_dtoh(out, p)
        assert out == array.array("I", [(x + 4) & 0xFFFFFFFF for x in host])
    finally:
        drv.mem_free(p)


def test_graph_capture_and_replay(ctx: drv.Context, module: drv.Module) -> None:
    f = module.get_function("add_one")
    n = 1 << 20
    p = drv.mem_alloc(4 * n)
    try:
        with drv.Stream() as s:
            drv.memset_d32_async(p, 0, n, s)
            s.synchronize()
            launch = drv.Launcher(f, n // 256, 256, "PI", stream=s)
            assert drv.stream_capture_status(s) == drv.CaptureStatus.NONE
            drv.stream_begin_capture(s, drv.CaptureMode.THREAD_LOCAL)
            assert drv.stream_capture_status(s) == drv.CaptureStatus.ACTIVE
            for _ in range(3):
                launch(p, n)
            with drv.stream_end_capture(s) as graph:
                assert drv.stream_capture_status(s) == drv.CaptureStatus.NONE
                assert graph.node_count == 3
                with graph.instantiate() as exe:
                    exe.launch(s)
                    exe.launch(s)
                    s.synchronize()
            check = array.array("I", bytes(16))
            drv.memcpy_dtoh(check, p)
            assert list(check) == [6, 6, 6, 6]  # nothing ran during capture, 2 x 3 after
    finally:
        drv.mem_free(p)


def test_green_context_split_and_run(ctx: drv.Context) -> None:
    assert drv.green_contexts_supported(), f"driver {drv.driver_version()} lacks green contexts"
    whole = drv.device_sm_resource(0)
    assert whole.sm_count == ctx.device.multiprocessor_count
    groups, rest = whole.split(2, 16)
    assert [g.sm_count for g in groups] == [16, 16], [g.sm_count for g in groups]
    assert rest.sm_count == whole.sm_count - 32
    n = 1 << 20
    with drv.GreenContext(groups[0]) as g:
        assert g.sm_count == 16 and g.device == 0 and g.context_handle != 0
        s = g.create_stream()
        g.set_current()
        try:
            assert drv.current_context_handle() == g.context_handle
            mod = drv.Module.load_data(add_one_ptx(_ptx_target(ctx.device.compute_capability)))
            f = mod.get_function("add_one")
            p = drv.mem_alloc(4 * n)
            drv.memset_d32_async(p, 41, n, s)
            drv.launch_kernel(f, n // 256, 256, [ctypes.c_uint64(p), ctypes.c_uint32(n)], 0, s)
            out = array.array("I", bytes(4 * n))
            drv.memcpy_dtoh_async(out, p, s)
            s.synchronize()
            assert out[0] == 42 and out[n - 1] == 42
            drv.mem_free(p)
            mod.close()
        finally:
            ctx.set_current()
        s.close()
    assert g.closed


def test_tensor_map_encode_tiled(ctx: drv.Context) -> None:
    rows, cols = 1024, 1024
    p = drv.mem_alloc(rows * cols * 4)
    try:
        tmap = drv.tensor_map_encode_tiled(
            drv.TensorMapDataType.FLOAT32,
            p,
            (cols, rows),
            (cols * 4,),
            (32, 32),
            swizzle=drv.TensorMapSwizzle.SWIZZLE_128B,
            l2_promotion=drv.TensorMapL2Promotion.L2_128B,
        )
        assert isinstance(tmap, bytes) and len(tmap) == 128 and any(tmap)
        with pytest.raises(drv.CudaInvalidValueError):
            drv.tensor_map_encode_tiled(
                drv.TensorMapDataType.FLOAT32, p, (cols, rows), (12,), (32, 32)
            )
        with pytest.raises(ValueError, match="global_strides"):
            drv.tensor_map_encode_tiled(
                drv.TensorMapDataType.FLOAT32, p, (cols, rows), (), (32, 32)
            )
    finally:
        drv.mem_free(p)


def test_stream_priorities_and_event_record_fast(ctx: drv.Context) -> None:
    least, greatest = drv.stream_priority_range()
    with drv.Stream(priority=greatest) as hi, drv.Stream(non_blocking=False, priority=least) as lo:
        assert hi.priority == greatest and lo.priority == least
        assert hi.non_blocking is True and lo.non_blocking is False
        e = drv.Event(timing=False)
        e.record(hi)
        e.record(stream=lo.handle)
        e.record()
        e.synchronize()
        with pytest.raises(TypeError):
            e.record(hi, lo)  # type: ignore[call-arg]
        e.close()
