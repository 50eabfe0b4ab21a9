"""Streams, events, devices and the no-hidden-synchronization rule."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import pygpukit as gp


def test_default_and_scoped_streams(backend: str) -> None:
    default = gp.current_stream()
    s = gp.Stream(priority=0)
    assert s is not default and s.device == gp.Device(0)
    with s:
        assert gp.current_stream() is s
        x = gp.arange(1000, dtype="float32")
        y = x + x
    assert gp.current_stream() is default
    s.synchronize()
    assert s.query()
    np.testing.assert_array_equal(y.to_numpy(), np.arange(1000, dtype=np.float32) * 2)


def test_current_stream_is_per_thread(backend: str) -> None:
    s = gp.Stream()
    seen: list[gp.Stream] = []
    with s:
        t = threading.Thread(target=lambda: seen.append(gp.current_stream()))
        t.start()
        t.join()
        assert gp.current_stream() is s
    assert seen == [gp.current_stream()]


def test_priorities(backend: str) -> None:
    least, greatest = gp.stream_priority_range()
    assert greatest <= least
    s = gp.Stream(priority=greatest)
    assert s.priority == greatest


def test_events_time_and_order(backend: str) -> None:
    start, end = gp.Event(), gp.Event()
    start.record()
    x = gp.ones((1 << 20,))
    for _ in range(10):
        x = x + x
    end.record()
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) >= 0.0
    other = gp.Stream()
    other.wait_event(end)
    other.wait_stream(gp.current_stream())
    with other:
        y = x + x
    assert y.to_numpy()[0] == 2048.0


def test_device_api(backend: str) -> None:
    assert gp.device_count() >= 1
    d = gp.Device(0)
    assert d == gp.Device() and hash(d) == hash(gp.Device(0)) and int(d.__index__()) == 0
    assert d.kind == backend and d.name
    assert gp.zeros(3).device == d
    with d:
        assert gp.zeros(3).device == d
    with pytest.raises(ValueError, match="does not exist"):
        gp.Device(gp.device_count())
    with pytest.raises(TypeError, match="expected an int"):
        gp.Device("gpu")  # type: ignore[arg-type]
    d.synchronize()
    gp.synchronize()
    a = gp.ones(4)
    assert a.to(0) is a


@pytest.mark.multigpu
def test_cross_device_mix_is_refused() -> None:
    if not gp.is_cuda_available():
        pytest.skip("needs the CUDA backend")
    if gp.device_count() < 2:
        pytest.skip("needs two GPUs (only one present)")
    a = gp.ones(4)
    with gp.Device(1):
        b = gp.ones(4)
    assert b.device == gp.Device(1)
    with pytest.raises(ValueError, match="different devices"):
        gp.add(a, b)
    moved = a.to(1)
    assert moved.device == gp.Device(1)
    np.testing.assert_array_equal((moved + b).to_numpy(), np.full(4, 2, np.float32))


@pytest.mark.gpu
def test_operations_do_not_synchronize() -> None:
    if not gp.is_cuda_available():
        pytest.skip("needs the CUDA backend")
    a = gp.ones((64 << 20,))  # 256 MiB: each add takes ~0.1-0.3 ms on an H100/H200
    gp.synchronize()
    start, end = gp.Event(), gp.Event()
    start.record()
    acc = a
    for _ in range(100):
        acc = acc + a
    end.record()
    # Had any op waited, the stream would be idle by now.
    assert not gp.current_stream().query(), "the chain had already finished: an op synchronized"
    end.synchronize()
    assert start.elapsed_time(end) > 5.0
    assert acc[:3].tolist() == [101.0] * 3
