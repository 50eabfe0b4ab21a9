"""Small-op host cost (issue 08), side by side with torch and CuPy in the same run.

For each op on tiny arrays: wall-clock microseconds per call over ``--calls`` back-to-back
asynchronous calls, one synchronization at the end (median of --rounds rounds), for pygpukit,
torch and CuPy; the whole measurement is repeated ``--runs`` times and each figure reported as
min / median / max with the ratio to torch computed per run.  Each run is followed by the same
run in a fresh process with ``PGK_TUNE_PDL=0`` (programmatic dependent launch off: the kernels
library and pygpukit read it once per process), so the default and the PDL-off rows sit side
by side in one file, interleaved in time (``--no-pdl-off`` skips them).  Beside them, the C
``cuLaunchKernel`` floor of this run (a prepared launch repeated from C++, no Python), a
captured graph of ~100 mixed small ops (elementwise, reductions, casts, a GEMM, JIT) replayed
vs run eagerly (and torch.cuda.graph of the same ops), and a JIT keyword call vs its bound
launch.  Writes JSON to --out.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _runs import add_runs_argument, report_head, require_commit, spread, verdict

JIT_SRC = r'''extern "C" __global__ void scale(float* x, float factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= factor; }'''


def per_call_us(fn: Callable[[], object], sync: Callable[[], object], calls: int,
                rounds: int = 3) -> float:
    """Median over ``rounds`` rounds of wall-clock µs per call (``calls`` calls, one sync)."""
    for _ in range(200):
        fn()
    sync()
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(samples)


def one_run(calls: int, rounds: int) -> dict[str, Any]:
    """One run in this process: every op, the launch floors, graphs and the JIT call."""
    import torch

    cp: Any = None
    if importlib.util.find_spec("cupy") is not None:  # optional: its column is then absent
        import cupy as cp

    import pygpukit as gp
    import pygpukit_driver as drv

    def timed(fn: Callable[[], object], sync: Callable[[], object], n: int) -> float:
        return per_call_us(fn, sync, n, rounds)

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
    c = {k: cp.asarray(v) for k, v in host.items()} if cp is not None else {}
    gsync = gp.current_stream().synchronize
    tsync = torch.cuda.synchronize
    csync = cp.cuda.get_current_stream().synchronize if cp is not None else None
    # In-place operands of their own (the other rows read "a" unchanged).
    g["ai"], t["ai"] = gp.from_numpy(host["a"]), torch.from_numpy(host["a"]).cuda()
    if cp is not None:
        c["ai"] = cp.asarray(host["a"])

    def iadd(arrays: dict[str, Any]) -> Callable[[], object]:
        def op() -> object:
            x = arrays["ai"]
            x += arrays["b"]
            return x
        return op

    cases: dict[str, tuple[Callable[[], object], Callable[[], object],
                           Callable[[], object] | None, float]] = {
        # name: (ours, torch, cupy, the issue's target ratio to torch)
        "c = a + b (1 elem f32)": (lambda: g["a1"] + g["b1"], lambda: t["a1"] + t["b1"],
                                   lambda: c["a1"] + c["b1"], 0.7),
        "a * b (16)": (lambda: g["a"] * g["b"], lambda: t["a"] * t["b"],
                       lambda: c["a"] * c["b"], 0.8),
        "a + 1.0 (16)": (lambda: g["a"] + 1.0, lambda: t["a"] + 1.0, lambda: c["a"] + 1.0, 0.8),
        "a += b (16)": (iadd(g), iadd(t), iadd(c) if cp is not None else None, 0.8),
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
        row = {"ours_us": timed(ours, gsync, calls),
               "torch_us": timed(theirs, tsync, calls), "target_vs_torch": target}
        if cupys is not None and csync is not None:
            row["cupy_us"] = timed(cupys, csync, calls)
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
    for _ in range(rounds):
        gsync()
        t0 = time.perf_counter()
        drv._driver._launch_loop(launcher, calls, *args)
        gsync()
        floor.append((time.perf_counter() - t0) / calls * 1e6)
    extra = {"c_launch_floor_us": statistics.median(floor),
             "python_prepared_launch_us": timed(
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
        "ops": nops, "fused_ops": graph.fused_ops, "replay_equals_eager": same,
        "replay_us_per_op": timed(graph.replay, gsync, max(calls // 10, 100)) / nops,
        "eager_us_per_op": timed(mixed, gsync, max(calls // 100, 20)) / nops,
        "torch_eager_us_per_op": timed(mixed_torch, tsync, max(calls // 100, 20)) / nops,
    }
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        mixed_torch()
    torch.cuda.current_stream().wait_stream(side)
    tgraph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(tgraph):
        mixed_torch()
    extra["graph"]["torch_replay_us_per_op"] = timed(
        tgraph.replay, tsync, max(calls // 10, 100)) / nops
    graph.close()

    if kernel is not None:
        x = gp.ones(16)
        bound = kernel.bind(x, factor=1.0, n=16)
        # Rounds of the two alternate, so a slow stretch of the machine lands on both sides.
        keyword: list[float] = []
        bound_us: list[float] = []
        for _ in range(rounds):
            keyword.append(per_call_us(lambda: kernel(x, factor=1.0, n=16), gsync, calls, 1))
            bound_us.append(per_call_us(bound, gsync, calls, 1))
        extra["jit"] = {"keyword_us": statistics.median(keyword),
                        "bound_us": statistics.median(bound_us)}
    return {"rows": rows, **extra}


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Every figure of ``runs`` as min / median / max, ratios to torch per run with verdicts."""
    rows: dict[str, Any] = {}
    for name, first in runs[0]["rows"].items():
        ratio = spread([r["rows"][name]["ours_us"] / r["rows"][name]["torch_us"] for r in runs])
        entry = {key: spread([r["rows"][name][key] for r in runs])
                 for key in ("ours_us", "torch_us", "cupy_us") if key in first}
        entry["ratio_vs_torch"] = ratio
        entry["target_vs_torch"] = first["target_vs_torch"]
        entry["verdict"] = verdict(ratio, better="lower", target=first["target_vs_torch"])
        rows[name] = entry
    graph: dict[str, Any] = {
        key: spread([r["graph"][key] for r in runs])
        for key in ("replay_us_per_op", "eager_us_per_op", "torch_eager_us_per_op",
                    "torch_replay_us_per_op")}
    graph["ops"] = runs[0]["graph"]["ops"]
    graph["fused_ops"] = runs[0]["graph"]["fused_ops"]
    graph["replay_equals_eager"] = all(r["graph"]["replay_equals_eager"] for r in runs)
    graph["eager_over_replay"] = spread([r["graph"]["eager_us_per_op"]
                                         / r["graph"]["replay_us_per_op"] for r in runs])
    out: dict[str, Any] = {
        "rows": rows, "graph": graph,
        "c_launch_floor_us": spread([r["c_launch_floor_us"] for r in runs]),
        "python_prepared_launch_us": spread([r["python_prepared_launch_us"] for r in runs])}
    if all("jit" in r for r in runs):
        out["jit"] = {
            "keyword_us": spread([r["jit"]["keyword_us"] for r in runs]),
            "bound_us": spread([r["jit"]["bound_us"] for r in runs]),
            "keyword_over_bound": spread([r["jit"]["keyword_us"] / r["jit"]["bound_us"]
                                          for r in runs])}
    else:
        out["jit"] = {"absent": "NVRTC is not available (pygpukit[jit] not installed)"}
    return out


