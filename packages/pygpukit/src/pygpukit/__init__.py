"""PyGPUkit: a micro-runtime for GPU computing from Python that needs only the NVIDIA driver.

``GPUArray`` is a NumPy-like array in GPU memory; operations run precompiled kernels from
``pygpukit-kernels`` and never synchronize behind your back.  Without a GPU (or with
``PYGPUKIT_BACKEND=cpu``) the same API runs on a CPU simulation backend built on NumPy.

Examples
--------
>>> import numpy as np
>>> import pygpukit as gp
>>> x = gp.from_numpy(np.arange(4, dtype=np.float32))
>>> (x + gp.ones(4)).to_numpy()
array([1., 2., 3., 4.], dtype=float32)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.3.0.dev0"

from pygpukit._versions import check_siblings

check_siblings(__version__)

from pygpukit import _indexing, _ops  # noqa: E402
from pygpukit import random as random  # noqa: E402  (gp.random.default_rng)
from pygpukit._array import GPUArray  # noqa: E402
from pygpukit._creation import (  # noqa: E402
    arange,
    asarray,
    ascontiguousarray,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    to_numpy,
    zeros,
    zeros_like,
)
from pygpukit._device import Device, device_count, synchronize  # noqa: E402
from pygpukit._dlpack import from_dlpack  # noqa: E402
from pygpukit._dtypes import (  # noqa: E402
    ALL_DTYPES,
    COMPLEX_DTYPES,
    FP8_DTYPES,
    SUPPORTED_DTYPES,
    bfloat16,
    bool_,
    complex64,
    complex128,
    float8_e4m3fn,
    float8_e5m2,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from pygpukit._errors import (  # noqa: E402
    AdmissionError,
    BackendUnavailableError,
    GraphCaptureError,
    KernelLaunchError,
    OutOfMemoryError,
    PartitionMemoryError,
    PyGPUkitError,
)
from pygpukit._fp8 import FP8_MAX, dequantize_fp8, quantize_fp8  # noqa: E402
from pygpukit._graph import Graph, graph  # noqa: E402
from pygpukit._index_errors import get_index_check, index_check, set_index_check  # noqa: E402
from pygpukit._indexing import *  # noqa: E402,F403
from pygpukit._jit import BoundLaunch, JITKernel, JITModule, jit  # noqa: E402
from pygpukit._linalg import (  # noqa: E402
    get_matmul_precision,
    linear,
    matmul,
    set_matmul_precision,
)
from pygpukit._memory import (  # noqa: E402
    empty_cache,
    memory_allocated,
    memory_reserved,
    memory_stats,
    reset_peak_memory_stats,
    set_memory_limit,
)
from pygpukit._ops import *  # noqa: E402,F403
from pygpukit._partition import (  # noqa: E402
    Partition,
    Task,
    configure_partitions,
    create_partition,
    current_partition,
    delete_partition,
    get_partition,
    list_partitions,
    partition,
    task,
)
from pygpukit._runtime import (  # noqa: E402
    backend,
    get_nvrtc_path,
    get_nvrtc_version,
    is_cuda_available,
    is_nvrtc_available,
)
from pygpukit._sorting import (  # noqa: E402
    argsort,
    bincount,
    cumprod,
    cumsum,
    diff,
    histogram,
    searchsorted,
    sort,
    topk,
    unique,
)
from pygpukit._spill import spill_log  # noqa: E402
from pygpukit._stream import Event, Stream, current_stream, stream_priority_range  # noqa: E402

if TYPE_CHECKING:
    from pygpukit import distributed as distributed  # loaded on first use (__getattr__)
    from pygpukit_driver import CudaError, CudaOutOfMemoryError

# NumPy protocols (NEP 13/18), the standard's functions, linear algebra on the GEMMs, einsum, and
# the Array API namespace (pygpukit.array_api).
from pygpukit import _elementwise, _linalg_extra, _protocols, array_api, linalg  # noqa: E402,F401
from pygpukit._array_api import (  # noqa: E402
    __array_namespace_info__,
    broadcast_arrays,
    broadcast_to,
    can_cast,
    concat,
    count_nonzero,
    finfo,
    iinfo,
    isdtype,
    meshgrid,
    moveaxis,
    permute_dims,
    result_type,
    unstack,
)
from pygpukit._complex import angle, conj, conjugate, imag, iscomplexobj, real  # noqa: E402
from pygpukit._einsum import einsum  # noqa: E402
from pygpukit._elementwise import *  # noqa: E402,F403
from pygpukit._linalg_extra import *  # noqa: E402,F403

# Loading the driver library is deferred until these are asked for.
_LAZY_FROM_DRIVER = ("CudaError", "CudaOutOfMemoryError")


def __getattr__(name: str) -> object:
    if name in _LAZY_FROM_DRIVER:
        import pygpukit_driver

        return getattr(pygpukit_driver, name)
    if name == "distributed":  # NCCL (the nccl extra): imported on first use only
        import importlib

        return importlib.import_module("pygpukit.distributed")
    raise AttributeError(f"module 'pygpukit' has no attribute {name!r}")


__all__ = [
    *_ops.__all__,
    *_indexing.__all__,
    *_elementwise.__all__,
    *_linalg_extra.__all__,
    "__array_namespace_info__", "array_api", "broadcast_arrays", "broadcast_to", "can_cast",
    "concat", "count_nonzero", "einsum", "finfo", "iinfo", "isdtype", "linalg", "meshgrid",
    "moveaxis", "permute_dims", "result_type", "unstack",
    "SUPPORTED_DTYPES", "COMPLEX_DTYPES", "ALL_DTYPES", "complex64", "complex128",
    "FP8_DTYPES", "FP8_MAX", "float8_e4m3fn", "float8_e5m2", "quantize_fp8", "dequantize_fp8",
    "angle", "conj", "conjugate", "imag", "iscomplexobj", "real",
    "AdmissionError",
    "BackendUnavailableError",
    "BoundLaunch",
    "CudaError",
    "CudaOutOfMemoryError",
    "Device",
    "Event",
    "GPUArray",
    "Graph",
    "GraphCaptureError",
    "KernelLaunchError",
    "OutOfMemoryError",
    "Partition",
    "PartitionMemoryError",
    "PyGPUkitError",
    "Stream",
    "Task",
    "__version__",
    "arange",
    "asarray",
    "ascontiguousarray",
    "backend",
    "bfloat16",
    "bool_",
    "configure_partitions",
    "create_partition",
    "current_partition",
    "current_stream",
    "delete_partition",
    "device_count",
    "empty",
    "empty_cache",
    "empty_like",
    "eye",
    "float16",
    "float32",
    "float64",
    "from_dlpack",
    "from_numpy",
    "full",
    "full_like",
    "get_partition",
    "get_index_check",
    "get_matmul_precision",
    "graph",
    "get_nvrtc_path",
    "get_nvrtc_version",
    "jit",
    "JITKernel",
    "JITModule",
    "int8",
    "int16",
    "int32",
    "int64",
    "index_check",
    "is_cuda_available",
    "is_nvrtc_available",
    "linear",
    "linspace",
    "list_partitions",
    "matmul",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "ones",
    "ones_like",
    "partition",
    "reset_peak_memory_stats",
    "set_index_check",
    "set_matmul_precision",
    "set_memory_limit",
    "spill_log",
    "stream_priority_range",
    "synchronize",
    "task",
    "to_numpy",
    "uint8",
    "zeros",
    "zeros_like",
    # sort and scan (pygpukit._sorting)
    "argsort",
    "bincount",
    "cumprod",
    "cumsum",
    "diff",
    "histogram",
    "searchsorted",
    "sort",
    "topk",
    "unique",
]

# Dask: in a process that has imported dask (every Dask worker), register GPUArray with it
# (dask.array dispatch, sizeof, distributed serialization); elsewhere `import pygpukit.dask`.
# `import pygpukit` itself never imports dask.
import sys as _sys  # noqa: E402

if "dask" in _sys.modules:
    from pygpukit import dask as _dask  # noqa: F401
