"""Reads wait for the stream that last wrote an array, whatever the layout of the view read.

On the GPU the writer stream is kept busy (a long queue of large elementwise ops) before it
writes, so a read that did not wait for it would see the old bytes; on the CPU simulation the
same code runs and checks the values.
"""

from __future__ import annotations

import numpy as np
import pytest

import pygpukit as gp


def _busy_then_fill(target: gp.GPUArray, value: float, backend: str) -> gp.Stream:
    """On a new stream: wait for the target's allocation, work ~10 ms, then fill ``target``."""
    writer = gp.Stream()
    writer.wait_stream(gp.current_stream())
    n = 1 << 24 if backend == "cuda" else 1 << 10
    with writer:
        scratch = gp.ones(n, dtype="float32")
        for _ in range(60):
            scratch = scratch * 1.0001
        target[...] = value
    return writer


@pytest.mark.parametrize(
    "view",
    [
        pytest.param(lambda a: a[:, ::2], id="column-step"),
        pytest.param(lambda a: a.T, id="transpose"),
        pytest.param(lambda a: a[::-1, 3:], id="negative-step"),
        pytest.param(lambda a: a, id="contiguous"),
    ],
)
def test_view_read_waits_for_writer_on_another_stream(backend: str, view: object) -> None:
    a = gp.zeros((256, 64), dtype="float32")
    _busy_then_fill(a, 7.0, backend)
    got = view(a).to_numpy()  # type: ignore[operator]
    expected = view(np.full((256, 64), 7.0, np.float32))  # type: ignore[operator]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.multigpu
def test_view_copy_to_another_device_waits_for_writer() -> None:
    if gp.backend() != "cuda" or gp.device_count() < 2:
        pytest.skip(f"needs two GPUs, found {gp.device_count()}")
    a = gp.zeros((128, 32), dtype="float64")
    _busy_then_fill(a, -3.0, "cuda")
    moved = a[1::3, ::-1].to(gp.Device(1))
    assert moved.device == gp.Device(1)
    np.testing.assert_array_equal(moved.to_numpy(), np.full((43, 32), -3.0))


def test_view_read_inside_writer_scope(backend: str) -> None:
    # The writer is the current stream here: nothing to wait for, the values are still right.
    a = gp.zeros((64, 16), dtype="float32")
    writer = gp.Stream()
    writer.wait_stream(gp.current_stream())
    with writer:
        a[...] = 2.5
        got = a[::2, ::-3].to_numpy()
    np.testing.assert_array_equal(got, np.full((32, 6), 2.5, np.float32))