def run_pdl_off(args: argparse.Namespace) -> dict[str, Any]:
    """One run in a fresh process with ``PGK_TUNE_PDL=0``: its raw figures."""
    with tempfile.TemporaryDirectory(prefix="bench-small-ops-") as tmp:
        raw = Path(tmp) / "run.json"
        subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child-run",
                        "--out", str(raw), "--calls", str(args.calls), "--rounds",
                        str(args.rounds)], env={**os.environ, "PGK_TUNE_PDL": "0"}, check=True)
        result: dict[str, Any] = json.loads(raw.read_text())
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--calls", type=int, default=10_000)
    # 3 rounds per figure (5 before the PDL-off runs doubled the work): same device time.
    parser.add_argument("--rounds", type=int, default=3, help="rounds of --calls per figure")
    parser.add_argument("--no-pdl-off", action="store_true",
                        help="skip the runs with PGK_TUNE_PDL=0 in a fresh process")
    parser.add_argument("--child-run", action="store_true", help=argparse.SUPPRESS)
    add_runs_argument(parser)
    args = parser.parse_args()
    require_commit()
    if args.child_run:  # one run for the parent, in this process's PDL setting
        args.out.write_text(json.dumps(one_run(args.calls, args.rounds)))
        return 0
    if os.environ.get("PGK_TUNE_PDL", "1").strip() == "0":
        raise SystemExit("run without PGK_TUNE_PDL=0: the script measures the PDL-off rows "
                         "itself, in a fresh process beside each default run")
    default: list[dict[str, Any]] = []
    pdl_off: list[dict[str, Any]] = []
    for i in range(args.runs):  # interleaved, so that a drift of the machine hits both alike
        print(f"-- run {i + 1}/{args.runs}", flush=True)
        default.append(one_run(args.calls, args.rounds))
        if not args.no_pdl_off:
            print(f"-- run {i + 1}/{args.runs}, PGK_TUNE_PDL=0 (fresh process)", flush=True)
            pdl_off.append(run_pdl_off(args))
    summary = summarize(default)
    report = report_head("small_ops", args.runs, calls=args.calls, rounds=args.rounds,
                         **summary)
    if pdl_off:
        off = summarize(pdl_off)
        # ours with PDL off / ours by default, paired by run: > 1 means PDL makes ours faster.
        for name, entry in off["rows"].items():
            gain = spread([o["rows"][name]["ours_us"] / d["rows"][name]["ours_us"]
                           for d, o in zip(default, pdl_off, strict=True)])
            entry["pdl_off_over_default"] = gain
            entry["pdl_verdict"] = verdict(gain, better="lower")
        report["pdl_off"] = {"env": {"PGK_TUNE_PDL": "0"}, **off}
    else:
        report["pdl_off"] = {"skipped": "--no-pdl-off"}
    args.out.write_text(json.dumps(report, indent=2))
    floor = report["c_launch_floor_us"]["median"]
    print(f"small ops, µs per call (median of {args.runs} runs; C launch floor {floor:.2f})")
    for name, e in summary["rows"].items():
        cupy = f"{e['cupy_us']['median']:6.2f}" if "cupy_us" in e else "     -"
        r = e["ratio_vs_torch"]
        pdl = ""
        if pdl_off:
            o = report["pdl_off"]["rows"][name]
            pdl = (f"  | PDL off: ours {o['ours_us']['median']:6.2f} "
                   f"x{o['ratio_vs_torch']['median']:.2f} vs torch, off/default "
                   f"{o['pdl_off_over_default']['median']:.2f}")
        print(f"  {name:26s} ours {e['ours_us']['median']:6.2f}  torch "
              f"{e['torch_us']['median']:6.2f}  cupy {cupy}  x{r['median']:.2f} "
              f"[{r['min']:.2f}-{r['max']:.2f}] target {e['target_vs_torch']}: "
              f"{e['verdict']}{pdl}")
    graph = summary["graph"]
    print(f"  graph: replay {graph['replay_us_per_op']['median']:.2f} µs/op, eager "
          f"{graph['eager_us_per_op']['median']:.2f}, torch graph "
          f"{graph['torch_replay_us_per_op']['median']:.2f}, eager/replay "
          f"{graph['eager_over_replay']['median']:.1f}x, bit-identical "
          f"{graph['replay_equals_eager']}, {graph['fused_ops']} ops fused")
    if "keyword_over_bound" in summary["jit"]:
        print(f"  jit keyword/bound {summary['jit']['keyword_over_bound']['median']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
