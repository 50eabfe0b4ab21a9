"""Matrix products against cuBLAS (through torch), side by side in the same run on the same GPU.

``--sweep`` measures issue 13's shape sweep instead (M x N = K, float16 and bfloat16, each
case's target 90% of cuBLAS, and the geometric mean per dtype: benchmark "matmul_sweep"), and
then the device time of a few small products ("device_time": the kernels' own durations from
torch's profiler (CUPTI), per product, ours over cuBLAS's; 256x256x256 float16 targets <= 1.2x).
Cases (the targets of issue 05): float16 and bfloat16 at 2048³ (≥ 85% of cuBLAS), 4096³ and
8192³ (≥ 95%); float32 TF32 at 4096³ and 8192³ (≥ 90%, torch with allow_tf32); exact float32
(precision "highest") at 4096³ and 8192³ (≥ 90%, torch with TF32 off, i.e. cuBLAS SGEMM); the
LLM shapes M ∈ {1, 16, 128, 4096}, N = 14336, K = 4096 in bfloat16 and float16, as
``x @ W`` with W (K, N) row-major and as ``linear(x, W)`` with W (N, K) (≥ 80%).  Both sides
read the very same random operands (shared through DLPack); each is checked once against a
float64 product on the GPU (relative Frobenius error).  CUDA events, warm-up, median of
--repeat samples per round, two rounds per run alternating ours/torch/torch/ours (best round
each); each timed interval holds --batch back-to-back products behind one untimed product (the
stream's throughput, not one call's host latency).  The whole sweep is repeated --runs times
(every case in run 1, then every case in run 2, ...: slow drifts spread over all cases) and
each figure reported as min / median / max over the runs, % of cuBLAS per run; the verdict is
"met" when every run meets the target (and the product is accurate), "on par" when the runs
straddle 100%.  Writes JSON to --out and prints a table.

``--fp8``: float8_e4m3fn products (benchmark "matmul_fp8"): ``gp.linear(x, w, scale_x=...,
scale_weight=...)`` against ``torch._scaled_mm(x, w.t(), scale_a, scale_b, out_dtype=bfloat16,
use_fast_accum=True)`` on the same operands (DLPack), per-tensor scales at 4096³ and 8192³
(>= 95%) and on the LLM shapes M ∈ {1 ... 4096} x 14336 x 4096 (>= 90%), and one row-wise
8192³ case; errors of both against float64 of the dequantized operands (relative Frobenius and
max |error| / max |reference|).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from _runs import (
    add_runs_argument,
    aggregate,
    repeat_runs,
    report_head,
    require_commit,
    spread,
    verdict,
)
from _timing import median_event_ms, torch_event

import pygpukit as gp

TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
TOLERANCE = {"float16": 1e-2, "bfloat16": 1e-2, "tf32": 2e-3, "highest": 1e-5}


def cases(quick: bool) -> list[dict[str, Any]]:
    """Every measured case with its target (percent of cuBLAS)."""
    out: list[dict[str, Any]] = []
    for dtype in ("float16", "bfloat16"):
        for size, target in ((2048, 85), (4096, 95), (8192, 95)):
            out.append(dict(dtype=dtype, precision=None, m=size, n=size, k=size,
                            layout="matmul", target=target))
    for precision in ("tf32", "highest"):
        for size, target in ((2048, None), (4096, 90), (8192, 90)):
            out.append(dict(dtype="float32", precision=precision, m=size, n=size, k=size,
                            layout="matmul", target=target))
    for dtype in ("bfloat16", "float16"):
        for layout in ("matmul", "linear"):
            for m in (1, 16, 128, 4096):
                out.append(dict(dtype=dtype, precision=None, m=m, n=14336, k=4096,
                                layout=layout, target=80))
    if quick:
        out = [c for c in out if c["m"] * c["n"] * c["k"] <= 4096**3]
    return out


#: Issue 13's sweep: M x (N = K), row-major float16 and bfloat16 operands, each >= 90% of cuBLAS
#: and the geometric mean >= 100% (``--sweep``).
SWEEP_M = (64, 128, 256, 512, 1024, 2048, 4096)
SWEEP_NK = (1024, 2048, 4096, 8192)


def sweep_cases() -> list[dict[str, Any]]:
    """The ``--sweep`` cases (target: 90% of cuBLAS each)."""
    return [dict(dtype=dtype, precision=None, m=m, n=nk, k=nk, layout="matmul", target=90)
            for dtype in ("float16", "bfloat16") for m in SWEEP_M for nk in SWEEP_NK]


#: Small products whose device time (not the stream's, which the host's dispatch decides) is
#: compared with cuBLAS's, with the target ratio (ours / cuBLAS) where issue 13 sets one.
DEVICE_TIME_CASES = ((256, 256, 256, 1.2), (64, 1024, 1024, None), (512, 512, 512, None))


def kernel_us_per_call(fn: Callable[[], Any], calls: int) -> float:
    """Device time per call of ``fn``: every GPU activity CUPTI records, summed, over ``calls``."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    total = sum(e.self_device_time_total for e in prof.key_averages()
                if e.device_type == DeviceType.CUDA)
    if total <= 0:
        raise RuntimeError("the profiler recorded no GPU activity")
    return float(total) / calls


