"""BlockCache / CachedBlock (the allocator's C bookkeeping) and FastOp (the array fast path).

FastOp is checked against the fake driver: pygpukit runs on its CPU simulation with the
small-array launchers replaced by launchers of fake kernels that have the real kernels'
parameter lists; the fake driver records every launch's parameter bytes.  Each op through
the C fast path must launch exactly what pygpukit's Python path (``pygpukit._small``) launches,
byte for byte (the result block is reused, so even the output address matches).
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable

import pytest

import pygpukit_driver as drv

Runner = Callable[..., str]

pygpukit = pytest.importorskip("pygpukit", reason="FastOp serves pygpukit's arrays")


class _Stream:
    """A stand-in stream (the cache keys on identity only)."""


def test_block_cache_push_pop_is_lifo_per_key() -> None:
    cache = drv.BlockCache()
    s1, s2 = _Stream(), _Stream()
    cache.push(s1, 512, 0x1000, "a")
    cache.push(s1, 512, 0x2000, "b")
    cache.push(s2, 512, 0x3000, "c")
    cache.push(s1, 1024, 0x4000, "d")
    assert cache.pop(s1, 512) == (0x2000, "b")
    assert cache.pop(s1, 512) == (0x1000, "a")
    assert cache.pop(s1, 512) is None
    assert cache.pop(s1, 2048) is None
    assert cache.streams() == {s2, s1}
    assert cache.items() == [(s2, 512, 0x3000, "c"), (s1, 1024, 0x4000, "d")]
    assert cache.remove(s2, 512, 0x3000) is True
    assert cache.remove(s2, 512, 0x3000) is False
    assert cache.take_all() == [(s1, 1024, 0x4000, "d")]
    assert cache.items() == [] and cache.streams() == set()


def test_block_cache_statistics_and_peaks() -> None:
    cache = drv.BlockCache()
    stats = cache.stats()
    assert set(stats) >= {"allocated_bytes", "peak_allocated_bytes", "reserved_bytes",
                          "num_cache_hits"} and not any(stats.values())
    cache.add("allocated_bytes", 4096)
    cache.add("allocated_bytes", -1024)
    cache.add("reserved_bytes", 8192)
    assert cache.get("allocated_bytes") == 3072
    assert cache.get("peak_allocated_bytes") == 4096
    assert cache.get("peak_reserved_bytes") == 8192
    cache.set("peak_allocated_bytes", 3072)
    assert cache.stats()["peak_allocated_bytes"] == 3072
    with pytest.raises(KeyError, match="no_such_stat"):
        cache.add("no_such_stat", 1)
    with pytest.raises(TypeError, match="delta must be an int"):
        cache.add("num_allocs", "1")


def test_cached_block_goes_back_to_its_cache_when_released() -> None:
    cache = drv.BlockCache()
    stream = _Stream()
    allocator = object()
    cache.push(stream, 512, 0xA000, "payload")
    block = cache.malloc_fast(allocator, 100, stream)  # 100 bytes -> the 512-byte class
    assert block is not None
    assert (block.address, block.size, block.payload) == (0xA000, 512, "payload")
    assert block.stream is stream and block.writer is stream and block.allocator is allocator
    assert block.used_streams is None
    assert cache.get("num_cache_hits") == 1 and cache.get("allocated_bytes") == 512
    assert cache.malloc_fast(allocator, 100, stream) is None  # empty now
    other = _Stream()
    block.record_stream(other)
    block.record_stream(stream)  # its own stream is not recorded
    assert block.used_streams == {other}
    del block
    gc.collect()
    assert cache.released_count == 1
    (address, payload, size, s, used), = cache.take_released()
    assert (address, payload, size, s, used) == (0xA000, "payload", 512, stream, {other})


def test_malloc_fast_drains_simple_releases_and_stands_aside_when_charged() -> None:
    cache = drv.BlockCache()
    stream = _Stream()
    allocator = object()
    cache.push(stream, 1024, 0xB000, None)
    block = cache.malloc_fast(allocator, 1000, stream)
    assert block is not None
    del block  # queued on the cache; the next malloc_fast takes it back in C
    again = cache.malloc_fast(allocator, 1024, stream)
    assert again is not None and again.address == 0xB000
    assert cache.get("num_frees") == 1 and cache.get("num_allocs") == 2
    cache.charged = True  # partitions: owners must be told, so Python does the bookkeeping
    del again
    assert cache.malloc_fast(allocator, 1024, stream) is None
    assert cache.released_count == 1


def test_external_blocks_are_never_given_back() -> None:
    cache = drv.BlockCache()
    block = drv.CachedBlock(None, None, 0xC000, "owner", 0, _Stream())
    del block
    assert cache.released_count == 0
    with pytest.raises(TypeError, match="cache must be a BlockCache"):
        drv.CachedBlock("nope", None, 0, None, 0, _Stream())
    with pytest.raises(ValueError, match="size must be >= 0"):
        drv.CachedBlock(None, None, 0, None, -1, _Stream())


def test_fast_op_calls_its_fallback_and_describes_it() -> None:
    calls = []

    def fallback(x: object, y: object = 0, *, z: object = None) -> tuple[object, ...]:
        """Docs of the fallback."""
        calls.append((x, y, z))
        return (x, y, z)

    op = drv.FastOp(0, "add", fallback, lambda *a: None)
    assert op(1, 2) == (1, 2, None)  # not arrays: the fallback
    assert op(1, z=3) == (1, 0, 3)  # keywords: the fallback
    assert op.fallback is fallback and op.kind == 0
    with pytest.raises(ValueError, match="kind must be in"):
        drv.FastOp(99, "add", fallback, lambda *a: None)
    with pytest.raises(TypeError, match="callable"):
        drv.FastOp(0, "add", 3, lambda *a: None)


FAST_VS_PYTHON = r"""
import ctypes, os
import numpy as np
import pygpukit as gp
from pygpukit import _small, _fastpath
from pygpukit._dtypes import normalize_dtype

