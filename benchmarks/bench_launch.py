"""Host cost of launching an empty 3-argument kernel from Python, and of an event record.

pygpukit_driver (prepared Launcher, and the general launch_kernel), cuda.core's ``launch`` and
CuPy's RawKernel, side by side in one run on one GPU. Method: N launches back to back in a
Python loop onto one stream, then a synchronize; host wall time / N; median of several rounds
after a warm-up. The kernel is ``empty3(float* a, float* b, int n) {}``: PTX shipped here for
pygpukit_driver (JIT-compiled by the driver), the same CUDA C++ compiled by cuda.core's and
CuPy's own NVRTC paths.

    python benchmarks/bench_launch.py --out benchmarks/results/launch-h200.json
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

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
    return out


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
        ev = cp.cuda.Event(disable_timing=True)

        def loop_ev(kk: int) -> None:
            for _ in range(kk):
                ev.record(s)

        out["event_record"] = host_loop_us(loop_ev, s.synchronize, n, rounds)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("-n", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=7)
    opts = ap.parse_args()
    if not drv.is_available():
        print(f"no GPU: {drv.unavailable_reason()}", file=sys.stderr)
        return 1
    nbytes = 1 << 20
    res: dict[str, Any] = {
        "benchmark": "launch",
        "method": (
            "N back-to-back launches of an empty 3-arg kernel (grid 1, block 1) on one stream "
            "from a Python loop, one sync at the end; host wall time / N; median of rounds"
        ),
        "n": opts.n,
        "rounds": opts.rounds,
        "device": drv.Device(0).name,
        "driver_version": drv.driver_version(),
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    # The GPU machine runs a copy of the tree without .git: ci/gpu-check passes the commit.
    res["commit"] = os.environ.get("PYGPUKIT_COMMIT")
    if not res["commit"]:
        try:
            res["commit"] = subprocess.run(
                ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            res["commit"] = None
    res["pygpukit_driver"] = bench_ours(opts.n, opts.rounds, nbytes)
    for name, fn in (("cuda_core", bench_cuda_core), ("cupy", bench_cupy)):
        try:
            res[name] = fn(opts.n, opts.rounds, nbytes)
        except Exception as e:  # report, do not hide, a competitor that could not run
            res[name] = {"error": f"{type(e).__name__}: {e}"}
    ours = res["pygpukit_driver"]["launcher"]["us_per_call_median"]
    summary: dict[str, Any] = {
        "ours_launcher_us": ours,
        "c_loop_floor_us": res["pygpukit_driver"]["c_loop_floor"]["us_per_call_median"],
        "gpu_us_per_kernel": res["pygpukit_driver"]["gpu_us_per_kernel"],
        "ours_burst256_us": res["pygpukit_driver"]["burst256_us_median"],
        "ours_launch_kernel_us": res["pygpukit_driver"]["launch_kernel"]["us_per_call_median"],
        "ours_event_record_us": res["pygpukit_driver"]["event_record"]["us_per_call_median"],
    }
    if "launch" in res["cuda_core"]:
        cc = res["cuda_core"]["launch"]["us_per_call_median"]
        summary["cuda_core_launch_us"] = cc
        summary["speedup_vs_cuda_core"] = cc / ours
    if "raw_kernel" in res["cupy"]:
        cu = res["cupy"]["raw_kernel"]["us_per_call_median"]
        summary["cupy_raw_kernel_us"] = cu
        summary["speedup_vs_cupy"] = cu / ours
        summary["cupy_event_record_us"] = res["cupy"]["event_record"]["us_per_call_median"]
    summary["launch_target_met"] = ours <= 2.0
    summary["event_target_met"] = summary["ours_event_record_us"] <= 0.5
    res["summary"] = summary
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
