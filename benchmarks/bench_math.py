"""Elementwise math and reductions at memory bandwidth, side by side with PyTorch in one run.

Operands of --mib MiB (float32 unless named; random data, never zeros): add, multiply (two
arrays and by a scalar), a broadcast add, gelu (unary), the float32 -> bfloat16 cast, sum and
max (full and over the last axis), bfloat16 add, softmax and layer_norm over rows of 4096 (one
fused kernel each: bytes counted as one read and one write), each vs the torch op on the same
GPU.  Like for like: a row either writes into a preallocated output on both sides (``out=``)
or allocates its result on both sides (each library's caching allocator); the row's
``policy`` says which.  GB/s count bytes read + written; "% of copy" is the ratio to torch's
``copy_`` of a float32 buffer of the same size (the bandwidth ceiling), measured in each run.
pygpukit ops are timed with pygpukit events on its current stream, torch's with torch events
on torch's; 3 warm-ups, median of --repeat samples, each sample the time of --batch
back-to-back calls divided by --batch, behind one untimed call that keeps the device busy while
the first timed one is dispatched (both libraries alike, the copy ceiling too): the device's
throughput, so that the host's per-call dispatch cost (Python, ~5-30 us) is not counted as
device time when it is shorter than the kernel; --batch 1 gives the per-call latency instead.
The results are checked once; the timings are repeated --runs times and every figure is
reported as min / median / max over the runs (ratios computed per run).  Writes JSON to --out.
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

# What each row compares besides the op: both sides write into a preallocated output, or both
# allocate their result (from their caching allocators).
OUT, ALLOC = "out= on both sides", "both allocate"


def main() -> None:
    """Run the benchmark and write the JSON report."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=256, help="float32 operand size in MiB")
    # 7 samples per run x 3 runs: about the 20 samples of one run before --runs existed.
    parser.add_argument("--repeat", type=int, default=7, help="timed samples per run")
    parser.add_argument("--batch", type=int, default=10,
                        help="back-to-back calls per timed sample (1: per-call latency)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--skip-checks", action="store_true",
                        help="skip the result checks (quicker sweeps of launch settings)")
    add_runs_argument(parser)
    args = parser.parse_args()
    require_commit()
    assert gp.backend() == "cuda", "the benchmark needs the CUDA backend"

    n = args.mib * 2**20 // 4
    cols = 4096
    rng = np.random.default_rng(0)
    xh = rng.uniform(0.5, 2.0, n).astype(np.float32)
    yh = rng.uniform(0.5, 2.0, n).astype(np.float32)
    gx, gy = gp.from_numpy(xh), gp.from_numpy(yh)
    tx, ty = torch.from_numpy(xh).cuda(), torch.from_numpy(yh).cuda()
    brow_h = yh[:cols].copy()
    gb, tb = gp.from_numpy(brow_h), torch.from_numpy(brow_h).cuda()
    gx2, tx2 = gx.reshape(-1, cols), tx.view(-1, cols)
    torch.cuda.synchronize()

    def ours(fn: Callable[[], object]) -> float:
        return median_event_ms(fn, args.repeat, gp.Event, args.batch)

    def theirs(fn: Callable[[], object]) -> float:
        return median_event_ms(fn, args.repeat, torch_event, args.batch)

    cases: list[tuple[str, str, int, Callable[[], object], Callable[[], object],
                      Callable[[], None]]] = []

    def row(op: str, policy: str, nbytes: int, mine: Callable[[], object],
            torch_fn: Callable[[], object], check: Callable[[], None]) -> None:
        cases.append((op, policy, nbytes, mine, torch_fn, check))

    def close(got: gp.GPUArray, want: torch.Tensor, rtol: float) -> Callable[[], None]:
        def check() -> None:
            np.testing.assert_allclose(got.to_numpy().astype(np.float64),
                                       want.float().cpu().numpy().astype(np.float64),
                                       rtol=rtol, atol=rtol)
        return check

    gz = gp.empty(n)
    tz = torch.empty_like(tx)
    row("add f32", OUT, 12 * n, lambda: gp.add(gx, gy, out=gz),
        lambda: torch.add(tx, ty, out=tz),
        lambda: (gp.add(gx, gy, out=gz), close(gz, tx + ty, 1e-6)())[1])
    row("multiply f32", OUT, 12 * n, lambda: gp.multiply(gx, gy, out=gz),
        lambda: torch.mul(tx, ty, out=tz),
        lambda: (gp.multiply(gx, gy, out=gz), close(gz, tx * ty, 1e-6)())[1])
    row("multiply f32 by scalar", OUT, 8 * n, lambda: gp.multiply(gx, 1.5, out=gz),
        lambda: torch.mul(tx, 1.5, out=tz),
        lambda: (gp.multiply(gx, 1.5, out=gz), close(gz, tx * 1.5, 1e-6)())[1])
    gz2, tz2 = gz.reshape(-1, cols), tz.view(-1, cols)
    row("add f32 broadcast row", OUT, 8 * n, lambda: gp.add(gx2, gb, out=gz2),
        lambda: torch.add(tx2, tb, out=tz2),
        lambda: (gp.add(gx2, gb, out=gz2), close(gz2, tx2 + tb, 1e-6)())[1])
    # torch.nn.functional.gelu takes no out=: both sides allocate their result.
    row("gelu(tanh) f32", ALLOC, 8 * n, lambda: gp.gelu(gx, approximate="tanh"),
        lambda: torch.nn.functional.gelu(tx, approximate="tanh"),
        close(gp.gelu(gx, approximate="tanh"),
              torch.nn.functional.gelu(tx, approximate="tanh"), 1e-5))
    row("cast f32->bf16", ALLOC, 6 * n, lambda: gx.astype(gp.bfloat16),
        lambda: tx.to(torch.bfloat16),
        close(gx.astype(gp.bfloat16), tx.to(torch.bfloat16), 0))
    gxb, gyb = gx.astype(gp.bfloat16), gy.astype(gp.bfloat16)
    txb, tyb = tx.to(torch.bfloat16), ty.to(torch.bfloat16)
    g16, t16 = gp.empty(n, gp.bfloat16), torch.empty_like(txb)
    row("add bf16", OUT, 6 * n, lambda: gp.add(gxb, gyb, out=g16),
        lambda: torch.add(txb, tyb, out=t16),
        lambda: (gp.add(gxb, gyb, out=g16), close(g16, txb + tyb, 1e-2)())[1])
    row("sum f32 (all)", ALLOC, 4 * n, lambda: gx.sum(), lambda: tx.sum(),
        close(gx.sum(), tx.double().sum(), 1e-4))
    row("max f32 (all)", ALLOC, 4 * n, lambda: gx.max(), lambda: tx.max(),
        close(gx.max(), tx.max(), 0))
    row("sum f32 (last axis, 4096)", ALLOC, 4 * n, lambda: gx2.sum(axis=-1),
        lambda: tx2.sum(dim=-1), close(gx2.sum(axis=-1), tx2.double().sum(dim=-1), 1e-4))
    row("max f32 (last axis, 4096)", ALLOC, 4 * n, lambda: gx2.max(axis=-1),
        lambda: tx2.amax(dim=-1), close(gx2.max(axis=-1), tx2.amax(dim=-1), 0))

    w_h = rng.uniform(0.5, 2.0, cols).astype(np.float32)
    gw, tw = gp.from_numpy(w_h), torch.from_numpy(w_h).cuda()
    row("softmax f32 (last axis, 4096)", ALLOC, 8 * n, lambda: gp.softmax(gx2),
        lambda: torch.softmax(tx2, dim=-1), close(gp.softmax(gx2), torch.softmax(tx2, -1), 1e-5))
    row("layer_norm f32 (last axis, 4096)", ALLOC, 8 * n, lambda: gp.layer_norm(gx2, gw, gb),
        lambda: torch.nn.functional.layer_norm(tx2, (cols,), tw, tb),
        close(gp.layer_norm(gx2, gw, gb),
              torch.nn.functional.layer_norm(tx2, (cols,), tw, tb), 1e-4))

    if not args.skip_checks:  # once: the results do not change between runs
        for case in cases:
            case[5]()
    # The checks hold their results (GiBs of device memory): drop them before timing.
    timed = [case[:5] for case in cases]
    cases.clear()
    ceiling_out = torch.empty_like(tx)

    def one_run(_: int) -> list[dict[str, Any]]:
        ceiling = ceiling_row(theirs(lambda: ceiling_out.copy_(tx)), 8 * n)
        rows = [ceiling]
        for op, policy, nbytes, mine, torch_fn in timed:
            rows += paired_rows(op, policy, nbytes, ours(mine), theirs(torch_fn))
        pct_of_copy(rows, ceiling["GB/s"])
        return rows

    rows = aggregate(repeat_runs(args.runs, one_run))
    torch_verdicts(rows)
    report = report_head("math", args.runs, operand_mib=args.mib, repeat=args.repeat,
                         batch=args.batch, rows=rows)
    args.out.write_text(json.dumps(report, indent=2))
    print_bandwidth_rows(f"{report['device']}  {args.mib} MiB float32 operands, {args.runs} "
                         f"runs of {args.repeat} samples of {args.batch} calls", rows)


if __name__ == "__main__":
    main()
