"""Host cost of launching an empty 3-argument kernel from Python, and of an event record.

Like for like, side by side in one run on one GPU, in two tiers:

- general call (argument objects made once, converted and packed by the library per call):
  ``pygpukit_driver.launch_kernel(f, 1, 1, [c_uint64, c_uint64, c_int32], 0, s)``, cuda.core's
  ``launch(s, cfg, kernel, buf_a, buf_b, np.int32)``, CuPy's ``RawKernel((1,), (1,), args)``;
- prepared call (the library's cheapest launch from Python): our ``Launcher(f, 1, 1, "PPi",
  stream=s)(a, b, n)`` (argument types fixed once; the three values still converted per call,
  in C++), cuda.core's stack with the arguments pre-packed once (``cuda.bindings.driver.
  cuLaunchKernel(kernel, ..., stream, void** address, 0)``: cuda.core's own ``launch`` packs on
  every call and has no prepared form), CuPy's compiled ``RawKernel.kernel`` called directly
  (CuPy has no pre-packed launch: the arguments are still packed per call).

Beside them: the same launch repeated from C++ (the driver's floor, no Python), GPU time per
kernel, a 256-launch burst, and event records.  Method: N launches back to back in a Python
loop onto one stream, then a synchronize; host wall time / N; median of --rounds rounds after a
warm-up; the whole measurement repeated --runs times, every figure reported as min / median /
max over the runs and each ratio (theirs / ours, per run) with a verdict ("on par" when the
runs straddle 1.0).  The kernel is ``empty3(float* a, float* b, int n) {}``: PTX shipped here
for pygpukit_driver (JIT-compiled by the driver), the same CUDA C++ compiled by cuda.core's and
CuPy's own NVRTC paths.  cuda.core and CuPy are optional: when one is not installed its rows
say so; when one is installed but fails, the error is recorded and the script exits non-zero.

    python benchmarks/bench_launch.py --out benchmarks/results/launch-h200.json
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

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

import pygpukit_driver as drv

CUDA_SRC = 'extern "C" __global__ void empty3(float* a, float* b, int n) {}\n'
PTX = """
.version 7.0
.target sm_70
.address_size 64
.visible .entry empty3(.param .u64 empty3_a, .param .u64 empty3_b, .param .u32 empty3_n)
{
    ret;
}
"""


def bench_ours(n: int, rounds: int, nbytes: int) -> dict[str, Any]:
    ctx = drv.Device(0).primary_context()
    ctx.set_current()
    mod = drv.Module.load_data(PTX.encode())
    f = mod.get_function("empty3")
    a, b = drv.mem_alloc(nbytes), drv.mem_alloc(nbytes)
    s = drv.Stream()
    out: dict[str, Any] = {}

    launcher = drv.Launcher(f, 1, 1, "PPi", stream=s)

    def loop_launcher(k: int) -> None:
        for _ in range(k):
            launcher(a, b, 256)

    out["launcher"] = host_loop_us(loop_launcher, s.synchronize, n, rounds)

    # Diagnostics. The driver's own cost: the same launch repeated from C++ (no Python).
    out["c_loop_floor"] = host_loop_us(
        lambda k: drv._driver._launch_loop(launcher, k, a, b, 256), s.synchronize, n, rounds
    )
    # GPU time per empty kernel on one stream (events around n launches): if the host loop is
    # no faster than this, launches are GPU-bound and the queue is full.
    start, end = drv.Event(), drv.Event()
    s.synchronize()
    start.record(s)
    loop_launcher(n)
    end.record(s)
    end.synchronize()
    out["gpu_us_per_kernel"] = start.elapsed_time(end) * 1e3 / n
    # A short burst that cannot fill the launch queue: host cost alone.
    out["burst256_us_median"] = burst_us(loop_launcher, s.synchronize, rounds)
    start.close()
    end.close()

    # The general path: ctypes argument objects made once, their buffers packed per call.
    args = [ctypes.c_uint64(a), ctypes.c_uint64(b), ctypes.c_int32(256)]

    def loop_general(k: int) -> None:
        for _ in range(k):
            drv.launch_kernel(f, 1, 1, args, 0, s)

    out["launch_kernel"] = host_loop_us(loop_general, s.synchronize, n, rounds)

    ev = drv.Event(timing=False)
    record = ev.record

    def loop_event(k: int) -> None:
        for _ in range(k):
            record(s)

    out["event_record"] = host_loop_us(loop_event, s.synchronize, n, rounds)
    ev_t = drv.Event(timing=True)

    def loop_event_timing(k: int) -> None:
        for _ in range(k):
            ev_t.record(s)

    out["event_record_timing"] = host_loop_us(loop_event_timing, s.synchronize, n, rounds)
    ev.close()
    ev_t.close()
    s.close()
    drv.mem_free(a)
    drv.mem_free(b)
    mod.close()
    ctx.close()
    return out


def bench_cuda_core(n: int, rounds: int, nbytes: int) -> dict[str, Any]:
    import numpy as np

    try:
        from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch
    except ImportError:  # cuda-core < 0.4
        from cuda.core.experimental import (
            Device,
            LaunchConfig,
            Program,
            ProgramOptions,
            launch,
        )

    dev = Device(0)
    dev.set_current()
    s = dev.create_stream()
    arch = "".join(str(x) for x in dev.compute_capability)
    prog = Program(CUDA_SRC, code_type="c++", options=ProgramOptions(arch=f"sm_{arch}"))
    kernel = prog.compile("cubin").get_kernel("empty3")
    a, b = dev.allocate(nbytes, stream=s), dev.allocate(nbytes, stream=s)
    cfg = LaunchConfig(grid=1, block=1)
    n32 = np.int32(256)
    try:
        launch(s, cfg, kernel, a, b, n32)
        new_api = True
    except TypeError:
        new_api = False
    out: dict[str, Any] = {}
    import cuda.core

    out["version"] = getattr(cuda.core, "__version__", "?")
    if new_api:

        def loop(k: int) -> None:
            for _ in range(k):
                launch(s, cfg, kernel, a, b, n32)

    else:
        cfg = LaunchConfig(grid=1, block=1, stream=s)

        def loop(k: int) -> None:
            for _ in range(k):
                launch(kernel, cfg, a, b, n32)

    out["launch"] = host_loop_us(loop, s.sync, n, rounds)

    # Apart, so that a failure of the pre-packed path keeps the general row above.
    try:
        out["launch_prepacked"] = cuda_core_prepacked(kernel, a, b, s, n, rounds)
    except Exception as exc:  # recorded in the JSON and turned into a non-zero exit
        out["launch_prepacked_error"] = f"{type(exc).__name__}: {exc}"
        print(f"cuda.core pre-packed launch failed: {out['launch_prepacked_error']}",
              file=sys.stderr)
    return out


def cuda_core_prepacked(kernel: Any, a: Any, b: Any, s: Any, n: int,
                        rounds: int) -> dict[str, Any]:
    """cuda.core's kernel and stream launched with the arguments packed once.

    Through cuda.core's binding layer (``cuda.bindings.driver.cuLaunchKernel``), the three
    arguments packed once into a ``void*[3]`` whose address goes to every call (NVIDIA's
    documented form of pre-packed ``kernelParams``).  cuda.core's Kernel handle is a CUkernel,
    which ``cuLaunchKernel`` takes cast to CUfunction (cuda.core's own ``launch`` does so).
    """
    from cuda.bindings import driver as cu

    values = (ctypes.c_uint64(int(a.handle)), ctypes.c_uint64(int(b.handle)),
              ctypes.c_int32(256))
    packed = (ctypes.c_void_p * 3)(*(ctypes.addressof(v) for v in values))
    params = ctypes.addressof(packed)
    func = cu.CUfunction(int(kernel.handle))
    stream = s.handle
    success = cu.CUresult.CUDA_SUCCESS
    launch_raw = cu.cuLaunchKernel

    def loop_prepacked(k: int) -> None:
        for _ in range(k):
            err = launch_raw(func, 1, 1, 1, 1, 1, 1, 0, stream, params, 0)[0]
            if err != success:
                raise RuntimeError(f"cuLaunchKernel: {err}")

    result = host_loop_us(loop_prepacked, s.sync, n, rounds)
    del values, packed  # alive until every launch has been enqueued (the driver copies them)
    return result


def bench_cupy(n: int, rounds: int, nbytes: int) -> dict[str, Any]:
    import cupy as cp
    import numpy as np

    k = cp.RawKernel(CUDA_SRC, "empty3")
    a = cp.empty(nbytes // 4, dtype=cp.float32)
    b = cp.empty(nbytes // 4, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    n32 = np.int32(256)
    out: dict[str, Any] = {"version": cp.__version__}
    with s:

        def loop(kk: int) -> None:
            for _ in range(kk):
                k((1,), (1,), (a, b, n32))

        out["raw_kernel"] = host_loop_us(loop, s.synchronize, n, rounds)
        # CuPy's lowest public launch: the compiled Function behind the RawKernel, called
        # directly (it still packs the arguments on every call: CuPy has no pre-packed form).
        function = k.kernel

        def loop_function(kk: int) -> None:
            for _ in range(kk):
                function((1,), (1,), (a, b, n32))

        out["function"] = host_loop_us(loop_function, s.synchronize, n, rounds)
        ev = cp.cuda.Event(disable_timing=True)

        def loop_ev(kk: int) -> None:
            for _ in range(kk):
                ev.record(s)

        out["event_record"] = host_loop_us(loop_ev, s.synchronize, n, rounds)
    return out


def median(entry: dict[str, Any], key: str) -> float:
    """The in-run median µs of one ``host_loop_us`` result."""
    value: float = entry[key]["us_per_call_median"]
    return value


def one_run(n: int, rounds: int, nbytes: int,
            peers: dict[str, Callable[[int, int, int], dict[str, Any]] | str]) -> dict[str, Any]:
    """One run: ours, then each optional peer (or the reason it is absent), then the ratios."""
    res: dict[str, Any] = {"pygpukit_driver": bench_ours(n, rounds, nbytes)}
    for name, fn in peers.items():
        if isinstance(fn, str):
            res[name] = {"absent": fn}
            continue
        try:
            res[name] = fn(n, rounds, nbytes)
        except Exception as exc:  # recorded in the JSON and turned into a non-zero exit
            res[name] = {"error": f"{type(exc).__name__}: {exc}"}
            print(f"{name} failed: {res[name]['error']}", file=sys.stderr)
    ours = res["pygpukit_driver"]
    summary: dict[str, Any] = {
        "ours_launcher_us": median(ours, "launcher"),
        "ours_launch_kernel_us": median(ours, "launch_kernel"),
        "c_loop_floor_us": median(ours, "c_loop_floor"),
        "gpu_us_per_kernel": ours["gpu_us_per_kernel"],
        "ours_burst256_us": ours["burst256_us_median"],
        "ours_event_record_us": median(ours, "event_record"),
        "ours_event_record_timing_us": median(ours, "event_record_timing"),
    }
    cc, cupy = res["cuda_core"], res["cupy"]
    # Ratios theirs / ours per run: > 1 means ours is faster.  General beside general,
    # prepared beside prepared.
    if "launch" in cc:
        summary["cuda_core_launch_us"] = median(cc, "launch")
        summary["general_speedup_vs_cuda_core"] = (summary["cuda_core_launch_us"]
                                                   / summary["ours_launch_kernel_us"])
    if "launch_prepacked" in cc:
        summary["cuda_core_prepacked_us"] = median(cc, "launch_prepacked")
        summary["prepared_speedup_vs_cuda_core"] = (summary["cuda_core_prepacked_us"]
                                                    / summary["ours_launcher_us"])
    if "raw_kernel" in cupy:
        summary["cupy_raw_kernel_us"] = median(cupy, "raw_kernel")
        summary["general_speedup_vs_cupy"] = (summary["cupy_raw_kernel_us"]
                                              / summary["ours_launch_kernel_us"])
        summary["cupy_function_us"] = median(cupy, "function")
        summary["prepared_speedup_vs_cupy"] = (summary["cupy_function_us"]
                                               / summary["ours_launcher_us"])
        summary["cupy_event_record_us"] = median(cupy, "event_record")
    res["summary"] = summary
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    # 75 000 launches x 3 rounds per run x 3 runs: about the 100 000 x 7 of one run before.
    ap.add_argument("-n", type=int, default=75_000)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of -n launches per run")
    add_runs_argument(ap)
    opts = ap.parse_args()
    require_commit()
    if not drv.is_available():
        print(f"no GPU: {drv.unavailable_reason()}", file=sys.stderr)
        return 1
    nbytes = 1 << 20
    # An optional peer that is not installed is recorded as absent, not skipped silently.
    peers: dict[str, Callable[[int, int, int], dict[str, Any]] | str] = {
        "cuda_core": (bench_cuda_core if importlib.util.find_spec("cuda.core") is not None
                      else "cuda.core is not installed"),
        "cupy": (bench_cupy if importlib.util.find_spec("cupy") is not None
                 else "cupy is not installed"),
    }
    runs = repeat_runs(opts.runs, lambda _: one_run(opts.n, opts.rounds, nbytes, peers))
    res = report_head(
        "launch", opts.runs,
        method=("N back-to-back launches of an empty 3-arg kernel (grid 1, block 1) on one "
                "stream from a Python loop, one sync at the end; host wall time / N; median of "
                "rounds; general call beside general call, prepared beside prepared"),
        n=opts.n, rounds=opts.rounds, **aggregate(runs))
    summary = res["summary"]
    verdicts: dict[str, str] = {
        "launch_le_2us": absolute_verdict(summary["ours_launcher_us"], 2.0),
        "event_record_le_0.5us": absolute_verdict(summary["ours_event_record_us"], 0.5),
    }
    for key in ("general_speedup_vs_cuda_core", "prepared_speedup_vs_cuda_core",
                "general_speedup_vs_cupy", "prepared_speedup_vs_cupy"):
        if key in summary and "min" in summary[key]:
            verdicts[key] = verdict(summary[key], better="higher")
    res["verdicts"] = verdicts
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(res, indent=2) + "\n")
    for key, value in summary.items():
        if isinstance(value, dict) and "median" in value:
            print(f"  {key:34} {value['median']:8.3f}  [{value['min']:.3f}-{value['max']:.3f}]"
                  f"  {verdicts.get(key, '')}")
    print(json.dumps(verdicts, indent=2))
    failed = [name for name in peers
              if any(key.endswith("error") for r in runs for key in r[name])]
    if failed:
        print(f"failed: {', '.join(failed)} (errors recorded in {opts.out})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
