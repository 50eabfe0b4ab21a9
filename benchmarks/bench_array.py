"""GPUArray overheads, side by side with PyTorch and CuPy in the same run.

- per-op cost of ``c = a + b`` on 1-element float32 arrays (host time per op over a long loop
  of asynchronous ops, synchronizing once at the end), for pygpukit, torch and cupy;
- ``import pygpukit`` cost over ``import numpy`` (fresh interpreters, median of 7);
- ``from_numpy`` / ``to_numpy`` of 256 MiB vs torch's ``.cuda()`` / ``.cpu()`` (pageable memory).

Writes JSON to --out.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def per_op_us(step: Callable[[], object], sync: Callable[[], object], n: int) -> float:
    """Median over 5 rounds of host microseconds per call of ``step`` (n calls, one sync)."""
    for _ in range(200):
        step()
    sync()
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            step()
        sync()
        rounds.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(rounds)


def import_ms(module: str) -> float:
    """Median wall milliseconds of a fresh interpreter importing ``module``."""
    samples = []
    for _ in range(7):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def transfer_gbps(fn: Callable[[], object], nbytes: int) -> float:
    """Median GB/s of a blocking transfer function (5 runs after a warm-up)."""
    fn()
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return nbytes / statistics.median(samples) / 1e9


def main() -> None:
    """Run all measurements and write the JSON report."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--ops", type=int, default=20000)
    args = parser.parse_args()

    import cupy as cp
    import torch

    import pygpukit as gp
    import pygpukit_driver as drv

    assert gp.backend() == "cuda"
    report: dict[str, Any] = {
        "benchmark": "array",
        "device": gp.Device(0).name,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": os.environ.get("PYGPUKIT_COMMIT", "unknown"),
        "torch": torch.__version__,
        "cupy": cp.__version__,
    }

    ga, gb = gp.ones(1), gp.ones(1)
    ta, tb = torch.ones(1, device="cuda"), torch.ones(1, device="cuda")
    ca, cb = cp.ones(1, cp.float32), cp.ones(1, cp.float32)
    ours = per_op_us(lambda: ga + gb, gp.synchronize, args.ops)
    theirs_torch = per_op_us(lambda: ta + tb, torch.cuda.synchronize, args.ops)
    theirs_cupy = per_op_us(lambda: ca + cb, cp.cuda.Device().synchronize, args.ops)
    report["add_1elem_us"] = {"pygpukit": ours, "torch": theirs_torch, "cupy": theirs_cupy,
                              "torch_over_ours": theirs_torch / ours,
                              "cupy_over_ours": theirs_cupy / ours}

    numpy_ms, pygpukit_ms = import_ms("numpy"), import_ms("pygpukit")
    report["import_ms"] = {"numpy": numpy_ms, "pygpukit": pygpukit_ms,
                           "pygpukit_minus_numpy": pygpukit_ms - numpy_ms}

    nbytes = 256 * 2**20
    host = np.random.default_rng(0).standard_normal(nbytes // 4, dtype=np.float32)
    thost = torch.from_numpy(host)
    h2d_ours = transfer_gbps(lambda: (gp.from_numpy(host), gp.synchronize()), nbytes)
    h2d_torch = transfer_gbps(lambda: (thost.cuda(), torch.cuda.synchronize()), nbytes)
    garr, tdev = gp.from_numpy(host), thost.cuda()
    d2h_ours = transfer_gbps(garr.to_numpy, nbytes)
    d2h_torch = transfer_gbps(tdev.cpu, nbytes)
    assert np.array_equal(garr.to_numpy(), host)
    report["transfer_256MiB_GBps"] = {
        "from_numpy": h2d_ours, "torch_cuda": h2d_torch, "h2d_ratio": h2d_ours / h2d_torch,
        "to_numpy": d2h_ours, "torch_cpu": d2h_torch, "d2h_ratio": d2h_ours / d2h_torch,
    }
    version = drv.driver_version()
    report["driver_cuda_version"] = f"{version // 1000}.{version % 1000 // 10}"
    args.out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
