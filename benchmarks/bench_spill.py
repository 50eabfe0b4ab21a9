"""Spilling live arrays to pinned host memory: a workload over its quota, and the copy speeds.

Run: ``PYGPUKIT_COMMIT=<sha> python benchmarks/bench_spill.py [--out bench_spill.json]``
(needs ``pygpukit[sched]``; without a GPU it runs on the CPU simulation, where only the logic
and the data checks mean something).

(a) Workload: ``--factor`` (1.5) times a partition's quota in live float32 arrays of
    ``--array-mib`` MiB, each updated in place ``--passes`` times in turn (``x = x * c + d``,
    so every pass touches every array: with LRU order under a quota below the working set,
    each use brings an array back and sends the least recently used one out).  Timed against
    the same workload in a partition with enough quota (nothing spills); the data is checked
    against NumPy afterwards.  Reported: both times and their ratio.
(b) Bandwidth: ``--copy-mib`` MiB of arrays spilled (an allocation of as much again, after a
    warm-up that fills the pinned host cache) and restored (each array used again), timed with
    the wall clock around a device synchronization; against a pinned host <-> device copy of
    the same bytes in the same array-sized pieces, measured in the same run (torch's pinned
    ``copy_`` when torch is present, else pygpukit_driver's ``memcpy_*_async`` from
    ``HostMemory``).  Target: spill and restore >= 80% of the pinned copy.

The sections are repeated ``--runs`` times and every figure is reported as min / median / max
over the runs.  A section that fails has its error recorded in the JSON, and the script exits
non-zero.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _runs import (
    add_runs_argument,
    aggregate,
    failed_sections,
    repeat_runs,
    report_head,
    require_commit,
    run_sections,
)

MiB = 1 << 20
TARGET = 0.8  # spill / restore bandwidth as a fraction of the pinned copy's


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("bench_spill.json"))
    ap.add_argument("--only", default="a,b", help="comma-separated sections (a, b)")
    ap.add_argument("--quota-mib", type=int, default=2048,
                    help="(a)'s partition quota in MiB (default %(default)s)")
    ap.add_argument("--factor", type=float, default=1.5,
                    help="(a)'s live arrays as a multiple of the quota (default %(default)s)")
    ap.add_argument("--array-mib", type=int, default=64,
                    help="size of one array in MiB (default %(default)s)")
    ap.add_argument("--passes", type=int, default=3,
                    help="(a)'s passes over the arrays (default %(default)s)")
    ap.add_argument("--copy-mib", type=int, default=1024,
                    help="(b)'s bytes spilled and restored, in MiB (default %(default)s)")
    add_runs_argument(ap)
    return ap


def _check_args(args: argparse.Namespace) -> None:
    for name in ("quota_mib", "array_mib", "passes", "copy_mib"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')} must be at least 1, not "
                             f"{getattr(args, name)}")
    if args.factor <= 1.0:
        raise SystemExit(f"--factor must be above 1 (a working set over the quota), not "
                         f"{args.factor}")
    if args.array_mib > args.quota_mib // 2:
        raise SystemExit("--array-mib must be at most half of --quota-mib")
    unknown = set(args.only.split(",")) - {"a", "b"}
    if unknown:
        raise SystemExit(f"--only: unknown sections {sorted(unknown)} (a, b)")


def _fresh_partitions(gp: Any, total: int) -> None:
    gp.synchronize()
    for p in gp.list_partitions():
        gp.delete_partition(p, force=True)
    gp.empty_cache()
    gp.configure_partitions(total)


def bench_workload(args: argparse.Namespace, gp: Any) -> dict[str, Any]:
    """(a): the over-quota workload vs the same with enough quota."""
    quota = args.quota_mib * MiB
    size = args.array_mib * MiB
    n = int(args.factor * quota) // size
    rng = np.random.default_rng(0)
    hosts = [rng.standard_normal(size // 4, dtype=np.float32) for _ in range(n)]
    c, d = np.float32(0.999), np.float32(0.25)

    def run(memory: int, name: str) -> tuple[float, dict[str, int], bool]:
        _fresh_partitions(gp, 2 * n * size + quota)
        p = gp.create_partition(name, memory=memory, spill=True)
        with p:
            arrays = [gp.from_numpy(h) for h in hosts]
            gp.synchronize()
            t0 = time.perf_counter()
            for _ in range(args.passes):
                for a in arrays:
                    gp.multiply(a, c, out=a)
                    gp.add(a, d, out=a)
            gp.synchronize()
            seconds = time.perf_counter() - t0
        expected = hosts[0]
        for _ in range(args.passes):
            expected = expected * c + d
        ok = bool(np.allclose(arrays[0].to_numpy(), expected, rtol=1e-5, atol=1e-5)
                  and np.allclose(arrays[-1].to_numpy(), _passes(hosts[-1], args.passes, c, d),
                                  rtol=1e-5, atol=1e-5))
        stats = p.memory_stats()
        del arrays
        return seconds, stats, ok

    enough_s, enough_stats, enough_ok = run(2 * n * size, "enough")
    spill_s, stats, spill_ok = run(quota, "over-quota")
    moved = stats["spilled_bytes_total"] + stats["restored_bytes"]
    return {
        "arrays": n, "array_bytes": size, "quota_bytes": quota,
        "live_over_quota": n * size / quota, "passes": args.passes,
        "enough_quota_s": enough_s, "over_quota_s": spill_s,
        "over_quota_over_enough": spill_s / enough_s,
        "num_spills": stats["num_spills"], "num_restores": stats["num_restores"],
        "moved_bytes": moved, "moved_GBps": moved / spill_s / 1e9,
        "enough_quota_spills": enough_stats["num_spills"],
        "data_equal_numpy": enough_ok and spill_ok,
    }


def _passes(x: np.ndarray[Any, Any], passes: int, c: np.float32, d: np.float32
            ) -> np.ndarray[Any, Any]:
    for _ in range(passes):
        x = x * c + d
    return x


def _pinned_reference(gp: Any, nbytes: int, piece: int) -> tuple[str, float, float]:
    """(what, D2H GB/s, H2D GB/s) of pinned copies of ``nbytes`` in ``piece``-byte copies."""
    pieces = nbytes // piece
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        dev = [torch.empty(piece, dtype=torch.uint8, device="cuda") for _ in range(pieces)]
        host = [torch.empty(piece, dtype=torch.uint8, pin_memory=True) for _ in range(pieces)]
        for d_, h in zip(dev, host, strict=True):  # warm-up
            h.copy_(d_, non_blocking=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for d_, h in zip(dev, host, strict=True):
            h.copy_(d_, non_blocking=True)
        torch.cuda.synchronize()
        d2h = nbytes / (time.perf_counter() - t0) / 1e9
        t0 = time.perf_counter()
        for d_, h in zip(dev, host, strict=True):
            d_.copy_(h, non_blocking=True)
        torch.cuda.synchronize()
        h2d = nbytes / (time.perf_counter() - t0) / 1e9
        return f"torch {torch.__version__} pinned copy_", d2h, h2d
    if gp.backend() == "cuda":
        import pygpukit_driver as drv

        stream = drv.Stream()
        dev_ptrs = [drv.mem_alloc(piece) for _ in range(pieces)]
        hosts = [drv.HostMemory(piece) for _ in range(pieces)]
        try:
            for p, h in zip(dev_ptrs, hosts, strict=True):
                drv.memcpy_dtoh_async(h, p, stream)
            stream.synchronize()
            t0 = time.perf_counter()
            for p, h in zip(dev_ptrs, hosts, strict=True):
                drv.memcpy_dtoh_async(h, p, stream)
            stream.synchronize()
            d2h = nbytes / (time.perf_counter() - t0) / 1e9
            t0 = time.perf_counter()
            for p, h in zip(dev_ptrs, hosts, strict=True):
                drv.memcpy_htod_async(p, h, stream)
            stream.synchronize()
            h2d = nbytes / (time.perf_counter() - t0) / 1e9
        finally:
            for p in dev_ptrs:
                drv.mem_free(p)
        return "pygpukit_driver HostMemory memcpy_*_async", d2h, h2d
    src = [np.empty(piece, np.uint8) for _ in range(pieces)]
    dst = [np.empty(piece, np.uint8) for _ in range(pieces)]
    t0 = time.perf_counter()
    for s, d_ in zip(src, dst, strict=True):
        np.copyto(d_, s)
    rate = nbytes / (time.perf_counter() - t0) / 1e9
    return "NumPy host copy (CPU simulation)", rate, rate


def bench_bandwidth(args: argparse.Namespace, gp: Any) -> dict[str, Any]:
    """(b): spill and restore GB/s vs a pinned copy of the same bytes."""
    from pygpukit import _spill

    size = args.array_mib * MiB
    n = max(1, args.copy_mib * MiB // size)
    nbytes = n * size
    # Room for the bytes spilled and their replacements in the pinned host cache.
    _spill.HOST_POOL_LIMIT = max(_spill.HOST_POOL_LIMIT, 2 * nbytes)
    _fresh_partitions(gp, 4 * nbytes)
    p = gp.create_partition("bandwidth", memory=nbytes + 2 * MiB, spill=True)
    rng = np.random.default_rng(1)
    hosts = [rng.standard_normal(size // 4, dtype=np.float32) for _ in range(n)]

    def cycle() -> tuple[float, float]:
        with p:
            arrays = [gp.from_numpy(h) for h in hosts]
            # An operation's operands are never spilled by its own allocations: the two latest
            # uses (here the last uploads) are held.  Two uses of a scratch array free them.
            scratch = gp.zeros(1)
            scratch += 1.0
            gp.synchronize()
            before = p.memory_stats()["num_spills"]
            t0 = time.perf_counter()
            other = [gp.empty(size // 4) for _ in range(n)]  # spills every array
            gp.synchronize()
            spill_s = time.perf_counter() - t0
            if p.memory_stats()["num_spills"] - before < n:
                raise RuntimeError("not every array was spilled")
            del scratch
            del other
            gp.synchronize()
            t0 = time.perf_counter()
            for a in arrays:
                _ = a.data_ptr  # brought back (a use)
            gp.synchronize()
            restore_s = time.perf_counter() - t0
            for h, a in zip(hosts, arrays, strict=True):
                if not np.array_equal(a.to_numpy(), h):
                    raise RuntimeError("a restored array differs from its data")
        return spill_s, restore_s

    cold_spill_s, cold_restore_s = cycle()  # the first spill allocates the pinned buffers
    spill_s, restore_s = cycle()
    what, d2h, h2d = _pinned_reference(gp, nbytes, size)
    spill_gbps, restore_gbps = nbytes / spill_s / 1e9, nbytes / restore_s / 1e9
    return {
        "bytes": nbytes, "array_bytes": size, "reference": what,
        "spill_GBps": spill_gbps, "restore_GBps": restore_gbps,
        "cold_spill_GBps": nbytes / cold_spill_s / 1e9,
        "cold_restore_GBps": nbytes / cold_restore_s / 1e9,
        "pinned_d2h_GBps": d2h, "pinned_h2d_GBps": h2d,
        "spill_over_pinned": spill_gbps / d2h, "restore_over_pinned": restore_gbps / h2d,
    }


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _check_args(args)
    require_commit()
    import pygpukit as gp

    cuda = gp.backend() == "cuda"
    if not cuda:  # keep the CPU run short: it only checks the logic
        args.quota_mib, args.array_mib = min(args.quota_mib, 64), min(args.array_mib, 8)
        args.copy_mib = min(args.copy_mib, 64)
    only = set(args.only.split(","))
    sections: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("a", lambda: bench_workload(args, gp)),
        ("b", lambda: bench_bandwidth(args, gp)),
    ]

    def one_run(_: int) -> dict[str, Any]:
        return run_sections(sections, lambda key: key in only)

    runs = repeat_runs(args.runs, one_run)
    report = report_head("bench_spill", args.runs, backend=gp.backend(),
                         platform=platform.platform(), **aggregate(runs))
    verdicts: dict[str, str] = {}
    b = report.get("b", {})
    if "error" not in b and "spill_over_pinned" in b:
        for key in ("spill_over_pinned", "restore_over_pinned"):
            verdicts[f"b_{key}_ge_{TARGET}"] = ("met" if b[key]["min"] >= TARGET
                                                else "not met")
    a = report.get("a", {})
    if "error" not in a and "data_equal_numpy" in a:
        verdicts["a_completes_with_data_equal"] = "met" if a["data_equal_numpy"] is True \
            else "not met"
    report["verdicts"] = verdicts
    args.out.write_text(json.dumps(report, indent=2, default=str))
    print(f"wrote {args.out}: {json.dumps(verdicts)}")
    return failed_sections(runs, args.out)


if __name__ == "__main__":
    sys.exit(main())