def device_times(rounds: int) -> list[dict[str, Any]]:
    """``DEVICE_TIME_CASES`` in float16: ours and cuBLAS's device time per product."""
    out = []
    for m, n, k, target in DEVICE_TIME_CASES:
        gen = torch.Generator(device="cuda").manual_seed(m * 31 + n * 7 + k)
        a = torch.randn(m, k, device="cuda", dtype=torch.float16, generator=gen)
        w = torch.randn(k, n, device="cuda", dtype=torch.float16, generator=gen)
        a_ours, w_ours = gp.from_dlpack(a), gp.from_dlpack(w)
        ours, theirs = [], []
        for _ in range(rounds):  # alternating, so clocks favour neither side
            ours.append(kernel_us_per_call(lambda: gp.matmul(a_ours, w_ours), 50))  # noqa: B023
            theirs.append(kernel_us_per_call(lambda: a @ w, 50))  # noqa: B023
        ratios = [o / t for o, t in zip(ours, theirs, strict=True)]
        kernel = gp.matmul(a_ours, w_ours)._rt.gemm_last_kernel()
        row: dict[str, Any] = dict(dtype="float16", m=m, n=n, k=k, ours_us=spread(ours),
                                   torch_us=spread(theirs), ours_over_cublas=spread(ratios),
                                   target=target, kernel=kernel)
        if target is not None:
            row["verdict"] = "met" if max(ratios) <= target else "not met"
        out.append(row)
    return out


def geomeans(per_run: list[list[dict[str, Any]]], todo: list[dict[str, Any]]) -> dict[str, Any]:
    """Per dtype, the geometric mean of % of cuBLAS over the cases, as a spread over the runs."""
    out: dict[str, Any] = {}
    for dtype in sorted({c["dtype"] for c in todo}):
        idx = [i for i, c in enumerate(todo) if c["dtype"] == dtype]
        values = [math.exp(sum(math.log(run[i]["pct_of_cublas"]) for i in idx) / len(idx))
                  for run in per_run]
        out[dtype] = spread(values)
    return out


def timed_pair(ours_fn: Callable[[], Any], torch_fn: Callable[[], Any], repeat: int, batch: int,
               flops: float, kernel: str, accuracy: dict[str, Any]) -> dict[str, Any]:
    """Both sides' event-timed ms, TFLOP/s and % of cuBLAS, with ``kernel`` and ``accuracy``.

    `batch` back-to-back products per event pair: the GPU time of a stream of products (as in a
    model), not the host's dispatch latency of a single one.  A second round in the other
    order, so clocks and caches favour neither side.
    """
    ours_ms = median_event_ms(ours_fn, repeat, gp.Event, batch)
    torch_ms = median_event_ms(torch_fn, repeat, torch_event, batch)
    torch_ms = min(torch_ms, median_event_ms(torch_fn, repeat, torch_event, batch))
    ours_ms = min(ours_ms, median_event_ms(ours_fn, repeat, gp.Event, batch))
    return {
        "kernel": kernel, "ours_ms": ours_ms, "torch_ms": torch_ms,
        "ours_tflops": flops / ours_ms / 1e9, "torch_tflops": flops / torch_ms / 1e9,
        "pct_of_cublas": 100.0 * torch_ms / ours_ms, **accuracy,
    }


