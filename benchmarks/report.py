"""Regenerate the result tables of the READMEs from ``benchmarks/results/*.json``.

The tables in ``benchmarks/results/README.md`` and the performance tables of the top-level
``README.md`` sit between marker comments (``<!-- report:NAME -->`` ...
``<!-- /report:NAME -->``) and are written by this script only, from the result files present,
so that they cannot drift from the JSON::

    python benchmarks/report.py           # rewrite the marked blocks
    python benchmarks/report.py --check   # exit 1 with a diff when a block is out of date

One file per benchmark and GPU (``matmul-h200.json``, ...): ``ci/gpu-check`` writes them under
those names.  A file of the current format (``schema``, written by the scripts with ``--runs``)
must carry its commit and every figure as ``{min, median, max}``; the script fails naming the
file and the figure otherwise.  Files from before ``--runs`` (single runs) are rendered only
when listed in ``LEGACY`` with the commit they hold, marked as single runs; where a benchmark
has several files of one GPU, the newest is tabulated and the others are listed under it.
Standard library only (it runs in ``nox -s lint``).
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _runs import SCHEMA, is_spread, spread, verdict

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
ROOT = HERE.parent

# Single-run files written before the scripts had --runs, with the commit each holds (None:
# the file records none).  Rendered as "1 run"; a file of that name holding anything else is
# checked as a current one.  Delete an entry when its file is replaced or removed.
LEGACY: dict[str, str | None] = {
    "array-h200.json": "796918ecef4822b0c25ad9a4e9a5eead0ddafe38",
    "copy-cast-h200.json": "796918ecef4822b0c25ad9a4e9a5eead0ddafe38",
    "elementwise-add-h200.json": "796918ecef4822b0c25ad9a4e9a5eead0ddafe38",
    "jit-h200-bind.json": "unknown",
    "jit-h200-run2.json": "5538ba14b7b98eb006b78c75aa6601bd947eb565",
    "jit-h200.json": "796918ecef4822b0c25ad9a4e9a5eead0ddafe38",
    "launch-h200-run2.json": None,
    "launch-h200-run3.json": "0c873063aa557bc70c3deb9706b16fed1518fabd",
    "launch-h200-run4.json": "5538ba14b7b98eb006b78c75aa6601bd947eb565",
    "launch-h200.json": None,
    "math-h200-run2.json": "f5959a61306011bc0db3ebec2b605c2650dff572",
    "math-h200-run3.json": "fbd0d8576f3f137af2d2e3f6dcc4fc849e22d532",
    "math-h200.json": "41446ae883d8578909a4bfa9269ea8c606ea0f52",
    "matmul-h200-run2.json": "f5959a61306011bc0db3ebec2b605c2650dff572",
    "matmul-h200-run3.json": "5538ba14b7b98eb006b78c75aa6601bd947eb565",
    "matmul-h200.json": "41446ae883d8578909a4bfa9269ea8c606ea0f52",
    "partition-h200.json": "796918ecef4822b0c25ad9a4e9a5eead0ddafe38",
    "small-ops-h200.json": "fbd0d8576f3f137af2d2e3f6dcc4fc849e22d532",
}
# The "benchmark" field of a result file -> the name of its file and README block.
SLUGS = {"matmul": "matmul", "math": "math", "copy_cast": "copy-cast", "launch": "launch",
         "jit": "jit", "array": "array", "elementwise": "elementwise",
         "bench_partition": "partition", "small_ops": "small-ops", "random": "random",
         "sort": "sort", "indexing": "indexing", "link_ab": "link-ab",
         "commit_ab": "commit-ab",
         "dask": "dask", "bench_spill": "spill",
         "matmul_sweep": "matmul-sweep", "nccl": "nccl", "matmul_fp8": "matmul-fp8"}
_COMMIT = re.compile(r"[0-9a-f]{7,40}")
TIMES, DASH = "\u00d7", "\u2013"  # the multiplication sign and the en dash of the tables


class ReportError(Exception):
    """A result file that cannot be rendered (named in the message)."""


@dataclass
class Doc:
    """One result file."""

    path: Path
    data: dict[str, Any]
    legacy: bool

    @property
    def single(self) -> bool:
        """A legacy file of one run (no spread: no "on par", "faster" or "slower")."""
        return self.legacy and self.data.get("runs", 1) == 1

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def slug(self) -> str:
        return SLUGS[self.data["benchmark"]]

    def fig(self, value: Any, where: str) -> dict[str, float]:
        """A figure as ``{min, median, max}``; a single-run legacy file's numbers count as one."""
        if is_spread(value):
            return dict(value)
        if self.legacy and isinstance(value, (int, float)) and not isinstance(value, bool):
            return spread([value])
        raise ReportError(f"{self.name}: {where} is {json.dumps(value)[:80]}, not "
                          "{min, median, max} over runs: rerun the current script")

    def get(self, where: str) -> Any:
        """The value at a dotted path (``summary.ours_launcher_us``) or ReportError."""
        node: Any = self.data
        for part in where.split("."):
            if not isinstance(node, dict) or part not in node:
                raise ReportError(f"{self.name}: no {where}")
            node = node[part]
        return node

    def figure(self, where: str) -> dict[str, float]:
        return self.fig(self.get(where), where)

    def has(self, where: str) -> bool:
        try:
            self.get(where)
        except ReportError:
            return False
        return True

    def gpu(self) -> str:
        """The GPU of the file: its device name's first word with a digit (``h200``).

        The same tag ``ci/gpu-check`` puts in the file names.
        """
        found = re.search(r"[A-Za-z]*[0-9]+[A-Za-z0-9]*", str(self.data.get("device")))
        return found.group(0).lower() if found else str(self.data.get("device"))


