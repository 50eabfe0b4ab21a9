"""pygpukit.distributed: NCCL's loader, argument packing and error paths, and the collectives.

CPU tier: a fake ``libnccl.so.2`` built here from fake_nccl/fake_nccl.c records every call it
gets (the datatype/op enums, counts, buffer addresses, root/peer, stream handle) and fails on
demand; on the CPU simulation its collectives run on host memory as NCCL's would with one rank
(a copy).  The loader's search runs for real (cuda-pathfinder) against fake wheel layouts in a
fresh interpreter.  GPU tier (``gpu``): real NCCL on one GPU, compared with NumPy; ``multigpu``:
every GPU of the machine.
"""

from __future__ import annotations

import gc
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pygpukit as gp
from pygpukit import _backend, _nccl, _nccl_lib
from pygpukit import distributed as dist

HERE = Path(__file__).resolve().parent
FAKE_SRC = HERE / "fake_nccl" / "fake_nccl.c"
SRC_ROOTS = [str(Path(gp.__file__).resolve().parents[1])]

NCCL_DTYPES = {"int8": 0, "uint8": 1, "int32": 2, "int64": 4, "float16": 6, "float32": 7,
               "float64": 8, "bfloat16": 9}
NCCL_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}


# -- the fake library ------------------------------------------------------------------------
@pytest.fixture(scope="session")
def c_compiler(required_tool: Callable[..., str]) -> str:
    if not sys.platform.startswith("linux"):
        pytest.skip("the fake NCCL is built as a Linux shared library")
    return required_tool("cc", "gcc", "clang", why="it builds the fake libnccl.so.2 "
                         "(fake_nccl/fake_nccl.c) that the CPU-tier NCCL tests load")


@pytest.fixture(scope="session")
def fake_lib(c_compiler: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fake_nccl") / "libnccl.so.2"
    subprocess.run([c_compiler, "-shared", "-fPIC", "-O1", "-o", str(out), str(FAKE_SRC),
                    "-lpthread"], check=True, capture_output=True, text=True)
    return out


class Fake:
    """The fake library's controls and its call log."""

    def __init__(self, path: Path) -> None:
        import ctypes

        self.lib = ctypes.CDLL(str(path))  # the same handle _nccl_lib loaded: same globals
        self.lib.fake_nccl_log.restype = ctypes.c_char_p
        self.lib.fake_nccl_fail.argtypes = [ctypes.c_char_p, ctypes.c_int]

    def reset(self) -> None:
        self.lib.fake_nccl_reset()

    def fail(self, call: str, code: int) -> None:
        self.lib.fake_nccl_fail(call.encode(), code)

    def lines(self) -> list[str]:
        return [ln for ln in self.lib.fake_nccl_log().decode().splitlines() if ln]

    def calls(self, name: str) -> list[dict[str, int]]:
        """The logged calls of ``name``, each as {field: value} (pointers as ints)."""
        found = []
        for line in self.lines():
            head, *fields = line.split()
            if head != name:
                continue
            parsed = {}
            for field in fields:
                key, value = field.split("=", 1)
                if value == "(nil)":
                    parsed[key] = 0
                elif value.startswith("0x"):
                    parsed[key] = int(value, 16)
                else:
                    parsed[key] = int(value)
            found.append(parsed)
        return found

    def names(self) -> list[str]:
        return [line.split()[0] for line in self.lines()]


@pytest.fixture
def fake(fake_lib: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Fake]:
    """The fake NCCL as the process's NCCL, on the CPU backend, with its CUDA check lifted."""
    monkeypatch.setenv(_nccl_lib.ENV_OVERRIDE, str(fake_lib))
    monkeypatch.setenv(_backend.ENV_BACKEND, "cpu")
    monkeypatch.setattr(_nccl, "_require_cuda", lambda: None)
    _nccl_lib._reset_for_tests()
    _backend._reset_for_tests()
    handle = Fake(fake_lib)
    handle.reset()
    yield handle
    handle.reset()
    _nccl_lib._reset_for_tests()


@pytest.fixture
def comm(fake: Fake) -> Iterator[dist.Communicator]:
    c = dist.Communicator(1, 0, dist.unique_id())
    yield c
    c.abort()


def run_python(code: str, env: dict[str, str] | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ)
    full["PYTHONPATH"] = os.pathsep.join([*SRC_ROOTS, full.get("PYTHONPATH", "")])
    for name in ("PYGPUKIT_NCCL_PATH", "NCCL_HOME", "CONDA_PREFIX"):
        full.pop(name, None)
    full.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full,
                          capture_output=True, text=True, timeout=timeout)


# -- the loader ------------------------------------------------------------------------------
def _real_nccl_present() -> bool:
    """Whether a real NCCL is installed or loaded here (the GPU machine's torch brings one)."""
    import importlib.util

    try:
        if importlib.util.find_spec("nvidia.nccl") is not None:
            return True
    except (ImportError, ValueError):
        pass
    try:
        return "libnccl" in Path("/proc/self/maps").read_text()
    except OSError:
        return False


