# ruff: noqa: E501  (the subprocess scripts are kept one statement per line)
"""The rest of the runtime-level driver API against the fake driver, with failure injection.

Pools, pinned/registered host memory, 2D/peer copies, memset16, host functions, stream capture
and graphs, peer access, occupancy, cuLaunchKernelEx attributes, the prepared Launcher, green
contexts, tensor maps, and entry points missing from an old driver.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

Runner = Callable[..., str]


def test_device_properties_added(run: Runner) -> None:
    run(
        """
        d0, d1 = drv.Device(0), drv.Device(1)
        assert d0.l2_cache_size == 40 << 20 and d1.l2_cache_size == 50 << 20
        assert d0.clock_rate == 1410000 and d1.clock_rate == 1980000
        assert d0.max_shared_memory_per_block_optin == 227 * 1024
        assert d0.max_shared_memory_per_block == 48 * 1024
        assert d0.warp_size == 32 and d0.max_threads_per_block == 1024
        assert d0.cooperative_launch is True
        assert d0.cluster_launch is False and d1.cluster_launch is True
        assert d0.can_access_peer(d1) and not d0.can_access_peer(d0)
        """
    )


def test_mem_pool(run: Runner) -> None:
    run(
        """
        ctx = use_device(1)
        pool = drv.MemPool(1)
        assert pool.device == 1 and pool.handle != 0 and repr(pool) == "<MemPool device=1>"
        assert pool.release_threshold == 0
        pool.release_threshold = 1 << 20
        assert pool.release_threshold == 1 << 20
        assert pool.get_attribute(drv.MemPoolAttribute.RELEASE_THRESHOLD) == 1 << 20
        s = drv.Stream()
        p = pool.alloc_async(3 << 20, s)
        q = drv.mem_alloc_async(1 << 20, s)         # the default pool too
        assert pool.used_mem_current == 4 << 20 and pool.reserved_mem_current == 4 << 20
        drv.mem_free_async(p, s); drv.mem_free_async(q, s)
        assert pool.used_mem_current == 0 and pool.used_mem_high == 4 << 20
        s.synchronize()                             # shrinks to the release threshold
        assert pool.reserved_mem_current == 1 << 20
        pool.trim_to(0)
        assert pool.reserved_mem_current == 0
        pool.reset_peaks()
        assert pool.used_mem_high == 0 and pool.reserved_mem_high == 0
        e = expect(drv.CudaOutOfMemoryError, pool.alloc_async, 1 << 50, s)
        assert e.api == "cuMemAllocFromPoolAsync"
        expect(ValueError, pool.alloc_async, 0, s)
        expect(ValueError, setattr, pool, "release_threshold", -1)
        expect(ValueError, pool.get_attribute, 1)
        s.close(); ctx.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """
    )


def test_host_memory_buffer_protocol_and_lifetime(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        h = drv.HostMemory(64, portable=True, write_combined=True)
        assert counter("fake_last_host_flags", ctypes.c_uint) == 1 | 4
        assert len(h) == 64 and h.size == 64 and h.ptr != 0 and not h.closed
        mv = memoryview(h)
        assert mv.nbytes == 64 and not mv.readonly and bytes(mv) == bytes(64)
        mv[:4] = b"abcd"
        assert ctypes.string_at(h.ptr, 4) == b"abcd"
        e = expect(BufferError, h.close)
        assert "exported" in str(e)
        p = drv.mem_alloc(64)
        drv.memcpy_htod(p, h)                       # HostMemory is a source buffer...
        h2 = drv.HostMemory(64)
        drv.memcpy_dtoh(h2, p)                      # ...and a writable destination
        assert bytes(memoryview(h2))[:4] == b"abcd"
        expect(drv.CudaInvalidValueError, lambda: h2.device_pointer)   # not mapped
        mapped = drv.HostMemory(16, device_map=True)
        assert mapped.device_pointer == mapped.ptr
        mv.release(); h.close(); h.close()
        assert h.closed
        expect(BufferError, memoryview, h)
        expect(ValueError, lambda: h.ptr)
        del h2, mapped; gc.collect()                # GC frees
        assert counter("fake_outstanding_host", ctypes.c_longlong) == 0
        with drv.HostMemory(8) as h3:
            pass
        assert h3.closed
        expect(ValueError, drv.HostMemory, 0)
        drv.mem_free(p); ctx.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """
    )


