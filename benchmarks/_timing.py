"""Timing helpers shared by the benchmark scripts (CUDA events, warm-up, median)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any


def median_event_ms(fn: Callable[[], object], repeat: int,
                    make_event: Callable[[], Any]) -> float:
    """Median milliseconds of ``fn`` between two events from ``make_event``, after 3 warm-ups.

    The events need ``record()``, ``synchronize()`` and ``elapsed_time(end)`` (torch's and
    pygpukit's both have them); they are recorded on the current stream.
    """
    start, end = make_event(), make_event()
    for _ in range(3):
        fn()
    samples = []
    for _ in range(repeat):
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def torch_event() -> Any:
    """A timing CUDA event of torch."""
    import torch

    return torch.cuda.Event(enable_timing=True)
