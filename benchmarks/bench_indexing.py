"""Advanced indexing side by side with PyTorch in one run: gather, scatter, mask select.

float32 data, random int64 indices (never sorted, never zeros):

- gather of 2^--log2-gather random indices from a source of as many elements: ``a[idx]``
  (checked: the kernel's bounds flag is read back, one 8-byte copy per call, which waits for
  the kernel), the same under ``gp.index_check("deferred")`` (the flag is read at the next
  synchronization: torch's own bounds check is a device-side assert, asynchronous too) and
  ``gp.take(a, idx, mode="clip")`` (nothing read back), vs ``torch.index_select(a, 0, idx)``
  and ``torch.take(a, idx)``;
- scatter of as many random distinct indices: ``a[idx] = v`` (checked, immediate and
  deferred, as the gather) and ``gp.put(a, idx, v, mode="clip")`` (nothing read back) vs
  ``a.index_put_((idx,), v)``;
- scatter-add with duplicates (a quarter as many destinations as values), like for like:
  ``gp.add_at`` (deterministic: sort + segmented reduction) vs ``a.index_add_(0, idx, v)``
  under ``torch.use_deterministic_algorithms(True)``, and ``gp.add_at(..., deterministic=False)``
  (atomics; checked immediately and deferred) vs ``a.index_add_`` in torch's default mode
  (atomics);
- boolean mask select of 2^--log2-mask elements (half of them true, at random): ``x[mask]``
  vs torch's ``x[mask]``; both count the true elements first (torch: nonzero), a host read.

Bytes counted by hand: a gather reads the index (8 B) and the element (4 B) and writes 4 B per
index; a scatter reads index and value, writes the element; a mask select reads 4 + 1 B per
element and writes 4 B per selected one.  "% of copy" is against torch's ``copy_`` of a float32
buffer of the mask's size, measured in each run.  Timing as in bench_math.py: each library's
events on its own stream, 3 warm-ups, median of --repeat samples of --batch back-to-back calls;
results checked once against torch; everything repeated --runs times (min / median / max).
Writes JSON to --out.
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

ALLOC, INPLACE = "both allocate", "in place on both sides"


def main() -> None:
    """Run the benchmark and write the JSON report."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--log2-gather", type=int, default=24,
                        help="log2 of the number of gathered / scattered indices")
    parser.add_argument("--log2-mask", type=int, default=26, help="log2 of the masked elements")
    parser.add_argument("--repeat", type=int, default=7, help="timed samples per run")
    parser.add_argument("--batch", type=int, default=10,
                        help="back-to-back calls per timed sample (1: per-call latency)")
    parser.add_argument("--out", type=Path, required=True)
    add_runs_argument(parser)
    args = parser.parse_args()
    require_commit()
    assert gp.backend() == "cuda", "the benchmark needs the CUDA backend"

    rng = np.random.default_rng(0)
    n = 2**args.log2_gather
    src_h = rng.standard_normal(n).astype(np.float32)
    idx_h = rng.integers(0, n, n, dtype=np.int64)
    perm_h = rng.permutation(n).astype(np.int64)
    vals_h = rng.standard_normal(n).astype(np.float32)
    dup_h = rng.integers(0, n // 4, n, dtype=np.int64)
    g_src, t_src = gp.from_numpy(src_h), torch.from_numpy(src_h).cuda()
    g_idx, t_idx = gp.from_numpy(idx_h), torch.from_numpy(idx_h).cuda()
    g_perm, t_perm = gp.from_numpy(perm_h), torch.from_numpy(perm_h).cuda()
    g_vals, t_vals = gp.from_numpy(vals_h), torch.from_numpy(vals_h).cuda()
    g_dup, t_dup = gp.from_numpy(dup_h), torch.from_numpy(dup_h).cuda()
    g_dst, t_dst = gp.zeros(n), torch.zeros(n, device="cuda")
    g_acc, t_acc = gp.zeros(n // 4), torch.zeros(n // 4, device="cuda")

    m = 2**args.log2_mask
    x_h = rng.standard_normal(m).astype(np.float32)
    mask_h = rng.random(m) < 0.5
    selected = int(mask_h.sum())
    g_x, t_x = gp.from_numpy(x_h), torch.from_numpy(x_h).cuda()
    g_mask, t_mask = gp.from_numpy(mask_h), torch.from_numpy(mask_h).cuda()
    torch.cuda.synchronize()

    def ours(fn: Callable[[], object]) -> float:
        return median_event_ms(fn, args.repeat, gp.Event, args.batch)

    def theirs(fn: Callable[[], object]) -> float:
        return median_event_ms(fn, args.repeat, torch_event, args.batch)

    def same(got: gp.GPUArray, want: torch.Tensor) -> None:
        np.testing.assert_array_equal(got.to_numpy(), want.cpu().numpy())

    def torch_index_add_deterministic() -> None:
        # torch's index_add_ on CUDA has a deterministic algorithm in this mode (its docs list
        # it); the switch itself costs a Python call on torch's side only.
        torch.use_deterministic_algorithms(True)
        try:
            t_acc.index_add_(0, t_dup, t_vals)
        finally:
            torch.use_deterministic_algorithms(False)

    # Checks, once.
    same(g_src[g_idx], torch.index_select(t_src, 0, t_idx))
    same(gp.take(g_src, g_idx, mode="clip"), torch.take(t_src, t_idx))
    g_dst[g_perm] = g_vals
    t_dst.index_put_((t_perm,), t_vals)
    same(g_dst, t_dst)
    g_dst[...] = 0
    gp.put(g_dst, g_perm, g_vals, mode="clip")
    same(g_dst, t_dst)
    gp.add_at(g_acc, g_dup, g_vals)
    t_acc.index_add_(0, t_dup, t_vals)
    np.testing.assert_allclose(g_acc.to_numpy(), t_acc.cpu().numpy(), rtol=1e-4, atol=1e-4)
    first = g_acc.to_numpy()
    g_acc[...] = 0
    gp.add_at(g_acc, g_dup, g_vals)
    assert g_acc.to_numpy().tobytes() == first.tobytes(), "add_at is not deterministic"
    g_acc[...] = 0
    t_acc.zero_()
    gp.add_at(g_acc, g_dup, g_vals, deterministic=False)
    torch_index_add_deterministic()
    np.testing.assert_allclose(g_acc.to_numpy(), t_acc.cpu().numpy(), rtol=1e-4, atol=1e-4)
    same(g_x[g_mask], t_x[t_mask])

    # (op, allocation policy, bytes, ours, torch's, our index-check mode)
    cases: list[tuple[str, str, int, Callable[[], object], Callable[[], object], str]] = [
        ("gather f32 a[idx] (checked) vs index_select", ALLOC, 16 * n,
         lambda: g_src[g_idx], lambda: torch.index_select(t_src, 0, t_idx), "immediate"),
        ("gather f32 a[idx] (checked, deferred) vs index_select", ALLOC, 16 * n,
         lambda: g_src[g_idx], lambda: torch.index_select(t_src, 0, t_idx), "deferred"),
        ("gather f32 take(mode='clip') vs torch.take", ALLOC, 16 * n,
         lambda: gp.take(g_src, g_idx, mode="clip"), lambda: torch.take(t_src, t_idx),
         "immediate"),
        ("scatter f32 a[idx] = v (checked) vs index_put_", INPLACE, 16 * n,
         lambda: g_dst.__setitem__(g_perm, g_vals), lambda: t_dst.index_put_((t_perm,), t_vals),
         "immediate"),
        ("scatter f32 a[idx] = v (checked, deferred) vs index_put_", INPLACE, 16 * n,
         lambda: g_dst.__setitem__(g_perm, g_vals), lambda: t_dst.index_put_((t_perm,), t_vals),
         "deferred"),
        ("scatter f32 put(mode='clip') vs index_put_", INPLACE, 16 * n,
         lambda: gp.put(g_dst, g_perm, g_vals, mode="clip"),
         lambda: t_dst.index_put_((t_perm,), t_vals), "immediate"),
        ("scatter-add f32 add_at (deterministic) vs index_add_ (deterministic mode)", INPLACE,
         16 * n, lambda: gp.add_at(g_acc, g_dup, g_vals), torch_index_add_deterministic,
         "immediate"),
        ("scatter-add f32 add_at(deterministic=False) vs index_add_ (atomics)", INPLACE, 16 * n,
         lambda: gp.add_at(g_acc, g_dup, g_vals, deterministic=False),
         lambda: t_acc.index_add_(0, t_dup, t_vals), "immediate"),
        ("scatter-add f32 add_at(deterministic=False, deferred) vs index_add_ (atomics)",
         INPLACE, 16 * n, lambda: gp.add_at(g_acc, g_dup, g_vals, deterministic=False),
         lambda: t_acc.index_add_(0, t_dup, t_vals), "deferred"),
        ("mask select f32 x[mask]", ALLOC, 5 * m + 4 * selected,
         lambda: g_x[g_mask], lambda: t_x[t_mask], "immediate"),
    ]
    ceiling_src = torch.empty(m, device="cuda")
    ceiling_out = torch.empty_like(ceiling_src)

    def one_run(_: int) -> list[dict[str, Any]]:
        ceiling = ceiling_row(theirs(lambda: ceiling_out.copy_(ceiling_src)), 8 * m)
        rows = [ceiling]
        for op, policy, nbytes, mine, torch_fn, check in cases:
            with gp.index_check(check):
                ours_ms = ours(mine)
                gp.synchronize()  # a deferred check is read here, outside the timed samples
            rows += paired_rows(op, policy, nbytes, ours_ms, theirs(torch_fn))
        pct_of_copy(rows, ceiling["GB/s"])
        return rows

    rows = aggregate(repeat_runs(args.runs, one_run))
    torch_verdicts(rows)
    for r in rows:
        if r["op"].startswith("mask select") and r["op"].endswith("(pygpukit)"):
            r["target_80pct_of_copy"] = verdict(r["pct_of_copy"], better="higher", target=80.0)
    report = report_head("indexing", args.runs, log2_gather=args.log2_gather,
                         log2_mask=args.log2_mask, repeat=args.repeat, batch=args.batch,
                         rows=rows)
    args.out.write_text(json.dumps(report, indent=2))
    print_bandwidth_rows(f"{report['device']}  2^{args.log2_gather} indices, 2^{args.log2_mask} "
                         f"masked elements, {args.runs} runs of {args.repeat} samples of "
                         f"{args.batch} calls", rows)
    for r in rows:
        if "target_80pct_of_copy" in r:
            print(f"  mask select >= 80% of copy: {r['target_80pct_of_copy']}")


if __name__ == "__main__":
    main()