def test_host_memory_oom(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        e = expect(drv.CudaOutOfMemoryError, drv.HostMemory, 4096)
        assert isinstance(e, MemoryError) and e.api == "cuMemHostAlloc"
        ctx.close()
        assert outstanding() == 0
        """,
        env={"FAKE_CUDA_HOST_OOM": "1"},
    )


def test_host_register(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        buf = bytearray(b"z" * 100)
        reg = drv.host_register(buf, device_map=True)
        assert reg.size == 100 and reg.device_pointer == reg.ptr
        expect(BufferError, buf.extend, b"x")      # held while registered: cannot resize
        e = expect(drv.CudaError, drv.host_register, buf)
        assert e.code == 712 and e.api == "cuMemHostRegister"
        reg.close(); reg.close()
        assert reg.closed
        buf.extend(b"x")                           # released
        m = str(expect(TypeError, drv.host_register, b"read-only"))
        assert "writable" in m
        ro = drv.host_register(b"read-only bytes", read_only=True)
        with drv.host_register(array.array("i", [1, 2, 3])) as r2:
            assert r2.size == 12
        del ro; gc.collect()
        expect(ValueError, drv.host_register, bytearray())
        ctx.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """
    )


def test_memcpy_2d_peer_and_memset16(run: Runner) -> None:
    run(
        """
        c0 = use_device(0)
        c1 = drv.Device(1).primary_context()
        rows, width, hp, dp = 5, 7, 10, 16
        host = bytes(range(rows * hp))
        d = drv.mem_alloc(rows * dp)
        drv.memcpy_2d(d, dp, host, hp, width, rows)
        out = bytearray(rows * width)
        drv.memcpy_2d_async(out, width, d, dp, width, rows, 0)
        assert bytes(out) == b"".join(host[r*hp:r*hp+width] for r in range(rows))
        assert counter("fake_memcpy2d_calls") == 2
        assert "too small" in str(expect(ValueError, drv.memcpy_2d, d, dp, b"x" * 10, hp, width, rows))
        assert "width" in str(expect(ValueError, drv.memcpy_2d, d, 4, host, hp, width, rows))
        e = expect(drv.CudaInvalidValueError, drv.memcpy_2d, d, 64, host, hp, width, rows)
        assert e.api == "cuMemcpy2D"                # device side out of range
        drv.memcpy_2d(d, dp, host, hp, 0, rows)     # empty: no call
        assert counter("fake_memcpy2d_calls") == 3 - 1
        c1.set_current()
        q = drv.mem_alloc(32)
        c0.set_current()
        drv.memcpy_peer(q, c1, d, c0, 32)
        drv.memcpy_peer_async(q, c1.handle, d, c0.handle, 16, 0)
        back = bytearray(32); drv.memcpy_dtoh(back, q)
        assert bytes(back[:7]) == host[:7]
        assert counter("fake_peer_copies") == 2
        expect(drv.CudaInvalidContextError, drv.memcpy_peer, q, 12345, d, c0, 8)
        drv.memset_d16_async(d, 0xBEEF, 4, 0)
        drv.memset_d16_async(d + 8, -2, 1, 0)
        b = bytearray(10); drv.memcpy_dtoh(b, d)
        assert b == struct.pack("<4HH", *([0xBEEF] * 4), 0xFFFE)
        expect(ValueError, drv.memset_d16_async, d, 1 << 16, 1, 0)
        expect(drv.CudaInvalidValueError, drv.memset_d16_async, d + 1, 0, 1, 0)
        drv.mem_free(d); drv.mem_free(q); c1.close(); c0.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """
    )


