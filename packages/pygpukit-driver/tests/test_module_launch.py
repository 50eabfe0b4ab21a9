"""Modules, functions and kernel launches against the fake driver."""

from __future__ import annotations

from collections.abc import Callable

Runner = Callable[..., str]


def test_module_load_and_lookup(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        m = drv.Module.load_data(b"FAKECUBIN\\x00binary")
        assert counter("fake_last_jit_options") == 4
        assert m.info_log == "fake JIT: compiled 3 functions", m.info_log
        f = m.get_function("add_f32")
        assert f.name == "add_f32" and f.handle != 0
        assert f.get_attribute(drv.FUNC_ATTRIBUTE_NUM_REGS) == 32
        assert f.get_attribute(drv.FunctionAttribute.MAX_THREADS_PER_BLOCK) == 1024
        f.set_attribute(drv.FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000)
        assert f.get_attribute(drv.FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) == 100000
        e = expect(drv.CudaNotFoundError, m.get_function, "missing_kernel")
        assert e.code == 500 and e.name == "CUDA_ERROR_NOT_FOUND"
        assert e.api == "cuModuleGetFunction" and "missing_kernel" in str(e), str(e)
        ptr, size = m.get_global("fake_global")
        assert size == 8
        out = bytearray(8); drv.memcpy_dtoh(out, ptr)
        assert struct.unpack("<Q", out)[0] == 0x1122334455667788
        e = expect(drv.CudaNotFoundError, m.get_global, "nope")
        assert "nope" in str(e)
        # PTX text is NUL-terminated by the binding; bytearray/memoryview images work too
        m2 = drv.Module.load_data(bytearray(b"FAKEPTX .version 8.0"))
        m3 = drv.Module.load_data(memoryview(b"FAKEPTX"))
        m.close(); m.close(); m2.close(); m3.close()
        assert m.closed
        expect(ValueError, m.get_function, "add_f32")
        expect(ValueError, f.get_attribute, 4)       # its module was unloaded
        expect(ValueError, drv.Module.load_data, b"")
        expect(TypeError, drv.Module.load_data, "FAKECUBIN")
        ctx.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """
    )


def test_module_load_error_carries_jit_log(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        e = expect(drv.CudaInvalidImageError, drv.Module.load_data, b".version 8.0\\nbogus")
        assert e.code == 218 and e.name == "CUDA_ERROR_INVALID_PTX"
        assert e.api == "cuModuleLoadDataEx"
        assert "JIT error log" in str(e)
        assert "Unresolved extern function 'fake_missing_fn'" in str(e)
        assert "fake_missing_fn" in e.detail
        ctx.close()
        assert outstanding() == 0          # the failed load did not keep a context retain
        """
    )


