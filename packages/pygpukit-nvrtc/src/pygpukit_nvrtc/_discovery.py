"""What the cache key needs to know about NVRTC, without loading NVRTC when it can be avoided.

A cache key holds NVRTC's version and path, and compiling needs its supported archs and the
folder of ``cuda_fp16.h``; finding those means importing cuda-pathfinder and ``dlopen``-ing
libnvrtc (~100 MB), tens of milliseconds that a cache hit does not otherwise need.  So once
NVRTC has been loaded, a *discovery record* is written next to the cache entries
(``discovery-<hash of the inputs>.rec``, sealed and written like them): the inputs of discovery
(``PYGPUKIT_NVRTC_PATH``, ``CONDA_PREFIX``, ``LD_LIBRARY_PATH``, ``CUDA_PATH``/``CUDA_HOME``, the
Python prefixes and the site folders cuda-pathfinder searches, ...), the ``stat`` of every file
and folder whose change could change the answer (the library itself, its folder, the header
folders, the site folders, ``/etc/ld.so.cache``), and the answer (path, version, archs, header
folders).  A later process whose inputs are the same and whose ``stat`` calls all agree takes
the answer from the record.

Safety: a cubin is only ever served under a key naming a library path and version whose file
is, by ``(st_dev, st_ino, st_size, st_mtime_ns)``, the one that was probed; a replaced, removed
or upgraded library fails the check and is rediscovered.  Before a compile (a miss), NVRTC is
loaded the usual way and its facts compared with the record's: if they differ (something the
record cannot see, such as another component having loaded another NVRTC into the process),
the key is recomputed from the loaded library and the record rewritten, so an entry is always
stored under the facts of the compiler that produced it.  A record that fails its hash is
ignored with a :class:`~pygpukit_nvrtc.CacheWarning`; one for other inputs or another format
is ignored silently.
"""

from __future__ import annotations

import functools
import json
import os
import site
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from pygpukit_nvrtc import _cache, _loader

RECORD_MAGIC = b"PGKNVRTCDISC1\n"
FORMAT = 1
# Environment variables that steer cuda-pathfinder's search for NVRTC or our override.
ENV_INPUTS = ("PYGPUKIT_NVRTC_PATH", "CONDA_PREFIX", "LD_LIBRARY_PATH", "LD_PRELOAD",
              "CUDA_PATH", "CUDA_HOME")


class Facts:
    """What compiling and the cache key need to know about the NVRTC in use.

    (A plain class, not a dataclass: this module is on the import path of a cache hit, where
    each dataclass costs a fraction of a millisecond to create.)
    """

    __slots__ = ("archs", "found_via", "from_record", "include_dirs", "path", "version")

    def __init__(self, path: str, found_via: str, version: tuple[int, int],
                 archs: tuple[int, ...], include_dirs: tuple[str, ...],
                 from_record: bool = False) -> None:
        self.path, self.found_via, self.version = path, found_via, version
        self.archs, self.include_dirs, self.from_record = archs, include_dirs, from_record

    def _fields(self) -> tuple[Any, ...]:
        return (self.path, self.found_via, self.version, self.archs, self.include_dirs)

    def __eq__(self, other: object) -> bool:
        """Equal when every fact is (where they came from does not count)."""
        return isinstance(other, Facts) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (f"Facts(path={self.path!r}, found_via={self.found_via!r}, "
                f"version={self.version!r}, archs={self.archs!r}, "
                f"include_dirs={self.include_dirs!r}, from_record={self.from_record!r})")


class Snapshot:
    """The inputs of discovery and the ``stat`` of what it searches, taken before a load."""

    __slots__ = ("inputs", "started_ns", "watch")

    def __init__(self, inputs: dict[str, Any], watch: list[list[Any]], started_ns: int) -> None:
        self.inputs, self.watch, self.started_ns = inputs, watch, started_ns


_lock = threading.RLock()
_memo: Facts | None = None  # the facts this process uses (from the record or the library)
_live: Facts | None = None  # the facts of the library this process loaded


@functools.cache
def include_dirs() -> tuple[str, ...]:
    """Folders with ``cuda_fp16.h`` / ``cuda_bf16.h`` (NVIDIA's ``nvidia-cuda-runtime`` wheel)."""
    try:
        from cuda import pathfinder
    except ImportError:
        return ()
    found = pathfinder.find_nvidia_header_directory("cudart")
    return (str(found),) if found else ()


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _site_dirs() -> list[str]:
    """The folders cuda-pathfinder searches for NVIDIA wheels, in its order."""
    dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        user = site.getusersitepackages()
        if user:
            dirs.append(user)
    return dirs