def test_host_functions(run: Runner) -> None:
    run(
        """
        import weakref
        ctx = use_device(0)
        s = drv.Stream()
        seen = []
        sys.unraisablehook = lambda u: seen.append(u.exc_value)
        order = []
        class Cb:
            def __init__(self, i): self.i = i
            def __call__(self): order.append((self.i, threading.get_ident()))
        refs = []
        for i in range(5):
            cb = Cb(i); refs.append(weakref.ref(cb))
            drv.launch_host_func(s, cb)
            del cb
        def boom():
            raise KeyError("from the driver thread")
        drv.launch_host_func(s.handle, boom)
        s.synchronize()
        gc.collect()
        assert sorted(i for i, _ in order) == [0, 1, 2, 3, 4]
        assert all(t != threading.get_ident() for _, t in order)
        assert all(r() is None for r in refs)          # released after running
        assert len(seen) == 1 and isinstance(seen[0], KeyError)
        assert counter("fake_host_funcs_run") == 6
        expect(TypeError, drv.launch_host_func, s, 42)
        s.close(); ctx.close()
        assert outstanding() == 0
        """
    )


def test_host_function_launch_failure_releases_callable(run: Runner) -> None:
    run(
        """
        import weakref
        ctx = use_device(0)
        class Cb:
            def __call__(self): pass
        cb = Cb(); ref = weakref.ref(cb)
        e = expect(drv.CudaInvalidValueError, drv.launch_host_func, 0, cb)
        assert e.api == "cuLaunchHostFunc"
        del cb, e; gc.collect()           # the traceback held the frame that held cb
        assert ref() is None
        ctx.close()
        """,
        env={"FAKE_CUDA_HOSTFUNC_ERROR": "1"},
    )


