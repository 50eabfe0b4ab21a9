"""Repository-wide pytest hooks.

With ``PYGPUKIT_REQUIRE_GPU=1`` (set by ci/gpu-check on the GPU machine) a ``gpu``-marked test
that skips is reported as a failure: on a GPU machine the GPU tier must never pass vacuously.
``PYGPUKIT_REQUIRE_MULTI_GPU=1`` does the same for ``multigpu`` tests (set it on multi-GPU
machines).  In CI (``CI=true``, where every extra and hypothesis are installed) and with
``PYGPUKIT_REQUIRE_SCHED=1`` / ``PYGPUKIT_REQUIRE_FUZZ=1`` / ``PYGPUKIT_REQUIRE_DASK=1``,
``sched``, ``fuzz`` and ``dask`` tests that skip fail too.

The ``required_tool`` fixture finds a command-line tool (a C compiler, ``cuobjdump``): a test
that needs a missing one skips with the reason locally and fails in CI.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Generator, Iterable
from pathlib import Path

import pytest


def in_ci() -> bool:
    """Whether this run is CI's (``.ci/run`` runs with ``CI=true``)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _flag(env: str) -> bool:
    return os.environ.get(env) == "1"


# marker -> whether a skip of a test carrying it is a failure in this run.
_REQUIRED: dict[str, Callable[[], bool]] = {
    "gpu": lambda: _flag("PYGPUKIT_REQUIRE_GPU"),
    "multigpu": lambda: _flag("PYGPUKIT_REQUIRE_MULTI_GPU"),
    # CI installs every extra and hypothesis: a missing one there is a broken setup.
    "sched": lambda: _flag("PYGPUKIT_REQUIRE_SCHED") or in_ci(),
    "fuzz": lambda: _flag("PYGPUKIT_REQUIRE_FUZZ") or in_ci(),
    "dask": lambda: _flag("PYGPUKIT_REQUIRE_DASK") or in_ci(),
}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    """Turn a skipped GPU (or otherwise required) test into a failure when it is required."""
    outcome = yield
    report = outcome.get_result()
    # An expected failure (xfail) is reported as skipped too: it is an outcome, not a skip.
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    # A GPU test where that GPU is not required (the CPU tier, one GPU for a two-GPU test) may
    # skip whatever else it is marked: no machine here could run it.
    if any(item.get_closest_marker(m) is not None and not _REQUIRED[m]()
           for m in ("gpu", "multigpu")):
        return
    required = [marker for marker, needed in _REQUIRED.items()
                if item.get_closest_marker(marker) is not None and needed()]
    if required:
        report.outcome = "failed"
        where = ("GPU test skipped on a GPU machine" if {"gpu", "multigpu"} & set(required)
                 else f"{required[0]} test skipped where it is required (CI or "
                      f"PYGPUKIT_REQUIRE_{required[0].upper()}=1)")
        report.longrepr = f"{where}: {report.longrepr}"


def _candidates(name: str) -> Iterable[str | None]:
    """Where ``name`` may be: PATH, a CUDA Toolkit, NVIDIA's PyPI wheels (nvidia/cu13/bin)."""
    yield shutil.which(name)
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            yield str(Path(root) / "bin" / name)
    for entry in sys.path:
        yield str(Path(entry or ".") / "nvidia" / "cu13" / "bin" / name)


def find_tool(*names: str) -> str | None:
    """The first executable found for any of ``names`` (``$CC`` counts for ``cc``)."""
    for name in names:
        if name == "cc" and (cc := os.environ.get("CC")):
            found = shutil.which(cc)
            if found:
                return found
        for path in _candidates(name):
            if path and os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None


RequiredTool = Callable[..., str]


@pytest.fixture(scope="session")
def required_tool() -> RequiredTool:
    """required_tool(*names, why=...): the tool's path; skip locally, fail in CI, if absent."""

    def lookup(*names: str, why: str) -> str:
        found = find_tool(*names)
        if found is not None:
            return found
        message = f"{' / '.join(names)} not found (PATH, CUDA_HOME, nvidia wheels): {why}"
        if in_ci():
            pytest.fail(f"CI must provide it: {message}", pytrace=False)
        pytest.skip(message)

    return lookup
