"""One API test suite over both backends: ``cpu`` everywhere, ``cuda`` where a GPU is present.

Also the fuzz suite's hypothesis profile (test_fuzz.py) and its example count:
``PYGPUKIT_FUZZ_EXAMPLES`` examples per test (default 50, so CI stays fast; the GPU tier sets
more), derandomized unless ``PYGPUKIT_FUZZ_SEED`` is set (then pass ``--hypothesis-seed`` too);
``PYGPUKIT_FUZZ_REPORT=path.json`` writes the examples run and the outcome of each fuzz test.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import pygpukit as gp
from pygpukit import _backend

FUZZ_PROFILE = "pygpukit-fuzz"


def fuzz_examples() -> int:
    """Examples per fuzz test (``PYGPUKIT_FUZZ_EXAMPLES``, default 50)."""
    return max(1, int(os.environ.get("PYGPUKIT_FUZZ_EXAMPLES", "50")))


try:
    from hypothesis import HealthCheck, settings
except ImportError:  # test_fuzz.py then skips, marked `fuzz` (a failure in CI)
    pass
else:
    settings.register_profile(
        FUZZ_PROFILE,
        max_examples=fuzz_examples(),
        deadline=None,  # a GPU's first launch of a kernel, or a 70000-element array, is slow
        # A fixed budget that reproduces: the same examples every run unless a seed is given.
        derandomize=os.environ.get("PYGPUKIT_FUZZ_SEED") is None,
        database=None,  # no replay of examples stored by another run or machine
        print_blob=True,  # a failure prints @reproduce_failure(...) to paste onto the test
        # `backend` is set once per test and holds for every example (no per-example state).
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                               HealthCheck.data_too_large, HealthCheck.large_base_example],
    )

_FUZZ_EXAMPLES: dict[str, int] = {}
_FUZZ_OUTCOMES: dict[str, str] = {}


@pytest.fixture
def fuzz_count(request: pytest.FixtureRequest) -> Callable[[], None]:
    """Call once per example: the examples each fuzz test ran go into PYGPUKIT_FUZZ_REPORT."""
    nodeid = request.node.nodeid
    _FUZZ_EXAMPLES.setdefault(nodeid, 0)

    def tick() -> None:
        _FUZZ_EXAMPLES[nodeid] += 1

    return tick


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "fuzz" not in report.keywords:
        return
    if report.when == "call" or report.outcome != "passed":
        _FUZZ_OUTCOMES[report.nodeid] = report.outcome


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = os.environ.get("PYGPUKIT_FUZZ_REPORT")
    if not path or not _FUZZ_OUTCOMES:
        return
    tests: dict[str, dict[str, Any]] = {
        nodeid: {"outcome": outcome, "examples": _FUZZ_EXAMPLES.get(nodeid, 0)}
        for nodeid, outcome in sorted(_FUZZ_OUTCOMES.items())}
    outcomes = [t["outcome"] for t in tests.values()]
    summary = {
        "examples_per_test": fuzz_examples(),
        "seed": os.environ.get("PYGPUKIT_FUZZ_SEED", "derandomized"),
        "total_examples": sum(int(t["examples"]) for t in tests.values()),
        "cuda_examples": sum(int(t["examples"]) for n, t in tests.items() if "[cuda" in n),
        "passed": outcomes.count("passed"),
        "failed": outcomes.count("failed"),
        "skipped": outcomes.count("skipped"),
        "tests": tests,
    }
    Path(path).write_text(json.dumps(summary, indent=1) + "\n")


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


@pytest.fixture
def cuda_backend(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The CUDA backend alone, for tests that only mean something on a GPU (mark them ``gpu``:
    the GPU tier fails tests that skip there)."""
    if (reason := _cuda_skip_reason()) is not None:
        pytest.skip(reason)
    monkeypatch.setenv(_backend.ENV_BACKEND, "cuda")
    _backend._reset_for_tests()
    yield


@pytest.fixture(autouse=True)
def _fresh_backend() -> Iterator[None]:
    _backend._reset_for_tests()
    yield
    _backend._reset_for_tests()