def load(path: Path) -> Doc:
    """Read and check one result file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path.name}: unreadable: {exc}") from exc
    if not isinstance(data, dict) or data.get("benchmark") not in SLUGS:
        raise ReportError(f"{path.name}: no known 'benchmark' field (one of {sorted(SLUGS)})")
    if data.get("schema") == SCHEMA:
        commit = data.get("commit")
        if not isinstance(commit, str) or not _COMMIT.fullmatch(commit):
            raise ReportError(f"{path.name}: commit is {commit!r}, not a commit hash")
        if not isinstance(data.get("runs"), int) or data["runs"] < 1:
            raise ReportError(f"{path.name}: 'runs' is {data.get('runs')!r}")
        return Doc(path, data, legacy=False)
    if path.name in LEGACY and data.get("commit") == LEGACY[path.name]:
        return Doc(path, data, legacy=True)
    problem = ("no commit" if not data.get("commit") or data.get("commit") == "unknown"
               else "single-run figures (no 'schema': not {min, median, max} over runs)")
    raise ReportError(f"{path.name}: {problem}: rerun benchmarks/bench_*.py through "
                      "ci/gpu-check, or remove the file")


# -- formatting --------------------------------------------------------------------------------
def num(value: float, digits: int) -> str:
    return f"{value:.{digits}f}"


def cell(s: dict[str, float], digits: int = 2, unit: str = "") -> str:
    """``median (min-max)``, or the value alone for a single run."""
    if s["min"] == s["max"]:
        return f"{num(s['median'], digits)}{unit}"
    low, high = num(s["min"], digits), num(s["max"], digits)
    return f"{num(s['median'], digits)}{unit} ({low}{DASH}{high})"


def ratio_cell(s: dict[str, float], *, better: str, digits: int = 2, unit: str = "",
               target: float | None = None, parity: float | None = 1.0) -> str:
    """A ratio to a peer: "on par (min-max)" when its runs straddle parity, else as cell()."""
    if parity is not None and s["min"] < s["max"] and s["min"] <= parity <= s["max"]:
        return f"on par ({num(s['min'], digits)}\u2013{num(s['max'], digits)}{unit})"
    return cell(s, digits, unit)


def short(commit: str | None) -> str:
    return commit[:7] if commit and _COMMIT.fullmatch(commit) else f"not recorded ({commit})"


def source_line(doc: Doc) -> str:
    """Where a table comes from: file, commit, device, driver, versions, date, runs."""
    d = doc.data
    driver = d.get("driver_version")
    if isinstance(driver, int):  # the old bench_launch recorded the CUDA version number
        driver = f"CUDA {driver // 1000}.{driver % 1000 // 10}"
    elif d.get("driver_cuda_version"):
        driver = (f"{driver} (CUDA {d['driver_cuda_version']})" if driver
                  else f"CUDA {d['driver_cuda_version']}")
    versions = d.get("versions") or {k: d[k] for k in ("torch", "cupy")
                                     if isinstance(d.get(k), str)}
    # The peers only (our packages share the commit; NumPy and ml_dtypes only serve the host).
    libs = ", ".join(f"{k} {v}" for k, v in versions.items()
                     if k in ("torch", "cupy", "cuda-core", "cuda-bindings", "cuda-python")
                     or k.startswith("cupy-"))
    if doc.single:
        runs = "1 run (a file from before `--runs`: no spread)"
    else:
        runs = f"{d['runs']} runs, median (min\u2013max)"
        if doc.legacy:
            runs += " (a file from before the current format)"
    parts = [f"`{doc.name}`", f"commit {short(d.get('commit'))}", str(d.get("device")),
             f"driver {driver}" if driver else "driver not recorded"]
    if libs:
        parts.append(libs)
    parts += [str(d.get("date", "no date"))[:10], runs]
    return ", ".join(parts) + "."


def table(header: list[str], align: str, rows: list[list[str]]) -> str:
    """A Markdown table; ``align`` has one letter per column: l(eft) or r(ight)."""
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(sep) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def once(value: Any) -> float:
    """A figure measured once (an accuracy check): the number, or a spread's median."""
    median: float = value["median"] if is_spread(value) else value
    return median


def kernel_name(value: Any) -> str:
    if isinstance(value, dict) and "per_run" in value:
        return " / ".join(f"`{k}`" for k in dict.fromkeys(value["per_run"]))
    return f"`{value}`"


# -- renderers ---------------------------------------------------------------------------------
def judge(doc: Doc, s: dict[str, float], **kwargs: Any) -> str:
    """:func:`verdict`, except that one run cannot tell "faster" / "slower" from "on par"."""
    word = verdict(s, **kwargs)
    if doc.single and word in ("faster", "slower"):
        return "1 run: no verdict"
    return word


def pairs(doc: Doc) -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """Bandwidth rows as (index, ours, torch's): ours carries speed_vs_torch, torch's follows."""
    rows = doc.get("rows")
    out = []
    for i, row in enumerate(rows):
        if "speed_vs_torch" in row:
            if i + 1 >= len(rows) or "speed_vs_torch" in rows[i + 1]:
                raise ReportError(f"{doc.name}: rows[{i}] ({row['op']}) has no torch row after it")
            out.append((i, row, rows[i + 1]))
    return out


def op_name(row: dict[str, Any]) -> str:
    return re.sub(r" \((pygpukit)\)$", "", row["op"])


def render_math(doc: Doc) -> str:
    ceiling = doc.get("rows")[0]
    lines = [source_line(doc), "",
             table(["op", "both sides", "GB/s", "% of copy", "speed vs torch", ""], "llrrrl",
                   [[f"{ceiling['op']}", ceiling.get("policy", "—"),
                     cell(doc.fig(ceiling["GB/s"], "rows[0].GB/s"), 0),
                     cell(doc.fig(ceiling["pct_of_copy"], "rows[0].pct_of_copy"), 1, "%"), "", ""]]
                   + [math_row(doc, i, ours) for i, ours, _ in pairs(doc)])]
    return "\n".join(lines)


def math_row(doc: Doc, i: int, ours: dict[str, Any]) -> list[str]:
    speed = doc.fig(ours["speed_vs_torch"], f"rows[{i}].speed_vs_torch")
    return [op_name(ours), ours.get("policy", "not recorded"),
            cell(doc.fig(ours["GB/s"], f"rows[{i}].GB/s"), 0),
            cell(doc.fig(ours["pct_of_copy"], f"rows[{i}].pct_of_copy"), 1, "%"),
            ratio_cell(speed, better="higher", digits=3, unit=TIMES),
            judge(doc, speed, better="higher")]


