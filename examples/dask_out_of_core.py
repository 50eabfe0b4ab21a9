"""Out of core on the GPU through Dask: a dataset larger than the device, reduced and multiplied.

The dataset is a tall matrix ``x`` of ``rows x cols`` float32 standard normals, generated on the
device chunk by chunk (``pygpukit.random``, one seed per chunk: any chunk can be regenerated), and
bigger than the memory PyGPUkit may use on the worker's GPU.  Dask persists it: its workers keep
chunks in (device) memory up to their ``memory_limit`` and spill the rest to disk themselves
(``distributed``'s spilling: a chunk's host bytes are written out, its device memory freed, and it
is read back to the device when a task needs it).  Then, through Dask:

* reductions: ``x.sum()``, ``(x ** 2).mean()``, ``x.max()``, ``x.std(axis=0)``;
* a product: the Gram matrix ``x.T @ x`` (``cols x cols``), one GEMM per chunk and a tree sum.

With ``--stream`` nothing is persisted: each computation generates the chunks it reads, so the
dataset can be many times the device without its bytes ever being on the host.

``trace(x.T @ x) == (x ** 2).sum()`` checks the product against the reduction.

Run (CPU simulation: a small default; on a GPU the default total is 1.5x the device's free
memory, so pass ``--device-limit`` to fit the spilled bytes in the host's disk and RAM)::

    python examples/dask_out_of_core.py
    python examples/dask_out_of_core.py --device-limit 16GiB   # 24 GiB persisted, ~20 spilled
    python examples/dask_out_of_core.py --stream --chunk 512MiB  # 1.5x the GPU's free memory
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

import dask
import dask.array as da
import numpy as np
from dask.utils import format_bytes, parse_bytes
from distributed import Client, wait

import pygpukit as gp
import pygpukit.dask as gpd


def _device_budget() -> int:
    """Bytes this worker's device has free (CPU simulation: 64 MiB, a token size)."""
    if gp.backend() != "cuda":
        return 64 << 20
    import pygpukit_driver

    gp.empty((1,))  # make the device's primary context current in this thread
    try:
        free, _total = pygpukit_driver.mem_get_info()
    except Exception as exc:  # any driver error: fall back to the total
        print(f"cuMemGetInfo failed ({exc}); using the device's total memory")
        return gp.Device(0).total_memory - gp.memory_reserved()
    return int(free)


def _limit_device(nbytes: int) -> None:
    gp.set_memory_limit(nbytes)


def _spilled(dask_worker: Any) -> tuple[int, int]:
    """(bytes spilled to disk so far, chunks on disk now) of one worker."""
    data = dask_worker.data
    total = getattr(data, "spilled_total", None)
    disk = int(total.disk) if total is not None else 0
    return disk, len(getattr(data, "slow", ()))


