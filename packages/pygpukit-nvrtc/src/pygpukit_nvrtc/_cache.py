"""The on-disk cache of compiled programs.

Entries live under ``PYGPUKIT_CACHE_DIR`` (or the platform's user cache folder) in ``nvrtc/``,
one file per key.  A file is ``MAGIC``, the SHA-256 of the rest, a JSON header line and the
binary; it is written to a temporary file in the same folder and renamed into place, so readers
never see half an entry and concurrent compilers of the same key simply race to an identical
file.  A corrupt entry is reported with a warning and recompiled.  The folder is created 0700,
and a folder others can write to is refused (someone could plant a binary there).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_CACHE_DIR = "PYGPUKIT_CACHE_DIR"
MAGIC = b"PGKNVRTC1\n"


class CacheWarning(UserWarning):
    """The cache could not be used (corrupt entry, unsafe folder); compilation goes on."""


@dataclass(frozen=True)
class CacheEntry:
    """One cached program: its file, size and the metadata stored with it."""

    path: Path
    size: int
    meta: dict[str, Any]


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


def _usable_dir() -> Path | None:
    """Create the cache folder (0700) if needed; ``None`` (with a warning) if it is unsafe."""
    folder = cache_dir()
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        mode = folder.stat().st_mode
    except OSError as exc:
        warnings.warn(f"NVRTC cache disabled: cannot create {folder}: {exc}", CacheWarning,
                      stacklevel=3)
        return None
    if sys.platform != "win32" and mode & (stat.S_IWOTH | stat.S_IWGRP):
        warnings.warn(
            f"NVRTC cache disabled: {folder} is writable by other users "
            f"(mode {stat.filemode(mode)}); fix with `chmod 700 {folder}`",
            CacheWarning, stacklevel=3,
        )
        return None
    return folder


def make_key(parts: dict[str, Any]) -> str:
    """A stable hex digest over everything that determines the compiled output."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def load(key: str) -> tuple[dict[str, Any], bytes] | None:
    """Return (metadata, binary) for ``key``, or ``None`` if absent, unsafe or corrupt."""
    folder = _usable_dir()
    if folder is None:
        return None
    path = folder / f"{key}.bin"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        warnings.warn(f"NVRTC cache entry {path} unreadable ({exc}); recompiling",
                      CacheWarning, stacklevel=3)
        return None
    try:
        if not data.startswith(MAGIC):
            raise ValueError("bad magic")
        digest, rest = data[len(MAGIC):len(MAGIC) + 64], data[len(MAGIC) + 64:]
        if hashlib.sha256(rest).hexdigest().encode() != digest:
            raise ValueError("content hash mismatch")
        header, _, binary = rest.partition(b"\n")
        meta = json.loads(header)
        if meta.get("key") != key:
            raise ValueError("key mismatch")
    except ValueError as exc:
        warnings.warn(f"NVRTC cache entry {path} is corrupt ({exc}); recompiling",
                      CacheWarning, stacklevel=3)
        return None
    return meta, binary


def store(key: str, meta: dict[str, Any], binary: bytes) -> None:
    """Write an entry atomically (temporary file + rename); failures only warn."""
    folder = _usable_dir()
    if folder is None:
        return
    rest = json.dumps({**meta, "key": key}, sort_keys=True).encode() + b"\n" + binary
    payload = MAGIC + hashlib.sha256(rest).hexdigest().encode() + rest
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key[:16]}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(payload)
            os.replace(tmp, folder / f"{key}.bin")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        warnings.warn(f"NVRTC cache write failed in {folder}: {exc}", CacheWarning, stacklevel=3)


def entries() -> list[CacheEntry]:
    """List the cached programs (newest first)."""
    folder = cache_dir()
    if not folder.is_dir():
        return []
    found = []
    for path in folder.glob("*.bin"):
        loaded = load(path.stem)
        found.append(CacheEntry(path, path.stat().st_size, loaded[0] if loaded else {}))
    return sorted(found, key=lambda e: e.path.stat().st_mtime, reverse=True)


def clear() -> int:
    """Delete every cached program; return how many files were removed."""
    folder = cache_dir()
    if not folder.is_dir():
        return 0
    removed = 0
    for path in list(folder.glob("*.bin")) + list(folder.glob(".*.tmp")):
        path.unlink(missing_ok=True)
        removed += 1
    return removed
