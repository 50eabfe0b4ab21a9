"""Copy / cast bandwidth of pgk_copy, side by side with PyTorch in the same run, on the same GPU.

Rows (float32 source of --mib MiB, random data): the float32 -> bfloat16 cast, the contiguous
float32 copy, and the transposed 2-D copy (and cast), each vs torch's `.to(torch.bfloat16)`,
`.clone()`, `.t().contiguous()`.  GB/s count bytes read + written; "% of copy_" is the ratio to
torch's `copy_` of a float32 buffer of the same size (the bandwidth ceiling).  CUDA events on
torch's current stream (our launcher runs on that stream), 3 warm-ups, median of --repeat.
"""

from __future__ import annotations

import argparse
import ctypes
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from _timing import finish_rows, median_event_ms, torch_event, torch_report

import pygpukit_kernels as pk


def time_ms(fn: Callable[[], object], repeat: int) -> float:
    """Median milliseconds of ``fn`` between CUDA events on torch's current stream."""
    return median_event_ms(fn, repeat, torch_event)


def i64(values: list[int]) -> Any:
    return (ctypes.c_int64 * max(len(values), 1))(*values)


def main() -> None:
    """Run the benchmark and write the JSON report."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=256, help="float32 source size in MiB")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    lib = pk.load()
    codes = pk.DTYPE_CODES
    torch.manual_seed(0)
    n = args.mib * 2**20 // 4
    side = math.isqrt(n)
    x = torch.randn(n, device="cuda", dtype=torch.float32)
    stream = torch.cuda.current_stream().cuda_stream

    def pgk_copy(src: torch.Tensor, dst: torch.Tensor) -> None:
        """dst[...] = src through pgk_copy (shapes equal, any strides)."""
        shape = list(src.shape)
        rc = lib.pgk_copy(src.data_ptr(), codes[str(src.dtype).removeprefix("torch.")],
                          i64([s * src.element_size() for s in src.stride()]),
                          dst.data_ptr(), codes[str(dst.dtype).removeprefix("torch.")],
                          i64([s * dst.element_size() for s in dst.stride()]),
                          len(shape), i64(shape), stream)
        assert rc == 0, lib.pgk_error_name(rc)

    def gbps(nbytes: int, ms: float) -> float:
        return nbytes / (ms * 1e-3) / 1e9

    ceiling_out = torch.empty_like(x)
    copy_ms = time_ms(lambda: ceiling_out.copy_(x), args.repeat)
    ceiling = gbps(2 * 4 * n, copy_ms)
    rows: list[dict[str, Any]] = [
        {"op": "torch copy_ f32 (ceiling)", "bytes": 8 * n, "ms": copy_ms, "GB/s": ceiling}]

    def add(op: str, nbytes: int, ours: Callable[[], object], theirs: Callable[[], object],
            theirs_name: str) -> None:
        ours_ms = time_ms(ours, args.repeat)
        theirs_ms = time_ms(theirs, args.repeat)
        for who, ms in (("pygpukit", ours_ms), (theirs_name, theirs_ms)):
            rows.append({"op": f"{op} ({who})", "bytes": nbytes, "ms": ms,
                         "GB/s": gbps(nbytes, ms)})
        rows[-2]["speed_vs_torch"] = theirs_ms / ours_ms

    # 1. float32 -> bfloat16, contiguous
    y16 = torch.empty(n, device="cuda", dtype=torch.bfloat16)
    pgk_copy(x, y16)
    assert torch.equal(y16, x.to(torch.bfloat16))
    add("cast f32->bf16", 6 * n, lambda: pgk_copy(x, y16), lambda: x.to(torch.bfloat16),
        "torch .to(bfloat16)")

    # 2. float32 contiguous copy
    y32 = torch.empty_like(x)
    pgk_copy(x, y32)
    assert torch.equal(y32, x)
    add("copy f32", 8 * n, lambda: pgk_copy(x, y32), lambda: x.clone(), "torch .clone()")

    # 3. transposed 2-D copy (and cast)
    m = x[: side * side].view(side, side)
    t32 = torch.empty(side, side, device="cuda", dtype=torch.float32)
    pgk_copy(m.t(), t32)
    assert torch.equal(t32, m.t().contiguous())
    add(f"transpose {side}x{side} f32", 8 * side * side, lambda: pgk_copy(m.t(), t32),
        lambda: m.t().contiguous(), "torch .t().contiguous()")
    t16 = torch.empty(side, side, device="cuda", dtype=torch.bfloat16)
    pgk_copy(m.t(), t16)
    assert torch.equal(t16, m.t().to(torch.bfloat16))
    add(f"transpose+cast {side}x{side} f32->bf16", 6 * side * side,
        lambda: pgk_copy(m.t(), t16),
        lambda: m.t().to(torch.bfloat16, memory_format=torch.contiguous_format),
        "torch .t().to(bfloat16)")

    report = torch_report("copy_cast", source_mib=args.mib, repeat=args.repeat)
    finish_rows(report, rows, ceiling, args.out,
                f"{report['device']}  {args.mib} MiB float32 source, median of {args.repeat}")


if __name__ == "__main__":
    main()
