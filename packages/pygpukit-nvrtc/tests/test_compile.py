"""Compiling with the real NVRTC (no GPU needed): cubin/PTX, headers, names, errors, cache."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import pygpukit_nvrtc as nvrtc
from pygpukit_nvrtc import _cache

SCALE = """
extern "C" __global__ void scale(float* x, float factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= factor;
}
"""

TEMPLATE = """
#include <cuda_fp16.h>
#include <cuda_bf16.h>
template <typename T>
__global__ void axpy(T a, const T* x, T* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void halves(__half* h, __nv_bfloat16* b) {
    h[0] = __float2half(1.5f);
    b[0] = __float2bfloat16(2.5f);
}
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv(_cache.ENV_CACHE_DIR, str(tmp_path / "cache"))
    yield tmp_path / "cache" / "nvrtc"


def test_cubin_for_an_exact_arch() -> None:
    result = nvrtc.compile(SCALE, arch=90)
    assert result.output == "cubin" and result.arch == "sm_90"
    assert result.binary[:4] == b"\x7fELF"  # a cubin is an ELF image
    assert not result.cached and result.fallback is None


def test_ptx_output() -> None:
    result = nvrtc.compile(SCALE, arch="compute_80", output="ptx")
    text = result.binary.rstrip(b"\0").decode()
    assert ".target sm_80" in text and ".entry scale" in text
    assert result.binary.endswith(b"\0")


def test_headers_templates_and_lowered_names() -> None:
    result = nvrtc.compile(TEMPLATE, arch="sm_86", name_expressions=["axpy<float>", "halves"])
    assert result.lowered_names["axpy<float>"].startswith("_Z4axpyIfE")
    assert result.lowered_names["halves"].startswith("_Z6halves")


def test_invalid_option_is_named() -> None:
    with pytest.raises(nvrtc.NvrtcError, match=r"INVALID_OPTION.*--no-such-flag"):
        nvrtc.compile(SCALE, arch=90, options=["--no-such-flag"], cache=False)


def test_compile_error_carries_the_log() -> None:
    with pytest.raises(nvrtc.CompileError) as info:
        nvrtc.compile("__global__ void k() { undeclared_thing(); }", arch=90, name="bad.cu")
    assert "undeclared_thing" in info.value.log and "bad.cu" in str(info.value)
    assert info.value.code == 6


def test_unknown_newer_arch_falls_back_to_ptx() -> None:
    newest = max(nvrtc.supported_archs())
    result = nvrtc.compile(SCALE, arch=newest + 50)
    assert result.output == "ptx" and result.arch == f"compute_{newest}"
    assert result.fallback is not None and f"sm_{newest + 50}" in result.fallback
    with pytest.raises(ValueError, match="older than NVRTC"):
        nvrtc.compile(SCALE, arch=30)
    with pytest.raises(ValueError, match="arch: expected"):
        nvrtc.compile(SCALE, arch="hopper")


def test_cache_hit_miss_and_options_in_key(private_cache: Path) -> None:
    first = nvrtc.compile(SCALE, arch=90)
    second = nvrtc.compile(SCALE, arch=90)
    assert second.cached and second.binary == first.binary
    assert not nvrtc.compile(SCALE, arch=90, options=["--use_fast_math"]).cached
    assert not nvrtc.compile(SCALE, arch=89).cached
    assert not nvrtc.compile(SCALE, arch=90, cache_tag="driver=13000").cached
    assert not nvrtc.compile(SCALE, arch=90, cache=False).cached
    assert stat.S_IMODE(private_cache.stat().st_mode) == 0o700
    assert len(nvrtc.cache_entries()) == 4
    assert all(e.meta.get("arch") for e in nvrtc.cache_entries())
    assert nvrtc.clear_cache() == 4 and nvrtc.cache_entries() == []


def test_corrupt_entry_is_recompiled_with_a_warning(private_cache: Path) -> None:
    good = nvrtc.compile(SCALE, arch=90)
    (entry,) = private_cache.glob("*.bin")
    data = bytearray(entry.read_bytes())
    data[-10] ^= 0xFF
    entry.write_bytes(bytes(data))
    with pytest.warns(nvrtc.CacheWarning, match="corrupt"):
        again = nvrtc.compile(SCALE, arch=90)
    assert not again.cached and again.binary == good.binary
    assert nvrtc.compile(SCALE, arch=90).cached  # rewritten


def test_world_writable_cache_dir_is_refused(private_cache: Path) -> None:
    private_cache.mkdir(parents=True)
    os.chmod(private_cache, 0o777)
    with pytest.warns(nvrtc.CacheWarning, match="writable by other users"):
        result = nvrtc.compile(SCALE, arch=90)
    assert not result.cached and list(private_cache.glob("*.bin")) == []


def test_concurrent_processes_share_the_cache(tmp_path: Path) -> None:
    root = str(tmp_path / "shared")
    code = ("import sys, pygpukit_nvrtc as n; "
            f"sys.stdout.buffer.write(n.compile({SCALE!r}, arch=90).binary)")
    env = {**os.environ, _cache.ENV_CACHE_DIR: root}
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env)
             for _ in range(6)]
    binaries = {p.communicate(timeout=300)[0] for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert len(binaries) == 1
    os.environ[_cache.ENV_CACHE_DIR] = root
    assert len(nvrtc.cache_entries()) == 1
    assert not list((tmp_path / "shared" / "nvrtc").glob(".*.tmp"))