def test_stream_capture_and_graph(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        m = drv.Module.load_data(b"FAKECUBIN")
        f = m.get_function("add_f32")
        n = 8
        a = array.array("f", [1.0] * n)
        pa, pc = drv.mem_alloc(4 * n), drv.mem_alloc(4 * n)
        drv.memcpy_htod(pa, a); drv.memset_d8_async(pc, 0, 4 * n, 0)
        s = drv.Stream()
        assert drv.stream_capture_status(s) == drv.CaptureStatus.NONE
        drv.stream_begin_capture(s, drv.CaptureMode.RELAXED)
        assert drv.stream_capture_status(s) == drv.CaptureStatus.ACTIVE
        drv.Launcher(f, 1, 32, "PPPi", stream=s)(pa, pa, pc, n)
        drv.launch_kernel(f, 1, 32, [ctypes.c_uint64(pc), ctypes.c_uint64(pa),
                                     ctypes.c_uint64(pc), ctypes.c_int32(n)], 0, s)
        assert counter("fake_launch_count") == 0     # captured, not run
        e = expect(drv.CudaStreamCaptureError, s.synchronize)
        assert e.code == 900
        g = drv.stream_end_capture(s)
        assert g.node_count == 2 and drv.stream_capture_status(s) == 0
        exe = g.instantiate()
        g.close()                                    # the exec does not need the graph
        exe.launch(s); exe.launch(s.handle)
        s.synchronize()
        c = array.array("f", [0.0] * n); drv.memcpy_dtoh(c, pc)
        assert list(c) == [3.0] * n                  # c = a + a; c = c + a
        assert counter("fake_launch_count") == 4
        expect(ValueError, lambda: g.node_count)
        exe.close(); exe.close()
        expect(ValueError, exe.launch, s)
        e = expect(drv.CudaStreamCaptureError, drv.stream_begin_capture, 0)
        expect(ValueError, drv.stream_begin_capture, s, 3)
        e = expect(drv.CudaError, drv.stream_end_capture, s)   # not capturing
        assert e.code == 401
        with drv.Stream() as s2:
            drv.stream_begin_capture(s2)
            with drv.stream_end_capture(s2) as g2, g2.instantiate() as e2:
                assert g2.node_count == 0
            drv.stream_begin_capture(s2)
            g3 = drv.stream_end_capture(s2)
            e3 = g3.instantiate()
            del g3, e3; gc.collect()                 # GC destroys both
        drv.mem_free(pa); drv.mem_free(pc); s.close(); m.close(); ctx.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """
    )


def test_graph_fuses_lines_of_small_kernels(run: Runner) -> None:
    run(
        """
        import struct
        ctx = use_device(0)
        m = drv.Module.load_data(b"FAKECUBIN")
        ew, cast, noop = (m.get_function(n) for n in ("small_ew_f32", "small_cast", "noop"))
        program = m.get_function("small_program")
        s = drv.Stream()
        ew_l = drv.Launcher(ew, 3, 256, "iiPiPiqPiqPiqffq", stream=s)
        cast_l = drv.Launcher(cast, 2, 256, "PiPiqq", stream=s)
        noop_l = drv.Launcher(noop, 1, 32, "", stream=s)
        drv.stream_begin_capture(s, drv.CaptureMode.RELAXED)
        for k in range(3):                 # a line of three ...
            ew_l(k, 7, 0x1000 + k, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1.5, 2.5, 100 + k)
        noop_l()                           # ... broken by a kernel the table does not name
        cast_l(0x2000, 1, 0x3000, 2, 1, 33)
        cast_l(0x2008, 1, 0x3008, 2, 0, 44)
        noop_l()
        ew_l(9, 9, 0x4000, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0.0, 5)  # a line of one: kept
        g = drv.stream_end_capture(s)
        assert g.node_count == 8
        sizes = []
        def alloc(nbytes):
            sizes.append(nbytes)
            p = drv.mem_alloc(nbytes)
            blocks.append(p)
            return p
        blocks = []
        kinds = {ew.handle: (0, 16), cast.handle: (3, 6)}
        expect(TypeError, g.fuse_small_steps, {ew.handle: 0}, program.handle, 256, alloc)
        expect(ValueError, g.fuse_small_steps, kinds, program.handle, 0, alloc)
        assert g.fuse_small_steps(kinds, program.handle, 256, alloc) == (5, 2)
        assert g.node_count == 8 - 5 + 2 and sizes == [5 * 136]
        raw = bytearray(5 * 136)
        drv.memcpy_dtoh(raw, blocks[0])
        steps = [raw[i * 136:(i + 1) * 136] for i in range(5)]
        assert [struct.unpack_from("<iI", st) for st in steps] == [(0, 3)] * 3 + [(3, 2)] * 2
        for k in range(3):                 # the fake's packed parameter layout
            kind, op, out = struct.unpack_from("<iiQ", steps[k], 8)
            sa, sb, n = struct.unpack_from("<ffq", steps[k], 8 + 80)
            assert (kind, op, out, sa, sb, n) == (k, 7, 0x1000 + k, 1.5, 2.5, 100 + k)
        assert struct.unpack_from("<QiQiqq", steps[4], 8) == (0x2008, 1, 0x3008, 2, 0, 44)
        assert g.fuse_small_steps(kinds, program.handle, 256, alloc) == (0, 0)  # nothing left
        with g.instantiate() as exe:       # runs: program, noop, program, noop, ew
            before = counter("fake_launch_count")
            exe.launch(s); s.synchronize()
            assert counter("fake_launch_count") - before == 5
        g.close()
        for p in blocks: drv.mem_free(p)
        s.close(); m.close(); ctx.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """
    )


def test_graph_fusion_needs_a_cuda_12_4_driver(run: Runner, fake_driver_old: Path) -> None:
    run(
        """
        ctx = use_device(0)
        m = drv.Module.load_data(b"FAKECUBIN")
        ew = m.get_function("small_ew_f32")
        s = drv.Stream()
        drv.stream_begin_capture(s, drv.CaptureMode.RELAXED)
        for _ in range(2):
            drv.Launcher(ew, 1, 256, "iiPiPiqPiqPiqffq", stream=s)(
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0.0, 1)
        with drv.stream_end_capture(s) as g:
            called = []
            assert g.fuse_small_steps({ew.handle: (0, 16)}, ew.handle, 256,
                                      called.append) == (0, 0)
            assert called == [] and g.node_count == 2
        s.close(); m.close(); ctx.close()
        """,
        lib=fake_driver_old,
    )


def test_peer_access(run: Runner) -> None:
    run(
        """
        c0, c1 = drv.Device(0).primary_context(), drv.Device(1).primary_context()
        assert c0.enable_peer_access(c1) is True
        assert c0.enable_peer_access(c1) is False   # already enabled: not an error
        assert c1.enable_peer_access(c0) is True
        e = expect(drv.CudaInvalidDeviceError, c0.enable_peer_access, c0)
        assert e.api == "cuCtxEnablePeerAccess"
        assert drv.current_context_handle() == 0    # the calls did not leave a context current
        c1.close()
        expect(ValueError, c0.enable_peer_access, c1)
        c0.close()
        assert outstanding() == 0
        """
    )


def test_occupancy_and_launch_ex(run: Runner) -> None:
    run(
        """
        ctx = use_device(1)
        m = drv.Module.load_data(b"FAKECUBIN")
        f = m.get_function("noop")
        assert f.max_active_blocks_per_multiprocessor(256) == 8
        assert f.max_active_blocks_per_multiprocessor(1024, 100 * 1024) == 2
        assert f.max_potential_block_size() == (132 * 2, 1024)
        assert f.max_potential_block_size(0, 256) == (132 * 8, 256)
        expect(drv.CudaInvalidValueError, f.max_active_blocks_per_multiprocessor, 2048)
        expect(ValueError, f.max_active_blocks_per_multiprocessor, 0)
        drv.launch_kernel_ex(f, 4, 32, [])
        assert counter("fake_last_num_attrs") == 0 and counter("fake_launch_count") == 1
        drv.launch_kernel_ex(f, (4, 2), 32, [], 0, 0, cluster=(2, 1, 1), cooperative=True,
                             priority=-3)
        assert counter("fake_last_num_attrs") == 3
        assert list((ctypes.c_uint * 3).in_dll(FAKE, "fake_last_cluster")) == [2, 1, 1]
        assert counter("fake_last_cooperative") == 1 and counter("fake_last_priority") == -3
        assert list((ctypes.c_uint * 3).in_dll(FAKE, "fake_last_grid")) == [4, 2, 1]
        expect(drv.CudaInvalidValueError, drv.launch_kernel_ex, f, 3, 32, [], cluster=2)
        ctx.close(); ctx = use_device(0)            # compute capability 8.0: no clusters
        e = expect(drv.CudaUnsupportedError, drv.launch_kernel_ex, f, 4, 32, [], cluster=2)
        assert e.code == 801 and e.api == "cuLaunchKernelEx"
        m.close(); ctx.close()
        assert outstanding() == 0
        """
    )


def test_launcher_packs_arguments(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        m = drv.Module.load_data(b"FAKECUBIN")
        f = m.get_function("record_args")    # (u64, f32, i64, u8, f64)
        s = drv.Stream()
        L = drv.Launcher(f, (2, 3), 64, "Pfqbd", 128, s)
        assert L.grid == (2, 3, 1) and L.block == (64, 1, 1) and L.shared_mem == 128
        assert L.function is f and L.stream is s and L.arg_types == "Pfqbd"
        assert "record_args" in repr(L)
        L(0x1122334455667788, 0.5, -7, -3, 2.25)
        expected = (struct.pack("<Q", 0x1122334455667788) + struct.pack("<f", 0.5) +
                    struct.pack("<q", -7) + struct.pack("<b", -3) + struct.pack("<d", 2.25))
        n = counter("fake_last_params_len")
        got = bytes((ctypes.c_ubyte * 256).in_dll(FAKE, "fake_last_params"))[:n]
        assert got == expected, (got, expected)
        assert counter("fake_last_stream", ctypes.c_uint64) == s.handle
        assert counter("fake_last_shared", ctypes.c_uint) == 128
        L(None, 1, True, 0, 1)                         # None pointer, int->float, bool->int
        got = bytes((ctypes.c_ubyte * 256).in_dll(FAKE, "fake_last_params"))[:n]
        assert got[:8] == bytes(8) and got[8:12] == struct.pack("<f", 1.0)
        def msg(exc, *a, **kw):
            return str(expect(exc, L, *a, **kw))
        assert "expects 5" in msg(TypeError, 1, 2.0)
        assert "positional" in msg(TypeError, 1, 2.0, 3, 4, 5.0, x=1)
        assert "argument 0" in msg(TypeError, "p", 1.0, 1, 1, 1.0)
        assert "argument 0" in msg(TypeError, -1, 1.0, 1, 1, 1.0)
        assert "argument 1" in msg(TypeError, 1, "x", 1, 1, 1.0)
        assert "out of range" in msg(ValueError, 1, 1.0, 1, 128, 1.0)
        assert "out of range" in msg(ValueError, 1, 1.0, 1 << 63, 1, 1.0)
        assert counter("fake_launch_count") == 2
        for bad in ("Px", "P" * 65):
            expect(ValueError, drv.Launcher, f, 1, 1, bad)
        expect(TypeError, drv.Launcher, "f", 1, 1, "P")
        expect(ValueError, drv.Launcher, f, 0, 1, "P")
        noop = m.get_function("noop")
        L0 = noop.prepare(1, 1, "")
        L0()
        assert counter("fake_last_stream", ctypes.c_uint64) == 0
        Lx = drv.Launcher(noop, 4, 32, "", cluster=2)  # attributes -> cuLaunchKernelEx
        e = expect(drv.CudaUnsupportedError, Lx)       # device 0 has no clusters
        assert e.api == "cuLaunchKernelEx"
        Lp = drv.Launcher(noop, 4, 32, "", stream=drv.STREAM_PER_THREAD, priority=-1)
        Lp()
        assert counter("fake_last_priority") == -1 and counter("fake_last_stream", ctypes.c_uint64) == 2
        # the launcher keeps the stream and the module alive; closing them is checked per call
        del f; gc.collect()
        s.close()
        expect(ValueError, L, 1, 1.0, 1, 1, 1.0)
        m.close()
        expect(ValueError, L0)
        del L, L0, Lx, Lp; gc.collect()
        ctx.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """
    )


