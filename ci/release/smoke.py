"""Smoke test of an installed release: each native library loads, and arrays compute.

Run with PYGPUKIT_BACKEND=cpu on a machine without a GPU (the release checks do).
"""

from __future__ import annotations

import numpy as np

import pygpukit as gp
import pygpukit_driver._driver
import pygpukit_kernels
import pygpukit_sched._core

a = np.arange(6, dtype=np.float32).reshape(2, 3)
y = (gp.from_numpy(a) + gp.ones((2, 3))) @ gp.from_numpy(np.ones((3, 2), np.float32))
assert np.allclose(y.to_numpy(), (a + 1) @ np.ones((3, 2))), y.to_numpy()
# build_info() dlopens the kernels' host library (cudart inside opens the driver only later).
kernels = pygpukit_kernels.build_info()
print(f"pygpukit {gp.__version__}, backend {gp.backend()}: ok; kernels for {kernels.cuda_archs}; "
      f"{pygpukit_driver._driver.__name__}, {pygpukit_sched._core.__name__} loaded")
