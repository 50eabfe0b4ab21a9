"""Choosing the backend: the CUDA GPU when there is one, else the CPU simulation.

``PYGPUKIT_BACKEND`` = ``auto`` (default), ``cuda`` (fail loudly if no GPU) or ``cpu``.  The
choice is made once, at the first operation, so ``import pygpukit`` never touches the driver.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Protocol

from pygpukit._errors import BackendUnavailableError

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    import numpy as np

    from pygpukit._allocator import CachingAllocator
    from pygpukit._array import GPUArray
    from pygpukit._indexplan import IndexPlan
    from pygpukit._stream import Stream

ENV_BACKEND = "PYGPUKIT_BACKEND"
_CHOICES = ("auto", "cuda", "cpu")


class Runtime(Protocol):
    """One device of a backend: what the array, ops, graph and partition layers call.

    Implemented by ``_cuda_backend.CudaRuntime`` (the driver binding and the kernels library)
    and ``_cpu_backend.CpuRuntime`` (NumPy).  Arrays are validated and laid out by the callers;
    every method that enqueues work takes the stream last and returns without waiting.
    """

    index: int
    name: str
    compute_capability: tuple[int, int]
    total_memory: int
    allocator: CachingAllocator
    default_stream: Stream
    #: Small-array kernels by name (``ew_f32``, ``reduce_f32``, ...): prepared launches taking
    #: ``(grid_x, stream_handle, *args)``; empty where there are none (the CPU simulation).
    small: dict[str, Callable[..., None]]
    #: The same kernels' ``pygpukit_driver.Launcher`` objects (the C fast path of
    #: :mod:`pygpukit._fastpath` launches them without a Python call).
    small_launchers: dict[str, Any]

    def describe(self) -> str:
        """Name the device, e.g. ``"cuda:0 (NVIDIA H200, sm_90)"``."""
        ...

    def gemm_entry_points(self) -> tuple[int, int, Callable[[str, int], None]] | None:
        """``(pgk_gemm address, pgk_gemm_workspace_size address, status check)``, or None."""
        ...

    def elementwise_entry_points(self) -> tuple[dict[str, int], Callable[[str, int], None]] | None:
        """The elementwise entry points of the C ABI and the status check, or None.

        Addresses of ``pgk_binary``, ``pgk_unary``, ``pgk_where`` and ``pgk_copy`` under the
        keys ``binary``, ``unary``, ``where`` and ``copy``.
        """
        ...

    @property
    def context_handle(self) -> int:
        """The device's CUcontext as an int (0 on the CPU simulation)."""
        ...

    def activate(self) -> None:
        """Make the device current on the calling thread."""
        ...

    # streams, events, graphs
    def new_stream(self, priority: int, non_blocking: bool) -> Any: ...
    def new_event(self, timing: bool) -> Any: ...
    def stream_wait_event(self, stream: Any, event: Any) -> None: ...
    def priority_range(self) -> tuple[int, int]: ...
    def synchronize(self) -> None: ...
    def new_pool(self) -> CachingAllocator: ...
    def capture_begin(self, stream: Stream) -> None: ...
    def capture_end(self, stream: Stream) -> tuple[Any, int]: ...
    def capture_abort(self, stream: Stream) -> None: ...

    # data movement
    def upload(self, dst: GPUArray, host: memoryview, stream: Stream) -> None: ...
    def download(self, src: GPUArray, host: memoryview, stream: Stream) -> None: ...
    def copy(self, src: GPUArray, dst: GPUArray, stream: Stream) -> None: ...
    def copy_from_device(self, src: GPUArray, dst: GPUArray, stream: Stream) -> None: ...
    def fill(self, dst: GPUArray, value: Any, stream: Stream) -> None: ...
    def arange(self, dst: GPUArray, start: Any, step: Any, stream: Stream) -> None: ...
    def linspace(self, dst: GPUArray, start: float, stop: float, endpoint: bool,
                 stream: Stream) -> None: ...

    # spill (pygpukit._spill): a block's bytes to and from host memory, on a stream
    def host_buffer(self, nbytes: int) -> Any:
        """``nbytes`` of host memory for spilled blocks (pinned on the GPU; a buffer)."""
        ...

    def spill_copy(self, block: Any, host: Any, stream: Stream) -> None:
        """Copy the whole block (``block.size`` bytes) to ``host`` after ``stream``'s work."""
        ...

    def restore_copy(self, block: Any, host: Any, stream: Stream) -> None:
        """Copy ``host`` into the block on ``stream``."""
        ...

    # math (op codes from pygpukit._optable)
    def binary(self, op: int, a: GPUArray | None, b: GPUArray | None, scalar: Any,
               out: GPUArray, compute: np.dtype[Any], stream: Stream) -> None: ...
    def unary(self, op: int, x: GPUArray, out: GPUArray, compute: np.dtype[Any],
              stream: Stream) -> None: ...
    def where(self, cond: GPUArray, a: GPUArray | None, b: GPUArray | None, a_scalar: Any,
              b_scalar: Any, out: GPUArray, compute: np.dtype[Any], stream: Stream) -> None: ...
    def reduce(self, op: int, x: GPUArray, nred_dims: int, out: GPUArray,
               compute: np.dtype[Any], ddof: float, workspace: GPUArray | None, chunks: int,
               stream: Stream) -> None: ...
    def row_norm(self, op: int, x: GPUArray, weight: GPUArray | None, bias: GPUArray | None,
                 eps: float, out: GPUArray, stream: Stream) -> None: ...
    def gemm(self, a: GPUArray, b: GPUArray, c: GPUArray, b_col_major: bool,
             bias: GPUArray | None, activation: int, precision: int, stream: Stream) -> None: ...
    def gemm_last_kernel(self) -> str: ...
    # FP8 (pygpukit._fp8): contiguous operands; a (M, K) and b (N, K) with unit stride along K
    def fp8_cast(self, src: GPUArray, dst: GPUArray, scale: GPUArray | None, row_len: int,
                 saturate: bool, stream: Stream) -> None: ...
    def gemm_fp8(self, a: GPUArray, b: GPUArray, c: GPUArray, scale_a: GPUArray | None,
                 scale_a_per_row: bool, scale_b: GPUArray | None, scale_b_per_col: bool,
                 bias: GPUArray | None, activation: int, stream: Stream) -> None: ...

    # sort and scan (pygpukit._sorting; codes from pygpukit_kernels.SortFlag / ScanOp): every
    # array is C-contiguous; x, values and indices are (rows, cols) / (rows, k) matrices
    def sort(self, x: GPUArray, flags: int, k: int, values: GPUArray | None,
             indices: GPUArray | None, stream: Stream) -> None: ...
    def scan(self, op: int, x: GPUArray, out: GPUArray, stream: Stream) -> None: ...
    def searchsorted(self, a: GPUArray, sorter: GPUArray | None, v: GPUArray, right: bool,
                     out: GPUArray, stream: Stream) -> None: ...
    def run_starts(self, sorted_: GPUArray, flags: GPUArray, stream: Stream) -> None: ...
    def run_scatter(self, gid: GPUArray, sorted_: GPUArray, perm: GPUArray | None,
                    uniq: GPUArray | None, starts: GPUArray | None, first: GPUArray | None,
                    inverse: GPUArray | None, stream: Stream) -> None: ...
    def take_rows(self, src: GPUArray, idx: GPUArray, dst: GPUArray, stream: Stream) -> None: ...
    # random numbers (pygpukit._random): Philox4x32-10 streams defined in pygpukit._philox, into
    # C-contiguous outputs of out.size elements
    def random(self, dist: int, out: GPUArray, key: int, counter: int, stream_id: int,
               a: float, b: float, stream: Stream) -> None: ...
    def random_integers(self, out: GPUArray, key: int, counter: int, stream_id: int, low: int,
                        span: int, stream: Stream) -> None: ...
    def random_choice(self, out: GPUArray, cdf: GPUArray, last: int, key: int, counter: int,
                      stream_id: int, stream: Stream) -> None: ...
    # advanced indexing (layouts from pygpukit._indexing; see pygpukit._indexplan)
    def index_gather(self, plan: IndexPlan, out: GPUArray, error: GPUArray | None,
                     stream: Stream, *, preset: bool = False) -> None: ...
    def index_check(self, plan: IndexPlan, error: GPUArray, stream: Stream) -> None: ...
    def index_scatter(self, plan: IndexPlan, values: GPUArray, error: GPUArray | None,
                      stream: Stream, *, preset: bool = False) -> None: ...
    def index_add(self, plan: IndexPlan, values: GPUArray, error: GPUArray | None,
                  stream: Stream, *, preset: bool = False) -> None: ...
    def index_add_atomic(self, plan: IndexPlan, values: GPUArray, error: GPUArray | None,
                         stream: Stream, *, preset: bool = False) -> None: ...
    def select_flagged_counted(self, x: GPUArray | None, flags: GPUArray, out: GPUArray,
                               stream: Stream) -> int: ...
    def unravel_index(self, flat: GPUArray, shape: tuple[int, ...], mode: int, out: GPUArray,
                      error: GPUArray | None, stream: Stream) -> None: ...
    def count_flags(self, flags: GPUArray, out: GPUArray, stream: Stream) -> None: ...


