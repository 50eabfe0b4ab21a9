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

from pygpukit._array import GPUArray  # noqa: E402
from pygpukit._dtypes import (  # noqa: E402
    SUPPORTED_DTYPES,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from pygpukit._errors import BackendUnavailableError, KernelLaunchError  # noqa: E402
from pygpukit._ops import (  # noqa: E402
    add,
    empty,
    from_numpy,
    ones,
    synchronize,
    to_numpy,
    zeros,
)
from pygpukit._runtime import (  # noqa: E402
    backend,
    get_nvrtc_path,
    is_cuda_available,
    is_nvrtc_available,
)

if TYPE_CHECKING:
    from pygpukit_driver import CudaError, CudaOutOfMemoryError

# Loading the driver library is deferred until these are asked for.
_LAZY_FROM_DRIVER = ("CudaError", "CudaOutOfMemoryError")


def __getattr__(name: str) -> object:
    if name in _LAZY_FROM_DRIVER:
        import pygpukit_driver

        return getattr(pygpukit_driver, name)
    raise AttributeError(f"module 'pygpukit' has no attribute {name!r}")


__all__ = [
    "SUPPORTED_DTYPES",
    "BackendUnavailableError",
    "CudaError",
    "CudaOutOfMemoryError",
    "GPUArray",
    "KernelLaunchError",
    "__version__",
    "add",
    "backend",
    "bfloat16",
    "bool_",
    "empty",
    "float16",
    "float32",
    "float64",
    "from_numpy",
    "get_nvrtc_path",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_cuda_available",
    "is_nvrtc_available",
    "ones",
    "synchronize",
    "to_numpy",
    "uint8",
    "zeros",
]
