"""Find and load NCCL, bind its C API with ctypes, and turn its results into exceptions.

One place decides where NCCL comes from: ``PYGPUKIT_NCCL_PATH`` (a ``libnccl.so.2`` file or a
folder holding one) first, then cuda-pathfinder, NVIDIA's own search: the ``nvidia-nccl-cu13``
wheel (``nvidia/nccl/lib``), conda, the system loader, ``NCCL_HOME``.  Both come with the
``nccl`` extra (``pip install pygpukit[nccl]``); a driver-only install never loads this module.
The library is loaded on first use and the answer (the library or the reason it is missing)
is kept for the life of the process.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from pathlib import Path
from typing import Any

from pygpukit._errors import PyGPUkitError

ENV_OVERRIDE = "PYGPUKIT_NCCL_PATH"
INSTALL_HINT = "install it with `pip install pygpukit[nccl]` (brings nvidia-nccl-cu13)"

#: ``ncclResult_t`` values and their names.
RESULT_NAMES = {
    0: "ncclSuccess",
    1: "ncclUnhandledCudaError",
    2: "ncclSystemError",
    3: "ncclInternalError",
    4: "ncclInvalidArgument",
    5: "ncclInvalidUsage",
    6: "ncclRemoteError",
    7: "ncclInProgress",
}

#: NumPy dtype name -> ``ncclDataType_t`` (nccl.h); bfloat16 is ml_dtypes' name for it.
DATATYPES = {
    "int8": 0,
    "uint8": 1,
    "int32": 2,
    "uint32": 3,
    "int64": 4,
    "uint64": 5,
    "float16": 6,
    "float32": 7,
    "float64": 8,
    "bfloat16": 9,
}

#: Reduction name -> ``ncclRedOp_t`` (nccl.h: max is 2, min is 3).
OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}

UNIQUE_ID_BYTES = 128  # NCCL_UNIQUE_ID_BYTES


class NcclUnavailableError(PyGPUkitError, RuntimeError):
    """NCCL cannot be loaded; the message says why and how to install it."""


class NcclError(PyGPUkitError, RuntimeError):
    """An NCCL call failed.

    Attributes
    ----------
    call
        The NCCL function, e.g. ``"ncclAllReduce"``.
    code
        Its ``ncclResult_t``.
    name
        The result's name, e.g. ``"ncclUnhandledCudaError"``.
    rank
        The rank of the communicator the call was made on (``None`` for calls without one).
    """

    def __init__(self, call: str, code: int, message: str, rank: int | None) -> None:
        super().__init__(message)
        self.call = call
        self.code = code
        self.name = RESULT_NAMES.get(code, f"ncclResult({code})")
        self.rank = rank


class NcclUniqueId(ctypes.Structure):
    """``ncclUniqueId``: 128 opaque bytes, passed by value to ``ncclCommInitRank``."""

    _fields_ = [("internal", ctypes.c_ubyte * UNIQUE_ID_BYTES)]  # not c_char: NULs inside

    @classmethod
    def from_bytes(cls, data: bytes) -> NcclUniqueId:
        """The struct holding exactly ``data`` (128 bytes)."""
        return cls.from_buffer_copy(data)

    def to_bytes(self) -> bytes:
        """The 128 bytes, NULs included."""
        return ctypes.string_at(ctypes.addressof(self), UNIQUE_ID_BYTES)


class _Loaded:
    """The loaded library, its absolute path and where it was found."""

    __slots__ = ("found_via", "lib", "path")

    def __init__(self, lib: ctypes.CDLL, path: str, found_via: str) -> None:
        self.lib, self.path, self.found_via = lib, path, found_via


_lock = threading.Lock()
_loaded: _Loaded | None = None
_failure: str | None = None


def library_names() -> tuple[str, ...]:
    """The file names NCCL's library has on this platform (only Linux has an NCCL)."""
    return ("libnccl.so.2", "libnccl.so")


