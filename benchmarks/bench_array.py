"""GPUArray overheads, side by side with PyTorch and CuPy in the same run.

- per-op cost of ``c = a + b`` on 1-element float32 arrays (host time per op over a long loop
  of asynchronous ops, synchronizing once at the end), for pygpukit, torch and cupy;
- ``import pygpukit`` cost over ``import numpy`` (fresh interpreters, median of 7);
- ``from_numpy`` / ``to_numpy`` of 256 MiB vs torch's ``.cuda()`` / ``.cpu()`` (pageable memory).

Every measurement is repeated --runs times and reported as min / median / max over the runs
(ratios per run).  CuPy is optional: without it its column is recorded as absent.  Writes JSON
to --out.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _runs import (
    absolute_verdict,
    add_runs_argument,
    aggregate,
    repeat_runs,
    report_head,
    require_commit,
    verdict,
)


def per_op_us(step: Callable[[], object], sync: Callable[[], object], n: int,
              rounds_n: int) -> float:
    """Median over ``rounds_n`` rounds of host µs per call of ``step`` (n calls, one sync)."""
    for _ in range(200):
        step()
    sync()
    rounds = []
    for _ in range(rounds_n):
        start = time.perf_counter()
        for _ in range(n):
            step()
        sync()
        rounds.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(rounds)


def import_ms(module: str, samples_n: int) -> float:
    """Median wall milliseconds of a fresh interpreter importing ``module``."""
    samples = []
    for _ in range(samples_n):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def transfer_gbps(fn: Callable[[], object], nbytes: int, samples_n: int) -> float:
    """Median GB/s of a blocking transfer function (``samples_n`` calls after a warm-up)."""
    fn()
    samples = []
    for _ in range(samples_n):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return nbytes / statistics.median(samples) / 1e9


def main() -> None:
    """Run all measurements --runs times and write the JSON report."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--ops", type=int, default=20000)
    # Per run: 3 rounds / samples (x 3 runs: about the 5-7 of one run before --runs existed).
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of --ops calls, fresh imports and transfers per run")
    add_runs_argument(parser)
    args = parser.parse_args()
    require_commit()

    import torch

    import pygpukit as gp

    assert gp.backend() == "cuda"
    cp: Any = None
    if importlib.util.find_spec("cupy") is not None:
        import cupy as cp
    else:
        print("cupy is not installed: its column is recorded as absent")

    ga, gb = gp.ones(1), gp.ones(1)
    ta, tb = torch.ones(1, device="cuda"), torch.ones(1, device="cuda")
    if cp is not None:
        ca, cb = cp.ones(1, cp.float32), cp.ones(1, cp.float32)
    nbytes = 256 * 2**20
    host = np.random.default_rng(0).standard_normal(nbytes // 4, dtype=np.float32)
    thost = torch.from_numpy(host)
    garr, tdev = gp.from_numpy(host), thost.cuda()
    assert np.array_equal(garr.to_numpy(), host)

    def one_run(_: int) -> dict[str, Any]:
        k = args.rounds
        ours = per_op_us(lambda: ga + gb, gp.synchronize, args.ops, k)
        theirs_torch = per_op_us(lambda: ta + tb, torch.cuda.synchronize, args.ops, k)
        add: dict[str, Any] = {"pygpukit": ours, "torch": theirs_torch,
                               "torch_over_ours": theirs_torch / ours}
        if cp is not None:
            theirs_cupy = per_op_us(lambda: ca + cb, cp.cuda.Device().synchronize, args.ops, k)
            add.update(cupy=theirs_cupy, cupy_over_ours=theirs_cupy / ours)
        numpy_ms, pygpukit_ms = import_ms("numpy", k), import_ms("pygpukit", k)
        h2d_ours = transfer_gbps(lambda: (gp.from_numpy(host), gp.synchronize()), nbytes, k)
        h2d_torch = transfer_gbps(lambda: (thost.cuda(), torch.cuda.synchronize()), nbytes, k)
        d2h_ours = transfer_gbps(garr.to_numpy, nbytes, k)
        d2h_torch = transfer_gbps(tdev.cpu, nbytes, k)
        return {
            "add_1elem_us": add,
            "import_ms": {"numpy": numpy_ms, "pygpukit": pygpukit_ms,
                          "pygpukit_minus_numpy": pygpukit_ms - numpy_ms},
            "transfer_256MiB_GBps": {
                "from_numpy": h2d_ours, "torch_cuda": h2d_torch, "h2d_ratio": h2d_ours / h2d_torch,
                "to_numpy": d2h_ours, "torch_cpu": d2h_torch, "d2h_ratio": d2h_ours / d2h_torch,
            },
        }

    result = aggregate(repeat_runs(args.runs, one_run))
    add = result["add_1elem_us"]
    if cp is None:
        add["cupy"] = "absent: cupy is not installed"
    transfer = result["transfer_256MiB_GBps"]
    verdicts = {
        "add_1elem_le_2.5us": absolute_verdict(add["pygpukit"], 2.5),
        "add_1elem_vs_torch": verdict(add["torch_over_ours"], better="higher"),
        "import_le_60ms": absolute_verdict(result["import_ms"]["pygpukit_minus_numpy"], 60.0),
        "from_numpy_ge_90pct_of_torch": verdict(transfer["h2d_ratio"], better="higher",
                                                target=0.9),
        "to_numpy_ge_90pct_of_torch": verdict(transfer["d2h_ratio"], better="higher",
                                              target=0.9),
    }
    report = report_head("array", args.runs, ops=args.ops, rounds=args.rounds, **result,
                         verdicts=verdicts)
    args.out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
