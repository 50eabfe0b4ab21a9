"""Throughput of pygpukit_sched through Python: admission decisions, pool allocate+free, ...

Run: ``python packages/pygpukit-sched/benchmarks/bench_sched.py [--out results.json]``.
Prints one line per case and writes a JSON (best of 5 runs, after a warm-up).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from collections.abc import Callable

import pygpukit_sched as s

N = 200_000


def _best(fn: Callable[[int], None], n: int, repeat: int = 5) -> float:
    fn(n // 10)
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn(n)
        best = min(best, time.perf_counter() - t)
    return best


def _bench_admission(n: int) -> float:
    ac = s.AdmissionController(1 << 40)
    ids = [f"task-{i}" for i in range(1024)]
    admit, release = ac.admit, ac.release

    def run(k: int) -> None:
        for i in range(k):
            tid = ids[i & 1023]
            admit(tid, 1 << 20, 1)
            release(tid)

    return _best(run, n)


def _bench_admission_only(n: int) -> float:
    # Decisions without the release: every one refused once capacity is full.
    ac = s.AdmissionController(0)
    ids = [f"task-{i}" for i in range(1024)]
    admit = ac.admit

    def run(k: int) -> None:
        for i in range(k):
            admit(ids[i & 1023], 1 << 20)

    return _best(run, n)


def _bench_replay(n: int) -> float:
    log: list[tuple[object, ...]] = []
    for i in range(n // 2):
        log.append(("admit", f"t{i}", 1 << 20, i % 5))
        log.append(("release", f"t{i}"))

    def run(k: int) -> None:
        s.AdmissionController(1 << 40).replay(log[: 2 * (k // 2)] if k < n else log)

    return _best(run, n)


def _bench_pool(n: int) -> float:
    pool = s.MemoryPool(1 << 30, enable_eviction=True)
    allocate, free = pool.allocate, pool.free

    def run(k: int) -> None:
        for _ in range(k):
            free(allocate(4096))

    return _best(run, n)


def _bench_partition(n: int) -> float:
    m = s.PartitionManager(s.PartitionConfig(1 << 34))
    m.create_partition("p", "P", s.PartitionLimits().memory(1 << 33))
    charge, release = m.charge, m.release

    def run(k: int) -> None:
        for _ in range(k):
            charge("p", 4096)
            release("p", 4096)

    return _best(run, n)


def _bench_pacing(n: int) -> float:
    p = s.KernelPacingEngine(burst_ns=0)
    p.register_stream(1, 0.5)
    acquire = p.acquire

    def run(k: int) -> None:
        for i in range(k):
            acquire(1, 1000, i * 2000)

    return _best(run, n)


def _bench_qos(n: int) -> float:
    ev = s.QosPolicyEvaluator(1 << 40)
    metas = [s.QosTaskMeta.burstable(f"t{i}", "", 1 << 20) for i in range(1024)]
    admit, release = ev.admit, ev.release

    def run(k: int) -> None:
        for i in range(k):
            m = metas[i & 1023]
            admit(m)
            release(m.id)

    return _best(run, n)


CASES: list[tuple[str, Callable[[int], float], str]] = [
    ("admission_admit_release", _bench_admission, "decisions"),
    ("admission_refused", _bench_admission_only, "decisions"),
    ("admission_replay_log", _bench_replay, "events"),
    ("pool_allocate_free", _bench_pool, "pairs"),
    ("partition_charge_release", _bench_partition, "pairs"),
    ("pacing_acquire", _bench_pacing, "calls"),
    ("qos_admit_release", _bench_qos, "decisions"),
]


def main() -> int:
    """Run every case, print the rates, write the JSON; exit 1 if a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=N, help="operations per run")
    parser.add_argument("--out", default="bench_sched.json", help="JSON output path")
    args = parser.parse_args()
    results = {}
    for name, fn, unit in CASES:
        secs = fn(args.n)
        rate = args.n / secs
        results[name] = {
            "ops": args.n,
            "unit": unit,
            "seconds": secs,
            "per_second": rate,
            "ns_per_op": secs * 1e9 / args.n,
        }
        print(f"{name:<28} {rate:>12,.0f} {unit}/s  {secs * 1e9 / args.n:>8.1f} ns/op")
    checks = {
        "admission_decisions_per_second>=300000": results["admission_admit_release"]["per_second"]
        >= 300_000,
        "pool_allocate_free_us<=1": results["pool_allocate_free"]["ns_per_op"] <= 1000,
    }
    for k, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'} {k}")
    doc = {
        "package": "pygpukit-sched",
        "version": s.__version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "results": results,
        "checks": checks,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
    print(f"wrote {args.out}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
