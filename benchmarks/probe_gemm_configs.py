"""Issue 13's configuration probe: every candidate Hopper GEMM kernel and option on every shape.

Drives ``benchmarks/gemm_probe/libpgk_gemm_probe.so`` (built by ``benchmarks/gemm_probe/build.sh``
from the library's own kernel template) through ctypes, side by side with cuBLAS (through torch)
in the same process on the same GPU.  Its JSON is what the shape -> configuration table in
``packages/pygpukit-kernels/cuda/gemm/sm90_gemm.cu`` was read from.

    python benchmarks/probe_gemm_configs.py selftest --lib LIB   # no torch: for compute-sanitizer
    python benchmarks/probe_gemm_configs.py sweep --lib LIB --out probe.json
    python benchmarks/probe_gemm_configs.py sweep --lib LIB --shapes float16:matmul:2048x2048x2048
    python benchmarks/probe_gemm_configs.py table --json probe.json   # the C++ table, no GPU

``selftest``: each candidate on a few unaligned-to-tile shapes with bias and activation, random
operands and a NaN-poisoned output, against a naive float32 product (relative Frobenius error).
``sweep``: per shape, cuBLAS's stream time (CUDA events around 10 back-to-back products, as in
bench_matmul.py) and its device time (a CUDA graph of 10 products); per candidate and option the
same two for ours (the stream time from a C++ loop: our host cost without Python's) and the
relative difference from cuBLAS's product.  Prints the best option per shape.
``table``: from a sweep's JSON, the library's 16-bit shape table of the GPU model it ran on
(kTable16H100 / kTable16H200 in sm90_gemm.cu): per M x N(=K) cell of the sweep, the fastest of the
shipped configurations (PRODUCTION), data-parallel, by device time (the CUDA graph) where it was
taken, else by stream time.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from _timing import median_event_ms, torch_event

CI, P, U64 = ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64
DTYPE_NAMES = {6: "float16", 7: "bfloat16", 8: "float32"}
SWEEP_M = (64, 128, 256, 512, 1024, 2048, 4096)
SWEEP_NK = (1024, 2048, 4096, 8192)


def load(path: str) -> ctypes.CDLL:
    """The probe library with its signatures set."""
    lib = ctypes.CDLL(path)
    lib.probe_count.restype = CI
    lib.probe_info.argtypes = [CI, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(CI)]
    lib.probe_workspace.argtypes = [CI, CI, CI, CI, CI, CI, CI, CI, ctypes.POINTER(U64)]
    lib.probe_run.argtypes = [CI, CI, CI, CI, P, P, P, P, CI, CI, CI, CI, CI, P, U64, P]
    lib.probe_loop.argtypes = [CI, CI, CI, CI, P, P, P, CI, CI, CI, CI, P, U64, P, CI, CI,
                               ctypes.POINTER(ctypes.c_float), ctypes.POINTER(ctypes.c_double)]
    lib.probe_launch_floor.argtypes = [P, CI, ctypes.POINTER(ctypes.c_double)]
    lib.probe_selftest.argtypes = [CI, CI, CI, CI, CI, CI, CI, ctypes.POINTER(ctypes.c_double)]
    for name in ("probe_info", "probe_workspace", "probe_run", "probe_loop",
                 "probe_launch_floor", "probe_selftest"):
        getattr(lib, name).restype = CI
    return lib


def candidates(lib: ctypes.CDLL) -> list[dict[str, Any]]:
    """The compiled candidates: name, dtype, B layout, tile, cluster, ping-pong, swapped."""
    out = []
    for i in range(lib.probe_count()):
        name = ctypes.c_char_p()
        f = (CI * 10)()
        assert lib.probe_info(i, ctypes.byref(name), f) == 0
        out.append(dict(index=i, name=name.value.decode(), dtype=DTYPE_NAMES[f[0]],
                        b_col_major=bool(f[1]), tile=(f[2], f[3], f[4]), cluster=(f[5], f[6]),
                        pingpong=bool(f[7]), swap=bool(f[8])))
    return out


def selftest(lib: ctypes.CDLL, small: bool) -> bool:
    """Every candidate on odd shapes (bias, activations, split-K) against a naive product."""
    tol = {"float16": 3e-3, "bfloat16": 1.5e-2, "float32": 3e-3}
    # (m, n, k, bias, activation, splits): edges in every dimension (multiples of 8 for TMA).
    shapes = [(200, 328, 136, 1, 2, 1), (64, 1032, 520, 1, 3, 2), (513, 264, 1000, 0, 1, 3),
              (7, 72, 64, 1, 0, 1)]
    if small:  # under compute-sanitizer
        shapes = [(200, 328, 136, 1, 2, 1), (72, 264, 520, 1, 3, 2), (7, 72, 64, 1, 0, 1)]
    ok = True
    for c in candidates(lib):
        for m, n, k, bias, act, splits in shapes:
            err = ctypes.c_double()
            status = lib.probe_selftest(c["index"], m, n, k, bias, act, splits, ctypes.byref(err))
            good = status == 0 and 0 <= err.value <= tol[c["dtype"]]
            ok &= good
            print(f"selftest {c['name']:32} {m}x{n}x{k} bias={bias} act={act} splits={splits}: "
                  f"status {status} rel err {err.value:.2e} {'ok' if good else 'FAILED'}",
                  flush=True)
    return ok


def sweep_shapes() -> list[tuple[str, str, int, int, int]]:
    """(dtype, layout, m, n, k) measured by ``sweep``."""
    out = [("float16", "matmul", m, nk, nk) for m in SWEEP_M for nk in SWEEP_NK]
    out += [("float16", "matmul", m, n, k) for m, n, k in
            ((256, 256, 256), (512, 512, 512), (128, 14336, 4096), (4096, 14336, 4096),
             (8192, 8192, 8192), (128, 4096, 14336), (1024, 4096, 14336), (256, 14336, 4096),
             (1024, 14336, 4096))]
    out += [("float32", "matmul", s, s, s) for s in (2048, 4096, 8192)]
    out += [("bfloat16", "matmul", m, nk, nk) for m in (64, 128, 256) for nk in SWEEP_NK]
    out += [("float16", "linear", m, nk, nk) for m in (64, 128, 256) for nk in (2048, 4096)]
    out += [("float16", "linear", 128, 14336, 4096), ("bfloat16", "linear", 128, 14336, 4096)]
    return out


def options(c: dict[str, Any], m: int, n: int, k: int, sms: int) -> list[tuple[int, int, int, int]]:
    """(decomposition, splits, swizzle, raster) worth timing for a candidate on a shape."""
    km, kn = (n, m) if c["swap"] else (m, n)
    tm, tn, _ = c["tile"]
    cm, cn = c["cluster"]
    tiles = math.ceil(math.ceil(km / tm) / cm) * cm * math.ceil(math.ceil(kn / tn) / cn) * cn
    out = [(1, 1, 1, 0)]
    if tiles >= 4 * sms:
        out += [(1, 1, 2, 0), (1, 1, 4, 0)]
    if c["pingpong"]:
        return out
    if tiles < sms:
        out += [(2, s, 1, 0) for s in (2, 3, 4, 6, 8) if k // s >= 256 and tiles * s <= 3 * sms]
    if tiles < 3 * sms:
        out.append((3, 1, 1, 0))
    return out


#: The probe candidates the library ships (float16 row-major B stands for all four dtype/layout
#: instantiations), in the order of sm90_gemm.cu's Cfg16 codes.
PRODUCTION = ("f16_coop_128x256_c2x1", "f16_pp_128x128_c1x1", "f16_pp_64x128_c1x1",
              "f16_swap_pp_64x64_c1x1", "f16_swap_coop_128x64_c1x1")


def table(report: dict[str, Any]) -> str:
    """A kTable16 initializer from a sweep: the fastest shipped configuration per cell."""
    cells: dict[tuple[int, int], int] = {}
    for row in report["rows"]:
        if (row["dtype"], row["layout"]) != ("float16", "matmul") or row["n"] != row["k"]:
            continue
        if row["m"] not in SWEEP_M or row["n"] not in SWEEP_NK:
            continue
        timed = [r for r in row["results"] if r.get("status") == 0 and r["rel_diff"] < 2e-2
                 and r["cand"] in PRODUCTION and tuple(r["opt"]) == (1, 1, 1, 0)]
        # The sweep skips the swapped kernels for M > 1024 (their N tile runs along M).
        if len({r["cand"] for r in timed}) < len(PRODUCTION) - (2 if row["m"] > 1024 else 0):
            raise SystemExit(f"{row['m']}x{row['n']}: shipped configurations missing")
        use_graph = all("graph_ms" in r for r in timed)
        best = min(timed, key=lambda r: r["graph_ms"] if use_graph else r["stream_ms"])
        cells[(row["m"], row["n"])] = PRODUCTION.index(best["cand"])
    lines = []
    for m in SWEEP_M:
        codes = ", ".join(("kA", "kB", "kC", "kD", "kE")[cells[(m, n)]] for n in SWEEP_NK)
        lines.append(f"    {{{codes}}},  // M = {m}")
    return "\n".join(lines)


def run_once(lib: ctypes.CDLL, args: tuple[Any, ...]) -> None:
    """One probe launch on torch's current stream (inside a graph capture: the capture's)."""
    import torch

    status = lib.probe_run(*args, torch.cuda.current_stream().cuda_stream)
    if status != 0:
        raise RuntimeError(f"probe_run failed: {status}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("selftest", "sweep", "table"))
    parser.add_argument("--lib", help="libpgk_gemm_probe.so (selftest, sweep)")
    parser.add_argument("--json", type=Path, help="a sweep's JSON (table)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--small", action="store_true", help="selftest: fewer, smaller shapes")
    parser.add_argument("--budget-s", type=float, default=240.0,
                        help="stop starting new shapes after this many seconds")
    parser.add_argument("--shapes", type=parse_shapes, default=None,
                        help="sweep: these shapes instead of the full list, e.g. "
                             "'float16:matmul:2048x2048x2048,bfloat16:linear:128x14336x4096'")
    args = parser.parse_args()
    if args.mode == "table":
        print(table(json.loads(args.json.read_text())))
        return
    lib = load(args.lib)
    if args.mode == "selftest":
        sys.exit(0 if selftest(lib, args.small) else 1)
    sweep(lib, args.out, args.budget_s, args.shapes)


def parse_shapes(text: str) -> list[tuple[str, str, int, int, int]]:
    """``dtype:layout:MxNxK`` items, comma-separated (``--shapes``)."""
    shapes = []
    for item in text.split(","):
        try:
            dtype, layout, dims = item.strip().split(":")
            m, n, k = (int(v) for v in dims.lower().split("x"))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--shapes: expected dtype:layout:MxNxK items; got {item!r}") from None
        if dtype not in DTYPE_NAMES.values() or layout not in ("matmul", "linear") or min(
                m, n, k) < 1:
            raise argparse.ArgumentTypeError(
                f"--shapes: dtype one of {sorted(DTYPE_NAMES.values())}, layout matmul or "
                f"linear, positive sizes; got {item!r}")
        shapes.append((dtype, layout, m, n, k))
    return shapes


def sweep(lib: ctypes.CDLL, out_path: Path | None, budget_s: float,
          shapes: list[tuple[str, str, int, int, int]] | None = None) -> None:
    import torch

    t_start = time.monotonic()
    dev = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(dev)
    sms = props.multi_processor_count
    cands = candidates(lib)
    tdt = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
    ws = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    report: dict[str, Any] = dict(device=props.name, sms=sms, torch=torch.__version__,
                                  candidates=cands, rows=[], host=[])

    def events_ms(fn: Any, batch: int, repeat: int = 5) -> float:
        return median_event_ms(fn, repeat, torch_event, batch)

    def graph_ms(fn: Any, batch: int = 10, repeat: int = 5) -> float:
        fn()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(batch):
                fn()
        g.replay()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples = []
        for _ in range(repeat):
            start.record()
            g.replay()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / batch)
        del g
        return statistics.median(samples)

    # Host cost of one call: an empty kernel, and ours cached / uncached on a small product.
    floor = ctypes.c_double()
    assert lib.probe_launch_floor(stream, 2000, ctypes.byref(floor)) == 0
    report["launch_floor_us"] = floor.value

    for dtype, layout, m, n, k in shapes or sweep_shapes():
        if time.monotonic() - t_start > budget_s:
            print(f"budget of {budget_s:.0f} s spent: stopping before {dtype} {m}x{n}x{k}")
            report["stopped_early"] = True
            break
        gen = torch.Generator(device="cuda").manual_seed(m * 31 + n * 7 + k)
        a = torch.randn(m, k, device="cuda", dtype=tdt[dtype], generator=gen)
        if layout == "linear":
            w = torch.randn(n, k, device="cuda", dtype=tdt[dtype], generator=gen)
            bt = w.t()
        else:
            w = torch.randn(k, n, device="cuda", dtype=tdt[dtype], generator=gen)
            bt = w
        c = torch.empty(m, n, device="cuda", dtype=tdt[dtype])
        ref = torch.empty_like(c)
        torch.backends.cuda.matmul.allow_tf32 = dtype == "float32"
        torch.matmul(a, bt, out=ref)
        torch_fn = functools.partial(torch.matmul, a, bt, out=ref)
        t_stream = events_ms(torch_fn, 10)
        t_graph = graph_ms(torch_fn)
        flops = 2.0 * m * n * k
        row: dict[str, Any] = dict(dtype=dtype, layout=layout, m=m, n=n, k=k,
                                   torch_stream_ms=t_stream, torch_graph_ms=t_graph, results=[])
        for cd in cands:
            if cd["dtype"] != dtype or cd["b_col_major"] != (layout == "linear"):
                continue
            if cd["swap"] and m > 1024:
                continue
            for opt in options(cd, m, n, k, sms):
                need = U64()
                st = lib.probe_workspace(cd["index"], m, n, k, *opt, ctypes.byref(need))
                if st != 0 or need.value > ws.numel():
                    continue
                run_args = (cd["index"], m, n, k, a.data_ptr(), bt.data_ptr(), c.data_ptr())
                c.fill_(float("nan"))
                st = lib.probe_run(*run_args, None, 0, *opt, ws.data_ptr(), need.value, stream)
                if st != 0:
                    row["results"].append(dict(cand=cd["name"], opt=opt, status=st))
                    continue
                diff = float(((c.float() - ref.float()).norm() / ref.float().norm()).item())
                dev_ms, host_us = ctypes.c_float(), ctypes.c_double()
                best_ms, best_host = math.inf, math.inf
                iters = 20
                for _ in range(2):
                    st = lib.probe_loop(*run_args, *opt, ws.data_ptr(), need.value, stream, iters,
                                        0, ctypes.byref(dev_ms), ctypes.byref(host_us))
                    if st != 0:
                        break
                    best_ms = min(best_ms, dev_ms.value)
                    best_host = min(best_host, host_us.value)
                    # Next sample about 2 ms long.
                    iters = max(20, min(400, int(2.0 / max(dev_ms.value, 1e-4))))
                res: dict[str, Any] = dict(cand=cd["name"], opt=opt, status=st, rel_diff=diff,
                                           stream_ms=best_ms, host_us=best_host,
                                           ws=need.value)
                if st == 0 and best_ms < 0.05:  # host-bound streams: the device time too
                    res["graph_ms"] = graph_ms(functools.partial(
                        run_once, lib, (*run_args, None, 0, *opt, ws.data_ptr(), need.value)))
                row["results"].append(res)
        good = [r for r in row["results"] if r.get("status") == 0 and r["rel_diff"] < 2e-2]
        if good:
            best = min(good, key=lambda r: r["stream_ms"])
            print(f"{dtype:8} {layout:6} {m:5}x{n:5}x{k:5}  cuBLAS {flops / t_stream / 1e9:6.1f} "
                  f"(graph {flops / t_graph / 1e9:6.1f})  "
                  f"best {flops / best['stream_ms'] / 1e9:6.1f}"
                  f" {100 * t_stream / best['stream_ms']:5.1f}%  {best['cand']} {best['opt']}"
                  f" host {best['host_us']:.1f}us", flush=True)
        bad = [r for r in row["results"] if r.get("status") != 0 or r["rel_diff"] >= 2e-2]
        for r in bad:
            print(f"   BAD {r}", flush=True)
        report["rows"].append(row)

    # Host cost per call on small products: cached vs CUTLASS's own path.
    small = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    out = torch.empty_like(small)
    for cd in cands:
        if cd["dtype"] != "float16" or cd["b_col_major"]:
            continue
        for uncached in (0, 1):
            dev_ms, host_us = ctypes.c_float(), ctypes.c_double()
            st = lib.probe_loop(cd["index"], 256, 256, 256, small.data_ptr(), small.data_ptr(),
                                out.data_ptr(), 1, 1, 1, 0, ws.data_ptr(), 0, stream, 500,
                                uncached, ctypes.byref(dev_ms), ctypes.byref(host_us))
            report["host"].append(dict(cand=cd["name"], uncached=uncached, status=st,
                                       host_us=host_us.value, stream_ms=dev_ms.value))
            print(f"host cost 256^3 {cd['name']:30} {'uncached' if uncached else 'cached  '} "
                  f"{host_us.value:6.2f} us/call, stream {1000 * dev_ms.value:6.2f} us", flush=True)
    print(f"launch floor {floor.value:.2f} us; sweep took {time.monotonic() - t_start:.0f} s")
    if out_path is not None:
        out_path.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
