"""Exceptions raised by pygpukit_nvrtc."""

from __future__ import annotations


class NvrtcError(RuntimeError):
    """An NVRTC call failed.

    Attributes
    ----------
    code
        The ``nvrtcResult`` value.
    api
        Name of the NVRTC function that failed.
    """

    def __init__(self, api: str, code: int, message: str) -> None:
        super().__init__(f"{api} failed: {message} ({code})")
        self.api = api
        self.code = code


class NvrtcUnavailableError(RuntimeError):
    """NVRTC could not be found or loaded; the message says what was tried and how to fix it."""
