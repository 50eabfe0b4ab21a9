"""A/B of two builds: launch, bandwidth and GEMM benchmarks, interleaved.

Made for issue 12's "no change over 2%" check of the old-glibc link: build A is the installed
wheels (driver binding and kernels library linked by zig against glibc 2.28), build B the same
object files linked by the host g++ against the build machine's glibc (as before the change).
Each is a folder that becomes the benchmark processes' ``PYTHONPATH`` (a copy of the installed
packages with the two shared libraries swapped: ``ci/gpu-check``'s step 7 makes it).  The
benchmarks run unchanged, one fresh process per benchmark and build, in the order A B B A A B
... (``--rounds`` rounds of A and B each, drift spread over both), each with ``--runs 1``:

- ``launch``: ``bench_launch.py``, the prepared ``Launcher`` call and the C++ launch loop
  (driver binding);
- ``elementwise``: ``bench_elementwise.py``, ``add`` of 256 MiB float32 operands, GB/s
  (kernels library);
- ``matmul``: ``bench_matmul.py --quick``, every product's TFLOP/s (kernels library: CUTLASS
  host side).

``--benches`` picks some of them (default: all three).  The same script compares two commits
(``ci/gpu-check``'s step 7c, staged by ``ci/stage-commit-ab``: issue 08's "no regression over
2%"): ``--name commit_ab``, the builds' labels (``--label-a``/``--label-b``) and their commits
(``--commit-a``/``--commit-b``: each build's processes get its own ``PYGPUKIT_COMMIT``, and the
result names both).  The benchmark scripts are the current ones; a benchmark that fails in
every round of one build (an API the older build lacks) is recorded under ``not_measured`` with
its error, its figures kept from build A with no B / A and the verdict "not measured in B" (never a
made-up figure); a benchmark that fails in build A, or in some of B's rounds only, stops the
A/B.

Every figure is reported per build as min / median / max over the rounds, with B / A per round
(for times and speeds alike, so 1.0 is no change); the verdict is "within 2%" when the median
B / A is within 2% of 1.0 (``--tolerance``), else which build is faster and by how much (times:
lower is better; GB/s and TFLOP/s: higher).  ``no_regression`` holds when build A is nowhere
slower than B by more than the tolerance.

    python benchmarks/ab_link.py --a SITE_A --b SITE_B --rounds 3 --out link-ab-h100.json
    python benchmarks/ab_link.py --a SITE_A --b SITE_B --name commit_ab \\
        --benches elementwise,matmul --commit-a A --commit-b B --out commit-ab-h100.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _runs import report_head, spread

HERE = Path(__file__).resolve().parent
#: The benchmarks ``--benches`` chooses from: name -> (script, its extra arguments).
BENCHES: dict[str, tuple[str, tuple[str, ...]]] = {
    "launch": ("bench_launch.py", ("-n", "20000")),
    "elementwise": ("bench_elementwise.py", ()),
    "matmul": ("bench_matmul.py", ("--quick", "--repeat", "3")),
}
#: The ``benchmark`` field of the result (its file and README block in ``report.py``).
NAMES = ("link_ab", "commit_ab")
_COMMIT = re.compile(r"[0-9a-f]{7,40}")


class BenchmarkError(Exception):
    """One benchmark process that exited with an error (its stderr's last lines)."""


def figures(name: str, data: dict[str, Any]) -> dict[str, tuple[float, str]]:
    """The figures of one benchmark's result file: label -> (median over its run, unit)."""
    out: dict[str, tuple[float, str]] = {}
    if name == "bench_launch.py":
        summary = data["summary"]
        out["prepared launch (Launcher)"] = (summary["ours_launcher_us"]["median"], "µs")
        out["general launch (launch_kernel)"] = (summary["ours_launch_kernel_us"]["median"],
                                                 "µs")
        out["C++ launch loop"] = (summary["c_loop_floor_us"]["median"], "µs")
    elif name == "bench_elementwise.py":
        for row in data["rows"]:
            if "pygpukit" in row["op"]:
                out[f"{row['op']} GB/s"] = (row["GB/s"]["median"], "GB/s")
    else:
        for row in data["rows"]:
            label = (f"{row['label']} {row['layout']} {row['m']}x{row['n']}x{row['k']}")
            out[label] = (row["ours_tflops"]["median"], "TFLOP/s")
    return out


def judge(unit: str, median_b_over_a: float, tolerance: float) -> str:
    """The verdict on one figure: within the tolerance, or which build is faster by how much."""
    if abs(median_b_over_a - 1.0) <= tolerance:
        return "within 2%" if tolerance == 0.02 else f"within {tolerance:.0%}"
    # A's speed over B's: times (µs) are better lower, rates (GB/s, TFLOP/s) higher.
    speedup = median_b_over_a if unit == "µs" else 1.0 / median_b_over_a
    return f"A faster by {speedup - 1:.1%}" if speedup > 1 else f"A slower by {1 - speedup:.1%}"


def run_one(script: str, args: tuple[str, ...], site: Path,
            commit: str | None = None) -> dict[str, tuple[float, str]]:
    """One benchmark in a fresh process whose ``PYTHONPATH`` is ``site`` alone.

    ``commit`` (when given) is that build's ``PYGPUKIT_COMMIT``.  Raises
    :class:`BenchmarkError` with the end of the process's stderr when it fails.
    """
    env = dict(os.environ)
    # The build's folder alone: nothing of the other build (or of the caller's path) can be
    # imported in its place.
    env["PYTHONPATH"] = str(site)
    if commit:
        env["PYGPUKIT_COMMIT"] = commit
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        proc = subprocess.run([sys.executable, str(HERE / script), "--runs", "1", "--out",
                               str(out), *args], env=env, stderr=subprocess.PIPE, text=True,
                              check=False)
        sys.stderr.write(proc.stderr)
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
            raise BenchmarkError(f"{script} exited with {proc.returncode}: {tail}")
        return figures(script, json.loads(out.read_text()))


def parse_benches(text: str) -> list[str]:
    """``--benches``: comma-separated names of :data:`BENCHES`, each once, in the given order."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in BENCHES]
    if not names or unknown or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated names among {', '.join(BENCHES)} (each once), got "
            f"{text!r}")
    return names


def build_rows(values: dict[str, dict[str, list[float]]], units: dict[str, str],
               missing: dict[str, dict[str, str]], label_bench: dict[str, str], rounds: int,
               tolerance: float) -> list[dict[str, Any]]:
    """One row per figure: each build's spread over the rounds, B / A and the verdict.

    A figure of a benchmark that failed in every round of one build (``missing``: benchmark ->
    build -> error) has that build's side ``None`` and no B / A.
    """
    rows = []
    for label, per in values.items():
        gone = missing.get(label_bench[label], {})
        for side in ("a", "b"):
            if side not in gone and len(per[side]) != rounds:
                raise SystemExit(f"{label}: measured {len(per['a'])} / {len(per['b'])} times "
                                 f"in {rounds} rounds")
        row: dict[str, Any] = {"figure": label, "unit": units[label],
                               "a": spread(per["a"]) if per["a"] else None,
                               "b": spread(per["b"]) if per["b"] else None}
        if gone:
            row["b_over_a"] = None
            row["verdict"] = f"not measured in {'/'.join(s.upper() for s in sorted(gone))}"
        else:
            ratios = [b / a for a, b in zip(per["a"], per["b"], strict=True)]
            row["b_over_a"] = spread(ratios)
            row["verdict"] = judge(units[label], statistics.median(ratios), tolerance)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--a", type=Path, required=True, help="build A's package folder")
    parser.add_argument("--b", type=Path, required=True, help="build B's package folder")
    parser.add_argument("--label-a", "--a-name", dest="a_name",
                        default="zig, glibc 2.28 (the wheels)", help="build A's description")
    parser.add_argument("--label-b", "--b-name", dest="b_name",
                        default="g++, the build machine's glibc (before)",
                        help="build B's description")
    parser.add_argument("--commit-a", help="build A's commit (its processes' PYGPUKIT_COMMIT)")
    parser.add_argument("--commit-b", help="build B's commit (its processes' PYGPUKIT_COMMIT)")
    parser.add_argument("--benches", type=parse_benches, default=list(BENCHES),
                        help=f"comma-separated, among {', '.join(BENCHES)} (default: all)")
    parser.add_argument("--name", choices=NAMES, default="link_ab",
                        help="the result's 'benchmark' field (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tolerance", type=float, default=0.02)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        raise SystemExit(f"--rounds must be at least 1, not {args.rounds}")
    for side in (args.a, args.b):
        if not side.is_dir():
            raise SystemExit(f"no package folder {side}")
    commits = {"a": args.commit_a, "b": args.commit_b}
    for side, commit in commits.items():
        if commit is not None and not _COMMIT.fullmatch(commit):
            raise SystemExit(f"--commit-{side}: {commit!r} is not a commit hash")
    benches = [BENCHES[name] for name in args.benches]
    head = report_head(args.name, args.rounds)
    values: dict[str, dict[str, list[float]]] = {}
    units: dict[str, str] = {}
    label_bench: dict[str, str] = {}
    failures: dict[str, list[str]] = {}  # benchmark -> build B's errors, one per failed round
    for r in range(args.rounds):
        order = ("a", "b") if r % 2 == 0 else ("b", "a")
        for side in order:
            site = args.a if side == "a" else args.b
            for script, extra in benches:
                print(f"-- round {r + 1}/{args.rounds}, build {side.upper()}: {script}",
                      flush=True)
                try:
                    measured = run_one(script, extra, site, commits[side])
                except BenchmarkError as exc:
                    if side == "a":  # the build under test: nothing to wait for
                        raise SystemExit(f"{script} failed in build A in round {r + 1}: "
                                         f"{exc}") from exc
                    print(f"   build B: {exc}", flush=True)
                    failures.setdefault(script, []).append(str(exc))
                    continue
                for label, (value, unit) in measured.items():
                    values.setdefault(label, {"a": [], "b": []})[side].append(value)
                    units[label] = unit
                    label_bench[label] = script
    # A benchmark may fail in build B in every round (what B lacks): anything less is a
    # failure of the A/B.
    missing: dict[str, dict[str, str]] = {}
    for script, errors in failures.items():
        if len(errors) != args.rounds:
            raise SystemExit(f"{script} failed in build B in {len(errors)} of {args.rounds} "
                             f"rounds: {errors[-1]}")
        missing[script] = {"b": errors[-1]}
    rows = build_rows(values, units, missing, label_bench, args.rounds, args.tolerance)
    measured_rows = [row for row in rows if row["b_over_a"] is not None]
    if not measured_rows:
        raise SystemExit("no figure was measured in both builds: nothing to compare")
    result = {**head, "builds": {"a": args.a_name, "b": args.b_name},
              "benchmarks": [f"{s} {' '.join(e)}".strip() for s, e in benches],
              "tolerance": args.tolerance, "rows": rows,
              "all_within": all(row["verdict"].startswith("within") for row in measured_rows),
              "no_regression": not any(row["verdict"].startswith("A slower")
                                       for row in measured_rows)}
    if any(commits.values()):
        result["commits"] = commits
    if missing:
        result["not_measured"] = [{"benchmark": script, "build": side, "error": error}
                                  for script, per in missing.items()
                                  for side, error in per.items()]
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for row in rows:
        a = "-" if row["a"] is None else f"{row['a']['median']:9.3f}"
        b = "-" if row["b"] is None else f"{row['b']['median']:9.3f}"
        ratio = "-" if row["b_over_a"] is None else f"{row['b_over_a']['median']:.4f}"
        print(f"{row['figure']:40s} A {a:>9} B {b:>9} {row['unit']:8s} B/A {ratio:>6}  "
              f"{row['verdict']}")
    for item in result.get("not_measured", []):
        print(f"not measured in build {item['build'].upper()}: {item['error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
