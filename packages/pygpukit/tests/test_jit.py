"""gp.jit: signature parsing and errors everywhere; compiling and launching on the GPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pygpukit as gp
from pygpukit import _jit

SEED_SRC = '''
extern "C" __global__
void scale(float* x, float factor, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) x[idx] *= factor;
}
'''

MULTI_SRC = r'''
#include <cuda_fp16.h>
template <typename T>
__global__ void axpy(T a, const T* __restrict__ x, T* y, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void half_double(__half* h, long long count) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < count) h[i] = __hmul(h[i], __float2half(2.0f));
}
'''


def gpu_ready() -> str | None:
    if not gp.is_cuda_available():
        return "needs the CUDA backend"
    if not gp.is_nvrtc_available():
        return "needs pygpukit[jit] (NVRTC)"
    return None


def test_signature_parsing() -> None:
    kernels = _jit.parse_kernels(MULTI_SRC + SEED_SRC)
    assert set(kernels) == {"axpy", "half_double", "scale"}
    tparams, text = kernels["axpy"]
    assert tparams == ["T"]
    params = _jit._parse_params(text, {"T": "float"})
    assert [p.name for p in params] == ["a", "x", "y", "n"]
    assert params[1].pointer and not params[1].writable and params[1].pointee == np.float32
    assert params[2].writable and params[3].scalar == "Q" and params[0].scalar == "f"
    seed = _jit._parse_params(kernels["scale"][1], {})
    assert [(p.name, p.pointer) for p in seed] == [("x", True), ("factor", False), ("n", False)]
    with pytest.raises(ValueError, match="unsupported scalar type"):
        _jit._parse_params("struct Foo f", {})


def test_jit_on_the_cpu_simulation_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pygpukit_nvrtc", reason="needs the jit extra")
    from pygpukit import _backend

    monkeypatch.setenv(_backend.ENV_BACKEND, "cpu")
    _backend._reset_for_tests()
    assert gp.is_nvrtc_available() is False  # so the seed README's block takes its else branch
    with pytest.raises(gp.BackendUnavailableError, match="CPU simulation cannot run CUDA C"):
        gp.jit(SEED_SRC, func="scale")


@pytest.mark.gpu
@pytest.mark.jit
def test_seed_readme_block_really_scales() -> None:
    if (reason := gpu_ready()) is not None:
        pytest.skip(reason)
    x = gp.from_numpy(np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32))
    before = x.to_numpy()
    src = SEED_SRC
    if gp.is_nvrtc_available():
        kernel = gp.jit(src, func="scale")
        kernel(x, factor=0.5, n=x.size)
    else:
        print("JIT not available. Using pre-compiled ops.")
    np.testing.assert_array_equal(x.to_numpy(), before * np.float32(0.5))


@pytest.mark.gpu
@pytest.mark.jit
def test_templates_halves_modules_and_explicit_grid() -> None:
    if (reason := gpu_ready()) is not None:
        pytest.skip(reason)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(5000).astype(np.float32)
    y = rng.standard_normal(5000).astype(np.float32)
    gx, gy = gp.from_numpy(x), gp.from_numpy(y)
    axpy = gp.jit(MULTI_SRC, func="axpy<float>", block_size=128)
    axpy(np.float32(2.0), gx, gy, n=5000)
    np.testing.assert_allclose(gy.to_numpy(), np.float32(2.0) * x + y, rtol=1e-6)
    module = gp.jit(MULTI_SRC.replace("template <typename T>\n__global__", "__global__")
                    .replace("T a, const T*", "float a, const float*").replace("T* y", "float* y")
                    .replace("y[i] = a", "y[i] = a"))
    assert set(module) == {"axpy", "half_double"}
    h = gp.from_numpy(np.arange(300, dtype=np.float16))
    module.half_double(h, 300, grid=3, block=100)
    np.testing.assert_array_equal(h.to_numpy(), np.arange(300, dtype=np.float16) * 2)
    with pytest.raises(TypeError, match="expected float32"):
        axpy(1.0, gp.zeros(4, gp.float64), gy, n=4)
    with pytest.raises(TypeError, match="missing arguments: n"):
        axpy(1.0, gx, gy)
    with pytest.raises(TypeError, match="no parameter 'm'"):
        axpy(1.0, gx, gy, n=4, m=3)
    with pytest.raises(ValueError, match="name an instantiation"):
        gp.jit(MULTI_SRC, func="axpy")


@pytest.mark.gpu
@pytest.mark.jit
def test_compile_errors_and_cache_across_processes(tmp_path: Path) -> None:
    if (reason := gpu_ready()) is not None:
        pytest.skip(reason)
    import pygpukit_nvrtc

    with pytest.raises(pygpukit_nvrtc.CompileError, match="undefined_symbol"):
        gp.jit("extern \"C\" __global__ void k(int* p) { undefined_symbol(); }", func="k")
    code = ("import pygpukit as gp, pygpukit_nvrtc as n, numpy as np; "
            "x = gp.ones(10); gp.jit(open(%r).read(), func='scale')(x, 3.0, 10); "
            "print(x.tolist()[0], len(n.cache_entries()))")
    src_file = tmp_path / "k.cu"
    src_file.write_text(SEED_SRC)
    env = {**__import__("os").environ, "PYGPUKIT_CACHE_DIR": str(tmp_path / "cache")}
    first = subprocess.run([sys.executable, "-c", code % str(src_file)], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    second = subprocess.run([sys.executable, "-c", code % str(src_file)], env=env,
                            capture_output=True, text=True, check=True).stdout.split()
    assert first == second == ["3.0", "1"]  # the second process hit the first one's entry


def test_driver_refusing_newer_ptx_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    import pygpukit_driver as drv

    def refuse(image: bytes) -> None:
        raise drv.error_class(222)(222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
                                   "the provided PTX was compiled with an unsupported toolchain",
                                   "cuModuleLoadDataEx")

    monkeypatch.setattr(drv.Module, "load_data", staticmethod(refuse))
    monkeypatch.setattr(drv, "driver_version", lambda: 13000)
    runtime = types.SimpleNamespace(activate=lambda: None)
    result = types.SimpleNamespace(binary=b".version 9.9\0")
    fake_nvrtc = types.SimpleNamespace(version=lambda: (13, 5))
    with pytest.raises(RuntimeError) as info:
        _jit._load(runtime, result, fake_nvrtc)
    message = str(info.value)
    assert "CUDA 13.0" in message and "NVRTC 13.5" in message
    assert "pip install 'nvidia-cuda-nvrtc==13.0.*'" in message
    assert isinstance(info.value.__cause__, drv.CudaError)
