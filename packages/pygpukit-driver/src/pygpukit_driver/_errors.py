"""Exception classes for CUDA driver errors.

The native module raises these through :func:`_from_native` and
:func:`_unavailable_from_native`; the class is chosen by the ``CUresult`` code
in :data:`_CLASS_BY_CODE`.
"""

from __future__ import annotations

CUDA_ERROR_NO_DEVICE = 100


class CudaError(RuntimeError):
    """A CUDA driver call failed.

    Attributes
    ----------
    code : int
        The ``CUresult`` value, e.g. 2.
    name : str
        Its name from ``cuGetErrorName``, e.g. ``"CUDA_ERROR_OUT_OF_MEMORY"``.
    description : str
        Its description from ``cuGetErrorString``, e.g. ``"out of memory"``.
    api : str
        The driver function that failed, e.g. ``"cuMemAlloc"``.
    detail : str or None
        Extra context: the JIT error log, the symbol looked up, a hint.
    """

    def __init__(
        self,
        code: int,
        name: str,
        description: str,
        api: str,
        detail: str | None = None,
    ) -> None:
        self.code = code
        self.name = name
        self.description = description
        self.api = api
        self.detail = detail or None
        super().__init__(self._format())

    def _format(self) -> str:
        msg = f"{self.api} failed: {self.name} ({self.code}): {self.description}"
        if self.detail:
            msg += f"; {self.detail}"
        return msg

    def __reduce__(self) -> tuple[type[CudaError], tuple[int, str, str, str, str | None]]:
        return (type(self), (self.code, self.name, self.description, self.api, self.detail))


class CudaOutOfMemoryError(CudaError, MemoryError):
    """``CUDA_ERROR_OUT_OF_MEMORY`` (2); also a :class:`MemoryError`."""


class CudaInvalidValueError(CudaError, ValueError):
    """``CUDA_ERROR_INVALID_VALUE`` (1); also a :class:`ValueError`."""


class CudaInvalidDeviceError(CudaError):
    """``CUDA_ERROR_INVALID_DEVICE`` (101)."""


class CudaInvalidContextError(CudaError):
    """``CUDA_ERROR_INVALID_CONTEXT`` (201), typically no current context."""


class CudaInvalidImageError(CudaError):
    """A module image was rejected (invalid image, PTX, or no binary for the GPU)."""


class CudaInvalidHandleError(CudaError):
    """``CUDA_ERROR_INVALID_HANDLE`` (400)."""


class CudaNotFoundError(CudaError, LookupError):
    """``CUDA_ERROR_NOT_FOUND`` (500), e.g. a kernel name missing from a module."""


class CudaLaunchError(CudaError):
    """A kernel launch or a kernel failed (out of resources, timeout, illegal address...)."""


class CudaUnsupportedError(CudaError):
    """``CUDA_ERROR_NOT_SUPPORTED`` (801), or an entry point the loaded driver lacks.

    Raised only when the missing feature is used; ``detail`` names the loaded
    driver's CUDA version and the version the feature needs.
    """


class CudaPeerAccessError(CudaError):
    """Peer access is unsupported (217) or not enabled (705)."""


class CudaStreamCaptureError(CudaError):
    """An operation is illegal during stream capture, or the capture was invalidated (900-908)."""


class CudaUnavailableError(CudaError):
    """The CUDA driver library could not be loaded, or ``cuInit`` failed.

    ``code`` is the ``cuInit`` error, or ``CUDA_ERROR_NO_DEVICE`` (100) when no
    driver library could be loaded at all; ``reason`` says what was searched.
    """

    def __init__(
        self,
        code: int,
        name: str,
        description: str,
        api: str,
        detail: str | None = None,
    ) -> None:
        super().__init__(code, name, description, api, detail)

    @property
    def reason(self) -> str:
        """Why the driver is unavailable (what was searched and the error)."""
        return self.detail or self.description

    def _format(self) -> str:
        return f"CUDA driver unavailable: {self.detail or self.description}"


# One mapping table: CUresult code -> exception class.
_CLASS_BY_CODE: dict[int, type[CudaError]] = {
    1: CudaInvalidValueError,
    2: CudaOutOfMemoryError,
    101: CudaInvalidDeviceError,
    200: CudaInvalidImageError,  # CUDA_ERROR_INVALID_IMAGE
    201: CudaInvalidContextError,
    209: CudaInvalidImageError,  # CUDA_ERROR_NO_BINARY_FOR_GPU
    218: CudaInvalidImageError,  # CUDA_ERROR_INVALID_PTX
    222: CudaInvalidImageError,  # CUDA_ERROR_UNSUPPORTED_PTX_VERSION
    400: CudaInvalidHandleError,
    500: CudaNotFoundError,
    700: CudaLaunchError,  # CUDA_ERROR_ILLEGAL_ADDRESS
    701: CudaLaunchError,  # CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    702: CudaLaunchError,  # CUDA_ERROR_LAUNCH_TIMEOUT
    719: CudaLaunchError,  # CUDA_ERROR_LAUNCH_FAILED
    720: CudaLaunchError,  # CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE
    217: CudaPeerAccessError,  # CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
    705: CudaPeerAccessError,  # CUDA_ERROR_PEER_ACCESS_NOT_ENABLED
    801: CudaUnsupportedError,  # CUDA_ERROR_NOT_SUPPORTED (and entry points the driver lacks)
    **dict.fromkeys(range(900, 909), CudaStreamCaptureError),
}


def error_class(code: int) -> type[CudaError]:
    """Return the exception class used for a ``CUresult`` code."""
    return _CLASS_BY_CODE.get(code, CudaError)


def _from_native(code: int, name: str, description: str, api: str, detail: str) -> CudaError:
    return error_class(code)(code, name, description, api, detail)


def _unavailable_from_native(
    code: int, name: str, description: str, api: str, reason: str
) -> CudaUnavailableError:
    return CudaUnavailableError(code, name, description, api, reason)