def test_launcher_launch_takes_grid_and_stream_per_call(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        m = drv.Module.load_data(b"FAKECUBIN")
        f = m.get_function("record_args")    # (u64, f32, i64, u8, f64)
        s = drv.Stream()
        L = drv.Launcher(f, (1, 3), 64, "Pfqbd", 16)
        L.launch(7, s.handle, 5, 0.25, -2, 1, 1.5)
        assert tuple((ctypes.c_uint * 3).in_dll(FAKE, "fake_last_grid")) == (7, 3, 1)
        assert counter("fake_last_stream", ctypes.c_uint64) == s.handle
        assert counter("fake_last_shared", ctypes.c_uint) == 16
        n = counter("fake_last_params_len")
        got = bytes((ctypes.c_ubyte * 256).in_dll(FAKE, "fake_last_params"))[:n]
        assert got == (struct.pack("<Q", 5) + struct.pack("<f", 0.25) + struct.pack("<q", -2)
                       + struct.pack("<b", 1) + struct.pack("<d", 1.5))
        L.launch(2, 0, 5, 0.25, -2, 1, 1.5)          # 0: the legacy default stream
        assert counter("fake_last_stream", ctypes.c_uint64) == 0
        assert L.grid == (1, 3, 1)                    # the prepared grid is unchanged
        def msg(exc, *a):
            return str(expect(exc, L.launch, *a))
        assert "grid_x" in msg(ValueError, 0, 0, 5, 0.25, -2, 1, 1.5)
        assert "grid_x" in msg(ValueError, "x", 0, 5, 0.25, -2, 1, 1.5)
        assert "stream" in msg(TypeError, 1, -1, 5, 0.25, -2, 1, 1.5)
        assert "too few" in msg(TypeError, 1)
        assert "expects 5" in msg(TypeError, 1, 0, 5)
        assert counter("fake_launch_count") == 2
        # programmatic=True: programmatic dependent launch through cuLaunchKernelEx (sm_90+)
        noop = m.get_function("noop")
        Lp = drv.Launcher(noop, 1, 32, "", programmatic=True)
        e = expect(drv.CudaUnsupportedError, Lp.launch, 3, 0)   # device 0 is sm_80
        assert e.api == "cuLaunchKernelEx"
        ctx1 = use_device(1)
        m1 = drv.Module.load_data(b"FAKECUBIN")
        Lp1 = drv.Launcher(m1.get_function("noop"), 1, 32, "", programmatic=True)
        Lp1.launch(3, 0)
        assert counter("fake_last_programmatic") == 1 and counter("fake_last_num_attrs") == 1
        assert tuple((ctypes.c_uint * 3).in_dll(FAKE, "fake_last_grid")) == (3, 1, 1)
        del L, Lp, Lp1; gc.collect()
        m1.close(); ctx1.close()
        m.close(); s.close(); ctx.close()
        assert outstanding() == 0
        """
    )


def test_launcher_from_many_threads_and_launch_failure(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        m = drv.Module.load_data(b"FAKECUBIN")
        L = drv.Launcher(m.get_function("noop"), 1, 1, "")
        errors = []
        def worker():
            try:
                ctx.set_current()
                for _ in range(2000):
                    L()
            except Exception as e:
                errors.append(e)
        ts = [threading.Thread(target=worker) for _ in range(8)]
        [t.start() for t in ts]; [t.join() for t in ts]
        assert not errors, errors
        assert counter("fake_launch_count") == 16000
        m.close(); ctx.close()
        """
    )
    run(
        """
        ctx = use_device(0)
        m = drv.Module.load_data(b"FAKECUBIN")
        f = m.get_function("noop")
        e = expect(drv.CudaLaunchError, drv.Launcher(f, 1, 1, ""))
        assert e.code == 719 and e.api == "cuLaunchKernel"
        e = expect(drv.CudaLaunchError, drv.launch_kernel, f, 1, 1, [])
        e = expect(drv.CudaLaunchError, drv.launch_kernel_ex, f, 1, 1, [], priority=0)
        assert e.api == "cuLaunchKernelEx"
        m.close(); ctx.close()
        assert outstanding() == 0
        """,
        env={"FAKE_CUDA_LAUNCH_ERROR": "719"},
    )


