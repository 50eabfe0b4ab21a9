"""pytest plugin for ``nox -s array_api``: run data-apis/array-api-tests against PyGPUkit.

Loaded with ``-p array_api_report`` (``ci/`` on ``PYTHONPATH``), before the suite's own
conftest.  It does two things:

1. The suite computes ``widest_complex_dtype = max([... complex dtypes ...])`` at import, which
   fails when complex dtypes are skipped (``ARRAY_API_TESTS_SKIP_DTYPES=complex64,complex128``,
   as runs before PyGPUkit had complex dtypes did, and as a run may still ask).  An import hook
   compiles ``array_api_tests.dtype_helpers`` with that one expression guarded
   (``... if complex_dtypes else None``); the checkout on disk is not modified.
2. With complex dtypes skipped, the special-case tests of complex inputs (which the suite
   parametrizes whatever the dtypes) are skipped too, as the suite skips its other complex
   tests.  ``nox -s array_api`` runs them all (complex included) since complex64/complex128
   exist (pygpukit._complex).
3. It records every test's outcome and, for failures, a one-line reason (the assertion or
   exception message), and writes them with the counts to ``$ARRAY_API_REPORT`` (JSON).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path
from types import CodeType
from typing import Any

import pytest

_MODULE = "array_api_tests.dtype_helpers"
_UNGUARDED = re.compile(
    r"(widest_complex_dtype = max\(\s*\[\(dt, dtype_nbits\[dt\]\) for dt in complex_dtypes\],"
    r"\s*key=lambda x: x\[1\]\s*\)\[0\])")


class _Loader(importlib.machinery.SourceFileLoader):
    def get_code(self, fullname: str) -> CodeType:
        source = self.get_data(self.path).decode("utf-8")
        source = _UNGUARDED.sub(r"\1 if complex_dtypes else None", source)
        return compile(source, self.path, "exec", dont_inherit=True)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != _MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            spec.loader = _Loader(name, spec.loader.path)
        return spec


sys.meta_path.insert(0, _Finder())

#: Why tests fail, for the report's summary: (pattern on the test id, reason), first match wins.
CATEGORIES: tuple[tuple[str, str], ...] = (
    (r"test_has_names\[(linalg|fft)-",
     "the linalg and fft extensions are not offered: PyGPUkit has no factorizations, solvers "
     "or FFTs (pygpukit.linalg holds the norms and products it has)"),
    (r"at most 16 dimensions",
     "PyGPUkit arrays have at most 16 dimensions (the kernels' limit, which "
     "capabilities()['max dimensions'] reports); hypothesis drew more"),
    (r"__i?floordiv__",
     "the // operator keeps NumPy's floor division of infinities (NaN, -1, 0); "
     "pygpukit.array_api.floor_divide follows the standard"),
    (r"test_dunder_dlpack .*copy=False forbids it",
     "the suite asks a CUDA array for a host (kDLCPU) capsule with copy=False, which only a "
     "copy could give: the standard says to raise BufferError then, as PyGPUkit does (drawn "
     "in some runs only)"),
    (r"can_cast\(complex(64|128), float",
     "the suite expects can_cast(complex, float64) because its promotion table has no "
     "(complex, real) entry and None == numpy.dtype('float64') is True (np.dtype(None) is "
     "float64); the standard and NumPy say False, which PyGPUkit answers"),
)

_OUTCOMES: dict[str, str] = {}
_REASONS: dict[str, str] = {}
_START = time.time()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skipped = set(os.environ.get("ARRAY_API_TESTS_SKIP_DTYPES", "").split(","))
    if not {"complex64", "complex128"} <= skipped:
        return
    mark = pytest.mark.skip(reason="a special case of complex inputs; complex dtypes skipped")
    for item in items:
        callspec = getattr(item, "callspec", None)
        case = callspec.params.get("case") if callspec is not None else None
        if getattr(case, "is_complex", False):
            item.add_marker(mark)


def _reason(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first[:240]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    nodeid = report.nodeid
    if report.when == "call" or report.outcome != "passed":
        if report.outcome == "failed" or nodeid not in _OUTCOMES or \
                _OUTCOMES[nodeid] == "passed":
            _OUTCOMES[nodeid] = report.outcome
        if report.outcome == "failed" and nodeid not in _REASONS:
            _REASONS[nodeid] = _reason(report)
    elif nodeid not in _OUTCOMES:
        _OUTCOMES[nodeid] = "passed"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = os.environ.get("ARRAY_API_REPORT")
    if not path or not _OUTCOMES:
        return
    counts = Counter(_OUTCOMES.values())
    passed, failed = counts.get("passed", 0), counts.get("failed", 0)
    failures = [{"test": nodeid, "reason": _REASONS.get(nodeid, "")}
                for nodeid, outcome in sorted(_OUTCOMES.items()) if outcome == "failed"]
    by_function = Counter(f["test"].split("::")[-1].split("[")[0] for f in failures)
    categories: Counter[str] = Counter()
    for failure in failures:
        reason = next((why for pattern, why in CATEGORIES
                       if re.search(pattern, f"{failure['test']} {failure['reason']}")), "other")
        failure["category"] = reason
        categories[reason] += 1
    report = {
        "suite": "data-apis/array-api-tests",
        "suite_commit": os.environ.get("ARRAY_API_TESTS_COMMIT", "unknown"),
        "commit": os.environ.get("PYGPUKIT_COMMIT", "unknown"),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "module": os.environ.get("ARRAY_API_TESTS_MODULE"),
        "backend": os.environ.get("PYGPUKIT_BACKEND", "auto"),
        "max_examples": session.config.getoption("--max-examples", None),
        "seconds": round(time.time() - _START, 1),
        "passed": passed,
        "failed": failed,
        "skipped": counts.get("skipped", 0),
        "pass_rate": round(passed / (passed + failed), 4) if passed + failed else None,
        "pass_rate_is": "passed / (passed + failed); skipped tests (the extensions not "
                        "offered; complex dtypes where ARRAY_API_TESTS_SKIP_DTYPES names them) "
                        "are not counted",
        "skip_dtypes": os.environ.get("ARRAY_API_TESTS_SKIP_DTYPES", ""),
        "failure_categories": dict(categories.most_common()),
        "failures_by_test_function": dict(by_function.most_common()),
        "failures": failures,
    }
    Path(path).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
