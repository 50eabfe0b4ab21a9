"""gp.jit: signature parsing and errors everywhere; compiling and launching on the GPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

import pygpukit as gp
from pygpukit import _backend, _jit

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


# -- the launch path (a prepared pygpukit_driver.Launcher per grid/block/shared/stream) --------
class _FakeLauncher:
    """Stands in for pygpukit_driver.Launcher on the CPU tier: records what it is given."""

    made: ClassVar[list[tuple[object, ...]]] = []

    def __init__(self, function: object, grid: object, block: object, arg_types: str,
                 shared_mem: int, stream: int) -> None:
        self.config = (grid, block, arg_types, shared_mem, stream)
        self.calls: list[tuple[object, ...]] = []
        _FakeLauncher.made.append(self.config)

    def __call__(self, *args: object) -> None:
        for code, value in zip(self.config[2], args, strict=True):
            if code in "fd" and not isinstance(value, (int, float, np.number)):
                raise TypeError(f"argument ('{code}'): must be a float, got {type(value)}")
            if code not in "fd" and not isinstance(value, (int, np.integer)):
                raise TypeError(f"argument ('{code}'): must be an int, got {type(value)}")
        self.calls.append(args)


@pytest.fixture
def fake_launch(monkeypatch: pytest.MonkeyPatch) -> type[_FakeLauncher]:
    import pygpukit_driver as drv

    monkeypatch.setenv(_backend.ENV_BACKEND, "cpu")
    _backend._reset_for_tests()
    monkeypatch.setattr(drv, "Launcher", _FakeLauncher)
    monkeypatch.setattr(drv, "current_context_handle", lambda: 0)
    _FakeLauncher.made = []
    return _FakeLauncher


def _kernel(source: str, name: str, runtime: object, block_size: int = 256,
            subst: dict[str, str] | None = None) -> _jit.JITKernel:
    params = _jit._parse_params(_jit.parse_kernels(source)[name][1], subst or {})
    return _jit.JITKernel(None, object(), name, params, block_size, runtime)


def test_launch_binds_arguments_and_caches_the_launcher(fake_launch: type[_FakeLauncher]) -> None:
    x = gp.from_numpy(np.arange(1000, dtype=np.float32))
    kernel = _kernel(SEED_SRC, "scale", x._rt)
    assert kernel._arg_types == "Pfi"
    kernel(x, factor=0.5, n=x.size)  # the seed README's call
    kernel(x, 0.5, 1000)
    kernel(n=1000, factor=2, x=x)
    assert fake_launch.made == [(4, 256, "Pfi", 0, 0)]  # one launcher, reused
    (launcher,) = kernel._launchers.values()
    assert launcher.calls == [(x.data_ptr, 0.5, 1000)] * 2 + [(x.data_ptr, 2, 1000)]
    kernel(x, 0.5, 1000, block=[128])  # a list block is accepted and the grid follows it
    kernel(x, 0.5, 10, grid=(3, 2), block=(32, 2), shared_mem=64)
    kernel(x.data_ptr, 0.5, 1)  # a raw device pointer
    assert fake_launch.made[1:] == [(8, (128,), "Pfi", 0, 0), ((3, 2), (32, 2), "Pfi", 64, 0),
                                    (1, 256, "Pfi", 0, 0)]


def test_launch_errors_keep_their_messages(fake_launch: type[_FakeLauncher]) -> None:
    x = gp.from_numpy(np.arange(8, dtype=np.float32))
    kernel = _kernel(SEED_SRC, "scale", x._rt)
    with pytest.raises(TypeError, match="missing arguments: n"):
        kernel(x, 0.5)
    with pytest.raises(TypeError, match="no parameter 'm'"):
        kernel(x, 0.5, n=8, m=3)
    with pytest.raises(TypeError, match="two values for 'x'"):
        kernel(x, 0.5, 8, x=x)
    with pytest.raises(TypeError, match="two values for 'x'"):
        kernel(x, 0.5, x=x)
    with pytest.raises(TypeError, match="no parameter 'm'"):
        kernel(x, 0.5, m=8)
    with pytest.raises(TypeError, match="takes 3 arguments; got 4"):
        kernel(x, 0.5, 8, 9)
    expected = r"x: the kernel takes float \*, the array is float64 \(expected float32\)"
    with pytest.raises(TypeError, match=expected):
        kernel(gp.zeros(8, gp.float64), 0.5, 8)
    with pytest.raises(TypeError, match="x: expected a GPUArray or a device pointer"):
        kernel(np.zeros(8, np.float32), 0.5, 8)
    with pytest.raises(TypeError, match="x: expected a GPUArray"):
        kernel(True, 0.5, 8)
    with pytest.raises(TypeError, match="factor: cannot pass 'a' as float"):
        kernel(x, "a", 8)
    no_size = _kernel('extern "C" __global__ void k(float* p, int m) {}', "k", x._rt)
    with pytest.raises(TypeError, match="pass grid="):
        no_size(x, 3)
    no_size(x, 3, grid=1)


def test_launch_packs_halves_and_pointer_types(fake_launch: type[_FakeLauncher]) -> None:
    import ml_dtypes

    src = ('extern "C" __global__ void f(__half h, __nv_bfloat16 b, const double* d, void* v, '
           'unsigned long long n) {}')
    d = gp.from_numpy(np.ones(4))
    v = gp.from_numpy(np.ones(4, np.int16))
    kernel = _kernel(src, "f", d._rt)
    assert kernel._arg_types == "HHPPQ"
    kernel(1.5, 2.5, d, v, 4)
    (launcher,) = kernel._launchers.values()
    h_bits = int(np.float16(1.5).view(np.uint16))
    b_bits = int(np.array(2.5, ml_dtypes.bfloat16).view(np.uint16))
    assert launcher.calls == [(h_bits, b_bits, d.data_ptr, v.data_ptr, 4)]


def test_launch_uses_the_current_stream_and_records_array_use(
        fake_launch: type[_FakeLauncher]) -> None:
    src = 'extern "C" __global__ void k(const float* a, float* b, int n) {}'
    a = gp.from_numpy(np.ones(16, np.float32))
    b = gp.from_numpy(np.ones(16, np.float32))
    kernel = _kernel(src, "k", a._rt)
    def writer(array: gp.GPUArray) -> object:
        return array._block.writer

    def users(array: gp.GPUArray) -> object:
        return array._block.used_streams

    default = gp.current_stream()
    kernel(a, b, 16)
    assert writer(b) is default and users(a) is None
    other = gp.Stream()
    with other:
        kernel(a, b, 16)
    assert writer(b) is other  # the written array: read-backs wait for `other`
    assert writer(a) is default  # a const pointer is read, not written
    assert users(a) == {other} and users(b) == {other}
    kernel(a, b, 16, stream=other)
    assert [key[3] for key in kernel._launchers] == [default, other]
    assert len(fake_launch.made) == 2  # `with other:` and stream=other share one launcher


def test_bound_launch_repeats_with_packed_arguments(fake_launch: type[_FakeLauncher]) -> None:
    src = 'extern "C" __global__ void k(const float* a, float* b, __half h, int n) {}'
    a = gp.from_numpy(np.ones(16, np.float32))
    b = gp.from_numpy(np.ones(16, np.float32))
    kernel = _kernel(src, "k", a._rt)
    bound = kernel.bind(a, b, h=1.5, n=16)
    assert isinstance(bound, gp.BoundLaunch) and bound.kernel is kernel
    bound()
    bound()
    (launcher,) = kernel._launchers.values()
    h_bits = int(np.float16(1.5).view(np.uint16))
    assert launcher.calls == [(a.data_ptr, b.data_ptr, h_bits, 16)] * 2
    # Another stream wrote b in between: the bound launch records its own write again.
    other = gp.Stream()
    b._block.writer = other
    bound()
    assert b._block.writer is bound.stream is gp.current_stream()
    # Bad arguments are refused at bind time, with a call's messages.
    with pytest.raises(TypeError, match="h: cannot pass 'x' as __half"):
        kernel.bind(a, b, "x", 16)
    with pytest.raises(TypeError, match="missing arguments: n"):
        kernel.bind(a, b, 1.0)
    with pytest.raises(TypeError, match=r"b: the kernel takes float \*, the array is float64"):
        kernel.bind(a, gp.zeros(4, gp.float64), 1.0, 4)


def test_launchers_per_kernel_are_bounded(fake_launch: type[_FakeLauncher]) -> None:
    x = gp.from_numpy(np.ones(4, np.float32))
    kernel = _kernel(SEED_SRC, "scale", x._rt)
    for grid in range(1, 3 * _jit._MAX_LAUNCHERS):
        kernel(x, 1.0, 4, grid=grid)
    assert 0 < len(kernel._launchers) <= _jit._MAX_LAUNCHERS


@pytest.mark.gpu
@pytest.mark.jit
def test_launcher_path_on_the_gpu_streams_shared_memory_and_halves() -> None:
    if (reason := gpu_ready()) is not None:
        pytest.skip(reason)
    src = r'''
#include <cuda_fp16.h>
extern "C" __global__ void fill(__half* out, __half value, float* acc, int n) {
    extern __shared__ float tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    if (i < n) { out[i] = value; acc[i] += tile[threadIdx.x]; }
}
'''
    fill = gp.jit(src, func="fill", block_size=64)
    rng = np.random.default_rng(3)
    acc_host = rng.standard_normal(1000).astype(np.float32)
    out, acc = gp.empty(1000, gp.float16), gp.from_numpy(acc_host)
    fill(out, 1.25, acc, 1000, shared_mem=64 * 4)
    fill(out, value=1.25, acc=acc, n=1000, shared_mem=64 * 4)
    assert len(fill._launchers) == 1
    lane = (np.arange(1000) % 64).astype(np.float32)
    np.testing.assert_array_equal(out.to_numpy(), np.full(1000, 1.25, np.float16))
    np.testing.assert_allclose(acc.to_numpy(), acc_host + lane + lane, rtol=1e-6, atol=1e-5)
    stream = gp.Stream()
    with stream:
        fill(out, -3.0, acc, 1000, shared_mem=256)
    np.testing.assert_array_equal(out.to_numpy(), np.full(1000, -3.0, np.float16))
    np.testing.assert_allclose(acc.to_numpy(), acc_host + lane + lane + lane, rtol=1e-6,
                               atol=1e-5)
    assert len(fill._launchers) == 2
    with pytest.raises(TypeError, match="n: cannot pass"):
        fill(out, 1.0, acc, 2**40, grid=1, shared_mem=256)