def test_event_record_fast_path(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        s = drv.Stream()
        e = drv.Event()
        e.record(); e.record(s); e.record(s.handle); e.record(stream=s); e.record(None)
        expect(TypeError, e.record, s, s)
        expect(TypeError, e.record, strm=s)
        expect(ValueError, e.record, -1)
        expect(TypeError, e.record, "s")
        expect(drv.CudaInvalidHandleError, e.record, 0xDEAD)
        s.close()
        expect(ValueError, e.record, s)           # closed stream
        e.close()
        expect(ValueError, e.record)
        expect(TypeError, drv.Event.record, 5)    # not an Event
        assert s.closed
        ctx.close()
        assert outstanding() == 0
        """
    )


def test_stream_priority_and_flags(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        s = drv.Stream(non_blocking=False, priority=-2)
        assert s.priority == -2 and s.non_blocking is False
        assert drv.Stream().non_blocking is True
        s.close(); gc.collect(); ctx.close()
        assert outstanding() == 0
        """
    )


def test_green_contexts(run: Runner) -> None:
    run(
        """
        assert drv.green_contexts_supported()
        ctx = use_device(1)
        whole = drv.device_sm_resource(1)
        assert whole.sm_count == 132 and whole.device == 1
        assert whole.min_partition_size == 8 and whole.coscheduled_alignment == 8
        groups, rest = whole.split(3, 12)          # rounded up to 16 (granularity 8)
        assert [g.sm_count for g in groups] == [16, 16, 16] and rest.sm_count == 84
        groups2, rest2 = whole.split(100, 32)      # fewer groups fit
        assert len(groups2) == 4 and rest2.sm_count == 4
        expect(drv.CudaInvalidValueError, whole.split, 1, 1000)
        g = drv.GreenContext(groups[0])
        assert g.sm_count == 16 and g.device == 1 and g.handle and g.context_handle
        assert counter("fake_outstanding_green", ctypes.c_longlong) == 1
        s = g.create_stream(priority=-1)
        g.set_current()
        assert drv.current_context_handle() == g.context_handle
        m = drv.Module.load_data(b"FAKECUBIN")     # made in the green context
        ev = drv.Event()
        p = drv.mem_alloc(16)
        drv.memset_d8_async(p, 7, 16, s)
        drv.launch_kernel(m.get_function("noop"), 1, 1, [], 0, s)
        s.synchronize()
        drv.mem_free(p)
        ctx.set_current()
        g.close(); g.close()
        assert g.closed
        expect(ValueError, g.create_stream)
        # the stream, module and event still hold the green context
        assert counter("fake_outstanding_green", ctypes.c_longlong) == 1
        s.close(); m.close()
        assert counter("fake_outstanding_green", ctypes.c_longlong) == 1
        del ev; gc.collect()
        assert counter("fake_outstanding_green", ctypes.c_longlong) == 0
        with drv.GreenContext(groups[1]) as g2:
            assert g2.sm_resource().sm_count == 16
        ctx.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """
    )