FAKE = ctypes.CDLL(os.environ["PYGPUKIT_CUDA_DRIVER"])
ctx = use_device(0)
mod = drv.Module.load_data(b"FAKECUBIN")
rt = gp.zeros(1)._rt
layouts = {"ew_f32": ("small_ew_f32", "iiPiPiqPiqPiqffq"),
           "ew_f64": ("small_ew_8", "iiPiPiqPiqPiqddq"),
           "ew_i64": ("small_ew_8", "iiPiPiqPiqPiqqqq"), "cast": ("small_cast", "PiPiqq"),
           "reduce_f32": ("small_reduce", "iPiqPid"), "reduce_f64": ("small_reduce", "iPiqPid"),
           "reduce_i64": ("small_reduce", "iPiqPid"),
           "row_norm_f32": ("small_row_norm", "iPiqPPPd"),
           "row_norm_f64": ("small_row_norm", "iPiqPPPd")}
for slot, (fn, types) in layouts.items():
    launcher = drv.Launcher(mod.get_function(fn), 1, 256, types)
    rt.small_launchers[slot] = launcher
    rt.small[slot] = launcher.launch
params = (ctypes.c_ubyte * 256).in_dll(FAKE, "fake_last_params")
nparams = ctypes.c_int.in_dll(FAKE, "fake_last_params_len")
grid = (ctypes.c_uint * 3).in_dll(FAKE, "fake_last_grid")
count = ctypes.c_int.in_dll(FAKE, "fake_launch_count")

def launched(fn):
    before = count.value
    out = fn()
    assert count.value == before + 1, f"{count.value - before} launches"
    return out, bytes(params[:nparams.value]), grid[0]

def same(name, fast, slow):
    r1, p1, g1 = launched(fast)
    meta = (r1.shape, r1.strides, r1.dtype, r1._contig)
    address = r1._block.address
    del r1  # back to the cache: the Python path's result gets the same block
    r2, p2, g2 = launched(slow)
    assert r2 is not None, name
    assert r2._block.address == address, name
    assert (r2.shape, r2.strides, r2.dtype, r2._contig) == meta, (name, meta)
    assert p1 == p2 and g1 == g2, (name, p1.hex(), p2.hex(), g1, g2)

