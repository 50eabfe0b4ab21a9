"""Loading the driver library, symbol resolution, cuInit, availability."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

Runner = Callable[..., str]


def test_available_with_fake_driver(run: Runner, fake_driver: Path) -> None:
    run(
        f"""
        assert drv.is_available() is True
        assert drv.unavailable_reason() is None
        assert drv.library_path() == {os.path.realpath(fake_driver)!r}, drv.library_path()
        assert drv.driver_version() == 13000
        assert drv.device_count() == 2
        drv.init(); drv.init()
        assert counter("fake_init_calls") == 1
        """
    )


def test_init_is_lazy_and_once_across_threads(run: Runner) -> None:
    run(
        """
        assert counter("fake_init_calls") == 0  # import alone does not call cuInit
        errors = []
        def worker():
            try:
                for _ in range(50):
                    drv.init()
                    assert drv.device_count() == 2
            except Exception as e:
                errors.append(e)
        threads = [threading.Thread(target=worker) for _ in range(8)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert not errors, errors
        assert counter("fake_init_calls") == 1
        """
    )


def test_driver_version_env(run: Runner) -> None:
    run("assert drv.driver_version() == 12080", env={"FAKE_CUDA_DRIVER_VERSION": "12080"})


def test_resolves_through_cuGetProcAddress(run: Runner) -> None:
    run(
        """
        info = drv._driver._loader_info()
        assert info["resolver"] == "cuGetProcAddress_v2", info
        assert info["missing_symbols"] == [] and info["fallback_symbols"] == [], info
        assert counter("fake_gpa_calls") > 40
        assert counter("fake_gpa_bad_version") == 0  # cudaVersion >= 12000, flags == 0
        """
    )


def test_per_symbol_dlsym_fallback(run: Runner) -> None:
    run(
        """
        info = drv._driver._loader_info()
        assert sorted(info["fallback_symbols"]) == ["cuMemAlloc", "cuStreamDestroy"], info
        ctx = use_device(0)
        p = drv.mem_alloc(64)
        drv.mem_free(p)
        s = drv.Stream(); s.close()
        ctx.close()
        assert outstanding() == 0 and counter("fake_bad_frees") == 0
        """,
        env={"FAKE_CUDA_GPA_HIDE": "cuMemAlloc,cuStreamDestroy"},
    )


def test_dlsym_only_driver_uses_versioned_names(run: Runner, fake_driver_nogpa: Path) -> None:
    run(
        """
        info = drv._driver._loader_info()
        assert info["resolver"] == "dlsym", info
        assert info["missing_symbols"] == [], info   # cuMemAlloc_v2, cuCtxDestroy... found
        assert drv.is_available()
        ctx = use_device(1)
        p = drv.mem_alloc(8)
        drv.memcpy_htod(p, b"abcdefgh")
        out = bytearray(8); drv.memcpy_dtoh(out, p)
        assert out == b"abcdefgh"
        drv.mem_free(p)
        ctx.close()
        assert outstanding() == 0
        """,
        lib=fake_driver_nogpa,
    )


def test_driver_not_found(run: Runner, tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "libcuda.so.1"
    run(
        f"""
        missing = {str(missing)!r}
        assert drv.is_available() is False
        reason = drv.unavailable_reason()
        assert missing in reason and "PYGPUKIT_CUDA_DRIVER" in reason, reason
        assert "No such file" in reason, reason          # the dlopen error
        assert drv.library_path() is None
        for fn, args in [(drv.init, ()), (drv.device_count, ()), (drv.mem_alloc, (16,)),
                         (drv.Device, (0,)), (drv.driver_version, ()), (drv.Stream, ()),
                         (drv.current_context_handle, ())]:
            e = expect(drv.CudaUnavailableError, fn, *args)
            assert isinstance(e, drv.CudaError) and isinstance(e, RuntimeError)
            assert missing in str(e), str(e)
            assert e.code == 100 and e.name == "CUDA_ERROR_NO_DEVICE", (e.code, e.name)
            assert e.reason == reason
        """,
        lib=missing,
    )


def test_default_search_names_every_candidate(run: Runner) -> None:
    # With the variable empty the default names are searched; there is no libcuda here (or,
    # on a GPU machine, there is one and the driver is simply available).
    run(
        """
        reason = drv.unavailable_reason()
        if reason is not None:
            assert "libcuda.so.1" in reason and "/usr/lib/wsl/lib/libcuda.so.1" in reason, reason
            assert not drv.is_available()
        else:
            assert drv.library_path()
        """,
        lib="",
    )


def test_library_without_cuInit_is_rejected(run: Runner) -> None:
    # Point the variable at a shared library that is not a driver: our own extension module.
    import importlib.util

    spec = importlib.util.find_spec("pygpukit_driver._driver")
    assert spec is not None and spec.origin is not None
    run(
        f"""
        assert not drv.is_available()
        reason = drv.unavailable_reason()
        assert "does not export cuInit" in reason and {spec.origin!r} in reason, reason
        expect(drv.CudaUnavailableError, drv.init)
        """,
        lib=spec.origin,
    )


def test_cuinit_failure_is_unavailable(run: Runner, fake_driver: Path) -> None:
    run(
        f"""
        assert drv.is_available() is False
        reason = drv.unavailable_reason()
        assert "cuInit(0) failed" in reason and "CUDA_ERROR_NO_DEVICE (100)" in reason, reason
        assert {os.path.realpath(fake_driver)!r} in reason
        assert drv.library_path() is not None
        assert drv.driver_version() == 13000  # needs only the library, not cuInit
        e = expect(drv.CudaUnavailableError, drv.device_count)
        assert e.code == 100 and e.api == "cuInit" and e.name == "CUDA_ERROR_NO_DEVICE"
        assert "no CUDA-capable device" in e.description
        assert str(e).startswith("CUDA driver unavailable: cuInit(0) failed"), str(e)
        # the failure is remembered, cuInit is not retried on every call
        drv.is_available(); drv.is_available()
        assert counter("fake_init_calls") == 1
        """,
        env={"FAKE_CUDA_INIT_ERROR": "100"},
    )


def test_zero_devices(run: Runner) -> None:
    run(
        """
        assert not drv.is_available()
        assert "CUDA_ERROR_NO_DEVICE" in drv.unavailable_reason()
        """,
        env={"FAKE_CUDA_DEVICE_COUNT": "0"},
    )


def test_unknown_init_error_code(run: Runner) -> None:
    run(
        """
        e = expect(drv.CudaUnavailableError, drv.init)
        assert e.code == 12345 and e.name == "CUDA_ERROR_UNRECOGNIZED", e.name
        assert "12345" in e.description
        """,
        env={"FAKE_CUDA_INIT_ERROR": "12345"},
    )
