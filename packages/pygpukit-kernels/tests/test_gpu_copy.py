"""pgk_copy / pgk_fill / pgk_arange / pgk_linspace on a real GPU, bit for bit against NumPy.

Every device buffer is poisoned (0xFF bytes) before a launcher runs, and the whole buffer is
compared afterwards, so elements outside a strided view must stay poisoned.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import pygpukit_kernels as pk

# Neither is a dependency of the kernels wheel: a missing one skips every test through the
# `gpu` marker below (so the skip-to-fail rule sees it), not at import (which it would not).
drv: Any
ml_dtypes: Any
try:
    import pygpukit_driver as drv
except ImportError:
    drv = None
try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None


def _unavailable() -> str | None:
    if drv is None:
        return "pygpukit-driver is needed for GPU tests (not installed)"
    if ml_dtypes is None:
        return "ml_dtypes (NumPy's bfloat16) is needed for these tests (not installed)"
    if not drv.is_available():
        return f"no CUDA driver: {drv.unavailable_reason()}"
    return None


_REASON = _unavailable()
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]

NAMES = ["bool", "int8", "uint8", "int16", "int32", "int64",
         "float16", "bfloat16", "float32", "float64"]
INTS = ("int8", "uint8", "int16", "int32", "int64")
FLOATS = ("float16", "bfloat16", "float32", "float64")
PAIRS = [(s, d) for s in NAMES for d in NAMES]


def npdt(name: str) -> np.dtype[Any]:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def bits(a: np.ndarray) -> np.ndarray:
    """The raw bytes of an array (bool, float16, bfloat16 ... compared bit for bit)."""
    return np.ascontiguousarray(a).view(np.uint8)


def _uint_view(name: str) -> np.dtype[Any]:
    return np.dtype(f"u{npdt(name).itemsize}")


def _canonical_nans(x: np.ndarray) -> np.ndarray:
    """Random bit patterns make NaNs with random payloads, whose propagation is a platform
    detail; keep the sign and use the standard quiet NaN."""
    wide = x.astype(np.float64)
    nan = np.isnan(wide)
    if nan.any():
        x = x.copy()
        x[nan] = np.where(np.signbit(wide[nan]), -np.nan, np.nan).astype(x.dtype)
    return x


def _midpoints(dst: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """float64 values at and next to the halfway points between neighbouring `dst` values:
    where single and double rounding differ."""
    raw = rng.integers(0, 2 ** (8 * npdt(dst).itemsize), n, dtype=np.uint64)
    v = raw.astype(_uint_view(dst)).view(npdt(dst)).astype(np.float64)
    v = v[np.isfinite(v)]
    nxt = np.nextafter(v.astype(npdt(dst)), np.array(np.inf, npdt(dst))).astype(np.float64)
    ok = np.isfinite(nxt)
    v, nxt = v[ok], nxt[ok]
    mid = (v + nxt) / 2  # exact in float64 (for the 16- and 32-bit dtypes)
    return np.concatenate([mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf)])


def source_values(src: str, dst: str, n: int, seed: int = 0) -> np.ndarray:
    """Values of dtype `src` whose conversion to `dst` NumPy defines, with the edge cases."""
    with np.errstate(all="ignore"):
        return _source_values(src, dst, n, seed)


def _source_values(src: str, dst: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sd = npdt(src)
    if src == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if src in INTS:
        info = np.iinfo(sd)
        x = rng.integers(info.min, info.max, n, dtype=sd, endpoint=True)
        x = x >> rng.integers(0, 8 * sd.itemsize, n).astype(sd)  # every magnitude
        special = [0, 1, -1, 2, 3, 127, 128, 255, 256, 65504, 65505, 65519, 65520, 65536 + 16,
                   2**24 + 1, 2**24 + 2**16 + 1, -(2**24 + 2**16 + 1), 2**25 + 3, 2**31 - 1,
                   2**53 + 1, 2**62 + 2**38 + 1, int(info.min), int(info.max)]
        keep = [v for v in special if info.min <= v <= info.max]
        return np.concatenate([x, np.array(keep, dtype=sd)])
    # floating source
    if dst in INTS:
        # in range of the integer target after truncation toward zero; no NaN / inf
        info = np.iinfo(npdt(dst))
        lo, hi = float(max(int(info.min), -(2**62))), float(min(int(info.max), 2**62))
        mag = np.exp2(rng.uniform(-30, np.log2(max(hi, -lo)), n))
        wide = np.concatenate([mag, -mag, [0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1e-40, 5e-324]])
        x = wide.astype(sd)
        xw = x.astype(np.float64)
        ok = np.isfinite(xw) & (xw > lo - 1) & (xw < hi + 1)
        return x[ok]
    # bool or floating target: random bit patterns (every exponent, subnormals, inf, NaN)
    nbits = 8 * sd.itemsize
    if nbits == 16:  # every float16 / bfloat16 value
        raw = np.arange(2**16, dtype=np.uint16)
    else:
        raw = rng.integers(0, 2**nbits, n, dtype=np.uint64).astype(_uint_view(src))
    x = _canonical_nans(raw.view(sd))
    extra = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 65504.0, 65519.99,
             65520.0, 2.0**-24, 2.0**-25, 2.0**-25 * 1.0000001, 1e-45, 3e38, 3.4e38, 1e39]
    parts = [x, np.array(extra).astype(sd)]
    if dst in ("float16", "bfloat16", "float32") and sd.itemsize > npdt(dst).itemsize:
        parts.append(_midpoints(dst, n, rng).astype(sd))
    return np.concatenate(parts)


# ---------------------------------------------------------------------------------------------
# device helpers

@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    ctx = drv.Device(0).primary_context()
    ctx.set_current()
    return pk.load()


class Buf:
    """A device buffer mirroring a host array of bytes."""

    def __init__(self, nbytes: int) -> None:
        self.nbytes = max(nbytes, 1)
        self.ptr = drv.mem_alloc(self.nbytes)

    def upload(self, host: np.ndarray) -> None:
        drv.memcpy_htod(self.ptr, np.ascontiguousarray(host).view(np.uint8))

    def poison(self) -> None:
        drv.memset_d8_async(self.ptr, 0xFF, self.nbytes, 0)

    def download(self) -> np.ndarray:
        drv.Device(0).primary_context().synchronize()
        out = np.empty(self.nbytes, np.uint8)
        drv.memcpy_dtoh(out, self.ptr)
        return out

    def __enter__(self) -> Buf:
        return self

    def __exit__(self, *exc: object) -> None:
        drv.mem_free(self.ptr)


def i64(values: Sequence[int]) -> Any:
    return (ctypes.c_int64 * max(len(values), 1))(*values)


def view(base: np.ndarray, offset: int, shape: Sequence[int],
         strides: Sequence[int]) -> np.ndarray:
    """The strided view of `base` (a 1-D array) starting `offset` bytes in."""
    start = base.view(np.uint8)[offset:].view(base.dtype) if offset % base.itemsize == 0 \
        else None
    assert start is not None, "offsets are multiples of the element size"
    return np.lib.stride_tricks.as_strided(start, shape=tuple(shape), strides=tuple(strides))


def run_copy(lib: ctypes.CDLL, src: str, dst: str, src_base: np.ndarray, src_off: int,
             src_strides: Sequence[int], dst_elems: int, dst_off: int,
             dst_strides: Sequence[int], shape: Sequence[int]) -> None:
    """Copy a view of src_base into a view of a poisoned dst buffer; compare every byte."""
    dst_base = np.full(dst_elems * npdt(dst).itemsize, 0xFF, np.uint8).view(npdt(dst))
    expected = dst_base.copy()
    sview = view(src_base, src_off, shape, src_strides)
    with np.errstate(all="ignore"):
        view(expected, dst_off, shape, dst_strides)[...] = sview.astype(npdt(dst))
    with Buf(src_base.nbytes) as sb, Buf(dst_base.nbytes) as db:
        sb.upload(src_base)
        db.poison()
        rc = lib.pgk_copy(sb.ptr + src_off, NAMES.index(src), i64(src_strides),
                          db.ptr + dst_off, NAMES.index(dst), i64(dst_strides),
                          len(shape), i64(shape), None)
        assert rc == 0, lib.pgk_error_name(rc)
        got = db.download()
    mismatch = np.flatnonzero(got.view(npdt(dst)).view(_uint_view(dst))
                              != expected.view(_uint_view(dst)))
    assert mismatch.size == 0, (
        f"{src}->{dst}: {mismatch.size} mismatches, first at {mismatch[:5]}: "
        f"got {got.view(npdt(dst))[mismatch[:5]]} expected {expected[mismatch[:5]]}")


# ---------------------------------------------------------------------------------------------
# contiguous casts: every pair

@pytest.mark.parametrize(("src", "dst"), PAIRS, ids=[f"{s}-{d}" for s, d in PAIRS])
@pytest.mark.parametrize("misalign", [0, 1], ids=["aligned", "offset1"])
def test_contiguous_cast_every_pair(lib: ctypes.CDLL, src: str, dst: str, misalign: int) -> None:
    x = source_values(src, dst, 20_011, seed=NAMES.index(src) * 10 + NAMES.index(dst))
    n = x.size - misalign
    si, di = npdt(src).itemsize, npdt(dst).itemsize
    # misalign: both views start one element in (the vector path needs 16-byte alignment)
    run_copy(lib, src, dst, x, misalign * si, [si], x.size + 2, misalign * di, [di], [n])


def test_large_contiguous_cast_uses_every_thread(lib: ctypes.CDLL) -> None:
    x = np.random.default_rng(3).standard_normal(3 * 2**20 + 5).astype(np.float32)
    run_copy(lib, "float32", "bfloat16", x, 0, [4], x.size, 0, [2], [x.size])


# ---------------------------------------------------------------------------------------------
# strided views

def _contig_strides(shape: Sequence[int], itemsize: int) -> list[int]:
    out, acc = [], itemsize
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return out[::-1]


STRIDED_PAIRS = [("float32", "float32"), ("bool", "bool"), ("int16", "int16"),
                 ("float64", "float64"), ("float32", "bfloat16"), ("int64", "int8"),
                 ("float64", "float16"), ("uint8", "float32"), ("bfloat16", "float64")]


def _rand(name: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if name == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if name in INTS:
        info = np.iinfo(npdt(name))
        return rng.integers(info.min, info.max, n, endpoint=True, dtype=npdt(name))
    return (rng.standard_normal(n) * 100).astype(npdt(name))


CASES: dict[str, tuple[list[int], Any, Any]] = {
    # name: (shape, src layout, dst layout); a layout is (strides in elements, offset in
    # elements) or "c" for C-contiguous
    "ndim0": ([], ([], 3), ([], 1)),
    "1d_step3_to_step2": ([1000], ([3], 0), ([2], 1)),
    "1d_reversed_src": ([1001], ([-1], 1000), "c"),
    "1d_both_reversed": ([1001], ([-1], 1000), ([-1], 1000)),
    "2d_transposed": ([200, 301], ([1, 200], 0), "c"),
    "2d_transposed_odd": ([1000, 333], ([1, 1000], 0), "c"),
    "2d_transposed_into_view": ([65, 97], ([1, 65], 0), ([200, 2], 3)),
    "2d_broadcast_rows": ([7, 129], ([0, 1], 0), "c"),
    "2d_broadcast_scalar": ([5, 3], ([0, 0], 2), "c"),
    "3d_size1_dims": ([1, 50, 1], ([999, 1, 5], 0), ([7, 1, 3], 0)),
    "5d_permuted_sliced": ([3, 4, 5, 6, 7], ([2, 840, 7 * 2, 1 * 2 * 6, 6 * 2 * 5], 1), "c"),
    "5d_negative_mixed": ([2, 3, 4, 5, 6], ([-360, 120, -30, 6, -1], 719), ([1, 2, 6, 24, 120], 0)),
    "16d": ([2] * 16, ([2**k for k in (3, 0, 15, 7, 1, 9, 4, 12, 2, 14, 5, 11, 6, 13, 8, 10)], 0),
            "c"),
    "16d_with_ones": ([2, 1, 3, 1, 2, 2, 1, 2, 2, 1, 2, 1, 2, 2, 1, 3],
                      "c", ([-1, 0, -2, 0, 6, 12, 0, 24, 48, 0, 96, 0, 192, 384, 0, 768], 5)),
}


def _layout(layout: Any, shape: list[int]) -> tuple[list[int], int, int]:
    """(strides in elements, offset in elements, elements the base needs)."""
    if layout == "c":
        strides = _contig_strides(shape, 1)
        off = 0
    else:
        strides, off = layout
    lo = off + sum(min(0, st) * (sz - 1) for st, sz in zip(strides, shape, strict=True))
    hi = off + sum(max(0, st) * (sz - 1) for st, sz in zip(strides, shape, strict=True))
    assert lo >= 0
    return strides, off, hi + 1 + 2  # spare poisoned elements at the end


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize(("src", "dst"), STRIDED_PAIRS, ids=[f"{s}-{d}" for s, d in STRIDED_PAIRS])
def test_strided_copy(lib: ctypes.CDLL, case: str, src: str, dst: str) -> None:
    shape, slay, dlay = CASES[case]
    sst, soff, sneed = _layout(slay, shape)
    dstr, doff, dneed = _layout(dlay, shape)
    si, di = npdt(src).itemsize, npdt(dst).itemsize
    base = _rand(src, sneed, seed=len(case))
    run_copy(lib, src, dst, base, soff * si, [s * si for s in sst], dneed, doff * di,
             [s * di for s in dstr], shape)


def test_64bit_index_path(lib: ctypes.CDLL) -> None:
    """A view whose byte extent exceeds 2^31 takes the 64-bit kernel."""
    far = 2**31 + 64
    vals = np.arange(8, dtype=np.float32) + 0.5
    with Buf(far + 64) as sb, Buf(64) as db:
        drv.memcpy_htod(sb.ptr, vals[:4])
        drv.memcpy_htod(sb.ptr + far, vals[4:])
        db.poison()
        rc = lib.pgk_copy(sb.ptr, NAMES.index("float32"), i64([far, 4]), db.ptr,
                          NAMES.index("float64"), i64([32, 8]), 2, i64([2, 4]), None)
        assert rc == 0
        got = db.download()
    np.testing.assert_array_equal(got.view(np.float64)[:8], vals.astype(np.float64))
    assert (got[64:] == 0xFF).all()


# ---------------------------------------------------------------------------------------------
# fill

FILL_VALUES = [(1.1, -1), (-0.0, 300), (float("nan"), 2**40 + 5), (float("-inf"), 0),
               (1 + 2**-8 + 2**-30, -129), (65519.99, 1)]


def _fill_expected(name: str, dval: float, ival: int) -> np.ndarray:
    if name == "bool":
        return np.array(ival != 0)
    if name in INTS:
        return np.array(ival, np.int64).astype(npdt(name))
    with np.errstate(all="ignore"):
        return np.array(dval, np.float64).astype(npdt(name))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("layout", ["contig", "offset1", "strided2d", "negative", "broadcast",
                                    "ndim0"])
def test_fill(lib: ctypes.CDLL, name: str, layout: str) -> None:
    layouts: dict[str, tuple[list[int], list[int], int]] = {
        "contig": ([1027], [1], 0),
        "offset1": ([1027], [1], 1),
        "strided2d": ([13, 17], [40, 2], 1),
        "negative": ([13, 17], [-40, -2], 12 * 40 + 16 * 2 + 1),
        "broadcast": ([9, 33], [0, 1], 2),
        "ndim0": ([], [], 5),
    }
    shape, strides, off = layouts[layout]
    _, _, need = _layout((strides, off), shape)
    it = npdt(name).itemsize
    for dval, ival in FILL_VALUES:
        expected = np.full(need * it, 0xFF, np.uint8).view(npdt(name))
        view(expected, off * it, shape, [s * it for s in strides])[...] = \
            _fill_expected(name, dval, ival)
        with Buf(need * it) as db:
            db.poison()
            rc = lib.pgk_fill(db.ptr + off * it, NAMES.index(name), i64([s * it for s in strides]),
                              len(shape), i64(shape), dval, ival, None)
            assert rc == 0
            got = db.download()
        assert np.array_equal(got, bits(expected)), (name, layout, dval, ival)


# ---------------------------------------------------------------------------------------------
# arange / linspace

def _run_1d(lib: ctypes.CDLL, name: str, n: int, call: Any) -> np.ndarray:
    it = npdt(name).itemsize
    with Buf((n + 3) * it) as db:
        db.poison()
        rc = call(db.ptr)
        assert rc == 0
        got = db.download()
    assert (got[n * it:] == 0xFF).all(), "wrote past the end"
    return got[: n * it].view(npdt(name))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [0, 1, 2, 1000])
def test_arange(lib: ctypes.CDLL, name: str, n: int) -> None:
    dstart, dstep, istart, istep = 0.1, 0.3, -7, 3
    got = _run_1d(lib, name, n, lambda p: lib.pgk_arange(
        p, NAMES.index(name), n, dstart, dstep, istart, istep, None))
    if name in INTS or name == "bool":
        expected = (np.int64(istart) + np.arange(n, dtype=np.int64) * istep).astype(npdt(name))
    else:
        expected = (dstart + np.arange(n, dtype=np.float64) * dstep).astype(npdt(name))
    assert np.array_equal(bits(got), bits(expected))


def test_arange_reproduces_numpy_arange(lib: ctypes.CDLL) -> None:
    start, stop, step = 0.1, 97.3, 0.7
    expected = np.arange(start, stop, step)
    delta = (start + step) - start  # what numpy's fill uses
    got = _run_1d(lib, "float64", expected.size, lambda p: lib.pgk_arange(
        p, NAMES.index("float64"), expected.size, start, delta, 0, 0, None))
    assert np.array_equal(bits(got), bits(expected))


LINSPACE_ARGS = [(-3.7, 11.2), (2.5, 117.3), (5.0, 5.0), (0.0, 5e-324), (1.0, -1e-3)]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [0, 1, 2, 1000])
@pytest.mark.parametrize("endpoint", [True, False])
@pytest.mark.parametrize("args", LINSPACE_ARGS, ids=[f"{a}:{b}" for a, b in LINSPACE_ARGS])
def test_linspace(lib: ctypes.CDLL, name: str, n: int, endpoint: bool,
                  args: tuple[float, float]) -> None:
    start, stop = args
    if name in INTS and min(start, stop) < 0:
        start, stop = 0.5, 117.3  # negative floats -> unsigned: undefined in NumPy
    with np.errstate(all="ignore"):
        expected = np.linspace(start, stop, n, endpoint=endpoint, dtype=npdt(name))
    got = _run_1d(lib, name, n, lambda p: lib.pgk_linspace(
        p, NAMES.index(name), n, start, stop, int(endpoint), None))
    assert np.array_equal(bits(got), bits(expected)), (got[:8], expected[:8])
