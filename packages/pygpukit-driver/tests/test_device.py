"""Devices and primary contexts against the fake driver."""

from __future__ import annotations

from collections.abc import Callable

Runner = Callable[..., str]


def test_device_properties(run: Runner) -> None:
    run(
        """
        d0, d1 = drv.Device(0), drv.Device(1)
        assert d0.ordinal == 0 and d1.ordinal == 1
        assert d0.name == "Fake GPU 0" and d1.name == "Fake GPU 1"
        assert d0.compute_capability == (8, 0) and d1.compute_capability == (9, 0)
        assert d0.total_memory == 16 << 30 and d1.total_memory == 80 << 30
        assert d0.multiprocessor_count == 108 and d1.multiprocessor_count == 132
        assert d0.pci_bus_id == "0000:41:00.0"
        assert d1.uuid == "GPU-01112131-4151-6171-8191-a1b1c1d1e1f1", d1.uuid
        assert d0.get_attribute(drv.DeviceAttribute.WARP_SIZE) == 32
        assert d1.get_attribute(drv.DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) == 132
        assert d0 == drv.Device(0) and d0 != d1 and len({d0, drv.Device(0), d1}) == 2
        assert repr(d1) == "<Device 1>"
        e = expect(drv.CudaInvalidValueError, d0.get_attribute, 9999)
        assert e.api == "cuDeviceGetAttribute" and e.code == 1
        assert isinstance(e, ValueError)
        """
    )


def test_device_ordinal_validation(run: Runner) -> None:
    run(
        """
        e = expect(ValueError, drv.Device, 2)
        assert "0..1" in str(e) and "2 devices" in str(e), str(e)
        expect(ValueError, drv.Device, -1)
        e = expect(TypeError, drv.Device, "0")
        assert "ordinal" in str(e)
        expect(TypeError, drv.Device, 0.0)
        expect(TypeError, drv.Device(0).get_attribute, "x")
        """
    )


def test_primary_context_lifecycle(run: Runner) -> None:
    run(
        """
        assert drv.current_context_handle() == 0
        ctx = drv.Device(1).primary_context()
        assert refcount(1) == 1 and ctx.handle != 0 and ctx.device == drv.Device(1)
        assert drv.current_context_handle() == 0   # retaining does not make it current
        ctx.set_current()
        assert drv.current_context_handle() == ctx.handle
        ctx.synchronize()
        ctx2 = drv.Device(1).primary_context()
        assert ctx2.handle == ctx.handle and refcount(1) == 2
        ctx2.close(); ctx2.close()            # idempotent
        assert refcount(1) == 1 and ctx2.closed and not ctx.closed
        expect(ValueError, lambda: ctx2.handle)
        expect(ValueError, ctx2.set_current)
        with drv.Device(0).primary_context() as c0:
            assert refcount(0) == 1
        assert refcount(0) == 0 and c0.closed
        ctx3 = drv.Device(0).primary_context()
        del ctx3; gc.collect()                # GC releases
        assert refcount(0) == 0
        ctx.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """
    )


def test_context_close_is_thread_safe(run: Runner) -> None:
    run(
        """
        for _ in range(20):
            ctx = drv.Device(0).primary_context()
            barrier = threading.Barrier(8)
            def closer():
                barrier.wait()
                ctx.close()
            ts = [threading.Thread(target=closer) for _ in range(8)]
            [t.start() for t in ts]; [t.join() for t in ts]
            del ctx
        assert refcount(0) == 0 and counter("fake_bad_frees") == 0
        """
    )


def test_no_current_context_hint(run: Runner) -> None:
    run(
        """
        e = expect(drv.CudaInvalidContextError, drv.mem_alloc, 16)
        assert e.code == 201 and e.api == "cuMemAlloc"
        assert "primary_context().set_current()" in str(e), str(e)
        expect(drv.CudaInvalidContextError, drv.Stream)
        expect(drv.CudaInvalidContextError, drv.Module.load_data, b"FAKECUBIN")
        assert outstanding() == 0
        """
    )
