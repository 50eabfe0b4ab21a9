"""Compiling CUDA C++ with NVRTC: to cubin for an exact arch, or PTX, with a disk cache."""

from __future__ import annotations

import ctypes
import os
import re
import time
from collections.abc import Sequence
from typing import Any, Literal

from pygpukit_nvrtc import _cache, _discovery
from pygpukit_nvrtc._discovery import Facts, include_dirs
from pygpukit_nvrtc._errors import NvrtcError
from pygpukit_nvrtc._loader import _check, library
from pygpukit_nvrtc._loader import path as library_path

NVRTC_ERROR_INVALID_OPTION = 5
NVRTC_ERROR_COMPILATION = 6
# Bumped when entries change meaning: 2 = entries record the headers they were compiled from.
ENTRY_FORMAT = 2


class CompileError(NvrtcError):
    """The source did not compile; ``log`` holds NVRTC's full log."""

    def __init__(self, log: str, name: str) -> None:
        super().__init__("nvrtcCompileProgram", NVRTC_ERROR_COMPILATION,
                         f"compiling {name} failed:\n{log.strip()}")
        self.log = log


class CompileResult:
    """What a compilation produced (immutable; compares equal field by field).

    Attributes
    ----------
    binary
        The cubin, or the PTX text (NUL-terminated, ready for ``cuModuleLoadData``).
    output
        ``"cubin"`` or ``"ptx"``.
    arch
        The target, e.g. ``"sm_90"`` (cubin) or ``"compute_120"`` (PTX).
    log
        NVRTC's log (warnings), possibly empty.
    lowered_names
        Each name expression mapped to its mangled symbol, e.g.
        ``{"axpy<float>": "_Z4axpyIfEvT_PS0_"}``.
    cached
        Whether the result came from the disk cache.
    fallback
        Why PTX was produced instead of the cubin asked for (NVRTC does not know the arch),
        else ``None``.
    """

    # A plain class rather than a frozen dataclass: creating a dataclass costs ~0.3-1 ms at
    # import, and this module is imported on the way to a cache hit in a fresh process.
    __slots__ = ("arch", "binary", "cached", "fallback", "log", "lowered_names", "output")
    _FIELDS = ("binary", "output", "arch", "log", "lowered_names", "cached", "fallback")

    binary: bytes
    output: Literal["cubin", "ptx"]
    arch: str
    log: str
    lowered_names: dict[str, str]
    cached: bool
    fallback: str | None

    def __init__(self, binary: bytes, output: Literal["cubin", "ptx"], arch: str, log: str,
                 lowered_names: dict[str, str] | None = None, cached: bool = False,
                 fallback: str | None = None) -> None:
        values = (binary, output, arch, log, {} if lowered_names is None else lowered_names,
                  cached, fallback)
        for name, value in zip(self._FIELDS, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"CompileResult is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"CompileResult is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        """Equal when every field is."""
        if not isinstance(other, CompileResult):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]  # holds a dict, like the dataclass did

    def __repr__(self) -> str:
        shown = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._FIELDS if f != "binary")
        return f"CompileResult(binary=<{len(self.binary)} bytes>, {shown})"


__all__ = ["CompileError", "CompileResult", "compile", "include_dirs"]


def _parse_arch(arch: int | str | None) -> int | None:
    if arch is None or isinstance(arch, int):
        return arch
    match = re.fullmatch(r"(?:sm_|compute_)?(\d+)[af]?", arch.strip())
    if not match:
        raise ValueError(f"arch: expected like 90, 'sm_90' or 'compute_90'; got {arch!r}")
    return int(match.group(1))


