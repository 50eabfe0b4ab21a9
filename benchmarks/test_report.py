"""Tests of the run aggregation (``_runs``) and the README generator (``report.py``).

No GPU needed: the result files are made here, in the shapes the scripts write (per-run
results aggregated by ``_runs.aggregate``).  Run with ``python -m pytest benchmarks``.
"""

from __future__ import annotations

import copy
import json
import random
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _runs  # noqa: E402
import _timing  # noqa: E402
import report  # noqa: E402

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def head(benchmark: str, runs: int) -> dict[str, Any]:
    return {"schema": _runs.SCHEMA, "benchmark": benchmark, "commit": COMMIT, "runs": runs,
            "device": "NVIDIA H200", "driver_version": "580.159.04",
            "driver_cuda_version": "13.0", "date": "2027-01-01T00:00:00+00:00",
            "python": "3.12.3", "versions": {"torch": "2.11.0+cu130", "cupy-cuda13x": "14.2.0",
                                             "cuda-core": "1.2.0"}, "tuning_env": {}}


def jitter(node: Any, rng: random.Random, spread: float) -> Any:
    """A copy of a legacy single-run structure with every float moved by up to ``spread``."""
    if isinstance(node, float):
        return node * (1 + rng.uniform(-spread, spread))
    if isinstance(node, dict):
        return {k: jitter(v, rng, spread) for k, v in node.items()}
    if isinstance(node, list):
        return [jitter(v, rng, spread) for v in node]
    return node


def legacy(name: str) -> dict[str, Any]:
    """A single-run result file of an earlier script (kept as test data, not as a result)."""
    data: dict[str, Any] = json.loads((HERE / "testdata" / name).read_text())
    return data


STRIP = ("benchmark", "device", "driver_cuda_version", "driver_version", "torch", "cupy", "date",
         "commit", "python", "platform", "runs")


