"""CUDA graphs for array code (gp.graph): capture, replay, refusals, memory — both backends."""

from __future__ import annotations

import gc
from collections.abc import Callable

import numpy as np
import pytest

import pygpukit as gp

JIT_SRC = r'''
extern "C" __global__ void axpb(float* y, const float* x, float a, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}
'''


def _inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((4, 64)).astype(np.float32),
        "w": rng.standard_normal((64, 64)).astype(np.float32),
        "b": rng.standard_normal(64).astype(np.float32),
        "h": rng.standard_normal((64, 64)).astype(np.float16),
        "big": rng.standard_normal(300_000).astype(np.float32),
        "m": rng.standard_normal((4, 64)) > 0,
    }


def _work(a: dict[str, gp.GPUArray]) -> dict[str, gp.GPUArray]:
    """A mix of small and large elementwise ops, reductions, norms and GEMMs."""
    x, w, b = a["x"], a["w"], a["b"]
    y = gp.matmul(x, w) + b                    # GEMM, broadcast add
    z = gp.softmax(y * 0.5)                     # scalar op, row norm
    s = z.sum()                                 # whole-array reduction
    r = gp.where(a["m"], z, -z).max(axis=1)     # where, axis reduction
    n = gp.layer_norm(gp.exp(x - 1.0))          # unary, layer norm
    hh = gp.matmul(a["h"], a["h"]).astype("float32")   # float16 GEMM, cast
    big = (a["big"] * 2.0 + 1.0).sum()          # large-array path, two-pass sum
    return {"y": y, "z": z, "s": s, "r": r, "n": n, "hh": hh, "big": big,
            "t": gp.tanh(s + r.mean())}


def _upload(data: dict[str, np.ndarray]) -> dict[str, gp.GPUArray]:
    return {k: gp.from_numpy(v) for k, v in data.items()}


def _set(arrays: dict[str, gp.GPUArray], data: dict[str, np.ndarray]) -> None:
    for k, v in data.items():
        arrays[k][...] = gp.from_numpy(v)


def _capture_and_check(work: Callable[[dict[str, gp.GPUArray]], dict[str, gp.GPUArray]],
                       runs: list[dict[str, np.ndarray]]) -> gp.Graph:
    """Capture ``work`` on ``runs[0]``; each run's data replayed equals ``work`` run eagerly."""
    eager = [{k: v.to_numpy() for k, v in work(_upload(data)).items()} for data in runs]
    arrays = _upload(runs[0])
    with gp.graph() as g:
        out = work(arrays)
    assert g.captured and "ready" in repr(g)
    for data, expected_outputs in zip(runs, eager, strict=True):
        _set(arrays, data)                      # new data in the same arrays
        g.replay()
        for k, expected in expected_outputs.items():
            np.testing.assert_array_equal(out[k].to_numpy(), expected, err_msg=k)
    return g


def test_replay_is_bit_identical_to_eager_runs(backend: str) -> None:
    g = _capture_and_check(_work, [_inputs(0), _inputs(1)])
    g.close()
    g.close()  # idempotent
    assert not g.captured


def test_capture_runs_nothing_until_replayed(backend: str) -> None:
    x = gp.from_numpy(np.arange(8, dtype=np.float32))
    y = gp.zeros(8)
    with gp.graph() as g:
        y += x * 3.0                            # in place: an array from outside the graph
    np.testing.assert_array_equal(y.to_numpy(), np.zeros(8, np.float32))
    g.replay()
    g.replay()
    np.testing.assert_array_equal(y.to_numpy(), np.arange(8, dtype=np.float32) * 6)


def test_replay_on_a_given_stream_orders_with_its_work(backend: str) -> None:
    x = gp.from_numpy(np.ones(1000, np.float32))
    with gp.graph() as g:
        y = x + 1.0
    s = gp.Stream()
    with s:
        x[...] = 5.0                            # enqueued on s before the replay
    g.replay(stream=s)
    with s:
        z = y * 2.0                             # after the replay on s
    np.testing.assert_array_equal(z.to_numpy(), np.full(1000, 12, np.float32))


@pytest.mark.parametrize("what", ["to_numpy", "item", "print", "synchronize",
                                  "stream_sync", "from_numpy"])
def test_what_cannot_be_captured_raises_and_abandons_the_capture(
        backend: str, what: str, capsys: pytest.CaptureFixture[str]) -> None:
    x = gp.from_numpy(np.arange(4, dtype=np.float32))
    actions: dict[str, Callable[[], object]] = {
        "to_numpy": lambda: (x + 1.0).to_numpy(),
        "item": lambda: x.sum().item(),
        "print": lambda: print(x * 2.0),
        "synchronize": gp.synchronize,
        "stream_sync": lambda: gp.current_stream().synchronize(),
        "from_numpy": lambda: gp.from_numpy(np.ones(3, np.float32)),
    }
    g = gp.graph()
    with pytest.raises(gp.GraphCaptureError, match="cannot be captured"), g:
        actions[what]()
    assert not g.captured
    with pytest.raises(RuntimeError, match="closed"):
        g.replay()
    np.testing.assert_array_equal((x + 1.0).to_numpy(), np.arange(1, 5, dtype=np.float32))


def test_misuse_is_refused(backend: str) -> None:
    g = gp.graph()
    with pytest.raises(RuntimeError, match="new"):
        g.replay()
    with g, pytest.raises(gp.GraphCaptureError, match="inside another"), gp.graph():
        pass
    with pytest.raises(RuntimeError, match="captures once"), g:
        pass


