"""The on-disk cache of compiled programs.

Entries live under ``PYGPUKIT_CACHE_DIR`` (or the platform's user cache folder) in ``nvrtc/``,
one file per key.  A file is ``MAGIC``, the SHA-256 of the rest, a JSON header line and the
binary (:func:`seal`); it is written to a temporary file in the same folder and renamed into
place, so readers never see half an entry and concurrent compilers of the same key simply
race to an identical file.  A corrupt entry is reported with a warning and recompiled.  The
folder is created 0700, and a folder others can write to is refused (someone could plant a
binary there).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import warnings
from pathlib import Path
from typing import Any

ENV_CACHE_DIR = "PYGPUKIT_CACHE_DIR"
MAGIC = b"PGKNVRTC1\n"


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
        header, _, binary = unseal(MAGIC, data).partition(b"\n")
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
    try:
        write_atomic(folder, f"{key}.bin", seal(MAGIC, rest))
    except OSError as exc:
        warnings.warn(f"NVRTC cache write failed in {folder}: {exc}", CacheWarning, stacklevel=3)
