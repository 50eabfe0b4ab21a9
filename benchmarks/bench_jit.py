"""gp.jit: cold compile, cache hit in a fresh process, and launch cost, side by side with CuPy.

Same run, same GPU. The kernel is the seed README's ``scale`` ("Custom JIT Kernel").

(a) Cold compile, the same work on both sides: compile + module load + first launch + stream
    synchronize, for a source made unique by a salt comment so that no cache (disk or memory)
    can answer; ours with ``cache=False`` (and with the disk cache on, a miss into a fresh
    folder), CuPy's ``RawKernel`` with a fresh ``CUPY_CACHE_DIR``. One warm-up compile per side
    first (NVRTC loaded, CUDA initialized), then the median of --compiles fresh compiles.
(b) Cache hit in a fresh process: --procs subprocesses; each imports pygpukit, initializes CUDA
    (an array on the GPU), then times with perf_counter ``gp.jit(src, func="scale")`` (cache
    lookup + module load + function; the kernel is launchable when it returns), and the first
    launch. Two flows: as the README's block runs (``gp.is_nvrtc_available()`` first), and
    ``gp.jit`` first (it then also finds and loads NVRTC). CuPy's fresh-process disk-cache hit
    (``RawKernel(...).kernel``) for comparison.
(c) Launch cost: N back-to-back launches of ``scale`` on 1024 floats from a Python loop, one
    synchronize at the end, host time / N, median of rounds: our JITKernel (positional and the
    README's keyword form, and a launch prepared once by ``kernel.bind(...)``), the bare
    prepared ``pygpukit_driver.Launcher`` of the same function (the floor of our Python path),
    the same launch repeated in C++ (the driver's own floor),
    CuPy's RawKernel and torch's ``x.mul_(0.5)`` (one eager kernel).

(a), (b) and (c) are repeated --runs times (each run with fresh cache folders) and every
figure reported as min / median / max over the runs; --compiles, --procs and --rounds are per
run.  CuPy and torch are optional: one not installed is recorded as absent; one installed that
fails has its error recorded, and the script exits non-zero.

    python benchmarks/bench_jit.py --out benchmarks/results/jit-h200.json
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
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from _runs import (
    absolute_verdict,
    add_runs_argument,
    aggregate,
    repeat_runs,
    report_head,
    require_commit,
    verdict,
)
from _timing import burst_us, host_loop_us

import pygpukit as gp
import pygpukit_driver as drv

SRC = """
extern "C" __global__
void scale(float* x, float factor, int n) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n) x[idx] *= factor;
}
"""
N_ELEMS = 1024
# Optional peers: absent ones are recorded as such (importing cupy here would initialize it).
HAVE_CUPY = importlib.util.find_spec("cupy") is not None
HAVE_TORCH = importlib.util.find_spec("torch") is not None


def salted() -> str:
    return SRC + f"// salt {uuid.uuid4().hex}\n"


# -- (a) cold compile ------------------------------------------------------------------------
def cold_ours(x: Any, compiles: int, cache: bool) -> dict[str, Any]:
    stream = gp.current_stream()

    def once() -> float:
        t0 = time.perf_counter()
        kernel = gp.jit(salted(), func="scale", cache=cache)
        kernel(x, factor=0.5, n=x.size)
        stream.synchronize()
        return (time.perf_counter() - t0) * 1e3

    once()  # warm-up: NVRTC loaded, first module
    samples = [once() for _ in range(compiles)]
    return {"ms_median": statistics.median(samples), "ms_min": min(samples), "samples_ms": samples}


def cold_cupy(compiles: int) -> dict[str, Any]:
    import cupy as cp

    x = cp.ones(N_ELEMS, dtype=cp.float32)
    stream = cp.cuda.get_current_stream()

    def once() -> float:
        t0 = time.perf_counter()
        kernel = cp.RawKernel(salted(), "scale")
        kernel(((N_ELEMS + 255) // 256,), (256,), (x, np.float32(0.5), np.int32(N_ELEMS)))
        stream.synchronize()
        return (time.perf_counter() - t0) * 1e3

    once()
    samples = [once() for _ in range(compiles)]
    return {"ms_median": statistics.median(samples), "ms_min": min(samples), "samples_ms": samples,
            "cupy": cp.__version__, "nvrtc": ".".join(map(str, cp.cuda.nvrtc.getVersion()))}


# -- (b) cache hit in a fresh process --------------------------------------------------------
CHILD = r"""
import json, sys, time
t_import = time.perf_counter()
import numpy as np
import pygpukit as gp
x = gp.from_numpy(np.random.default_rng(0).standard_normal(4096).astype(np.float32))
before = x.to_numpy()  # CUDA initialized, context current, array on the GPU
t_ready = time.perf_counter()
flow = sys.argv[1]
src = open(sys.argv[2]).read()
out = {"flow": flow, "import_and_init_ms": (t_ready - t_import) * 1e3}
n_before = None
if flow == "readme":
    t0 = time.perf_counter()
    ok = gp.is_nvrtc_available()
    out["is_nvrtc_available_ms"] = (time.perf_counter() - t0) * 1e3
    assert ok
    import pygpukit_nvrtc
    n_before = len(pygpukit_nvrtc.cache_entries())