def test_inputs_stay_alive_and_memory_returns(backend: str) -> None:
    gc.collect()
    base = gp.memory_allocated()
    x = gp.from_numpy(np.arange(4096, dtype=np.float32) / 4096)
    with gp.graph() as g:
        t = x * 2.0                             # a temporary, freed during the capture
        y = gp.exp(t) + t
        del t
    del x                                       # the graph keeps x's memory
    gc.collect()
    g.replay()
    t_h = np.arange(4096, dtype=np.float32) / 4096 * 2
    np.testing.assert_allclose(y.to_numpy(), np.exp(t_h) + t_h, rtol=1e-6)
    g.close()
    del g, y
    gc.collect()
    assert gp.memory_allocated() == base


def _chain(a: dict[str, gp.GPUArray]) -> dict[str, gp.GPUArray]:
    """Small ops of every fusable kernel (three compute types, casts, reductions, row norms)."""
    x, x64, i64, m = a["x"], a["x64"], a["i64"], a["m"]
    y = x * 1.01 + a["b4"]                                  # float32 binary, broadcast operand
    y = gp.where(m, gp.exp(y), -y)                          # unary, where
    y = y.astype("float16").astype("float32")               # casts
    z = y.sum() + y.mean() + y.var() + y.max()              # one-block reductions
    am = gp.argmax(y)
    sm = gp.softmax(y) + gp.log_softmax(y) + gp.rms_norm(y)  # row norms: a block per row
    d = gp.sqrt(gp.abs(x64)) * 3.0 - x64 / 7.0              # float64
    dn = gp.layer_norm(d)
    k = (i64 * 3 + 7) // 2 - (i64 % 5)                      # int64
    ks = k.sum()
    return {"y": y, "z": z, "am": am, "sm": sm, "d": d, "dn": dn, "k": k, "ks": ks,
            "mix": (z + dn.sum().astype("float32")) * ks.astype("float32")}


def test_small_op_chains_replay_fused_and_bit_identical(backend: str) -> None:
    def inputs(seed: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        return {"x": rng.standard_normal((3, 40)).astype(np.float32),
                "b4": rng.standard_normal(40).astype(np.float32),
                "m": rng.standard_normal((3, 40)) > 0,
                "x64": rng.standard_normal((5, 24)),
                "i64": rng.integers(-1000, 1000, (7, 9))}

    g = _capture_and_check(_chain, [inputs(3), inputs(4)])
    if backend == "cuda":
        # Every op above is a small-array kernel: on a CUDA 12.4+ driver they replay as
        # lines of one-block launches (graph_fuse.cpp).
        assert g.fused_ops >= 30, g.fused_ops
    else:
        assert g.fused_ops == 0
    g.close()


def _rewrites(a: dict[str, gp.GPUArray]) -> dict[str, gp.GPUArray]:
    """Small ops that overwrite what an earlier step wrote: in-place updates of an operand,
    a freed intermediate's memory taken by one of another dtype, results read back broadcast,
    element sizes 1 to 8 (a fused program forwards stored elements to later steps' loads)."""
    x, m = a["x"], a["m"]
    y = x * 2.0
    y += x                                                  # the output is an operand
    y *= gp.where(m, y, 0.5)
    for _ in range(3):                                      # intermediates freed and reused
        h = (y * 0.75).astype("float16")
        y = h.astype("float32") + y.sum() - h.astype("float32").max()
    i = y.astype("int32")
    i += 3
    b = i > 2                                               # bool (1 byte) from int32
    f = gp.where(b, i.astype("float64") * 0.5, -1.0)        # float64 from both
    u = i.astype("uint8").astype("int64") - f.astype("int64")
    return {"y": y, "i": i, "b": b, "f": f, "u": u, "s": u.sum() + f.argmax()}


def test_rewritten_elements_replay_bit_identical(backend: str) -> None:
    def inputs(seed: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        return {"x": (rng.standard_normal((3, 40)) * 4).astype(np.float32),
                "m": rng.standard_normal((3, 40)) > 0}

    g = _capture_and_check(_rewrites, [inputs(5), inputs(6)])
    if backend == "cuda":
        assert g.fused_ops >= 25, g.fused_ops
    g.close()


@pytest.mark.gpu
@pytest.mark.jit
def test_jit_launches_are_captured() -> None:
    if not gp.is_cuda_available() or not gp.is_nvrtc_available():
        pytest.skip("needs the CUDA backend and pygpukit[jit]")
    kernel = gp.jit(JIT_SRC, func="axpb")
    x = gp.from_numpy(np.arange(1000, dtype=np.float32))
    y = gp.empty(1000)
    with gp.graph() as g:
        kernel(y, x, a=2.0, b=1.0, n=1000)
        z = y.sum()
    g.replay()
    expected = np.arange(1000, dtype=np.float32) * 2 + 1
    np.testing.assert_array_equal(y.to_numpy(), expected)
    assert z.item() == pytest.approx(float(expected.sum()), rel=1e-6)


def test_every_pygpukit_error_has_the_one_root() -> None:
    for error in (gp.OutOfMemoryError, gp.PartitionMemoryError, gp.BackendUnavailableError,
                  gp.AdmissionError, gp.GraphCaptureError, gp.KernelLaunchError):
        assert issubclass(error, gp.PyGPUkitError), error
    assert issubclass(gp.OutOfMemoryError, MemoryError)
    assert issubclass(gp.GraphCaptureError, RuntimeError)
    with pytest.raises(gp.PyGPUkitError), gp.graph():
        gp.synchronize()
