"""NVRTC for PyGPUkit: find NVIDIA's runtime compiler and report what it is.

NVRTC comes from NVIDIA's ``nvidia-cuda-nvrtc`` wheel (a dependency of this package) and is found
through ``cuda-pathfinder``; ``PYGPUKIT_NVRTC_PATH`` overrides the search.  Loading is lazy: the
first call that needs NVRTC loads it, importing this module does not.
"""

from __future__ import annotations

from pygpukit_nvrtc._cache import CacheEntry, CacheWarning, cache_dir
from pygpukit_nvrtc._cache import clear as clear_cache
from pygpukit_nvrtc._cache import entries as cache_entries
from pygpukit_nvrtc._errors import NvrtcError, NvrtcUnavailableError
from pygpukit_nvrtc._loader import (
    found_via,
    is_available,
    path,
    supported_archs,
    unavailable_reason,
    version,
)

__version__ = "0.3.0.dev0"

from pygpukit_nvrtc._program import CompileError, CompileResult, compile

__all__ = [
    "CacheEntry",
    "CacheWarning",
    "CompileError",
    "CompileResult",
    "NvrtcError",
    "NvrtcUnavailableError",
    "__version__",
    "cache_dir",
    "cache_entries",
    "clear_cache",
    "compile",
    "found_via",
    "is_available",
    "path",
    "supported_archs",
    "unavailable_reason",
    "version",
]