t0 = time.perf_counter()
kernel = gp.jit(src, func="scale")
t1 = time.perf_counter()
kernel(x, factor=0.5, n=x.size)
t2 = time.perf_counter()
out["jit_ms"] = (t1 - t0) * 1e3
out["first_launch_ms"] = (t2 - t1) * 1e3
# Whether the hit needed NVRTC: loaded into the process, or cuda-pathfinder imported to find it.
out["nvrtc_loaded"] = "libnvrtc" in open("/proc/self/maps").read()
out["pathfinder_imported"] = "cuda.pathfinder" in sys.modules
out["correct"] = bool(np.array_equal(x.to_numpy(), before * np.float32(0.5)))
import pygpukit_nvrtc
out["cache_entries"] = len(pygpukit_nvrtc.cache_entries())
out["cache_hit"] = n_before is None or out["cache_entries"] == n_before
print("RESULT " + json.dumps(out))
"""

CHILD_CUPY = r"""
import json, sys, time
import numpy as np
import cupy as cp
x = cp.ones(4096, dtype=cp.float32)
cp.cuda.get_current_stream().synchronize()
src = open(sys.argv[1]).read()
t0 = time.perf_counter()
kernel = cp.RawKernel(src, "scale")
kernel.kernel  # compile or load: launchable
t1 = time.perf_counter()
print("RESULT " + json.dumps({"jit_ms": (t1 - t0) * 1e3}))
"""


def run_child(code: str, args: list[str], env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    result: dict[str, Any] = json.loads(line[len("RESULT "):])
    return result


def fresh_process(procs: int, tmp: Path) -> dict[str, Any]:
    src_file = tmp / "scale.cu"
    src_file.write_text(SRC)
    env = {**os.environ, "PYGPUKIT_CACHE_DIR": str(tmp / "pgk-cache"),
           "CUPY_CACHE_DIR": str(tmp / "cupy-cache")}
    run_child(CHILD, ["readme", str(src_file)], env)  # fills the cache
    out: dict[str, Any] = {}
    for flow in ("readme", "jit_first"):
        runs = [run_child(CHILD, [flow, str(src_file)], env) for _ in range(procs)]
        assert all(r["correct"] for r in runs), runs
        assert all(r["cache_hit"] for r in runs), runs
        jit_ms = [r["jit_ms"] for r in runs]
        out[flow] = {"jit_ms_median": statistics.median(jit_ms), "jit_ms_max": max(jit_ms),
                     "first_launch_ms_median": statistics.median(r["first_launch_ms"]
                                                                 for r in runs),
                     "runs": runs}
        if flow == "readme":
            out[flow]["is_nvrtc_available_ms_median"] = statistics.median(
                r["is_nvrtc_available_ms"] for r in runs)
    if not HAVE_CUPY:
        out["cupy"] = {"absent": "cupy is not installed"}
        return out
    try:
        run_child(CHILD_CUPY, [str(src_file)], env)
        cupy_runs = [run_child(CHILD_CUPY, [str(src_file)], env) for _ in range(procs)]
        out["cupy"] = {"jit_ms_median": statistics.median(r["jit_ms"] for r in cupy_runs),
                       "runs": cupy_runs}
    except Exception as exc:  # recorded in the JSON and turned into a non-zero exit
        out["cupy"] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


# -- (c) launch cost ---------------------------------------------------------------------------
def launch_ours(n: int, rounds: int) -> dict[str, Any]:
    x = gp.from_numpy(np.random.default_rng(1).standard_normal(N_ELEMS).astype(np.float32))
    kernel = gp.jit(SRC, func="scale")
    stream = gp.current_stream()
    size = x.size
    out: dict[str, Any] = {}

    def positional(k: int) -> None:
        for _ in range(k):
            kernel(x, 0.5, size)

    def keywords(k: int) -> None:
        for _ in range(k):
            kernel(x, factor=0.5, n=size)

    bound = kernel.bind(x, factor=0.5, n=size)

    def bound_calls(k: int) -> None:
        for _ in range(k):
            bound()

    out["jit_positional"] = host_loop_us(positional, stream.synchronize, n, rounds)
    out["jit_keywords"] = host_loop_us(keywords, stream.synchronize, n, rounds)
    out["jit_bound"] = host_loop_us(bound_calls, stream.synchronize, n, rounds)
    launcher = drv.Launcher(kernel._function, (N_ELEMS + 255) // 256, 256, "Pfi", 0,
                            stream.handle)
    ptr = x.data_ptr

    def bare(k: int) -> None:
        for _ in range(k):
            launcher(ptr, 0.5, size)

    out["bare_launcher"] = host_loop_us(bare, stream.synchronize, n, rounds)
    out["c_loop_floor"] = host_loop_us(
        lambda k: drv._driver._launch_loop(launcher, k, ptr, 1.0, size), stream.synchronize, n,
        rounds)
    start, end = gp.Event(), gp.Event()
    stream.synchronize()
    start.record()
    positional(n)
    end.record()
    end.synchronize()
    out["gpu_us_per_kernel"] = start.elapsed_time(end) * 1e3 / n
    out["jit_burst256_us_median"] = burst_us(positional, stream.synchronize, rounds)
    return out


def launch_cupy(n: int, rounds: int) -> dict[str, Any]:
    import cupy as cp

    x = cp.ones(N_ELEMS, dtype=cp.float32)
    kernel = cp.RawKernel(SRC, "scale")
    s = cp.cuda.Stream(non_blocking=True)
    factor, size = np.float32(0.5), np.int32(N_ELEMS)
    grid, block = ((N_ELEMS + 255) // 256,), (256,)
    with s:
        def loop(k: int) -> None:
            for _ in range(k):
                kernel(grid, block, (x, factor, size))

        return {"raw_kernel": host_loop_us(loop, s.synchronize, n, rounds), "cupy": cp.__version__}


def launch_torch(n: int, rounds: int) -> dict[str, Any]:
    import torch

    x = torch.ones(N_ELEMS, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        def loop(k: int) -> None:
            for _ in range(k):
                x.mul_(0.5)

        return {"mul_": host_loop_us(loop, s.synchronize, n, rounds), "torch": torch.__version__}


def table(rows: list[tuple[str, str]]) -> None:
    width = max(len(a) for a, _ in rows)
    for a, b in rows:
        print(f"  {a:{width}}  {b}")


def peer(name: str, present: bool, fn: Any, *args: Any) -> dict[str, Any]:
    """Run an optional peer's measurement: its result, ``absent`` or its recorded ``error``."""
    if not present:
        return {"absent": f"{name} is not installed"}
    try:
        result: dict[str, Any] = fn(*args)
    except Exception as exc:  # recorded in the JSON and turned into a non-zero exit
        result = {"error": f"{type(exc).__name__}: {exc}"}
        print(f"{name} failed: {result['error']}", file=sys.stderr)
    return result