def test_tensor_map(run: Runner) -> None:
    run(
        """
        ctx = use_device(1)
        p = drv.mem_alloc(64 * 64 * 4)
        t = drv.tensor_map_encode_tiled(drv.TensorMapDataType.FLOAT32, p, (64, 64), (256,),
                                        (16, 8), swizzle=drv.TensorMapSwizzle.SWIZZLE_64B)
        assert isinstance(t, bytes) and len(t) == 128
        w = struct.unpack("<16Q", t)
        assert w[0] == p and w[1] == (2 << 32) | 7 and w[2:4] == (64, 64) and w[7:9] == (16, 8)
        t1 = drv.tensor_map_encode_tiled(0, p, [4096], [], [256], [1])
        assert struct.unpack("<Q", t1[:8])[0] == p
        e = expect(drv.CudaInvalidValueError, drv.tensor_map_encode_tiled, 7, p + 4, (64,), (), (16,))
        assert e.api == "cuTensorMapEncodeTiled"
        expect(drv.CudaInvalidValueError, drv.tensor_map_encode_tiled, 7, p, (64, 64), (100,), (16, 8))
        assert "global_strides" in str(expect(ValueError, drv.tensor_map_encode_tiled, 7, p, (64, 64), (), (16, 8)))
        assert "box_dim" in str(expect(ValueError, drv.tensor_map_encode_tiled, 7, p, (64,), (), (16, 8)))
        expect(ValueError, drv.tensor_map_encode_tiled, 7, p, (), (), ())
        expect(ValueError, drv.tensor_map_encode_tiled, 7, p, (1,) * 6, (16,) * 5, (1,) * 6)
        expect(TypeError, drv.tensor_map_encode_tiled, 7, p, 64, (), (16,))
        drv.mem_free(p); ctx.close()
        """
    )