f32 = lambda *s: gp.from_numpy(np.arange(np.prod(s), dtype=np.float32).reshape(s))
a, b = f32(5), f32(5)
i64 = gp.from_numpy(np.arange(7, dtype=np.int64)); i8 = gp.from_numpy(np.arange(7, dtype=np.int8))
h = gp.from_numpy(np.ones(9, np.float16)); d = gp.from_numpy(np.ones(3, np.float64))
m = gp.from_numpy(np.array([True, False, True, True, False]))
x = f32(4, 64)
same("a+b", lambda: a + b, lambda: _small.binary("add", a, b))
same("add()", lambda: gp.add(a, b), lambda: _small.binary("add", a, b))
same("a*2.5", lambda: a * 2.5, lambda: _small.binary("multiply", a, 2.5))
same("3-a", lambda: 3 - a, lambda: _small.binary("subtract", 3, a))
same("a<b", lambda: a < b, lambda: _small.binary("less", a, b))
same("i64+7", lambda: i64 + 7, lambda: _small.binary("add", i64, 7))
same("i8*-3", lambda: i8 * -3, lambda: _small.binary("multiply", i8, -3))
same("h+0.1", lambda: h + 0.1, lambda: _small.binary("add", h, 0.1))
same("d/3", lambda: d / 3, lambda: _small.binary("divide", d, 3))
same("2**a", lambda: 2 ** a, lambda: _small.binary("power", 2, a))
same("True&m", lambda: True & m, lambda: _small.binary("bitwise_and", True, m))
same("exp", lambda: gp.exp(a), lambda: _small.unary("exp", a))
same("-i64", lambda: -i64, lambda: _small.unary("negative", i64))
same("sqrt(i8)", lambda: gp.sqrt(i8), lambda: _small.unary("sqrt", i8))
same("where", lambda: gp.where(m, a, b), lambda: _small.where(m, a, b))
same("where s", lambda: gp.where(m, a, -1.5), lambda: _small.where(m, a, -1.5))
same("where 2s", lambda: gp.where(m, 1, 0), lambda: _small.where(m, 1, 0))
same("astype", lambda: a.astype("float16"), lambda: _small.astype(a, normalize_dtype("float16")))
same("astype i", lambda: i64.astype(np.int8), lambda: _small.astype(i64, normalize_dtype(np.int8)))
for name in ("sum", "mean", "max", "argmax", "var", "std", "any", "prod"):
    same(name, lambda: getattr(a, name)(), lambda: _small.reduce_all(name, a, False, 0))
same("gp.mean", lambda: gp.mean(i64), lambda: _small.reduce_all("mean", i64, False, 0))
same("softmax", lambda: gp.softmax(x), lambda: _small.row_norm(0, x, None, None, 0.0))
same("log_softmax", lambda: gp.log_softmax(x), lambda: _small.row_norm(1, x, None, None, 0.0))

# Where the fast path does not apply, the Python function takes the call (CPU simulation:
# it computes with NumPy and launches nothing).
before = count.value
big = f32(1 << 17)
assert (a[::2] + b[::2]).to_numpy().tolist() == [0.0, 4.0, 8.0]  # strided views
assert (big + 1.0).shape == (1 << 17,)  # beyond the small path
assert (a.sum(axis=0)).to_numpy() == 10.0  # keyword arguments
assert gp.add(a, b, out=gp.empty(5, gp.float64)).shape == (5,)  # out of another dtype
assert gp.softmax(x, axis=0).shape == (4, 64)
assert count.value == before, count.value - before
# Operands allocated for another stream: the Python small path records the cross-stream use.
s = gp.Stream()
with s:
    r = a + b
assert count.value == before + 1 and r._block.stream is s and a._block.used_streams == {s}
# Bad operands still get the Python path's errors.
try:
    a + "x"
except TypeError:
    pass
else:
    raise AssertionError("a + 'x' must raise TypeError")
try:
    a + f32(4)
except ValueError as e:
    assert "broadcast" in str(e)
else:
    raise AssertionError("shape mismatch must raise")
# A bound method and introspection behave like the Python function's.
method = a.sum
assert method().shape == ()
import inspect
assert "axis" in str(inspect.signature(gp.sum)) and gp.exp.__name__ == "exp"
assert gp.exp.__doc__ and "exp" in gp.exp.__doc__
"""


def test_fast_path_launches_what_the_python_path_launches(run: Runner) -> None:
    run(FAST_VS_PYTHON, env={"PYGPUKIT_BACKEND": "cpu"})


def test_fast_path_reports_a_failed_launch(run: Runner) -> None:
    run(
        r"""
import numpy as np
import pygpukit as gp
ctx = use_device(0)
mod = drv.Module.load_data(b"FAKECUBIN")
rt = gp.zeros(1)._rt
launcher = drv.Launcher(mod.get_function("small_ew_f32"), 1, 256, "iiPiPiqPiqPiqffq")
rt.small_launchers["ew_f32"] = launcher
a = gp.from_numpy(np.ones(4, np.float32))
base = gp.memory_stats()["allocated_bytes"]
try:
    a + a
except drv.CudaError as e:
    assert "719" in str(e) or "LAUNCH" in str(e).upper(), str(e)
else:
    raise AssertionError("the injected launch error must surface")
