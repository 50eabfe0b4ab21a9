"""Fixtures for the CPU tier: a fake libcuda compiled from fake_cuda/fake_cuda.c, and a runner.

The driver library is loaded when pygpukit_driver is imported, so every test that needs a
particular driver runs its body in a fresh interpreter with PYGPUKIT_CUDA_DRIVER set.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FAKE_SRC = HERE / "fake_cuda" / "fake_cuda.c"

# Code run before every test body in the subprocess.
PRELUDE = """
import array, ctypes, gc, os, struct, sys, threading
import pygpukit_driver as drv

_lib = os.environ.get("PYGPUKIT_CUDA_DRIVER", "")
FAKE = ctypes.CDLL(_lib) if _lib and os.path.exists(_lib) and "fake" in _lib else None
if FAKE is not None:
    FAKE.fake_outstanding.restype = ctypes.c_longlong
    FAKE.fake_ctx_refcount.restype = ctypes.c_int
    FAKE.fake_ctx_refcount.argtypes = [ctypes.c_int]

def counter(name, ctype=ctypes.c_int):
    return ctype.in_dll(FAKE, name).value

def outstanding():
    return FAKE.fake_outstanding()

def refcount(dev=0):
    return FAKE.fake_ctx_refcount(dev)

def use_device(i=0):
    ctx = drv.Device(i).primary_context()
    ctx.set_current()
    return ctx

def expect(exc_type, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc_type as e:
        return e
    raise AssertionError(f"{fn!r}{args!r} did not raise {exc_type.__name__}")
"""


def _build(cc: str, out: Path, *flags: str) -> Path:
    cmd = [cc, "-shared", "-fPIC", "-O1", *flags, "-o", str(out), str(FAKE_SRC), "-lpthread"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out


@pytest.fixture(scope="session")
def c_compiler(required_tool: Callable[..., str]) -> str:
    """The C compiler that builds the fake driver ($CC, cc, gcc, clang); CI fails without one."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the fake driver is built as a Linux shared library")
    return required_tool("cc", "gcc", "clang", why="it builds the fake CUDA driver "
                         "(fake_cuda/fake_cuda.c) that the CPU-tier driver tests load")


@pytest.fixture(scope="session")
def fake_driver(c_compiler: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Path of the fake driver (with cuGetProcAddress_v2)."""
    return _build(c_compiler, tmp_path_factory.mktemp("fake_cuda") / "libfakecuda.so.1")


@pytest.fixture(scope="session")
def fake_driver_nogpa(c_compiler: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Path of the fake driver built without cuGetProcAddress_v2 (dlsym fallback only)."""
    out = tmp_path_factory.mktemp("fake_cuda_nogpa") / "libfakecuda_nogpa.so.1"
    return _build(c_compiler, out, "-DFAKE_NO_GET_PROC_ADDRESS")


@pytest.fixture(scope="session")
def fake_driver_old(c_compiler: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Path of a CUDA 12.2-era fake driver: no green contexts, cuLaunchKernelEx, tensor maps."""
    out = tmp_path_factory.mktemp("fake_cuda_old") / "libfakecuda_old.so.1"
    return _build(c_compiler, out, "-DFAKE_OLD_DRIVER")


Runner = Callable[..., str]


def _run(code: str, lib: Path | str, env: dict[str, str] | None, cwd: Path) -> str:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_CUDA_")}
    full_env["PYGPUKIT_CUDA_DRIVER"] = str(lib)
    full_env.update(env or {})
    script = PRELUDE + "\n" + textwrap.dedent(code) + "\nprint('SUBPROCESS-OK')\n"
    proc = subprocess.run(
        [sys.executable, "-c", script],
        env=full_env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0 or "SUBPROCESS-OK" not in proc.stdout:
        raise AssertionError(
            f"subprocess failed (rc={proc.returncode})\n--- stdout ---\n{proc.stdout}"
            f"\n--- stderr ---\n{proc.stderr}"
        )
    return proc.stdout


@pytest.fixture
def run(fake_driver: Path, tmp_path: Path) -> Runner:
    """run(code, env=None, lib=None): run `code` in a subprocess against the fake driver."""

    def runner(code: str, env: dict[str, str] | None = None, lib: Path | str | None = None) -> str:
        return _run(code, lib if lib is not None else fake_driver, env, tmp_path)

    return runner


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "gpu: needs a CUDA GPU and driver (GPU tier); skipped with a reason elsewhere"
    )