def as_current(name: str, benchmark: str, runs: int = 3, spread: float = 0.03,
               seed: int = 0, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A legacy file turned into what the current script writes: runs aggregated, new head."""
    body = {k: v for k, v in legacy(name).items() if k not in STRIP}
    rng = random.Random(seed)
    per_run = [jitter(copy.deepcopy(body), rng, spread) for _ in range(runs)]
    if extra:
        for run in per_run:
            for key, value in extra.items():
                run.setdefault(key, {}).update(jitter(value, rng, spread))
    return {**head(benchmark, runs), **_runs.aggregate(per_run)}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the two READMEs with their markers, and an empty results folder."""
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    shutil.copy(HERE.parent / "README.md", tmp_path / "README.md")
    shutil.copy(HERE / "results" / "README.md", tmp_path / "benchmarks" / "results" / "README.md")
    return tmp_path


def write(tree: Path, name: str, data: dict[str, Any]) -> None:
    (tree / "benchmarks" / "results" / name).write_text(json.dumps(data))


def run_report(tree: Path, *args: str) -> int:
    return report.main([*args, "--results", str(tree / "benchmarks" / "results"),
                        "--root", str(tree)])


# -- _runs -------------------------------------------------------------------------------------
def test_aggregate_turns_floats_into_spreads_and_keeps_constants() -> None:
    runs = [{"op": "add", "bytes": 8, "ms": 1.0, "ok": True, "rows": [{"x": 1.0}]},
            {"op": "add", "bytes": 8, "ms": 3.0, "ok": True, "rows": [{"x": 2.0}]},
            {"op": "add", "bytes": 8, "ms": 2.0, "ok": True, "rows": [{"x": 4.0}]}]
    out = _runs.aggregate(runs)
    assert out["op"] == "add" and out["bytes"] == 8 and out["ok"] is True
    assert out["ms"] == {"min": 1.0, "median": 2.0, "max": 3.0}
    assert out["rows"][0]["x"] == {"min": 1.0, "median": 2.0, "max": 4.0}


def test_aggregate_keeps_what_differs_per_run() -> None:
    out = _runs.aggregate([{"kernel": "a", "samples": [1.0]}, {"kernel": "b", "samples": [2.0]},
                           {"extra": 1, "kernel": "a", "samples": [3.0]}])
    assert out["kernel"] == {"per_run": ["a", "b", "a"]}
    assert out["samples"] == {"per_run": [[1.0], [2.0], [3.0]]}
    assert out["extra"] == {"per_run": [None, None, 1]}


@pytest.mark.parametrize(("ratio", "kwargs", "expected"), [
    ({"min": 0.71, "median": 0.73, "max": 0.80}, {"better": "lower", "target": 0.8}, "met"),
    ({"min": 0.76, "median": 1.01, "max": 1.07}, {"better": "lower", "target": 0.7}, "not met"),
    ({"min": 1.05, "median": 1.08, "max": 1.40}, {"better": "lower", "target": 0.8}, "not met"),
    ({"min": 98.0, "median": 101.0, "max": 103.0},
     {"better": "higher", "target": 95, "parity": 100.0}, "met"),
    ({"min": 91.0, "median": 99.0, "max": 101.0},
     {"better": "higher", "target": 95, "parity": 100.0}, "not met"),
    ({"min": 1.01, "median": 1.02, "max": 1.03}, {"better": "higher"}, "faster"),
    ({"min": 0.97, "median": 0.98, "max": 0.99}, {"better": "higher"}, "slower"),
    ({"min": 0.97, "median": 0.98, "max": 0.99}, {"better": "lower"}, "faster"),
    ({"min": 0.99, "median": 1.00, "max": 1.02}, {"better": "higher"}, "on par"),
])
def test_verdict(ratio: dict[str, float], kwargs: dict[str, Any], expected: str) -> None:
    assert _runs.verdict(ratio, **kwargs) == expected


@pytest.mark.parametrize("value", [None, "", "unknown", "xyz1234", "0123"])
def test_require_commit_refuses(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("PYGPUKIT_COMMIT", raising=False)
    else:
        monkeypatch.setenv("PYGPUKIT_COMMIT", value)
    with pytest.raises(SystemExit, match="PYGPUKIT_COMMIT"):
        _runs.require_commit()


def test_require_commit_accepts_a_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYGPUKIT_COMMIT", COMMIT.upper() + "\n")
    assert _runs.require_commit() == COMMIT


def test_per_run_keeps_the_total() -> None:
    assert _runs.per_run(15, 3) == 5 and _runs.per_run(20, 3) == 7 and _runs.per_run(1, 3) == 1


# -- report.py ---------------------------------------------------------------------------------
def test_checked_in_readmes_are_up_to_date() -> None:
    assert report.main(["--check"]) == 0


def current_files() -> dict[str, dict[str, Any]]:
    """One current-format file per benchmark, shaped as the scripts write them."""
    launch_extra = {"summary": {"cuda_core_prepacked_us": 3.3, "cupy_function_us": 4.6,
                                "general_speedup_vs_cuda_core": 1.01,
                                "prepared_speedup_vs_cuda_core": 0.95,
                                "general_speedup_vs_cupy": 1.25,
                                "prepared_speedup_vs_cupy": 1.2,
                                "ours_event_record_timing_us": 2.9}}
    jit_extra = {"summary": {"cold_compile_ratio_ours_over_cupy": 0.4}}
    matmul = as_current("matmul-h200-run3.json", "matmul")
    for row, old in zip(matmul["rows"], legacy("matmul-h200-run3.json")["rows"], strict=True):
        for key in ("rel_error", "torch_rel_error"):  # checked once: run 1's value, as the script
            row[key] = old[key]
    files = {
        "matmul-h200.json": matmul,
        "math-h200.json": as_current("math-h200-run3.json", "math", spread=0.01),
        "copy-cast-h200.json": as_current("copy-cast-h200.json", "copy_cast", spread=0.02),
        "launch-h200.json": as_current("launch-h200-run4.json", "launch", extra=launch_extra),
        "jit-h200.json": as_current("jit-h200-run2.json", "jit", extra=jit_extra),
        "array-h200.json": as_current("array-h200.json", "array"),
        "elementwise-h200.json": as_current("elementwise-add-h200.json", "elementwise"),
        "partition-h200.json": as_current("partition-h200.json", "bench_partition"),
    }
    small = legacy("small-ops-h200.json")
    small = {k: v for k, v in small.items() if k not in STRIP}
    small["pdl_off"] = {"env": {"PGK_TUNE_PDL": "0"}, "rows": {
        name: {**entry, "pdl_off_over_default": {"min": 0.97, "median": 1.04, "max": 1.1}}
        for name, entry in small["rows"].items()}}
    files["small-ops-h200.json"] = {**head("small_ops", 3), **small}
    files["random-h200.json"] = random_file()
    files["link-ab-h200.json"] = link_ab_file()
    files["nccl-h200.json"] = nccl_file()
    for name, benchmark in (("sort-h100.json", "sort"), ("indexing-h100.json", "indexing"),
                            ("dask-h100.json", "dask"),
                            ("matmul-sweep-h100.json", "matmul_sweep")):
        body = {k: v for k, v in legacy(name).items() if k not in STRIP}  # measured files
        files[name.replace("h100", "h200")] = {**head(benchmark, 3), **body}
    files["spill-h200.json"] = spill_file()
    return files


def nccl_file() -> dict[str, Any]:
    """bench_nccl.py's shape (two ranks): ours and torch's all_reduce rows over 3 runs."""
    runs = []
    for algbw in (180.0, 184.0, 178.0):
        rows = [{"op": "all_reduce sum f32 1 GiB (pygpukit.distributed)", "nranks": 2,
                 "ms": 2**30 / algbw / 1e6, "algbw_GBps": algbw, "busbw_GBps": algbw},
                {"op": "all_reduce sum f32 1 GiB (torch.distributed)", "nranks": 2,
                 "ms": 2**30 / 185.0 / 1e6, "algbw_GBps": 185.0, "busbw_GBps": 185.0}]
        rows[0]["busbw_vs_torch"] = algbw / 185.0
        runs.append(rows)
    rows = _runs.aggregate(runs)
    rows[0]["verdict"] = _runs.verdict(rows[0]["busbw_vs_torch"], better="higher", target=0.9)
    return {**head("nccl", 3), "nranks": 2, "bytes": 2**30, "iters": 20, "repeat": 5,
            "nccl_pygpukit": "2.28.9", "nccl_pygpukit_path": "/site/nvidia/nccl/lib",
            "nccl_torch": "2.28.9", "target_busbw_vs_torch": 0.9, "rows": rows}


def link_ab_file() -> dict[str, Any]:
    """ab_link.py's shape: per figure, build A's and B's spreads over the rounds and B / A."""
    rows = []
    for label, unit, a in (("prepared launch (Launcher)", "µs", 4.3),
                           ("add (pygpukit) GB/s", "GB/s", 3900.0),
                           ("float16 matmul 4096x4096x4096", "TFLOP/s", 690.0)):
        ratios = [0.99, 1.003, 1.012]
        rows.append({"figure": label, "unit": unit, "a": _runs.spread([a, a * 1.01, a * 0.99]),
                     "b": _runs.spread([a * r for r in ratios]), "b_over_a": _runs.spread(ratios),
                     "verdict": "within 2%"})
    return {**head("link_ab", 3), "builds": {"a": "zig", "b": "g++"},
            "benchmarks": ["bench_launch.py -n 20000"], "tolerance": 0.02, "rows": rows,
            "all_within": True, "no_regression": True}


def spill_file() -> dict[str, Any]:
    """bench_spill.py's shape: its CPU-simulation output (testdata) under a GPU head."""
    body = {k: v for k, v in legacy("spill-cpu-simulation.json").items() if k not in STRIP}
    return {**head("bench_spill", 3), **body}


def test_renders_the_spill_benchmark(tree: Path) -> None:
    data = spill_file()
    data["b"]["restore_over_pinned"] = {"min": 0.75, "median": 0.85, "max": 0.9}
    write(tree, "spill-h200.json", data)
    assert run_report(tree) == 0
    results = (tree / "benchmarks" / "results" / "README.md").read_text()
    block = results.split("<!-- report:spill -->")[1].split("<!-- /report:spill")[0]
    assert block.startswith("\n`spill-h200.json`, commit 0123456")
    a = data["a"]
    assert f"(a) 1.5{report.TIMES} the quota in live arrays ({a['arrays']} {report.TIMES} 8 MiB" \
        in block
    assert "completes, data equal to NumPy — met" in block
    assert "(b) spill of 64 MiB" in block and "NumPy host copy (CPU simulation)" in block
    assert "≥ 80% — met" in block  # spill: every run above 80% of the copy
    # restore: one run below the target
    assert f"| 85% (75{report.DASH}90) | ≥ 80% — not met |" in block


def random_file() -> dict[str, Any]:
    """bench_random.py's shape: a copy ceiling, then pygpukit / torch / cupy rows per fill."""
    rng = random.Random(1)
    n = 1 << 26

    def one_run() -> list[dict[str, Any]]:
        ceiling = 4300.0 * (1 + rng.uniform(-0.01, 0.01))
        rows: list[dict[str, Any]] = [{"op": "torch copy_ f32 (ceiling)",
                                       "policy": "into an existing tensor", "bytes": 8 * n,
                                       "ms": 8 * n / ceiling / 1e6, "GB/s": ceiling}]
        for op, ours, theirs in (("standard_normal f32", 3600.0, 3500.0),
                                 ("random (uniform) f32", 4000.0, 3900.0)):
            ours *= 1 + rng.uniform(-0.02, 0.02)
            rows.append({"op": f"{op} (pygpukit)", "policy": "both allocate", "bytes": 4 * n,
                         "ms": 4 * n / ours / 1e6, "GB/s": ours, "speed_vs_torch": ours / theirs,
                         "speed_vs_cupy": ours / 2000.0})
            rows.append({"op": f"{op} (torch)", "policy": "both allocate", "bytes": 4 * n,
                         "ms": 4 * n / theirs / 1e6, "GB/s": theirs})
            rows.append({"op": f"{op} (cupy)", "policy": "both allocate", "bytes": 4 * n,
                         "ms": 4 * n / 2000.0 / 1e6, "GB/s": 2000.0})
        for row in rows:
            row["pct_of_copy"] = 100 * row["GB/s"] / ceiling
        return rows

    rows = _runs.aggregate([one_run() for _ in range(3)])
    return {**head("random", 3), "elements": n, "repeat": 7, "batch": 10, "cupy": "present",
            "targets": {"standard_normal_f32_ge_90pct_of_copy": "not met",
                        "standard_normal_f32_ge_torch_randn": "met"}, "rows": rows}


def test_renders_current_files_with_spreads_and_verdicts(tree: Path) -> None:
    for name, data in current_files().items():
        write(tree, name, data)
    assert run_report(tree) == 0
    assert run_report(tree, "--check") == 0
    results = (tree / "benchmarks" / "results" / "README.md").read_text()
    top = (tree / "README.md").read_text()
    assert f"3 runs, median (min{report.DASH}max)" in results
    assert "commit 0123456" in results and "driver 580.159.04 (CUDA 13.0)" in results
    assert "Older files" not in results  # one file per benchmark and GPU
    # A ratio whose runs straddle parity reads "on par", not a percentage or a speed-up.
    assert "on par (" in results
    assert "| prepared | cuda.core stack" in results
    assert "ours, `PGK_TUNE_PDL=0`" in top and "PDL off / default" in top
    for line in results.splitlines() + top.splitlines():
        if "on par (" in line:
            inside = line.split("on par (")[1].split(")")[0]
            low, high = inside.split(report.DASH)
            assert float(low) <= float(high.rstrip("%" + report.TIMES))
    assert "No result file" not in results


def test_stale_readme_fails_check_with_a_diff(tree: Path, capsys: pytest.CaptureFixture[str],
                                              ) -> None:
    write(tree, "math-h200.json", as_current("math-h200-run3.json", "math"))
    assert run_report(tree, "--check") == 1
    out = capsys.readouterr()
    assert "+++ benchmarks/results/README.md (generated)" in out.out
    assert "out of date" in out.err


def test_fails_naming_a_file_without_commit(tree: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    data = as_current("math-h200-run3.json", "math")
    data["commit"] = "unknown"
    write(tree, "math-h200.json", data)
    assert run_report(tree, "--check") == 2
    assert "math-h200.json: commit is 'unknown'" in capsys.readouterr().err


def test_fails_naming_a_figure_without_spread(tree: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    data = as_current("matmul-h200-run3.json", "matmul")
    data["rows"][3]["pct_of_cublas"] = 97.0
    write(tree, "matmul-h200.json", data)
    assert run_report(tree, "--check") == 2
    err = capsys.readouterr().err
    assert "matmul-h200.json: rows[3].pct_of_cublas is 97.0, not {min, median, max}" in err


def test_fails_on_an_unlisted_single_run_file(tree: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    data = legacy("math-h200-run3.json")
    data["commit"] = COMMIT  # a single-run file, but not one of the known legacy files
    write(tree, "math-h200.json", data)
    assert run_report(tree, "--check") == 2
    assert "math-h200.json: single-run figures" in capsys.readouterr().err


def test_a_new_file_supersedes_an_old_one_of_the_same_gpu(tree: Path) -> None:
    shutil.copy(HERE / "testdata" / "elementwise-add-h200.json",
                tree / "benchmarks" / "results" / "elementwise-add-h200.json")
    write(tree, "elementwise-h200.json", as_current("elementwise-add-h200.json", "elementwise"))
    assert run_report(tree) == 0
    results = (tree / "benchmarks" / "results" / "README.md").read_text()
    block = results.split("<!-- report:elementwise -->")[1].split("<!-- /report:elementwise")[0]
    assert block.startswith("\n`elementwise-h200.json`, commit 0123456")
    assert "Older files of this benchmark and GPU (not tabulated): `elementwise-add-h200.json`" \
        in block


def test_renders_exactly_the_files_present(tree: Path) -> None:
    write(tree, "array-h200.json", as_current("array-h200.json", "array"))
    assert run_report(tree) == 0
    results = (tree / "benchmarks" / "results" / "README.md").read_text()
    assert "`array-h200.json`" in results
    assert results.count("No result file for this benchmark") == len(report.RESULTS_BLOCKS) - 1
    assert "No `math` result file" in (tree / "README.md").read_text()


def test_bandwidth_rows_as_the_scripts_wrote_them() -> None:
    # The rows bench_math / bench_indexing / bench_random / bench_copy_cast build (one helper).
    ceiling = _timing.ceiling_row(0.2, 8 << 20)
    assert ceiling == {"op": "torch copy_ f32 (ceiling)", "policy": "into an existing tensor",
                       "bytes": 8 << 20, "ms": 0.2, "GB/s": (8 << 20) / 0.2e-3 / 1e9}
    ours, theirs = _timing.paired_rows("add f32", "out=", 3 << 20, 0.1, 0.12,
                                       {"calls": "a"}, {"calls": "b"})
    assert list(ours) == ["op", "policy", "calls", "bytes", "ms", "GB/s", "speed_vs_torch"]
    assert ours["op"] == "add f32 (pygpukit)" and theirs["op"] == "add f32 (torch)"
    assert ours["speed_vs_torch"] == 0.12 / 0.1 and "speed_vs_torch" not in theirs
    assert theirs["calls"] == "b" and theirs["GB/s"] == (3 << 20) / 0.12e-3 / 1e9
    rows = _runs.aggregate([[ceiling, ours, theirs], [ceiling, ours, theirs]])
    _timing.torch_verdicts(rows)
    assert rows[1]["verdict"] == "faster" and "verdict" not in rows[2]
