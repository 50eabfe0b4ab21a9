"""What this process can use: the CUDA driver, NVRTC, and the backend in use."""

from __future__ import annotations

from pygpukit._backend import cuda_unavailable_reason, get_backend


def is_cuda_available() -> bool:
    """Return whether the CUDA backend can run: driver loaded, a device, kernels covering it."""
    return cuda_unavailable_reason() is None


def is_nvrtc_available() -> bool:
    """Return whether NVRTC (``pip install pygpukit[jit]``) is installed and loads."""
    try:
        import pygpukit_nvrtc
    except ImportError:
        return False
    return pygpukit_nvrtc.is_available()


def get_nvrtc_path() -> str | None:
    """Return the path of the NVRTC library in use, or ``None`` when it is unavailable."""
    if not is_nvrtc_available():
        return None
    import pygpukit_nvrtc

    return pygpukit_nvrtc.path()


def backend() -> str:
    """Return the name of the backend in use, ``"cuda"`` or ``"cpu"``, choosing it if needed."""
    return get_backend().name