def render_sort(doc: Doc) -> str:
    """bench_sort: sorts in keys per second, the scan as % of copy, each beside torch's."""
    rows = []
    for i, r in enumerate(doc.get("rows")):
        if "speed_vs_torch" not in r:
            continue
        speed = doc.fig(r["speed_vs_torch"], f"rows[{i}].speed_vs_torch")
        if "Gkeys/s" in r:
            rate = (cell(doc.fig(r["Gkeys/s"], f"rows[{i}].Gkeys/s"), 2) + " / "
                    + cell(doc.fig(r["torch_Gkeys/s"], f"rows[{i}].torch_Gkeys/s"), 2)
                    + " Gkeys/s")
        else:
            rate = (cell(doc.fig(r["pct_of_copy"], f"rows[{i}].pct_of_copy"), 1, "%") + " / "
                    + cell(doc.fig(r["torch_pct_of_copy"], f"rows[{i}].torch_pct_of_copy"), 1,
                           "%") + " of copy")
        target = f"{r['target']}: {r['target_verdict']}" if "target" in r else ""
        rows.append([r["op"], rate, ratio_cell(speed, better="higher", digits=3, unit=TIMES),
                     judge(doc, speed, better="higher"), target])
    return "\n".join([source_line(doc), "", table(
        ["op", "ours / torch", "speed vs torch", "", "target"], "lrrll", rows)])


def render_readme_math(doc: Doc) -> str:
    rows = []
    for i, ours, _ in pairs(doc):
        speed = doc.fig(ours["speed_vs_torch"], f"rows[{i}].speed_vs_torch")
        rows.append([op_name(ours), ours.get("policy", "not recorded"),
                     cell(doc.fig(ours["pct_of_copy"], f"rows[{i}].pct_of_copy"), 1, "%"),
                     ratio_cell(speed, better="higher", unit=TIMES)])
    mib = doc.data.get("operand_mib", "?")
    return "\n".join([
        f"### Measured on {doc.data.get('device')} (full tables in `benchmarks/results/`)", "",
        f"Math, {mib} MiB float32 operands, side by side with torch in one run (bytes read + "
        "written; speed vs torch = torch's time / ours, per run):", "", source_line(doc), "",
        table(["op", "both sides", "% of copy bandwidth", "vs torch"], "llrr", rows)])


def render_copy_cast(doc: Doc) -> str:
    ceiling = doc.get("rows")[0]
    rows = [[ceiling["op"], ceiling.get("policy", "—"), "", "",
             cell(doc.fig(ceiling["GB/s"], "rows[0].GB/s"), 0), "", ""]]
    for i, ours, theirs in pairs(doc):
        speed = doc.fig(ours["speed_vs_torch"], f"rows[{i}].speed_vs_torch")
        calls = (f"`{ours['calls']}` / `{theirs['calls']}`" if "calls" in ours
                 else f"`pgk_copy` (C ABI) / `{theirs['op'][len(op_name(ours)) + 2:-1]}`")
        rows.append([op_name(ours), ours.get("policy", "not recorded"), calls,
                     cell(doc.fig(ours["pct_of_copy"], f"rows[{i}].pct_of_copy"), 1, "%"),
                     cell(doc.fig(ours["GB/s"], f"rows[{i}].GB/s"), 0) + " / "
                     + cell(doc.fig(theirs["GB/s"], f"rows[{i + 1}].GB/s"), 0),
                     ratio_cell(speed, better="higher", unit=TIMES),
                     judge(doc, speed, better="higher")])
    return "\n".join([source_line(doc), "", table(
        ["op", "both sides", "pygpukit / torch", "ours % of copy_", "GB/s ours / torch",
         "speed vs torch", ""], "lllrrrl", rows)])


MATMUL_LABELS = {"float16": "float16", "bfloat16": "bfloat16", "tf32": "float32 TF32",
                 "highest": "float32 (FP32-accurate)"}


def matmul_rows(doc: Doc) -> list[tuple[int, dict[str, Any], dict[str, float]]]:
    return [(i, r, doc.fig(r["pct_of_cublas"], f"rows[{i}].pct_of_cublas"))
            for i, r in enumerate(doc.get("rows"))]


def matmul_verdict(doc: Doc, row: dict[str, Any], pct: dict[str, float]) -> str:
    if not row.get("accurate", True):
        return "inaccurate"
    if row["target"] is None:
        return judge(doc, pct, better="higher", parity=100.0)
    return judge(doc, pct, better="higher", target=row["target"], parity=100.0)


def matmul_table_rows(doc: Doc, case: Callable[[dict[str, Any]], str],
                      max_error: bool = False) -> tuple[list[list[str]], int, int]:
    """The rows of a product table (case, both TFLOP/s, %, target, verdict, errors, kernel),
    and how many targets were met in every run, of how many."""
    rows: list[list[str]] = []
    met = targets = 0
    for i, r, pct in matmul_rows(doc):
        v = matmul_verdict(doc, r, pct)
        if r["target"] is not None:
            targets += 1
            met += v == "met"
        errors = [f"{once(r['rel_error']):.1e} / {once(r['torch_rel_error']):.1e}"]
        if max_error:
            errors.append(f"{once(r['max_rel_error']):.1e} / {once(r['torch_max_rel_error']):.1e}")
        rows.append([case(r),
                     cell(doc.fig(r["ours_tflops"], f"rows[{i}].ours_tflops"), 1),
                     cell(doc.fig(r["torch_tflops"], f"rows[{i}].torch_tflops"), 1),
                     ratio_cell(pct, better="higher", digits=1, unit="%", parity=100.0),
                     "\u2014" if r["target"] is None else f"\u2265 {r['target']}%", v,
                     *errors, kernel_name(r["kernel"])])
    return rows, met, targets


def render_matmul(doc: Doc) -> str:
    def case(r: dict[str, Any]) -> str:
        op = "`a @ b`" if r["layout"] == "matmul" else "`linear` (W n\u00d7k)"
        label = MATMUL_LABELS[r["precision"] or r["dtype"]]
        return f"{label} {op} {r['m']}\u00d7{r['n']}\u00d7{r['k']}"

    rows, met, targets = matmul_table_rows(doc, case)
    return "\n".join([source_line(doc), "", table(
        ["case", "ours TFLOP/s", "cuBLAS TFLOP/s", "% of cuBLAS", "target", "",
         "rel. error (ours / cuBLAS)", "kernel"], "lrrrrlll", rows), "",
        f"Targets met in every run: {met} of {targets}."])


