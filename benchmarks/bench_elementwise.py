"""Elementwise bandwidth, side by side with PyTorch in the same run, on the same GPU.

Measures, for float32 operands of --mib MiB each: the device-to-device copy (the bandwidth
ceiling, counted as bytes read + written), torch.add and pygpukit's add, both writing into a
preallocated output (``out=``).  CUDA events around each launch (one call's latency, dispatch
included: bench_math's "add f32" row measures the stream's throughput), warm-up first, median
of --repeat samples, random data; repeated --runs times and reported as min / median / max
over the runs.  Writes JSON (device, driver, date, commit, GB/s, ratios) to --out.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _runs import (
    add_runs_argument,
    aggregate,
    repeat_runs,
    report_head,
    require_commit,
    verdict,
)
from _timing import gbps, median_event_ms, torch_event

import pygpukit as gp


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
    # 10 samples per run x 3 runs: the 30 samples of one run before --runs existed.
    parser.add_argument("--repeat", type=int, default=10, help="timed samples per run")
    parser.add_argument("--out", type=Path, required=True)
    add_runs_argument(parser)
    args = parser.parse_args()
    require_commit()

    assert gp.backend() == "cuda", "the benchmark needs the CUDA backend"
    n = args.mib * 2**20 // 4
    rng = np.random.default_rng(0)
    x_host = rng.standard_normal(n, dtype=np.float32)
    y_host = rng.standard_normal(n, dtype=np.float32)

    tx, ty = torch.from_numpy(x_host).cuda(), torch.from_numpy(y_host).cuda()
    tz = torch.empty_like(tx)
    gx, gy = gp.from_numpy(x_host), gp.from_numpy(y_host)
    gz = gp.empty(n)
    gp.add(gx, gy, out=gz)
    assert np.array_equal(gz.to_numpy(), x_host + y_host)

    def one_run(_: int) -> dict[str, Any]:
        copy_ms = time_torch(lambda: tz.copy_(tx), args.repeat)
        torch_add_ms = time_torch(lambda: torch.add(tx, ty, out=tz), args.repeat)
        ours_ms = time_ours(lambda: gp.add(gx, gy, out=gz), args.repeat)
        copy_bw = gbps(2 * 4 * n, copy_ms)
        rows: list[dict[str, Any]] = [
            {"op": "copy (torch, ceiling)", "ms": copy_ms, "GB/s": copy_bw},
            {"op": "add (torch)", "ms": torch_add_ms, "GB/s": gbps(3 * 4 * n, torch_add_ms)},
            {"op": "add (pygpukit)", "ms": ours_ms, "GB/s": gbps(3 * 4 * n, ours_ms)},
        ]
        for row in rows:
            row["vs_copy"] = row["GB/s"] / copy_bw
        return {"rows": rows, "add_speed_vs_torch": torch_add_ms / ours_ms}

    result = aggregate(repeat_runs(args.runs, one_run))
    report = report_head("elementwise", args.runs, operand_mib=args.mib, dtype="float32",
                         policy="out= on both sides", repeat=args.repeat, **result)
    report["verdict"] = verdict(result["add_speed_vs_torch"], better="higher")
    args.out.write_text(json.dumps(report, indent=2))
    print(f"{report['device']}  float32, {args.mib} MiB operands, {args.runs} runs of "
          f"{args.repeat} samples (median over runs)")
    for row in result["rows"]:
        print(f"  {row['op']:24} {row['ms']['median']:8.3f} ms {row['GB/s']['median']:8.1f} GB/s "
              f"{100 * row['vs_copy']['median']:6.1f}% of copy")
    s = result["add_speed_vs_torch"]
    print(f"  pygpukit add speed / torch add speed: {s['median']:.3f} "
          f"[{s['min']:.3f}-{s['max']:.3f}] {report['verdict']}")


if __name__ == "__main__":
    main()
