"""Random number generation at memory bandwidth, side by side with PyTorch and CuPy in one run.

Fills of 2**--log2n elements (default 2**26): ``standard_normal`` float32 (the headline: targets
>= 90% of copy bandwidth and >= 1.0x ``torch.randn``), float64, uniform float32 (``random`` vs
``torch.rand``) and integers in [0, 1000) as int64 and int32 (``integers`` vs
``torch.randint``), each vs torch and, where installed, CuPy's ``default_rng`` Generator
(XORWOW; CuPy has no Philox generator).  Like for like: "both allocate" rows return a new array
on every side; "into an existing array" rows fill a preallocated buffer (``out=`` for pygpukit,
the in-place ``normal_`` / ``uniform_`` for torch; CuPy's Generator has no such form).  GB/s
count the bytes written; "% of copy" is the ratio to torch's ``copy_`` of a float32 buffer of
the same element count (bytes read + written), the bandwidth ceiling, measured in each run.
Each library is timed with its own events on its own current stream: 3 warm-ups, median of
--repeat samples of --batch back-to-back calls (see ``_timing.median_event_ms``).  The results
are checked once (moments of the draws, and pygpukit's first values against the NumPy
definition of its streams); the timings are repeated --runs times, every figure reported as
min / median / max over the runs.  Writes JSON to --out.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _runs import (
    add_runs_argument,
    aggregate,
    repeat_runs,
    report_head,
    require_commit,
    verdict,
)
from _timing import (
    CupyEvent,
    ceiling_row,
    gbps,
    median_event_ms,
    paired_rows,
    pct_of_copy,
    print_bandwidth_rows,
    torch_event,
    torch_verdicts,
)

import pygpukit as gp
from pygpukit import _philox

ALLOC, INTO = "both allocate", "into an existing array"
HEADLINE = "standard_normal f32"


def main() -> None:
    """Run the benchmark and write the JSON report."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--log2n", type=int, default=26, help="elements per fill: 2**log2n")
    parser.add_argument("--repeat", type=int, default=7, help="timed samples per run")
    parser.add_argument("--batch", type=int, default=10,
                        help="back-to-back calls per timed sample (1: per-call latency)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--skip-checks", action="store_true", help="skip the result checks")
    add_runs_argument(parser)
    args = parser.parse_args()
    require_commit()
    assert gp.backend() == "cuda", "the benchmark needs the CUDA backend"
    n = 1 << args.log2n

    cp: Any = None
    if importlib.util.find_spec("cupy") is not None:
        import cupy as cp
    else:
        print("cupy is not installed: its rows are recorded as absent")

    rng = gp.random.default_rng(2026)
    tgen = torch.Generator(device="cuda").manual_seed(2026)
    crng = cp.random.default_rng(2026) if cp is not None else None
    dev = "cuda"

    if not args.skip_checks:
        check(rng, n)

    g32, t32 = gp.empty(n, gp.float32), torch.empty(n, device=dev)

    # (op, policy, bytes written, ours, torch, cupy or None)
    cases: list[tuple[str, str, int, Callable[[], object], Callable[[], object],
                      Callable[[], object] | None]] = [
        (HEADLINE, ALLOC, 4 * n, lambda: rng.standard_normal(n),
         lambda: torch.randn(n, device=dev, generator=tgen),
         (lambda: crng.standard_normal(n, dtype=cp.float32)) if crng is not None else None),
        (HEADLINE, INTO, 4 * n, lambda: rng.standard_normal(out=g32),
         lambda: t32.normal_(generator=tgen), None),
        ("standard_normal f64", ALLOC, 8 * n,
         lambda: rng.standard_normal(n, dtype=gp.float64),
         lambda: torch.randn(n, device=dev, dtype=torch.float64, generator=tgen),
         (lambda: crng.standard_normal(n, dtype=cp.float64)) if crng is not None else None),
        ("random (uniform) f32", ALLOC, 4 * n, lambda: rng.random(n),
         lambda: torch.rand(n, device=dev, generator=tgen),
         (lambda: crng.random(n, dtype=cp.float32)) if crng is not None else None),
        ("random (uniform) f32", INTO, 4 * n, lambda: rng.random(out=g32),
         lambda: t32.uniform_(generator=tgen), None),
        ("integers [0, 1000) int64", ALLOC, 8 * n, lambda: rng.integers(0, 1000, n),
         lambda: torch.randint(0, 1000, (n,), device=dev, generator=tgen),
         (lambda: crng.integers(0, 1000, n, dtype=cp.int64)) if crng is not None else None),
        ("integers [0, 1000) int32", ALLOC, 4 * n,
         lambda: rng.integers(0, 1000, n, dtype=gp.int32),
         lambda: torch.randint(0, 1000, (n,), device=dev, dtype=torch.int32, generator=tgen),
         (lambda: crng.integers(0, 1000, n, dtype=cp.int32)) if crng is not None else None),
    ]
    ceiling_src, ceiling_dst = torch.rand(n, device=dev), torch.empty(n, device=dev)
    torch.cuda.synchronize()

    def one_run(_: int) -> list[dict[str, Any]]:
        ceiling = ceiling_row(median_event_ms(lambda: ceiling_dst.copy_(ceiling_src),
                                              args.repeat, torch_event, args.batch), 8 * n)
        rows = [ceiling]
        for op, policy, nbytes, mine, theirs, cupy_fn in cases:
            ours_ms = median_event_ms(mine, args.repeat, gp.Event, args.batch)
            torch_ms = median_event_ms(theirs, args.repeat, torch_event, args.batch)
            rows += paired_rows(op, policy, nbytes, ours_ms, torch_ms)
            if cupy_fn is not None:
                cupy_ms = median_event_ms(cupy_fn, args.repeat, CupyEvent, args.batch)
                rows[-2]["speed_vs_cupy"] = cupy_ms / ours_ms
                rows.append({"op": f"{op} (cupy)", "policy": policy, "bytes": nbytes,
                             "ms": cupy_ms, "GB/s": gbps(nbytes, cupy_ms)})
        pct_of_copy(rows, ceiling["GB/s"])
        return rows

    rows = aggregate(repeat_runs(args.runs, one_run))
    targets: dict[str, str] = {}
    torch_verdicts(rows)
    for r in rows:
        if "speed_vs_cupy" in r:
            r["verdict_vs_cupy"] = verdict(r["speed_vs_cupy"], better="higher")
        if r["op"] == f"{HEADLINE} (pygpukit)" and r["policy"] == ALLOC:
            targets["standard_normal_f32_ge_90pct_of_copy"] = verdict(
                r["pct_of_copy"], better="higher", target=90.0)
            targets["standard_normal_f32_ge_torch_randn"] = verdict(
                r["speed_vs_torch"], better="higher", target=1.0)
    report = report_head("random", args.runs, elements=n, repeat=args.repeat,
                         batch=args.batch, cupy="present" if cp is not None else "absent",
                         targets=targets, rows=rows)
    args.out.write_text(json.dumps(report, indent=2))
    print_bandwidth_rows(f"{report['device']}  2**{args.log2n} elements, {args.runs} runs of "
                         f"{args.repeat} samples of {args.batch} calls", rows)
    for name, result in targets.items():
        print(f"  target {name}: {result}")


