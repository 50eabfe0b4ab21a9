"""The headers a compilation read, so that a cache entry can be checked against them.

NVRTC (13.x) has no ``-M``/``-MD``/``--dependency-output`` option and no API that lists what a
program included.  Its time profiler does: ``-fdevice-time-trace=<file>`` writes a Chrome-trace
JSON with one ``"Processing Header File"`` event per header, whose ``detail`` is the path as
NVRTC opened it (absolute, or relative to the working folder like the ``-I`` folder or program
name it came from), plus ``__nv_nvrtc_builtin_header.h``, NVRTC's own in-memory prelude.  The
option changes neither the cubin nor the PTX and costs no measurable time.

After a compilation, :func:`record` turns that list into the dependency part of a cache entry:
``(path, size, mtime_ns, ctime_ns, sha256, racy)`` for every header on disk, and the *absent*
paths: the same relative name under every ``-I`` folder (and the program's folder) searched
before the one it was found in, where a new file would shadow it.  ``_cache.deps_current``
checks both on every hit.  When the list cannot be had (an NVRTC that rejects the option, or a
caller that passes its own ``-fdevice-time-trace``), a program that may include anything is not
cached (:func:`may_include`).

This module is imported on a cache miss only.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pygpukit_nvrtc._cache import CacheWarning, sha256_hex

TRACE_OPTION = "-fdevice-time-trace="
HEADER_EVENT = "Processing Header File"
BUILTIN_PREFIX = "__nv_nvrtc_builtin"  # NVRTC's own prelude, compiled in, not a file
RACY_NS = 2_000_000_000  # a file changed this recently may change again within its mtime tick

_unsupported: set[str] = set()  # NVRTC libraries (paths) that rejected TRACE_OPTION
_warned: set[str] = set()


def traceable(options: Sequence[str], nvrtc_path: str) -> bool:
    """Whether the header list can be asked for: the option is known and not taken."""
    if nvrtc_path in _unsupported:
        return False
    return not any(o.lstrip("-").startswith("fdevice-time-trace") for o in options)


def mark_unsupported(nvrtc_path: str) -> None:
    """Remember (for this process) that the NVRTC at ``nvrtc_path`` rejects the trace option."""
    _unsupported.add(nvrtc_path)


def headers_from_trace(folder: str) -> list[str] | None:
    """The header paths in the trace files under ``folder``; ``None`` when unknown.

    Unknown: no trace file, an unreadable one, or one without any header event (NVRTC
    13.x always reports its prelude, so a trace without header events is taken as one that
    does not report headers at all).
    """
    # NVRTC appends ".json" to the name given; read whatever it wrote to the private folder.
    files = sorted(Path(folder).glob("*.json"))
    if not files:
        return None
    seen: dict[str, None] = {}
    try:
        for path in files:
            events = json.loads(path.read_bytes())["traceEvents"]
            for event in events:
                if isinstance(event, dict) and event.get("name") == HEADER_EVENT:
                    seen[str(event["args"]["detail"])] = None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return list(seen) or None


def may_include(source: str, user_options: Sequence[str]) -> bool:
    """Whether ``source`` could read any header: conservative (a mention of "include" counts)."""
    # A directive cannot come from a macro expansion, but a backslash-newline can split it:
    # any occurrence of the word is taken as an include, and so is a pre-include option.
    if "include" in source:
        return True
    return any(o.lstrip("-").startswith(("include", "pre-include", "use-bundled-headers"))
               for o in user_options)


def warn_unknown(reason: str) -> None:
    """Warn once per reason that programs with includes are not cached."""
    if reason in _warned:
        return
    _warned.add(reason)
    warnings.warn(f"NVRTC cache: {reason}, so the headers a program includes cannot be "
                  "listed; programs that may include headers are compiled every time",
                  CacheWarning, stacklevel=4)


def search_dirs(options: Sequence[str], name: str) -> list[str]:
    """The folders NVRTC searches for headers, in order, as given (relative ones from the CWD)."""
    dirs = []
    if not any(o.lstrip("-") == "no-source-include" for o in options):
        dirs.append(os.path.dirname(name) or ".")
    it = iter(options)
    for opt in it:
        if opt in ("-I", "--include-path"):
            value = next(it, None)
            if value is not None:
                dirs.append(value)
        elif opt.startswith("--include-path="):
            dirs.append(opt[len("--include-path="):])
        elif opt.startswith("-I"):
            dirs.append(opt[2:].removeprefix("="))
        elif opt.startswith("--use-bundled-headers="):
            bundled = opt[len("--use-bundled-headers="):]
            dirs += [bundled, os.path.join(bundled, "cccl")]
    return dirs


def _under(path: str, folder: str) -> str | None:
    """``path`` relative to ``folder`` if it lies inside it (both taken from the CWD), else None."""
    full, base = os.path.abspath(path), os.path.abspath(folder)
    prefix = base.rstrip(os.sep) + os.sep
    return full[len(prefix):] if full.startswith(prefix) else None


def record(headers: list[str], options: Sequence[str], name: str,
           started_ns: int) -> dict[str, Any]:
    """The dependency part of a cache entry.

    Parameters
    ----------
    headers
        The paths NVRTC reported (:func:`headers_from_trace`).
    options
        The full option list of the compilation (for the ``-I`` folders).
    name
        The program name (its folder is searched first).
    started_ns
        ``time.time_ns()`` taken before the compilation started.

    Raises
    ------
    ValueError
        When the entry cannot be vouched for: a header is unreadable now, or was written during
        (or after: a timestamp in the future) the compilation.
    """
    files: list[list[Any]] = []
    found_in: list[tuple[str, int]] = []  # (relative name, index of its search folder)
    dirs = search_dirs(options, name)
    for path in headers:
        if os.path.basename(path).startswith(BUILTIN_PREFIX) and not os.path.exists(path):
            continue
        try:
            before = os.stat(path)
            data = Path(path).read_bytes()
            after = os.stat(path)
        except OSError as exc:
            raise ValueError(f"header {path} is unreadable now ({exc})") from exc
        stamp = (after.st_size, after.st_mtime_ns, after.st_ctime_ns)
        if stamp != (before.st_size, before.st_mtime_ns, before.st_ctime_ns) or len(data) != \
                after.st_size or max(after.st_mtime_ns, after.st_ctime_ns) >= started_ns:
            # The binary may hold the older text.
            raise ValueError(f"header {path} changed while compiling (or its timestamp is "
                             "in the future)")
        # Like git's "racily clean" files: a change within the same timestamp tick would keep
        # size and times, so a recently changed header is hashed on every lookup.
        racy = max(after.st_mtime_ns, after.st_ctime_ns) >= time.time_ns() - RACY_NS
        files.append([path, *stamp, sha256_hex(data), racy])
        for index, folder in enumerate(dirs):
            rel = _under(path, folder)
            if rel is not None:
                found_in.append((rel, index))
    absent: dict[str, None] = {}
    for rel, index in found_in:
        for earlier in dirs[:index]:
            probe = os.path.join(earlier, rel)
            if not os.path.lexists(probe):
                absent[probe] = None
    return {"files": files, "absent": list(absent)}