assert gp.memory_stats()["allocated_bytes"] == base  # the result's block went back
""",
        env={"PYGPUKIT_BACKEND": "cpu", "FAKE_CUDA_LAUNCH_ERROR": "719"},
    )


PRODUCTS = r"""
import ctypes
import numpy as np
import pygpukit as gp
from pygpukit import _linalg

ctx = use_device(0)
rt = gp.zeros(1)._rt
rt.small_launchers["ew_f32"] = object()  # marks a runtime with a C fast path


class Desc(ctypes.Structure):
    _fields_ = [("m", ctypes.c_int64), ("n", ctypes.c_int64), ("k", ctypes.c_int64),
                ("batch", ctypes.c_int64), ("dtype", ctypes.c_int32),
                ("precision", ctypes.c_int32), ("activation", ctypes.c_int32),
                ("b_col_major", ctypes.c_int32), ("a", ctypes.c_uint64), ("lda", ctypes.c_int64),
                ("sa", ctypes.c_int64), ("b", ctypes.c_uint64), ("ldb", ctypes.c_int64),
                ("sb", ctypes.c_int64), ("c", ctypes.c_uint64), ("ldc", ctypes.c_int64),
                ("sc", ctypes.c_int64), ("bias", ctypes.c_uint64)]


calls = []
GEMM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(Desc), ctypes.c_uint64, ctypes.c_uint64,
                        ctypes.c_uint64)
WS = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(Desc), ctypes.POINTER(ctypes.c_uint64))
status = {"value": 0}


@GEMM
def fake_gemm(desc, workspace, nbytes, stream):
    d = desc.contents
    calls.append({f: getattr(d, f) for f, _ in Desc._fields_} | {"ws": workspace,
                                                                   "ws_bytes": nbytes})
    return status["value"]


@WS
def fake_workspace(desc, out):
    out[0] = 4096 if desc.contents.m == 3 else 0
    return 0


def check(name, code):
    if code:
        raise RuntimeError(f"{name} failed with {code}")


rt.gemm_entry_points = lambda: (ctypes.cast(fake_gemm, ctypes.c_void_p).value,
                                ctypes.cast(fake_workspace, ctypes.c_void_p).value, check)
rt.context_handle = ctx.handle
a = gp.from_numpy(np.ones((3, 4), np.float16))
b = gp.from_numpy(np.ones((4, 5), np.float16))
w = gp.from_numpy(np.ones((5, 4), np.float16))
bias = gp.from_numpy(np.ones(5, np.float16))
addr = lambda x: x._block.address + x._offset

c = a @ b
d = calls.pop()
assert c.shape == (3, 5) and c.dtype == np.float16 and c._contig
assert (d["m"], d["n"], d["k"], d["batch"], d["b_col_major"]) == (3, 5, 4, 1, 0), d
assert (d["a"], d["b"], d["c"]) == (addr(a), addr(b), addr(c)), d
assert (d["lda"], d["ldb"], d["ldc"], d["bias"], d["activation"]) == (4, 5, 5, 0, 0), d
assert d["ws_bytes"] == 4096 and d["ws"] != 0, d
y = gp.linear(a, w, bias)
d = calls.pop()
assert y.shape == (3, 5)
assert (d["b_col_major"], d["ldb"], d["b"], d["bias"]) == (1, 4, addr(w), addr(bias)), d
z = gp.matmul(a, w.T)  # a transposed view is read in place
d = calls.pop()
assert (d["b_col_major"], d["ldb"], d["b"]) == (1, 4, addr(w)), d
assert not calls
# Where the fast path does not apply the Python path runs (the CPU simulation computes).
assert (a @ b.astype(np.float32)).dtype == np.float32 and not calls
assert gp.linear(a, w, bias, "relu").shape == (3, 5) and not calls
assert gp.matmul(a[::2], b).shape == (2, 5) and not calls
# The C ABI's errors reach the caller; the result's block goes back.
base = gp.memory_stats()["allocated_bytes"]
status["value"] = 7
try:
    a @ b
except RuntimeError as e:
    assert "pgk_gemm failed with 7" in str(e)
else:
    raise AssertionError("a failed product must raise")
assert gp.memory_stats()["allocated_bytes"] == base
"""


def test_products_fill_the_gemm_descriptor(run: Runner) -> None:
    run(PRODUCTS, env={"PYGPUKIT_BACKEND": "cpu"})


JIT_CALLS = r"""
import ctypes, os
import numpy as np
import pygpukit as gp
from pygpukit._jit import JITKernel, _parse_params

