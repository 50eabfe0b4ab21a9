"""Listing and clearing the cache (imported on first use: not on the path of a cache hit)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pygpukit_nvrtc._cache import cache_dir, load


@dataclass(frozen=True)
class CacheEntry:
    """One cached program: its file, size and the metadata stored with it."""

    path: Path
    size: int
    meta: dict[str, Any]


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
    """Delete every cached program and discovery record; return how many programs went.

    The count is of program files (and leftover temporary files), as :func:`entries` lists
    them; the discovery records (``discovery-*.rec``) go too, uncounted.
    """
    folder = cache_dir()
    if not folder.is_dir():
        return 0
    removed = 0
    for path in list(folder.glob("*.bin")) + list(folder.glob(".*.tmp")):
        path.unlink(missing_ok=True)
        removed += 1
    for path in folder.glob("discovery-*.rec"):
        path.unlink(missing_ok=True)
    return removed
