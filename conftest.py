"""Repository-wide pytest hooks.

With ``PYGPUKIT_REQUIRE_GPU=1`` (set by ci/gpu-check on the GPU machine) a ``gpu``-marked test
that skips is reported as a failure: on a GPU machine the GPU tier must never pass vacuously.
``PYGPUKIT_REQUIRE_MULTI_GPU=1`` does the same for ``multigpu`` tests (set it on multi-GPU
machines).
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    """Turn a skipped GPU test into a failure when a GPU is required."""
    outcome = yield
    report = outcome.get_result()
    required = [
        marker for marker, env in (("gpu", "PYGPUKIT_REQUIRE_GPU"),
                                   ("multigpu", "PYGPUKIT_REQUIRE_MULTI_GPU"))
        if os.environ.get(env) == "1" and item.get_closest_marker(marker) is not None
    ]
    if report.skipped and required:
        report.outcome = "failed"
        report.longrepr = f"GPU test skipped on a GPU machine: {report.longrepr}"
