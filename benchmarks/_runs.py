"""Runs, spreads, verdicts and the report head shared by every benchmark script.

Each script measures its figures ``--runs`` times (an outer loop) and reports every figure as
``{"min", "median", "max"}`` over the runs (:func:`aggregate`).  Ratios are computed inside
each run first (the ratio of two medians is not the median of the ratios), then aggregated, and
carry a verdict from :func:`verdict`.  :func:`report_head` refuses to start without the commit
under test.  Pure Python (no GPU import at module level): ``benchmarks/report.py`` uses it too.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import math
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

#: The result-file format written by the current scripts (report.py checks for it).
SCHEMA = "pygpukit-bench/2"
SPREAD_KEYS = ("min", "median", "max")
_COMMIT = re.compile(r"[0-9a-f]{7,40}")
# Distributions whose versions go into every result file (normalized names, prefix match).
_VERSIONED = ("torch", "cupy", "cuda-core", "cuda-bindings", "cuda-python", "numpy", "ml-dtypes",
              "pygpukit", "nvidia-cuda-nvrtc")


def add_runs_argument(parser: argparse.ArgumentParser, default: int = 3) -> None:
    """Add ``--runs N``: how many times the whole measurement is repeated."""
    parser.add_argument("--runs", type=int, default=default,
                        help="repeat the whole measurement N times; every figure is reported "
                             "as min / median / max over the runs (default %(default)s)")


def require_commit() -> str:
    """The commit under test from ``PYGPUKIT_COMMIT``; exit with a message when it is missing.

    The GPU machine runs a copy of the tree without ``.git``: ``ci/gpu-check`` sets the
    variable from ``.gpu/COMMIT`` (written by ``nox -s gpu_prepare``).  A result file without
    the commit that produced it cannot be trusted or reproduced, so no script runs without it.
    """
    commit = os.environ.get("PYGPUKIT_COMMIT", "").strip().lower()
    if not _COMMIT.fullmatch(commit):
        raise SystemExit(
            f"PYGPUKIT_COMMIT={os.environ.get('PYGPUKIT_COMMIT')!r} is not a commit hash: set it "
            "to the commit under test (ci/gpu-check sets it from .gpu/COMMIT, written by "
            "'nox -s gpu_prepare')")
    return commit


def kernel_driver_version() -> str:
    """The NVIDIA kernel driver's version (e.g. ``580.159.04``), or why it could not be read."""
    path = "/proc/driver/nvidia/version"
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        return f"unreadable ({path}: {exc.strerror})"
    found = re.search(r"Kernel Module.*?\s(\d+\.\d+(?:\.\d+)?)\s", text)
    return found.group(1) if found else f"not found in {path}"


def library_versions() -> dict[str, str]:
    """Versions of torch, CuPy, cuda.core, NumPy and our packages as the interpreter sees them.

    Read from the installed metadata, so nothing is imported (no CUDA initialized); the first
    distribution on ``sys.path`` wins, as it does for ``import``.
    """
    found: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower()
        # Exact names (torch-geometric is not torch), and CuPy by its CUDA-flavoured names.
        if name and name not in found and (name in _VERSIONED or name.startswith(
                ("cupy-", "pygpukit-"))):
            found[name] = dist.version
    return dict(sorted(found.items()))


