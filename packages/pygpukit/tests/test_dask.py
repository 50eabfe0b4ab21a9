"""Dask with GPUArray chunks: dask.array on the threaded scheduler and on a distributed
LocalCluster of worker processes, results equal to NumPy's on the same data.

Marked ``dask``: without dask/distributed the tests skip locally and fail in CI (conftest.py).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pygpukit as gp

try:
    import dask
    import dask.array as da
    import distributed

    import pygpukit.dask as gpd
    _NO_DASK = None
except ImportError as exc:  # pragma: no cover - the skip-to-fail rule reports it in CI
    _NO_DASK = f"needs dask and distributed ({exc})"

pytestmark = [pytest.mark.dask, pytest.mark.skipif(_NO_DASK is not None, reason=_NO_DASK or "")]

try:
    import pygpukit_sched  # noqa: F401
    _NO_SCHED = None
except ImportError:
    _NO_SCHED = "needs pygpukit[sched] (pygpukit-sched is not installed)"


def _data(shape: tuple[int, ...], seed: int = 0) -> np.ndarray[Any, Any]:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _check(result: Any, expected: Any, rtol: float = 2e-5, atol: float = 2e-5) -> None:
    assert isinstance(result, gp.GPUArray), type(result)
    got = result.to_numpy()
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


# workload name -> (dask function of (A, B), NumPy function of (a, b) in float64)
Workload = tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]
WORKLOADS: dict[str, Workload] = {
    "elementwise": (lambda a, b: da.exp(a * 0.5) + 2 * b - abs(a),
                    lambda a, b: np.exp(a * 0.5) + 2 * b - abs(a)),
    "square_sum": (lambda a, b: (a ** 2).sum(), lambda a, b: (a ** 2).sum()),
    "sum_axis0": (lambda a, b: a.sum(axis=0), lambda a, b: a.sum(axis=0)),
    "mean": (lambda a, b: a.mean(), lambda a, b: a.mean()),
    "mean_axis1": (lambda a, b: a.mean(axis=1), lambda a, b: a.mean(axis=1)),
    "max_axis1": (lambda a, b: a.max(axis=1), lambda a, b: a.max(axis=1)),
    "std": (lambda a, b: a.std(), lambda a, b: a.std()),
    "var_axis0_ddof1": (lambda a, b: a.var(axis=0, ddof=1), lambda a, b: a.var(axis=0, ddof=1)),
    "argmax_axis0": (lambda a, b: a.argmax(axis=0), lambda a, b: a.argmax(axis=0)),
    "argmin": (lambda a, b: a.argmin(), lambda a, b: a.argmin()),
    "matmul": (lambda a, b: a @ b.T, lambda a, b: a @ b.T),
    "tensordot": (lambda a, b: da.tensordot(a, b, axes=([0], [0])),
                  lambda a, b: np.tensordot(a, b, axes=([0], [0]))),
    "einsum": (lambda a, b: da.einsum("ij,ij->i", a, b), lambda a, b: np.einsum("ij,ij->i", a, b)),
    "rechunk": (lambda a, b: a.rechunk((30, 7)) * 3, lambda a, b: a * 3),
    "slicing": (lambda a, b: a[5:77:3, ::-2], lambda a, b: a[5:77:3, ::-2]),
    "concatenate": (lambda a, b: da.concatenate([a, b[:, :10]], axis=1),
                    lambda a, b: np.concatenate([a, b[:, :10]], axis=1)),
    "topk": (lambda a, b: da.topk(a, 4, axis=1), lambda a, b: -np.sort(-a, axis=1)[:, :4]),
    "topk_smallest": (lambda a, b: da.topk(a.ravel(), -5),
                      lambda a, b: np.sort(a.ravel())[:5]),
}
SHAPE = (96, 40)
CHUNKS = (24, 16)


def _arrays(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> tuple[Any, Any]:
    """Dask arrays with GPUArray chunks: one from a GPUArray (asarray=False + meta), one from
    NumPy data converted per chunk (map_blocks(gp.asarray))."""
    x = da.from_array(gp.asarray(a), chunks=CHUNKS, asarray=False,
                      meta=gp.empty((0, 0), dtype=np.float32))
    y = da.from_array(b, chunks=CHUNKS).map_blocks(gp.asarray,
                                                   meta=gpd.chunk_meta(2, np.float32))
    return x, y


def _expected(name: str, a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> Any:
    return WORKLOADS[name][1](a.astype(np.float64), b.astype(np.float64))


# -- threaded scheduler ----------------------------------------------------------------------------
def test_meta_is_a_gpuarray(backend: str) -> None:
    x, y = _arrays(_data(SHAPE), _data(SHAPE, 1))
    for arr in (x, y, x + y, x.sum(axis=0), x[3:9], x @ y.T, x.rechunk((48, 40))):
        assert isinstance(arr._meta, gp.GPUArray), (arr, type(arr._meta))
    assert isinstance(gpd.from_array(gp.asarray(_data(SHAPE)), chunks=CHUNKS)._meta, gp.GPUArray)
    # without meta=, Dask calls gp.asarray on NumPy's meta: a GPUArray too
    inferred = da.from_array(_data(SHAPE), chunks=CHUNKS).map_blocks(gp.asarray)
    assert isinstance(inferred._meta, gp.GPUArray) and inferred.dtype == np.float32


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workloads_threaded(backend: str, name: str) -> None:
    a, b = _data(SHAPE), _data(SHAPE, 1)
    x, y = _arrays(a, b)
    with dask.config.set(scheduler="threads"):
        result = WORKLOADS[name][0](x, y).compute()
    expected = _expected(name, a, b)
    if name.startswith("arg"):
        assert result.dtype.kind == "i"
    _check(result, expected, rtol=1e-4, atol=1e-4)


def test_map_blocks_to_numpy_gives_numpy(backend: str) -> None:
    a = _data(SHAPE)
    x, _ = _arrays(a, a)
    with dask.config.set(scheduler="threads"):
        host = (x * 2).map_blocks(gp.to_numpy, meta=np.empty((0, 0), np.float32)).compute()
    assert type(host) is np.ndarray
    np.testing.assert_array_equal(host, a * 2)


def test_sizeof_and_serialization_round_trip(backend: str) -> None:
    from dask.sizeof import sizeof
    from distributed.protocol import deserialize, serialize

    base = gp.asarray(_data((6, 8)))
    for arr in (base, base[::2, 1::3], gp.asarray(np.arange(10, dtype=np.int16)), base.sum(),
                gp.asarray(np.ones((3, 2), dtype=gp.bfloat16))):
        assert sizeof(arr) == arr.nbytes
        for serializers in (("dask",), ("pickle",)):
            header, frames = serialize(arr, serializers=serializers)
            assert header["serializer"] == serializers[0]
            back = deserialize(header, frames)
            assert isinstance(back, gp.GPUArray) and back.dtype == arr.dtype
            np.testing.assert_array_equal(back.to_numpy(), arr.to_numpy())
        back = pickle.loads(pickle.dumps(arr, protocol=5))
        np.testing.assert_array_equal(back.to_numpy(), arr.to_numpy())


def test_registration_and_helpers(backend: str) -> None:
    from dask.array.dispatch import concatenate_lookup, tensordot_lookup

    gpd.register()  # idempotent
    assert concatenate_lookup.dispatch(gp.GPUArray) is gpd._concatenate
    assert tensordot_lookup.dispatch(gp.GPUArray) is gpd._tensordot
    assert gpd.chunk_meta(3, np.int32).shape == (0, 0, 0)
    with pytest.raises(ValueError, match="ndim"):
        gpd.chunk_meta(-1)
    with pytest.raises(TypeError, match="GPUArray"):
        gpd.from_array(np.zeros(3), chunks=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="order"):
        gpd._empty((2,), np.float32, order="F")


def test_protocols_dask_relies_on(backend: str) -> None:
    a = _data((5, 7))
    x = gp.asarray(a)
    _check(np.add(x, x, dtype=np.float64), (a + a).astype(np.float64))
    assert np.add(x, x, dtype=np.float64).dtype == np.float64
    _check(np.add.reduce(x, axis=0, dtype=np.float64), a.astype(np.float64).sum(axis=0))
    made = np.asarray([1, 2, 3], like=x)
    assert isinstance(made, gp.GPUArray) and made.to_numpy().tolist() == [1, 2, 3]
    # like= asks for a GPUArray: host data is copied to the device, as CuPy does
    made = np.asarray(np.arange(4.0), like=x)
    assert isinstance(made, gp.GPUArray) and made.to_numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(np.arange(4.0), like=x, copy=False)
    assert isinstance(np.empty((2, 3), like=x), gp.GPUArray)
    assert np.zeros(3, like=x).dtype == np.float64
    _check(np.arange(2, 9, 3, like=x), np.arange(2, 9, 3))
    _check(np.array([[1, 2]], like=x, ndmin=3), np.array([[1, 2]], ndmin=3))
    rows, cols = np.unravel_index(gp.asarray(np.array([0, 7, 34])), (5, 7))
    assert rows.to_numpy().tolist() == [0, 1, 4] and cols.to_numpy().tolist() == [0, 0, 6]
    with pytest.raises(ValueError, match="out of bounds"):
        np.unravel_index(gp.asarray(np.array([35])), (5, 7))
    flat = np.ravel_multi_index((rows, cols), (5, 7))
    assert flat.to_numpy().tolist() == [0, 7, 34]
    with pytest.raises(ValueError, match="axis 1"):
        np.ravel_multi_index((rows, gp.asarray(np.array([0, 7, 1]))), (5, 7))
    wrapped = np.ravel_multi_index((rows, gp.asarray(np.array([0, 7, -1]))), (5, 7), mode="wrap")
    assert wrapped.to_numpy().tolist() == [0, 7, 34]
    _check(np.full((2,), 7.0, like=x), np.full((2,), 7.0))
    _check(np.partition(x, 2, axis=1), np.sort(a, axis=1))
    with pytest.raises(ValueError, match="kth"):
        np.partition(x, 9, axis=1)
    with pytest.raises(TypeError):  # still no implicit host copy of a GPUArray
        np.asarray(x)


def test_pygpukit_array_backend(backend: str) -> None:
    with dask.config.set({"array.backend": "pygpukit"}):
        made = {"ones": da.ones((10, 6), chunks=4, dtype=np.float32),
                "zeros": da.zeros(7, chunks=3, dtype=np.int32),
                "full": da.full((5, 6), 2.5, chunks=(2, 4)),
                "arange": da.arange(0, 20, 3, chunks=3)}
        empty = da.empty((4, 4), chunks=2)
        with pytest.raises(NotImplementedError, match="map_blocks"):
            da.random.default_rng(0)
        with pytest.raises(ValueError, match="order"):
            da.ones((2, 2), chunks=1, order="F")
    expected = {"ones": np.ones((10, 6), np.float32), "zeros": np.zeros(7, np.int32),
                "full": np.full((5, 6), 2.5), "arange": np.arange(0, 20, 3)}
    for name, arr in made.items():
        assert isinstance(arr._meta, gp.GPUArray), name
        got = arr.compute(scheduler="threads")
        assert isinstance(got, gp.GPUArray) and got.dtype == expected[name].dtype, name
        np.testing.assert_array_equal(got.to_numpy(), expected[name])
    assert isinstance(empty.compute(), gp.GPUArray) and empty.dtype == np.float64
    a = _data((9, 5), 7)
    moved = da.from_array(a, chunks=4).to_backend("pygpukit")
    assert isinstance(moved._meta, gp.GPUArray) and moved.to_backend("pygpukit") is moved
    _check((moved * 2).sum(axis=1).compute(), (a.astype(np.float64) * 2).sum(axis=1))
    back = moved.to_backend("numpy").compute()
    assert type(back) is np.ndarray
    np.testing.assert_array_equal(back, a)


def test_backend_entry_point_is_declared() -> None:
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert '[project.entry-points."dask.array.backends"]' in pyproject
    assert 'pygpukit = "pygpukit.dask:PyGPUkitBackendEntrypoint"' in pyproject


def test_import_pygpukit_does_not_import_dask_and_registers_after_it() -> None:
    code = ("import sys, pygpukit; assert 'dask' not in sys.modules, 'dask imported';"
            "import dask, importlib; importlib.reload(pygpukit);"
            "from dask.array.dispatch import concatenate_lookup;"
            "assert concatenate_lookup.dispatch(pygpukit.GPUArray).__module__ == 'pygpukit.dask'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# -- distributed LocalCluster of worker processes --------------------------------------------------
@pytest.fixture(scope="module")
def clusters() -> Iterator[dict[str, Any]]:
    """One LocalCluster (and Client) per backend, started on first use, closed at the end."""
    made: dict[str, Any] = {}
    yield made
    for client, cluster in made.values():
        client.close()
        cluster.close()


@pytest.fixture
def client(backend: str, clusters: dict[str, Any]) -> Any:
    """A client of worker processes running PyGPUkit on ``backend``: two workers on the CPU
    simulation, one per GPU (here: one) on CUDA; loopback only."""
    if backend not in clusters:
        cluster = distributed.LocalCluster(
            n_workers=2 if backend == "cpu" else 1, threads_per_worker=1, processes=True,
            host="127.0.0.1", dashboard_address=":0", env={"PYGPUKIT_BACKEND": backend},
            worker_class=distributed.Nanny)
        clusters[backend] = (distributed.Client(cluster), cluster)
    c = clusters[backend][0]
    assert set(c.run(gp.backend).values()) == {backend}
    return c


DISTRIBUTED = ("square_sum", "mean_axis1", "std", "argmax_axis0", "matmul", "tensordot",
               "rechunk", "slicing", "concatenate", "topk")


@pytest.mark.parametrize("name", DISTRIBUTED)
def test_workloads_distributed(client: Any, name: str) -> None:
    a, b = _data(SHAPE, 2), _data(SHAPE, 3)
    x, y = _arrays(a, b)
    result = client.compute(WORKLOADS[name][0](x, y)).result()
    _check(result, _expected(name, a, b), rtol=1e-4, atol=1e-4)


def test_chunks_stay_on_workers_and_move_between_them(client: Any) -> None:
    a = _data((64, 64), 4)
    x = da.from_array(a, chunks=(16, 64)).map_blocks(gp.asarray, meta=gpd.chunk_meta(2))
    x = client.persist(x)
    distributed.wait(x)
    kinds = client.run(lambda dask_worker: sorted({type(v).__name__ for v in
                                                   dask_worker.data.values()}))
    assert "GPUArray" in set().union(*map(set, kinds.values()))
    # a transpose product needs every chunk on one worker: they travel serialized
    _check(client.compute(x.T @ x).result(), a.astype(np.float64).T @ a.astype(np.float64),
           rtol=1e-4, atol=1e-3)


@pytest.mark.sched
@pytest.mark.skipif(_NO_SCHED is not None, reason=_NO_SCHED or "")
def test_partition_plugin_runs_tasks_in_a_burstable_partition(client: Any) -> None:
    plugin = gpd.PartitionPlugin("dask-job", memory=256 << 20, memory_request=64 << 20,
                                 qos="burstable")
    client.register_plugin(plugin)
    try:
        def inside() -> tuple[str | None, str, int]:
            p = gp.current_partition()
            keep = gp.ones((1 << 20,), dtype=np.float32)  # 4 MiB charged to the partition
            stats = p.memory_stats() if p is not None else {}
            del keep
            return (None if p is None else p.name, "" if p is None else p.tier,
                    stats.get("allocated_bytes", 0))

        futures = [client.submit(inside, pure=False, workers=[w])
                   for w in client.scheduler_info()["workers"]]
        for name, tier, allocated in client.gather(futures):
            assert name == "dask-job"
            assert tier == "burstable"
            assert allocated >= 4 << 20
        a = _data(SHAPE, 5)
        x, _ = _arrays(a, a)
        _check(client.compute((x ** 2).sum()).result(), (a.astype(np.float64) ** 2).sum(),
               rtol=1e-4)
    finally:
        client.unregister_worker_plugin(plugin.name)
    assert all(v is None for v in client.run(gp.current_partition).values())
    names = client.run(lambda: [p.name for p in gp.list_partitions()])
    assert all("dask-job" not in v for v in names.values())
    # the workers run tasks again outside any partition
    outside = [client.submit(lambda: gp.current_partition() is None, pure=False, workers=[w])
               for w in client.scheduler_info()["workers"]]
    assert all(client.gather(outside))
    with pytest.raises(ValueError, match="non-empty"):
        gpd.PartitionPlugin("")


def test_local_gpu_cluster_gives_each_worker_its_device() -> None:
    assert gpd.visible_devices(0, ["0", "1", "2"]) == "0,1,2"
    assert gpd.visible_devices(2, ["0", "1", "2"]) == "2,0,1"
    with pytest.raises(TypeError, match="n_workers"):
        gpd.LocalGPUCluster([0], n_workers=2)
    with pytest.raises(ValueError, match="distinct"):
        gpd.LocalGPUCluster([0, 0])
    # Two "GPUs" on the CPU simulation: the environment is what a two-GPU host would get.
    # On a one-GPU machine CUDA_VISIBLE_DEVICES="1,0" names a GPU that is not there:
    # distributed's NVML monitor (where pynvml is installed) fails that worker's start, so it
    # is off for these simulated workers (the Nanny passes this process's Dask config on).
    with dask.config.set({"distributed.diagnostics.nvml": False}), \
            gpd.LocalGPUCluster([0, 1], env={"PYGPUKIT_BACKEND": "cpu"}, host="127.0.0.1",
                                dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as c:
        c.wait_for_workers(2, timeout=120)
        seen = c.run(lambda: (os.environ["CUDA_VISIBLE_DEVICES"], gp.backend()))
        assert sorted(seen.values()) == [("0,1", "cpu"), ("1,0", "cpu")]
        assert sorted(str(w["name"]) for w in c.scheduler_info()["workers"].values()) == \
            ["0", "1"]
        a = _data(SHAPE, 6)
        x, _ = _arrays(a, a)
        _check(c.compute(x.sum(axis=0)).result(), a.astype(np.float64).sum(axis=0), rtol=1e-4,
               atol=1e-4)
        with pytest.raises(ValueError, match="every device"):
            cluster.new_worker_spec()
