"""Allocation, copies, memset, OOM and argument checking against the fake driver."""

from __future__ import annotations

from collections.abc import Callable

Runner = Callable[..., str]


def test_round_trip_all_buffer_kinds(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        data = bytes(range(256)) * 4
        p = drv.mem_alloc(len(data))
        for src in (data, bytearray(data), memoryview(data), array.array("B", data)):
            drv.memset_d8_async(p, 0, len(data), 0)
            drv.memcpy_htod(p, src)
            out = bytearray(len(data))
            drv.memcpy_dtoh(out, p)
            assert bytes(out) == data
        floats = array.array("f", [1.5, -2.0, 3.25])
        drv.memcpy_htod(p, floats)
        back = array.array("f", [0.0] * 3)
        drv.memcpy_dtoh(back, p)
        assert back == floats
        q = drv.mem_alloc(1024)
        drv.memcpy_dtod(q, p, 1024)
        out = bytearray(1024); drv.memcpy_dtoh(memoryview(out), q)
        assert bytes(out[:12]) == floats.tobytes()
        drv.memcpy_htod(p, b"")                     # empty copies are no-ops
        drv.mem_free(p); drv.mem_free(q)
        ctx.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """
    )


def test_async_copies_and_memset(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        s = drv.Stream()
        p = drv.mem_alloc(64); q = drv.mem_alloc(64)
        drv.memcpy_htod_async(p, b"x" * 64, s.handle)
        drv.memcpy_dtod_async(q, p, 64, s)          # a Stream object is accepted too
        out = bytearray(64)
        drv.memcpy_dtoh_async(out, q, s.handle)
        s.synchronize()
        assert out == b"x" * 64
        drv.memset_d8_async(p, 0xAB, 64, drv.STREAM_PER_THREAD)
        drv.memcpy_dtoh(out, p); assert out == b"\\xab" * 64
        drv.memset_d32_async(p, 0x01020304, 16, 0)
        drv.memcpy_dtoh(out, p); assert out == struct.pack("<I", 0x01020304) * 16
        drv.memset_d32_async(p, -1, 16, 0)          # two's complement
        drv.memcpy_dtoh(out, p); assert out == b"\\xff" * 64
        e = expect(drv.CudaInvalidHandleError, drv.memcpy_htod_async, p, b"x", 0xDEAD)
        assert e.api == "cuMemcpyHtoDAsync"
        drv.mem_free(p); drv.mem_free(q); s.close(); ctx.close()
        assert outstanding() == 0
        """
    )


def test_stream_ordered_alloc_and_free(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        s = drv.Stream()
        p = drv.mem_alloc_async(256, s.handle)
        drv.memcpy_htod_async(p, bytes(range(256)), s)
        out = bytearray(256)
        drv.memcpy_dtoh_async(out, p, s)
        s.synchronize()
        assert bytes(out) == bytes(range(256))
        assert outstanding() >= 1
        drv.mem_free_async(p, s)
        e = expect(drv.CudaInvalidValueError, drv.mem_free_async, p, s)   # double free
        assert e.api == "cuMemFreeAsync"
        e = expect(drv.CudaInvalidHandleError, drv.mem_alloc_async, 16, 0xDEAD)
        assert e.api == "cuMemAllocAsync"
        expect(ValueError, drv.mem_alloc_async, 0, s)
        s.close(); ctx.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 1
        """
    )


def test_mem_get_info(run: Runner) -> None:
    run(
        """
        ctx = use_device(1)
        free0, total = drv.mem_get_info()
        assert total == 80 << 30 and free0 == total
        p = drv.mem_alloc(1 << 20)
        assert drv.mem_get_info() == (total - (1 << 20), total)
        drv.mem_free(p); ctx.close()
        """
    )


def test_out_of_memory(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        e = expect(drv.CudaOutOfMemoryError, drv.mem_alloc, 1 << 50)
        assert isinstance(e, MemoryError) and isinstance(e, drv.CudaError)
        assert (e.code, e.name, e.description, e.api) == (
            2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory", "cuMemAlloc")
        assert str(e) == "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"
        p = drv.mem_alloc(1000)                      # under the injected limit
        expect(MemoryError, drv.mem_alloc, 1001)     # over FAKE_CUDA_OOM_BYTES
        drv.mem_free(p); ctx.close()
        assert outstanding() == 0
        """,
        env={"FAKE_CUDA_OOM_BYTES": "1000"},
    )


