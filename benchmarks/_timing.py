"""Timing helpers shared by the benchmark scripts (CUDA events, warm-up, median).

One run's measurements; ``_runs`` repeats them and reports the spread over runs.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def median_event_ms(fn: Callable[[], object], repeat: int,
                    make_event: Callable[[], Any], batch: int = 1) -> float:
    """Median milliseconds per call of ``fn`` between two events, after 3 warm-ups.

    The events (from ``make_event``) need ``record()``, ``synchronize()`` and
    ``elapsed_time(end)`` (torch's and pygpukit's both have them); they are recorded on the
    current stream.  Each sample holds ``batch`` back-to-back calls and is divided by it: the
    stream's throughput, without the host's dispatch counted as device time.  With ``batch > 1``
    one untimed call goes first, so the device is busy while the first timed call is dispatched
    (otherwise the host's dispatch of that call, idle device time, lands inside the sample);
    ``batch == 1`` measures one call's latency, dispatch included.
    """
    start, end = make_event(), make_event()
    for _ in range(3):
        fn()
    samples = []
    for _ in range(repeat):
        if batch > 1:
            fn()
        start.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / batch)
    return statistics.median(samples)


class CupyEvent:
    """A CuPy timing event with the record / synchronize / elapsed_time of torch's."""

    def __init__(self) -> None:
        import cupy as cp

        self._cp = cp
        self._event = cp.cuda.Event()

    def record(self) -> None:
        self._event.record()

    def synchronize(self) -> None:
        self._event.synchronize()

    def elapsed_time(self, end: CupyEvent) -> float:
        return float(self._cp.cuda.get_elapsed_time(self._event, end._event))


def host_loop_us(loop: Callable[[int], object], sync: Callable[[], object], n: int,
                 rounds: int) -> dict[str, Any]:
    """Host µs per call of ``loop(n)`` (``n`` calls, then ``sync``), over ``rounds`` rounds.

    A long loop fills the launch queue, so this is the steady-state cost per call: the host's
    when it is the bottleneck, else the device's.
    """
    loop(min(n, 2000))  # warm-up
    sync()
    per_call = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        loop(n)
        sync()
        per_call.append((time.perf_counter() - t0) / n * 1e6)
    return {"us_per_call_median": statistics.median(per_call), "us_per_call_min": min(per_call),
            "rounds_us": per_call}


def burst_us(loop: Callable[[int], object], sync: Callable[[], object], rounds: int,
             k: int = 256) -> float:
    """Median host µs per call of ``loop(k)``: a burst too short to fill the launch queue.

    ``sync`` waits for the stream first, so each burst starts with an empty queue and measures
    the host's cost alone.
    """
    import time

    samples = []
    for _ in range(rounds):
        sync()
        t0 = time.perf_counter()
        loop(k)
        samples.append((time.perf_counter() - t0) / k * 1e6)
    sync()
    return statistics.median(samples)


def torch_event() -> Any:
    """A timing CUDA event of torch."""
    import torch

    return torch.cuda.Event(enable_timing=True)


def gbps(nbytes: int, ms: float) -> float:
    """GB/s (10^9 bytes per second) of ``nbytes`` moved in ``ms`` milliseconds."""
    return nbytes / (ms * 1e-3) / 1e9


def pct_of_copy(rows: list[dict[str, Any]], ceiling_gbps: float) -> None:
    """Add each row's percentage of the copy ceiling (``GB/s`` over ``ceiling_gbps``)."""
    for row in rows:
        row["pct_of_copy"] = 100 * row["GB/s"] / ceiling_gbps


def ceiling_row(copy_ms: float, nbytes: int,
                policy: str = "into an existing tensor") -> dict[str, Any]:
    """The row of torch's ``copy_`` of ``nbytes`` (read + written): the bandwidth ceiling."""
    return {"op": "torch copy_ f32 (ceiling)", "policy": policy, "bytes": nbytes,
            "ms": copy_ms, "GB/s": gbps(nbytes, copy_ms)}


def paired_rows(op: str, policy: str, nbytes: int, ours_ms: float, torch_ms: float,
                ours_extra: dict[str, Any] | None = None,
                torch_extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The pygpukit row (with ``speed_vs_torch``: torch's time / ours) and the torch row of one
    op moving ``nbytes``; ``*_extra`` go in after the policy (e.g. the calls made)."""
    return [{"op": f"{op} (pygpukit)", "policy": policy, **(ours_extra or {}), "bytes": nbytes,
             "ms": ours_ms, "GB/s": gbps(nbytes, ours_ms), "speed_vs_torch": torch_ms / ours_ms},
            {"op": f"{op} (torch)", "policy": policy, **(torch_extra or {}), "bytes": nbytes,
             "ms": torch_ms, "GB/s": gbps(nbytes, torch_ms)}]


def torch_verdicts(rows: list[dict[str, Any]]) -> None:
    """Add each aggregated pygpukit row's verdict on its speed vs torch (> 1: faster)."""
    from _runs import verdict

    for row in rows:
        if "speed_vs_torch" in row:
            row["verdict"] = verdict(row["speed_vs_torch"], better="higher")


def print_bandwidth_rows(title: str, rows: list[dict[str, Any]]) -> None:
    """Print aggregated bandwidth rows: median (min-max) over the runs."""
    print(title)
    width = max(len(row["op"]) for row in rows)
    for row in rows:
        gb, pct = row["GB/s"], row["pct_of_copy"]
        extra = ""
        if "speed_vs_torch" in row:
            s = row["speed_vs_torch"]
            extra = (f"  x{s['median']:.3f} vs torch [{s['min']:.3f}-{s['max']:.3f}] "
                     f"{row['verdict']}")
        print(f"  {row['op']:{width}} {row['ms']['median']:8.3f} ms {gb['median']:8.1f} GB/s "
              f"{pct['median']:6.1f}% of copy [{pct['min']:.1f}-{pct['max']:.1f}]{extra}")
