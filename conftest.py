"""Repository-wide pytest hooks.

With ``PYGPUKIT_REQUIRE_GPU=1`` (set by ci/gpu-check on the GPU machine) a GPU-marked test that
skips is reported as a failure: on a GPU machine the GPU tier must never pass vacuously.
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
    if (
        os.environ.get("PYGPUKIT_REQUIRE_GPU") == "1"
        and report.skipped
        and item.get_closest_marker("gpu") is not None
    ):
        report.outcome = "failed"
        report.longrepr = f"GPU test skipped on a GPU machine: {report.longrepr}"
