"""The discovery record: a cache hit in a fresh process without finding or loading NVRTC."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import pygpukit_nvrtc as nvrtc
from pygpukit_nvrtc import _cache, _discovery, _loader

SCALE = """
extern "C" __global__ void scale(float* x, float factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= factor;
}
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv(_cache.ENV_CACHE_DIR, str(tmp_path / "cache"))
    monkeypatch.delenv(_loader.ENV_OVERRIDE, raising=False)
    _loader._reset_for_tests()
    yield tmp_path / "cache" / "nvrtc"
    _loader._reset_for_tests()


class FakeNvrtc:
    """Stands in for loading NVRTC: a fake library file, a version, and a count of loads."""

    def __init__(self, folder: Path, version: tuple[int, int] = (13, 0)) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "libnvrtc.so.13"
        self.path.write_bytes(b"\x7fELF fake nvrtc")
        old = time.time_ns() - 10**9  # installed a while ago (not while being loaded)
        os.utime(self.path, ns=(old, old))
        self.version = version
        self.loads = 0

    def __call__(self) -> _loader._Loaded:
        self.loads += 1
        return _loader._Loaded(object(), str(self.path), "site-packages")  # type: ignore[arg-type]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeNvrtc:
    lib = FakeNvrtc(tmp_path / "site-packages" / "nvidia" / "cu13" / "lib")
    monkeypatch.setattr(_loader, "_load_pathfinder", lib)
    monkeypatch.setattr(_loader, "_configure", lambda _lib: None)
    monkeypatch.setattr(_loader, "version", lambda: lib.version)
    monkeypatch.setattr(_loader, "supported_archs", lambda: (75, 80, 90, 120))
    monkeypatch.setattr(_discovery, "include_dirs", lambda: ())
    return lib


def new_process() -> None:
    """What a fresh process starts with: nothing loaded, nothing remembered."""
    _loader._reset_for_tests()


def records(folder: Path) -> list[Path]:
    return sorted(folder.glob("discovery-*.rec"))


def test_record_is_reused_without_loading_nvrtc(fake: FakeNvrtc, private_cache: Path) -> None:
    first = _discovery.facts()
    assert fake.loads == 1 and not first.from_record
    (record,) = records(private_cache)
    assert stat.S_IMODE(record.stat().st_mode) & 0o077 == 0  # private, like the entries
    new_process()
    again = _discovery.facts()
    assert fake.loads == 0 + 1  # the loader was not called again
    assert again.from_record and again == first
    assert again.version == (13, 0) and again.path == str(fake.path)
    assert not _loader.is_loaded()


def test_changed_library_is_rediscovered(fake: FakeNvrtc) -> None:
    before = _discovery.facts()
    new_process()
    fake.path.write_bytes(b"\x7fELF fake nvrtc, upgraded in place")  # size and mtime change
    old = time.time_ns() - 10**9 // 2
    os.utime(fake.path, ns=(old, old))
    fake.version = (13, 1)
    after = _discovery.facts()
    assert fake.loads == 2 and not after.from_record and after.version == (13, 1)
    key = {"source": "s", "nvrtc": list(before.version), "nvrtc_path": before.path}
    assert _cache.make_key(key) != _cache.make_key({**key, "nvrtc": list(after.version)})
    new_process()
    assert _discovery.facts().version == (13, 1) and fake.loads == 2  # the new record is used