def test_launch_add_kernel(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        m = drv.Module.load_data(b"FAKECUBIN")
        f = m.get_function("add_f32")
        n = 1000
        a = array.array("f", [float(i) for i in range(n)])
        b = array.array("f", [0.5] * n)
        pa, pb, pc = (drv.mem_alloc(4 * n) for _ in range(3))
        drv.memcpy_htod(pa, a); drv.memcpy_htod(pb, b)
        s = drv.Stream()
        drv.launch_kernel(f, (n + 255) // 256, 256,
                          [ctypes.c_uint64(pa), ctypes.c_uint64(pb), ctypes.c_uint64(pc),
                           ctypes.c_int32(n)], stream=s)
        s.synchronize()
        c = array.array("f", [0.0] * n)
        drv.memcpy_dtoh(c, pc)
        assert list(c) == [x + 0.5 for x in a]
        assert list((ctypes.c_uint * 3).in_dll(FAKE, "fake_last_grid")) == [4, 1, 1]
        assert list((ctypes.c_uint * 3).in_dll(FAKE, "fake_last_block")) == [256, 1, 1]
        assert counter("fake_last_stream", ctypes.c_uint64) == s.handle
        for p in (pa, pb, pc): drv.mem_free(p)
        s.close(); m.close(); ctx.close()
        assert outstanding() == 0
        """
    )


def test_launch_passes_param_bytes(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        m = drv.Module.load_data(b"FAKECUBIN")
        f = m.get_function("record_args")
        args = [ctypes.c_uint64(0x1122334455667788), ctypes.c_float(0.5), struct.pack("q", -7),
                ctypes.c_uint8(9), memoryview(struct.pack("d", 2.25))]
        drv.launch_kernel(f, (2, 3, 4), [8, 4], args, shared_mem=1024, stream=drv.STREAM_LEGACY)
        expected = (struct.pack("<Q", 0x1122334455667788) + struct.pack("<f", 0.5) +
                    struct.pack("<q", -7) + bytes([9]) + struct.pack("<d", 2.25))
        n = counter("fake_last_params_len")
        got = bytes((ctypes.c_ubyte * 256).in_dll(FAKE, "fake_last_params"))[:n]
        assert got == expected, (got, expected)
        assert list((ctypes.c_uint * 3).in_dll(FAKE, "fake_last_grid")) == [2, 3, 4]
        assert list((ctypes.c_uint * 3).in_dll(FAKE, "fake_last_block")) == [8, 4, 1]
        assert counter("fake_last_shared", ctypes.c_uint) == 1024
        assert counter("fake_last_stream", ctypes.c_uint64) == 1
        noop = m.get_function("noop")
        drv.launch_kernel(noop, 1, 1, [])
        drv.launch_kernel(noop, 1, 1, ())
        assert counter("fake_launch_count") == 3
        # the driver's own launch checks come back as CudaError
        e = expect(drv.CudaInvalidValueError, drv.launch_kernel, noop, 1, (1024, 2), [])
        assert e.api == "cuLaunchKernel"
        m.close(); ctx.close()
        """
    )


def test_launch_argument_validation(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        m = drv.Module.load_data(b"FAKECUBIN")
        f = m.get_function("noop")
        def msg(exc_type, *a, **kw):
            return str(expect(exc_type, drv.launch_kernel, *a, **kw))
        assert "grid" in msg(ValueError, f, 0, 1, [])
        assert "grid[1]" in msg(ValueError, f, (1, -2), 1, [])
        assert "grid" in msg(ValueError, f, (1, 1, 1, 1), 1, [])
        assert "grid" in msg(ValueError, f, (), 1, [])
        assert "grid" in msg(TypeError, f, "1", 1, [])
        assert "grid" in msg(TypeError, f, 1.0, 1, [])
        assert "block" in msg(ValueError, f, 1, 1 << 32, [])
        assert "block[0]" in msg(TypeError, f, 1, (None,), [])
        assert "args" in msg(TypeError, f, 1, 1, 5)
        assert "args" in msg(TypeError, f, 1, 1, b"abc")
        assert "args[1]" in msg(TypeError, f, 1, 1, [ctypes.c_int(1), 2])
        assert "args[0]" in msg(ValueError, f, 1, 1, [b""])
        assert "shared_mem" in msg(ValueError, f, 1, 1, [], shared_mem=-1)
        assert "stream" in msg(TypeError, f, 1, 1, [], stream="x")
        expect(TypeError, drv.launch_kernel, "f", 1, 1, [])
        assert counter("fake_launch_count") == 0
        m.close()
        expect(ValueError, drv.launch_kernel, f, 1, 1, [])   # module closed
        ctx.close()
        """
    )


def test_function_keeps_module_alive(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        f = drv.Module.load_data(b"FAKECUBIN").get_function("noop")
        gc.collect()
        assert counter("fake_outstanding_modules", ctypes.c_longlong) == 1
        drv.launch_kernel(f, 1, 1, [])
        del f; gc.collect()
        assert counter("fake_outstanding_modules", ctypes.c_longlong) == 0
        ctx.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """
    )
