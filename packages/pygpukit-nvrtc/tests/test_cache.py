"""The disk cache against the real NVRTC (no GPU needed): headers, owners, the size limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import pygpukit_nvrtc as nvrtc
from pygpukit_nvrtc import _cache, _deps

# x[0] = VAL: the PTX stores the float's bits as an integer, e.g. "mov.u32 %r1, 1077936128;".
USES_VAL = '#include "val.h"\nextern "C" __global__ void k(float* x) { x[0] = VAL; }\n'
F3, F4, F5 = (f", {bits};" for bits in (0x40400000, 0x40800000, 0x40A00000))  # 3, 4, 5.0f

SCALE = """
extern "C" __global__ void scale(float* x, float factor, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= factor;
}
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv(_cache.ENV_CACHE_DIR, str(tmp_path / "cache"))
    monkeypatch.delenv(_cache.ENV_CACHE_MAX_BYTES, raising=False)
    monkeypatch.setattr(_deps, "_unsupported", set())
    monkeypatch.setattr(_deps, "_warned", set())
    yield tmp_path / "cache" / "nvrtc"


def ptx(source: str, *options: str, name: str = "pygpukit_jit.cu") -> nvrtc.CompileResult:
    return nvrtc.compile(source, arch="compute_80", output="ptx", options=list(options),
                         name=name)


def text(result: nvrtc.CompileResult) -> str:
    return result.binary.rstrip(b"\0").decode()


