"""Every Hopper GEMM configuration of the installed kernels library, through pygpukit, once each.

Shapes chosen so that the shape table (sm90_gemm.cu) picks each configuration (and the split-K
rule, and both TF32 layouts), for float16 and bfloat16, row- and column-major B, with and
without a fused bias and activation; each product against NumPy in float64.  Small enough to run
under compute-sanitizer (no torch):

    compute-sanitizer --tool memcheck python benchmarks/gemm_probe/check_library.py
"""

from __future__ import annotations

import sys
from typing import Any

import ml_dtypes
import numpy as np

import pygpukit as gp

# (m, n, k, the configuration the table should pick): N and K multiples of 8 (TMA alignment).
SHAPES = [(1500, 1504, 136, "128x256x64_c2x1_coop"), (1500, 1000, 136, "128x128x64_c1x1_pp"),
          (256, 4000, 264, "64x128x64_c1x1_pp"), (100, 1000, 200, "64x64x64_c1x1_pp"),
          (1000, 1000, 136, "128x64x64_c1x1_coop"), (64, 1024, 8192, "128x64x64_c1x1_coop"),
          (37, 72, 64, "64x64x64_c1x1_pp")]
TOL = {"float16": 2e-3, "bfloat16": 1.2e-2, "float32": 3e-3}


def gelu_tanh(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def main() -> int:
    assert gp.backend() == "cuda", gp.backend()
    rng = np.random.default_rng(13)
    dtypes = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
    failures = 0
    cases: list[tuple[str, int, int, int, str]] = [
        (d, m, n, k, want) for d in dtypes for m, n, k, want in SHAPES]
    cases += [("float32", 300, 264, 200, "tf32")]
    for dtype, m, n, k, want in cases:
        np_dtype = dtypes.get(dtype, np.float32)
        a = rng.standard_normal((m, k)).astype(np_dtype)
        w_kn = rng.standard_normal((k, n)).astype(np_dtype)
        bias = rng.standard_normal(n).astype(np_dtype)
        a64, w64, b64 = (x.astype(np.float64) for x in (a, w_kn, bias))
        ga, gw, gb = gp.from_numpy(a), gp.from_numpy(w_kn), gp.from_numpy(bias)
        gw_nk = gp.from_numpy(np.ascontiguousarray(w_kn.T))
        precision = "tf32" if dtype == "float32" else None
        runs = [
            ("matmul kn", lambda: gp.matmul(ga, gw, precision=precision), a64 @ w64),  # noqa: B023
            ("linear nk", lambda: gp.linear(ga, gw_nk, precision=precision),  # noqa: B023
             a64 @ w64),
            ("linear kn bias gelu_tanh",
             lambda: gp.linear(ga, gw.T, gb, "gelu_tanh", precision=precision),  # noqa: B023
             gelu_tanh(a64 @ w64 + b64)),
            ("linear nk bias relu",
             lambda: gp.linear(ga, gw_nk, gb, "relu", precision=precision),  # noqa: B023
             np.maximum(a64 @ w64 + b64, 0.0)),
        ]
        for label, fn, ref in runs:
            got = fn().to_numpy().astype(np.float64)
            kernel = ga._rt.gemm_last_kernel()
            err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
            ok = bool(np.isfinite(got).all()) and err <= TOL[dtype] and (
                kernel.startswith("sm90") and want in kernel)
            failures += not ok
            print(f"{dtype:8} {label:26} {m}x{n}x{k}: rel err {err:.2e} {kernel} "
                  f"{'ok' if ok else 'FAILED (want ' + want + ')'}", flush=True)
    # A batch of distinct products (no folding into one): batch strides through the swapped kernel.
    for dtype, np_dtype in dtypes.items():
        a3 = rng.standard_normal((3, 100, 200)).astype(np_dtype)
        b3 = rng.standard_normal((3, 200, 1000)).astype(np_dtype)
        got = gp.matmul(gp.from_numpy(a3), gp.from_numpy(b3)).to_numpy().astype(np.float64)
        ref = np.matmul(a3.astype(np.float64), b3.astype(np.float64))
        kernel = gp.from_numpy(a3)._rt.gemm_last_kernel()
        err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
        ok = bool(np.isfinite(got).all()) and err <= TOL[dtype] and kernel.startswith("sm90")
        failures += not ok
        print(f"{dtype:8} {'matmul batch 3':26} 100x1000x200: rel err {err:.2e} {kernel} "
              f"{'ok' if ok else 'FAILED'}", flush=True)
    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