def render_readme_matmul(doc: Doc) -> str:
    by_label: dict[str, dict[str, str]] = {}
    llm: dict[str, dict[str, list[str]]] = {}
    for _i, r, pct in matmul_rows(doc):
        label = MATMUL_LABELS[r["precision"] or r["dtype"]]
        if r["m"] == r["n"] == r["k"]:
            by_label.setdefault(label, {})[str(r["m"])] = ratio_cell(
                pct, better="higher", digits=1, unit="%", parity=100.0)
        else:
            straddles = pct["min"] < pct["max"] and pct["min"] <= 100.0 <= pct["max"]
            llm.setdefault(label, {}).setdefault(r["layout"], []).append(
                "on par" if straddles else f"{pct['median']:.0f}")
    rows = []
    for label, cubes in by_label.items():
        shapes = llm.get(label)
        rows.append([label + (", vs SGEMM" if "accurate" in label else "")]
                    + [cubes.get(str(s), "—") for s in (2048, 4096, 8192)]
                    + ["; ".join(" / ".join(v) for v in shapes.values()) if shapes else "—"])
    return "\n".join([
        "Matrix products, % of cuBLAS (torch) in the same run:", "", source_line(doc), "",
        table(["dtype", "2048³", "4096³", "8192³",
               "LLM shapes M=1/16/128/4096, N=14336, K=4096 (`a @ b`; `linear`)"],
              "lrrrl", rows)])


def render_launch(doc: Doc) -> str:
    s = "summary"

    def us(key: str) -> str:
        return cell(doc.figure(f"{s}.{key}"), 2) if doc.has(f"{s}.{key}") else "—"

    def vs(key: str, theirs: str, ours: str) -> str:
        if doc.has(f"{s}.{key}"):
            r = doc.figure(f"{s}.{key}")
        elif doc.legacy and doc.has(f"{s}.{theirs}") and doc.has(f"{s}.{ours}"):
            r = spread([doc.get(f"{s}.{theirs}") / doc.get(f"{s}.{ours}")])
        else:
            return "—"
        return f"{ratio_cell(r, better='higher', unit=TIMES)} {judge(doc, r, better='higher')}"

    cc = doc.data.get("cuda_core", {})
    cp = doc.data.get("cupy", {})
    cc_v = f" {cc['version']}" if isinstance(cc.get("version"), str) else ""
    cp_v = f" {cp['version']}" if isinstance(cp.get("version"), str) else ""
    rows = [
        ["general", "pygpukit_driver `launch_kernel(f, 1, 1, [c_uint64, c_uint64, c_int32], 0, s)`",
         us("ours_launch_kernel_us"), "1.00"],
        ["general", f"cuda.core{cc_v} `launch(s, cfg, kernel, buf_a, buf_b, np.int32)`",
         us("cuda_core_launch_us"),
         vs("general_speedup_vs_cuda_core", "cuda_core_launch_us", "ours_launch_kernel_us")],
        ["general", f"CuPy{cp_v} `RawKernel((1,), (1,), (a, b, np.int32))`",
         us("cupy_raw_kernel_us"),
         vs("general_speedup_vs_cupy", "cupy_raw_kernel_us", "ours_launch_kernel_us")],
        ["prepared", "pygpukit_driver `Launcher(f, 1, 1, \"PPi\", stream=s)(a, b, n)`",
         us("ours_launcher_us"), "1.00"],
        ["prepared", "cuda.core stack, args packed once: `cuLaunchKernel(kernel, …, void**)`",
         us("cuda_core_prepacked_us"), vs("prepared_speedup_vs_cuda_core", "", "")],
        ["prepared", "CuPy `RawKernel.kernel((1,), (1,), args)` (no pre-packed form)",
         us("cupy_function_us"), vs("prepared_speedup_vs_cupy", "", "")],
        ["floor", "the same `cuLaunchKernel` repeated from C++ (no Python)",
         us("c_loop_floor_us"), ""],
        ["floor", "GPU time per kernel (events around the launches)", us("gpu_us_per_kernel"), ""],
        ["floor", "256-launch burst (queue not full: host cost alone)", us("ours_burst256_us"),
         ""],
        ["event", "pygpukit_driver `Event(timing=False).record(s)`", us("ours_event_record_us"),
         ""],
        ["event", "pygpukit_driver `Event(timing=True).record(s)`",
         us("ours_event_record_timing_us"), ""],
        ["event", "CuPy `Event(disable_timing=True).record(s)`", us("cupy_event_record_us"), ""],
    ]
    rows = [r for r in rows if r[2] != "—" or not doc.legacy]  # not measured then
    return "\n".join([source_line(doc), "", table(
        ["tier", "what", "µs per call", "theirs / ours (> 1: ours faster)"], "llrl", rows)])


