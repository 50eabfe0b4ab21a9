"""Tests of the run aggregation (``_runs``), the README generator (``report.py``) and the A/B
driver (``ab_link.py``, its benchmark processes faked).

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
import ab_link  # noqa: E402
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
    files["commit-ab-h200.json"] = commit_ab_file()
    files["nccl-h200.json"] = nccl_file()
    for name, benchmark in (("sort-h100.json", "sort"), ("indexing-h100.json", "indexing"),
                            ("dask-h100.json", "dask"),
                            ("matmul-sweep-h100.json", "matmul_sweep")):
        body = {k: v for k, v in legacy(name).items() if k not in STRIP}  # measured files
        files[name.replace("h100", "h200")] = {**head(benchmark, 3), **body}
    files["spill-h200.json"] = spill_file()
    files["matmul-fp8-h200.json"] = fp8_file()
    return files


def fp8_file() -> dict[str, Any]:
    """bench_matmul.py --fp8's shape: e4m3 ``linear`` rows against torch._scaled_mm, 3 runs."""
    rng = random.Random(8)
    rows = []
    for m, n, k, layout, target, pct in ((8192, 8192, 8192, "fp8_tensor", 95, 101.0),
                                         (1, 14336, 4096, "fp8_tensor", 90, 96.0),
                                         (8192, 8192, 8192, "fp8_row", None, 99.0)):
        ms = 2.0 * m * n * k / 1.2e15 * 1e3
        rows.append({"dtype": "float8_e4m3fn", "precision": None, "m": m, "n": n, "k": k,
                     "layout": layout, "target": target, "label": "float8_e4m3fn",
                     "kernel": "sm90_fp8_e4e4_128x256x128_c2x1_coop_bf16", "ours_ms": ms,
                     "torch_ms": ms * pct / 100, "ours_tflops": 1200.0,
                     "torch_tflops": 1200.0 * 100 / pct, "pct_of_cublas": pct})
    body = _runs.aggregate([jitter(copy.deepcopy({"rows": rows}), rng, 0.01) for _ in range(3)])
    for row in body["rows"]:
        row.update(rel_error=2.1e-3, max_rel_error=9.0e-3, tolerance=1e-2, finite=True,
                   accurate=True, torch_rel_error=2.1e-3, torch_max_rel_error=9.0e-3)
    return {**head("matmul_fp8", 3), **body}


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


COMMIT_B = "e5da03e01ae1cf92be1193828c2df4871e3b7a81"


def commit_ab_file(not_measured: bool = False) -> dict[str, Any]:
    """``ab_link.py --name commit_ab``'s shape: two commits' builds, bandwidth and GEMM rows.

    ``not_measured``: the GEMM benchmark failed in every round of build B (an API it lacks).
    """
    rows: list[dict[str, Any]] = []
    for label, unit, a, ratios in (
            ("add (pygpukit) GB/s", "GB/s", 2540.0, [0.995, 1.004, 1.01]),
            ("float16 matmul 4096x4096x4096", "TFLOP/s", 727.0, [1.031, 1.035, 1.04]),
            ("bfloat16 linear 16x14336x4096", "TFLOP/s", 42.4, [0.97, 0.972, 0.98])):
        a_runs = [a, a * 1.002, a * 0.998]
        b_runs = [x * r for x, r in zip(a_runs, ratios, strict=True)]
        if not_measured and unit == "TFLOP/s":
            rows.append({"figure": label, "unit": unit, "a": _runs.spread(a_runs), "b": None,
                         "b_over_a": None, "verdict": "not measured in B"})
            continue
        rows.append({"figure": label, "unit": unit, "a": _runs.spread(a_runs),
                     "b": _runs.spread(b_runs), "b_over_a": _runs.spread(ratios),
                     "verdict": ab_link.judge(unit, ratios[1], 0.02)})
    data: dict[str, Any] = {
        **head("commit_ab", 3),
        "builds": {"a": "the current wheels", "b": "the wheels of the older commit"},
        "benchmarks": ["bench_elementwise.py", "bench_matmul.py --quick --repeat 3"],
        "tolerance": 0.02, "rows": rows,
        "all_within": all(r["verdict"].startswith("within") for r in rows if r["b_over_a"]),
        "no_regression": not any(r["verdict"].startswith("A slower") for r in rows),
        "commits": {"a": COMMIT, "b": COMMIT_B}}
    if not_measured:
        data["not_measured"] = [{"benchmark": "bench_matmul.py", "build": "b",
                                 "error": "bench_matmul.py exited with 1: Traceback ...\n"
                                          "AttributeError: module 'pygpukit' has no attribute "
                                          "'linear'"}]
    return data