def test_replaced_or_removed_library_is_rediscovered(fake: FakeNvrtc) -> None:
    _discovery.facts()
    new_process()
    replacement = fake.path.with_name("new")
    replacement.write_bytes(fake.path.read_bytes())  # same size, new inode
    st = fake.path.stat()
    os.utime(replacement, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(replacement, fake.path)
    _discovery.facts()
    assert fake.loads == 2
    new_process()
    fake.path.unlink()
    with pytest.raises(FileNotFoundError):
        fake.path.stat()
    fake.path.write_bytes(b"\x7fELF")
    _discovery.facts()
    assert fake.loads == 3


@pytest.mark.parametrize("name", ["PYGPUKIT_NVRTC_PATH", "CONDA_PREFIX", "LD_LIBRARY_PATH",
                                  "CUDA_HOME", "CUDA_PATH"])
def test_changed_environment_is_rediscovered(
    fake: FakeNvrtc, private_cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    name: str,
) -> None:
    monkeypatch.setattr(_loader, "_load_override", lambda _value: fake())
    monkeypatch.delenv(name, raising=False)  # the baseline: unset (GPU machines set some)
    _discovery.facts()
    new_process()
    monkeypatch.setenv(name, str(tmp_path / "elsewhere"))
    assert not _discovery.facts().from_record and fake.loads == 2
    assert len(records(private_cache)) == 2  # one record per environment: no ping-pong
    new_process()
    monkeypatch.delenv(name)
    assert _discovery.facts().from_record and fake.loads == 2


def test_site_folder_change_is_rediscovered(
    fake: FakeNvrtc, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    site_dir = tmp_path / "venv-site"
    site_dir.mkdir()
    monkeypatch.setattr(_discovery, "_site_dirs", lambda: [str(site_dir)])
    _discovery.facts()
    new_process()
    assert _discovery.facts().from_record
    new_process()
    (site_dir / "nvidia_cuda_nvrtc-13.1.dist-info").mkdir()  # pip installed something here
    assert not _discovery.facts().from_record and fake.loads == 2


def test_corrupt_record_is_ignored_with_a_warning(fake: FakeNvrtc, private_cache: Path) -> None:
    _discovery.facts()
    (record,) = records(private_cache)
    data = bytearray(record.read_bytes())
    data[-5] ^= 0xFF
    record.write_bytes(bytes(data))
    new_process()
    with pytest.warns(nvrtc.CacheWarning, match="discovery record .* is corrupt"):
        facts = _discovery.facts()
    assert not facts.from_record and fake.loads == 2
    new_process()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _discovery.facts().from_record  # rewritten whole


def test_sealed_but_malformed_record_is_ignored_with_a_warning(
    fake: FakeNvrtc, private_cache: Path
) -> None:
    _discovery.facts()
    (record,) = records(private_cache)
    body = json.loads(_cache.unseal(_discovery.RECORD_MAGIC, record.read_bytes()))
    body["facts"]["version"] = ["13"]
    record.write_bytes(_cache.seal(_discovery.RECORD_MAGIC, json.dumps(body).encode()))
    new_process()
    with pytest.warns(nvrtc.CacheWarning, match="corrupt"):
        assert not _discovery.facts().from_record


def test_foreign_record_is_ignored_quietly(fake: FakeNvrtc, private_cache: Path) -> None:
    _discovery.facts()
    (record,) = records(private_cache)
    body = json.loads(_cache.unseal(_discovery.RECORD_MAGIC, record.read_bytes()))
    body["inputs"]["package"] = "0.0.0-other"  # another version's record under this name
    record.write_bytes(_cache.seal(_discovery.RECORD_MAGIC, json.dumps(body).encode()))
    new_process()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not _discovery.facts().from_record
    assert fake.loads == 2


def test_world_writable_cache_dir_gets_no_record(fake: FakeNvrtc, private_cache: Path) -> None:
    private_cache.mkdir(parents=True)
    os.chmod(private_cache, 0o777)
    with pytest.warns(nvrtc.CacheWarning, match="writable by other users"):
        _discovery.facts()
    assert records(private_cache) == []


def test_library_changed_while_loading_is_not_recorded(
    fake: FakeNvrtc, private_cache: Path
) -> None:
    now = time.time_ns() + 10**9
    os.utime(fake.path, ns=(now, now))  # modified after the load began
    _discovery.facts()
    assert records(private_cache) == []


def test_compile_hit_from_the_record_never_loads_nvrtc(
    monkeypatch: pytest.MonkeyPatch, private_cache: Path
) -> None:
    first = nvrtc.compile(SCALE, arch=90)  # the real NVRTC: compiled, entry and record written
    assert not first.cached and len(records(private_cache)) == 1
    new_process()

    def refuse(*_args: object) -> None:
        raise AssertionError("NVRTC was loaded for a cache hit")

    monkeypatch.setattr(_loader, "_load_pathfinder", refuse)
    monkeypatch.setattr(_loader, "_load_override", refuse)
    hit = nvrtc.compile(SCALE, arch=90)
    assert hit.cached and hit.binary == first.binary and not _loader.is_loaded()
    monkeypatch.undo()  # (the cache dir goes too: set it again)
    monkeypatch.setenv(_cache.ENV_CACHE_DIR, str(private_cache.parent))
    new_process()
    # A miss loads NVRTC as usual; the public calls stay truthful (they load it).
    miss = nvrtc.compile(SCALE, arch=86)
    assert not miss.cached and _loader.is_loaded()
    assert nvrtc.is_available() and nvrtc.version() == _discovery.facts().version


def test_a_record_that_disagrees_with_the_loaded_nvrtc_is_corrected(
    private_cache: Path,
) -> None:
    real = nvrtc.compile(SCALE, arch=90)
    (record,) = records(private_cache)
    body = json.loads(_cache.unseal(_discovery.RECORD_MAGIC, record.read_bytes()))
    body["facts"]["version"] = [99, 9]  # sound and current, but not what loading finds
    record.write_bytes(_cache.seal(_discovery.RECORD_MAGIC, json.dumps(body).encode()))
    new_process()
    assert _discovery.facts().version == (99, 9)
    # A miss under the record's facts: the compile loads NVRTC, sees 13.x, re-keys, and finds
    # the entry the real NVRTC wrote; the record is rewritten with the truth.
    again = nvrtc.compile(SCALE, arch=90)
    assert again.cached and again.binary == real.binary
    assert _discovery.facts().version == nvrtc.version()
    new_process()
    assert _discovery.facts().version == nvrtc.version()


def test_fresh_process_hit_imports_neither_pathfinder_nor_nvrtc(tmp_path: Path) -> None:
    env = {**os.environ, _cache.ENV_CACHE_DIR: str(tmp_path / "shared")}
    code = (
        "import sys, pathlib, pygpukit_nvrtc as n; "
        f"r = n.compile({SCALE!r}, arch=90); "
        "maps = pathlib.Path('/proc/self/maps').read_text(); "
        "print(r.cached, 'libnvrtc' in maps, 'cuda.pathfinder' in sys.modules, "
        "'hashlib' in sys.modules)"
    )
    run = [sys.executable, "-c", code]
    first = subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout
    second = subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout
    assert first.split()[:2] == ["False", "True"]
    assert second.split() == ["True", "False", "False", "False"]


def test_concurrent_writers_leave_one_sound_record(tmp_path: Path) -> None:
    root = tmp_path / "shared"
    code = ("import pygpukit_nvrtc as n, pygpukit_nvrtc._discovery as d; "
            "[(n._loader._reset_for_tests(), d.facts()) for _ in range(3)]; n.version()")
    env = {**os.environ, _cache.ENV_CACHE_DIR: str(root)}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env) for _ in range(6)]
    assert all(p.wait(timeout=300) == 0 for p in procs)
    folder = root / "nvrtc"
    assert len(records(folder)) == 1 and not list(folder.glob(".*.tmp"))
    os.environ[_cache.ENV_CACHE_DIR] = str(root)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _discovery.facts().from_record


def test_clear_cache_removes_records(fake: FakeNvrtc, private_cache: Path) -> None:
    _discovery.facts()
    assert records(private_cache)
    assert nvrtc.clear_cache() == 0 and records(private_cache) == []
    assert "CacheEntry" in dir(nvrtc) and nvrtc.cache_entries() == []