def test_driver_errors_are_checked(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        p = drv.mem_alloc(16)
        e = expect(drv.CudaInvalidValueError, drv.memcpy_htod, p, b"x" * 17)  # out of range
        assert e.api == "cuMemcpyHtoD" and e.name == "CUDA_ERROR_INVALID_VALUE"
        assert e.description == "invalid argument"
        expect(drv.CudaInvalidValueError, drv.memcpy_dtoh, bytearray(32), p)
        expect(drv.CudaInvalidValueError, drv.memset_d32_async, p + 1, 0, 1, 0)
        drv.mem_free(p)
        e = expect(drv.CudaInvalidValueError, drv.mem_free, p)   # double free reaches the driver
        assert e.api == "cuMemFree"
        ctx.close()
        """
    )


def test_bad_arguments(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        p = drv.mem_alloc(64)
        def msg(exc_type, fn, *args):
            return str(expect(exc_type, fn, *args))
        assert "nbytes" in msg(ValueError, drv.mem_alloc, -1)
        assert "nbytes" in msg(ValueError, drv.mem_alloc, 0)
        assert "nbytes" in msg(TypeError, drv.mem_alloc, 1.5)
        assert "nbytes" in msg(TypeError, drv.mem_alloc, "8")
        assert "ptr" in msg(ValueError, drv.mem_free, -5)
        assert "ptr" in msg(ValueError, drv.mem_free, 1 << 64)
        assert "src" in msg(TypeError, drv.memcpy_htod, p, 123)
        assert "src" in msg(TypeError, drv.memcpy_htod, p, "text")
        assert "dst" in msg(TypeError, drv.memcpy_htod, "p", b"x")
        m = msg(TypeError, drv.memcpy_dtoh, b"immutable", p)
        assert "dst" in m and "writable" in m, m
        m = msg(ValueError, drv.memcpy_htod, p, memoryview(bytearray(16))[::2])
        assert "src" in m and "contiguous" in m, m
        m = msg(ValueError, drv.memcpy_dtoh, memoryview(bytearray(16))[::2], p)
        assert "dst" in m and "contiguous" in m, m
        assert "nbytes" in msg(ValueError, drv.memcpy_dtod, p, p, -1)
        assert "value" in msg(ValueError, drv.memset_d8_async, p, 256, 1, 0)
        assert "value" in msg(ValueError, drv.memset_d32_async, p, 1 << 32, 1, 0)
        assert "count" in msg(ValueError, drv.memset_d8_async, p, 0, -1, 0)
        assert "stream" in msg(TypeError, drv.memset_d8_async, p, 0, 1, "s")
        assert "stream" in msg(ValueError, drv.memcpy_htod_async, p, b"x", -1)
        drv.mem_free(p); ctx.close()
        assert outstanding() == 0
        """
    )


def test_gil_released_during_copies(run: Runner) -> None:
    # Many threads copying at once must neither deadlock nor corrupt data.
    run(
        """
        ctx = use_device(0)
        errors = []
        def worker(i):
            try:
                ctx.set_current()
                p = drv.mem_alloc(4096)
                data = bytes([i]) * 4096
                for _ in range(200):
                    drv.memcpy_htod(p, data)
                    out = bytearray(4096)
                    drv.memcpy_dtoh(out, p)
                    assert out == data
                drv.mem_free(p)
            except Exception as e:
                errors.append(e)
        ts = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        [t.start() for t in ts]; [t.join() for t in ts]
        assert not errors, errors
        ctx.close()
        assert outstanding() == 0
        """
    )
