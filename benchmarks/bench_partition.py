"""Partitions enforced on real GPU work: latency isolation, compute split, reservations.

Run: ``python benchmarks/bench_partition.py [--out bench_partition.json]`` (needs
``pygpukit[sched]``; on a machine without a GPU it runs on the CPU simulation, where the compute
share is a no-op and only the logic and the memory checks mean something).

(a) A Guaranteed tenant issues small ops (``gp.matmul`` of 256x256 when it exists, else
    ``--small-op``) while a BestEffort tenant saturates the GPU with large kernels from another
    thread: p99 latency with partitions on vs its solo p99 (target <= 1.5x), and the same with
    partitions off (plain streams).  Latency is timed by CUDA events around each op on the
    tenant's stream (device time, queueing behind other work included) and by the host clock.
(b) Two partitions split 70/30 run the same workload on two threads: throughput ratio (target
    70/30 +-10%), and the same with partitions off.
(c) A BestEffort tenant cannot allocate into a Guaranteed tenant's reservation.
(d) Through Python: admission decisions/s (Rust AdmissionController), task admission
    (``with partition.task()``), pool allocate+free, allocation cost inside a partition.

The sections are repeated --runs times (--lat-n, --seconds and --py-n are per run) and every
figure is reported as min / median / max over the runs.  A section that fails has its error
recorded in the JSON, and the script exits non-zero.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _runs import (
    absolute_verdict,
    add_runs_argument,
    aggregate,
    failed_sections,
    repeat_runs,
    report_head,
    require_commit,
    run_sections,
)

import pygpukit as gp

MiB = 1 << 20


def _pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def _summary(samples: list[float]) -> dict[str, float]:
    return {"n": len(samples), "p50": _pct(samples, 50), "p90": _pct(samples, 90),
            "p99": _pct(samples, 99), "max": max(samples), "mean": statistics.fmean(samples)}


def _small_op(kind: str, n: int) -> Callable[[], Any]:
    dtype = "float16" if kind == "matmul16" else "float32"
    a = gp.from_numpy(np.random.default_rng(0).standard_normal((n, n)).astype(dtype))
    b = gp.from_numpy(np.random.default_rng(1).standard_normal((n, n)).astype(dtype))
    if kind.startswith("matmul"):
        mm: Any = getattr(gp, "matmul")  # noqa: B009 (added to pygpukit by the GEMM work)
        return lambda: mm(a, b)
    out = gp.empty((n, n), dtype=dtype)
    return lambda: gp.add(a, b, out=out)


def _big_op(kind: str, n: int) -> Callable[[], Any]:
    dtype = np.float64 if kind.endswith("64") else np.float32
    kind = kind.removesuffix("64")
    x = gp.from_numpy(np.linspace(0.5, 1.5, n, dtype=dtype))
    out = gp.empty((n,), dtype=x.dtype)
    if kind == "power":
        return lambda: gp.power(x, 2.7, out=out)
    if kind == "gelu":
        return lambda: gp.gelu(x, out=out)
    if kind == "exp":
        return lambda: gp.exp(x, out=out)
    if kind == "sin":
        return lambda: gp.sin(x, out=out)
    raise ValueError(f"unknown --big-op {kind!r}")


def _ms_per_op(op: Callable[[], Any], stream: gp.Stream, reps: int = 20) -> float:
    """Device ms per call of ``op`` on ``stream``: a warm-up call, then ``reps`` between events."""
    op()
    start, end = gp.Event(), gp.Event()
    start.record(stream)
    for _ in range(reps):
        op()
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end) / reps


class _Saturator:
    """A thread that keeps ``depth`` large kernels in flight on ``stream`` until stopped."""

    def __init__(self, stream: gp.Stream, scope: Any, make: Callable[[], Callable[[], Any]],
                 depth: int) -> None:
        self.stream, self.scope, self.make, self.depth = stream, scope, make, depth
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.launched = 0
        self.completed = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            with self.scope if self.scope is not None else self.stream:
                op = self.make()
                inflight: list[gp.Event] = []
                self.ready.set()
                while not self.stop.is_set():
                    op()
                    self.launched += 1
                    inflight.append(self.stream.record(gp.Event(timing=False)))
                    if len(inflight) >= self.depth:
                        # Block (GIL released) until the oldest is done, then refill at once:
                        # the queue never runs dry.  (Polling with time.sleep(0.0002) did: a
                        # sleep lasts ~0.25 ms, so 4 in flight capped the rate near 10k ops/s
                        # whatever the kernel time -- the old (b) solo numbers.)
                        inflight.pop(0).synchronize()
                        self.completed += 1
                self.stream.synchronize()
        except BaseException as exc:  # reported by the caller
            self.error = exc
            self.ready.set()

    def __enter__(self) -> _Saturator:
        self.thread.start()
        self.ready.wait()
        time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        if self.error is not None:
            raise self.error


def _latency(stream: gp.Stream, scope: Any, make: Callable[[], Callable[[], Any]], n: int,
             gap_s: float, gate: Callable[[], Any] | None = None) -> dict[str, Any]:
    """Latency of ``make()``'s op on ``stream``: CUDA events around it, and the host clock.

    Without ``gate``, the start event fires as soon as it is recorded (the stream is idle), so
    the "device" time also holds the host's Python dispatch of the op (and any wait for the
    GIL).  With ``gate`` (an op of a few hundred µs on the same stream, enqueued first), the
    op is fully enqueued before the start event fires: start->end is its GPU latency (queueing
    on the device plus execution) alone.  ``gate_too_short`` counts samples whose start event
    had fired before the end event was recorded (host dispatch leaked in; they are kept).
    """
    dev: list[float] = []
    wall: list[float] = []
    leaked = 0
    with scope if scope is not None else stream:
        op = make()
        start, end = gp.Event(), gp.Event()
        for i in range(n + 20):
            t0 = time.perf_counter()
            if gate is not None:
                gate()
            start.record(stream)
            op()
            end.record(stream)
            early = gate is not None and start.query()
            end.synchronize()
            t1 = time.perf_counter()
            if i >= 20:
                dev.append(start.elapsed_time(end) * 1e3)
                wall.append((t1 - t0) * 1e6)
                leaked += early
            if gap_s:
                time.sleep(gap_s)
    if gate is not None:
        return {"device_us": _summary(dev), "gate_too_short": leaked}
    return {"device_us": _summary(dev), "wall_us": _summary(wall)}


def _make_gate(stream: gp.Stream, scope: Any, target_us: float) -> tuple[Callable[[], Any],
                                                                          float]:
    """A compute-bound op (float64 power, little memory traffic) of about ``target_us`` µs."""
    with scope if scope is not None else stream:
        n = 1 << 18
        x = gp.from_numpy(np.linspace(0.5, 1.5, n))
        out = gp.empty((n,), dtype=x.dtype)
        start, end = gp.Event(), gp.Event()
        for _ in range(3):
            start.record(stream)
            gp.power(x, 2.7, out=out)
            end.record(stream)
            end.synchronize()
        us = start.elapsed_time(end) * 1e3
        for _ in range(2):  # rescale twice: a small launch is mostly fixed cost
            n = int(min(1 << 27, max(n, n * target_us / max(us, 1e-3))))
            x = gp.from_numpy(np.linspace(0.5, 1.5, n))
            out = gp.empty((n,), dtype=x.dtype)
            start.record(stream)
            gp.power(x, 2.7, out=out)
            end.record(stream)
            end.synchronize()
            us = start.elapsed_time(end) * 1e3
    return (lambda: gp.power(x, 2.7, out=out)), us


def bench_latency(args: argparse.Namespace, cuda: bool) -> dict[str, Any]:
    kind = args.small_op
    if kind == "auto":
        kind = "matmul16" if hasattr(gp, "matmul") else "add"
    n_small = 256
    make_small = lambda: _small_op(kind, n_small)  # noqa: E731
    make_big = lambda: _big_op(args.big_op, args.big_n)  # noqa: E731
    g = gp.create_partition("lat-guaranteed", memory=1 << 30, qos="guaranteed",
                            compute=args.g_compute)
    be = gp.create_partition("lat-besteffort", compute=round(1 - args.g_compute, 6))
    plain_g, plain_be = gp.Stream(), gp.Stream()
    res: dict[str, Any] = {
        "small_op": f"{kind} {n_small}x{n_small}" if kind.startswith("matmul")
        else f"gp.add {n_small}x{n_small} float32 (stand-in: gp.matmul is not in this tree)",
        "big_op": f"gp.{args.big_op} n={args.big_n} (out=), {args.depth} in flight",
        "guaranteed": repr(g), "best_effort": repr(be), "iterations": args.lat_n,
    }
    n, gap = args.lat_n, args.gap_ms / 1e3
    # Host dispatch + GPU ("dispatch-included": the old metric) and wall clock, then the op's
    # GPU latency alone ("gated"); each solo, beside the saturating BestEffort tenant, and the
    # same on plain streams (partitions off).
    runs = {"on": (g.stream, g, be.stream, be), "off": (plain_g, None, plain_be, None)}
    for mode, (gs, gsc, bs, bsc) in runs.items():
        solo = _latency(gs, gsc, make_small, n, gap)
        target = max(600.0, 6 * solo["wall_us"]["p99"])
        gate, gate_us = _make_gate(gs, gsc, target)
        res[f"gate_{mode}_us"] = gate_us
        res[f"solo_{mode}"] = solo
        res[f"solo_{mode}_gated"] = _latency(gs, gsc, make_small, n, gap, gate)
        with _Saturator(bs, bsc, make_big, args.depth) as sat:
            res[f"loaded_{mode}"] = _latency(gs, gsc, make_small, n, gap)
            res[f"loaded_{mode}_gated"] = _latency(gs, gsc, make_small, n, gap, gate)
            t = time.perf_counter()
            c0 = sat.completed
            time.sleep(0.5)
            res[f"loaded_{mode}"]["best_effort_ops_per_s"] = (sat.completed - c0) / (
                time.perf_counter() - t)
        for clock, (a, b) in {"device_us": ("", ""), "wall_us": ("", ""),
                              "gated_device_us": ("_gated", "_gated")}.items():
            key = "device_us" if clock == "gated_device_us" else clock
            ratio = (res[f"loaded_{mode}{a}"][key]["p99"] / res[f"solo_{mode}{b}"][key]["p99"])
            res[f"p99_ratio_{mode}_{clock}"] = ratio
    res["pass_p99_on_le_1.5x_solo_gpu_latency"] = res["p99_ratio_on_gated_device_us"] <= 1.5
    res["pass_p99_on_le_1.5x_solo_dispatch_included"] = res["p99_ratio_on_device_us"] <= 1.5
    gp.synchronize()
    gp.delete_partition(g, force=True)
    gp.delete_partition(be, force=True)
    return res


def _throughput(streams: list[gp.Stream], scopes: list[Any],
                make: Callable[[], Callable[[], Any]], seconds: float,
                depth: int) -> list[int]:
    sats = [_Saturator(s, sc, make, depth) for s, sc in zip(streams, scopes, strict=True)]
    for s in sats:
        s.thread.start()
    for s in sats:
        s.ready.wait()
    time.sleep(0.2)  # warm-up
    before = [s.completed for s in sats]
    time.sleep(seconds)
    after = [s.completed for s in sats]
    for s in sats:
        s.stop.set()
    for s in sats:
        s.thread.join()
        if s.error is not None:
            raise s.error
    return [a - b for a, b in zip(after, before, strict=True)]


def bench_split(args: argparse.Namespace, cuda: bool) -> dict[str, Any]:
    def make() -> Callable[[], Any]:
        return _big_op(args.split_op, args.split_n)

    a = gp.create_partition("split-70", compute=0.7)
    b = gp.create_partition("split-30", compute=0.3)
    res: dict[str, Any] = {"workload": f"gp.{args.split_op} n={args.split_n} (out=)",
                           "seconds": args.seconds, "a": repr(a), "b": repr(b)}
    # Solo rates of each partition: is the workload limited by SMs (compute) or bandwidth?
    solo = []
    for p in (a, b):
        solo.append(_throughput([p.stream], [p], make, args.seconds / 2, args.depth)[0])
    full = _throughput([gp.Stream()], [None], make, args.seconds / 2, args.depth)[0]
    res["solo_ops"] = {"split-70": solo[0], "split-30": solo[1], "whole_device": full}
    # Kernel time per op on each partition's SMs (events around 20 ops, queue kept full): if
    # the op is SM-bound, the rates go as the SM counts.
    kernel_us: dict[str, float] = {}
    rows: list[tuple[str, gp.Stream, Any]] = [("split-70", a.stream, a), ("split-30", b.stream, b),
                                              ("whole_device", gp.Stream(), None)]
    for label, stream, scope in rows:
        with scope if scope is not None else stream:
            kernel_us[label] = _ms_per_op(make(), stream) * 1e3
    res["kernel_us_per_op"] = kernel_us
    res["sm_counts"] = {"split-70": a.sm_count, "split-30": b.sm_count}
    if a.sm_count and b.sm_count:
        res["sm_ratio"] = a.sm_count / b.sm_count
    res["kernel_rate_ratio"] = kernel_us["split-30"] / kernel_us["split-70"]
    ops = _throughput([a.stream, b.stream], [a, b], make, args.seconds, args.depth)
    res["on_ops"] = {"split-70": ops[0], "split-30": ops[1]}
    share = ops[0] / max(1, ops[0] + ops[1])
    ratio = ops[0] / max(1, ops[1])
    res["on_share_of_70"] = share
    res["on_ratio"] = ratio
    res["on_ratio_vs_7_3"] = ratio / (7 / 3)
    res["pass_share_within_10pct"] = abs(share - 0.7) <= 0.07
    res["pass_ratio_within_10pct"] = abs(ratio / (7 / 3) - 1) <= 0.10
    off = _throughput([gp.Stream(), gp.Stream()], [None, None], make, args.seconds, args.depth)
    res["off_ops"] = off
    res["off_share_of_first"] = off[0] / max(1, off[0] + off[1])
    gp.synchronize()
    gp.delete_partition(a, force=True)
    gp.delete_partition(b, force=True)
    return res


def bench_reservation(args: argparse.Namespace) -> dict[str, Any]:
    from pygpukit import _partition

    state = _partition._state(_partition._runtime(None))
    total = int(state.total_memory)
    reserve = total - 512 * MiB
    g = gp.create_partition("resv-guaranteed", memory=reserve, qos="guaranteed")
    be = gp.create_partition("resv-besteffort", qos="best_effort")
    res: dict[str, Any] = {"partitionable_bytes": total, "guaranteed_reservation": reserve}
    with be:
        ok = gp.empty((256 * MiB,), dtype="uint8")
        res["best_effort_256MiB_outside_reservation"] = "allocated"
        try:
            gp.empty((1024 * MiB,), dtype="uint8")
            res["best_effort_1GiB_into_reservation"] = "ALLOCATED (isolation broken)"
            refused = False
        except gp.PartitionMemoryError as exc:
            res["best_effort_1GiB_into_reservation"] = f"refused: {exc}"
            refused = True
    free_before = None
    if gp.backend() == "cuda":
        import pygpukit_driver as drv

        free_before = drv.mem_get_info()[0]
    res["device_free_bytes_when_refused"] = free_before
    with g:
        big = gp.zeros((4096 * MiB,), dtype="uint8")
        res["guaranteed_4GiB_in_reservation"] = "allocated"
    res["guaranteed_stats"] = g.memory_stats()
    res["best_effort_stats"] = be.memory_stats()
    res["pass_best_effort_refused"] = refused
    del ok, big
    gp.synchronize()
    gp.delete_partition(g, force=True)
    gp.delete_partition(be, force=True)
    gp.empty_cache()
    return res


def _rate(fn: Callable[[int], None], n: int, repeat: int = 5) -> float:
    fn(max(1, n // 10))
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn(n)
        best = min(best, time.perf_counter() - t)
    return n / best


def bench_python_side(args: argparse.Namespace) -> dict[str, Any]:
    import pygpukit_sched as s

    n = args.py_n
    ac = s.AdmissionController(1 << 40)
    ids = [f"task-{i}" for i in range(1024)]

    def admit(k: int) -> None:
        a, r = ac.admit, ac.release
        for i in range(k):
            a(ids[i & 1023], MiB, 1)
            r(ids[i & 1023])

    pool = s.MemoryPool(1 << 30, enable_eviction=True)

    def pool_af(k: int) -> None:
        al, fr = pool.allocate, pool.free
        for _ in range(k):
            fr(al(4096))

    p = gp.create_partition("py-side", memory=1 << 30)

    def task(k: int) -> None:
        for _ in range(k):
            with p.task(MiB):
                pass

    def alloc_in(k: int) -> None:
        with p:
            for _ in range(k):
                gp.empty((1024,), dtype="float32")

    def alloc_out(k: int) -> None:
        for _ in range(k):
            gp.empty((1024,), dtype="float32")

    res = {
        "admission_decisions_per_s": _rate(admit, n),
        "pool_allocate_free_us": 1e6 / _rate(pool_af, n),
        "task_admit_run_complete_per_s": _rate(task, n // 10),
        "gp_empty_in_partition_us": 1e6 / _rate(alloc_in, n // 10),
        "gp_empty_outside_us": 1e6 / _rate(alloc_out, n // 10),
    }
    res["pass_admission_ge_300k"] = res["admission_decisions_per_s"] >= 300_000
    res["pass_pool_le_1us"] = res["pool_allocate_free_us"] <= 1.0
    gp.delete_partition(p, force=True)
    return res


def green_check(args: argparse.Namespace) -> dict[str, Any]:
    """Our kernels (runtime API, static cudart) on green-context streams: results and SMs."""
    import pygpukit_driver as drv

    out: dict[str, Any] = {"green_contexts_supported": drv.green_contexts_supported(),
                           "sm_count": drv.Device(0).multiprocessor_count}
    if not out["green_contexts_supported"]:
        return out
    res = drv.device_sm_resource(0)
    out["min_partition_size"] = res.min_partition_size
    out["coscheduled_alignment"] = res.coscheduled_alignment
    host = np.linspace(0.5, 1.5, 1 << 22, dtype=np.float32)
    rows = []
    for share in (0.125, 0.25, 0.5, None):
        if share is None:
            p, scope, stream = None, None, gp.Stream()
        else:
            p = gp.create_partition(f"green-{share}", compute=share)
            scope, stream = p, p.stream
        with scope if scope is not None else stream:
            x = gp.from_numpy(host)
            y = gp.power(x, 2.7) + x
            ok = bool(np.allclose(y.to_numpy(), host ** np.float32(2.7) + host, rtol=1e-4))
            ms = _ms_per_op(_big_op(args.split_op, args.split_n), stream)
        rows.append({"share": share, "sm_count": p.sm_count if p else out["sm_count"],
                     "mode": p.compute_mode if p else "whole device", "correct": ok,
                     "ms_per_op": ms, "note": p.compute_note if p else ""})
        if p is not None:
            gp.synchronize()
            gp.delete_partition(p, force=True)
    out["rows"] = rows
    out["primary_context_current"] = drv.current_context_handle() != 0
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("bench_partition.json"))
    ap.add_argument("--only", default="green,a,b,c,d", help="comma-separated sections")
    ap.add_argument("--small-op", default="auto", help="auto, matmul16, matmul32 or add")
    ap.add_argument("--big-op", default="power",
                    help="(a)'s saturating op: power, gelu, exp or sin (float32; add 64: float64)")
    ap.add_argument("--split-op", default="power64", help="(b)'s op, as --big-op")
    ap.add_argument("--big-n", type=int, default=1 << 25)
    ap.add_argument("--split-n", type=int, default=1 << 23)
    ap.add_argument("--g-compute", type=float, default=0.5)
    ap.add_argument("--depth", type=int, default=4)
    # Per run (x 3 runs: about the 1000 samples / 2 s / 200 000 calls of one run before --runs;
    # 400 samples per run still put 4 beyond the p99).
    ap.add_argument("--lat-n", type=int, default=400)
    ap.add_argument("--gap-ms", type=float, default=0.5)
    ap.add_argument("--seconds", type=float, default=0.8)
    ap.add_argument("--py-n", type=int, default=70_000)
    add_runs_argument(ap)
    args = ap.parse_args()
    require_commit()
    cuda = gp.backend() == "cuda"
    if not cuda:  # keep the CPU run short: it only checks the logic
        args.big_n, args.split_n = min(args.big_n, 1 << 16), min(args.split_n, 1 << 16)
        args.lat_n, args.seconds = min(args.lat_n, 100), min(args.seconds, 0.5)
    only = set(args.only.split(","))
    sections: list[tuple[str, Callable[[], dict[str, Any]]]] = [
        ("green", lambda: green_check(args)),
        ("a", lambda: bench_latency(args, cuda)),
        ("b", lambda: bench_split(args, cuda)),
        ("c", lambda: bench_reservation(args)),
        ("d", lambda: bench_python_side(args)),
    ]

    def one_run(_: int) -> dict[str, Any]:
        return run_sections(sections, lambda key: key in only and (key != "green" or cuda))

    runs = repeat_runs(args.runs, one_run)
    report = report_head("bench_partition", args.runs, backend=gp.backend(),
                         platform=platform.platform(), **aggregate(runs))
    verdicts: dict[str, str] = {}
    if "error" not in report.get("a", {"error": ""}):
        verdicts["a_p99_gpu_latency_le_1.5x_solo"] = absolute_verdict(
            report["a"]["p99_ratio_on_gated_device_us"], 1.5)
    if "error" not in report.get("b", {"error": ""}):
        ratio = report["b"]["on_ratio_vs_7_3"]
        verdicts["b_split_within_10pct_of_7_3"] = (
            "met" if ratio["min"] >= 0.9 and ratio["max"] <= 1.1 else "not met")
    if "error" not in report.get("d", {"error": ""}):
        verdicts["d_admission_ge_300k_per_s"] = absolute_verdict(
            report["d"]["admission_decisions_per_s"], 300_000, better="higher")
        verdicts["d_pool_le_1us"] = absolute_verdict(report["d"]["pool_allocate_free_us"], 1.0)
    report["verdicts"] = verdicts
    args.out.write_text(json.dumps(report, indent=2, default=str))
    print(f"wrote {args.out}: {json.dumps(verdicts)}")
    return failed_sections(runs, args.out)


if __name__ == "__main__":
    sys.exit(main())