def _chunk(block_id: tuple[int, int], *, rows: int, cols: int, seed: int) -> gp.GPUArray:
    rng = gp.random.default_rng([seed, block_id[0]])
    return rng.standard_normal((rows, cols), dtype=np.float32)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--total", help="dataset bytes (default: 1.5x the device memory "
                        "budget: --device-limit, else the GPU's free memory)")
    parser.add_argument("--device-limit", help="cap PyGPUkit's memory on the worker's GPU "
                        "(gp.set_memory_limit); default: none")
    parser.add_argument("--chunk", default=None,
                        help="bytes per chunk (default: 256MiB on a GPU, 4MiB on the CPU)")
    parser.add_argument("--cols", type=int, default=1024, help="columns of x")
    parser.add_argument("--workers", type=int, default=1,
                        help="worker processes, one per GPU (LocalGPUCluster)")
    parser.add_argument("--spill-dir", default=None, help="Dask's spill directory")
    parser.add_argument("--stream", action="store_true",
                        help="do not persist x: every computation regenerates its chunks (the "
                        "full 1.5x of a large GPU without its bytes on the host's disk)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    backend = gp.backend()
    with tempfile.TemporaryDirectory(prefix="pgk-dask-spill-", dir=args.spill_dir) as spill, \
            dask.config.set({
                # Dask's own spilling, driven by the managed bytes (sizeof: a chunk's nbytes):
                # spill above 50% of the limit; never pause or kill a worker for its process
                # memory (a GPU worker's chunks are not in it).
                "distributed.worker.memory.target": 0.5,
                "distributed.worker.memory.spill": False,
                "distributed.worker.memory.pause": False,
                "distributed.worker.memory.terminate": False}):
        # The device budget is read in this process (the workers' GPUs are the same model).
        budget = parse_bytes(args.device_limit) if args.device_limit else _device_budget()
        total = parse_bytes(args.total) if args.total else int(1.5 * budget)
        chunk = parse_bytes(args.chunk) if args.chunk else \
            (256 << 20 if backend == "cuda" else 4 << 20)
        rows = max(1, chunk // (4 * args.cols))
        nchunks = max(2, -(-total // (rows * args.cols * 4)))
        # Dask keeps target x limit bytes of chunks per worker; the rest of the device budget
        # is for the tasks' inputs brought back from disk and their results.
        memory_limit = max(4 * chunk, budget // 2)
        cluster = gpd.LocalGPUCluster(
            list(range(args.workers)), memory_limit=memory_limit, local_directory=spill,
            host="127.0.0.1", dashboard_address=":0",
            env={"PYGPUKIT_BACKEND": backend})
        with cluster, Client(cluster) as client:
            client.wait_for_workers(args.workers)
            if args.device_limit:
                client.run(_limit_device, budget)
            n = nchunks * rows
            print(f"backend {backend}, {args.workers} worker(s); device budget "
                  f"{format_bytes(budget)} per worker; Dask memory_limit "
                  f"{format_bytes(memory_limit)}; spill dir {spill}")
            print(f"x: {n} x {args.cols} float32 = {format_bytes(n * args.cols * 4)} "
                  f"({nchunks} chunks of {format_bytes(rows * args.cols * 4)}), "
                  f"{n * args.cols * 4 / budget:.2f}x the device budget")
            x = da.map_blocks(_chunk, rows=rows, cols=args.cols, seed=args.seed,
                              chunks=((rows,) * nchunks, (args.cols,)), dtype=np.float32,
                              meta=gpd.chunk_meta(2, np.float32))

            t0 = time.perf_counter()
            if args.stream:
                t_persist = 0.0
                print("streaming: each computation generates the chunks it reads (nothing "
                      "persisted)")
            else:
                x = client.persist(x)
                wait(x)
                t_persist = time.perf_counter() - t0
                spilled = client.run(_spilled)
                print(f"persisted in {t_persist:.2f} s; spilled by Dask: "
                      + ", ".join(f"{format_bytes(b)} ({c} chunks on disk)"
                                  for b, c in spilled.values()))

            t0 = time.perf_counter()
            total_sum, mean_sq, largest, col_std = dask.compute(
                x.sum(), (x ** 2).mean(), x.max(), x.std(axis=0))
            t_reduce = time.perf_counter() - t0
            t0 = time.perf_counter()
            gram = (x.T @ x).compute()
            t_gemm = time.perf_counter() - t0
            spilled = client.run(_spilled)

            s, m, mx = float(total_sum.item()), float(mean_sq.item()), float(largest.item())
            trace = float(gp.trace(gram).item())
            print(f"reductions in {t_reduce:.2f} s: sum {s:.6g}, mean of squares {m:.6f}, "
                  f"max {mx:.4f}, column std in [{float(col_std.min().item()):.4f}, "
                  f"{float(col_std.max().item()):.4f}]")
            flops = 2.0 * n * args.cols * args.cols
            print(f"x.T @ x ({args.cols} x {args.cols}) in {t_gemm:.2f} s "
                  f"({flops / t_gemm / 1e12:.2f} TFLOP/s through Dask)")
            print("spilled by Dask in all: " + ", ".join(
                f"{format_bytes(b)} ({c} chunks on disk now)" for b, c in spilled.values()))
            expected = m * n * args.cols
            if not abs(trace - expected) <= 1e-3 * expected:
                raise SystemExit(f"check failed: trace(x.T @ x) = {trace} but "
                                 f"sum(x ** 2) = {expected}")
            if not 0.98 < m < 1.02:
                raise SystemExit(f"check failed: mean of squares {m} of standard normals")
            print(f"check: trace(x.T @ x) = {trace:.6g} = sum(x ** 2); total "
                  f"{t_persist + t_reduce + t_gemm:.2f} s")
            del x


if __name__ == "__main__":
    main()