def commit_ab_block(tree: Path, data: dict[str, Any]) -> str:
    write(tree, "commit-ab-h200.json", data)
    assert run_report(tree) == 0
    assert run_report(tree, "--check") == 0
    results = (tree / "benchmarks" / "results" / "README.md").read_text()
    return results.split("<!-- report:commit-ab -->")[1].split("<!-- /report:commit-ab")[0]


def test_renders_the_commit_ab(tree: Path) -> None:
    block = commit_ab_block(tree, commit_ab_file())
    assert block.startswith("\n`commit-ab-h200.json`, commit 0123456, NVIDIA H200")
    assert ("A: the current wheels (commit 0123456); B: the wheels of the older commit (commit "
            "e5da03e); 3 rounds each, interleaved (`bench_elementwise.py`, "
            "`bench_matmul.py --quick --repeat 3`).") in block
    assert (f"| add (pygpukit) GB/s (GB/s) | 2540.000 (2534.920{report.DASH}2545.080) | "
            in block)
    assert f"| 1.0040 (0.9950{report.DASH}1.0100) | within 2% |" in block
    assert "| float16 matmul 4096x4096x4096 (TFLOP/s) |" in block
    assert "| A slower by 3.4% |" in block  # B / A 1.035 in TFLOP/s: B is the faster
    assert "| A faster by 2.9% |" in block  # B / A 0.972: A is the faster
    assert "Build A is slower than B by more than 2% somewhere (rows above)." in block
    assert "not measured" not in block.lower()


def test_renders_a_commit_ab_with_a_benchmark_one_build_could_not_run(tree: Path) -> None:
    block = commit_ab_block(tree, commit_ab_file(not_measured=True))
    assert ("| float16 matmul 4096x4096x4096 (TFLOP/s) | 727.000 (725.546"
            f"{report.DASH}728.454) | not measured | not measured | not measured in B |") in block
    assert ("Not measured in build B: `bench_matmul.py` (AttributeError: module 'pygpukit' has "
            "no attribute 'linear').") in block
    assert ("Every figure within 2% of the other build. (Over the figures measured in both "
            "builds.)") in block


# -- ab_link.py --------------------------------------------------------------------------------
def fake_ab(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
            measure: Any) -> tuple[list[tuple[str, str, str | None]], Path, Path]:
    """ab_link with its benchmark processes replaced by ``measure(script, build, call)``."""
    calls: list[tuple[str, str, str | None]] = []
    site_a, site_b = tmp_path / "a", tmp_path / "b"
    site_a.mkdir()
    site_b.mkdir()

    def run_one(script: str, args: tuple[str, ...], site: Path,
                commit: str | None = None) -> dict[str, tuple[float, str]]:
        build = "a" if site == site_a else "b"
        calls.append((script, build, commit))
        result: dict[str, tuple[float, str]] = measure(script, build, len(calls))
        return result

    monkeypatch.setattr(ab_link, "run_one", run_one)
    monkeypatch.setattr(ab_link, "report_head", lambda name, runs: head(name, runs))
    return calls, site_a, site_b


