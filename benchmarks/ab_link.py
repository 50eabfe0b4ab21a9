"""A/B of two builds of the same sources: launch, bandwidth and GEMM benchmarks, interleaved.

Made for issue 12's "no change over 2%" check of the old-glibc link: build A is the installed
wheels (driver binding and kernels library linked by zig against glibc 2.28), build B the same
object files linked by the host g++ against the build machine's glibc (as before the change).
Each is a folder put first on ``PYTHONPATH`` (a copy of the installed packages with the two
shared libraries swapped: ``ci/gpu-check``'s step 7 makes it).  The benchmarks run unchanged,
one fresh process per benchmark and build, in the order A B B A A B ... (``--rounds`` rounds
of A and B each, drift spread over both), each with ``--runs 1``:

- ``bench_launch.py``: the prepared ``Launcher`` call and the C++ launch loop (driver binding);
- ``bench_elementwise.py``: ``add`` of 256 MiB float32 operands, GB/s (kernels library);
- ``bench_matmul.py --quick``: every product's TFLOP/s (kernels library: CUTLASS host side).

Every figure is reported per build as min / median / max over the rounds, with B / A per round
(for times and speeds alike, so 1.0 is no change); the verdict is "within 2%" when the median
B / A is within 2% of 1.0 (``--tolerance``), else which build is faster and by how much (times:
lower is better; GB/s and TFLOP/s: higher).  ``no_regression`` holds when build A is nowhere
slower than B by more than the tolerance.

    python benchmarks/ab_link.py --a SITE_A --b SITE_B --rounds 3 --out link-ab-h100.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _runs import report_head, spread

HERE = Path(__file__).resolve().parent
#: (benchmark script, its extra arguments, figures: label -> (dotted path, unit, better)).
BENCHES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("bench_launch.py", ("-n", "20000")),
    ("bench_elementwise.py", ()),
    ("bench_matmul.py", ("--quick", "--repeat", "3")),
)


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


def run_one(script: str, args: tuple[str, ...], site: Path) -> dict[str, tuple[float, str]]:
    """One benchmark in a fresh process with ``site`` first on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH", "")]))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        subprocess.run([sys.executable, str(HERE / script), "--runs", "1", "--out", str(out),
                        *args], env=env, check=True)
        return figures(script, json.loads(out.read_text()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--a", type=Path, required=True, help="build A's package folder")
    parser.add_argument("--b", type=Path, required=True, help="build B's package folder")
    parser.add_argument("--a-name", default="zig, glibc 2.28 (the wheels)")
    parser.add_argument("--b-name", default="g++, the build machine's glibc (before)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tolerance", type=float, default=0.02)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        raise SystemExit(f"--rounds must be at least 1, not {args.rounds}")
    for side in (args.a, args.b):
        if not side.is_dir():
            raise SystemExit(f"no package folder {side}")
    head = report_head("link_ab", args.rounds)
    values: dict[str, dict[str, list[float]]] = {}
    units: dict[str, str] = {}
    for r in range(args.rounds):
        order = ("a", "b") if r % 2 == 0 else ("b", "a")
        for side in order:
            site = args.a if side == "a" else args.b
            for script, extra in BENCHES:
                print(f"-- round {r + 1}/{args.rounds}, build {side.upper()}: {script}",
                      flush=True)
                for label, (value, unit) in run_one(script, extra, site).items():
                    values.setdefault(label, {"a": [], "b": []})[side].append(value)
                    units[label] = unit
    rows = []
    for label, per in values.items():
        if len(per["a"]) != args.rounds or len(per["b"]) != args.rounds:
            raise SystemExit(f"{label}: measured {len(per['a'])} / {len(per['b'])} times")
        ratios = [b / a for a, b in zip(per["a"], per["b"], strict=True)]
        rows.append({"figure": label, "unit": units[label], "a": spread(per["a"]),
                     "b": spread(per["b"]), "b_over_a": spread(ratios),
                     "verdict": judge(units[label], statistics.median(ratios), args.tolerance)})
    result = {**head, "builds": {"a": args.a_name, "b": args.b_name},
              "benchmarks": [f"{s} {' '.join(e)}".strip() for s, e in BENCHES],
              "tolerance": args.tolerance, "rows": rows,
              "all_within": all(row["verdict"].startswith("within") for row in rows),
              "no_regression": not any(row["verdict"].startswith("A slower") for row in rows)}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for row in rows:
        print(f"{row['figure']:40s} A {row['a']['median']:9.3f} B {row['b']['median']:9.3f} "
              f"{row['unit']:8s} B/A {row['b_over_a']['median']:.4f}  {row['verdict']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
