"""The random kernels' per-block code (cuda/random.cu), built for the host, vs the NumPy mirror.

``packages/pygpukit-kernels/tests/random_host_check.cu`` includes random.cu and runs the
functors every kernel launches, on the CPU: the Philox rounds, the element -> block/word layout,
the integer rejections, the float conversions and the float32 normals' inverse CDF are the
device's code, so a mismatch here is a kernel bug found without a GPU.  (float64 normals are
computed in double in the host build, as the mirror computes them: CUDA's log / sincospi are
checked on the GPU by test_random.py.)  Needs nvcc
(``PGK_NVCC``, ``nvcc`` on PATH, or NVIDIA's ``nvidia-cuda-nvcc`` wheel); skips without one.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from pygpukit import _philox

KERNELS = Path(__file__).resolve().parents[2] / "pygpukit-kernels"
KEY, COUNTER, SID = 0x0123456789ABCDEF, (1 << 64) - 3, 0xDEADBEEF  # the counter wraps
N = 10_003


def _find_nvcc() -> str | None:
    if os.environ.get("PGK_NVCC"):
        return os.environ["PGK_NVCC"]
    found = shutil.which("nvcc")
    if found:
        return found
    # NVIDIA's wheels (nvidia-cuda-nvcc) share the namespace package `nvidia`.
    spec = importlib.util.find_spec("nvidia")
    if spec is None:
        return None
    for root in spec.submodule_search_locations or []:
        for candidate in sorted(Path(root).glob("cu*/bin/nvcc")):
            return str(candidate)
    return None


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    nvcc = _find_nvcc()
    if nvcc is None:
        pytest.skip("no nvcc (set PGK_NVCC or install nvidia-cuda-nvcc)")
    root = Path(nvcc).resolve().parents[1]
    exe = tmp_path_factory.mktemp("random_host") / "random_host_check"
    libs = [f"-L{d}" for d in (root / "lib", root / "lib64") if d.is_dir()]
    subprocess.run([nvcc, "-std=c++17", f"-I{KERNELS / 'include'}", f"-I{KERNELS / 'cuda'}",
                    "--expt-relaxed-constexpr", *libs,
                    str(KERNELS / "tests" / "random_host_check.cu"), "-o", str(exe)],
                   check=True, capture_output=True)
    yield exe


def run(exe: Path, what: str, dtype: Any, p1: Any, p2: Any, *cdf: float) -> np.ndarray:
    out = subprocess.run([str(exe), what, str(N), str(KEY), str(COUNTER), str(SID), str(p1),
                          str(p2), *(repr(float(c)) for c in cdf)],
                         check=True, capture_output=True).stdout
    return np.frombuffer(out, dtype)


@pytest.mark.parametrize(("what", "dtype", "a", "b"), [
    ("u32", np.float32, 0.0, 1.0), ("u32", np.float32, -3.5, 7.25),
    ("u16", np.float16, 0.0, 1.0), ("u16", np.float16, 2.0, -5.0),
    ("ubf", ml_dtypes.bfloat16, 0.0, 1.0), ("ubf", ml_dtypes.bfloat16, 1.5, 3.0),
    ("u64", np.float64, 0.0, 1.0), ("u64", np.float64, -1e10, 3.3e11)])
def test_uniform_kernels_equal_the_mirror(harness: Path, what: str, dtype: Any, a: float,
                                          b: float) -> None:
    dt = np.dtype(dtype)
    got = run(harness, what, dt, a, b)
    expected = _philox.uniform(dt, N, KEY, COUNTER, SID, a, b)
    np.testing.assert_array_equal(got.view(f"u{dt.itemsize}"), expected.view(f"u{dt.itemsize}"))


@pytest.mark.parametrize(("what", "dtype"), [("b32", np.int32), ("b64", np.int64)])
def test_bits_kernels_equal_the_mirror(harness: Path, what: str, dtype: Any) -> None:
    np.testing.assert_array_equal(run(harness, what, dtype, 0, 1),
                                  _philox.raw_bits(np.dtype(dtype), N, KEY, COUNTER, SID))


@pytest.mark.parametrize(("what", "dtype", "low", "span"), [
    ("i1", np.int8, -128, 255), ("i1", np.uint8, 3, 200), ("i1", np.bool_, 0, 1),
    ("i2", np.int16, -1000, 30000), ("i4", np.int32, -(2**31), 2**32 - 1),
    ("i4", np.int32, 5, 2**31 + 7), ("i8", np.int64, -(2**63), 2**64 - 1),
    ("i8", np.int64, -5, 2**63 + 2**61), ("i8", np.int64, 10, 6), ("i8", np.int64, 7, 2**32),
    ("i8", np.int64, 0, 0)])
def test_integer_kernels_equal_the_mirror(harness: Path, what: str, dtype: Any, low: int,
                                          span: int) -> None:
    got = run(harness, what, np.uint8 if dtype == np.bool_ else dtype, low, span)
    expected = _philox.integers(np.dtype(dtype), N, low, span, KEY, COUNTER, SID)
    np.testing.assert_array_equal(got, expected.astype(got.dtype))


@pytest.mark.parametrize(("loc", "scale"), [(0.0, 1.0), (2.0, 3.0)])
def test_float32_normal_kernel_equals_the_mirror(harness: Path, loc: float, scale: float) -> None:
    # The inverse-CDF transform is integer arithmetic and IEEE float32 roundings: bit for bit.
    got = run(harness, "n32", np.float32, loc, scale)
    expected = _philox.normal(np.dtype(np.float32), N, KEY, COUNTER, SID, loc, scale)
    np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize(("loc", "scale"), [(0.0, 1.0), (-1.0, 0.5)])
def test_float64_normal_kernel_pairs_the_words_as_the_mirror(harness: Path, loc: float,
                                                             scale: float) -> None:
    got = run(harness, "n64", np.float64, loc, scale)
    expected = _philox.normal(np.dtype(np.float64), N, KEY, COUNTER, SID, loc, scale)
    ulp = np.spacing(abs(loc) + np.abs(expected - loc))
    assert float((np.abs(got - expected) / ulp).max()) <= 2


def test_choice_kernel_equals_the_mirror(harness: Path) -> None:
    weights = np.array([0.1, 0.0, 0.25, 0.3, 0.0, 0.35, 0.0, 0.0])
    cdf = np.cumsum(weights)
    got = run(harness, "choice", np.int64, 5, 0, *cdf)
    np.testing.assert_array_equal(got, _philox.categorical(cdf, 5, N, KEY, COUNTER, SID))