def report_head(benchmark: str, runs: int, **fields: Any) -> dict[str, Any]:
    """The common head of a result file: format, commit, device, driver, date, versions.

    Exits (:func:`require_commit`) when the commit is unknown.  The device and the driver come
    from ``pygpukit_driver`` (no torch needed); without a GPU they say why.
    """
    commit = require_commit()
    import pygpukit_driver as drv

    head: dict[str, Any] = {"schema": SCHEMA, "benchmark": benchmark, "commit": commit,
                            "runs": runs}
    if drv.is_available():
        version = drv.driver_version()
        head["device"] = drv.Device(0).name
        head["driver_version"] = kernel_driver_version()
        head["driver_cuda_version"] = f"{version // 1000}.{version % 1000 // 10}"
    else:
        reason = drv.unavailable_reason()
        head["device"] = f"no GPU ({reason})"
        head["driver_version"] = head["driver_cuda_version"] = f"none ({reason})"
    head["date"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    head["python"] = platform.python_version()
    head["versions"] = library_versions()
    # Kernel tuning knobs (docs/gpu-tier.md) change what is measured: record the ones set.
    head["tuning_env"] = {k: v for k, v in sorted(os.environ.items()) if k.startswith("PGK_TUNE_")}
    head.update(fields)
    return head


def per_run(total: int, runs: int) -> int:
    """A count per run that keeps ``total`` over all runs (at least 1)."""
    return max(1, math.ceil(total / max(1, runs)))


def spread(values: Sequence[float]) -> dict[str, float]:
    """``{"min", "median", "max"}`` of the per-run values of one figure."""
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def is_spread(obj: object) -> bool:
    """Whether ``obj`` is a ``{"min", "median", "max"}`` figure."""
    return (isinstance(obj, dict) and all(k in obj for k in SPREAD_KEYS)
            and all(isinstance(obj[k], (int, float)) and not isinstance(obj[k], bool)
                    for k in SPREAD_KEYS))


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def aggregate(runs: Sequence[Any]) -> Any:
    """Merge the per-run results of one structure into one, figure by figure.

    Floats (measurements) become :func:`spread` s; integers equal in every run (sizes,
    counts, targets) stay as they are, differing ones become spreads; strings, booleans and
    ``None`` equal in every run stay; dicts merge key by key and lists of dicts item by item.
    Anything else that differs between runs (a kernel chosen differently, raw sample lists, a
    key present in some runs only) is kept as ``{"per_run": [...]}`` rather than hidden.
    """
    first = runs[0]
    if all(is_spread(r) for r in runs) and len(runs) == 1:
        return first
    if all(_number(r) for r in runs):
        if all(isinstance(r, int) for r in runs) and all(r == first for r in runs):
            return first
        return spread(runs)
    if all(isinstance(r, dict) for r in runs):
        keys = list(first)
        keys += [k for r in runs[1:] for k in r if k not in keys]
        return {k: aggregate([r[k] for r in runs]) if all(k in r for r in runs)
                else {"per_run": [r.get(k) for r in runs]} for k in keys}
    if (all(isinstance(r, list) for r in runs) and all(len(r) == len(first) for r in runs)
            and all(isinstance(x, dict) for r in runs for x in r)):
        return [aggregate(items) for items in zip(*runs, strict=True)]
    if all(r == first for r in runs) and not isinstance(first, (list, dict)):
        return first
    return {"per_run": list(runs)}


def verdict(ratio: dict[str, float], *, better: str, target: float | None = None,
            parity: float | None = 1.0) -> str:
    """The verdict on a ratio's spread over the runs.

    ``better`` is ``"lower"`` (a time ratio ours/theirs) or ``"higher"`` (a speed ratio, a
    percentage of a peer).  With a ``target``: ``"met"`` when every run meets it, else
    ``"not met"``.  Without one: ``"on par"`` when the runs straddle ``parity`` (1.0 for a ratio
    to a peer, 100 for a percentage of one; the runs cannot tell the two apart), else
    ``"faster"`` / ``"slower"`` than the peer.  ``parity=None`` for a ratio to
    something that is not a peer (a bandwidth ceiling): no "on par" then.
    """
    if better not in ("lower", "higher"):
        raise ValueError(f"better: 'lower' or 'higher', not {better!r}")
    lo, hi = ratio["min"], ratio["max"]
    if target is not None:  # a target is met by every run or not met (the ratio itself may
        # still read "on par" where it is shown)
        return "met" if (hi <= target if better == "lower" else lo >= target) else "not met"
    if parity is not None and lo <= parity <= hi:
        return "on par"
    if parity is None:
        return "—"
    ahead = hi < parity if better == "lower" else lo > parity
    return "faster" if ahead else "slower"


def absolute_verdict(figure: dict[str, float], limit: float, *, better: str = "lower") -> str:
    """``"met"`` when every run is within an absolute limit (µs, ms), else ``"not met"``."""
    ok = figure["max"] <= limit if better == "lower" else figure["min"] >= limit
    return "met" if ok else "not met"


def run_sections(sections: Sequence[tuple[str, Callable[[], dict[str, Any]]]],
                 wanted: Callable[[str], bool]) -> dict[str, Any]:
    """One run of a benchmark made of sections: each wanted one timed, a failing one recorded.

    A section that raises is kept as ``{"error": ...}`` (the others still run; the script
    exits non-zero through :func:`failed_sections`); each gets its ``section_seconds``.
    """
    run: dict[str, Any] = {}
    for key, fn in sections:
        if not wanted(key):
            continue
        t = time.perf_counter()
        try:
            run[key] = fn()
        except Exception as exc:  # keep the other sections; recorded, non-zero exit
            run[key] = {"error": f"{type(exc).__name__}: {exc}"}
        run[key]["section_seconds"] = time.perf_counter() - t
        print(f"== {key}", json.dumps(run[key], indent=1, default=str)[:3000], flush=True)
    return run


def failed_sections(runs: Sequence[dict[str, Any]], out: Any) -> int:
    """Exit status of a sectioned benchmark: 1 (naming them) if a section failed in a run."""
    failed = sorted({key for r in runs for key, value in r.items() if "error" in value})
    if failed:
        print(f"failed sections: {', '.join(failed)} (errors in {out})", file=sys.stderr)
        return 1
    return 0


def repeat_runs(runs: int, one_run: Callable[[int], Any]) -> list[Any]:
    """Call ``one_run(i)`` for ``i`` in ``range(runs)`` and return the results."""
    if runs < 1:
        raise SystemExit(f"--runs must be at least 1, not {runs}")
    results = []
    for i in range(runs):
        print(f"-- run {i + 1}/{runs}", flush=True)
        results.append(one_run(i))
    return results