def write(path: Path, content: str, *, age_s: float = 60.0) -> None:
    """Write ``path`` and date it ``age_s`` in the past (older than the racy window)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    then = time.time_ns() - int(age_s * 1e9)
    os.utime(path, ns=(then, then))


# --- headers ----------------------------------------------------------------------------------


def test_a_source_without_includes_is_cached_without_the_trace(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # No directive and no pre-include: nothing to list, and the trace would double a cold
    # compile's time, so it must not be asked for.
    from pygpukit_nvrtc import _program

    def no_trace(*args: object, **kwargs: object) -> None:
        raise AssertionError("a source without includes asked NVRTC for its headers")

    monkeypatch.setattr(_program, "_run_listing", no_trace)
    first = ptx(SCALE)
    again = ptx(SCALE)
    assert not first.cached and again.cached and again.binary == first.binary


def test_editing_an_included_header_recompiles(tmp_path: Path) -> None:
    inc = tmp_path / "inc"
    write(inc / "val.h", '#pragma once\n#include "inner.h"\n#define VAL (INNER)\n')
    write(inc / "inner.h", "#define INNER 3.0f\n")
    first = ptx(USES_VAL, f"-I{inc}")
    assert not first.cached and F3 in text(first)
    assert ptx(USES_VAL, f"-I{inc}").cached
    # Same size, and the mtime put back: only the ctime (and the content) tell.
    stamp = (inc / "inner.h").stat()
    (inc / "inner.h").write_text("#define INNER 4.0f\n")
    os.utime(inc / "inner.h", ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    second = ptx(USES_VAL, f"-I{inc}")
    assert not second.cached and F4 in text(second) and F3 not in text(second)
    third = ptx(USES_VAL, f"-I{inc}")
    assert third.cached and third.binary == second.binary
    assert len(nvrtc.cache_entries()) == 1  # the stale entry was replaced under the same key


def test_entry_records_each_header_and_not_nvrtc_builtins(tmp_path: Path) -> None:
    inc = tmp_path / "inc"
    write(inc / "val.h", '#include "inner.h"\n#define VAL INNER\n')
    write(inc / "inner.h", "#define INNER 3.0f\n")
    ptx(USES_VAL, "--include-path", str(inc))
    (entry,) = nvrtc.cache_entries()
    files = {Path(f[0]).resolve(): f for f in entry.meta["deps"]["files"]}
    assert set(files) == {(inc / "val.h").resolve(), (inc / "inner.h").resolve()}
    _path, size, mtime_ns, _ctime, digest, racy = files[(inc / "inner.h").resolve()]
    assert size == len("#define INNER 3.0f\n") and digest == _cache.sha256_hex(
        b"#define INNER 3.0f\n") and racy is True  # its ctime is fresh: see the racy test
    assert mtime_ns == (inc / "inner.h").stat().st_mtime_ns


def test_touching_a_header_without_changing_it_still_hits(tmp_path: Path) -> None:
    write(tmp_path / "inc" / "val.h", "#define VAL 3.0f\n")
    first = ptx(USES_VAL, f"-I{tmp_path / 'inc'}")
    os.utime(tmp_path / "inc" / "val.h")  # new mtime, same bytes: hashed, equal
    again = ptx(USES_VAL, f"-I{tmp_path / 'inc'}")
    assert again.cached and again.binary == first.binary


def test_a_new_header_earlier_on_the_include_path_recompiles(tmp_path: Path) -> None:
    first_dir, second_dir = tmp_path / "a", tmp_path / "b"
    first_dir.mkdir()
    write(second_dir / "val.h", "#define VAL 3.0f\n")
    options = (f"-I{first_dir}", f"-I{second_dir}")
    assert F3 in text(ptx(USES_VAL, *options))
    assert ptx(USES_VAL, *options).cached
    write(first_dir / "val.h", "#define VAL 5.0f\n")  # now found first
    shadowed = ptx(USES_VAL, *options)
    assert not shadowed.cached and F5 in text(shadowed)


def test_a_deleted_header_is_a_miss_and_fails_to_compile(tmp_path: Path) -> None:
    write(tmp_path / "inc" / "val.h", "#define VAL 3.0f\n")
    ptx(USES_VAL, f"-I{tmp_path / 'inc'}")
    (tmp_path / "inc" / "val.h").unlink()
    with pytest.raises(nvrtc.CompileError, match=r"val\.h"):
        ptx(USES_VAL, f"-I{tmp_path / 'inc'}")


def test_a_header_beside_the_program_follows_the_working_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # NVRTC searches the program's folder: for a bare name, the working folder.
    write(tmp_path / "one" / "val.h", "#define VAL 3.0f\n")
    write(tmp_path / "two" / "val.h", "#define VAL 4.0f\n")
    monkeypatch.chdir(tmp_path / "one")
    assert F3 in text(ptx(USES_VAL))
    assert ptx(USES_VAL).cached
    monkeypatch.chdir(tmp_path / "two")
    moved = ptx(USES_VAL)
    assert not moved.cached and F4 in text(moved)


def test_programs_named_in_different_folders_do_not_share_an_entry(tmp_path: Path) -> None:
    write(tmp_path / "one" / "val.h", "#define VAL 3.0f\n")
    write(tmp_path / "two" / "val.h", "#define VAL 4.0f\n")
    assert F3 in text(ptx(USES_VAL, name=str(tmp_path / "one" / "k.cu")))
    other = ptx(USES_VAL, name=str(tmp_path / "two" / "k.cu"))
    assert not other.cached and F4 in text(other)


def test_a_header_written_during_the_compilation_is_not_vouched_for(tmp_path: Path) -> None:
    write(tmp_path / "inc" / "val.h", "#define VAL 3.0f\n")
    future = time.time_ns() + 3600 * 10**9  # as if written after the compilation began
    os.utime(tmp_path / "inc" / "val.h", ns=(future, future))
    with pytest.warns(nvrtc.CacheWarning, match="changed while compiling"):
        result = ptx(USES_VAL, f"-I{tmp_path / 'inc'}")
    assert F3 in text(result) and nvrtc.cache_entries() == []


def test_a_recently_written_header_is_hashed_on_every_lookup(tmp_path: Path) -> None:
    header = tmp_path / "inc" / "val.h"
    header.parent.mkdir()
    header.write_text("#define VAL 3.0f\n")  # now: inside the racy window
    ptx(USES_VAL, f"-I{header.parent}")
    (entry,) = nvrtc.cache_entries()
    assert entry.meta["deps"]["files"][0][5] is True
    assert ptx(USES_VAL, f"-I{header.parent}").cached


def test_without_a_header_list_sources_with_includes_are_not_cached(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An NVRTC that rejects the trace option, played by the real one and an unknown option.
    monkeypatch.setattr(_deps, "TRACE_OPTION", "--no-such-trace-option=")
    write(tmp_path / "inc" / "val.h", "#define VAL 3.0f\n")
    with pytest.warns(nvrtc.CacheWarning, match="rejects --no-such-trace-option"):
        first = ptx(USES_VAL, f"-I{tmp_path / 'inc'}")
    assert F3 in text(first)
    with warnings.catch_warnings():
        warnings.simplefilter("error", nvrtc.CacheWarning)  # warned once only
        assert not ptx(USES_VAL, f"-I{tmp_path / 'inc'}").cached
        assert not ptx(SCALE).cached
        assert ptx(SCALE).cached  # includes nothing: still cached
    assert [e.meta["deps"] for e in nvrtc.cache_entries()] == [{"files": [], "absent": []}]
    # A caller's own bad option is still the caller's error, not taken for ours.
    with pytest.raises(nvrtc.NvrtcError, match="--bogus"):
        ptx(SCALE, "--bogus")


def test_a_caller_tracing_for_itself_disables_the_header_list(tmp_path: Path) -> None:
    write(tmp_path / "inc" / "val.h", "#define VAL 3.0f\n")
    own = f"-fdevice-time-trace={tmp_path / 'mine'}"
    with pytest.warns(nvrtc.CacheWarning, match="their own -fdevice-time-trace"):
        ptx(USES_VAL, f"-I{tmp_path / 'inc'}", own)
    assert not ptx(USES_VAL, f"-I{tmp_path / 'inc'}", own).cached
    assert (tmp_path / "mine.json").is_file()  # the caller's trace was written as asked


def test_may_include_is_conservative() -> None:
    assert _deps.may_include('#  include "x.h"\n', [])
    assert _deps.may_include("#\\\ninclude <x.h>\n", [])
    assert _deps.may_include("#if __has_include(<x.h>)\n#endif\n", [])
    assert _deps.may_include(SCALE, ["-include", "x.h"])
    assert _deps.may_include(SCALE, ["--pre-include=x.h"])
    assert not _deps.may_include(SCALE, ["-DN=3", "--use_fast_math"])


def test_headers_from_trace_is_none_when_unknown(tmp_path: Path) -> None:
    assert _deps.headers_from_trace(str(tmp_path)) is None  # no trace written
    event = {"name": _deps.HEADER_EVENT, "args": {"detail": "/x/a.h"}}
    other = {"name": "Scanning Function Body", "args": {"detail": "k(float *)"}}
    (tmp_path / "t.json").write_text(json.dumps({"traceEvents": [{}, other]}))
    assert _deps.headers_from_trace(str(tmp_path)) is None  # no header events at all
    (tmp_path / "t.json").write_text(json.dumps({"traceEvents": [event, other, event]}))
    assert _deps.headers_from_trace(str(tmp_path)) == ["/x/a.h"]
    (tmp_path / "u.json").write_text("{not json")
    assert _deps.headers_from_trace(str(tmp_path)) is None


def test_search_dirs_reads_every_include_option_form() -> None:
    options = ["-Ia", "-I", "b", "--include-path=c", "--include-path", "d", "-I=e",
               "--use-bundled-headers=f", "-DI=1"]
    assert _deps.search_dirs(options, "src/k.cu") == [
        "src", "a", "b", "c", "d", "e", "f", os.path.join("f", "cccl")]
    assert _deps.search_dirs(["--no-source-include", "-Ia"], "k.cu") == ["a"]
    assert _deps.search_dirs([], "k.cu") == ["."]


def test_a_malformed_header_list_is_reported_as_corrupt(private_cache: Path) -> None:
    ptx(SCALE)
    (entry,) = private_cache.glob("*.bin")
    key = entry.stem
    meta, binary = _cache.read_entry(entry, key) or ({}, b"")
    meta.pop("key")
    _cache.store(key, {**meta, "deps": {"files": [["only-a-path"]]}}, binary)
    with pytest.warns(nvrtc.CacheWarning, match="bad header list"):
        assert not ptx(SCALE).cached


# --- who owns the folder --------------------------------------------------------------------


def test_a_cache_folder_owned_by_another_user_is_refused(
        private_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    private_cache.mkdir(parents=True, mode=0o700)
    monkeypatch.setattr(os, "geteuid", lambda: private_cache.stat().st_uid + 1)
    with pytest.warns(nvrtc.CacheWarning, match="owned by another user"):
        result = nvrtc.compile(SCALE, arch=90)
    assert not result.cached and list(private_cache.iterdir()) == []


def _fake_owners(monkeypatch: pytest.MonkeyPatch, euid: int, owners: dict[Path, int]) -> None:
    """Make ``Path.stat`` report ``owners`` (portable: no chown, no root needed)."""
    real = Path.stat

    def stat(self: Path, *, follow_symlinks: bool = True) -> os.stat_result:
        st = real(self, follow_symlinks=follow_symlinks)
        if self not in owners:
            return st
        fields = list(st[:10])
        fields[4] = owners[self]  # st_uid
        return os.stat_result(fields)

    monkeypatch.setattr(Path, "stat", stat)
    monkeypatch.setattr(os, "geteuid", lambda: euid)


def test_a_parent_owned_by_another_user_is_refused(
        private_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    private_cache.mkdir(parents=True, mode=0o700)
    _fake_owners(monkeypatch, 1000, {private_cache: 1000, private_cache.parent: 2000})
    with pytest.warns(nvrtc.CacheWarning, match=r"cache \(holding .*\) is owned by another"):
        assert _cache._usable_dir() is None
    _fake_owners(monkeypatch, 1000, {private_cache: 1000, private_cache.parent: 0})
    assert _cache._usable_dir() == private_cache  # root's folders (like /tmp) are fine


def test_a_parent_this_call_created_must_be_ours(
        private_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Someone who wins the race to create a missing parent must not get the cache.
    _fake_owners(monkeypatch, 1000, {private_cache: 1000, private_cache.parent: 0})
    with pytest.warns(nvrtc.CacheWarning, match="owned by another user"):
        assert _cache._usable_dir() is None


# --- the size limit ---------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [
    (None, 1 << 30), ("", 1 << 30), ("0", 0), ("4096", 4096), (" 12k ", 12 << 10),
    ("512M", 512 << 20), ("2GiB", 2 << 30), ("1t", 1 << 40), ("3KiB", 3 << 10),
])
def test_max_bytes_parsing(value: str | None, expected: int,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    if value is not None:
        monkeypatch.setenv(_cache.ENV_CACHE_MAX_BYTES, value)
    assert _cache.max_bytes() == expected


@pytest.mark.parametrize("value", ["-1", "1.5G", "lots", "10MB", "0x100", "1 G B"])
def test_bad_max_bytes_is_a_value_error_naming_the_variable(
        value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_cache.ENV_CACHE_MAX_BYTES, value)
    with pytest.raises(ValueError, match=f"PYGPUKIT_CACHE_MAX_BYTES={value!r}"):
        _cache.max_bytes()
    with pytest.raises(ValueError, match="PYGPUKIT_CACHE_MAX_BYTES"):
        nvrtc.compile(SCALE, arch=90)
    assert not nvrtc.compile(SCALE, arch=90, cache=False).cached  # not read without a cache


def test_zero_turns_the_program_cache_off(private_cache: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_cache.ENV_CACHE_MAX_BYTES, "0")
    nvrtc.compile(SCALE, arch=90)
    assert not nvrtc.compile(SCALE, arch=90).cached
    assert not list(private_cache.glob("*.bin"))


def _sources(count: int) -> list[str]:
    return [SCALE.replace("scale", f"scale{i}") for i in range(count)]


def test_the_least_recently_used_entry_goes_first(private_cache: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, c = _sources(3)
    nvrtc.compile(a, arch=90)
    (file_a,) = private_cache.glob("*.bin")
    nvrtc.compile(b, arch=90)
    (file_b,) = set(private_cache.glob("*.bin")) - {file_a}
    old = time.time_ns() - 10**11  # a used before b, whatever the clock's tick
    os.utime(file_a, ns=(old, old))
    os.utime(file_b, ns=(old + 10**9, old + 10**9))
    assert nvrtc.compile(a, arch=90).cached  # a hit makes a the most recently used
    assert file_a.stat().st_mtime_ns > file_b.stat().st_mtime_ns
    sizes = [file_a.stat().st_size, file_b.stat().st_size]
    monkeypatch.setenv(_cache.ENV_CACHE_MAX_BYTES, str(sum(sizes) + min(sizes) // 2))
    assert not nvrtc.compile(c, arch=90).cached  # three entries do not fit: b goes
    assert file_a.exists() and not file_b.exists()
    assert len(list(private_cache.glob("*.bin"))) == 2
    assert nvrtc.compile(a, arch=90).cached and nvrtc.compile(c, arch=90).cached
    assert not nvrtc.compile(b, arch=90).cached


def test_an_entry_larger_than_the_limit_is_not_stored(private_cache: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_cache.ENV_CACHE_MAX_BYTES, "100")
    with pytest.warns(nvrtc.CacheWarning, match="exceeds PYGPUKIT_CACHE_MAX_BYTES=100"):
        nvrtc.compile(SCALE, arch=90)
    assert not list(private_cache.glob("*.bin"))


def test_evict_orders_by_mtime_keeps_the_new_entry_and_survives_races(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "entries"
    folder.mkdir()
    base = time.time_ns() - 2 * _cache.STALE_TMP_S * 10**9
    for i, name in enumerate(["new.bin", "b.bin", "c.bin", "d.bin"]):
        (folder / name).write_bytes(b"x" * 100)
        when = base + (i if name != "new.bin" else -1)  # "new" is the oldest: kept anyway
        os.utime(folder / name, ns=(when, when))
    (folder / ".dead.tmp").write_bytes(b"y" * 10)
    os.utime(folder / ".dead.tmp", ns=(base, base))
    (folder / ".live.tmp").write_bytes(b"y" * 10)  # being written by someone: left alone
    (folder / "discovery-1.rec").write_bytes(b"z" * 1000)  # not a program: not counted
    real_unlink = os.unlink

    def racing_unlink(path: os.PathLike[str] | str) -> None:
        if str(path).endswith("b.bin"):
            real_unlink(path)  # another process evicts it first
        real_unlink(path)

    monkeypatch.setattr(os, "unlink", racing_unlink)
    assert _cache.evict(folder, 250, keep="new.bin") == 1  # b raced away, c removed by us
    assert sorted(p.name for p in folder.iterdir()) == [
        ".live.tmp", "d.bin", "discovery-1.rec", "new.bin"]
    monkeypatch.setattr(os, "unlink", real_unlink)
    assert _cache.evict(folder, 10_000) == 0


def test_processes_sharing_a_small_cache(tmp_path: Path) -> None:
    root = tmp_path / "shared"
    sources = _sources(6)
    nvrtc.compile(sources[0], arch=90)  # in the private cache: to learn an entry's size
    size_one = max(e.size for e in nvrtc.cache_entries()) + 100
    code = ("import sys, warnings, pygpukit_nvrtc as n\n"
            "warnings.simplefilter('error', n.CacheWarning)\n"
            "src = sys.stdin.read()\n"
            "for _ in range(3):\n"
            "    sys.stdout.buffer.write(n.compile(src, arch=90).binary[:4])\n")
    env = {**os.environ, _cache.ENV_CACHE_DIR: str(root),
           _cache.ENV_CACHE_MAX_BYTES: str(2 * size_one)}
    procs = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for _ in sources]
    outputs = [p.communicate(src.encode(), timeout=300) for p, src in zip(procs, sources,
                                                                          strict=True)]
    assert all(p.returncode == 0 for p in procs), [err.decode() for _, err in outputs]
    assert all(out == b"\x7fELF" * 3 for out, _ in outputs)
    left = list((root / "nvrtc").glob("*.bin"))
    assert len(left) >= 1 and sum(p.stat().st_size for p in left) <= 2 * size_one
    assert not list((root / "nvrtc").glob(".*.tmp"))
