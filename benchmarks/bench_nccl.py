"""NCCL all_reduce bandwidth: pygpukit.distributed vs torch.distributed, in the same run.

One process per GPU (``--nproc``, default every GPU of the machine; one GPU works too and
reports n=1), each rank all-reducing (sum, in place) a float32 buffer of ``--gib`` GiB:
pygpukit's ranks first (``gp.distributed.Communicator``, the unique id shared through a file),
then torch's (``torch.distributed`` with the NCCL backend, a file store), both with the same
NCCL as far as the machine has one (the ``nvidia-nccl-cu13`` wheel torch depends on).

Figures as nccl-tests reports them: ``algbw = bytes / time`` and ``busbw = algbw * 2(n-1)/n``
(the bus bandwidth of a ring all-reduce; 0 for n=1, where the ratio is taken on algbw, which
gives the same ratio for any n).  The time of a collective is the slowest rank's: per sample,
``--iters`` back-to-back all-reduces between two events on each rank's stream, after warm-ups;
the median over ``--repeat`` samples, then the max over ranks.  Each rank first checks the
result of one all-reduce (rank r holds r+1 everywhere: every element must be n(n+1)/2).  The
whole measurement is repeated ``--runs`` times inside the same processes and reported as
min / median / max over the runs; the verdict is the issue's target, pygpukit's bus bandwidth
at least 90% of torch's in every run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _runs import add_runs_argument, aggregate, report_head, require_commit, verdict

TARGET = 0.90  # pygpukit's busbw over torch's, every run (issue 16)


def bus_factor(n: int) -> float:
    """nccl-tests' all-reduce bus bandwidth factor, ``2(n-1)/n``."""
    return 2 * (n - 1) / n


# -- the ranks ---------------------------------------------------------------------------------
def _wait_for(path: Path, timeout: float = 300) -> bytes:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"{path} did not appear in {timeout} s (rank 0 failed?)")
        time.sleep(0.05)
    return path.read_bytes()


def _samples(run_once: Any, sync: Any, make_event: Any, iters: int, repeat: int) -> float:
    """Median ms per all-reduce over ``repeat`` samples of ``iters`` back-to-back calls."""
    start, end = make_event(), make_event()
    values = []
    for _ in range(repeat):
        sync()
        start.record()
        for _ in range(iters):
            run_once()
        end.record()
        end.synchronize()
        values.append(start.elapsed_time(end) / iters)
    return statistics.median(values)


