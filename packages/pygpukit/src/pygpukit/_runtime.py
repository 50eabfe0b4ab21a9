"""What this process can use: the CUDA driver, NVRTC, and the backend in use."""

from __future__ import annotations

from pygpukit._backend import cuda_unavailable_reason, get_backend


def is_cuda_available() -> bool:
    """Return whether the CUDA backend can run: driver loaded, a device, kernels covering it."""
    return cuda_unavailable_reason() is None


def is_nvrtc_available() -> bool:
    """Return whether :func:`pygpukit.jit` can compile and run kernels here.

    True when NVRTC (``pip install pygpukit[jit]``) loads and the CUDA backend is in use: the
    CPU simulation cannot run CUDA C++, so there this is False even with NVRTC installed
    (:func:`get_nvrtc_path` still tells where it is).
    """
    try:
        import pygpukit_nvrtc
    except ImportError:
        return False
    return pygpukit_nvrtc.is_available() and get_backend().name == "cuda"


def get_nvrtc_path() -> str | None:
    """Return the path of the NVRTC library, or ``None`` when it is not installed or loadable."""
    try:
        import pygpukit_nvrtc
    except ImportError:
        return None
    return pygpukit_nvrtc.path() if pygpukit_nvrtc.is_available() else None


def get_nvrtc_version() -> tuple[int, int] | None:
    """Return NVRTC's ``(major, minor)``, or ``None`` when it is not installed or loadable."""
    try:
        import pygpukit_nvrtc
    except ImportError:
        return None
    return pygpukit_nvrtc.version() if pygpukit_nvrtc.is_available() else None


def backend() -> str:
    """Return the name of the backend in use, ``"cuda"`` or ``"cpu"``, choosing it if needed."""
    return get_backend().name
