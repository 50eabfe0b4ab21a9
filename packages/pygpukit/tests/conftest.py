"""One API test suite over both backends: ``cpu`` everywhere, ``cuda`` where a GPU is present."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import pygpukit as gp
from pygpukit import _backend


def _cuda_skip_reason() -> str | None:
    reason = _backend.cuda_unavailable_reason()
    return None if reason is None else f"CUDA backend unavailable: {reason}"


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run the test with PYGPUKIT_BACKEND set to each backend in turn."""
    name: str = request.param
    if name == "cuda" and (reason := _cuda_skip_reason()) is not None:
        pytest.skip(reason)
    monkeypatch.setenv(_backend.ENV_BACKEND, name)
    _backend._reset_for_tests()
    assert gp.backend() == name
    yield name
    _backend._reset_for_tests()


@pytest.fixture(autouse=True)
def _fresh_backend() -> Iterator[None]:
    _backend._reset_for_tests()
    yield
    _backend._reset_for_tests()
