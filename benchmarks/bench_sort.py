"""Sort and scan side by side with PyTorch (and CuPy where installed) in one run.

Rows (float32, random data, never constant): sort of 2^--log2n keys (pygpukit sorts the keys
alone; torch.sort always gives values and indices: its own fastest call for sorted values),
argsort of as many keys (both stable), cumsum of as many elements, a 2-D row sort of
--rows x --cols, and topk(k=64) over those rows.  Sorts report keys per second and the speed
ratio to torch (target for the 1-D sort: >= 0.9x torch's throughput); cumsum reports GB/s
(one read + one write) as % of torch's ``copy_`` of the same buffer (the bandwidth ceiling,
target >= 80%) beside torch.cumsum.  pygpukit ops are timed with pygpukit events on its
current stream, torch's / CuPy's with their own events on their streams; 3 warm-ups, median of
--repeat samples, each sample --batch back-to-back calls divided by --batch (see
benchmarks/_timing.py).  Results are checked once against torch; the timings are repeated
--runs times and every figure is reported as min / median / max over the runs.  Writes JSON
to --out.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _runs import add_runs_argument, aggregate, repeat_runs, report_head, require_commit, verdict
from _timing import CupyEvent, gbps, median_event_ms, torch_event

import pygpukit as gp

SORT_TARGET = 0.9  # x torch's throughput, 1-D float32 sort
CUMSUM_TARGET = 80.0  # % of copy bandwidth


def _cupy() -> Any:
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def main() -> None:
    """Run the benchmark and write the JSON report."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--log2n", type=int, default=26, help="1-D cases: 2^N float32 elements")
    parser.add_argument("--rows", type=int, default=4096, help="2-D row sort: rows")
    parser.add_argument("--cols", type=int, default=16384, help="2-D row sort: row length")
    parser.add_argument("--repeat", type=int, default=7, help="timed samples per run")
    parser.add_argument("--batch", type=int, default=3,
                        help="back-to-back calls per timed sample (1: per-call latency)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--skip-checks", action="store_true", help="skip the result checks")
    add_runs_argument(parser)
    args = parser.parse_args()
    require_commit()
    assert gp.backend() == "cuda", "the benchmark needs the CUDA backend"

    n = 1 << args.log2n
    rng = np.random.default_rng(0)
    xh = rng.standard_normal(n).astype(np.float32)
    gx, tx = gp.from_numpy(xh), torch.from_numpy(xh).cuda()
    rh = rng.standard_normal((args.rows, args.cols)).astype(np.float32)
    gr, tr = gp.from_numpy(rh), torch.from_numpy(rh).cuda()
    cp = _cupy()
    cx = cp.asarray(xh) if cp is not None else None
    torch.cuda.synchronize()

    def ours(fn: Callable[[], object]) -> float:
        return median_event_ms(fn, args.repeat, gp.Event, args.batch)

    def theirs(fn: Callable[[], object]) -> float:
        return median_event_ms(fn, args.repeat, torch_event, args.batch)

    def cupys(fn: Callable[[], object]) -> float:
        return median_event_ms(fn, args.repeat, CupyEvent, args.batch)

    if not args.skip_checks:
        np.testing.assert_array_equal(gp.sort(gx).to_numpy(), torch.sort(tx).values.cpu().numpy())
        np.testing.assert_array_equal(gp.argsort(gx).to_numpy(),
                                      torch.argsort(tx, stable=True).cpu().numpy())
        # float32 prefix sums of signed data: the error scales with the sum of |x| so far
        exact = np.cumsum(xh.astype(np.float64))
        err = np.abs(gp.cumsum(gx).to_numpy().astype(np.float64) - exact)
        bound = 1e-6 * np.cumsum(np.abs(xh.astype(np.float64))) + 1e-3
        assert (err <= bound).all(), f"cumsum: worst error {err.max()} exceeds the bound"
        np.testing.assert_array_equal(gp.sort(gr, axis=-1).to_numpy(),
                                      torch.sort(tr, dim=-1).values.cpu().numpy())
        values, _ = gp.topk(gr, 64, axis=-1)
        np.testing.assert_array_equal(values.to_numpy(),
                                      torch.topk(tr, 64, dim=-1).values.cpu().numpy())
        print("checks passed", flush=True)

    ceiling_out = torch.empty_like(tx)
    m = args.rows * args.cols

    def one_run(_: int) -> list[dict[str, Any]]:
        copy_ms = theirs(lambda: ceiling_out.copy_(tx))
        ceiling = gbps(8 * n, copy_ms)
        rows: list[dict[str, Any]] = [
            {"op": "torch copy_ f32 (ceiling)", "elements": n, "ms": copy_ms, "GB/s": ceiling}]

        def sort_row(op: str, elements: int, mine: Callable[[], object],
                     torch_fn: Callable[[], object], cupy_fn: Callable[[], object] | None
                     ) -> None:
            ours_ms, theirs_ms = ours(mine), theirs(torch_fn)
            row = {"op": op, "elements": elements, "ms": ours_ms, "torch_ms": theirs_ms,
                   "Gkeys/s": elements / ours_ms / 1e6,
                   "torch_Gkeys/s": elements / theirs_ms / 1e6,
                   "speed_vs_torch": theirs_ms / ours_ms}
            if cupy_fn is not None:
                cupy_ms = cupys(cupy_fn)
                row["cupy_ms"] = cupy_ms
                row["speed_vs_cupy"] = cupy_ms / ours_ms
            rows.append(row)

        sort_row(f"sort f32 2^{args.log2n}", n, lambda: gp.sort(gx), lambda: torch.sort(tx),
                 (lambda: cp.sort(cx)) if cp is not None else None)
        sort_row(f"argsort f32 2^{args.log2n} (stable)", n, lambda: gp.argsort(gx),
                 lambda: torch.argsort(tx, stable=True),
                 (lambda: cp.argsort(cx)) if cp is not None else None)
        sort_row(f"sort f32 rows {args.rows}x{args.cols} (last axis)", m,
                 lambda: gp.sort(gr, axis=-1), lambda: torch.sort(tr, dim=-1), None)
        sort_row(f"topk 64 f32 rows {args.rows}x{args.cols}", m,
                 lambda: gp.topk(gr, 64, axis=-1), lambda: torch.topk(tr, 64, dim=-1), None)

        ours_ms, theirs_ms = ours(lambda: gp.cumsum(gx)), theirs(lambda: torch.cumsum(tx, 0))
        row = {"op": f"cumsum f32 2^{args.log2n}", "elements": n, "bytes": 8 * n,
               "ms": ours_ms, "GB/s": gbps(8 * n, ours_ms),
               "pct_of_copy": 100 * gbps(8 * n, ours_ms) / ceiling,
               "torch_ms": theirs_ms, "torch_pct_of_copy": 100 * gbps(8 * n, theirs_ms) / ceiling,
               "speed_vs_torch": theirs_ms / ours_ms}
        if cp is not None:
            cupy_ms = cupys(lambda: cp.cumsum(cx))
            row["cupy_ms"] = cupy_ms
            row["speed_vs_cupy"] = cupy_ms / ours_ms
        rows.append(row)
        return rows

    rows = aggregate(repeat_runs(args.runs, one_run))
    for r in rows:
        if "speed_vs_torch" not in r:
            continue
        r["verdict"] = verdict(r["speed_vs_torch"], better="higher")
        if r["op"].startswith("sort f32 2^"):
            r["target"] = f">= {SORT_TARGET}x torch"
            r["target_verdict"] = verdict(r["speed_vs_torch"], better="higher",
                                          target=SORT_TARGET)
        if r["op"].startswith("cumsum"):
            r["target"] = f">= {CUMSUM_TARGET}% of copy"
            r["target_verdict"] = verdict(r["pct_of_copy"], better="higher",
                                          target=CUMSUM_TARGET)
    report = report_head("sort", args.runs, log2n=args.log2n, row_shape=[args.rows, args.cols],
                         repeat=args.repeat, batch=args.batch, rows=rows)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"{report['device']}  {args.runs} runs of {args.repeat} samples of {args.batch} calls")
    for r in rows:
        ms = r["ms"]["median"]
        if "Gkeys/s" in r:
            extra = f"{r['Gkeys/s']['median']:7.2f} Gkeys/s"
        elif "pct_of_copy" in r:
            extra = f"{r['GB/s']['median']:7.1f} GB/s {r['pct_of_copy']['median']:5.1f}% of copy"
        else:
            extra = f"{r['GB/s']['median']:7.1f} GB/s"
        ratio = ""
        if "speed_vs_torch" in r:
            s = r["speed_vs_torch"]
            ratio = (f"  x{s['median']:.3f} vs torch [{s['min']:.3f}-{s['max']:.3f}] "
                     f"{r['verdict']}")
            if "target_verdict" in r:
                ratio += f"; target {r['target']}: {r['target_verdict']}"
        print(f"  {r['op']:40} {ms:8.3f} ms {extra}{ratio}")


if __name__ == "__main__":
    main()
