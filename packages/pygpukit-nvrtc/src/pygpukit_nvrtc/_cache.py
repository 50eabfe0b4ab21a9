"""The on-disk cache of compiled programs.

Entries live under ``PYGPUKIT_CACHE_DIR`` (or the platform's user cache folder) in ``nvrtc/``,
one file per key.  A file is ``MAGIC``, the SHA-256 of the rest, a JSON header line and the
binary (:func:`seal`); it is written to a temporary file in the same folder and renamed into
place, so readers never see half an entry and concurrent compilers of the same key simply
race to an identical file.  A corrupt entry is reported with a warning and recompiled.

An entry records the headers its compilation read (``_deps``); it is served only while each
still has its recorded size and times or, failing that, its recorded SHA-256, and while no new
file shadows one of them on the include path.

Safety: the folder is created 0700; a folder others can write to, or one owned by another user
(or whose parent is), is refused with a :class:`CacheWarning` (someone could plant a binary).
Size: the ``*.bin`` entries are kept under ``PYGPUKIT_CACHE_MAX_BYTES`` (default 1 GiB) by
deleting the least recently used first (a hit touches its entry's mtime); ``0`` turns the
program cache off.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ENV_CACHE_DIR = "PYGPUKIT_CACHE_DIR"
ENV_CACHE_MAX_BYTES = "PYGPUKIT_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 1 << 30
MAGIC = b"PGKNVRTC1\n"
STALE_TMP_S = 3600  # a temporary file this old was left by a writer that died
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


try:  # CPython's own SHA-256: no OpenSSL to load (hashlib's import costs ~1-3 ms), same digest
    from _sha2 import sha256 as _small_sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # Python < 3.12
    try:
        from _sha256 import sha256 as _small_sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:
        _small_sha256 = None
_SMALL = 1 << 18  # above this OpenSSL's faster hashing pays for its import


def sha256_hex(data: bytes) -> str:
    """SHA-256 of ``data`` in hex; small inputs avoid importing hashlib (OpenSSL)."""
    if _small_sha256 is not None and len(data) < _SMALL:
        return str(_small_sha256(data).hexdigest())
    import hashlib

    return hashlib.sha256(data).hexdigest()


class CacheWarning(UserWarning):
    """The cache could not be used (corrupt entry, unsafe folder); compilation goes on."""


def cache_dir() -> Path:
    """Return the folder of the NVRTC cache (not created by this call)."""
    override = os.environ.get(ENV_CACHE_DIR)
    if override:
        return Path(override) / "nvrtc"
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
        return base / "pygpukit" / "Cache" / "nvrtc"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "pygpukit" / "nvrtc"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "pygpukit" / "nvrtc"


def max_bytes() -> int:
    """The size limit of the program cache in bytes: ``PYGPUKIT_CACHE_MAX_BYTES`` or 1 GiB.

    The value is a whole number of bytes, optionally with a binary unit: ``K``/``KiB``,
    ``M``/``MiB``, ``G``/``GiB``, ``T``/``TiB`` (case-insensitive; ``512M`` is 512 * 2**20).
    ``0`` turns the program cache off.

    Raises
    ------
    ValueError
        When the variable is set to anything else; the message names the variable.
    """
    raw = os.environ.get(ENV_CACHE_MAX_BYTES)
    if raw is None or not raw.strip():
        return DEFAULT_MAX_BYTES
    match = re.fullmatch(r"\s*(\d+)\s*(?:([kmgt])(?:ib)?)?\s*", raw, re.IGNORECASE)
    if not match:
        raise ValueError(f"{ENV_CACHE_MAX_BYTES}={raw!r}: expected a whole number of bytes, "
                         "optionally with a unit K, M, G or T (or KiB, MiB, GiB, TiB), e.g. "
                         "1073741824 or 512M; 0 turns the cache off")
    return int(match.group(1)) * _UNITS[(match.group(2) or "").lower()]


def _refusal(folder: Path, created: list[Path]) -> str | None:
    """Why ``folder`` must not hold the cache (after it exists), or ``None`` if it is safe."""
    st = folder.stat()
    if sys.platform == "win32":
        return None  # POSIX modes and owners mean nothing there
    euid = os.geteuid()
    if st.st_uid != euid:
        return (f"{folder} is owned by another user (uid {st.st_uid}; you are {euid}); "
                f"set {ENV_CACHE_DIR} to a folder of your own")
    if st.st_mode & (stat.S_IWOTH | stat.S_IWGRP):
        return (f"{folder} is writable by other users (mode {stat.filemode(st.st_mode)}); "
                f"fix with `chmod 700 {folder}`")
    # Whoever owns the parent can rename the folder away and put their own in its place.
    # Folders made by this call must be ours (someone could have raced us to create them).
    for other in (folder.parent, *created):
        owner = other.stat().st_uid
        if owner != euid and (other in created or owner != 0):
            return (f"{other} (holding {folder}) is owned by another user (uid {owner}; you "
                    f"are {euid}); set {ENV_CACHE_DIR} to a folder of your own")
    return None


def _usable_dir() -> Path | None:
    """Create the cache folder (0700) if needed; ``None`` (with a warning) if it is unsafe."""
    folder = cache_dir()
    created: list[Path] = []
    try:
        if not folder.is_dir():
            missing = folder
            while not missing.exists() and missing != missing.parent:
                created.append(missing)
                missing = missing.parent
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        reason = _refusal(folder, created)
    except OSError as exc:
        warnings.warn(f"NVRTC cache disabled: cannot create {folder}: {exc}", CacheWarning,
                      stacklevel=3)
        return None
    if reason is not None:
        warnings.warn(f"NVRTC cache disabled: {reason}", CacheWarning, stacklevel=3)
        return None
    return folder


def deps_current(deps: dict[str, Any]) -> bool:
    """Whether the headers recorded in ``deps`` (see ``_deps.record``) are unchanged.

    A header whose size, mtime and ctime all match is taken as unchanged (ctime cannot be set
    back by ``touch``/``utime``); otherwise, or for one recorded as racy, its content is hashed.
    A path recorded as absent must still not exist.  Any doubt (an unreadable file) is a miss.
    """
    for path, size, mtime_ns, ctime_ns, digest, racy in deps["files"]:
        try:
            st = os.stat(path)
            if not racy and (st.st_size, st.st_mtime_ns, st.st_ctime_ns) == (
                    size, mtime_ns, ctime_ns):
                continue
            if st.st_size != size:
                return False
            with open(path, "rb") as fh:
                if sha256_hex(fh.read()) != digest:
                    return False
        except OSError:
            return False
    for probe in deps["absent"]:
        try:
            os.lstat(probe)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return False
        return False  # a new header there would now be found first
    return True


def make_key(parts: dict[str, Any]) -> str:
    """A stable hex digest over everything that determines the compiled output."""
    return sha256_hex(json.dumps(parts, sort_keys=True).encode())


def seal(magic: bytes, rest: bytes) -> bytes:
    """``magic`` + the SHA-256 (hex) of ``rest`` + ``rest``: the layout of every file here."""
    return magic + sha256_hex(rest).encode() + rest


def unseal(magic: bytes, data: bytes) -> bytes:
    """Check a :func:`seal`-ed file and return its ``rest``; ``ValueError`` if it is corrupt."""
    if not data.startswith(magic):
        raise ValueError("bad magic")
    digest, rest = data[len(magic):len(magic) + 64], data[len(magic) + 64:]
    if sha256_hex(rest).encode() != digest:
        raise ValueError("content hash mismatch")
    return rest


def write_atomic(folder: Path, name: str, payload: bytes) -> None:
    """Write ``folder/name`` through a temporary file in ``folder`` and a rename (``OSError``)."""
    import tempfile  # only writers need it

    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name[:16]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.replace(tmp, folder / name)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_entry(path: Path, key: str) -> tuple[dict[str, Any], bytes] | None:
    """Return (metadata, binary) of the entry file ``path``; ``None`` (warned) if corrupt.

    ``None`` without a warning when the file is absent (another process may evict it at any
    time).  Nothing is checked against the headers and nothing is touched.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        warnings.warn(f"NVRTC cache entry {path} unreadable ({exc}); recompiling",
                      CacheWarning, stacklevel=4)
        return None
    try:
        header, _, binary = unseal(MAGIC, data).partition(b"\n")
        meta = json.loads(header)
        if not isinstance(meta, dict) or meta.get("key") != key:
            raise ValueError("key mismatch")
    except ValueError as exc:
        warnings.warn(f"NVRTC cache entry {path} is corrupt ({exc}); recompiling",
                      CacheWarning, stacklevel=4)
        return None
    return meta, binary


