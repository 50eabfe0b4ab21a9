"""Backend choice, sibling version checks, the command line, and import cost."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import pygpukit as gp
from pygpukit import _backend, _versions


def run_module(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "pygpukit", *args],
        capture_output=True, text=True, env=full_env, check=False,
    )


def test_cpu_backend_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_backend.ENV_BACKEND, "cpu")
    assert gp.backend() == "cpu"
    assert gp.zeros((2,)).backend == "cpu"


def test_unknown_backend_name_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_backend.ENV_BACKEND, "rocm")
    with pytest.raises(gp.BackendUnavailableError, match="'rocm' is not one of auto, cuda, cpu"):
        gp.zeros((2,))


def test_auto_picks_cuda_exactly_when_available(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(_backend.ENV_BACKEND, raising=False)
    reason = _backend.cuda_unavailable_reason()
    assert gp.is_cuda_available() is (reason is None)
    assert gp.backend() == ("cuda" if reason is None else "cpu")


def test_forced_cuda_without_gpu_explains(monkeypatch: pytest.MonkeyPatch) -> None:
    reason = _backend.cuda_unavailable_reason()
    monkeypatch.setenv(_backend.ENV_BACKEND, "cuda")
    if reason is None:
        assert gp.backend() == "cuda"
    else:
        with pytest.raises(gp.BackendUnavailableError, match="PYGPUKIT_BACKEND=cuda but"):
            gp.backend()


def test_arrays_from_two_backends_do_not_mix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_backend.ENV_BACKEND, "cpu")
    first = gp.ones((3,))
    _backend._reset_for_tests()
    second = gp.ones((3,))  # a new backend object, as after a backend switch
    with pytest.raises(ValueError, match="different devices"):
        gp.add(first, second)


def test_sibling_versions_match_installed() -> None:
    assert _versions.find_clashes(gp.__version__) == []
    for dist in _versions.REQUIRED:
        assert _versions.installed_version(dist) == gp.__version__


def test_sibling_clash_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = {"pygpukit-driver": "0.3.0.dev0", "pygpukit-kernels": "9.9.9",
            "pygpukit-nvrtc": None, "pygpukit-sched": "0.0.1"}
    monkeypatch.setattr(_versions, "installed_version", fake.get)
    with pytest.raises(ImportError) as info:
        _versions.check_siblings("0.3.0.dev0")
    message = str(info.value)
    assert "pygpukit-kernels 9.9.9 is installed (needs ==0.3.0.dev0)" in message
    assert "pygpukit-sched 0.0.1 is installed" in message
    assert "pygpukit-driver" not in message and "pygpukit-nvrtc" not in message
    assert "pip install --force-reinstall" in message


def test_missing_required_sibling_is_a_clash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_versions, "installed_version", lambda dist: None)
    assert _versions.find_clashes("1.0") == [
        "pygpukit-driver is not installed (needs ==1.0)",
        "pygpukit-kernels is not installed (needs ==1.0)",
    ]


def test_nvrtc_queries_agree_with_pygpukit_nvrtc() -> None:
    try:
        import pygpukit_nvrtc
    except ImportError:  # without the jit extra pygpukit must say "no NVRTC" everywhere
        assert gp.is_nvrtc_available() is False
        assert gp.get_nvrtc_path() is None and gp.get_nvrtc_version() is None
    else:
        loads = pygpukit_nvrtc.is_available()
        assert gp.is_nvrtc_available() is (loads and gp.backend() == "cuda")
        assert gp.get_nvrtc_path() == (pygpukit_nvrtc.path() if loads else None)
        assert gp.get_nvrtc_version() == (pygpukit_nvrtc.version() if loads else None)


def test_info_command_reports_everything() -> None:
    result = run_module("info")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith(f"PyGPUkit {gp.__version__}")
    assert "Kernels: SASS sm_80 sm_86 sm_89 sm_90 sm_100 sm_120; PTX compute_120" in out
    assert "CUDA driver: " in out and "NVRTC: " in out
    backend_line = [line for line in out.splitlines() if line.startswith("Backend: ")]
    assert len(backend_line) == 1
    if gp.is_cuda_available():
        assert backend_line[0].startswith("Backend: cuda (device 0: ")
        assert "kernels: SASS shipped" in out or "kernels: runs shipped PTX" in out
    else:
        assert backend_line[0].startswith("Backend: cpu (simulation; ")


def test_info_json() -> None:
    result = run_module("info", "--json")
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    assert facts["pygpukit"] == gp.__version__
    assert facts["kernels"]["sass_archs"] == [80, 86, 89, 90, 100, 120]
    assert facts["kernels"]["ptx_archs"] == [120]
    assert facts["backend"]["name"] in ("cuda", "cpu")
    assert facts["driver"]["available"] is (facts["driver"].get("reason") is None)


def test_info_under_forced_cpu_backend() -> None:
    result = run_module("info", env={"PYGPUKIT_BACKEND": "cpu"})
    assert result.returncode == 0, result.stderr
    assert "Backend: cpu (simulation; PYGPUKIT_BACKEND=cpu)" in result.stdout


def test_demo_command() -> None:
    result = run_module("demo", "--size", "100003")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "equal to NumPy: True" in result.stdout
    assert "is all ones: True" in result.stdout


def test_import_does_not_load_the_driver() -> None:
    # The driver binding's C fast path (FastOp, BlockCache) is imported with pygpukit, but the
    # CUDA driver library is looked for only on first use; NVRTC and the scheduler not at all.
    code = (
        "import sys, pygpukit, pygpukit_driver; "
        "loaded = [m for m in ('pygpukit_nvrtc', 'pygpukit_sched') if m in sys.modules]; "
        "assert not loaded, loaded; "
        "assert not pygpukit_driver._driver._library_attempted(); "
        "pygpukit_driver.is_available(); "
        "assert pygpukit_driver._driver._library_attempted()"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_driver_errors_reexported_lazily() -> None:
    import pygpukit_driver

    assert gp.CudaError is pygpukit_driver.CudaError
    assert issubclass(gp.CudaOutOfMemoryError, MemoryError)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        gp.nope  # type: ignore[attr-defined]  # noqa: B018