def rank_pygpukit(rank: int, n: int, folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np

    import pygpukit as gp

    uid_file = folder / "pygpukit.uid"
    if rank == 0:
        tmp = folder / "pygpukit.uid.tmp"
        tmp.write_bytes(bytes(gp.distributed.unique_id()))
        tmp.rename(uid_file)
    uid = gp.distributed.UniqueId(_wait_for(uid_file))
    count = int(args.gib * 2**30) // 4
    with gp.Device(rank):
        comm = gp.distributed.Communicator(n, rank, uid, device=rank)
        x = gp.full((count,), float(rank + 1), dtype=gp.float32)
        comm.all_reduce(x, out=x)
        probe = np.concatenate([x[:1024].to_numpy(), x[-1024:].to_numpy()])
        ok = bool((probe == n * (n + 1) / 2).all())
        x[...] = 0.0  # the timed reductions keep it finite
        for _ in range(args.warmup):
            comm.all_reduce(x, out=x)
        ms = [_samples(lambda: comm.all_reduce(x, out=x), gp.synchronize, gp.Event,
                       args.iters, args.repeat) for _ in range(args.runs)]
        comm.check_async_error()
        version = ".".join(map(str, gp.distributed.nccl_version()))
        path = gp.distributed.nccl_path()
        comm.close()
    return {"ms": ms, "check": ok, "nccl": version, "nccl_path": path}


def rank_torch(rank: int, n: int, folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    import torch
    import torch.distributed as tdist

    torch.cuda.set_device(rank)
    tdist.init_process_group("nccl", init_method=f"file://{folder / 'torch.store'}",
                             rank=rank, world_size=n, device_id=torch.device("cuda", rank))
    count = int(args.gib * 2**30) // 4
    x = torch.full((count,), float(rank + 1), dtype=torch.float32, device="cuda")
    tdist.all_reduce(x)
    ok = bool((torch.cat([x[:1024], x[-1024:]]) == n * (n + 1) / 2).all().item())
    x.zero_()
    for _ in range(args.warmup):
        tdist.all_reduce(x)

    def event() -> Any:
        return torch.cuda.Event(enable_timing=True)

    ms = [_samples(lambda: tdist.all_reduce(x), torch.cuda.synchronize, event, args.iters,
                   args.repeat) for _ in range(args.runs)]
    version = ".".join(map(str, torch.cuda.nccl.version()))
    tdist.destroy_process_group()
    return {"ms": ms, "check": ok, "nccl": version, "torch": torch.__version__}


def worker(args: argparse.Namespace) -> None:
    folder = Path(args.dir)
    run = rank_pygpukit if args.worker == "pygpukit" else rank_torch
    result = run(args.rank, args.nproc, folder, args)
    (folder / f"{args.worker}-{args.rank}.json").write_text(json.dumps(result))


# -- the parent --------------------------------------------------------------------------------
def launch(library: str, n: int, folder: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run ``n`` ranks of ``library`` as processes and return their results, rank by rank."""
    common = ["--gib", str(args.gib), "--iters", str(args.iters), "--repeat", str(args.repeat),
              "--warmup", str(args.warmup), "--runs", str(args.runs), "--nproc", str(n),
              "--dir", str(folder), "--worker", library]
    procs = [subprocess.Popen([sys.executable, __file__, *common, "--rank", str(r)])
             for r in range(n)]
    deadline = time.monotonic() + args.timeout
    for proc in procs:
        try:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise SystemExit(f"{library}: the ranks did not finish in {args.timeout} s") from None
    codes = [p.returncode for p in procs]
    if any(codes):
        raise SystemExit(f"{library}: ranks exited with {codes}")
    results = [json.loads((folder / f"{library}-{r}.json").read_text()) for r in range(n)]
    if not all(r["check"] for r in results):
        raise SystemExit(f"{library}: the all-reduce result is wrong on some rank")
    return results


def gpu_count() -> int:
    import pygpukit_driver as drv

    return int(drv.device_count())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=1.0, help="float32 buffer per rank, GiB")
    parser.add_argument("--nproc", type=int, default=0, help="ranks (default: every GPU)")
    parser.add_argument("--iters", type=int, default=20, help="all-reduces per timed sample")
    parser.add_argument("--repeat", type=int, default=5, help="timed samples per run")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=900, help="seconds for each library")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--worker", choices=["pygpukit", "torch"], help=argparse.SUPPRESS)
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    add_runs_argument(parser)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if args.out is None:
        parser.error("--out is required")
    require_commit()
    n = args.nproc or gpu_count()
    if n < 1:
        raise SystemExit("no GPU")
    nbytes = int(args.gib * 2**30) // 4 * 4
    with tempfile.TemporaryDirectory(prefix="bench-nccl-") as tmp:
        ours = launch("pygpukit", n, Path(tmp), args)
        theirs = launch("torch", n, Path(tmp), args)

    def per_run(results: list[dict[str, Any]], i: int) -> float:
        return max(r["ms"][i] for r in results)  # the slowest rank's time

    runs = []
    for i in range(args.runs):
        rows = []
        for name, results in (("pygpukit.distributed", ours), ("torch.distributed", theirs)):
            ms = per_run(results, i)
            algbw = nbytes / (ms * 1e-3) / 1e9
            rows.append({"op": f"all_reduce sum f32 {args.gib:g} GiB ({name})", "nranks": n,
                         "ms": ms, "algbw_GBps": algbw, "busbw_GBps": algbw * bus_factor(n)})
        rows[0]["busbw_vs_torch"] = rows[0]["algbw_GBps"] / rows[1]["algbw_GBps"]
        runs.append(rows)
    rows = aggregate(runs)
    rows[0]["verdict"] = verdict(rows[0]["busbw_vs_torch"], better="higher", target=TARGET)
    report = report_head("nccl", args.runs, nranks=n, bytes=nbytes, iters=args.iters,
                         repeat=args.repeat, nccl_pygpukit=ours[0]["nccl"],
                         nccl_pygpukit_path=ours[0]["nccl_path"], nccl_torch=theirs[0]["nccl"],
                         target_busbw_vs_torch=TARGET, rows=rows)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"{report['device']} x{n}: all_reduce of {args.gib:g} GiB float32, {args.runs} runs "
          f"(NCCL {ours[0]['nccl']} for pygpukit, {theirs[0]['nccl']} for torch)")
    for row in rows:
        bw = row["busbw_GBps"] if n > 1 else row["algbw_GBps"]
        label = "busbw" if n > 1 else "algbw (n=1: busbw is 0)"
        extra = ""
        if "busbw_vs_torch" in row:
            s = row["busbw_vs_torch"]
            extra = (f"  x{s['median']:.3f} of torch [{s['min']:.3f}-{s['max']:.3f}] "
                     f"{row['verdict']} (target {TARGET:.0%})")
        print(f"  {row['op']:48} {row['ms']['median']:9.3f} ms  {label} "
              f"{bw['median']:8.1f} GB/s{extra}")


if __name__ == "__main__":
    os.environ.setdefault("NCCL_DEBUG", "WARN")
    main()