def render_jit(doc: Doc) -> str:
    s = "summary"

    def v(key: str, digits: int, unit: str) -> str:
        return cell(doc.figure(f"{s}.{key}"), digits, unit) if doc.has(f"{s}.{key}") else "—"

    def limit(key: str, bound: float, unit: str) -> str:
        if not doc.has(f"{s}.{key}"):
            return "—"
        f = doc.figure(f"{s}.{key}")
        return f"≤ {bound:g}{unit} — {'met' if f['max'] <= bound else 'not met'}"

    cold = "—"
    if doc.has(f"{s}.cold_compile_ratio_ours_over_cupy"):
        ratio = doc.figure(f"{s}.cold_compile_ratio_ours_over_cupy")
        cold = f"≤ CuPy — {judge(doc, ratio, better='lower', target=1.0)}"
    rows = [
        ["cold compile + load + first launch (README's `scale`)",
         v("cold_compile_ours_ms", 2, " ms"), "CuPy " + v("cold_compile_cupy_ms", 2, " ms"), cold],
        ["fresh process, cache hit → launchable kernel (README order)",
         v("cache_hit_fresh_process_readme_flow_ms", 2, " ms"),
         "CuPy disk hit " + v("cache_hit_fresh_process_cupy_ms", 2, " ms"),
         limit("cache_hit_fresh_process_readme_flow_ms", 2.0, " ms")],
        ["fresh process, cache hit with `gp.jit` first (NVRTC not loaded)",
         v("cache_hit_fresh_process_jit_first_ms", 2, " ms"), "",
         limit("cache_hit_fresh_process_jit_first_ms", 2.0, " ms")],
        ["launch, `kernel(x, factor=0.5, n=x.size)`", v("launch_jit_keywords_us", 2, " µs"),
         "torch `mul_` " + v("launch_torch_mul_us", 2, " µs"),
         limit("launch_jit_keywords_us", 2.5, " µs")],
        ["launch, positional", v("launch_jit_positional_us", 2, " µs"), "", ""],
        ["launch prepared once, `kernel.bind(...)()`", v("launch_jit_bound_us", 2, " µs"), "",
         limit("launch_jit_bound_us", 2.5, " µs")],
        ["bare prepared `Launcher` / C++ `cuLaunchKernel` loop",
         v("launch_bare_launcher_us", 2, " µs") + " / " + v("launch_c_loop_floor_us", 2, " µs"),
         "CuPy RawKernel " + v("launch_cupy_raw_kernel_us", 2, " µs"), "(floors)"],
    ]
    return "\n".join([source_line(doc), "", table(["measure", "ours", "comparison", "target"],
                                                  "lrrl", rows)])


def render_array(doc: Doc) -> str:
    add, imp, tr = "add_1elem_us", "import_ms", "transfer_256MiB_GBps"
    cupy = (cell(doc.figure(f"{add}.cupy"), 2) if doc.has(f"{add}.cupy")
            and not isinstance(doc.get(f"{add}.cupy"), str) else "—")
    pg = doc.figure(f"{add}.pygpukit")
    d_imp = doc.figure(f"{imp}.pygpukit_minus_numpy")
    h2d, d2h = doc.figure(f"{tr}.h2d_ratio"), doc.figure(f"{tr}.d2h_ratio")
    rows = [
        ["`c = a + b`, 1-element float32, host µs per op", cell(pg, 2),
         cell(doc.figure(f"{add}.torch"), 2), cupy,
         f"≤ 2.5 µs — {'met' if pg['max'] <= 2.5 else 'not met'}"],
        ["`import` cost over `import numpy`", cell(d_imp, 1, " ms"), "", "",
         f"≤ 60 ms — {'met' if d_imp['max'] <= 60 else 'not met'}"],
        ["`from_numpy` 256 MiB (pageable)", cell(doc.figure(f"{tr}.from_numpy"), 2, " GB/s"),
         cell(doc.figure(f"{tr}.torch_cuda"), 2) + " (`.cuda()`)", "",
         f"≥ 90% of torch — {judge(doc, h2d, better='higher', target=0.9)} "
         f"({cell(spread([100 * h2d[k] for k in ('min', 'median', 'max')]), 0, '%')})"],
        ["`to_numpy` 256 MiB", cell(doc.figure(f"{tr}.to_numpy"), 2, " GB/s"),
         cell(doc.figure(f"{tr}.torch_cpu"), 2) + " (`.cpu()`)", "",
         f"≥ 90% of torch — {judge(doc, d2h, better='higher', target=0.9)} "
         f"({cell(spread([100 * d2h[k] for k in ('min', 'median', 'max')]), 0, '%')})"],
    ]
    return "\n".join([source_line(doc), "", table(
        ["measure", "pygpukit", "torch", "cupy", "target"], "lrrrl", rows)])


def render_elementwise(doc: Doc) -> str:
    rows = []
    for i, r in enumerate(doc.get("rows")):
        rows.append([r["op"], cell(doc.fig(r["GB/s"], f"rows[{i}].GB/s"), 0),
                     cell(doc.fig(r["vs_copy"], f"rows[{i}].vs_copy"), 3)])
    speed = doc.figure("add_speed_vs_torch")
    return "\n".join([source_line(doc), "", table(["op", "GB/s", "of copy"], "lrr", rows), "",
                      f"pygpukit add speed / torch's: "
                      f"{ratio_cell(speed, better='higher', digits=3, unit=TIMES)} "
                      f"({judge(doc, speed, better='higher')})."])


def render_partition(doc: Doc) -> str:
    def met(ok: bool) -> str:
        return "met" if ok else "not met"

    rows = []
    if doc.has("a"):
        on = doc.figure("a.p99_ratio_on_gated_device_us")
        rows += [
            ["(a) Guaranteed 256\u00d7256 float16 matmuls beside a BestEffort memory-bound "
             "load, GPU latency p99 loaded / solo (partitions on)", cell(on, 2, TIMES),
             f"≤ 1.5\u00d7 — {met(on['max'] <= 1.5)}"],
            ["(a) same with partitions off",
             cell(doc.figure("a.p99_ratio_off_gated_device_us"), 1, TIMES), ""],
            ["(a) host-inclusive p99 (dispatch from one Python process, two threads) on / off",
             cell(doc.figure("a.p99_ratio_on_wall_us"), 2, TIMES) + " / "
             + cell(doc.figure("a.p99_ratio_off_wall_us"), 2, TIMES),
             "not reachable by SM partitioning (GIL)"]]
    if doc.has("b"):
        r = doc.figure("b.on_ratio_vs_7_3")
        dev = spread([100 * (r[k] - 1) for k in ("min", "median", "max")])
        share = doc.figure("b.on_share_of_70")
        rows.append(["(b) 70/30 split: throughput ratio vs 7/3",
                     f"{cell(dev, 1, '%')} (share {cell(spread([100 * share[k] for k in ('min', 'median', 'max')]), 1, '%')})",  # noqa: E501
                     f"±10% — {met(r['min'] >= 0.9 and r['max'] <= 1.1)}"])
    if doc.has("c"):
        refused = doc.get("c.pass_best_effort_refused")
        rows.append(["(c) BestEffort allocation into a Guaranteed reservation",
                     "refused" if refused is True else f"not refused in every run ({refused})",
                     f"refused — {met(refused is True)}"])
    if doc.has("d"):
        adm = doc.figure("d.admission_decisions_per_s")
        pool = doc.figure("d.pool_allocate_free_us")
        rows += [["admission decisions through Python",
                  cell(spread([adm[k] / 1e6 for k in ("min", "median", "max")]), 2, " M/s"),
                  f"≥ 300 000/s — {met(adm['min'] >= 300_000)}"],
                 ["pool allocate + free through Python", cell(pool, 2, " µs"),
                  f"≤ 1 µs — {met(pool['max'] <= 1.0)}"]]
    return "\n".join([source_line(doc), "", table(["measure", "result", "target"], "lll", rows)])