FAKE = ctypes.CDLL(os.environ["PYGPUKIT_CUDA_DRIVER"])
ctx = use_device(0)
mod = drv.Module.load_data(b"FAKECUBIN")
rt = gp.zeros(1)._rt
rt.small_launchers["ew_f32"] = object()  # a runtime with a C fast path
rt._context = ctx
params = (ctypes.c_ubyte * 256).in_dll(FAKE, "fake_last_params")
nparams = ctypes.c_int.in_dll(FAKE, "fake_last_params_len")
grid = (ctypes.c_uint * 3).in_dll(FAKE, "fake_last_grid")
block = (ctypes.c_uint * 3).in_dll(FAKE, "fake_last_block")
count = ctypes.c_int.in_dll(FAKE, "fake_launch_count")
# record_args has the parameter sizes 8, 4, 8, 1, 8.
kernel = JITKernel(mod, mod.get_function("record_args"), "record_args",
                   _parse_params("float* out, int n, double scale, bool flag, const float* x", {}),
                   128, rt)
out = gp.zeros(300, gp.float32)
x = gp.ones(300, gp.float32)

def launched(fn):
    before = count.value
    fn()
    assert count.value == before + 1, count.value - before
    return bytes(params[:nparams.value]), grid[0], block[0]

# A call is the FastOp itself: no Python frame between the caller and C.
assert kernel.__call__ is kernel._fast
fast = launched(lambda: kernel(out, n=300, scale=2.5, flag=True, x=x))
assert kernel._fast.plan_count == 1
slow = launched(lambda: kernel(out, 300, 2.5, True, x, block=128))  # the checking path
assert fast == slow and fast[1] == 3 and fast[2] == 128, (fast, slow)
assert launched(lambda: kernel(x=x, flag=False, scale=1.0, n=5, out=out))[1] == 1
# Arguments the C path does not take reach the Python path, which checks and reports them.
for bad, error in (((out,), "missing arguments"),
                   ((out, 300, 2.5, True, x, 7), "takes 5 arguments"),
                   ((gp.zeros(3, gp.int32), 300, 2.5, True, x), "expected float")):
    try:
        kernel(*bad)
    except TypeError as e:
        assert error in str(e), str(e)
    else:
        raise AssertionError(f"{bad!r} must raise")
try:
    kernel(out, n=300, scale=2.5, flag=True, y=x)
except TypeError as e:
    assert "no parameter 'y'" in str(e), str(e)
else:
    raise AssertionError("an unknown keyword must raise")
# A parameter named like a launch option: the keyword is the launch option, so no C plan.
named = JITKernel(mod, mod.get_function("record_args"), "record_args",
                  _parse_params("float* out, int n, double scale, bool flag, const float* grid",
                                {}), 128, rt)
assert named._fast_plan() is None
assert launched(lambda: named(out, 300, 2.5, True, x))[1] == 3
try:
    kernel(out, n=2**40, scale=2.5, flag=True, x=x)
except (ValueError, OverflowError) as e:
    assert "n" in str(e)
else:
    raise AssertionError("n out of int range must raise")
"""


def test_jit_keyword_call_launches_what_the_checking_path_launches(run: Runner) -> None:
    run(JIT_CALLS, env={"PYGPUKIT_BACKEND": "cpu"})


def test_cached_block_spill_out_and_adopt() -> None:
    cache = drv.BlockCache()
    stream, other = _Stream(), _Stream()
    allocator = object()
    cache.push(stream, 512, 0xE000, "device 2")
    cache.push(stream, 512, 0xD000, "device")  # LIFO: taken first
    block = cache.malloc_fast(allocator, 512, stream)
    assert block is not None and not block.tracked and block.pins == 0 and block.last_use == 0
    block.tracked = True
    block.touch()
    first = block.last_use
    block.touch()
    assert block.last_use > first > 0
    ref = weakref.ref(block)  # the spill registry holds blocks weakly
    block.record_stream(other)
    block.pins = 1
    with pytest.raises(ValueError, match="pinned"):
        block.spill_out("host copy")
    with pytest.raises(ValueError, match="pins must be in"):
        block.pins = -1
    block.pins = 0
    block.spill_out("host copy")
    # The device memory went back as a release (with the streams that used it); the block
    # keeps the host copy and has address 0 until it adopts new memory.
    assert block.address == 0 and block.payload == "host copy" and block.used_streams is None
    (address, payload, size, s, used), = cache.take_released()
    assert (address, payload, size, s, used) == (0xD000, "device", 512, stream, {other})
    with pytest.raises(ValueError, match="spilled already"):
        block.spill_out("again")
    new = cache.malloc_fast(allocator, 512, stream)
    assert new is not None and new.address == 0xE000
    with pytest.raises(TypeError, match="another CachedBlock"):
        block.adopt("nope")
    block.adopt(new)
    assert (block.address, block.payload) == (0xE000, "device 2")
    assert new.address == 0 and new.payload is None
    with pytest.raises(ValueError, match="not spilled"):
        block.adopt(new)
    del new  # empty: nothing goes back
    assert cache.released_count == 0
    del block
    assert ref() is None and cache.released_count == 1


SPILLED_OPERANDS = r"""
import ctypes, os
import numpy as np
import pygpukit as gp