def _run_nvrtc(source: str, name: str, options: list[str], name_expressions: Sequence[str],
               output: str) -> tuple[bytes, str, dict[str, str]]:
    lib = library()
    prog = ctypes.c_void_p()
    _check("nvrtcCreateProgram", lib.nvrtcCreateProgram(
        ctypes.byref(prog), source.encode(), name.encode(), 0, None, None))
    try:
        for expr in name_expressions:
            _check("nvrtcAddNameExpression", lib.nvrtcAddNameExpression(prog, expr.encode()))
        opts = (ctypes.c_char_p * max(len(options), 1))(*(o.encode() for o in options))
        status = lib.nvrtcCompileProgram(prog, len(options), opts)
        size = ctypes.c_size_t()
        _check("nvrtcGetProgramLogSize", lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size)))
        buf = ctypes.create_string_buffer(size.value)
        _check("nvrtcGetProgramLog", lib.nvrtcGetProgramLog(prog, buf))
        log = buf.value.decode(errors="replace")
        if status == NVRTC_ERROR_COMPILATION:
            raise CompileError(log, name)
        if status != 0:
            reason = (lib.nvrtcGetErrorString(status) or b"unknown error").decode()
            raise NvrtcError("nvrtcCompileProgram", status,
                             f"{reason} with options {options}" + (f"\n{log}" if log else ""))
        get_size, get = ((lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN) if output == "cubin"
                         else (lib.nvrtcGetPTXSize, lib.nvrtcGetPTX))
        _check(get_size.__name__, get_size(prog, ctypes.byref(size)))
        out = ctypes.create_string_buffer(size.value)
        _check(get.__name__, get(prog, out))
        lowered = {}
        for expr in name_expressions:
            mangled = ctypes.c_char_p()
            _check("nvrtcGetLoweredName",
                   lib.nvrtcGetLoweredName(prog, expr.encode(), ctypes.byref(mangled)))
            lowered[expr] = (mangled.value or b"").decode()
        return out.raw, log, lowered
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def _run_listing(source: str, name: str, options: list[str], name_expressions: Sequence[str],
                 output: str) -> tuple[bytes, str, dict[str, str], list[str] | None, str]:
    """:func:`_run_nvrtc`, plus the headers NVRTC read (``None`` and why, when unknown)."""
    import tempfile

    from pygpukit_nvrtc import _deps

    nvrtc_path = library_path()
    if not _deps.traceable(options, nvrtc_path):
        why = (f"NVRTC at {nvrtc_path} rejects {_deps.TRACE_OPTION}<file>"
               if nvrtc_path in _deps._unsupported
               else f"the options pass their own {_deps.TRACE_OPTION}<file>")
        return (*_run_nvrtc(source, name, options, name_expressions, output), None, why)
    try:
        tmp = tempfile.TemporaryDirectory(prefix="pygpukit-nvrtc-")
    except OSError as exc:
        return (*_run_nvrtc(source, name, options, name_expressions, output), None,
                f"no temporary folder for NVRTC's trace ({exc})")
    with tmp:
        traced = [*options, _deps.TRACE_OPTION + os.path.join(tmp.name, "trace")]
        try:
            binary, log, lowered = _run_nvrtc(source, name, traced, name_expressions, output)
        except NvrtcError as exc:
            if exc.code != NVRTC_ERROR_INVALID_OPTION:
                raise
            # Ours or the caller's option? Without ours: an error now is the caller's.
            binary, log, lowered = _run_nvrtc(source, name, options, name_expressions, output)
            _deps.mark_unsupported(nvrtc_path)
            return (binary, log, lowered, None,
                    f"NVRTC at {nvrtc_path} rejects {_deps.TRACE_OPTION}<file>")
        headers = _deps.headers_from_trace(tmp.name)
    return binary, log, lowered, headers, "NVRTC wrote no readable time trace"


def _dependencies(source: str, user_options: Sequence[str], plan: _Plan, name: str,
                  headers: list[str] | None, why: str,
                  started_ns: int) -> dict[str, Any] | None:
    """The header record of a new entry, or ``None`` (warned) when it must not be cached."""
    from pygpukit_nvrtc import _deps

    if headers is None:
        if _deps.may_include(source, user_options):
            _deps.warn_unknown(why)
            return None
        return {"files": [], "absent": []}  # reads no header: nothing to check
    try:
        return _deps.record(headers, plan.options, name, started_ns)
    except ValueError as exc:
        import warnings

        warnings.warn(f"NVRTC cache: {name} not cached: {exc}", _cache.CacheWarning,
                      stacklevel=3)
        return None


