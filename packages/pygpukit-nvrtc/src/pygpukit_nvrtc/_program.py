"""Compiling CUDA C++ with NVRTC: to cubin for an exact arch, or PTX, with a disk cache."""

from __future__ import annotations

import ctypes
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pygpukit_nvrtc import _cache
from pygpukit_nvrtc._errors import NvrtcError
from pygpukit_nvrtc._loader import _check, library, path, supported_archs, version

NVRTC_ERROR_COMPILATION = 6


class CompileError(NvrtcError):
    """The source did not compile; ``log`` holds NVRTC's full log."""

    def __init__(self, log: str, name: str) -> None:
        super().__init__("nvrtcCompileProgram", NVRTC_ERROR_COMPILATION,
                         f"compiling {name} failed:\n{log.strip()}")
        self.log = log


@dataclass(frozen=True)
class CompileResult:
    """What a compilation produced.

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

    binary: bytes
    output: Literal["cubin", "ptx"]
    arch: str
    log: str
    lowered_names: dict[str, str] = field(default_factory=dict)
    cached: bool = False
    fallback: str | None = None


@functools.cache
def include_dirs() -> tuple[str, ...]:
    """Folders with ``cuda_fp16.h`` / ``cuda_bf16.h`` (NVIDIA's ``nvidia-cuda-runtime`` wheel)."""
    try:
        from cuda import pathfinder
    except ImportError:
        return ()
    found = pathfinder.find_nvidia_header_directory("cudart")
    return (str(found),) if found else ()


def _parse_arch(arch: int | str | None) -> int:
    if arch is None:
        return max(supported_archs())
    if isinstance(arch, int):
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
        Use the disk cache (``PYGPUKIT_CACHE_DIR`` or the user cache folder).
    cache_tag
        Extra text for the cache key (callers add e.g. the driver version).

    Raises
    ------
    CompileError
        With NVRTC's full log when the source does not compile.
    NvrtcUnavailableError
        When NVRTC cannot be loaded.
    """
    if output not in ("cubin", "ptx"):
        raise ValueError(f"output: expected 'cubin' or 'ptx'; got {output!r}")
    wanted = _parse_arch(arch)
    known = supported_archs()
    fallback = None
    if output == "cubin" and wanted not in known:
        if wanted < min(known):
            raise ValueError(f"arch: sm_{wanted} is older than NVRTC {version()} supports "
                             f"(sm_{min(known)}..sm_{max(known)})")
        fallback = (f"NVRTC {'.'.join(map(str, version()))} does not know sm_{wanted}; "
                    f"compiled PTX for compute_{max(known)} for the driver to JIT")
        output, wanted = "ptx", max(a for a in known if a <= wanted)
    target = f"sm_{wanted}" if output == "cubin" else f"compute_{wanted}"
    all_options = [f"-arch={target}", "-std=c++17", *(f"-I{d}" for d in include_dirs()),
                   *options]
    from pygpukit_nvrtc import __version__

    key = _cache.make_key({
        "source": source, "options": all_options, "names": list(name_expressions),
        "output": output, "nvrtc": list(version()), "nvrtc_path": path(),
        "package": __version__, "tag": cache_tag,
    })
    if cache and (hit := _cache.load(key)) is not None:
        meta, binary = hit
        return CompileResult(binary, output, target, meta.get("log", ""),
                             dict(meta.get("lowered_names", {})), True, fallback)
    binary, log, lowered = _run_nvrtc(source, name, all_options, name_expressions, output)
    if cache:
        _cache.store(key, {"log": log, "lowered_names": lowered, "arch": target,
                           "output": output}, binary)
    return CompileResult(binary, output, target, log, lowered, False, fallback)
