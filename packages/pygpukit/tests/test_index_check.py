"""gp.set_index_check: device index errors raised at the call or at the next synchronization."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pytest

import pygpukit as gp
from pygpukit import _index_errors

IDX_BAD = np.array([1, 2, 12])  # 12 is out of range for 10 elements
MESSAGE = "index 12 is out of bounds for axis 0 with size 10"


@pytest.fixture
def deferred(backend: str) -> Iterator[None]:
    with gp.index_check("deferred"):
        yield
    # Nothing a test leaves pending may leak into the next one.
    with contextlib.suppress(IndexError):
        gp.synchronize()


def arange10() -> gp.GPUArray:
    return gp.from_numpy(np.arange(10, dtype=np.float32))


def test_mode_api_and_validation() -> None:
    assert gp.get_index_check() == "immediate"
    with gp.index_check("deferred"):
        assert gp.get_index_check() == "deferred"
        with gp.index_check("immediate"):
            assert gp.get_index_check() == "immediate"
        assert gp.get_index_check() == "deferred"
    assert gp.get_index_check() == "immediate"
    assert gp.set_index_check("deferred") == "immediate"
    assert gp.set_index_check("immediate") == "deferred"
    with pytest.raises(ValueError, match="'immediate' or 'deferred'; got 'later'"):
        gp.set_index_check("later")
    assert gp.get_index_check() == "immediate"


def test_immediate_raises_at_the_call(backend: str) -> None:
    a = arange10()
    with pytest.raises(IndexError, match=f"^{MESSAGE}$"):
        a[gp.from_numpy(IDX_BAD)]
    gp.synchronize()  # nothing pending


def test_deferred_gather_raises_at_synchronize_once(deferred: None) -> None:
    a = arange10()
    got = a[gp.from_numpy(IDX_BAD)]  # returns: the kernel skipped the bad element
    good = a[gp.from_numpy(np.array([3, -1]))]
    with pytest.raises(IndexError, match=f"^{MESSAGE} .*deferred index check.*gather"):
        gp.synchronize()
    gp.synchronize()  # reported once, then forgotten
    np.testing.assert_array_equal(got.to_numpy(), [1, 2, 0])
    np.testing.assert_array_equal(good.to_numpy(), [3, 9])


def test_deferred_results_equal_immediate_ones(deferred: None) -> None:
    rng = np.random.default_rng(5)
    host = rng.standard_normal((50, 3)).astype(np.float32)
    idx = rng.integers(-50, 50, 200)
    a = gp.from_numpy(host)
    got = a[gp.from_numpy(idx)]
    b = gp.from_numpy(host)
    b[gp.from_numpy(idx[:10])] = np.float32(7)
    c = gp.zeros(50, np.float64)
    gp.add_at(c, gp.from_numpy(idx), 1.0)
    expected_b = host.copy()
    expected_b[idx[:10]] = 7
    expected_c = np.zeros(50)
    np.add.at(expected_c, idx, 1.0)
    np.testing.assert_array_equal(got.to_numpy(), host[idx])
    np.testing.assert_array_equal(b.to_numpy(), expected_b)
    np.testing.assert_array_equal(c.to_numpy(), expected_c)


@pytest.mark.parametrize("where", ["stream", "event", "to_numpy", "item", "device"])
def test_deferred_raises_at_each_synchronization(deferred: None, where: str) -> None:
    a = arange10()
    stream = gp.current_stream()
    event = gp.Event()
    a[gp.from_numpy(IDX_BAD)] = 1.0
    event.record()
    with pytest.raises(IndexError, match=f"^{MESSAGE} .*assignment"):
        if where == "stream":
            stream.synchronize()
        elif where == "event":
            event.synchronize()
        elif where == "to_numpy":
            a.to_numpy()
        elif where == "item":
            a[0].item()
        else:
            gp.Device(0).synchronize()
    # The in-range elements were written (as in immediate mode), the rest untouched.
    np.testing.assert_array_equal(a.to_numpy(), [0, 1, 1, *range(3, 10)])


def test_event_checks_only_work_before_its_record(deferred: None) -> None:
    a = arange10()
    event = gp.Event()
    a[gp.from_numpy(np.array([0, 1]))]
    event.record()
    a[gp.from_numpy(IDX_BAD)]
    event.synchronize()  # the failure came after the record
    with pytest.raises(IndexError, match=MESSAGE):
        gp.current_stream().synchronize()


def test_earliest_failure_wins_and_names_its_axis(deferred: None) -> None:
    a = gp.from_numpy(np.zeros((4, 6), np.float32))
    a[:, gp.from_numpy(np.array([0, 6]))]  # axis 1 of size 6
    a[gp.from_numpy(np.array([9]))]  # axis 0, later
    with pytest.raises(IndexError, match=r"^index 6 is out of bounds for axis 1 with size 6 "):
        gp.synchronize()
    gp.synchronize()


def test_ring_full_synchronizes_first(deferred: None) -> None:
    a = arange10()
    bad, ok = gp.from_numpy(IDX_BAD), gp.from_numpy(np.array([0]))
    a[bad]
    for _ in range(_index_errors.RING - 1):
        a[ok]
    # The ring is full: the next checked operation waits and raises the first one's error
    # before launching anything.
    with pytest.raises(IndexError, match=MESSAGE):
        a[ok]
    for _ in range(3 * _index_errors.RING):  # slots are reused after the reset
        a[ok]
    gp.synchronize()


def test_take_put_and_atomic_add_defer(deferred: None) -> None:
    a = arange10()
    gp.take(a, gp.from_numpy(IDX_BAD))
    with pytest.raises(IndexError, match=MESSAGE):
        gp.synchronize()
    gp.put(a, gp.from_numpy(IDX_BAD), np.float32(-1))
    with pytest.raises(IndexError, match=MESSAGE):
        gp.synchronize()
    gp.add_at(a, gp.from_numpy(IDX_BAD), 1.0, deterministic=False)
    with pytest.raises(IndexError, match=f"{MESSAGE} .*add_at"):
        gp.synchronize()


def test_streams_are_checked_separately(deferred: None) -> None:
    a = arange10()
    other = gp.Stream()
    with other:
        a[gp.from_numpy(IDX_BAD)]
    gp.current_stream().synchronize()  # not the stream that failed
    with pytest.raises(IndexError, match=MESSAGE):
        other.synchronize()


def test_host_indices_still_raise_at_the_call(deferred: None) -> None:
    a = arange10()
    with pytest.raises(IndexError, match=f"^{MESSAGE}$"):
        a[IDX_BAD]
    gp.synchronize()


def test_capture_keeps_skipping(deferred: None) -> None:
    a = arange10()
    idx = gp.from_numpy(IDX_BAD)
    out = a[idx]  # warm-up outside the capture (pending until the sync below)
    with pytest.raises(IndexError):
        gp.synchronize()
    with gp.graph() as g:
        out = a[idx]
    g.replay()
    gp.synchronize()  # a capture has no slot: out-of-range elements are skipped, no error
    np.testing.assert_array_equal(out.to_numpy(), [1, 2, 0])


@pytest.mark.parametrize("op", ["setitem", "put", "add_at", "add_at_atomic", "setitem_2d"])
def test_immediate_write_with_a_bad_index_writes_nothing(backend: str, op: str) -> None:
    # NumPy checks every index before it writes: so does the immediate mode.
    a = arange10()
    idx = gp.from_numpy(np.array([0, 1, 2, 12]))
    if op == "setitem":
        with pytest.raises(IndexError, match=f"^{MESSAGE}$"):
            a[idx] = np.float32(-1)
    elif op == "put":
        with pytest.raises(IndexError, match=MESSAGE):
            gp.put(a, idx, np.float32(-1))
    elif op in ("add_at", "add_at_atomic"):
        with pytest.raises(IndexError, match=MESSAGE):
            gp.add_at(a, idx, 100.0, deterministic=op == "add_at")
    else:  # a second index array, mixed with a slice
        b = gp.from_numpy(np.arange(30, dtype=np.float32).reshape(3, 10))
        with pytest.raises(IndexError, match="index 12 is out of bounds for axis 1 with size 10"):
            b[:, idx] = np.float32(-1)
        np.testing.assert_array_equal(b.to_numpy(), np.arange(30).reshape(3, 10))
    np.testing.assert_array_equal(a.to_numpy(), np.arange(10))
    gp.synchronize()  # nothing pending
    a[gp.from_numpy(np.array([0, 9]))] = np.float32(-1)  # and a good write still writes
    np.testing.assert_array_equal(a.to_numpy()[[0, 9]], [-1, -1])


def test_deferred_checks_from_several_threads_on_one_stream(deferred: None) -> None:
    # Threads share the default stream: every failure is raised once, by some synchronization,
    # and no thread's synchronization reads a slot another thread took but has not launched.
    import threading

    a = arange10()
    good = gp.from_numpy(np.array([3, -1]))
    bad = gp.from_numpy(IDX_BAD)
    errors: list[BaseException] = []
    raised = 0
    lock = threading.Lock()

    def work(failures: int) -> None:
        nonlocal raised
        try:
            gp.set_index_check("deferred")  # (process-wide: every thread is already in it)
            for i in range(150):
                x = a[bad] if i < failures else a[good]
                if i % 7 == 0:
                    try:
                        gp.synchronize()
                    except IndexError:
                        with lock:
                            raised += 1
                if i >= failures:
                    np.testing.assert_array_equal(x.to_numpy(), [3, 9])
        except BaseException as exc:  # reported by the main thread
            if isinstance(exc, IndexError):
                with lock:
                    raised += 1
            else:
                errors.append(exc)

    threads = [threading.Thread(target=work, args=(1 if t == 0 else 0,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        gp.synchronize()
    except IndexError:
        raised += 1
    assert not errors, errors
    assert raised == 1
