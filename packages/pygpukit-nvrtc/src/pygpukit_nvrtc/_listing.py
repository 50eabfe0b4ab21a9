"""Listing and clearing the cache (imported on first use: not on the path of a cache hit)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pygpukit_nvrtc._cache import cache_dir, read_entry


@dataclass(frozen=True)
class CacheEntry:
    """One cached program: its file, size and the metadata stored with it.

    ``meta["deps"]`` lists the headers it was compiled from (see the package README).
    """

    path: Path
    size: int
    meta: dict[str, Any]


def entries() -> list[CacheEntry]:
    """List the cached programs, most recently used first.

    Listing neither checks the entries' headers nor counts as a use; an entry another process
    evicts meanwhile is left out, a corrupt one is listed with empty metadata (and a warning).
    """
    folder = cache_dir()
    if not folder.is_dir():
        return []
    found = []
    for path in folder.glob("*.bin"):
        try:
            st = path.stat()
        except FileNotFoundError:
            continue
        loaded = read_entry(path, path.stem)
        found.append((st.st_mtime_ns, CacheEntry(path, st.st_size, loaded[0] if loaded else {})))
    return [entry for _, entry in sorted(found, key=lambda f: f[0], reverse=True)]


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