def one_run(opts: argparse.Namespace) -> dict[str, Any]:
    """(a), (b) and (c) once, with fresh cache folders, and the run's summary figures."""
    run: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-jit-") as tmp_name:
        tmp = Path(tmp_name)
        os.environ["PYGPUKIT_CACHE_DIR"] = str(tmp / "cold-cache")
        x = gp.from_numpy(np.ones(N_ELEMS, dtype=np.float32))
        cold: dict[str, Any] = {"ours_nocache": cold_ours(x, opts.compiles, cache=False),
                                "ours_cache_miss": cold_ours(x, opts.compiles, cache=True),
                                "cupy": peer("cupy", HAVE_CUPY, cold_cupy, opts.compiles)}
        run["cold_compile"] = cold
        run["fresh_process_cache_hit"] = fresh_process(opts.procs, tmp)
        os.environ.pop("PYGPUKIT_CACHE_DIR")  # the folder goes with tmp
    launch: dict[str, Any] = {"n": opts.n, "rounds": opts.rounds,
                              "ours": launch_ours(opts.n, opts.rounds),
                              "cupy": peer("cupy", HAVE_CUPY, launch_cupy, opts.n, opts.rounds),
                              "torch": peer("torch", HAVE_TORCH, launch_torch, opts.n,
                                            opts.rounds)}
    run["launch"] = launch

    hit = run["fresh_process_cache_hit"]
    ours = launch["ours"]
    summary: dict[str, Any] = {
        "cold_compile_ours_ms": cold["ours_nocache"]["ms_median"],
        "cold_compile_ours_cache_miss_ms": cold["ours_cache_miss"]["ms_median"],
        "cache_hit_fresh_process_readme_flow_ms": hit["readme"]["jit_ms_median"],
        "cache_hit_fresh_process_jit_first_ms": hit["jit_first"]["jit_ms_median"],
        "is_nvrtc_available_fresh_process_ms": hit["readme"]["is_nvrtc_available_ms_median"],
        "launch_jit_keywords_us": ours["jit_keywords"]["us_per_call_median"],
        "launch_jit_positional_us": ours["jit_positional"]["us_per_call_median"],
        "launch_jit_bound_us": ours["jit_bound"]["us_per_call_median"],
        "launch_bare_launcher_us": ours["bare_launcher"]["us_per_call_median"],
        "launch_c_loop_floor_us": ours["c_loop_floor"]["us_per_call_median"],
        "gpu_us_per_kernel": ours["gpu_us_per_kernel"],
        "launch_jit_burst256_us": ours["jit_burst256_us_median"],
    }
    if "ms_median" in cold["cupy"]:
        summary["cold_compile_cupy_ms"] = cold["cupy"]["ms_median"]
        summary["cold_compile_ratio_ours_over_cupy"] = (summary["cold_compile_ours_ms"]
                                                        / cold["cupy"]["ms_median"])
    if "jit_ms_median" in hit["cupy"]:
        summary["cache_hit_fresh_process_cupy_ms"] = hit["cupy"]["jit_ms_median"]
    if "raw_kernel" in launch["cupy"]:
        summary["launch_cupy_raw_kernel_us"] = launch["cupy"]["raw_kernel"]["us_per_call_median"]
    if "mul_" in launch["torch"]:
        summary["launch_torch_mul_us"] = launch["torch"]["mul_"]["us_per_call_median"]
    run["summary"] = summary
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    # Per run; x 3 runs about the 7 compiles / 7 processes / 100 000 x 7 launches of one run
    # before --runs existed.
    ap.add_argument("--compiles", type=int, default=3, help="cold compiles per side per run")
    ap.add_argument("--procs", type=int, default=3, help="fresh processes per flow per run")
    ap.add_argument("-n", type=int, default=75_000)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of -n launches per run")
    add_runs_argument(ap)
    opts = ap.parse_args()
    require_commit()
    # CuPy reads CUPY_CACHE_DIR once per process: one folder for all runs (its cold compiles
    # stay cold: every source is salted), made before CuPy's first compile, gone at exit.
    cupy_cache = tempfile.TemporaryDirectory(prefix="bench-jit-cupy-")
    os.environ["CUPY_CACHE_DIR"] = cupy_cache.name
    if not gp.is_nvrtc_available():
        print("needs the CUDA backend and pygpukit[jit]", file=sys.stderr)
        return 1
    import pygpukit_nvrtc

    runs = repeat_runs(opts.runs, lambda _: one_run(opts))
    report = report_head("jit", opts.runs, nvrtc=".".join(map(str, pygpukit_nvrtc.version())),
                         nvrtc_path=pygpukit_nvrtc.path(), method=__doc__, **aggregate(runs))
    summary = report["summary"]
    verdicts = {
        "cache_hit_readme_flow_le_2ms": absolute_verdict(
            summary["cache_hit_fresh_process_readme_flow_ms"], 2.0),
        "cache_hit_jit_first_le_2ms": absolute_verdict(
            summary["cache_hit_fresh_process_jit_first_ms"], 2.0),
        "launch_keywords_le_2.5us": absolute_verdict(summary["launch_jit_keywords_us"], 2.5),
        "launch_bound_le_2.5us": absolute_verdict(summary["launch_jit_bound_us"], 2.5),
    }
    if "cold_compile_ratio_ours_over_cupy" in summary:  # target: no slower than CuPy
        verdicts["cold_compile_le_cupy"] = verdict(
            summary["cold_compile_ratio_ours_over_cupy"], better="lower", target=1.0)
    report["verdicts"] = verdicts
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(report, indent=2) + "\n")

    print(f"gp.jit on {report['device']} (driver CUDA {report['driver_cuda_version']}, "
          f"NVRTC {report['nvrtc']} at {report['nvrtc_path']}), {opts.runs} runs: "
          "median [min-max]")
    table([(key, f"{v['median']:9.3f} [{v['min']:.3f}-{v['max']:.3f}]")
           for key, v in summary.items() if isinstance(v, dict) and "median" in v])
    print(json.dumps(verdicts, indent=2))
    failed = [f"{part}.{name}" for r in runs
              for part in ("cold_compile", "fresh_process_cache_hit", "launch")
              for name, value in r[part].items() if isinstance(value, dict) and "error" in value]
    if failed:
        print(f"failed: {', '.join(sorted(set(failed)))} (errors in {opts.out})",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