def render_spill(doc: Doc) -> str:
    """bench_spill.py: the over-quota workload's time, spill / restore vs a pinned copy."""
    rows = []
    if doc.has("a.over_quota_over_enough"):
        ratio = doc.figure("a.over_quota_over_enough")
        over = doc.get("a.live_over_quota")
        arrays, size = doc.get("a.arrays"), doc.get("a.array_bytes")
        equal = doc.get("a.data_equal_numpy")
        rows.append([
            f"(a) {once(over):.2g}{TIMES} the quota in live arrays ({arrays} {TIMES} "
            f"{size >> 20} MiB, {doc.get('a.passes')} passes), time over quota / with enough "
            f"quota ({cell(doc.figure('a.over_quota_s'), 2, ' s')} / "
            f"{cell(doc.figure('a.enough_quota_s'), 2, ' s')})",
            cell(ratio, 2, TIMES),
            "completes, data equal to NumPy — "
            + ("met" if equal is True else f"not met ({equal})")])
    if doc.has("b.spill_over_pinned"):
        ref = doc.get("b.reference")
        for what, ours, theirs, direction in (
                ("spill", "b.spill_GBps", "b.pinned_d2h_GBps", "device → host"),
                ("restore", "b.restore_GBps", "b.pinned_h2d_GBps", "host → device")):
            pct = doc.figure(f"b.{what}_over_pinned")
            pct = spread([100 * pct[k] for k in ("min", "median", "max")])
            rows.append([
                f"(b) {what} of {doc.get('b.bytes') >> 20} MiB: {cell(doc.figure(ours), 1)} "
                f"GB/s vs {ref} {direction} {cell(doc.figure(theirs), 1)} GB/s",
                cell(pct, 0, "%"),
                f"≥ 80% — {'met' if pct['min'] >= 80 else 'not met'}"])
    return "\n".join([source_line(doc), "", table(["measure", "result", "target"], "lll", rows)])


def render_small_ops(doc: Doc) -> str:
    floor = doc.figure("c_launch_floor_us")
    prepared = doc.figure("python_prepared_launch_us")
    calls = doc.data.get("calls", "?")
    lines = [
        f"Small ops: wall-clock µs per call over {calls:,} back-to-back calls; ratio ours / "
        "torch per run; the C `cuLaunchKernel` floor of the same runs is "
        f"{cell(floor, 2)} µs and a prepared launch called from Python {cell(prepared, 2)} µs. "
        "Small contiguous operands take one cached plan and one launch of the `small_ops` "
        "fatbin (2-D products: one `pgk_gemm` call), made in C by `pygpukit_driver.FastOp` "
        "from files of commit 6697016 on (earlier: in Python).", "", source_line(doc), ""]
    pdl = doc.data.get("pdl_off", {})
    with_pdl = isinstance(pdl, dict) and "rows" in pdl
    rows = []
    for name, e in doc.get("rows").items():
        where = f"rows.{name}"
        ratio = doc.fig(e["ratio_vs_torch"], f"{where}.ratio_vs_torch")
        target = e["target_vs_torch"]
        parts = re.fullmatch(r"(.*) (\(.*\))", name)
        row = [f"`{parts[1]}` {parts[2]}" if parts else f"`{name}`",
               cell(doc.fig(e["ours_us"], f"{where}.ours_us"), 2),
               cell(doc.fig(e["torch_us"], f"{where}.torch_us"), 2),
               cell(doc.fig(e["cupy_us"], f"{where}.cupy_us"), 2) if "cupy_us" in e else "—",
               ratio_cell(ratio, better="lower"), f"≤ {target}",
               judge(doc, ratio, better="lower", target=target)]
        if with_pdl:
            o = pdl["rows"][name]
            gain = doc.fig(o["pdl_off_over_default"], f"pdl_off.{where}.pdl_off_over_default")
            row += [cell(doc.fig(o["ours_us"], f"pdl_off.{where}.ours_us"), 2),
                    ratio_cell(gain, better="lower")]
        rows.append(row)
    header = ["op", "ours", "torch", "CuPy", "ours / torch", "target", ""]
    align = "lrrrrrl"
    if with_pdl:
        header += ["ours, `PGK_TUNE_PDL=0`", "PDL off / default"]
        align += "rr"
    lines.append(table(header, align, rows))
    g = doc.get("graph")
    graph = (f"CUDA graphs (same file): {g.get('ops', 92)} mixed small ops (elementwise, "
             "reductions, casts, a GEMM, a JIT launch) captured with `gp.graph()` replay at "
             f"{cell(doc.fig(g['replay_us_per_op'], 'graph.replay_us_per_op'), 2)} µs per op "
             "(torch.cuda.graph of the same ops: "
             f"{cell(doc.fig(g['torch_replay_us_per_op'], 'graph.torch_replay_us_per_op'), 2)}"
             "), "
             f"{cell(doc.fig(g['eager_over_replay'], 'graph.eager_over_replay'), 1, TIMES)} "
             "faster than running them eagerly, "
             f"{'bit-identical to' if g['replay_equals_eager'] else 'NOT identical to'} the "
             "eager run.")
    if "fused_ops" in g:
        graph += (f" {g['fused_ops']} of the ops replay fused (each captured line of small "
                  "kernels as one launch of one block).")
    jit = doc.data.get("jit", {})
    if "keyword_over_bound" in jit:
        ratio = doc.fig(jit["keyword_over_bound"], "jit.keyword_over_bound")
        graph += f" A JIT keyword call costs {cell(ratio, 2, TIMES)} its bound launch."
    lines += ["", graph]
    return "\n".join(lines)


