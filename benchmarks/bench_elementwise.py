"""Elementwise bandwidth, side by side with PyTorch in the same run, on the same GPU.

Measures, for float32 operands of --mib MiB each: the device-to-device copy (the bandwidth
ceiling, counted as bytes read + written), torch.add, and pygpukit's add.  CUDA events around
each launch, warm-up first, median of --repeat runs, random data.  Writes JSON (device, driver,
date, commit, GB/s, ratios) to --out.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _timing import median_event_ms, torch_event

import pygpukit as gp
import pygpukit_driver as drv


def time_ours(fn: Callable[[], object], repeat: int) -> float:
    """Median milliseconds of ``fn`` measured with pygpukit events on the current stream."""
    return median_event_ms(fn, repeat, gp.Event)


def time_torch(fn: Callable[[], object], repeat: int) -> float:
    """Median milliseconds of ``fn`` measured with torch CUDA events."""
    return median_event_ms(fn, repeat, torch_event)


def main() -> None:
    """Run the benchmark and write the JSON report."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=256, help="size of each operand in MiB")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    assert gp.backend() == "cuda", "the benchmark needs the CUDA backend"
    n = args.mib * 2**20 // 4
    rng = np.random.default_rng(0)
    x_host = rng.standard_normal(n, dtype=np.float32)
    y_host = rng.standard_normal(n, dtype=np.float32)

    tx, ty = torch.from_numpy(x_host).cuda(), torch.from_numpy(y_host).cuda()
    tz = torch.empty_like(tx)
    copy_ms = time_torch(lambda: tz.copy_(tx), args.repeat)
    torch_add_ms = time_torch(lambda: torch.add(tx, ty, out=tz), args.repeat)

    gx, gy = gp.from_numpy(x_host), gp.from_numpy(y_host)
    gz = gp.empty(n)
    ours_ms = time_ours(lambda: gp.add(gx, gy, out=gz), args.repeat)
    assert np.array_equal(gz.to_numpy(), x_host + y_host)

    def gbps(nbytes: int, ms: float) -> float:
        return nbytes / (ms * 1e-3) / 1e9

    copy_bw = gbps(2 * 4 * n, copy_ms)
    rows: list[dict[str, Any]] = [
        {"op": "copy (torch, ceiling)", "ms": copy_ms, "GB/s": copy_bw},
        {"op": "add (torch)", "ms": torch_add_ms, "GB/s": gbps(3 * 4 * n, torch_add_ms)},
        {"op": "add (pygpukit)", "ms": ours_ms, "GB/s": gbps(3 * 4 * n, ours_ms)},
    ]
    for row in rows:
        row["vs_copy"] = row["GB/s"] / copy_bw
    ours_vs_torch = torch_add_ms / ours_ms
    version = drv.driver_version()
    report = {
        "benchmark": "elementwise",
        "device": drv.Device(0).name,
        "driver_cuda_version": f"{version // 1000}.{version % 1000 // 10}",
        "torch": torch.__version__,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": os.environ.get("PYGPUKIT_COMMIT", "unknown"),
        "operand_mib": args.mib,
        "dtype": "float32",
        "repeat": args.repeat,
        "rows": rows,
        "add_speed_vs_torch": ours_vs_torch,
    }
    args.out.write_text(json.dumps(report, indent=2))
    print(f"{report['device']}  float32, {args.mib} MiB operands, median of {args.repeat}")
    for row in rows:
        print(f"  {row['op']:24} {row['ms']:8.3f} ms {row['GB/s']:8.1f} GB/s "
              f"{100 * row['vs_copy']:6.1f}% of copy")
    print(f"  pygpukit add speed / torch add speed: {ours_vs_torch:.3f}")


if __name__ == "__main__":
    main()
