"""Exceptions of the pygpukit package (driver errors are re-exported from pygpukit_driver).

Every exception pygpukit raises of its own derives from :class:`PyGPUkitError`, and also from
the built-in class users already catch for that kind of failure (``MemoryError`` for memory,
``RuntimeError`` for the rest).
"""

from __future__ import annotations


class PyGPUkitError(Exception):
    """The root of pygpukit's own exceptions: ``except gp.PyGPUkitError`` catches them all.

    Argument errors are the built-in ``TypeError`` / ``ValueError`` / ``IndexError``, as in
    NumPy; errors of the CUDA driver are ``pygpukit.CudaError`` (from ``pygpukit_driver``).
    """


class OutOfMemoryError(PyGPUkitError, MemoryError):
    """A device allocation failed even after the cache was emptied; the message has the stats."""


class BackendUnavailableError(PyGPUkitError, RuntimeError):
    """The backend asked for (``PYGPUKIT_BACKEND``) cannot be used here; the message says why."""


class PartitionMemoryError(OutOfMemoryError):
    """An allocation inside ``with gp.partition(...)`` does not fit the partition's memory.

    Raised after the partition's own cache and the caches of lower QoS tiers were given back.
    The message names the partition, its quota, its usage and the request.

    Attributes
    ----------
    partition
        The partition's name.
    quota
        Its memory limit in bytes (the device's partitionable memory if it has none).
    usage
        Bytes charged to it (live arrays plus its cached blocks) when the request failed.
    requested
        The size-class bytes of the failed request.
    """

    def __init__(self, message: str, *, partition: str, quota: int, usage: int,
                 requested: int) -> None:
        super().__init__(message)
        self.partition = partition
        self.quota = quota
        self.usage = usage
        self.requested = requested


class AdmissionError(PyGPUkitError, RuntimeError):
    """A task (``with partition.task(memory=...)``) was not admitted by the scheduler.

    Attributes
    ----------
    reason
        The scheduler's reason code, e.g. ``"exceeds_quota"`` or ``"timeout"``.
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class GraphCaptureError(PyGPUkitError, RuntimeError):
    """An operation that cannot be recorded in a CUDA graph was called during a capture.

    Host reads (``to_numpy``, ``item``, ``print``), synchronizations, host-to-device uploads
    and cross-device copies; the capture is abandoned when the ``with gp.graph()`` block exits
    with this error.
    """


class KernelLaunchError(PyGPUkitError, RuntimeError):
    """A precompiled kernel could not be launched.

    Attributes
    ----------
    kernel
        The launcher that failed, e.g. ``"pgk_add_f32"``.
    code
        The ``cudaError_t`` value it returned.
    name
        Its name, e.g. ``"cudaErrorNoKernelImageForDevice"``.
    """

    def __init__(self, kernel: str, code: int, name: str, description: str) -> None:
        super().__init__(f"{kernel} failed: {name} ({code}): {description}")
        self.kernel = kernel
        self.code = code
        self.name = name