def render_matmul_fp8(doc: Doc) -> str:
    """FP8 e4m3 ``linear`` against ``torch._scaled_mm`` (bench_matmul.py --fp8)."""
    def case(r: dict[str, Any]) -> str:
        scales = "row-wise" if r["layout"] == "fp8_row" else "per-tensor"
        return f"e4m3 {scales} {r['m']}\u00d7{r['n']}\u00d7{r['k']}"

    rows, met, targets = matmul_table_rows(doc, case, max_error=True)
    return "\n".join([source_line(doc), "", table(
        ["case", "ours TFLOP/s", "torch TFLOP/s", "% of torch._scaled_mm", "target", "",
         "rel. error (ours / torch)", "max error / max abs. ref. (ours / torch)", "kernel"],
        "lrrrrllll", rows), "", f"Targets met in every run: {met} of {targets}."])


def render_matmul_sweep(doc: Doc) -> str:
    lines = [render_matmul(doc), ""]
    for dtype, g in doc.get("geomean_pct_of_cublas").items():
        fig = doc.fig(g, f"geomean_pct_of_cublas.{dtype}")
        target = doc.get("geomean_target")
        lines.append(f"Geometric mean over the {dtype} shapes: {cell(fig, 1, '%')} of cuBLAS "
                     f"(target {target:.0f}%: "
                     f"{verdict(fig, better='higher', target=target, parity=100.0)}).")
    return "\n".join(lines)


def render_nccl(doc: Doc) -> str:
    n = doc.get("nranks")
    rows = []
    for i, r in enumerate(doc.get("rows")):
        ratio = ""
        if "busbw_vs_torch" in r:
            fig = doc.fig(r["busbw_vs_torch"], f"rows[{i}].busbw_vs_torch")
            ratio = (f"{ratio_cell(fig, better='higher', digits=3, unit=TIMES)} "
                     f"({judge(doc, fig, better='higher')})")
        rows.append([r["op"], cell(doc.fig(r["ms"], f"rows[{i}].ms"), 2),
                     cell(doc.fig(r["algbw_GBps"], f"rows[{i}].algbw_GBps"), 1),
                     cell(doc.fig(r["busbw_GBps"], f"rows[{i}].busbw_GBps"), 1), ratio,
                     r.get("verdict", "")])
    target = doc.data.get("target_busbw_vs_torch")
    return "\n".join([
        source_line(doc), "",
        f"{n} ranks, one GPU each; NCCL {doc.data.get('nccl_pygpukit')} for pygpukit, "
        f"{doc.data.get('nccl_torch')} for torch; bus bandwidth by nccl-tests' formula "
        f"(2(n-1)/n x algorithm bandwidth).", "",
        table(["op", "ms", "algbw GB/s", "busbw GB/s", "busbw vs torch", "target "
               f"(>= {target}x)"], "lrrrrl", rows)])


def render_dask(doc: Doc) -> str:
    d = doc.data
    sq, mm, task = doc.get("square_sum"), doc.get("matmul"), doc.get("per_task")
    rows = []
    for label, row, unit, digits in (
            (f"(x ** 2).sum(), {sq['n']:,} float32 in chunks of {sq['chunk']:,}", sq, "GB/s", 1),
            (f"x @ y, {mm['m']}² float32 in {mm['block']}² blocks", mm, "TFLOP/s", 2)):
        cupy = (cell(doc.fig(row[f"cupy_{unit}"], f"cupy_{unit}"), digits)
                if f"cupy_{unit}" in row else "not run")
        speed = (ratio_cell(doc.fig(row["speed_vs_cupy"], "speed_vs_cupy"), better="higher",
                            digits=3, unit=TIMES) if "speed_vs_cupy" in row else "")
        target = (f"{row['target']}: {row['target_verdict']}" if "target" in row else "")
        rows.append([label, f"{cell(doc.fig(row[unit], unit), digits)} {unit}", cupy, speed,
                     target])
    over = doc.fig(task["gpuarray_minus_numpy_us"], "per_task.gpuarray_minus_numpy_us")
    per = doc.fig(task["gpuarray_us_per_task"], "per_task.gpuarray_us_per_task")
    line = (f"Per task ({task['chunks']} chunks of {task['chunk']}, (x ** 2).sum()): "
            f"{cell(per, 1)} µs with GPUArray chunks, {cell(over, 1)} µs more than NumPy "
            "chunks")
    if "cupy_us_per_task" in task:
        line += (f", CuPy chunks {cell(doc.fig(task['cupy_us_per_task'], 'cupy_us'), 1)} µs")
    return "\n".join([
        source_line(doc), "",
        f"Dask {d.get('dask_version')}, threaded scheduler with {d.get('threads')} threads, "
        "arrays persisted on the device; wall time of `.compute()` plus a synchronization.", "",
        table(["graph", "GPUArray chunks", "CuPy chunks", "speed vs CuPy", "target"], "lrrrl",
              rows), "", line + "."])


def render_ab(doc: Doc) -> str:
    """An A/B of two builds (``ab_link.py``): the link A/B and the commit A/B.

    A commit A/B names both builds' commits; a benchmark that one build could not run (listed
    under ``not_measured``) shows "not measured" on its side and no B / A.
    """
    builds = doc.get("builds")
    commits = doc.data.get("commits") or {}
    tol = doc.data.get("tolerance", 0.02)
    rows = []
    for i, r in enumerate(doc.get("rows")):
        sides = [cell(doc.fig(r[key], f"rows[{i}].{key}"), digits) if r[key] is not None
                 else "not measured" for key, digits in (("a", 3), ("b", 3), ("b_over_a", 4))]
        rows.append([f"{r['figure']} ({r['unit']})", *sides, r["verdict"]])
    names = {side: builds[side] + (f" (commit {short(commits[side])})" if commits.get(side)
                                   else "") for side in ("a", "b")}
    lines = [
        source_line(doc), "",
        f"A: {names['a']}; B: {names['b']}; {doc.data['runs']} rounds each, interleaved "
        f"(`{'`, `'.join(doc.get('benchmarks'))}`).", "",
        table(["figure", "A", "B", "B / A", "verdict"], "lrrrl", rows), ""]
    for item in doc.data.get("not_measured", []):
        lines += [f"Not measured in build {item['build'].upper()}: `{item['benchmark']}` "
                  f"({item['error'].splitlines()[-1] if item['error'] else 'no error text'}).",
                  ""]
    pct = f"{tol:.0%}"
    lines.append(
        f"Every figure within {pct} of the other build." if doc.get("all_within") else
        (f"Build A is nowhere slower than B by more than {pct}; the figures outside {pct} are "
         "A's gains." if doc.get("no_regression") else
         f"Build A is slower than B by more than {pct} somewhere (rows above)."))
    if doc.data.get("not_measured"):
        lines[-1] += " (Over the figures measured in both builds.)"
    return "\n".join(lines)