# Tests of NCCL's absence cannot simulate it where a real one can be found by other routes.
_needs_no_real_nccl = pytest.mark.skipif(
    _real_nccl_present(), reason="a real NCCL is installed here: its absence cannot be simulated")


def test_import_pygpukit_does_not_import_nccl() -> None:
    result = run_python("""
        import sys
        import pygpukit as gp
        gp.zeros(3)
        assert not [m for m in sys.modules if "nccl" in m or "distributed" in m], sys.modules
        import pygpukit.distributed            # importing the module loads no library either
        from pygpukit import _nccl_lib
        assert not _nccl_lib.is_loaded()
        maps = open("/proc/self/maps").read()
        assert "libnccl" not in maps
        print("ok")
    """)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


_SITE_PATCH = """
    import site, sys
    site.getsitepackages = lambda: [{site!r}]
    site.ENABLE_USER_SITE = False
"""


def _has_pathfinder() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("cuda.pathfinder") is not None
    except ModuleNotFoundError:
        return False


def test_found_in_the_nvidia_nccl_wheel_layout(fake_lib: Path, tmp_path: Path) -> None:
    """cuda-pathfinder's own search finds nvidia/nccl/lib/libnccl.so.2 in site-packages."""
    if not _has_pathfinder():
        pytest.skip("cuda-pathfinder is not installed (the nccl extra brings it)")
    lib_dir = tmp_path / "site-packages" / "nvidia" / "nccl" / "lib"
    lib_dir.mkdir(parents=True)
    shutil.copy(fake_lib, lib_dir / "libnccl.so.2")
    result = run_python(_SITE_PATCH.format(site=str(tmp_path / "site-packages")) + """
    import pygpukit as gp
    d = gp.distributed
    print(d.nccl_path()); print(d.nccl_version())
    from pygpukit import _nccl_lib; print(_nccl_lib.found_via())
    print(len(bytes(d.unique_id())))
    """, env={"PYGPUKIT_BACKEND": "cpu", "LD_LIBRARY_PATH": ""})
    assert result.returncode == 0, result.stderr
    path, version, via, id_len = result.stdout.split("\n")[:4]
    assert Path(path) == (lib_dir / "libnccl.so.2").resolve()
    assert version == "(2, 28, 5)" and via == "site-packages" and id_len == "128"


@_needs_no_real_nccl
def test_missing_nccl_names_the_extra(tmp_path: Path) -> None:
    empty = tmp_path / "site-packages"
    empty.mkdir()
    result = run_python(_SITE_PATCH.format(site=str(empty)) + """
    import pygpukit as gp
    assert not gp.distributed.is_available()
    try:
        gp.distributed.unique_id()
    except gp.distributed.NcclUnavailableError as exc:
        assert isinstance(exc, gp.PyGPUkitError) and isinstance(exc, RuntimeError)
        print(exc)
    """, env={"PYGPUKIT_BACKEND": "cpu", "LD_LIBRARY_PATH": ""})
    assert result.returncode == 0, result.stderr
    assert "pip install pygpukit[nccl]" in result.stdout and "\n" not in result.stdout.strip()
    if _has_pathfinder():
        assert "NCCL not found by cuda-pathfinder" in result.stdout
        assert "libnccl.so.2" in result.stdout
    else:  # a driver-only install: not even the finder is there
        assert "NCCL is not installed (no cuda-pathfinder to find it)" in result.stdout


@pytest.fixture
def reset_loader() -> Iterator[None]:
    _nccl_lib._reset_for_tests()
    yield
    _nccl_lib._reset_for_tests()


