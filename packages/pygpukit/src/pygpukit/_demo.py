"""``python -m pygpukit demo``: a small end-to-end run, checked against NumPy."""

from __future__ import annotations

import time

import numpy as np


def run(n: int = 10_000_000, seed: int = 0) -> bool:
    """Add two random float32 vectors and multiply two matrices; compare with NumPy.

    Returns
    -------
    Whether the sum equals NumPy's bit for bit (IEEE float32 addition is exact-rounded on
    both sides) and the matrix products are within float32 / float16 accuracy of a float64
    product.
    """
    import pygpukit as gp

    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)

    start = time.perf_counter()
    gx, gy = gp.from_numpy(x), gp.from_numpy(y)
    gz = gx + gy
    z = gz.to_numpy()
    elapsed = time.perf_counter() - start

    expected = x + y
    equal = bool(np.array_equal(z, expected))
    max_err = float(np.max(np.abs(z - expected))) if n else 0.0
    ones = (gp.zeros((256, 256)) + gp.ones((256, 256))).to_numpy()

    # A matrix product: float32 (FP32 accuracy) against NumPy in float64, and float16 on
    # tensor cores where there is a GPU.
    size = 1024
    ma = rng.standard_normal((size, size), dtype=np.float32)
    mb = rng.standard_normal((size, size), dtype=np.float32)
    ga, gb = gp.from_numpy(ma), gp.from_numpy(mb)
    (ga @ gb).to_numpy()  # warm-up: first use loads the kernels
    start = time.perf_counter()
    gc = ga @ gb
    mc = gc.to_numpy()
    matmul_s = time.perf_counter() - start
    ref = ma.astype(np.float64) @ mb.astype(np.float64)
    matmul_err = float(np.linalg.norm(mc - ref) / np.linalg.norm(ref))
    half = (ga.astype(gp.float16) @ gb.astype(gp.float16)).to_numpy().astype(np.float64)
    half_err = float(np.linalg.norm(half - ref) / np.linalg.norm(ref))
    matmul_ok = matmul_err <= 1e-5 and half_err <= 1e-2

    print(f"backend: {gp.backend()}")
    print(f"(from_numpy(x) + from_numpy(y)).to_numpy() for {n} float32: equal to NumPy: {equal} "
          f"(max |diff| {max_err:g}; {elapsed * 1e3:.1f} ms incl. transfers)")
    print(f"zeros((256, 256)) + ones((256, 256)) is all ones: {bool((ones == 1).all())}")
    print(f"matmul {size}x{size}x{size} float32: relative error vs float64 {matmul_err:.2e} "
          f"({matmul_s * 1e3:.2f} ms incl. download); float16: {half_err:.2e}")
    return equal and bool((ones == 1).all()) and matmul_ok