def _load_override(value: str) -> _Loaded:
    candidate = Path(value)
    if candidate.is_dir():
        found = [candidate / n for n in library_names() if (candidate / n).is_file()]
        if not found:
            raise NcclUnavailableError(
                f"{ENV_OVERRIDE}={value} is a folder without any of {list(library_names())}")
        candidate = found[0]
    elif not candidate.is_file():
        raise NcclUnavailableError(f"{ENV_OVERRIDE}={value}: no such file or folder")
    try:
        lib = ctypes.CDLL(str(candidate))
    except OSError as exc:
        raise NcclUnavailableError(f"{ENV_OVERRIDE}={value} could not be loaded: {exc}") from exc
    return _Loaded(lib, str(candidate.resolve()), ENV_OVERRIDE)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _load_pathfinder() -> _Loaded:
    try:
        from cuda import pathfinder
    except ImportError as exc:
        raise NcclUnavailableError(f"NCCL is not installed (no cuda-pathfinder to find it); "
                                   f"{INSTALL_HINT}") from exc
    try:
        dl = pathfinder.load_nvidia_dynamic_lib("nccl")
    except pathfinder.DynamicLibNotFoundError as exc:
        raise NcclUnavailableError(f"NCCL not found by cuda-pathfinder ({_one_line(exc)}); "
                                   f"{INSTALL_HINT}") from exc
    except (ValueError, KeyError, RuntimeError) as exc:  # a cuda-pathfinder without NCCL
        version = getattr(pathfinder, "__version__", "?")
        raise NcclUnavailableError(
            f"cuda-pathfinder {version} cannot look for NCCL ({_one_line(exc)}); "
            f"{INSTALL_HINT} (it needs cuda-pathfinder>=1.4), or set {ENV_OVERRIDE}") from exc
    if dl.abs_path is None:
        raise NcclUnavailableError("cuda-pathfinder loaded NCCL but cannot tell its path")
    # Already loaded by pathfinder: CDLL on the same path only takes another reference.
    return _Loaded(ctypes.CDLL(dl.abs_path), dl.abs_path, dl.found_via)


def _configure(lib: ctypes.CDLL) -> None:
    """Set the ctypes signature of every function used (AttributeError if one is missing)."""
    p, c_int, size_t = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
    int_p, comm_p = ctypes.POINTER(c_int), ctypes.POINTER(p)
    signatures: dict[str, list[Any]] = {
        "ncclGetVersion": [int_p],
        "ncclGetUniqueId": [ctypes.POINTER(NcclUniqueId)],
        "ncclCommInitRank": [comm_p, c_int, NcclUniqueId, c_int],
        "ncclCommInitAll": [comm_p, c_int, int_p],
        "ncclCommDestroy": [p],
        "ncclCommAbort": [p],
        "ncclCommGetAsyncError": [p, int_p],
        "ncclCommCount": [p, int_p],
        "ncclCommCuDevice": [p, int_p],
        "ncclCommUserRank": [p, int_p],
        # (sendbuff, recvbuff, count, datatype, op, comm, stream)
        "ncclAllReduce": [p, p, size_t, c_int, c_int, p, p],
        # (sendbuff, recvbuff, count, datatype, root, comm, stream)
        "ncclBroadcast": [p, p, size_t, c_int, c_int, p, p],
        # (sendbuff, recvbuff, count, datatype, op, root, comm, stream)
        "ncclReduce": [p, p, size_t, c_int, c_int, c_int, p, p],
        # (sendbuff, recvbuff, sendcount, datatype, comm, stream)
        "ncclAllGather": [p, p, size_t, c_int, p, p],
        # (sendbuff, recvbuff, recvcount, datatype, op, comm, stream)
        "ncclReduceScatter": [p, p, size_t, c_int, c_int, p, p],
        # (buff, count, datatype, peer, comm, stream)
        "ncclSend": [p, size_t, c_int, c_int, p, p],
        "ncclRecv": [p, size_t, c_int, c_int, p, p],
        "ncclGroupStart": [],
        "ncclGroupEnd": [],
    }
    for name, argtypes in signatures.items():
        fn = getattr(lib, name)
        fn.restype = c_int
        fn.argtypes = argtypes
    lib.ncclGetErrorString.restype = ctypes.c_char_p
    lib.ncclGetErrorString.argtypes = [c_int]
    lib.ncclGetLastError.restype = ctypes.c_char_p
    lib.ncclGetLastError.argtypes = [p]