FAKE = ctypes.CDLL(os.environ["PYGPUKIT_CUDA_DRIVER"])
ctx = use_device(0)
mod = drv.Module.load_data(b"FAKECUBIN")
rt = gp.zeros(1)._rt
launcher = drv.Launcher(mod.get_function("small_ew_f32"), 1, 256, "iiPiPiqPiqPiqffq")
rt.small_launchers["ew_f32"] = launcher
rt.small["ew_f32"] = launcher.launch
count = ctypes.c_int.in_dll(FAKE, "fake_launch_count")
gp.configure_partitions(1 << 20)
p = gp.create_partition("spilling", memory=4 * 512, spill=True)  # four 512-byte blocks
q = gp.create_partition("other", memory=4 * 512, spill=True)
ha, hb = np.arange(100, dtype=np.float32), np.full(100, 0.5, np.float32)
with p:
    a, b = gp.from_numpy(ha), gp.from_numpy(hb)
    # On the device: the C path launches and stamps the operands' LRU clock (a, then b).
    stamp = max(a._block.last_use, b._block.last_use)
    before = count.value
    r = a + b
    assert count.value == before + 1, count.value - before
    assert stamp < a._block.last_use < b._block.last_use
    del r
    # Two more arrays fill the quota; a third spills the least recently used, a.
    fill = [gp.from_numpy(np.zeros(100, np.float32)) for _ in range(3)]
    assert not a._block.address and p.memory_stats()["num_spills"] >= 1
    # A spilled operand: neither the C path nor the Python small path launches; the general
    # path brings it back (NumPy computes on the CPU simulation).
    before = count.value
    r = a + b
    assert count.value == before, count.value - before
    assert a._block.address and np.array_equal(r.to_numpy(), ha + hb)
    del r, fill
with q:  # later uses elsewhere: a and b are no longer held as this thread's latest operands
    q1, q2 = gp.from_numpy(ha), gp.from_numpy(hb)
with p:
    pinned = [gp.from_numpy(np.zeros(100, np.float32)) for _ in range(2)]
    capsules = [x.__dlpack__() for x in pinned]  # a, b and two pinned arrays fill the quota
    # The result's allocation can only spill an operand whose address the C path already
    # read: it checks again, leaves the op to the Python path, which says the quota is full
    # (a stale address is never launched).
    before, spills = count.value, p.memory_stats()["num_spills"]
    try:
        a + b
    except gp.PartitionMemoryError as e:
        assert "spilling" in str(e)
    else:
        raise AssertionError("a + b cannot fit beside two pinned arrays")
    assert count.value == before, count.value - before
    assert p.memory_stats()["num_spills"] > spills  # the C path's allocation spilled a
    del capsules
    assert np.array_equal(a.to_numpy(), ha) and np.array_equal(b.to_numpy(), hb)
"""


def test_fast_path_leaves_spilled_operands_to_the_python_path(run: Runner) -> None:
    pytest.importorskip("pygpukit_sched", reason="spilling partitions need pygpukit[sched]")
    run(SPILLED_OPERANDS, env={"PYGPUKIT_BACKEND": "cpu"})


LARGE_AND_OUT = r"""
import ctypes, os
import numpy as np
import pygpukit as gp
from pygpukit import _small

FAKE = ctypes.CDLL(os.environ["PYGPUKIT_CUDA_DRIVER"])
ctx = use_device(0)
mod = drv.Module.load_data(b"FAKECUBIN")
rt = gp.zeros(1)._rt
for slot, (fn, types) in {"ew_f32": ("small_ew_f32", "iiPiPiqPiqPiqffq"),
                          "ew_f64": ("small_ew_8", "iiPiPiqPiqPiqddq"),
                          "ew_i64": ("small_ew_8", "iiPiPiqPiqPiqqqq"),
                          "cast": ("small_cast", "PiPiqq")}.items():
    launcher = drv.Launcher(mod.get_function(fn), 1, 256, types)
    rt.small_launchers[slot] = launcher
    rt.small[slot] = launcher.launch