RESULTS_BLOCKS: dict[str, Callable[[Doc], str]] = {
    "matmul": render_matmul, "math": render_math, "small-ops": render_small_ops,
    "jit": render_jit, "partition": render_partition, "copy-cast": render_copy_cast,
    "array": render_array, "launch": render_launch, "elementwise": render_elementwise,
    "random": render_math,  # bandwidth rows paired with torch, as bench_math's
    "indexing": render_math,  # likewise
    "sort": render_sort,
    "link-ab": render_ab,
    "commit-ab": render_ab,  # the same A/B of two commits (ab_link.py --name commit_ab)
    "dask": render_dask,
    "matmul-sweep": render_matmul_sweep,
    "matmul-fp8": render_matmul_fp8,
    "nccl": render_nccl,
    "spill": render_spill,
}
README_BLOCKS: dict[str, tuple[str, Callable[[Doc], str]]] = {
    "readme-math": ("math", render_readme_math),
    "readme-matmul": ("matmul", render_readme_matmul),
    "readme-small-ops": ("small-ops", render_small_ops),
}


# -- assembling --------------------------------------------------------------------------------
#: Result files that are not benchmarks: conformance runs (``nox -s array_api``).
NOT_BENCHMARKS = ("array-api-",)


def load_all(folder: Path) -> dict[str, list[Doc]]:
    """Every result file, by benchmark, newest first.  Fails on the first bad file."""
    by_slug: dict[str, list[Doc]] = {}
    for path in sorted(folder.glob("*.json")):
        if path.name.startswith(NOT_BENCHMARKS):
            continue
        doc = load(path)
        by_slug.setdefault(doc.slug, []).append(doc)
    for docs in by_slug.values():
        docs.sort(key=lambda d: str(d.data.get("date", "")), reverse=True)
    return by_slug


def primaries(docs: list[Doc]) -> tuple[list[Doc], list[Doc]]:
    """The newest file of each GPU, and the older ones."""
    newest: dict[str, Doc] = {}
    older = []
    for doc in docs:
        if doc.gpu() in newest:
            older.append(doc)
        else:
            newest[doc.gpu()] = doc
    return list(newest.values()), older


def results_block(slug: str, docs: list[Doc]) -> str:
    if not docs:
        return "No result file for this benchmark in `benchmarks/results/`."
    main, older = primaries(docs)
    parts = [RESULTS_BLOCKS[slug](doc) for doc in main]
    if older:
        parts.append("Older files of this benchmark and GPU (not tabulated): "
                     + "; ".join(f"`{d.name}` (commit {short(d.data.get('commit'))}, "
                                 f"{str(d.data.get('date', 'no date'))[:10]})" for d in older)
                     + ".")
    return "\n\n".join(parts)


def readme_block(slug: str, render: Callable[[Doc], str], docs: list[Doc]) -> str:
    if not docs:
        return f"No `{slug}` result file in `benchmarks/results/`."
    return render(docs[0])


def fill(text: str, blocks: dict[str, str], name: str) -> str:
    """Replace the body of every ``<!-- report:NAME -->`` block of ``text``."""
    found = re.findall(r"<!-- report:([\w-]+) -->", text)
    unknown = sorted(set(found) - set(blocks))
    missing = sorted(set(blocks) - set(found))
    if unknown or missing:
        raise ReportError(f"{name}: marker blocks unknown to report.py: {unknown}; "
                          f"blocks without markers: {missing}")
    for key, body in blocks.items():
        pattern = re.compile(rf"(<!-- report:{key} -->\n).*?(<!-- /report:{key} -->)", re.S)
        if not pattern.search(text):
            raise ReportError(f"{name}: <!-- report:{key} --> has no closing marker")
        text = pattern.sub(lambda m, body=body: m.group(1) + body + "\n" + m.group(2), text)
    return text


def generate(results: Path, root: Path) -> dict[Path, str]:
    """The new text of each README."""
    by_slug = load_all(results)
    unknown = sorted(set(by_slug) - set(RESULTS_BLOCKS))
    if unknown:
        raise ReportError(f"no renderer for {unknown}")
    out = {}
    readme = results / "README.md"
    out[readme] = fill(readme.read_text(encoding="utf-8"),
                       {slug: results_block(slug, by_slug.get(slug, []))
                        for slug in RESULTS_BLOCKS}, str(readme.relative_to(root)))
    top = root / "README.md"
    out[top] = fill(top.read_text(encoding="utf-8"),
                    {key: readme_block(slug, render, by_slug.get(slug, []))
                     for key, (slug, render) in README_BLOCKS.items()}, "README.md")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 with a diff when a block is out of date")
    parser.add_argument("--results", type=Path, default=RESULTS, help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        new = generate(args.results, args.root)
    except ReportError as exc:
        print(f"report.py: {exc}", file=sys.stderr)
        return 2
    stale = []
    for path, text in new.items():
        old = path.read_text(encoding="utf-8")
        if old == text:
            continue
        stale.append(path)
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(keepends=True), text.splitlines(keepends=True),
                str(path.relative_to(args.root)), f"{path.relative_to(args.root)} (generated)"))
        else:
            path.write_text(text, encoding="utf-8")
    if args.check and stale:
        print("report.py --check: out of date: "
              + ", ".join(str(p.relative_to(args.root)) for p in stale)
              + " (run: python benchmarks/report.py)", file=sys.stderr)
        return 1
    if not args.check:
        print("up to date" if not stale else
              "rewrote " + ", ".join(str(p.relative_to(args.root)) for p in stale))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
