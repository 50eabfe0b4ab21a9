"""dask.array with GPUArray chunks vs CuPy chunks (and NumPy chunks), same chunks, same data.

Rows, each on Dask's threaded scheduler (``--threads`` threads) over arrays persisted on the
device as chunks (``da.from_array(x, chunks, asarray=False)``: the chunks are views):

* ``(x ** 2).sum()`` of ``--n`` float32 elements in chunks of ``--chunk`` elements: GB/s of
  the input read, and the speed ratio to the same graph over CuPy chunks (target >= 1.0x);
* ``x @ y`` of ``--m`` square float32 matrices in ``--block`` blocks: TFLOP/s (2 m^3 flops) and
  the ratio to CuPy (target >= 1.0x);
* per-task overhead: ``(x ** 2).sum()`` over ``--tiny-chunks`` chunks of 256 elements, wall time
  per task of the optimized graph, for GPUArray, CuPy and NumPy chunks; the GPU chunks' extra
  cost per task is reported against NumPy's.

Each figure is the wall clock of ``.compute()`` plus a device synchronization (median of
``--repeat`` samples after a warm-up); the results are checked against NumPy once.  The
timings are repeated ``--runs`` times and every figure is reported as min / median / max over
the runs.  Writes JSON to --out.  Needs dask (and CuPy for the ratios; without it the CuPy
columns are left out and say why).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dask
import dask.array as da
import numpy as np
from _runs import add_runs_argument, aggregate, repeat_runs, report_head, require_commit, verdict

import pygpukit as gp
import pygpukit.dask as gpd

TARGET = 1.0  # x CuPy's throughput


def _cupy() -> tuple[Any, str | None]:
    try:
        import cupy  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        return None, f"cupy not importable: {exc}"
    return cupy, None


def _wall_ms(fn: Callable[[], object], sync: Callable[[], object], repeat: int) -> float:
    """Median wall-clock ms of ``fn(); sync()`` over ``repeat`` samples, after one warm-up."""
    fn()
    sync()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def _tasks(expr: Any) -> int:
    (optimized,) = dask.optimize(expr)
    return len(optimized.__dask_graph__())


def main() -> None:
    """Run the benchmark and write the JSON report."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1 << 28, help="(x ** 2).sum(): elements")
    parser.add_argument("--chunk", type=int, default=1 << 24, help="(x ** 2).sum(): per chunk")
    parser.add_argument("--m", type=int, default=8192, help="x @ y: square matrices of m")
    parser.add_argument("--block", type=int, default=2048, help="x @ y: square blocks")
    parser.add_argument("--tiny-chunks", type=int, default=1024,
                        help="per-task overhead: chunks of 256 elements")
    parser.add_argument("--threads", type=int, default=4, help="threaded scheduler's threads")
    parser.add_argument("--repeat", type=int, default=7, help="timed samples per run")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--smoke", action="store_true",
                        help="small sizes; allowed on the CPU simulation (a check, no figures)")
    add_runs_argument(parser)
    args = parser.parse_args()
    require_commit()
    if args.smoke:
        args.n, args.chunk, args.m, args.block, args.tiny_chunks = 1 << 16, 1 << 12, 256, 64, 64
        args.repeat = min(args.repeat, 2)
    elif gp.backend() != "cuda":
        raise SystemExit("the benchmark needs the CUDA backend (--smoke runs on the CPU)")

    cp, no_cupy = _cupy()
    rng = np.random.default_rng(0)
    xh = rng.standard_normal(args.n).astype(np.float32)
    ah = rng.standard_normal((args.m, args.m)).astype(np.float32)
    bh = rng.standard_normal((args.m, args.m)).astype(np.float32)
    th = rng.standard_normal(256 * args.tiny_chunks).astype(np.float32)

    def ours(host: np.ndarray[Any, Any], chunks: Any) -> Any:
        return gpd.from_array(gp.from_numpy(host), chunks=chunks)

    def theirs(host: np.ndarray[Any, Any], chunks: Any) -> Any:
        return da.from_array(cp.asarray(host), chunks=chunks, asarray=False,
                             meta=cp.empty((0,) * host.ndim, host.dtype))

    gx, ga, gb, gt = (ours(xh, args.chunk), ours(ah, args.block), ours(bh, args.block),
                      ours(th, 256))
    nt = da.from_array(th, chunks=256)
    cx: Any = None
    ca: Any = None
    cb: Any = None
    ct: Any = None
    if cp is not None:
        cx, ca, cb, ct = (theirs(xh, args.chunk), theirs(ah, args.block),
                          theirs(bh, args.block), theirs(th, 256))

    def sync_gp() -> None:
        gp.synchronize()

    def sync_cp() -> None:
        cp.cuda.Device().synchronize()

    def run(expr: Any) -> Callable[[], Any]:
        return lambda: expr.compute(scheduler="threads", num_workers=args.threads)

    sq_sum = (gx ** 2).sum()
    cq_sum = (cx ** 2).sum() if cp is not None else None  # both graphs built once, likewise
    got = float(run(sq_sum)().item())
    ref = float((xh.astype(np.float64) ** 2).sum())
    assert abs(got - ref) <= 1e-4 * ref, f"(x ** 2).sum(): {got} vs NumPy {ref}"
    rows = min(args.m, 256)  # a float64 reference of the first rows (the whole is minutes)
    prod = run(ga @ gb)()[:rows].to_numpy()
    ref_prod = ah[:rows].astype(np.float64) @ bh.astype(np.float64)
    err = np.linalg.norm(prod - ref_prod) / np.linalg.norm(ref_prod)
    assert err < 1e-2, f"x @ y: relative error {err} against NumPy"
    if cp is not None:
        got_cp = float(run(cq_sum)())
        assert abs(got_cp - ref) <= 1e-4 * ref, f"CuPy (x ** 2).sum(): {got_cp} vs {ref}"
    print("checks passed", flush=True)

    tiny = {"gpuarray": (gt ** 2).sum(), "numpy": (nt ** 2).sum()}
    if cp is not None:
        tiny["cupy"] = (ct ** 2).sum()
    tasks = {name: _tasks(expr) for name, expr in tiny.items()}

    def one_run(_: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        ms = _wall_ms(run(sq_sum), sync_gp, args.repeat)
        row: dict[str, Any] = {"ms": ms, "GB/s": 4 * args.n / ms / 1e6}
        if cp is not None:
            cms = _wall_ms(run(cq_sum), sync_cp, args.repeat)
            row.update({"cupy_ms": cms, "cupy_GB/s": 4 * args.n / cms / 1e6,
                        "speed_vs_cupy": cms / ms})
        out["square_sum"] = row
        flops = 2.0 * args.m ** 3
        ms = _wall_ms(run(ga @ gb), sync_gp, args.repeat)
        row = {"ms": ms, "TFLOP/s": flops / ms / 1e9}
        if cp is not None:
            cms = _wall_ms(run(ca @ cb), sync_cp, args.repeat)
            row.update({"cupy_ms": cms, "cupy_TFLOP/s": flops / cms / 1e9,
                        "speed_vs_cupy": cms / ms})
        out["matmul"] = row
        per_task = {}
        for name, expr in tiny.items():
            sync = sync_cp if name == "cupy" else sync_gp if name == "gpuarray" else (
                lambda: None)
            per_task[f"{name}_us_per_task"] = _wall_ms(run(expr), sync, args.repeat) * 1e3 / \
                tasks[name]
        per_task["gpuarray_minus_numpy_us"] = (per_task["gpuarray_us_per_task"]
                                               - per_task["numpy_us_per_task"])
        if cp is not None:
            per_task["cupy_minus_numpy_us"] = (per_task["cupy_us_per_task"]
                                               - per_task["numpy_us_per_task"])
            per_task["speed_vs_cupy"] = (per_task["cupy_us_per_task"]
                                         / per_task["gpuarray_us_per_task"])
        out["per_task"] = per_task
        return out

    results = aggregate(repeat_runs(args.runs, one_run))
    for key in ("square_sum", "matmul"):
        row = results[key]
        if "speed_vs_cupy" in row:
            row["target"] = f">= {TARGET}x CuPy"
            row["verdict"] = verdict(row["speed_vs_cupy"], better="higher")
            row["target_verdict"] = verdict(row["speed_vs_cupy"], better="higher",
                                            target=TARGET)
    results["per_task"]["tasks"] = tasks
    report = report_head(
        "dask", args.runs, backend=gp.backend(), smoke=args.smoke, threads=args.threads,
        repeat=args.repeat, dask_version=dask.__version__,
        cupy=None if cp is None else cp.__version__, cupy_missing=no_cupy,
        square_sum={"n": args.n, "chunk": args.chunk, **results["square_sum"]},
        matmul={"m": args.m, "block": args.block, **results["matmul"]},
        per_task={"chunks": args.tiny_chunks, "chunk": 256, **results["per_task"]})
    args.out.write_text(json.dumps(report, indent=2))
    print(f"{report['device']}  {args.runs} runs of {args.repeat} samples, "
          f"{args.threads} threads" + (f"  ({no_cupy})" if no_cupy else ""))
    for key, unit in (("square_sum", "GB/s"), ("matmul", "TFLOP/s")):
        row = results[key]
        line = f"  {key:12} {row['ms']['median']:9.3f} ms {row[unit]['median']:9.2f} {unit}"
        if "speed_vs_cupy" in row:
            s = row["speed_vs_cupy"]
            line += (f"  x{s['median']:.3f} vs CuPy [{s['min']:.3f}-{s['max']:.3f}] "
                     f"{row['verdict']}; target {row['target']}: {row['target_verdict']}")
        print(line)
    pt = results["per_task"]
    print("  per task (us): " + ", ".join(
        f"{k.removesuffix('_us_per_task')} {pt[k]['median']:.1f}"
        for k in pt if k.endswith("_us_per_task"))
        + f"; GPUArray - NumPy {pt['gpuarray_minus_numpy_us']['median']:+.1f} us")


if __name__ == "__main__":
    main()
