"""The installed library loads on glibc 2.28 (manylinux_2_28) and exports its C ABI only.

Read from the library's dynamic symbol table (``readelf --dyn-syms``), no GPU needed: every
glibc symbol it binds carries the version the loader will ask for, so the newest one is the
oldest glibc the library can load on.  cmake/OldGlibcLink.cmake is what makes these hold.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from typing import NamedTuple

import pytest

import pygpukit_kernels as pk

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="ELF/glibc checks (Linux)")

MAX_GLIBC = (2, 28)
# libgcc_s's versions the manylinux_2_28 policy allows go up to GCC_7.0.0.
MAX_GCC = (7, 0, 0)


class DynSym(NamedTuple):
    """One entry of an ELF dynamic symbol table."""

    name: str
    version: str  # "" when unversioned
    bind: str  # GLOBAL, WEAK, LOCAL
    visibility: str
    defined: bool


def _dynamic_symbols(readelf: str) -> list[DynSym]:
    out = subprocess.run([readelf, "--dyn-syms", "--wide", str(pk.library_path())],
                         capture_output=True, text=True, check=True).stdout
    symbols = []
    for line in out.splitlines():
        fields = line.split()
        # Num: Value Size Type Bind Vis Ndx Name[@[@]version [(index)]]
        if len(fields) < 8 or not re.fullmatch(r"\d+:", fields[0]):
            continue
        name, _, version = fields[7].partition("@")
        symbols.append(DynSym(name, version.lstrip("@"), fields[4], fields[5],
                              fields[6] != "UND"))
    return symbols


@pytest.fixture
def symbols(required_tool: Callable[..., str]) -> list[DynSym]:
    found = _dynamic_symbols(required_tool("readelf", why="it reads the library's symbols"))
    assert len(found) > 20, "too few dynamic symbols parsed: the checks would be vacuous"
    return found


def _versions(symbols: list[DynSym], prefix: str) -> list[tuple[int, ...]]:
    return [tuple(int(p) for p in s.version[len(prefix):].split("."))
            for s in symbols if not s.defined and s.version.startswith(prefix)]


def test_needs_no_glibc_newer_than_2_28(symbols: list[DynSym]) -> None:
    glibc = _versions(symbols, "GLIBC_")
    assert glibc, "no GLIBC_ versioned references parsed"
    newest = max(glibc)
    too_new = sorted(f"{s.name}@{s.version}" for s in symbols
                     if not s.defined and s.version.startswith("GLIBC_")
                     and tuple(int(p) for p in s.version[6:].split(".")) > MAX_GLIBC)
    assert newest <= MAX_GLIBC, f"needs glibc {newest}: {too_new}"


def test_libgcc_s_versions_are_in_the_manylinux_policy(symbols: list[DynSym]) -> None:
    assert max(_versions(symbols, "GCC_"), default=(0,)) <= MAX_GCC


def test_every_strong_reference_is_versioned(symbols: list[DynSym]) -> None:
    # An unversioned strong reference would bind to whatever the loader finds: -z defs at the
    # link makes every one resolve to a versioned glibc (or libgcc_s) symbol.
    loose = [s.name for s in symbols
             if not s.defined and s.name and s.bind == "GLOBAL" and not s.version]
    assert not loose, loose


def test_exports_only_the_c_abi(symbols: list[DynSym]) -> None:
    exported = [s.name for s in symbols if s.defined and s.bind in ("GLOBAL", "WEAK")
                and s.visibility in ("DEFAULT", "PROTECTED")]
    assert "pgk_abi_version" in exported and "pgk_gemm" in exported, exported
    extra = [name for name in exported if not name.startswith("pgk_")]
    assert not extra, f"{len(extra)} exported beyond the C ABI (static C++ runtime?): {extra[:10]}"


def test_dlclose_leaves_the_library_loaded() -> None:
    # Its static destructors are registered with atexit: were dlclose to unmap it (nothing in
    # the link runs them at dlclose), exit() would call into freed code.  -z nodelete.
    script = (
        "import ctypes, _ctypes, sys\n"
        f"path = {str(pk.library_path())!r}\n"
        "lib = ctypes.CDLL(path)\n"
        "assert lib.pgk_abi_version() > 0\n"
        "_ctypes.dlclose(lib._handle)\n"
        "maps = open('/proc/self/maps').read()\n"
        "sys.exit(0 if path in maps else 3)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, (done.returncode, done.stderr)