def test_ab_link_commit_ab_interleaves_the_chosen_benchmarks(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    def measure(script: str, build: str, call: int) -> dict[str, tuple[float, str]]:
        speed = {"a": 100.0, "b": 90.0}[build] + call / 100  # B 10% slower
        return {f"{script} figure": (speed, "GB/s")}

    calls, site_a, site_b = fake_ab(monkeypatch, tmp_path, measure)
    out = tmp_path / "commit-ab.json"
    assert ab_link.main(["--a", str(site_a), "--b", str(site_b), "--name", "commit_ab",
                         "--benches", "elementwise,matmul", "--label-a", "now",
                         "--label-b", "before", "--commit-a", COMMIT, "--commit-b", COMMIT_B,
                         "--out", str(out)]) == 0
    # A B B A A B, each build with its own commit, only the benchmarks chosen.
    builds = [b for _, b, _ in calls]
    assert builds == ["a", "a", "b", "b", "b", "b", "a", "a", "a", "a", "b", "b"]
    assert {c for _, b, c in calls if b == "a"} == {COMMIT}
    assert {c for _, b, c in calls if b == "b"} == {COMMIT_B}
    assert {s for s, _, _ in calls} == {"bench_elementwise.py", "bench_matmul.py"}
    data = json.loads(out.read_text())
    assert data["benchmark"] == "commit_ab" and data["builds"] == {"a": "now", "b": "before"}
    assert data["commits"] == {"a": COMMIT, "b": COMMIT_B}
    assert data["benchmarks"] == ["bench_elementwise.py", "bench_matmul.py --quick --repeat 3"]
    assert [r["figure"] for r in data["rows"]] == ["bench_elementwise.py figure",
                                                   "bench_matmul.py figure"]
    assert all(r["verdict"] == "A faster by 11.1%" for r in data["rows"])
    assert data["no_regression"] and not data["all_within"] and "not_measured" not in data


def test_ab_link_defaults_stay_those_of_the_link_ab(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    calls, site_a, site_b = fake_ab(monkeypatch, tmp_path,
                                    lambda script, build, call: {script: (4.0, "µs")})
    out = tmp_path / "link-ab.json"
    assert ab_link.main(["--a", str(site_a), "--b", str(site_b), "--rounds", "1",
                         "--out", str(out)]) == 0
    assert [s for s, _, _ in calls] == ["bench_launch.py", "bench_elementwise.py",
                                        "bench_matmul.py"] * 2
    data = json.loads(out.read_text())
    assert data["benchmark"] == "link_ab" and "commits" not in data
    assert data["builds"] == {"a": "zig, glibc 2.28 (the wheels)",
                              "b": "g++, the build machine's glibc (before)"}
    assert data["rows"][0]["verdict"] == "within 2%" and data["all_within"]


def test_ab_link_records_a_benchmark_build_b_cannot_run(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    def measure(script: str, build: str, call: int) -> dict[str, tuple[float, str]]:
        if script == "bench_matmul.py" and build == "b":
            raise ab_link.BenchmarkError("bench_matmul.py exited with 1: AttributeError: linear")
        return {f"{script} figure": (100.0, "TFLOP/s")}

    _, site_a, site_b = fake_ab(monkeypatch, tmp_path, measure)
    out = tmp_path / "commit-ab.json"
    assert ab_link.main(["--a", str(site_a), "--b", str(site_b), "--name", "commit_ab",
                         "--benches", "elementwise,matmul", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    gemm = data["rows"][1]
    assert gemm["figure"] == "bench_matmul.py figure" and gemm["a"]["median"] == 100.0
    assert gemm["b"] is None and gemm["b_over_a"] is None
    assert gemm["verdict"] == "not measured in B"
    assert data["not_measured"] == [{"benchmark": "bench_matmul.py", "build": "b",
                                     "error": "bench_matmul.py exited with 1: "
                                              "AttributeError: linear"}]
    assert data["all_within"] and data["no_regression"]  # over the measured figures
    write_tree = tmp_path / "tree"
    (write_tree / "benchmarks" / "results").mkdir(parents=True)
    shutil.copy(HERE.parent / "README.md", write_tree / "README.md")
    shutil.copy(HERE / "results" / "README.md", write_tree / "benchmarks" / "results")
    (write_tree / "benchmarks" / "results" / "commit-ab-h200.json").write_text(out.read_text())
    assert run_report(write_tree) == 0  # report.py renders what ab_link.py wrote


@pytest.mark.parametrize(("fails_in", "fails_from", "expected", "calls_made"), [
    # calls: A B, B A, A B.  A fails at call 4 (round 2): the A/B stops there.
    ("a", 3, "failed in build A in round 2: .*boom", 4),
    # B fails at calls 3 and 6 (rounds 2 and 3), not in round 1: intermittent.
    ("b", 2, "failed in build B in 2 of 3 rounds: .*boom", 6),
])
def test_ab_link_stops_on_a_failure_of_build_a_or_an_intermittent_one_of_b(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fails_in: str, fails_from: int,
        expected: str, calls_made: int) -> None:
    def measure(script: str, build: str, call: int) -> dict[str, tuple[float, str]]:
        if build == fails_in and call > fails_from:
            raise ab_link.BenchmarkError(f"{script} exited with 1: boom")
        return {"figure": (1.0, "GB/s")}

    calls, site_a, site_b = fake_ab(monkeypatch, tmp_path, measure)
    with pytest.raises(SystemExit, match=expected):
        ab_link.main(["--a", str(site_a), "--b", str(site_b), "--benches", "elementwise",
                      "--out", str(tmp_path / "x.json")])
    assert len(calls) == calls_made and not (tmp_path / "x.json").exists()


def test_ab_link_refuses_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        ab_link.main(["--a", str(tmp_path), "--b", str(tmp_path), "--benches", "gemm",
                      "--out", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit, match="--commit-b: 'HEAD' is not a commit hash"):
        ab_link.main(["--a", str(tmp_path), "--b", str(tmp_path), "--commit-b", "HEAD",
                      "--out", str(tmp_path / "x.json")])
    assert ab_link.parse_benches(" matmul,elementwise ") == ["matmul", "elementwise"]
    with pytest.raises(Exception, match="each once"):
        ab_link.parse_benches("matmul,matmul")


def test_ab_link_runs_each_build_alone_on_pythonpath(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    class Done:
        returncode = 0
        stderr = ""

    def fake_run(cmd: list[str], env: dict[str, str], **kwargs: Any) -> Done:
        seen.update(cmd=cmd, env=env)
        out = Path(cmd[cmd.index("--out") + 1])
        out.write_text(json.dumps({"rows": [{"op": "add (pygpukit)",
                                             "GB/s": {"min": 1, "median": 2, "max": 3}},
                                            {"op": "add (torch)",
                                             "GB/s": {"min": 1, "median": 9, "max": 9}}]}))
        return Done()

    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    monkeypatch.setenv("PYGPUKIT_COMMIT", COMMIT)
    monkeypatch.setattr(ab_link.subprocess, "run", fake_run)
    got = ab_link.run_one("bench_elementwise.py", (), tmp_path / "b", COMMIT_B)
    assert got == {"add (pygpukit) GB/s": (2, "GB/s")}
    assert seen["env"]["PYTHONPATH"] == str(tmp_path / "b")
    assert seen["env"]["PYGPUKIT_COMMIT"] == COMMIT_B
    assert seen["cmd"][1:5] == [str(HERE / "bench_elementwise.py"), "--runs", "1", "--out"]

    Done.returncode, Done.stderr = 1, "Traceback\nAttributeError: no linear\n"
    with pytest.raises(ab_link.BenchmarkError,
                       match=r"bench_elementwise\.py exited with 1: Traceback\nAttributeError"):
        ab_link.run_one("bench_elementwise.py", (), tmp_path / "b")


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