def run_case(case: dict[str, Any], repeat: int, batch: int, check: bool) -> dict[str, Any]:
    """One run of one case: its timings, and (``check``) its accuracy against float64."""
    m, n, k = case["m"], case["n"], case["k"]
    dtype = TORCH_DTYPES[case["dtype"]]
    gen = torch.Generator(device="cuda").manual_seed(m * 31 + n * 7 + k)
    a = torch.randn(m, k, device="cuda", dtype=dtype, generator=gen)
    if case["layout"] == "linear":
        w = torch.randn(n, k, device="cuda", dtype=dtype, generator=gen)
        b_ours = gp.from_dlpack(w)
        torch_fn: Callable[[], Any] = lambda: torch.nn.functional.linear(a, w)  # noqa: E731
    else:
        w = torch.randn(k, n, device="cuda", dtype=dtype, generator=gen)
        b_ours = gp.from_dlpack(w)
        torch_fn = lambda: a @ w  # noqa: E731
    a_ours = gp.from_dlpack(a)
    precision = case["precision"]
    if case["layout"] == "linear":
        ours_fn: Callable[[], Any] = lambda: gp.linear(a_ours, b_ours)  # noqa: E731
    else:
        ours_fn = lambda: gp.matmul(a_ours, b_ours, precision=precision)  # noqa: E731

    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.cuda.synchronize()
    result = ours_fn()
    kernel = result._rt.gemm_last_kernel()
    accuracy: dict[str, Any] = {}
    if check:  # once per case: the products do not change between runs
        ref = (a.double() @ w.double().T if case["layout"] == "linear"
               else a.double() @ w.double())
        got = torch.from_dlpack(result).double()
        err = float(torch.linalg.norm(got - ref) / torch.linalg.norm(ref))
        finite = bool(torch.isfinite(got).all())
        t_err = float(torch.linalg.norm(torch_fn().double() - ref) / torch.linalg.norm(ref))
        tol = TOLERANCE[case["precision"] or case["dtype"]]
        accuracy = {"rel_error": err, "tolerance": tol, "finite": finite,
                    "accurate": finite and err <= tol, "torch_rel_error": t_err}
        del got, ref
    del result

    return timed_pair(ours_fn, torch_fn, repeat, batch, 2.0 * m * n * k, kernel, accuracy)


# -- FP8 (--fp8): e4m3 products against torch._scaled_mm (cuBLASLt), benchmark "matmul_fp8" ---
#: Issue 13's FP8 targets: 4096³ and 8192³ >= 95% of torch._scaled_mm (per-tensor scales,
#: fast accumulation, bfloat16 out), the LLM shapes M x 14336 x 4096 >= 90%; one row-wise case.
FP8_LLM_M = (1, 16, 64, 128, 256, 512, 1024, 2048, 4096)


def fp8_cases(quick: bool) -> list[dict[str, Any]]:
    """The ``--fp8`` cases: ``linear(x, w)`` with x (M, K), w (N, K) float8_e4m3fn."""
    out = [dict(dtype="float8_e4m3fn", precision=None, m=s, n=s, k=s, layout="fp8_tensor",
                target=95) for s in (4096, 8192)]
    if _torch_rowwise_ok():
        out.append(dict(dtype="float8_e4m3fn", precision=None, m=8192, n=8192, k=8192,
                        layout="fp8_row", target=None))
    out += [dict(dtype="float8_e4m3fn", precision=None, m=m, n=14336, k=4096,
                 layout="fp8_tensor", target=90) for m in FP8_LLM_M]
    if quick:
        out = [c for c in out if c["m"] * c["n"] * c["k"] <= 4096**3]
    return out