def test_old_driver_missing_entry_points(run: Runner, fake_driver_old: Path) -> None:
    run(
        """
        assert drv.driver_version() == 12020
        info = drv._driver._loader_info()
        missing = set(info["missing_symbols"])
        assert {"cuLaunchKernelEx", "cuGreenCtxCreate", "cuTensorMapEncodeTiled"} <= missing
        assert drv.is_available()                   # missing new symbols: no import/init error
        assert drv.green_contexts_supported() is False
        ctx = use_device(1)
        p = drv.mem_alloc(64)                       # the rest works
        m = drv.Module.load_data(b"FAKECUBIN")
        f = m.get_function("noop")
        drv.launch_kernel(f, 1, 1, [])
        drv.Launcher(f, 1, 1, "")()
        e = expect(drv.CudaUnsupportedError, drv.device_sm_resource, 1)
        assert "12.2 (12020)" in str(e) and "12.5" in str(e) and "cuGreenCtxCreate" in str(e), str(e)
        assert e.code == 801 and isinstance(e, drv.CudaError)
        e = expect(drv.CudaUnsupportedError, drv.launch_kernel_ex, f, 1, 1, [], priority=1)
        assert e.api == "cuLaunchKernelEx" and "12.2 (12020)" in str(e), str(e)
        e = expect(drv.CudaUnsupportedError, drv.Launcher(f, 1, 1, "", cooperative=True))
        assert "cuLaunchKernelEx" in str(e)
        e = expect(drv.CudaUnsupportedError, drv.tensor_map_encode_tiled, 7, p, (16,), (), (16,))
        assert "does not provide cuTensorMapEncodeTiled" in str(e), str(e)
        m.close(); drv.mem_free(p); ctx.close()
        assert outstanding() == 0
        """,
        lib=fake_driver_old,
    )


def test_green_context_needs_new_enough_driver(run: Runner) -> None:
    # A driver that reports 12.4 but lacks cuGreenCtxStreamCreate (12.5).
    run(
        """
        assert drv.green_contexts_supported() is False
        e = expect(drv.CudaUnsupportedError, drv.device_sm_resource, 0)
        assert "12.4 (12040)" in str(e) and "12.5+" in str(e), str(e)
        """,
        env={"FAKE_CUDA_DRIVER_VERSION": "12040", "FAKE_CUDA_GPA_HIDE": "cuGreenCtxStreamCreate"},
    )
