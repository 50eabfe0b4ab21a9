"""Streams and events against the fake driver."""

from __future__ import annotations

from collections.abc import Callable

Runner = Callable[..., str]


def test_stream_basics(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        assert drv.stream_priority_range() == (0, -5)
        s = drv.Stream()
        assert counter("fake_last_stream_flags") == 1          # non_blocking by default
        assert s.handle != 0 and s.query() is True and not s.closed
        s.synchronize()
        s2 = drv.Stream(non_blocking=False, priority=-3)
        assert counter("fake_last_stream_flags") == 0
        assert counter("fake_last_stream_priority") == -3
        assert counter("fake_outstanding_streams", ctypes.c_longlong) == 2
        s.close(); s.close()
        assert s.closed
        expect(ValueError, lambda: s.handle)
        expect(ValueError, s.synchronize)
        with drv.Stream() as s3:
            assert int(s3) == s3.handle
        assert s3.closed
        del s2; gc.collect()
        assert counter("fake_outstanding_streams", ctypes.c_longlong) == 0
        expect(TypeError, drv.Stream, True, "high")
        ctx.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """
    )


def test_query_not_ready(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        s = drv.Stream(); e = drv.Event()
        assert s.query() is False and e.query() is False
        s.close(); e.close(); ctx.close()
        """,
        env={"FAKE_CUDA_NOT_READY": "1"},
    )


def test_events(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        s = drv.Stream()
        start, end = drv.Event(), drv.Event()
        start.record(s)
        end.record(s.handle)
        end.synchronize()
        assert start.query() and end.query()
        ms = start.elapsed_time(end)
        assert abs(ms - 1.5) < 1e-6, ms
        assert start.elapsed_time(start) == 0.0
        drv.stream_wait_event(s, end)
        drv.stream_wait_event(0, end)
        nt = drv.Event(timing=False)
        nt.record()
        e = expect(drv.CudaInvalidHandleError, start.elapsed_time, nt)
        assert e.api == "cuEventElapsedTime"
        expect(TypeError, start.elapsed_time, 5)
        expect(TypeError, drv.stream_wait_event, s, 5)
        for ev in (start, end, nt):
            ev.close(); ev.close()
        expect(ValueError, start.record)
        s.close(); ctx.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """
    )


def test_resources_keep_context_alive(run: Runner) -> None:
    run(
        """
        ctx = use_device(1)
        s = drv.Stream(); ev = drv.Event(); m = drv.Module.load_data(b"FAKECUBIN")
        assert refcount(1) == 4
        ctx.close()
        assert refcount(1) == 3          # the resources still hold the primary context
        s.synchronize(); ev.record(s)
        s.close(); assert refcount(1) == 2
        del ev; gc.collect(); assert refcount(1) == 1
        m.close(); assert refcount(1) == 0
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """
    )


def test_concurrent_close_destroys_once(run: Runner) -> None:
    run(
        """
        ctx = use_device(0)
        for _ in range(20):
            objs = [drv.Stream(), drv.Event(), drv.Module.load_data(b"FAKECUBIN")]
            barrier = threading.Barrier(6)
            def closer():
                barrier.wait()
                for o in objs:
                    o.close()
            ts = [threading.Thread(target=closer) for _ in range(6)]
            [t.start() for t in ts]; [t.join() for t in ts]
            del objs
            gc.collect()
        ctx.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """
    )
