"""Small-op host cost (issue 08), side by side with torch and CuPy in the same run.

For each op on tiny arrays: wall-clock microseconds per call over ``--calls`` back-to-back
asynchronous calls, one synchronization at the end (median of 5 rounds), for pygpukit, torch
and CuPy; the whole measurement is repeated ``--runs`` times and each figure reported as
min / median / max with the ratio to torch computed per run.  Beside them, the C
``cuLaunchKernel`` floor of this run (a prepared launch repeated from C++, no Python), a
captured graph of ~100 mixed small ops (elementwise, reductions, casts, a GEMM, JIT) replayed
vs run eagerly (and torch.cuda.graph of the same ops), and a JIT keyword call vs its bound
launch.  Writes JSON to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _timing import torch_report

JIT_SRC = r'''extern "C" __global__ void scale(float* x, float factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= factor; }'''


def per_call_us(fn: Callable[[], object], sync: Callable[[], object], calls: int) -> float:
    """Median over 5 rounds of wall-clock µs per call (``calls`` calls, then one sync)."""
    for _ in range(200):
        fn()
    sync()
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        rounds.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(rounds)


def spread(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def verdict(ratios: list[float], target: float) -> str:
    """'met' when every run is within the target ratio, 'on par' when runs straddle 1.0."""
    if max(ratios) <= target:
        return "met"
    if min(ratios) <= 1.0 <= max(ratios):
        return "on par"
    return "not met"


def one_run(calls: int) -> dict[str, Any]:
    import cupy as cp
    import torch

    import pygpukit as gp
    import pygpukit_driver as drv

    rng = np.random.default_rng(0)
    host = {
        "a1": rng.standard_normal(1).astype(np.float32),
        "b1": rng.standard_normal(1).astype(np.float32),
        "a": rng.standard_normal(16).astype(np.float32),
        "b": rng.standard_normal(16).astype(np.float32),
        "m": rng.standard_normal(16) > 0,
        "x": rng.standard_normal((4, 64)).astype(np.float32),
        "h": rng.standard_normal((64, 64)).astype(np.float16),
        "w": rng.standard_normal((64, 64)).astype(np.float16),
    }
    g = {k: gp.from_numpy(v) for k, v in host.items()}
    t = {k: torch.from_numpy(v).cuda() for k, v in host.items()}
    c = {k: cp.asarray(v) for k, v in host.items()}
    gsync = gp.current_stream().synchronize
    tsync = torch.cuda.synchronize
    csync = cp.cuda.get_current_stream().synchronize
    cases: dict[str, tuple[Callable[[], object], Callable[[], object],
                           Callable[[], object] | None, float]] = {
        # name: (ours, torch, cupy, the target ratio to torch)
        "c = a + b (1 elem f32)": (lambda: g["a1"] + g["b1"], lambda: t["a1"] + t["b1"],
                                   lambda: c["a1"] + c["b1"], 0.7),
        "a * b (16)": (lambda: g["a"] * g["b"], lambda: t["a"] * t["b"],
                       lambda: c["a"] * c["b"], 0.8),
        "a + 1.0 (16)": (lambda: g["a"] + 1.0, lambda: t["a"] + 1.0, lambda: c["a"] + 1.0, 0.8),
        "exp(a) (16)": (lambda: gp.exp(g["a"]), lambda: torch.exp(t["a"]),
                        lambda: cp.exp(c["a"]), 0.8),
        "a.sum() (16)": (lambda: g["a"].sum(), lambda: t["a"].sum(), lambda: c["a"].sum(), 0.8),
        "a.astype(float16) (16)": (lambda: g["a"].astype("float16"),
                                   lambda: t["a"].to(torch.float16),
                                   lambda: c["a"].astype("float16"), 0.8),
        "where(m, a, b) (16)": (lambda: gp.where(g["m"], g["a"], g["b"]),
                                lambda: torch.where(t["m"], t["a"], t["b"]),
                                lambda: cp.where(c["m"], c["a"], c["b"]), 0.8),
        "softmax(x) (4x64)": (lambda: gp.softmax(g["x"]), lambda: torch.softmax(t["x"], -1),
                              None, 0.8),
        "a @ b (64x64 f16)": (lambda: g["h"] @ g["w"], lambda: t["h"] @ t["w"],
                              lambda: c["h"] @ c["w"], 1.0),
        "linear(x, w) (64x64 f16)": (lambda: gp.linear(g["h"], g["w"]),
                                     lambda: torch.nn.functional.linear(t["h"], t["w"]),
                                     None, 1.0),
    }
    rows: dict[str, Any] = {}
    for name, (ours, theirs, cupys, target) in cases.items():
        row = {"ours_us": per_call_us(ours, gsync, calls),
               "torch_us": per_call_us(theirs, tsync, calls), "target_vs_torch": target}
        if cupys is not None:
            row["cupy_us"] = per_call_us(cupys, csync, calls)
        rows[name] = row

    # The C launch floor: a small-ops kernel launched from a C++ loop (no Python per launch).
    rt = g["a1"]._rt
    stream = gp.current_stream()
    fn = rt._small_module.get_function("pgk_small_ew_f32")
    launcher = fn.prepare(1, 256, "iiPiPiqPiqPiqffq", 0, stream.handle)
    out = gp.empty(1)
    args = (0, 0, out.data_ptr, 8, g["a1"].data_ptr, 8, 1, g["b1"].data_ptr, 8, 1, 0, 0, 0,
            0.0, 0.0, 1)
    floor = []
    for _ in range(5):
        gsync()
        t0 = time.perf_counter()
        drv._driver._launch_loop(launcher, calls, *args)
        gsync()
        floor.append((time.perf_counter() - t0) / calls * 1e6)
    extra = {"c_launch_floor_us": statistics.median(floor),
             "python_prepared_launch_us": per_call_us(
                 lambda: launcher.launch(1, stream.handle, *args), gsync, calls)}

    # ~100 mixed small ops, captured once, replayed; the same eagerly; torch's graph likewise.
    kernel = gp.jit(JIT_SRC, func="scale") if gp.is_nvrtc_available() else None
    scratch = gp.ones(16)

    def mixed() -> Any:
        y = g["a"]
        for i in range(10):
            y = y * 1.01 + g["b"]
            z = gp.exp(y).sum()
            y = gp.where(g["m"], y, -y)
            y = y + z
            y = y.astype("float16").astype("float32")
            if i == 0:
                g["h"] @ g["w"]
                if kernel is not None:
                    kernel(scratch, factor=1.0, n=16)
        return y

    def mixed_torch() -> Any:
        y = t["a"]
        for i in range(10):
            y = y * 1.01 + t["b"]
            z = torch.exp(y).sum()
            y = torch.where(t["m"], y, -y)
            y = y + z
            y = y.to(torch.float16).to(torch.float32)
            if i == 0:
                t["h"] @ t["w"]
                t["a"].mul_(1.0)
        return y

    nops = 10 * 9 + 2
    with gp.graph() as graph:
        captured = mixed()
    graph.replay()
    # Bit for bit (the values overflow to inf / NaN along the chain: compare the bytes).
    same = captured.to_numpy().tobytes() == mixed().to_numpy().tobytes()
    extra["graph"] = {
        "ops": nops, "replay_equals_eager": same,
        "replay_us_per_op": per_call_us(graph.replay, gsync, max(calls // 10, 100)) / nops,
        "eager_us_per_op": per_call_us(mixed, gsync, max(calls // 100, 20)) / nops,
        "torch_eager_us_per_op": per_call_us(mixed_torch, tsync, max(calls // 100, 20)) / nops,
    }
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        mixed_torch()
    torch.cuda.current_stream().wait_stream(side)
    tgraph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(tgraph):
        mixed_torch()
    extra["graph"]["torch_replay_us_per_op"] = per_call_us(
        tgraph.replay, tsync, max(calls // 10, 100)) / nops
    graph.close()

    if kernel is not None:
        x = gp.ones(16)
        bound = kernel.bind(x, factor=1.0, n=16)
        extra["jit"] = {"keyword_us": per_call_us(lambda: kernel(x, factor=1.0, n=16), gsync,
                                                  calls),
                        "bound_us": per_call_us(bound, gsync, calls)}
    return {"rows": rows, **extra}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not os.environ.get("PYGPUKIT_COMMIT"):
        raise SystemExit("set PYGPUKIT_COMMIT to the commit under test (ci/gpu-check does)")
    runs = [one_run(args.calls) for _ in range(args.runs)]
    summary: dict[str, Any] = {}
    for name, first in runs[0]["rows"].items():
        ratios = [r["rows"][name]["ours_us"] / r["rows"][name]["torch_us"] for r in runs]
        entry = {key: spread([r["rows"][name][key] for r in runs])
                 for key in ("ours_us", "torch_us", "cupy_us") if key in first}
        entry["ratio_vs_torch"] = spread(ratios)
        entry["target_vs_torch"] = first["target_vs_torch"]
        entry["verdict"] = verdict(ratios, first["target_vs_torch"])
        summary[name] = entry
    graph = {key: spread([r["graph"][key] for r in runs])
             for key in ("replay_us_per_op", "eager_us_per_op", "torch_eager_us_per_op",
                         "torch_replay_us_per_op")}
    graph["replay_equals_eager"] = all(r["graph"]["replay_equals_eager"] for r in runs)
    graph["eager_over_replay"] = spread([r["graph"]["eager_us_per_op"]
                                         / r["graph"]["replay_us_per_op"] for r in runs])
    report = torch_report(
        "small_ops", calls=args.calls, runs=args.runs, rows=summary, graph=graph,
        c_launch_floor_us=spread([r["c_launch_floor_us"] for r in runs]),
        python_prepared_launch_us=spread([r["python_prepared_launch_us"] for r in runs]))
    if all("jit" in r for r in runs):
        report["jit"] = {
            "keyword_us": spread([r["jit"]["keyword_us"] for r in runs]),
            "bound_us": spread([r["jit"]["bound_us"] for r in runs]),
            "keyword_over_bound": spread([r["jit"]["keyword_us"] / r["jit"]["bound_us"]
                                          for r in runs])}
    args.out.write_text(json.dumps(report, indent=2))
    floor = report["c_launch_floor_us"]["median"]
    print(f"small ops, µs per call (median of {args.runs} runs; C launch floor {floor:.2f})")
    for name, e in summary.items():
        cupy = f"{e['cupy_us']['median']:6.2f}" if "cupy_us" in e else "     -"
        r = e["ratio_vs_torch"]
        print(f"  {name:26s} ours {e['ours_us']['median']:6.2f}  torch "
              f"{e['torch_us']['median']:6.2f}  cupy {cupy}  x{r['median']:.2f} "
              f"[{r['min']:.2f}-{r['max']:.2f}] target {e['target_vs_torch']}: {e['verdict']}")
    print(f"  graph: replay {graph['replay_us_per_op']['median']:.2f} µs/op, eager "
          f"{graph['eager_us_per_op']['median']:.2f}, torch graph "
          f"{graph['torch_replay_us_per_op']['median']:.2f}, eager/replay "
          f"{graph['eager_over_replay']['median']:.1f}x, bit-identical "
          f"{graph['replay_equals_eager']}")
    if "jit" in report:
        print(f"  jit keyword/bound {report['jit']['keyword_over_bound']['median']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