params = (ctypes.c_ubyte * 256).in_dll(FAKE, "fake_last_params")
nparams = ctypes.c_int.in_dll(FAKE, "fake_last_params_len")
count = ctypes.c_int.in_dll(FAKE, "fake_launch_count")

# Fake C ABI entry points recording their arguments (strides and shape read as int64 lists).
P, I, D, Q = ctypes.c_void_p, ctypes.c_int, ctypes.c_double, ctypes.c_int64
L = ctypes.POINTER(ctypes.c_int64)
calls, status = [], {"value": 0}

def lst(p, k):
    return None if not p else [p[i] for i in range(k)]

@ctypes.CFUNCTYPE(I, I, P, I, L, P, I, L, P, I, L, I, L, I, D, Q, P)
def binary(op, a, ac, ast, b, bc, bst, o, oc, ost, nd, sh, comp, sf, si, s):
    calls.append(("binary", op, a, ac, lst(ast, nd), b, bc, lst(bst, nd), o, oc, lst(ost, nd),
                  lst(sh, nd), comp, sf, si, s))
    return status["value"]

@ctypes.CFUNCTYPE(I, I, P, I, L, P, I, L, I, L, I, P)
def unary(op, x, xc, xst, o, oc, ost, nd, sh, comp, s):
    calls.append(("unary", op, x, xc, lst(xst, nd), o, oc, lst(ost, nd), lst(sh, nd), comp, s))
    return status["value"]

@ctypes.CFUNCTYPE(I, P, I, L, P, I, L, P, I, L, P, I, L, I, L, I, D, Q, D, Q, P)
def where(c, cc, cst, a, ac, ast, b, bc, bst, o, oc, ost, nd, sh, comp, af, ai, bf, bi, s):
    calls.append(("where", c, cc, lst(cst, nd), a, ac, lst(ast, nd), b, bc, lst(bst, nd), o, oc,
                  lst(ost, nd), lst(sh, nd), comp, af, ai, bf, bi, s))
    return status["value"]

@ctypes.CFUNCTYPE(I, P, I, L, P, I, L, I, L, P)
def copy(src, sc, sst, dst, dc, dst_st, nd, sh, s):
    calls.append(("copy", src, sc, lst(sst, nd), dst, dc, lst(dst_st, nd), lst(sh, nd), s))
    return status["value"]

def check(name, code):
    if code:
        raise RuntimeError(f"{name} failed with {code}")

entries = {name: ctypes.cast(f, ctypes.c_void_p).value
           for name, f in (("binary", binary), ("unary", unary), ("where", where),
                           ("copy", copy))}
rt.elementwise_entry_points = lambda: (entries, check)
rt.context_handle = ctx.handle
stream = rt.default_stream.handle or None
addr = lambda x: x._block.address + x._offset
code = lambda t: gp._dtypes.kernel_code(np.dtype(t))
n = (1 << 16) + 5  # past the small kernels

def one(fn):
    before = count.value
    out = fn()
    assert count.value == before, "no small kernel for large operands"
    assert len(calls) == 1, calls
    return out, calls.pop()

f32 = lambda k: gp.from_numpy(np.random.default_rng(k).standard_normal(n).astype(np.float32))
a, b = f32(1), f32(2)
F32, F64, I64 = code(np.float32), code(np.float64), code(np.int64)
r, c = one(lambda: a + b)
assert r.shape == (n,) and r.dtype == np.float32 and r._contig
assert c == ("binary", 0, addr(a), F32, [4], addr(b), F32, [4], addr(r), F32, [4], [n], F32,
             0.0, 0, stream), c