def _torch_rowwise_ok() -> bool:
    """Whether this torch build has row-wise scales in _scaled_mm (else that row is left out)."""
    a = torch.ones(16, 32, device="cuda").to(torch.float8_e4m3fn)
    b = torch.ones(16, 32, device="cuda").to(torch.float8_e4m3fn).t()
    try:
        torch._scaled_mm(a, b, scale_a=torch.ones(16, 1, device="cuda"),
                         scale_b=torch.ones(1, 16, device="cuda"), out_dtype=torch.bfloat16,
                         use_fast_accum=True)
    except (RuntimeError, NotImplementedError) as exc:
        print(f"torch._scaled_mm has no row-wise scales here ({exc}); that row is left out")
        return False
    return True


def _fp8_ours(t: torch.Tensor) -> Any:
    """A torch tensor (FP8 or float32) as a GPUArray over the same memory (DLPack)."""
    try:
        return gp.from_dlpack(t)
    except (TypeError, RuntimeError, BufferError):  # a torch without FP8 DLPack codes
        from pygpukit._array import GPUArray

        raw = gp.from_dlpack(t.view(torch.uint8))
        dtype = {torch.float8_e4m3fn: gp.float8_e4m3fn, torch.float8_e5m2: gp.float8_e5m2}
        return GPUArray(raw._rt, raw._block, raw._offset, raw.shape, raw.strides,
                        dtype[t.dtype])


