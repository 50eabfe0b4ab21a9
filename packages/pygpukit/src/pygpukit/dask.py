"""Dask integration: GPUArrays as the chunks of ``dask.array``, moved and spilled by Dask.

``import pygpukit.dask`` (or importing ``pygpukit`` in a process where ``dask`` is already
imported, as in every Dask worker) registers what Dask looks up per chunk type, the way Dask
itself does for CuPy (``dask/array/backends.py``, ``distributed/protocol/cupy.py``):

* ``dask.array`` dispatch: ``concatenate_lookup``, ``tensordot_lookup``, ``einsum_lookup``,
  ``take_lookup``, ``empty_lookup``, ``numel_lookup`` and ``to_numpy_dispatch`` for
  :class:`~pygpukit.GPUArray` (everything else reaches PyGPUkit through NumPy's protocols,
  NEP 13/18).  ``da.percentile`` merges the chunks' percentiles with NumPy: run it on
  ``x.map_blocks(pygpukit.to_numpy)``;
* ``dask.sizeof.sizeof``: a GPUArray's ``nbytes`` (Dask's memory accounting and spilling);
* ``distributed``'s ``dask`` serialization family: a header (shape, dtype) and one frame of
  the elements' host bytes in C order; the ``pickle`` family works through GPUArray's own
  pickling (``copyreg``: a host copy, rebuilt on the unpickling process's current device).
  A chunk stays on its worker's device between tasks; it is copied to the host only to move
  to another worker or to be spilled by Dask.

It also registers the ``pygpukit`` array backend (:class:`PyGPUkitBackendEntrypoint`, also
the package's ``dask.array.backends`` entry point): with ``dask.config.set({"array.backend":
"pygpukit"})`` Dask's creation functions make GPUArray chunks, and ``x.to_backend("pygpukit")``
moves NumPy chunks to the device.

With ``distributed``: :class:`LocalGPUCluster` starts one worker process per GPU (as dask-cuda
does), and :class:`PartitionPlugin` runs every task of a worker inside a PyGPUkit partition
(``pygpukit-sched``), so a Dask job can be a Burstable or BestEffort tenant beside a Guaranteed
service on the same GPU.  docs/scale-out.md shows the commands.

Examples
--------
::

    import dask.array as da, numpy as np, pygpukit as gp, pygpukit.dask
    x = gp.asarray(np.arange(12.0).reshape(3, 4))
    d = da.from_array(x, chunks=(2, 2), asarray=False, meta=gp.empty((0, 0), x.dtype))
    (d ** 2).sum().compute()            # a 0-d GPUArray
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import math
from typing import Any

import dask.array as _da
import numpy as np
from dask import config as _dask_config
from dask.array import dispatch as _dispatch
from dask.array.backends import ArrayBackendEntrypoint as _ArrayBackendEntrypoint
from dask.array.backends import array_creation_dispatch as _creation_dispatch
from dask.sizeof import sizeof as _sizeof
from dask.utils import Dispatch as _Dispatch

from pygpukit import _creation, _einsum, _indexing, _linalg_extra, _ops, _partition
from pygpukit._array import GPUArray
from pygpukit._device import device_count
from pygpukit._dtypes import normalize_dtype

__all__ = ["LocalGPUCluster", "PartitionPlugin", "PyGPUkitBackendEntrypoint", "chunk_meta",
           "from_array", "register", "to_pygpukit_dispatch", "visible_devices"]

_registered = False


# -- dask.array dispatch ---------------------------------------------------------------------------
def _concatenate(arrays: Any, axis: int = 0) -> GPUArray:
    return _ops.concatenate(list(arrays), axis)


def _tensordot(a: GPUArray, b: GPUArray, axes: Any = 2) -> GPUArray:
    return _linalg_extra.tensordot(a, b, axes)


def _einsum_chunk(*operands: Any, **kwargs: Any) -> GPUArray:
    # Dask passes NumPy's ``casting`` / ``order``; PyGPUkit's einsum computes in the
    # operands' result dtype, C order, and takes ``dtype`` / ``optimize`` as NumPy does.
    kwargs.pop("casting", None)
    kwargs.pop("order", None)
    dtype = kwargs.pop("dtype", None)
    result = _einsum.einsum(*operands, **kwargs)
    return result if dtype is None else result.astype(dtype, copy=False)


def _take(a: GPUArray, indices: Any, axis: int | None = None) -> GPUArray:
    return _indexing.take(a, indices, axis=axis)


def _empty(shape: Any, dtype: Any = None, **kwargs: Any) -> GPUArray:
    if kwargs.get("order", "C") != "C":
        raise ValueError(f"empty: order={kwargs['order']!r}: GPUArrays are C-ordered here")
    return _creation.empty(shape, np.dtype(float) if dtype is None else dtype)


def _numel(x: GPUArray, **kwargs: Any) -> GPUArray | np.floating[Any]:
    """Elements reduced over ``axis`` per output element (Dask's ``mean``/``var`` count).

    A GPUArray (a NumPy scalar for a whole-array count), so the chunk's moments stay on the
    device.
    """
    dtype = kwargs.get("dtype", np.float64) or np.float64
    keepdims = bool(kwargs.get("keepdims", False))
    axis = kwargs.get("axis")
    if axis is None:
        count = math.prod(x.shape)
        if not keepdims:
            return np.dtype(dtype).type(count)  # type: ignore[no-any-return]
        return _creation.full((1,) * x.ndim, count, dtype)
    axes = {a % x.ndim for a in (axis if isinstance(axis, (tuple, list)) else (axis,))}
    count = math.prod(x.shape[a] for a in axes)
    shape = tuple(1 if d in axes else n for d, n in enumerate(x.shape) if keepdims or d not in axes)
    return _creation.full(shape, count, dtype)


def _to_numpy(data: GPUArray, **kwargs: Any) -> np.ndarray[Any, Any]:
    return data.to_numpy()


def _sizeof_gpuarray(x: GPUArray) -> int:
    return int(x.nbytes)


def _register_distributed() -> None:
    try:
        from distributed.protocol.serialize import dask_deserialize, dask_serialize
    except ImportError:  # dask without distributed: nothing to serialize for
        return

    @dask_serialize.register(GPUArray)  # type: ignore[untyped-decorator]
    def _serialize(x: GPUArray) -> tuple[dict[str, Any], list[memoryview]]:
        host = x.to_numpy()
        host = host if host.flags.c_contiguous else host.copy(order="C")  # keeps 0-d arrays
        header = {"shape": list(host.shape), "dtype": host.dtype.name,
                  "strides": list(host.strides)}
        return header, [host.reshape(-1).view(np.uint8).data]

    @dask_deserialize.register(GPUArray)  # type: ignore[untyped-decorator]
    def _deserialize(header: dict[str, Any], frames: list[Any]) -> GPUArray:
        (frame,) = frames
        dtype = normalize_dtype(header["dtype"])
        host = np.frombuffer(frame, dtype=np.uint8).view(dtype).reshape(header["shape"])
        return _creation.from_numpy(host)


def register() -> None:
    """Register GPUArray with ``dask.array``, ``dask.sizeof`` and ``distributed`` (idempotent).

    Called when this module is imported; calling it again does nothing.
    """
    global _registered
    if _registered:
        return
    _dispatch.concatenate_lookup.register(GPUArray, _concatenate)
    _dispatch.tensordot_lookup.register(GPUArray, _tensordot)
    _dispatch.einsum_lookup.register(GPUArray, _einsum_chunk)
    _dispatch.take_lookup.register(GPUArray, _take)
    _dispatch.empty_lookup.register(GPUArray, _empty)
    _dispatch.numel_lookup.register(GPUArray, _numel)
    _dispatch.to_numpy_dispatch.register(GPUArray, _to_numpy)
    _dispatch.to_cupy_dispatch.register(GPUArray, _to_cupy)
    to_pygpukit_dispatch.register(GPUArray, lambda data, **kwargs: data)
    _sizeof.register(GPUArray, _sizeof_gpuarray)
    _creation_dispatch.register_backend("pygpukit", PyGPUkitBackendEntrypoint())
    _register_distributed()
    _registered = True


# -- the "pygpukit" array backend -----------------------------------------------------------------
#: ``x.to_backend("pygpukit")``: a chunk of another backend -> a GPUArray.
to_pygpukit_dispatch = _Dispatch("to_pygpukit_dispatch")


@to_pygpukit_dispatch.register(object)  # type: ignore[untyped-decorator]
def _to_pygpukit(data: Any, **kwargs: Any) -> GPUArray:
    # NumPy chunks are copied to the device; CuPy's / torch's through their CUDA array
    # interface or DLPack (zero-copy on the same device).
    return _creation.asarray(data, **kwargs)


def _to_cupy(data: GPUArray, **kwargs: Any) -> Any:
    # ``x.to_backend("cupy")``: through the CUDA array interface (zero-copy).
    return importlib.import_module("cupy").asarray(data, **kwargs)


def _filled_block(value: Any, kind: Any, block_info: Any = None) -> GPUArray:
    shape = block_info[None]["chunk-shape"]
    if value is None:
        return _creation.empty(shape, kind)
    return _creation.full(shape, value, kind)


def _filled(shape: Any, value: Any, dtype: Any, chunks: Any = "auto", name: Any = None,
            **kwargs: Any) -> _da.Array:
    from dask.array.core import normalize_chunks

    if kwargs.pop("order", "C") != "C":
        raise ValueError("pygpukit backend: only order='C' arrays")
    kwargs.pop("meta", None)
    kwargs.pop("like", None)
    if kwargs:
        raise TypeError(f"pygpukit backend: unexpected arguments {sorted(kwargs)}")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    dt = normalize_dtype(np.float64 if dtype is None else dtype)
    blocks = normalize_chunks(chunks, shape, dtype=dt)
    return _da.map_blocks(_filled_block, value=value, kind=dt, dtype=dt, chunks=blocks,
                          meta=chunk_meta(len(shape), dt), name=name)


class PyGPUkitBackendEntrypoint(_ArrayBackendEntrypoint):  # type: ignore[misc]
    """``dask.config.set({"array.backend": "pygpukit"})``: dask.array makes GPUArray chunks.

    ``da.ones / zeros / empty / full / arange`` then create GPUArray chunks on the workers'
    devices, and ``x.to_backend("pygpukit")`` moves a NumPy- (or CuPy-) chunked array onto
    them.  Registered as the ``dask.array.backends`` entry point ``pygpukit`` of the package
    and when :mod:`pygpukit.dask` is imported.  Dask's ``RandomState`` and bit generators are
    NumPy's API, which PyGPUkit does not copy: generate chunks with ``map_blocks`` and
    ``pygpukit.random.default_rng([seed, block_index])`` (examples/dask_out_of_core.py).
    """

    @classmethod
    def to_backend_dispatch(cls) -> Any:
        """The dispatch that converts one chunk to a GPUArray."""
        return to_pygpukit_dispatch

    @classmethod
    def to_backend(cls, data: _da.Array, **kwargs: Any) -> _da.Array:
        """``data`` with GPUArray chunks (itself when they already are)."""
        if isinstance(data._meta, GPUArray):
            return data
        return data.map_blocks(to_pygpukit_dispatch, meta=chunk_meta(data.ndim, data.dtype),
                               **kwargs)

    @property
    def RandomState(self) -> Any:  # noqa: N802 - Dask's name
        """Not provided (see the class notes)."""
        raise NotImplementedError(
            "the pygpukit dask backend has no RandomState: generate chunks with map_blocks "
            "and pygpukit.random.default_rng([seed, block_index])")

    @property
    def default_bit_generator(self) -> Any:
        """Not provided (see the class notes)."""
        raise NotImplementedError(
            "the pygpukit dask backend has no NumPy bit generator: generate chunks with "
            "map_blocks and pygpukit.random.default_rng([seed, block_index])")

    @staticmethod
    def ones(shape: Any, *, dtype: Any = None, meta: Any = None, **kwargs: Any) -> _da.Array:
        """Chunks of ones."""
        return _filled(shape, 1, dtype, **kwargs)

    @staticmethod
    def zeros(shape: Any, *, dtype: Any = None, meta: Any = None, **kwargs: Any) -> _da.Array:
        """Chunks of zeros."""
        return _filled(shape, 0, dtype, **kwargs)

    @staticmethod
    def empty(shape: Any, *, dtype: Any = None, meta: Any = None, **kwargs: Any) -> _da.Array:
        """Uninitialized chunks."""
        return _filled(shape, None, dtype, **kwargs)

    @staticmethod
    def full(shape: Any, fill_value: Any, *, dtype: Any = None, meta: Any = None,
             **kwargs: Any) -> _da.Array:
        """Chunks filled with ``fill_value``.

        ``fill_value`` is a scalar; its NumPy dtype is the result's when ``dtype`` is omitted.
        """
        if np.ndim(fill_value) != 0:
            raise ValueError("full: fill_value must be a scalar; got "
                             f"{type(fill_value).__name__}")
        if dtype is None:
            dtype = np.asarray(fill_value).dtype
        return _filled(shape, fill_value, dtype, **kwargs)

    @staticmethod
    def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None,
               meta: Any = None, **kwargs: Any) -> _da.Array:
        """``da.arange`` with GPUArray chunks (each made on the device)."""
        kwargs.pop("like", None)
        with _dask_config.set({"array.backend": "numpy"}):
            return _da.arange(start, stop, step, dtype=dtype,
                              like=_creation.empty((0,), np.float32), **kwargs)


# -- helpers ---------------------------------------------------------------------------------------
def chunk_meta(ndim: int, dtype: Any = np.float32) -> GPUArray:
    """The ``meta`` of a dask array with GPUArray chunks: an empty GPUArray of ``ndim`` dims.

    Pass it as ``meta=`` to ``da.from_array``, ``map_blocks`` or ``from_delayed`` so that Dask
    knows the chunk type without calling the function on fake data.
    """
    if not isinstance(ndim, int) or isinstance(ndim, bool) or ndim < 0:
        raise ValueError(f"chunk_meta: ndim must be a non-negative int; got {ndim!r}")
    return _creation.empty((0,) * ndim, dtype)


def from_array(x: GPUArray, chunks: Any = "auto", **kwargs: Any) -> _da.Array:
    """``dask.array.from_array(x, chunks, asarray=False, meta=<empty GPUArray>)``.

    Each chunk is a view of ``x`` (basic slicing), on ``x``'s device.  Keyword arguments go to
    ``dask.array.from_array``.
    """
    if not isinstance(x, GPUArray):
        raise TypeError(f"from_array: x must be a pygpukit.GPUArray; got {type(x).__name__} "
                        "(for NumPy data: dask.array.from_array(data, chunks)"
                        ".map_blocks(pygpukit.asarray))")
    kwargs.setdefault("asarray", False)
    kwargs.setdefault("meta", chunk_meta(x.ndim, x.dtype))
    return _da.from_array(x, chunks=chunks, **kwargs)


# -- distributed: a partition per worker -----------------------------------------------------------
try:
    from distributed import LocalCluster as _LocalCluster
    from distributed import WorkerPlugin as _WorkerPlugin
    from distributed.threadpoolexecutor import ThreadPoolExecutor as _DaskThreadPool
except ImportError:  # pragma: no cover - exercised only without distributed
    _LocalCluster = object
    _WorkerPlugin = object
    _DaskThreadPool = None


def _in_partition(name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    with _partition.partition(name):
        return fn(*args, **kwargs)


if _DaskThreadPool is not None:
    class PartitionThreadPoolExecutor(_DaskThreadPool):  # type: ignore[misc]
        """A worker's task thread pool whose tasks run inside the partition ``name``."""

        def __init__(self, name: str, max_workers: int, thread_name_prefix: str) -> None:
            super().__init__(max_workers, thread_name_prefix=thread_name_prefix)
            self.partition_name = name

        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            return super().submit(_in_partition, self.partition_name, fn, *args, **kwargs)


class PartitionPlugin(_WorkerPlugin):  # type: ignore[misc]
    """A ``distributed`` worker plugin: each worker's tasks run in a PyGPUkit partition.

    On each worker (its current device) it creates the partition
    ``gp.create_partition(name, memory=..., memory_request=..., compute=..., qos=...,
    priority=...)`` and replaces the worker's default task thread pool by one that enters
    the partition around every task, so every GPUArray a task allocates is charged to it and
    every kernel runs on its stream.  ``client.register_plugin(PartitionPlugin("dask",
    memory=8 << 30, qos="burstable"))`` makes a Dask job a Burstable tenant.  Needs
    ``pygpukit-sched`` on the workers (``pip install 'pygpukit[sched]'``).

    Parameters
    ----------
    name
        The partition's name on each worker's device.
    memory, memory_request, compute, qos, priority
        As for :func:`pygpukit.create_partition`.
    """

    def __init__(self, name: str = "dask", *, memory: int | None = None,
                 memory_request: int | None = None, compute: float | None = None,
                 qos: str | None = None, priority: int = 0) -> None:
        if _DaskThreadPool is None:
            raise ImportError("PartitionPlugin needs the distributed package "
                              "(pip install distributed)")
        if not isinstance(name, str) or not name:
            raise ValueError(f"PartitionPlugin: name must be a non-empty str; got {name!r}")
        self.name = f"pygpukit-partition-{name}"
        self.partition_name = name
        self.options: dict[str, Any] = {"memory": memory, "memory_request": memory_request,
                                        "compute": compute, "qos": qos, "priority": priority}

    def setup(self, worker: Any) -> None:
        """Create the partition on the worker's device and wrap its task thread pool."""
        _partition.create_partition(self.partition_name, **self.options)
        old = worker.executors["default"]
        worker.executors["default"] = PartitionThreadPoolExecutor(
            self.partition_name, worker.state.nthreads,
            thread_name_prefix=f"Dask-Partition-{self.partition_name}-Threads")
        old.shutdown(wait=False)

    def teardown(self, worker: Any) -> None:
        """Give the worker a plain task thread pool again and delete the partition.

        The partition's live arrays stay valid, charged to nobody.
        """
        ours = worker.executors.get("default")
        if isinstance(ours, PartitionThreadPoolExecutor):
            worker.executors["default"] = _DaskThreadPool(
                worker.state.nthreads, thread_name_prefix="Dask-Default-Threads")
            ours.shutdown(wait=False)
        # KeyError: already deleted by the user's own code on the worker.
        with contextlib.suppress(KeyError):
            _partition.delete_partition(self.partition_name, force=True)


def visible_devices(index: int, devices: list[str]) -> str:
    """``CUDA_VISIBLE_DEVICES`` for the worker of ``devices[index]``.

    Its device first, then the others in order after it (dask-cuda's order), so device 0 of
    the worker is its GPU and the others stay reachable (peer copies).
    """
    return ",".join(devices[index:] + devices[:index])


class LocalGPUCluster(_LocalCluster):  # type: ignore[misc]
    """A ``distributed.LocalCluster`` with one worker process per GPU, as dask-cuda does.

    Worker ``i`` runs with ``CUDA_VISIBLE_DEVICES`` starting with ``devices[i]``, so PyGPUkit's
    device 0 in that process is its own GPU; every worker has ``threads_per_worker`` threads
    (default 1: one stream of tasks per GPU).  ``memory_limit`` (Dask's, per worker) bounds
    the bytes Dask keeps in memory before it spills to disk; GPUArray chunks count with their
    ``nbytes``, so a limit below the GPU's memory makes Dask spill GPU chunks to the host.

    Parameters
    ----------
    devices
        GPU ordinals (or UUIDs) to start workers on; default: every device PyGPUkit sees
        (``pygpukit.device_count()``; 1 on the CPU simulation).
    threads_per_worker
        Task threads per worker.
    env
        More environment variables for the workers (``PYGPUKIT_BACKEND`` ...).
    **kwargs
        For ``distributed.LocalCluster`` (``memory_limit``, ``host``, ``dashboard_address``,
        ``local_directory`` ...); ``n_workers`` and ``processes`` are set here.
    """

    def __init__(self, devices: list[int | str] | None = None, *, threads_per_worker: int = 1,
                 env: dict[str, str] | None = None, **kwargs: Any) -> None:
        if _DaskThreadPool is None:
            raise ImportError("LocalGPUCluster needs the distributed package "
                              "(pip install distributed)")
        for option in ("n_workers", "processes"):
            if option in kwargs:
                raise TypeError(f"LocalGPUCluster: {option} is set by the cluster (one worker "
                                "process per device); pass devices=")
        if devices is None:
            devices = list(range(device_count()))
        names = [str(d) for d in devices]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"LocalGPUCluster: devices must be distinct and at least one; "
                             f"got {devices!r}")
        self.devices = names
        self._worker_env = dict(env or {})
        super().__init__(n_workers=0, threads_per_worker=threads_per_worker, processes=True,
                         **kwargs)
        self.scale(len(names))
        if not self.asynchronous:
            self.sync(self._correct_state)

    def new_worker_spec(self) -> dict[Any, Any]:
        """The spec of the next worker: the first device without one (scaling up)."""
        free = [d for d in self.devices if d not in self.worker_spec]
        if not free:
            raise ValueError(f"LocalGPUCluster: every device of {self.devices} has a worker")
        spec = copy.deepcopy(self.new_spec)
        options = spec.setdefault("options", {})
        options["env"] = {**options.get("env", {}), **self._worker_env,
                          "CUDA_VISIBLE_DEVICES": visible_devices(self.devices.index(free[0]),
                                                                  self.devices)}
        options["name"] = free[0]
        return {free[0]: spec}


register()