def snapshot() -> Snapshot:
    """The inputs of discovery now (take it before loading NVRTC)."""
    from pygpukit_nvrtc import __version__

    env = {name: os.environ.get(name) for name in ENV_INPUTS}
    if sys.platform == "win32":
        env["PATH"] = os.environ.get("PATH")  # the system loader's search
    sites = _site_dirs()
    inputs = {
        "format": FORMAT, "package": __version__, "platform": sys.platform,
        "python": sys.version, "prefixes": [sys.prefix, sys.base_prefix, sys.exec_prefix],
        "site": sites, "env": env,
    }
    watched = list(sites)
    conda = env.get("CONDA_PREFIX")
    if conda:
        watched += [os.path.join(conda, "lib"), os.path.join(conda, "Library", "bin")]
    override = env.get("PYGPUKIT_NVRTC_PATH")
    if override:
        watched.append(override)
    if sys.platform.startswith("linux"):
        watched.append("/etc/ld.so.cache")
    return Snapshot(inputs, [[p, _stat(p)] for p in watched], time.time_ns())


def _record_name(inputs: dict[str, Any]) -> str:
    digest = _cache.make_key(inputs)
    return f"discovery-{digest[:32]}.rec"


def _mapped_inode_matches(path: str, inode: int) -> bool:
    """On Linux: whether the library mapped into this process is the file at ``path`` now."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return True  # nothing to compare with (not Linux); the mtime check still applies
    real = os.path.realpath(path)
    names = (real, f"{real} (deleted)")
    for line in maps.splitlines():
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[5] in names and int(fields[4]) != inode:
            return False
    return True


def read_record(inputs: dict[str, Any], *, quiet: bool = False) -> Facts | None:
    """The facts of the record for ``inputs`` if it is sound and still true, else ``None``."""
    folder = _cache._usable_dir()
    if folder is None:
        return None
    path = folder / _record_name(inputs)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        if not quiet:
            warnings.warn(f"NVRTC discovery record {path} unreadable ({exc}); ignored",
                          _cache.CacheWarning, stacklevel=4)
        return None
    try:
        body = json.loads(_cache.unseal(RECORD_MAGIC, data))
        if not isinstance(body, dict):
            raise ValueError("not an object")
        if body.get("inputs") != inputs:
            return None  # another environment's record (or another format): not ours
        for watched_path, recorded in body["watch"]:
            if _stat(watched_path) != recorded:
                return None  # something discovery depends on changed: discover again
        f = body["facts"]
        version = tuple(int(v) for v in f["version"])
        if len(version) != 2:
            raise ValueError("bad version")
        return Facts(str(f["path"]), str(f["found_via"]), (version[0], version[1]),
                     tuple(int(a) for a in f["archs"]),
                     tuple(str(d) for d in f["include_dirs"]), from_record=True)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        if not quiet:
            warnings.warn(f"NVRTC discovery record {path} is corrupt ({exc}); ignored",
                          _cache.CacheWarning, stacklevel=4)
        return None


def write_record(facts: Facts, snap: Snapshot) -> bool:
    """Record ``facts`` for the inputs of ``snap``; ``False`` (nothing written) when unsure."""
    lib = _stat(facts.path)
    if lib is None or lib[3] >= snap.started_ns:
        return False  # gone, or changed while (or after) it was loaded: do not vouch for it
    if not _mapped_inode_matches(facts.path, lib[1]):
        return False  # the file at the path is no longer the one loaded
    watch = [*snap.watch, [facts.path, lib]]
    for extra in (os.path.dirname(facts.path), *facts.include_dirs):
        watch.append([extra, _stat(extra)])
    body = {
        "inputs": snap.inputs, "watch": watch,
        "facts": {"path": facts.path, "found_via": facts.found_via,
                  "version": list(facts.version), "archs": list(facts.archs),
                  "include_dirs": list(facts.include_dirs)},
    }
    folder = _cache._usable_dir()
    if folder is None:
        return False
    try:
        _cache.write_atomic(folder, _record_name(snap.inputs),
                            _cache.seal(RECORD_MAGIC, json.dumps(body, sort_keys=True).encode()))
    except OSError as exc:
        warnings.warn(f"NVRTC discovery record not written in {folder}: {exc}",
                      _cache.CacheWarning, stacklevel=4)
        return False
    return True


def _probe() -> Facts:
    """Load NVRTC (the usual search) and ask it; raises ``NvrtcUnavailableError``."""
    loaded = _loader._get()
    return Facts(loaded.path, loaded.found_via, _loader.version(), _loader.supported_archs(),
                 include_dirs())


def live() -> Facts:
    """The facts of the NVRTC loaded into this process (loading it); the record is refreshed."""
    global _live
    with _lock:
        if _live is None:
            probed = _probe()
            snap = _loader._snapshot
            if snap is not None and read_record(snap.inputs, quiet=True) != probed:
                write_record(probed, snap)
            _live = probed
        return _live


def facts() -> Facts:
    """The facts for the cache key: from a sound record if NVRTC is not loaded, else live."""
    global _memo
    with _lock:
        if _memo is None:
            if not _loader.is_loaded():
                _memo = read_record(snapshot().inputs)
            if _memo is None:
                _memo = live()
        return _memo


def confirm(expected: Facts) -> Facts:
    """Load NVRTC before compiling; return its facts, which replace ``expected`` if they differ."""
    global _memo
    actual = live()
    with _lock:
        if actual != expected:
            _memo = actual
    return actual


def _reset_for_tests() -> None:
    global _memo, _live
    with _lock:
        _memo = None
        _live = None
