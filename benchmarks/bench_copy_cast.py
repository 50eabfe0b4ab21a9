"""Copy / cast bandwidth through the public API, side by side with PyTorch in the same run.

Rows (float32 source of --mib MiB, random data), each in two like-for-like forms:

- both allocate: ``x.astype(gp.bfloat16)`` vs ``t.to(torch.bfloat16)``, ``x.copy()`` vs
  ``t.clone()``, ``gp.ascontiguousarray(m.T)`` vs ``m.t().contiguous()``, and the transposed
  cast ``gp.ascontiguousarray(m.T, gp.bfloat16)`` vs ``m.t().to(torch.bfloat16,
  memory_format=torch.contiguous_format)``;
- both write into an existing array: ``dst[...] = src`` vs ``dst.copy_(src)``, for the same
  four.

GB/s count bytes read + written; "% of copy" is the ratio to torch's ``copy_`` of a float32
buffer of the same size (the bandwidth ceiling), measured in each run.  pygpukit ops are timed
with pygpukit events on its current stream, torch's with torch events on torch's; 3 warm-ups,
median of --repeat samples of --batch back-to-back calls behind one untimed call (the device's
throughput, as bench_math).  Every result is checked bit for bit against torch's once; the
timings are repeated --runs times and reported as min / median / max over the runs.
"""

from __future__ import annotations

import argparse
import json
import math
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
)
from _timing import (
    ceiling_row,
    median_event_ms,
    paired_rows,
    pct_of_copy,
    print_bandwidth_rows,
    torch_event,
    torch_verdicts,
)

import pygpukit as gp

ALLOC, INTO = "both allocate", "both write into an existing array"


def bits(a: Any) -> np.ndarray[Any, Any]:
    """The raw bits of a pygpukit array or a torch tensor, as a NumPy array (exact compare)."""
    if isinstance(a, torch.Tensor):
        as_int = {2: torch.int16, 4: torch.int32}[a.element_size()]
        return a.contiguous().view(as_int).cpu().numpy()
    host = a.to_numpy()
    return host.view({2: np.int16, 4: np.int32}[host.dtype.itemsize])


def main() -> None:
    """Run the benchmark and write the JSON report."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=256, help="float32 source size in MiB")
    # 7 samples per run x 3 runs: about the 20 samples of one run before --runs existed.
    parser.add_argument("--repeat", type=int, default=7, help="timed samples per run")
    parser.add_argument("--batch", type=int, default=10,
                        help="back-to-back calls per timed sample (1: per-call latency)")
    parser.add_argument("--out", type=Path, required=True)
    add_runs_argument(parser)
    args = parser.parse_args()
    require_commit()
    assert gp.backend() == "cuda", "the benchmark needs the CUDA backend"

    n = args.mib * 2**20 // 4
    side = math.isqrt(n)
    host = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    gx, tx = gp.from_numpy(host), torch.from_numpy(host).cuda()
    gm, tm = gx[: side * side].reshape(side, side), tx[: side * side].view(side, side)
    torch.cuda.synchronize()

    def ours(fn: Callable[[], object]) -> float:
        return median_event_ms(fn, args.repeat, gp.Event, args.batch)

    def theirs(fn: Callable[[], object]) -> float:
        return median_event_ms(fn, args.repeat, torch_event, args.batch)

    g16, t16 = gp.empty(n, gp.bfloat16), torch.empty(n, device="cuda", dtype=torch.bfloat16)
    g32, t32 = gp.empty(n), torch.empty_like(tx)
    gt32, tt32 = gp.empty((side, side)), torch.empty(side, side, device="cuda")
    gt16 = gp.empty((side, side), gp.bfloat16)
    tt16 = torch.empty(side, side, device="cuda", dtype=torch.bfloat16)

    def assign(dst: gp.GPUArray, src: gp.GPUArray) -> None:
        dst[...] = src

    transpose = f"transpose {side}x{side} f32"
    transpose_cast = f"transpose+cast {side}x{side} f32->bf16"
    # (op, policy, bytes read + written, ours, torch's, what each side calls)
    cases: list[tuple[str, str, int, Callable[[], Any], Callable[[], Any], str]] = [
        ("cast f32->bf16", ALLOC, 6 * n, lambda: gx.astype(gp.bfloat16),
         lambda: tx.to(torch.bfloat16), "x.astype(gp.bfloat16) | t.to(torch.bfloat16)"),
        ("cast f32->bf16", INTO, 6 * n, lambda: assign(g16, gx), lambda: t16.copy_(tx),
         "y16[...] = x | y16.copy_(t)"),
        ("copy f32", ALLOC, 8 * n, lambda: gx.copy(), lambda: tx.clone(),
         "x.copy() | t.clone()"),
        ("copy f32", INTO, 8 * n, lambda: assign(g32, gx), lambda: t32.copy_(tx),
         "y[...] = x | y.copy_(t)"),
        (transpose, ALLOC, 8 * side * side, lambda: gp.ascontiguousarray(gm.T),
         lambda: tm.t().contiguous(), "gp.ascontiguousarray(m.T) | m.t().contiguous()"),
        (transpose, INTO, 8 * side * side, lambda: assign(gt32, gm.T),
         lambda: tt32.copy_(tm.t()), "y[...] = m.T | y.copy_(m.t())"),
        (transpose_cast, ALLOC, 6 * side * side,
         lambda: gp.ascontiguousarray(gm.T, gp.bfloat16),
         lambda: tm.t().to(torch.bfloat16, memory_format=torch.contiguous_format),
         "gp.ascontiguousarray(m.T, gp.bfloat16) | m.t().to(torch.bfloat16, "
         "memory_format=torch.contiguous_format)"),
        (transpose_cast, INTO, 6 * side * side, lambda: assign(gt16, gm.T),
         lambda: tt16.copy_(tm.t()), "y16[...] = m.T | y16.copy_(m.t())"),
    ]
    # Once: every result equals torch's bit for bit (the casts round to nearest even alike).
    for op, policy, _nbytes, mine, torch_fn, _calls in cases:
        got, want = mine(), torch_fn()
        if policy == INTO:
            got, want = {"cast f32->bf16": (g16, t16), "copy f32": (g32, t32),
                         transpose: (gt32, tt32), transpose_cast: (gt16, tt16)}[op]
        assert np.array_equal(bits(got), bits(want)), f"{op} ({policy}): differs from torch"
    ceiling_out = torch.empty_like(tx)

    def one_run(_: int) -> list[dict[str, Any]]:
        ceiling = ceiling_row(theirs(lambda: ceiling_out.copy_(tx)), 8 * n, INTO)
        rows = [ceiling]
        for op, policy, nbytes, mine, torch_fn, calls in cases:
            ours_call, torch_call = calls.split(" | ")
            rows += paired_rows(op, policy, nbytes, ours(mine), theirs(torch_fn),
                                {"calls": ours_call}, {"calls": torch_call})
        pct_of_copy(rows, ceiling["GB/s"])
        return rows

    rows = aggregate(repeat_runs(args.runs, one_run))
    torch_verdicts(rows)
    report = report_head("copy_cast", args.runs, source_mib=args.mib, repeat=args.repeat,
                         batch=args.batch, rows=rows)
    args.out.write_text(json.dumps(report, indent=2))
    print_bandwidth_rows(f"{report['device']}  {args.mib} MiB float32 source, {args.runs} runs "
                         f"of {args.repeat} samples of {args.batch} calls", rows)


if __name__ == "__main__":
    main()