def compile(
    source: str,
    *,
    name_expressions: Sequence[str] = (),
    options: Sequence[str] = (),
    arch: int | str | None = None,
    output: Literal["cubin", "ptx"] = "cubin",
    name: str = "pygpukit_jit.cu",
    cache: bool = True,
    cache_tag: str = "",
) -> CompileResult:
    """Compile CUDA C++ ``source`` with NVRTC.

    Parameters
    ----------
    source
        The CUDA C++ text. ``cuda_fp16.h`` and ``cuda_bf16.h`` can be included.
    name_expressions
        Template instantiations or overloaded names to keep and report mangled, e.g.
        ``["axpy<float>"]`` (see :attr:`CompileResult.lowered_names`).
    options
        Extra NVRTC options, e.g. ``["-O3", "--use_fast_math"]``.
    arch
        Target compute capability as ``90``, ``"sm_90"`` or ``"compute_90"``; the newest NVRTC
        supports if omitted.  If NVRTC does not know it (a GPU newer than this NVRTC), PTX for
        the newest arch it knows is produced instead (see :attr:`CompileResult.fallback`).
    output
        ``"cubin"`` (machine code for exactly ``arch``) or ``"ptx"``.
    name
        File name used in messages.
    cache
        Use the disk cache (``PYGPUKIT_CACHE_DIR`` or the user cache folder).  An entry is
        served only while every header the compilation read (found through NVRTC's
        ``-fdevice-time-trace``) is unchanged and no new file shadows one on the include
        path; see the package README.  With an NVRTC that cannot list its headers, a source
        that may include any (it mentions ``include``, or the options pre-include one) is
        compiled every time, with a :class:`CacheWarning` once.  The cache holds at most
        ``PYGPUKIT_CACHE_MAX_BYTES`` (default 1 GiB; ``0`` turns it off), least recently used
        entries going first.
    cache_tag
        Extra text for the cache key (callers add e.g. the driver version).

    Raises
    ------
    CompileError
        With NVRTC's full log when the source does not compile.
    NvrtcUnavailableError
        When NVRTC cannot be loaded.
    ValueError
        For a bad ``arch`` or ``output``, or a bad ``PYGPUKIT_CACHE_MAX_BYTES`` (when
        ``cache`` is true).
    """
    if output not in ("cubin", "ptx"):
        raise ValueError(f"output: expected 'cubin' or 'ptx'; got {output!r}")
    if cache and _cache.max_bytes() == 0:
        cache = False
    asked = _parse_arch(arch)
    facts = _discovery.facts()  # from the discovery record when it is sound: NVRTC not loaded
    plan = _plan(facts, source, name_expressions, options, asked, output, cache_tag, name)
    if cache and (hit := _cache.load(plan.key)) is not None:
        return _from_cache(plan, hit)
    actual = _discovery.confirm(facts)  # loads NVRTC; the key follows the library compiling
    if actual != facts:
        plan = _plan(actual, source, name_expressions, options, asked, output, cache_tag,
                     name)
        if cache and (hit := _cache.load(plan.key)) is not None:
            return _from_cache(plan, hit)
    if not cache:
        binary, log, lowered = _run_nvrtc(source, name, plan.options, name_expressions,
                                          plan.output)
        return CompileResult(binary, plan.output, plan.target, log, lowered, False,
                             plan.fallback)
    from pygpukit_nvrtc import _deps

    if not _deps.may_include(source, options):
        # Reads no header (no directive, no pre-include): nothing to list, and NVRTC's trace
        # costs a cold compile about as much again, so it is not asked for.
        binary, log, lowered = _run_nvrtc(source, name, plan.options, name_expressions,
                                          plan.output)
        deps: dict[str, Any] | None = {"files": [], "absent": []}
    else:
        started = time.time_ns()
        binary, log, lowered, headers, why = _run_listing(source, name, plan.options,
                                                          name_expressions, plan.output)
        deps = _dependencies(source, options, plan, name, headers, why, started)
    if deps is not None:
        _cache.store(plan.key, {"log": log, "lowered_names": lowered, "arch": plan.target,
                                "output": plan.output, "deps": deps}, binary)
    return CompileResult(binary, plan.output, plan.target, log, lowered, False, plan.fallback)


class _Plan:
    __slots__ = ("fallback", "key", "options", "output", "target")

    def __init__(self, output: Literal["cubin", "ptx"], target: str, fallback: str | None,
                 options: list[str], key: str) -> None:
        self.output, self.target, self.fallback = output, target, fallback
        self.options, self.key = options, key


def _plan(facts: Facts, source: str, name_expressions: Sequence[str], options: Sequence[str],
          asked: int | None, output: Literal["cubin", "ptx"], cache_tag: str,
          name: str) -> _Plan:
    """The target, the full options and the cache key, for the NVRTC that ``facts`` describe."""
    known = facts.archs
    wanted = max(known) if asked is None else asked
    fallback = None
    if output == "cubin" and wanted not in known:
        if wanted < min(known):
            raise ValueError(f"arch: sm_{wanted} is older than NVRTC {facts.version} supports "
                             f"(sm_{min(known)}..sm_{max(known)})")
        fallback = (f"NVRTC {'.'.join(map(str, facts.version))} does not know sm_{wanted}; "
                    f"compiled PTX for compute_{max(known)} for the driver to JIT")
        output, wanted = "ptx", max(a for a in known if a <= wanted)
    target = f"sm_{wanted}" if output == "cubin" else f"compute_{wanted}"
    all_options = [f"-arch={target}", "-std=c++17", *(f"-I{d}" for d in facts.include_dirs),
                   *options]
    from pygpukit_nvrtc import __version__

    key = _cache.make_key({
        "source": source, "options": all_options, "names": list(name_expressions),
        "output": output, "nvrtc": list(facts.version), "nvrtc_path": facts.path,
        "package": __version__, "tag": cache_tag, "entry": ENTRY_FORMAT,
        # The name's folder is searched for headers first, and the stored log quotes it.
        "name": name,
    })
    return _Plan(output, target, fallback, all_options, key)


def _from_cache(plan: _Plan, hit: tuple[dict[str, Any], bytes]) -> CompileResult:
    meta, binary = hit
    return CompileResult(binary, plan.output, plan.target, meta.get("log", ""),
                         dict(meta.get("lowered_names", {})), True, plan.fallback)
