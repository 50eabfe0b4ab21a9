"""``python -m pygpukit demo``: a small end-to-end run, checked against NumPy."""

from __future__ import annotations

import time

import numpy as np


def run(n: int = 10_000_000, seed: int = 0) -> bool:
    """Add two random float32 vectors of ``n`` elements and compare with NumPy.

    Returns
    -------
    Whether the result equals NumPy's bit for bit (IEEE float32 addition is exact-rounded on
    both sides).
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

    print(f"backend: {gp.backend()}")
    print(f"(from_numpy(x) + from_numpy(y)).to_numpy() for {n} float32: equal to NumPy: {equal} "
          f"(max |diff| {max_err:g}; {elapsed * 1e3:.1f} ms incl. transfers)")
    print(f"zeros((256, 256)) + ones((256, 256)) is all ones: {bool((ones == 1).all())}")
    return equal and bool((ones == 1).all())