def check(rng: Any, n: int) -> None:
    """The draws are right: the first values equal the streams' NumPy definition, moments fit."""
    state = rng.bit_generator.state["state"]
    key, counter, sid = state["key"], state["counter"], state["stream_id"]
    z = rng.standard_normal(n).to_numpy()
    m = 1 << 16
    expected = _philox.normal(np.dtype(np.float32), m, key, counter, sid)
    np.testing.assert_array_equal(z[:m].view(np.uint32), expected.view(np.uint32))
    assert abs(float(z.mean())) < 5 / np.sqrt(n) and abs(float(z.var()) - 1) < 5 * np.sqrt(2 / n)
    print(f"check: standard_normal equals its definition bit for bit; mean "
          f"{float(z.mean()):.2e}, var {float(z.var()):.6f}")
    state = rng.bit_generator.state["state"]
    u = rng.random(n).to_numpy()
    np.testing.assert_array_equal(u[:m], _philox.uniform(np.dtype(np.float32), m, state["key"],
                                                         state["counter"], state["stream_id"]))
    assert u.min() >= 0 and u.max() < 1 and abs(float(u.mean()) - 0.5) < 5 / np.sqrt(12 * n)
    k = rng.integers(0, 1000, n).to_numpy()
    counts = np.bincount(k, minlength=1000)
    assert counts.size == 1000 and counts.min() > 0
    del z, u, k


if __name__ == "__main__":
    main()