@_needs_no_real_nccl
def test_a_pathfinder_that_does_not_know_nccl(reset_loader: None,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    def refuse(name: str) -> None:
        raise KeyError(name)  # what a cuda-pathfinder from before NCCL's support raises

    finder = types.SimpleNamespace(__version__="1.2.0", load_nvidia_dynamic_lib=refuse,
                                   DynamicLibNotFoundError=type("NotFound", (RuntimeError,), {}))
    package = types.ModuleType("cuda")
    package.pathfinder = finder  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cuda", package)
    monkeypatch.setitem(sys.modules, "cuda.pathfinder", finder)  # type: ignore[arg-type]
    monkeypatch.delenv(_nccl_lib.ENV_OVERRIDE, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    with pytest.raises(dist.NcclUnavailableError,
                       match=r"cuda-pathfinder 1\.2\.0 cannot look for NCCL \('nccl'\); "
                             r"install it with `pip install pygpukit\[nccl\]`.*>=1\.4"):
        dist.unique_id()


def test_override_with_the_file_or_its_folder(fake_lib: Path, reset_loader: None,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for value in (fake_lib, fake_lib.parent):
        monkeypatch.setenv(_nccl_lib.ENV_OVERRIDE, str(value))
        _nccl_lib._reset_for_tests()
        assert _nccl_lib.found_via() == "PYGPUKIT_NCCL_PATH"
        assert Path(dist.nccl_path()) == fake_lib.resolve()
        assert dist.nccl_version() == (2, 28, 5)


@pytest.mark.parametrize("case", ["missing", "folder_without_lib", "not_a_library", "no_symbols"])
def test_override_errors_are_explained(case: str, tmp_path: Path, reset_loader: None,
                                       monkeypatch: pytest.MonkeyPatch, c_compiler: str) -> None:
    target = tmp_path / "x"
    expected = {"missing": "no such file or folder", "folder_without_lib": "libnccl.so.2",
                "not_a_library": "could not be loaded", "no_symbols": "unusable"}[case]
    if case == "folder_without_lib":
        target.mkdir()
    elif case == "not_a_library":
        target.write_bytes(b"not an ELF file")
    elif case == "no_symbols":
        src = tmp_path / "empty.c"
        src.write_text("int not_nccl(void) { return 0; }\n")
        target = tmp_path / "libnccl.so.2"
        subprocess.run([c_compiler, "-shared", "-fPIC", "-o", str(target), str(src)],
                       check=True)
    monkeypatch.setenv(_nccl_lib.ENV_OVERRIDE, str(target))
    with pytest.raises(dist.NcclUnavailableError, match=expected):
        dist.unique_id()
    assert not dist.is_available()
    with pytest.raises(dist.NcclUnavailableError, match=expected):  # the same answer again
        dist.Communicator(1, 0, bytes(128))


def test_info_reports_nccl(fake: Fake, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from pygpukit import _info

    facts = _info._nccl_info()
    assert facts == {"available": True, "version": "2.28.5",
                     "path": str(Path(os.environ[_nccl_lib.ENV_OVERRIDE]).resolve()),
                     "found_via": "PYGPUKIT_NCCL_PATH"}
    fake.fail("ncclGetVersion", 3)
    broken = _info._nccl_info()
    assert not broken["available"] and "ncclGetVersion failed" in broken["reason"]
    monkeypatch.setenv(_nccl_lib.ENV_OVERRIDE, str(tmp_path / "none"))
    _nccl_lib._reset_for_tests()
    missing = _info._nccl_info()
    assert not missing["available"] and "no such file or folder" in missing["reason"]


# -- unique ids and construction ---------------------------------------------------------------
def test_unique_id_is_128_bytes_and_pickles(fake: Fake) -> None:
    uid = dist.unique_id()
    data = bytes(uid)
    assert len(data) == 128 and data == bytes(i * 7 % 256 for i in range(128))  # NULs inside
    assert pickle.loads(pickle.dumps(uid)) == uid
    assert dist.UniqueId(data) == uid and hash(dist.UniqueId(data)) == hash(uid)
    with pytest.raises(ValueError, match="128 bytes; got 127"):
        dist.UniqueId(data[:-1])
    with pytest.raises(TypeError, match="128 bytes; got str"):
        dist.UniqueId("x" * 128)  # type: ignore[arg-type]


def test_communicator_passes_the_id_by_value(fake: Fake) -> None:
    uid = dist.unique_id()
    with dist.Communicator(4, 2, uid) as c:
        (init,) = fake.calls("ncclCommInitRank")
        assert (init["nranks"], init["rank"]) == (4, 2)
        data = bytes(uid)
        assert (init["id0"], init["id127"], init["idsum"]) == (data[0], data[127], sum(data))
        assert (c.rank, c.nranks, c.device) == (2, 4, gp.Device(0))
        assert not c.closed
    assert c.closed and fake.calls("ncclCommDestroy") == [{"rank": 2}]
    c.close()  # closing twice does nothing
    assert len(fake.calls("ncclCommDestroy")) == 1
    with pytest.raises(RuntimeError, match="closed"):
        c.all_reduce(gp.zeros(2))


def test_communicator_from_raw_bytes_and_the_finalizer(fake: Fake) -> None:
    c = dist.Communicator(1, 0, bytes(range(128)))
    assert fake.calls("ncclCommInitRank")[0]["idsum"] == sum(range(128))
    del c
    gc.collect()
    assert fake.calls("ncclCommDestroy") == [{"rank": 0}]


@pytest.mark.parametrize(("args", "exc", "match"), [
    ((0, 0), ValueError, "nranks: expected at least 1; got 0"),
    ((2, 2), ValueError, r"rank: expected 0 <= rank < nranks=2; got 2"),
    ((2, -1), ValueError, "got -1"),
    ((2, True), TypeError, "rank: expected an int; got True"),
    ((2.0, 0), TypeError, "nranks: expected an int; got 2.0"),
])
def test_communicator_argument_checks(args: tuple[Any, Any], exc: type[Exception],
                                      match: str) -> None:
    with pytest.raises(exc, match=match):
        dist.Communicator(args[0], args[1], bytes(128))


def test_communicator_unique_id_type_and_cpu_backend(fake_lib: Path, reset_loader: None,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TypeError, match=r"unique_id: expected a pygpukit\.distributed\.UniqueId"):
        dist.Communicator(1, 0, "id")  # type: ignore[arg-type]
    monkeypatch.setenv(_nccl_lib.ENV_OVERRIDE, str(fake_lib))
    monkeypatch.setenv(_backend.ENV_BACKEND, "cpu")
    _backend._reset_for_tests()
    with pytest.raises(dist.NcclUnavailableError, match="need the CUDA backend"):
        dist.Communicator(1, 0, bytes(128))
    with pytest.raises(dist.NcclUnavailableError, match="need the CUDA backend"):
        dist.init_all([0])


def test_init_rank_failure_names_the_rank(fake: Fake) -> None:
    fake.fail("ncclCommInitRank", 6)
    with pytest.raises(dist.NcclError) as info:
        dist.Communicator(3, 1, dist.unique_id())
    err = info.value
    assert (err.call, err.code, err.name, err.rank) == ("ncclCommInitRank", 6,
                                                        "ncclRemoteError", 1)
    assert "ncclCommInitRank failed on rank 1 of 3" in str(err)
    assert "NCCL says: fake: ncclCommInitRank failed" in str(err)
    assert isinstance(err, gp.PyGPUkitError)
    assert "ncclCommAbort" not in fake.names() and "ncclCommDestroy" not in fake.names()


def test_device_reported_by_nccl_must_match(fake: Fake) -> None:
    fake.lib.fake_nccl_set_device(3)
    with pytest.raises(ValueError, match="on device 3, not on the device asked for"):
        dist.Communicator(1, 0, dist.unique_id())
    assert fake.calls("ncclCommAbort") == [{"rank": 0}]


def test_init_all(fake: Fake) -> None:
    (c,) = dist.init_all([0])
    assert fake.calls("ncclCommInitAll") == [{"ndev": 1, "devlist": 0}]
    assert (c.rank, c.nranks, c.device.id) == (0, 1, 0)
    c.close()
    (c,) = dist.init_all()  # every device
    c.close()
    with pytest.raises(ValueError, match="each device may appear once; got"):
        dist.init_all([0, 0])
    with pytest.raises(ValueError, match="at least one device"):
        dist.init_all([])
    with pytest.raises(TypeError, match="a sequence of devices"):
        dist.init_all(0)  # type: ignore[arg-type]
    fake.fail("ncclCommInitAll", 2)
    with pytest.raises(dist.NcclError, match="ncclCommInitAll failed: ncclSystemError"):
        dist.init_all([0])


# -- argument packing ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", list(NCCL_DTYPES))
@pytest.mark.parametrize("op", list(NCCL_OPS))
def test_all_reduce_packing(comm: dist.Communicator, fake: Fake, dtype: str, op: str) -> None:
    host = (np.arange(24) % 5).astype(gp.bfloat16 if dtype == "bfloat16" else dtype)
    x = gp.from_numpy(host.reshape(4, 6))
    out = comm.all_reduce(x, op=op)
    (call,) = fake.calls("ncclAllReduce")
    assert call == {"send": x.data_ptr, "recv": out.data_ptr, "count": 24,
                    "dtype": NCCL_DTYPES[dtype], "op": NCCL_OPS[op], "rank": 0, "stream": 0}
    assert out.shape == (4, 6) and out.dtype == x.dtype and out.data_ptr != x.data_ptr
    np.testing.assert_array_equal(out.to_numpy(), host.reshape(4, 6))


def test_all_reduce_in_place_and_into_out(comm: dist.Communicator, fake: Fake) -> None:
    x = gp.from_numpy(np.arange(6, dtype=np.float32))
    assert comm.all_reduce(x, out=x) is x
    out = gp.zeros(6)
    assert comm.all_reduce(x, op="max", out=out) is out
    first, second = fake.calls("ncclAllReduce")
    assert first["send"] == first["recv"] == x.data_ptr
    assert (second["send"], second["recv"], second["op"]) == (x.data_ptr, out.data_ptr, 2)
    np.testing.assert_array_equal(out.to_numpy(), np.arange(6, dtype=np.float32))
    with pytest.raises(ValueError, match=r"out must have shape \(6,\) and dtype float32; got "
                                         r"shape \(5,\)"):
        comm.all_reduce(x, out=gp.zeros(5))
    with pytest.raises(ValueError, match=r"dtype float32; got shape \(6,\) and dtype float64"):
        comm.all_reduce(x, out=gp.zeros(6, dtype=gp.float64))


def test_non_contiguous_arrays_go_through_contiguous_copies(comm: dist.Communicator,
                                                            fake: Fake) -> None:
    base = np.arange(32, dtype=np.float32).reshape(4, 8)
    x = gp.from_numpy(base)[:, ::2]
    assert not x.is_contiguous()
    out_base = gp.zeros((4, 8))
    out = out_base[:, 1::2]
    assert comm.all_reduce(x, out=out) is out
    (call,) = fake.calls("ncclAllReduce")
    assert call["count"] == 16 and call["send"] != x.data_ptr and call["recv"] != out.data_ptr
    expected = np.zeros((4, 8), np.float32)
    expected[:, 1::2] = base[:, ::2]
    np.testing.assert_array_equal(out_base.to_numpy(), expected)  # written back, only there
    # in place on a view: reduced in a packed copy, which is written back into the view
    assert comm.all_reduce(x, out=x) is x
    second = fake.calls("ncclAllReduce")[1]
    assert second["send"] == second["recv"] != x.data_ptr
    np.testing.assert_array_equal(x.to_numpy(), base[:, ::2])


def test_partially_overlapping_out_is_staged(comm: dist.Communicator, fake: Fake) -> None:
    base = gp.from_numpy(np.arange(10, dtype=np.int32))
    x, out = base[0:6], base[2:8]
    comm.all_reduce(x, out=out)
    (call,) = fake.calls("ncclAllReduce")
    assert call["send"] == x.data_ptr and call["recv"] not in (x.data_ptr, out.data_ptr)
    np.testing.assert_array_equal(base.to_numpy(), [0, 1, 0, 1, 2, 3, 4, 5, 8, 9])


def test_all_gather_into_an_out_holding_x_is_staged(fake: Fake) -> None:
    """x = out[0] on rank 1 is not NCCL's in-place layout (that is out[rank]): staged."""
    c = dist.Communicator(2, 1, dist.unique_id())
    out = gp.from_numpy(np.array([[1, 2], [3, 4]], np.int32))
    x = out[0]
    c.all_gather(x, out=out)
    (call,) = fake.calls("ncclAllGather")
    assert call["send"] == x.data_ptr == out.data_ptr and call["recv"] != out.data_ptr
    np.testing.assert_array_equal(out.to_numpy(), [[1, 2], [1, 2]])
    c.close()


def test_broadcast_reduce_packing(fake: Fake) -> None:
    c = dist.Communicator(3, 1, dist.unique_id())
    x = gp.from_numpy(np.arange(5, dtype=np.int64))
    assert c.broadcast(x, root=2) is x
    assert fake.calls("ncclBroadcast") == [{"send": x.data_ptr, "recv": x.data_ptr, "count": 5,
                                            "dtype": 4, "root": 2, "rank": 1, "stream": 0}]
    out = c.reduce(x, root=0, op="prod")
    assert fake.calls("ncclReduce") == [{"send": x.data_ptr, "recv": out.data_ptr, "count": 5,
                                         "dtype": 4, "op": 1, "root": 0, "rank": 1,
                                         "stream": 0}]
    with pytest.raises(ValueError, match=r"broadcast: root must be a rank, 0 <= root < 3; "
                                         "got 3"):
        c.broadcast(x, root=3)
    with pytest.raises(TypeError, match="root: expected an int; got True"):
        c.reduce(x, root=True)
    with pytest.raises(ValueError, match="reduce: op must be one of 'sum', 'prod', 'max', "
                                         "'min', 'avg'; got 'mean'"):
        c.reduce(x, root=0, op="mean")
    c.close()


def test_reduce_on_the_root(comm: dist.Communicator, fake: Fake) -> None:
    x = gp.from_numpy(np.arange(4, dtype=np.float64))
    out = comm.reduce(x, root=0, op="min")
    np.testing.assert_array_equal(out.to_numpy(), np.arange(4.0))


def test_all_gather_and_reduce_scatter_packing(fake: Fake) -> None:
    c = dist.Communicator(3, 1, dist.unique_id())
    host = np.arange(12, dtype=np.float16).reshape(6, 2)
    x = gp.from_numpy(host)
    gathered = c.all_gather(x)
    assert gathered.shape == (3, 6, 2)
    assert fake.calls("ncclAllGather") == [{"send": x.data_ptr, "recv": gathered.data_ptr,
                                            "count": 12, "dtype": 6, "rank": 1, "stream": 0}]
    np.testing.assert_array_equal(gathered.to_numpy(), np.stack([host] * 3))
    part = c.reduce_scatter(x, op="avg")
    assert part.shape == (2, 2)
    assert fake.calls("ncclReduceScatter") == [{"send": x.data_ptr, "recv": part.data_ptr,
                                                "count": 4, "dtype": 6, "op": 4, "rank": 1,
                                                "stream": 0}]
    np.testing.assert_array_equal(part.to_numpy(), host[2:4])  # the fake's rank-1 block
    with pytest.raises(ValueError, match=r"divisible by nranks=3; got shape \(4,\)"):
        c.reduce_scatter(gp.zeros(4))
    with pytest.raises(ValueError, match=r"divisible by nranks=3; got shape \(\)"):
        c.reduce_scatter(gp.zeros(()))
    with pytest.raises(ValueError, match=r"out must have shape \(3, 6, 2\)"):
        c.all_gather(x, out=gp.zeros((6, 2), dtype=gp.float16))
    c.close()


def test_send_recv_and_group(fake: Fake) -> None:
    c = dist.Communicator(2, 0, dist.unique_id())
    x = gp.from_numpy(np.arange(4, dtype=np.uint8))
    y = gp.zeros(4, dtype=gp.uint8)
    with dist.group():
        assert fake.lib.fake_nccl_group_depth() == 1
        c.send(x, peer=1)
        assert c.recv(y, peer=1) is y
    assert fake.lib.fake_nccl_group_depth() == 0
    assert fake.names()[-4:] == ["ncclGroupStart", "ncclSend", "ncclRecv", "ncclGroupEnd"]
    assert fake.calls("ncclSend") == [{"send": x.data_ptr, "count": 4, "dtype": 1, "peer": 1,
                                       "rank": 0, "stream": 0}]
    assert fake.calls("ncclRecv") == [{"recv": y.data_ptr, "count": 4, "dtype": 1, "peer": 1,
                                       "rank": 0, "stream": 0}]
    with pytest.raises(ValueError, match="peer must be a rank, 0 <= peer < 2; got 5"):
        c.send(x, peer=5)
    view = gp.zeros((4, 2), dtype=gp.uint8)[:, 0]
    c.recv(view, peer=1)  # received into a contiguous temporary, copied back
    assert fake.calls("ncclRecv")[1]["recv"] != view.data_ptr
    c.close()


def test_group_defers_copies_into_non_contiguous_outputs(comm: dist.Communicator,
                                                         fake: Fake) -> None:
    """NCCL enqueues a group's work at ncclGroupEnd: copies back must come after it."""
    x = gp.from_numpy(np.arange(4, dtype=np.float32))
    base = gp.zeros((4, 2))
    out = base[:, 1]
    with dist.group():
        comm.all_reduce(x, out=out)
        (call,) = fake.calls("ncclAllReduce")
        assert call["recv"] != out.data_ptr
        assert _nccl._group_state.copies and _nccl._group_state.keep
        np.testing.assert_array_equal(base.to_numpy(), 0)  # not yet copied
    assert not _nccl._group_state.copies and not _nccl._group_state.keep
    np.testing.assert_array_equal(base.to_numpy()[:, 1], np.arange(4))


def test_dtype_device_and_type_checks(comm: dist.Communicator, fake: Fake) -> None:
    for dtype in ("bool", "int16"):
        with pytest.raises(TypeError, match=f"all_reduce: NCCL has no {dtype} type"):
            comm.all_reduce(gp.zeros(3, dtype=dtype))
    with pytest.raises(TypeError, match=r"x must be a pygpukit\.GPUArray; got ndarray"):
        comm.broadcast(np.zeros(3), root=0)  # type: ignore[arg-type]
    comm._device = 1  # as if the communicator were on another device
    with pytest.raises(ValueError, match=r"all_gather: x is on device 0 but the communicator "
                                         r"\(rank 0\) is on device 1"):
        comm.all_gather(gp.zeros(3))
    assert fake.calls("ncclAllGather") == []


def test_current_stream_hook_and_stream_use(comm: dist.Communicator, fake: Fake) -> None:
    stream = gp.Stream()
    stream._handle = 0xABC0  # a CUstream the fake can see (CPU streams are all 0)
    hooked: list[int] = []
    stream._before_launch = lambda: hooked.append(1)
    x = gp.from_numpy(np.ones(8, np.float32))
    with stream:
        out = comm.all_reduce(x)
        comm.broadcast(out, root=0)
    assert [c["stream"] for c in fake.calls("ncclAllReduce") + fake.calls("ncclBroadcast")] == [
        0xABC0, 0xABC0]
    assert hooked == [1, 1]
    assert out._block.writer is stream
    assert stream in x._block.used_streams or x._block.stream is stream


def test_collectives_in_a_graph_capture(comm: dist.Communicator, fake: Fake) -> None:
    """Nothing on a collective's path refuses a capture; its outputs come from the graph's pool.

    (The CPU simulation runs the fake at capture time; the GPU tier replays real NCCL.)
    """
    x = gp.from_numpy(np.arange(8, dtype=np.float32))
    with gp.graph() as g:
        stream = gp.current_stream()
        y = comm.all_reduce(x)
        gathered = comm.all_gather(y[::2])  # a packed copy inside the capture too
        with pytest.raises(gp.GraphCaptureError):
            dist.Communicator(1, 0, dist.unique_id())
        with pytest.raises(gp.GraphCaptureError):
            comm.close()
    assert y._block.stream is stream and gathered._block.stream is stream
    assert len(fake.calls("ncclAllReduce")) == len(fake.calls("ncclAllGather")) == 1
    assert not comm.closed and g is not None


# -- errors ----------------------------------------------------------------------------------
def test_failed_collective_names_call_and_rank_and_aborts(fake: Fake) -> None:
    c = dist.Communicator(4, 3, dist.unique_id())
    fake.fail("ncclAllReduce", 1)
    with pytest.raises(dist.NcclError) as info:
        c.all_reduce(gp.zeros(4))
    err = info.value
    assert (err.call, err.code, err.name, err.rank) == ("ncclAllReduce", 1,
                                                        "ncclUnhandledCudaError", 3)
    message = str(err)
    assert "ncclAllReduce failed on rank 3 of 4 (device 0)" in message
    assert "unhandled cuda error" in message and "the communicator was aborted" in message
    assert "NCCL says: fake: ncclAllReduce failed" in message
    assert c.closed and fake.calls("ncclCommAbort") == [{"rank": 3}]
    c.close()  # nothing left to destroy
    assert fake.calls("ncclCommDestroy") == []


def test_error_inside_a_group_aborts_at_its_end(fake: Fake) -> None:
    a = dist.Communicator(2, 0, dist.unique_id())
    x = gp.zeros(2)
    fake.fail("ncclSend", 5)  # deferred by NCCL to ncclGroupEnd
    with pytest.raises(dist.NcclError) as info, dist.group():
        a.send(x, peer=1)
        a.recv(x, peer=1)
    err = info.value
    assert err.call == "ncclGroupEnd" and err.name == "ncclInvalidUsage" and err.rank == 0
    assert "ncclGroupEnd failed for the ranks 0 (device 0)" in str(err)
    assert a.closed and fake.calls("ncclCommAbort") == [{"rank": 0}]
    assert fake.lib.fake_nccl_group_depth() == 0


def test_group_start_failure(fake: Fake) -> None:
    fake.fail("ncclGroupStart", 3)
    with pytest.raises(dist.NcclError, match="ncclGroupStart failed: ncclInternalError"), \
            dist.group():
        pass
    assert _nccl._group_state.depth == 0


def test_async_error(fake: Fake) -> None:
    c = dist.Communicator(2, 1, dist.unique_id())
    c.check_async_error()  # all is well
    fake.lib.fake_nccl_set_async_error(6)
    with pytest.raises(dist.NcclError, match=r"on rank 1 of 2 .*ncclRemoteError") as info:
        c.close()
    assert info.value.rank == 1 and c.closed
    assert fake.calls("ncclCommAbort") == [{"rank": 1}] and fake.calls("ncclCommDestroy") == []


def test_destroy_failure_is_reported(fake: Fake) -> None:
    c = dist.Communicator(1, 0, dist.unique_id())
    fake.fail("ncclCommDestroy", 3)
    with pytest.raises(dist.NcclError, match="ncclCommDestroy failed on rank 0 of 1"):
        c.close()
    assert c.closed


def test_context_manager_aborts_on_exception(fake: Fake) -> None:
    with pytest.raises(KeyError), dist.Communicator(1, 0, dist.unique_id()):
        raise KeyError("boom")
    assert fake.calls("ncclCommAbort") == [{"rank": 0}] and fake.calls("ncclCommDestroy") == []


# -- GPU tier --------------------------------------------------------------------------------
@pytest.fixture
def cuda(cuda_backend: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The CUDA backend with the machine's NCCL (skips without either)."""
    monkeypatch.delenv(_nccl_lib.ENV_OVERRIDE, raising=False)
    _nccl_lib._reset_for_tests()
    if not dist.is_available():
        pytest.skip(f"NCCL unavailable: {_nccl_lib._failure}")
    yield
    gp.synchronize()


def _data(dtype: str, shape: tuple[int, ...], seed: int) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    values = rng.integers(1, 3, size=shape)  # 1 or 2: exact sums/products in every dtype
    return values.astype(gp.bfloat16 if dtype == "bfloat16" else dtype)


@pytest.mark.gpu
@pytest.mark.nccl
@pytest.mark.parametrize("dtype", list(NCCL_DTYPES))
def test_gpu_one_rank_collectives_equal_numpy(cuda: None, dtype: str) -> None:
    (c,) = dist.init_all([0])
    assert (c.rank, c.nranks) == (0, 1)
    host = _data(dtype, (64, 33), 1)
    x = gp.from_numpy(host)
    for op in NCCL_OPS:
        np.testing.assert_array_equal(c.all_reduce(x, op=op).to_numpy(), host)
        np.testing.assert_array_equal(c.reduce(x, root=0, op=op).to_numpy(), host)
    np.testing.assert_array_equal(c.all_gather(x).to_numpy(), host[None])
    np.testing.assert_array_equal(c.reduce_scatter(x).to_numpy(), host)
    y = gp.from_numpy(host)
    c.broadcast(y, root=0)
    np.testing.assert_array_equal(y.to_numpy(), host)
    z = gp.zeros(host.shape, dtype=host.dtype)
    with dist.group():  # a send to oneself, paired with the receive
        c.send(x, peer=0)
        c.recv(z, peer=0)
    np.testing.assert_array_equal(z.to_numpy(), host)
    view = gp.from_numpy(host)[:, ::2]  # non-contiguous, in place
    c.all_reduce(view, out=view)
    np.testing.assert_array_equal(view.to_numpy(), host[:, ::2])
    c.check_async_error()
    c.close()


@pytest.mark.gpu
@pytest.mark.nccl
def test_gpu_single_rank_communicator_and_graph_capture(cuda: None) -> None:
    with dist.Communicator(1, 0, dist.unique_id(), device=0) as c:
        host = np.arange(1 << 16, dtype=np.float32)
        x = gp.from_numpy(host)
        c.all_reduce(x)  # NCCL connects lazily: once eagerly before capturing, as with torch
        with gp.graph() as g:
            y = c.all_reduce(x * 2.0, op="sum")
            gathered = c.all_gather(y)
        g.replay()
        np.testing.assert_array_equal(y.to_numpy(), host * 2)
        np.testing.assert_array_equal(gathered.to_numpy(), (host * 2)[None])
        x[...] = gp.from_numpy(host + 1)
        g.replay()
        np.testing.assert_array_equal(gathered.to_numpy(), ((host + 1) * 2)[None])


_TWO_RANKS = """
import sys, pickle, time
from pathlib import Path
import numpy as np
import pygpukit as gp
rank, folder, device = int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
uid_file = folder / "uid"
if rank == 0:
    tmp = folder / "uid.tmp"
    tmp.write_bytes(pickle.dumps(gp.distributed.unique_id()))
    tmp.rename(uid_file)
while not uid_file.exists():
    time.sleep(0.05)
uid = pickle.loads(uid_file.read_bytes())
try:
    comm = gp.distributed.Communicator(2, rank, uid, device=device)
    x = gp.from_numpy(np.full(1000, rank + 1, np.float32))
    total = comm.all_reduce(x).to_numpy()
    comm.close()
    assert (total == 3).all(), total[:4]
    print("OK")
except gp.distributed.NcclError as exc:
    print("NCCLERROR", exc.call, exc.name, str(exc).replace(chr(10), " "))
"""


def _run_two_ranks(tmp_path: Path, devices: tuple[int, int]) -> list[str]:
    script = tmp_path / "rank.py"
    script.write_text(_TWO_RANKS)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*SRC_ROOTS, env.get("PYTHONPATH", "")])
    env["PYGPUKIT_BACKEND"] = "cuda"
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(tmp_path),
                               str(devices[r])], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in (0, 1)]
    outputs = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            pytest.fail("a rank hung for 180 s")
        assert proc.returncode == 0, err
        outputs.append(out.strip().splitlines()[-1])
    return outputs


@pytest.mark.gpu
@pytest.mark.nccl
def test_gpu_two_processes_on_one_gpu(cuda: None, tmp_path: Path) -> None:
    """Recent NCCL refuses two ranks on one GPU (ncclInvalidUsage, "Duplicate GPU")."""
    outputs = _run_two_ranks(tmp_path, (0, 0))
    print("two ranks on one GPU:", outputs)
    if outputs != ["OK", "OK"]:  # refused: every rank's ncclCommInitRank fails, one at least
        # with NCCL's duplicate-GPU verdict (the other may see its peer leave instead)
        assert all(line.startswith("NCCLERROR ncclCommInitRank ") for line in outputs), outputs
        assert any(" ncclInvalidUsage " in line for line in outputs), outputs


@pytest.mark.gpu
@pytest.mark.multigpu
@pytest.mark.nccl
def test_gpu_two_processes_on_two_gpus(cuda: None, tmp_path: Path) -> None:
    if gp.device_count() < 2:
        pytest.skip(f"needs two GPUs; this machine has {gp.device_count()}")
    assert _run_two_ranks(tmp_path, (0, 1)) == ["OK", "OK"]


@pytest.mark.gpu
@pytest.mark.multigpu
@pytest.mark.nccl
@pytest.mark.parametrize("dtype", list(NCCL_DTYPES))
def test_gpu_init_all_collectives_equal_numpy(cuda: None, dtype: str) -> None:
    n = gp.device_count()
    if n < 2:
        pytest.skip(f"needs two GPUs; this machine has {n}")
    comms = dist.init_all()
    hosts = [_data(dtype, (8 * n, 5), seed) for seed in range(n)]
    xs = [_on(h, i) for i, h in enumerate(hosts)]
    wide = np.stack([h.astype(np.float64) for h in hosts])
    reference = {"sum": wide.sum(0), "prod": wide.prod(0), "max": wide.max(0),
                 "min": wide.min(0), "avg": wide.mean(0)}
    for op, expected in reference.items():
        if op == "avg" and dtype not in ("float16", "bfloat16", "float32", "float64"):
            continue  # NCCL's integer average truncates; compared for floating types only
        if dtype in ("int8", "uint8", "int32", "int64") and \
                expected.max() > np.iinfo(np.dtype(dtype)).max:
            continue  # a product of 2s over many GPUs overflows 8 bits
        with dist.group():
            outs = [c.all_reduce(x, op=op) for c, x in zip(comms, xs, strict=True)]
        for out in outs:
            np.testing.assert_allclose(out.to_numpy().astype(np.float64), expected,
                                       rtol=1e-2 if dtype in ("float16", "bfloat16") else 0)
    with dist.group():
        gathered = [c.all_gather(x) for c, x in zip(comms, xs, strict=True)]
    for g in gathered:
        np.testing.assert_array_equal(g.to_numpy(), np.stack(hosts))
    with dist.group():
        parts = [c.reduce_scatter(x) for c, x in zip(comms, xs, strict=True)]
    rows = 8
    for r, part in enumerate(parts):
        np.testing.assert_allclose(part.to_numpy().astype(np.float64),
                                   wide.sum(0)[r * rows:(r + 1) * rows])
    for c in comms:
        c.close()


def _on(host: np.ndarray[Any, Any], device: int) -> gp.GPUArray:
    with gp.Device(device):
        return gp.from_numpy(host)
