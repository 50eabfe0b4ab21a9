"""Collectives over several GPUs with NCCL: ``pygpukit.distributed``.

NCCL comes from NVIDIA's ``nvidia-nccl-cu13`` wheel (``pip install pygpukit[nccl]``), found by
cuda-pathfinder like NVRTC; ``PYGPUKIT_NCCL_PATH`` (a ``libnccl.so.2`` or its folder) overrides
the search.  Importing this module loads nothing; the first call that needs NCCL does, and
raises :class:`NcclUnavailableError` naming the install command if it is missing.

Two ways to make communicators:

- one device per process: :func:`unique_id` on one process, shared with the others (it pickles),
  then ``Communicator(nranks, rank, uid, device=...)`` on each;
- every device of one process: :func:`init_all` (issue collectives inside :func:`group`).

Collectives (methods of :class:`Communicator`) work on GPUArrays of NCCL's dtypes on the
current stream of their device and can be captured in ``gp.graph()``.  Several hosts are
NCCL's business too (its network transports): start one process per GPU on every host, share
the unique id, and set NCCL's own environment variables (``NCCL_SOCKET_IFNAME``, ...); see
``docs/multi-gpu.md``.
"""

from __future__ import annotations

from pygpukit._nccl import (
    Communicator,
    UniqueId,
    group,
    init_all,
    nccl_version,
    unique_id,
)
from pygpukit._nccl_lib import NcclError, NcclUnavailableError


def is_available() -> bool:
    """Whether NCCL can be loaded here (loads it; never raises)."""
    from pygpukit import _nccl_lib

    try:
        _nccl_lib.library()
    except NcclUnavailableError:
        return False
    return True


def nccl_path() -> str:
    """The absolute path of the NCCL library in use (loads it; NcclUnavailableError)."""
    from pygpukit import _nccl_lib

    return _nccl_lib.path()


__all__ = [
    "Communicator",
    "NcclError",
    "NcclUnavailableError",
    "UniqueId",
    "group",
    "init_all",
    "is_available",
    "nccl_path",
    "nccl_version",
    "unique_id",
]
