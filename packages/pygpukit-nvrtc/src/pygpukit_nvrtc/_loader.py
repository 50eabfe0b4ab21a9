"""Find and load the NVRTC shared library.

One place decides where NVRTC comes from: ``PYGPUKIT_NVRTC_PATH`` first, then cuda-pathfinder
(NVIDIA's own search: the ``nvidia-cuda-nvrtc`` wheel, conda, the system loader, ``CUDA_HOME``).
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pygpukit_nvrtc._errors import NvrtcError, NvrtcUnavailableError

if TYPE_CHECKING:
    from pygpukit_nvrtc._discovery import Snapshot

ENV_OVERRIDE = "PYGPUKIT_NVRTC_PATH"
_INSTALL_HINT = "install it with `pip install pygpukit[jit]` (brings nvidia-cuda-nvrtc)"


class _Loaded:
    """The loaded library, its absolute path and where it was found (no dataclass: import cost)."""

    __slots__ = ("found_via", "lib", "path")

    def __init__(self, lib: ctypes.CDLL, path: str, found_via: str) -> None:
        self.lib, self.path, self.found_via = lib, path, found_via


_lock = threading.Lock()
_loaded: _Loaded | None = None
_failure: str | None = None
_snapshot: Snapshot | None = None  # the inputs of discovery, taken just before the load


def _library_names() -> tuple[str, ...]:
    if sys.platform == "win32":
        return ("nvrtc64_130_0.dll",)
    return ("libnvrtc.so.13", "libnvrtc.so")


def _load_override(value: str) -> _Loaded:
    candidate = Path(value)
    if candidate.is_dir():
        found = [candidate / n for n in _library_names() if (candidate / n).is_file()]
        if not found:
            raise NvrtcUnavailableError(
                f"{ENV_OVERRIDE}={value} is a folder without any of {list(_library_names())}"
            )
        candidate = found[0]
    elif not candidate.is_file():
        raise NvrtcUnavailableError(f"{ENV_OVERRIDE}={value}: no such file or folder")
    if sys.platform == "win32":
        # nvrtc64_*.dll loads nvrtc-builtins64_*.dll from its own folder; never add the CWD.
        os.add_dll_directory(str(candidate.resolve().parent))
    try:
        lib = ctypes.CDLL(str(candidate))
    except OSError as exc:
        raise NvrtcUnavailableError(f"{ENV_OVERRIDE}={value} could not be loaded: {exc}") from exc
    return _Loaded(lib, str(candidate.resolve()), ENV_OVERRIDE)


def _load_pathfinder() -> _Loaded:
    try:
        from cuda import pathfinder
    except ImportError as exc:
        raise NvrtcUnavailableError(f"cuda-pathfinder is not installed; {_INSTALL_HINT}") from exc
    try:
        dl = pathfinder.load_nvidia_dynamic_lib("nvrtc")
    except pathfinder.DynamicLibNotFoundError as exc:
        raise NvrtcUnavailableError(
            f"NVRTC not found by cuda-pathfinder ({exc}); {_INSTALL_HINT}"
        ) from exc
    if dl.abs_path is None:
        raise NvrtcUnavailableError("cuda-pathfinder loaded NVRTC but cannot tell its path")
    # Already loaded by pathfinder: CDLL on the same path only takes another reference.
    return _Loaded(ctypes.CDLL(dl.abs_path), dl.abs_path, dl.found_via)


def _configure(lib: ctypes.CDLL) -> None:
    p, c_int, size_t = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    char_pp = ctypes.POINTER(ctypes.c_char_p)
    signatures: dict[str, list[Any]] = {
        "nvrtcCreateProgram": [ctypes.POINTER(p), ctypes.c_char_p, ctypes.c_char_p, c_int,
                               char_pp, char_pp],
        "nvrtcDestroyProgram": [ctypes.POINTER(p)],
        "nvrtcAddNameExpression": [p, ctypes.c_char_p],
        "nvrtcCompileProgram": [p, c_int, char_pp],
        "nvrtcGetProgramLogSize": [p, ctypes.POINTER(size_t)],
        "nvrtcGetProgramLog": [p, ctypes.c_char_p],
        "nvrtcGetCUBINSize": [p, ctypes.POINTER(size_t)],
        "nvrtcGetCUBIN": [p, ctypes.c_char_p],
        "nvrtcGetPTXSize": [p, ctypes.POINTER(size_t)],
        "nvrtcGetPTX": [p, ctypes.c_char_p],
        "nvrtcGetLoweredName": [p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)],
    }
    for name, argtypes in signatures.items():
        fn = getattr(lib, name)
        fn.restype = c_int
        fn.argtypes = argtypes
    lib.nvrtcVersion.restype = ctypes.c_int
    lib.nvrtcVersion.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    lib.nvrtcGetErrorString.argtypes = [ctypes.c_int]
    lib.nvrtcGetNumSupportedArchs.restype = ctypes.c_int
    lib.nvrtcGetNumSupportedArchs.argtypes = [ctypes.POINTER(ctypes.c_int)]
    lib.nvrtcGetSupportedArchs.restype = ctypes.c_int
    lib.nvrtcGetSupportedArchs.argtypes = [ctypes.POINTER(ctypes.c_int)]


def _get() -> _Loaded:
    """Load NVRTC once per process; later calls return the same library or the same error."""
    global _loaded, _failure, _snapshot
    with _lock:
        if _loaded is None and _failure is None:
            from pygpukit_nvrtc import _discovery

            _snapshot = _discovery.snapshot()
            override = os.environ.get(ENV_OVERRIDE)
            try:
                loaded = _load_override(override) if override else _load_pathfinder()
                _configure(loaded.lib)
                _loaded = loaded
            except NvrtcUnavailableError as exc:
                _failure = str(exc)
            except (OSError, AttributeError) as exc:
                _failure = f"NVRTC library is unusable ({exc}); {_INSTALL_HINT}"
        if _loaded is None:
            raise NvrtcUnavailableError(_failure)
        return _loaded


def is_loaded() -> bool:
    """Whether NVRTC has been loaded into this process (nothing is loaded by asking)."""
    return _loaded is not None


def library() -> ctypes.CDLL:
    """The loaded NVRTC library (ctypes signatures set); raises NvrtcUnavailableError."""
    return _get().lib


def _check(api: str, code: int) -> None:
    if code != 0:
        message = _get().lib.nvrtcGetErrorString(code)
        raise NvrtcError(api, code, message.decode() if message else "unknown error")


def is_available() -> bool:
    """Return whether NVRTC can be loaded; never raises."""
    try:
        _get()
    except NvrtcUnavailableError:
        return False
    return True


def unavailable_reason() -> str | None:
    """Return why NVRTC cannot be loaded, or ``None`` when it can."""
    try:
        _get()
    except NvrtcUnavailableError as exc:
        return str(exc)
    return None


def path() -> str:
    """Return the absolute path of the loaded NVRTC library.

    Raises
    ------
    NvrtcUnavailableError
        If NVRTC cannot be loaded.
    """
    return _get().path


def found_via() -> str:
    """Return where NVRTC was found (``"site-packages"``, ``"PYGPUKIT_NVRTC_PATH"``, ...)."""
    return _get().found_via


def version() -> tuple[int, int]:
    """Return NVRTC's ``(major, minor)`` version, e.g. ``(13, 0)``."""
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check("nvrtcVersion", _get().lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)))
    return major.value, minor.value


def supported_archs() -> tuple[int, ...]:
    """Return the SM architectures this NVRTC can compile for, e.g. ``(75, 80, ..., 121)``."""
    lib = _get().lib
    count = ctypes.c_int()
    _check("nvrtcGetNumSupportedArchs", lib.nvrtcGetNumSupportedArchs(ctypes.byref(count)))
    archs = (ctypes.c_int * count.value)()
    _check("nvrtcGetSupportedArchs", lib.nvrtcGetSupportedArchs(archs))
    return tuple(archs)


def _reset_for_tests() -> None:
    """Forget the cached load result (tests switch ``PYGPUKIT_NVRTC_PATH``)."""
    global _loaded, _failure, _snapshot
    with _lock:
        _loaded = None
        _failure = None
        _snapshot = None
    from pygpukit_nvrtc import _discovery

    _discovery._reset_for_tests()