r, c = one(lambda: a + 0.1)  # a float32 loop: the scalar rounded to float32
assert c[5:8] == (None, 0, None) and c[13:15] == (float(np.float32(0.1)), 0), c
r, c = one(lambda: 3 - a)  # reflected: the scalar is the first operand
assert c[1:5] == (1, None, 0, None) and c[5] == addr(a) and c[13] == 3.0, c
i64 = gp.from_numpy(np.arange(n, dtype=np.int64))
r, c = one(lambda: i64 * -7)
assert r.dtype == np.int64 and c[12:15] == (I64, 0.0, -7), c
r, c = one(lambda: a < b)
assert r.dtype == np.bool_ and c[9:11] == (code(np.bool_), [1]), c
r, c = one(lambda: gp.exp(a))
assert c == ("unary", c[1], addr(a), F32, [4], addr(r), F32, [4], [n], F32, stream), c
m = gp.from_numpy(np.arange(n) % 3 == 0)
r, c = one(lambda: gp.where(m, a, -1.5))
assert c[1:4] == (addr(m), code(np.bool_), [1]) and c[4:7] == (addr(a), F32, [4]), c
assert c[7:10] == (None, 0, None) and c[15:19] == (0.0, 0, -1.5, 0), c
d = gp.from_numpy(np.ones(n, np.float64))
r, c = one(lambda: gp.where(m, d, 2))
assert r.dtype == np.float64 and c[14] == F64 and c[17] == 2.0, c
r, c = one(lambda: a.astype(np.float16))
assert c == ("copy", addr(a), F32, [4], addr(r), code(np.float16), [2], [n], stream), c
assert (a.astype(np.float32) is not a) and not calls  # a same-dtype copy: the Python path

# out=: written in place, the array itself returned (large and small operands alike).
z = gp.empty(n)
r, c = one(lambda: gp.add(a, b, out=z))
assert r is z and c[8] == addr(z), c
r, c = one(lambda: gp.multiply(a, b, out=a))  # exactly aliasing an input: fine
assert r is a and c[2] == c[8] == addr(a), c
r, c = one(lambda: gp.exp(a, out=z))
assert r is z and c[5] == addr(z), c
r, c = one(lambda: gp.where(m, a, b, out=z))
assert r is z and c[10] == addr(z), c
small_a, small_b, small_z = (gp.from_numpy(np.arange(5, dtype=np.float32)) for _ in range(3))
before = count.value
ref = small_a + small_b
p_new = bytes(params[:nparams.value])
assert gp.add(small_a, small_b, out=small_z) is small_z and count.value == before + 2
p_out = bytes(params[:nparams.value])
old, new = addr(ref).to_bytes(8, "little"), addr(small_z).to_bytes(8, "little")
assert p_new.count(old) == 1 and p_out == p_new.replace(old, new), (p_new.hex(), p_out.hex())
assert not calls
# In-place operators: into the left operand itself (large: the C entry; small: the kernel).
before_id = id(a)
a += b
(c,) = calls
calls.clear()
assert id(a) == before_id and c[0] == "binary" and c[2] == c[8] == addr(a) and c[5] == addr(b), c
a -= 0.5
(c,) = calls
calls.clear()
assert c[1] == 1 and c[8] == addr(a) and c[13] == 0.5, c
keep = small_z
before = count.value
small_z *= small_b
assert small_z is keep and count.value == before + 1 and not calls
ints = gp.from_numpy(np.arange(n, dtype=np.int32))
try:
    ints += 1.5  # float64 into int32: the Python path refuses it, as NumPy
except TypeError as e:
    assert "cast" in str(e), str(e)
else:
    raise AssertionError("int32 += float must raise")
assert not calls
# out= the Python path takes (NumPy computes on the CPU simulation): another dtype, a
# partial overlap with an input, another shape (an error), out=None.
before = count.value
z64 = gp.empty(n, gp.float64)
assert gp.add(a, b, out=z64) is z64
buf = gp.from_numpy(np.arange(n + 1, dtype=np.float32))
x0, x1 = buf[:n], buf[1:]
assert x0._contig and x1._contig
want = buf.to_numpy()[:n] + 1
assert gp.add(x0, 1.0, out=x1) is x1 and np.array_equal(x1.to_numpy(), want)
try:
    gp.add(a, b, out=gp.empty(n - 1))
except ValueError as e:
    assert "shape" in str(e)
else:
    raise AssertionError("out of another shape must raise")
assert not calls and count.value == before
r, c = one(lambda: gp.add(a, b, out=None))
assert r is not None and c[8] == addr(r)

# The C ABI's errors reach the caller and the result's block goes back.
base = gp.memory_stats()["allocated_bytes"]
status["value"] = 9
try:
    a + b
except RuntimeError as e:
    assert "pgk_binary failed with 9" in str(e), str(e)
else:
    raise AssertionError("a failed launch must raise")
assert gp.memory_stats()["allocated_bytes"] == base
calls.clear()
"""


def test_large_operands_and_out_take_the_c_abi(run: Runner) -> None:
    run(LARGE_AND_OUT, env={"PYGPUKIT_BACKEND": "cpu"})