def _get() -> _Loaded:
    """Load NCCL once per process; later calls return the same library or the same error."""
    global _loaded, _failure
    with _lock:
        if _loaded is None and _failure is None:
            override = os.environ.get(ENV_OVERRIDE)
            try:
                if not override and not sys.platform.startswith("linux"):
                    raise NcclUnavailableError(
                        f"NCCL is only available on Linux (this is {sys.platform})")
                loaded = _load_override(override) if override else _load_pathfinder()
                _configure(loaded.lib)
                _loaded = loaded
            except NcclUnavailableError as exc:
                _failure = str(exc)
            except (OSError, AttributeError) as exc:
                _failure = f"the NCCL library is unusable ({exc}); {INSTALL_HINT}"
        if _loaded is None:
            raise NcclUnavailableError(_failure)
        return _loaded


def library() -> ctypes.CDLL:
    """The loaded NCCL library with its ctypes signatures set.

    Raises
    ------
    NcclUnavailableError
        If NCCL cannot be loaded; the message names ``pip install pygpukit[nccl]``.
    """
    return _get().lib


def is_loaded() -> bool:
    """Whether NCCL has been loaded into this process (nothing is loaded by asking)."""
    return _loaded is not None


def path() -> str:
    """The absolute path of the loaded NCCL library (loads it; NcclUnavailableError)."""
    return _get().path


def found_via() -> str:
    """Where NCCL was found: ``"site-packages"``, ``"PYGPUKIT_NCCL_PATH"``, ``"conda"``, ..."""
    return _get().found_via


def error_string(code: int) -> str:
    """NCCL's description of the result ``code``."""
    text = library().ncclGetErrorString(code)
    return text.decode(errors="replace") if text else "unknown error"


def last_error(comm: int | None) -> str:
    """NCCL's last error message for ``comm`` (``""`` when it has none)."""
    text = library().ncclGetLastError(comm)
    return text.decode(errors="replace") if text else ""


def describe(call: str, code: int, where: str, comm: int | None) -> str:
    """The message of a failed NCCL call: the call, where, the result and NCCL's last error."""
    name = RESULT_NAMES.get(code, f"ncclResult({code})")
    message = f"{call} failed{where}: {name} ({code}): {error_string(code)}"
    detail = last_error(comm)
    return f"{message}; NCCL says: {detail}" if detail else message


def check(call: str, code: int) -> None:
    """Raise :class:`NcclError` for a failed call made without a communicator."""
    if code != 0:
        raise NcclError(call, code, describe(call, code, "", None), None)


def version() -> tuple[int, int, int]:
    """NCCL's ``(major, minor, patch)``, e.g. ``(2, 28, 3)`` (loads NCCL)."""
    code = ctypes.c_int()
    check("ncclGetVersion", library().ncclGetVersion(ctypes.byref(code)))
    value = code.value
    if value >= 10000:  # NCCL_VERSION_CODE since 2.9: major*10000 + minor*100 + patch
        return value // 10000, value // 100 % 100, value % 100
    return value // 1000, value // 100 % 10, value % 100


def _reset_for_tests() -> None:
    """Forget the load result (tests switch ``PYGPUKIT_NCCL_PATH``)."""
    global _loaded, _failure
    with _lock:
        _loaded = None
        _failure = None
