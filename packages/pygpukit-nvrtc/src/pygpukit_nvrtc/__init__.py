"""NVRTC for PyGPUkit: find NVIDIA's runtime compiler and report what it is.

NVRTC comes from NVIDIA's ``nvidia-cuda-nvrtc`` wheel (a dependency of this package) and is found
through ``cuda-pathfinder``; ``PYGPUKIT_NVRTC_PATH`` overrides the search.  Loading is lazy: the
first call that needs NVRTC loads it, importing this module does not, and a cache hit in a fresh
process does not either (see ``_discovery``: the answer of the last search is kept with the cache).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pygpukit_nvrtc._cache import CacheWarning, cache_dir
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

if TYPE_CHECKING:
    from pygpukit_nvrtc._listing import CacheEntry
    from pygpukit_nvrtc._listing import clear as clear_cache
    from pygpukit_nvrtc._listing import entries as cache_entries

# Listing and clearing the cache load on first use: a cache hit in a fresh process needs neither.
_LAZY = {"CacheEntry": "CacheEntry", "cache_entries": "entries", "clear_cache": "clear"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from pygpukit_nvrtc import _listing

        value = getattr(_listing, _LAZY[name])
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pygpukit_nvrtc' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})

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
