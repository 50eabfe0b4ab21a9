"""Which FP8 kernel configuration is fastest per shape: the measurement behind sm90_fp8_gemm.cu.

For each shape (4096³, 8192³ and the LLM shapes M x 14336 x 4096), e4m3 x e4m3 with per-tensor
scales and bfloat16 out, times ``gp.linear`` with each configuration forced through
``pgk_gemm_fp8_force_config`` (1 = "l" 128x256 cooperative cluster 2x1, 2 = "m" 128x128
ping-pong, 3 = "s" 64x64 ping-pong swapped, 6 = "w" 128x224 cooperative, 7 = "t" 128x32
cooperative swapped, 5 = "gemv" the small-M streaming kernel, timed for m <= 16 only; 0 = the
shape heuristic) and
``torch._scaled_mm`` (use_fast_accum=True) beside them: CUDA events around --batch
back-to-back products, median of --repeat samples.  Prints a table (% of torch per
configuration) and writes JSON to --out.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
from _timing import median_event_ms, torch_event

import pygpukit as gp
import pygpukit_kernels

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)] + [
    (m, 14336, 4096) for m in (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)]
CONFIGS = {0: "auto", 1: "l", 2: "m", 3: "s", 6: "w", 7: "t", 5: "gemv"}
GEMV_MAX_M = 16  # the small-M kernel's range (sm89_fp8_gemv.cuh: kFp8GemvMaxM)


def probe_shape(m: int, n: int, k: int, repeat: int, batch: int, force: Any,
                share: Any) -> dict[str, Any]:
    """Times of torch._scaled_mm and of each forced configuration for one shape."""
    gen = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    w = torch.randn(n, k, device="cuda", generator=gen).to(torch.float8_e4m3fn)
    sa = torch.rand((), device="cuda", generator=gen) + 0.5
    sb = torch.rand((), device="cuda", generator=gen) + 0.5
    a_o, w_o, sa_o, sb_o = share(a), share(w), gp.from_dlpack(sa), gp.from_dlpack(sb)
    b_col = w.t()

    def theirs() -> Any:
        return torch._scaled_mm(a, b_col, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                use_fast_accum=True)

    def ours() -> Any:
        return gp.linear(a_o, w_o, scale_x=sa_o, scale_weight=sb_o)

    torch_ms = median_event_ms(theirs, repeat, torch_event, batch)
    # "shape" as well: the key "m" is overwritten by configuration "m"'s timings below.
    row: dict[str, Any] = {"shape": [m, n, k], "m": m, "n": n, "k": k, "torch_ms": torch_ms}
    for code, name in CONFIGS.items():
        if name == "gemv" and m > GEMV_MAX_M:
            continue  # it declines: config 5 would time the heuristic's kernel again
        if force(code) != 0:
            raise SystemExit("pgk_gemm_fp8_force_config failed")
        ms = median_event_ms(ours, repeat, gp.Event, batch)
        row[name] = {"ms": ms, "pct": 100.0 * torch_ms / ms, "kernel": a_o._rt.gemm_last_kernel()}
    force(0)
    cells = "  ".join(f"{name} {row[name]['pct']:6.1f}%" for name in CONFIGS.values()
                      if name in row)
    print(f"{m:5}x{n}x{k}: torch {2 * m * n * k / torch_ms / 1e9:7.1f} TF/s  {cells}  "
          f"auto={row['auto']['kernel']}", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    force = pygpukit_kernels.load().pgk_gemm_fp8_force_config
    from bench_matmul import _fp8_ours  # the DLPack sharing of the benchmark

    rows = [probe_shape(m, n, k, args.repeat, args.batch, force, _fp8_ours)
            for m, n, k in SHAPES]
    args.out.write_text(json.dumps({"device": torch.cuda.get_device_name(), "rows": rows},
                                   indent=1))


if __name__ == "__main__":
    main()