def run_fp8_case(case: dict[str, Any], repeat: int, batch: int, check: bool) -> dict[str, Any]:
    """One run of one FP8 case: timings against torch._scaled_mm and (``check``) errors."""
    m, n, k = case["m"], case["n"], case["k"]
    rowwise = case["layout"] == "fp8_row"
    gen = torch.Generator(device="cuda").manual_seed(m * 31 + n * 7 + k)
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    w = torch.randn(n, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    if rowwise:
        sa = torch.rand(m, 1, device="cuda", generator=gen) + 0.5
        sb = torch.rand(1, n, device="cuda", generator=gen) + 0.5
    else:
        sa = torch.rand((), device="cuda", generator=gen) + 0.5
        sb = torch.rand((), device="cuda", generator=gen) + 0.5
    b_col = w.t()  # (K, N) column-major: what _scaled_mm takes
    a_ours, w_ours = _fp8_ours(a), _fp8_ours(w)
    sa_ours = gp.from_dlpack(sa)
    sb_ours = gp.from_dlpack(sb.t().contiguous() if rowwise else sb)  # (N, 1) per output row

    def torch_fn() -> Any:
        return torch._scaled_mm(a, b_col, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                use_fast_accum=True)

    def ours_fn() -> Any:
        return gp.linear(a_ours, w_ours, scale_x=sa_ours, scale_weight=sb_ours)

    torch.cuda.synchronize()
    result = ours_fn()
    kernel = result._rt.gemm_last_kernel()
    accuracy: dict[str, Any] = {}
    if check:
        ref = (a.double() * sa.double()) @ (w.double() * (sb.t() if rowwise else sb).double()).T
        errors = {}
        for who, out in (("ours", torch.from_dlpack(result)), ("torch", torch_fn())):
            got = out.double()
            errors[who] = (float(torch.linalg.norm(got - ref) / torch.linalg.norm(ref)),
                           float((got - ref).abs().max() / ref.abs().max()),
                           bool(torch.isfinite(got).all()))
        tol = 1e-2
        err, max_err, finite = errors["ours"]
        accuracy = {"rel_error": err, "max_rel_error": max_err, "tolerance": tol,
                    "finite": finite, "accurate": finite and err <= tol,
                    "torch_rel_error": errors["torch"][0],
                    "torch_max_rel_error": errors["torch"][1]}
        del ref
    del result
    return timed_pair(ours_fn, torch_fn, repeat, batch, 2.0 * m * n * k, kernel, accuracy)


def main() -> None:
    """Run every case --runs times and write the JSON report."""
    parser = argparse.ArgumentParser()
    # 5 samples per round x 3 runs: the 15 samples of one run before --runs existed.
    parser.add_argument("--repeat", type=int, default=5, help="timed samples per round")
    parser.add_argument("--batch", type=int, default=10, help="products per timed interval")
    parser.add_argument("--quick", action="store_true", help="skip the 8192³ cases")
    parser.add_argument("--sweep", action="store_true",
                        help="issue 13's shape sweep instead (M x N=K, float16/bfloat16)")
    parser.add_argument("--fp8", action="store_true",
                        help="FP8 e4m3 products against torch._scaled_mm instead")
    parser.add_argument("--out", type=Path, required=True)
    add_runs_argument(parser)
    args = parser.parse_args()
    require_commit()
    assert gp.backend() == "cuda", "the benchmark needs the CUDA backend"

    todo = (fp8_cases(args.quick) if args.fp8 else sweep_cases() if args.sweep
            else cases(args.quick))
    one = run_fp8_case if args.fp8 else run_case
    per_run = repeat_runs(args.runs, lambda i: [one(case, args.repeat, args.batch, i == 0)
                                                 for case in todo])
    torch.backends.cuda.matmul.allow_tf32 = False
    accuracy_keys: tuple[str, ...] = ("rel_error", "tolerance", "finite", "accurate",
                                      "torch_rel_error")
    if args.fp8:
        accuracy_keys += ("max_rel_error", "torch_max_rel_error")
    rows = []
    for i, case in enumerate(todo):
        timed = aggregate([{k: v for k, v in run[i].items() if k not in accuracy_keys}
                           for run in per_run])
        accuracy = {k: per_run[0][i][k] for k in accuracy_keys}
        row = {**case, "label": case["precision"] or case["dtype"], **timed, **accuracy}
        pct = verdict(row["pct_of_cublas"], better="higher", target=case["target"], parity=100.0)
        row["verdict"] = pct if row["accurate"] else "inaccurate"
        # Kept for readers of the old files: every run at or above the target, and accurate.
        row["met"] = row["verdict"] == "met" or (case["target"] is None and row["accurate"])
        rows.append(row)
    extra: dict[str, Any] = {}
    if args.sweep:
        extra["geomean_pct_of_cublas"] = geomeans(per_run, todo)
        extra["geomean_target"] = 100.0
        try:
            extra["device_time"] = device_times(args.runs)
        except (RuntimeError, ImportError, AttributeError) as exc:  # the sweep stands without it
            extra["device_time"] = {"error": f"{type(exc).__name__}: {exc}"}
    name = "matmul_fp8" if args.fp8 else "matmul_sweep" if args.sweep else "matmul"
    report = report_head(name, args.runs,
                         batch=args.batch, repeat=args.repeat, rows=rows, **extra)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"matmul vs cuBLAS on {report['device']}, {args.runs} runs: median [min-max]")
    print(f"  {'case':44} {'ours TF/s':>9} {'cuBLAS':>8} {'% of cuBLAS':>21} {'target':>6} "
          f"{'rel err':>9}  verdict  kernel")
    for r in rows:
        case = f"{r['label']} {r['layout']} {r['m']}x{r['n']}x{r['k']}"
        target = "-" if r["target"] is None else f"{r['target']}%"
        p = r["pct_of_cublas"]
        pct = f"{p['median']:6.1f} [{p['min']:5.1f}-{p['max']:5.1f}]"
        torch_err = f" (torch {r['torch_rel_error']:.2e})" if args.fp8 else ""
        print(f"  {case:44} {r['ours_tflops']['median']:9.1f} {r['torch_tflops']['median']:8.1f} "
              f"{pct:>21} {target:>6} {r['rel_error']:9.2e}{torch_err}  {r['verdict']:8} "
              f"{r['kernel']}")
    for dtype, g in extra.get("geomean_pct_of_cublas", {}).items():
        print(f"  geometric mean {dtype}: {g['median']:.1f}% of cuBLAS "
              f"[{g['min']:.1f}-{g['max']:.1f}]")
    dev = extra.get("device_time", [])
    if isinstance(dev, dict):
        print(f"  device time: {dev['error']}")
    for r in dev if isinstance(dev, list) else []:
        q = r["ours_over_cublas"]
        print(f"  device time float16 {r['m']}x{r['n']}x{r['k']}: "
              f"ours {r['ours_us']['median']:.2f} us, "
              f"cuBLAS {r['torch_us']['median']:.2f} us, ratio {q['median']:.2f} "
              f"[{q['min']:.2f}-{q['max']:.2f}] (target {r['target']}) {r.get('verdict', '')} "
              f"{r['kernel']}")


if __name__ == "__main__":
    main()
