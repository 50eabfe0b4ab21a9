"""Exceptions of the pygpukit package (driver errors are re-exported from pygpukit_driver)."""

from __future__ import annotations


class BackendUnavailableError(RuntimeError):
    """The backend asked for (``PYGPUKIT_BACKEND``) cannot be used here; the message says why."""


class KernelLaunchError(RuntimeError):
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