class Backend(Protocol):
    """A backend: its devices, each with a runtime (allocator, streams, kernels)."""

    name: str

    def describe(self) -> str:
        """Say in one line what runs the arrays (device name, or why the CPU)."""
        ...

    def device_count(self) -> int:
        """Number of devices."""
        ...

    def runtime(self, index: int) -> Runtime:
        """The runtime of device ``index`` (created on first use); ValueError if no such device."""
        ...

    def has_runtime(self, index: int) -> bool:
        """Whether device ``index``'s runtime was created already."""
        ...


def cuda_unavailable_reason() -> str | None:
    """Return why the CUDA backend cannot run here, or ``None`` when it can."""
    import pygpukit_driver as drv
    import pygpukit_kernels

    if not drv.is_available():
        return drv.unavailable_reason() or "the CUDA driver is not available"
    if drv.device_count() == 0:
        return "the CUDA driver reports no device"
    major, minor = drv.Device(0).compute_capability
    if pygpukit_kernels.covers(major, minor) is None:
        shipped = ", ".join(f"sm_{a}" for a in pygpukit_kernels.build_info().sass_archs)
        return f"device 0 is sm_{major}{minor}, older than every shipped kernel arch ({shipped})"
    return None


_lock = threading.Lock()
_backend: Backend | None = None


def _select() -> Backend:
    requested = os.environ.get(ENV_BACKEND, "auto").strip().lower() or "auto"
    if requested not in _CHOICES:
        raise BackendUnavailableError(
            f"{ENV_BACKEND}={requested!r} is not one of {', '.join(_CHOICES)}"
        )
    from pygpukit._cpu_backend import CpuBackend

    if requested == "cpu":
        return CpuBackend(reason=f"{ENV_BACKEND}=cpu")
    reason = cuda_unavailable_reason()
    if reason is None:
        from pygpukit._cuda_backend import CudaBackend

        return CudaBackend()
    if requested == "cuda":
        raise BackendUnavailableError(f"{ENV_BACKEND}=cuda but {reason}")
    return CpuBackend(reason=reason)


def get_backend() -> Backend:
    """Return the process's backend, choosing it on first use (thread-safe)."""
    global _backend
    if _backend is None:
        with _lock:
            if _backend is None:
                _backend = _select()
    return _backend


def _reset_for_tests() -> None:
    """Forget the chosen backend (tests switch ``PYGPUKIT_BACKEND``)."""
    global _backend
    with _lock:
        _backend = None