def load(key: str) -> tuple[dict[str, Any], bytes] | None:
    """Return (metadata, binary) for ``key`` if it may be served, else ``None``.

    ``None`` when the entry is absent, the folder unsafe, the entry corrupt (warned), or a
    header it was compiled from has changed (a plain miss: the recompilation replaces it).
    A hit sets the entry's mtime to now: eviction goes by least recent use.
    """
    folder = _usable_dir()
    if folder is None:
        return None
    path = folder / f"{key}.bin"
    hit = read_entry(path, key)
    if hit is None:
        return None
    try:
        if not deps_current(hit[0]["deps"]):  # a missing or malformed list raises: see below
            return None
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        warnings.warn(f"NVRTC cache entry {path} is corrupt (bad header list: {exc!r}); "
                      "recompiling", CacheWarning, stacklevel=3)
        return None
    # Evicted meanwhile, or a read-only cache: serving it is still right.
    with contextlib.suppress(OSError):
        os.utime(path)
    return hit


def evict(folder: Path, limit: int, keep: str = "") -> int:
    """Delete the least recently used entries until the ``*.bin`` files total ``limit`` bytes.

    ``keep`` (a file name) is never deleted.  Safe with other processes doing the same: a file
    that vanishes meanwhile is skipped.  Temporary files older than an hour (left by a writer
    that died) go too.  Returns how many entries were deleted.
    """
    found = []
    old_tmp = time.time() - STALE_TMP_S
    with os.scandir(folder) as it:
        for item in it:
            try:
                if item.name.endswith(".bin"):
                    st = item.stat(follow_symlinks=False)
                    found.append((st.st_mtime_ns, item.name, st.st_size))
                elif item.name.startswith(".") and item.name.endswith(".tmp") and \
                        item.stat(follow_symlinks=False).st_mtime < old_tmp:
                    os.unlink(item.path)
            except FileNotFoundError:
                continue
    total = sum(size for _, _, size in found)
    removed = 0
    for _, name, size in sorted(found):
        if total <= limit:
            break
        if name == keep:
            continue
        try:
            os.unlink(folder / name)
            removed += 1
        except FileNotFoundError:
            pass  # another process evicted it first
        total -= size
    return removed


def store(key: str, meta: dict[str, Any], binary: bytes) -> None:
    """Write an entry atomically, then evict down to :func:`max_bytes`; failures only warn."""
    folder = _usable_dir()
    if folder is None:
        return
    limit = max_bytes()
    rest = json.dumps({**meta, "key": key}, sort_keys=True).encode() + b"\n" + binary
    payload = seal(MAGIC, rest)
    if len(payload) > limit:
        warnings.warn(f"NVRTC cache: a {len(payload)}-byte entry exceeds "
                      f"{ENV_CACHE_MAX_BYTES}={limit}; not cached", CacheWarning, stacklevel=3)
        return
    try:
        write_atomic(folder, f"{key}.bin", payload)
        evict(folder, limit, keep=f"{key}.bin")
    except OSError as exc:
        warnings.warn(f"NVRTC cache write failed in {folder}: {exc}", CacheWarning, stacklevel=3)
