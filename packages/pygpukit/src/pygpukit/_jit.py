"""``gp.jit``: compile CUDA C++ at run time with NVRTC and launch it (``pygpukit[jit]``).

The kernel's parameters are parsed from its signature, so calls take positional or keyword
arguments by name; scalars are converted to the declared C type and a GPUArray becomes its
device pointer (its dtype checked against the pointer type).  The grid follows from the
size-like parameter (``n``) and the block size unless ``grid=`` is given.  Code is compiled to
cubin for the device's exact ``sm_XY`` and cached on disk across processes.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from pygpukit._array import GPUArray
from pygpukit._errors import BackendUnavailableError

_INSTALL_HINT = "pip install pygpukit[jit]"

# Scalar C types: struct format (or a NumPy dtype for the 16-bit floats).
_SCALARS: dict[str, str | np.dtype[Any]] = {
    "bool": "?", "char": "b", "signed char": "b", "int8_t": "b", "unsigned char": "B",
    "uint8_t": "B", "short": "h", "int16_t": "h", "unsigned short": "H", "uint16_t": "H",
    "int": "i", "int32_t": "i", "signed": "i", "unsigned": "I", "unsigned int": "I",
    "uint32_t": "I", "long": "q", "long long": "q", "int64_t": "q", "ptrdiff_t": "q",
    "unsigned long": "Q", "unsigned long long": "Q", "uint64_t": "Q", "size_t": "Q",
    "float": "f", "double": "d",
    "__half": np.dtype(np.float16), "half": np.dtype(np.float16),
    "__nv_bfloat16": np.dtype(ml_dtypes.bfloat16), "nv_bfloat16": np.dtype(ml_dtypes.bfloat16),
}
# Pointee types: the GPUArray dtype a pointer parameter accepts (None: any).
_POINTEES: dict[str, np.dtype[Any] | None] = {
    "void": None, "bool": np.dtype(np.bool_), "char": np.dtype(np.int8),
    "signed char": np.dtype(np.int8), "int8_t": np.dtype(np.int8),
    "unsigned char": np.dtype(np.uint8), "uint8_t": np.dtype(np.uint8),
    "short": np.dtype(np.int16), "int16_t": np.dtype(np.int16),
    "int": np.dtype(np.int32), "int32_t": np.dtype(np.int32),
    "long long": np.dtype(np.int64), "long": np.dtype(np.int64), "int64_t": np.dtype(np.int64),
    "float": np.dtype(np.float32), "double": np.dtype(np.float64),
    "__half": np.dtype(np.float16), "half": np.dtype(np.float16),
    "__nv_bfloat16": np.dtype(ml_dtypes.bfloat16), "nv_bfloat16": np.dtype(ml_dtypes.bfloat16),
}
_SIZE_NAMES = ("n", "N", "size", "numel", "count", "num", "length", "len", "num_elements")
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict)\b")
_KERNEL = re.compile(
    r"(?:template\s*<(?P<tparams>[^>]*)>\s*)?(?:extern\s+\"C\"\s+)?__global__\s+"
    r"(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(?P<name>\w+)\s*\((?P<params>[^)]*)\)",
    re.S,
)


@dataclass(frozen=True)
class Param:
    """One kernel parameter: its name, the C type as written, and how to pass it."""

    name: str
    ctype: str
    pointer: bool
    pointee: np.dtype[Any] | None = None
    scalar: str | np.dtype[Any] | None = None
    writable: bool = True


def _parse_params(text: str, subst: dict[str, str]) -> list[Param]:
    params = []
    for raw in filter(None, (p.strip() for p in text.split(","))):
        raw = re.sub(r"\s+", " ", raw.replace("*", " * ")).strip()
        match = re.fullmatch(r"(?P<type>.*?)\s*(?P<name>\w+)", raw)
        if not match or not match.group("type").strip():
            raise ValueError(f"cannot parse kernel parameter {raw!r}")
        ctype, name = match.group("type").strip(), match.group("name")
        pointer = "*" in ctype
        writable = not re.search(r"\bconst\b", ctype.split("*")[0])
        base = " ".join(_QUALIFIERS.sub("", ctype.replace("*", " ")).split())
        base = subst.get(base, base)
        if pointer:
            if base not in _POINTEES:
                raise ValueError(f"parameter {name}: unsupported pointer type {ctype!r}")
            params.append(Param(name, ctype, True, pointee=_POINTEES[base], writable=writable))
        else:
            if base not in _SCALARS:
                raise ValueError(f"parameter {name}: unsupported scalar type {ctype!r}")
            params.append(Param(name, ctype, False, scalar=_SCALARS[base]))
    return params


def parse_kernels(source: str) -> dict[str, tuple[list[str], str]]:
    """Map each ``__global__`` function name to (template parameter names, parameter text)."""
    found = {}
    for m in _KERNEL.finditer(source):
        tparams = [t.split()[-1] for t in (m.group("tparams") or "").split(",") if t.strip()]
        found[m.group("name")] = (tparams, m.group("params"))
    return found


def _pack(param: Param, value: Any, device: Any) -> tuple[bytes, GPUArray | None]:
    if param.pointer:
        if isinstance(value, GPUArray):
            if value._rt is not device:
                raise ValueError(f"{param.name}: array is on {value._rt.describe()}, the "
                                 f"kernel on {device.describe()}")
            if param.pointee is not None and value.dtype != param.pointee:
                raise TypeError(f"{param.name}: the kernel takes {param.ctype}, the array is "
                                f"{value.dtype.name} (expected {param.pointee.name})")
            return struct.pack("Q", value.data_ptr), value
        if isinstance(value, int) and not isinstance(value, bool):
            return struct.pack("Q", value), None
        raise TypeError(f"{param.name}: expected a GPUArray or a device pointer (int) for "
                        f"{param.ctype}; got {type(value).__name__}")
    if isinstance(value, GPUArray):
        raise TypeError(f"{param.name}: the kernel takes {param.ctype} by value; got a GPUArray")
    fmt = param.scalar
    if isinstance(fmt, np.dtype):
        return np.asarray(value, dtype=fmt).tobytes(), None
    assert isinstance(fmt, str)
    try:
        return struct.pack(fmt, value), None
    except struct.error as exc:
        raise TypeError(f"{param.name}: cannot pass {value!r} as {param.ctype} ({exc})") from None


class JITKernel:
    """A compiled kernel; call it with the kernel's arguments (by position or by name).

    Keyword-only launch options: ``grid``, ``block`` (ints or up to 3-tuples), ``shared_mem``
    (bytes of dynamic shared memory), ``stream`` (a :class:`~pygpukit.Stream`).
    """

    def __init__(self, module: Any, function: Any, name: str, params: list[Param],
                 block_size: int, runtime: Any) -> None:
        self._module, self._function = module, function
        self.name, self.params, self.block_size = name, params, block_size
        self._runtime = runtime

    def __call__(self, *args: Any, grid: Any = None, block: Any = None, shared_mem: int = 0,
                 stream: Any = None, **kwargs: Any) -> None:
        import pygpukit_driver as drv
        from pygpukit._stream import stream_for_runtime
        from pygpukit._transfer import touch

        names = [p.name for p in self.params]
        if len(args) > len(names):
            raise TypeError(f"{self.name}() takes {len(names)} arguments; got {len(args)}")
        bound = dict(zip(names, args, strict=False))
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"{self.name}() has no parameter {key!r} (parameters: "
                                f"{', '.join(names)})")
            if key in bound:
                raise TypeError(f"{self.name}() got two values for {key!r}")
            bound[key] = value
        missing = [n for n in names if n not in bound]
        if missing:
            raise TypeError(f"{self.name}() missing arguments: {', '.join(missing)}")
        packed, arrays = [], []
        for param in self.params:
            data, array = _pack(param, bound[param.name], self._runtime)
            packed.append(data)
            if array is not None:
                arrays.append((array, param.writable))
        block = self.block_size if block is None else block
        if grid is None:
            size_name = next((n for n in _SIZE_NAMES if n in bound
                              and not self.params[names.index(n)].pointer), None)
            if size_name is None:
                raise TypeError(f"{self.name}(): pass grid= (no size parameter among "
                                f"{', '.join(names)} to derive it from)")
            threads = block if isinstance(block, int) else int(np.prod(block))
            grid = max(1, -(-int(bound[size_name]) // threads))
        target = stream if stream is not None else stream_for_runtime(self._runtime)
        for array, writable in arrays:
            touch(target, array, written=array if writable else None)
        self._runtime.activate()
        drv.launch_kernel(self._function, grid, block, packed, shared_mem, target.handle)

    def __repr__(self) -> str:
        signature = ", ".join(f"{p.ctype} {p.name}" for p in self.params)
        return f"<pygpukit.JITKernel {self.name}({signature})>"


class JITModule:
    """Every kernel of a source; ``module["name"]`` or ``module.name`` gives a JITKernel."""

    def __init__(self, kernels: dict[str, JITKernel]) -> None:
        self._kernels = kernels

    def __getitem__(self, name: str) -> JITKernel:
        try:
            return self._kernels[name]
        except KeyError:
            raise KeyError(f"no kernel {name!r}; kernels: {', '.join(self._kernels)}") from None

    def __getattr__(self, name: str) -> JITKernel:
        try:
            return self._kernels[name]
        except KeyError:
            raise AttributeError(name) from None

    def __iter__(self) -> Any:
        return iter(self._kernels)


def _nvrtc() -> Any:
    try:
        import pygpukit_nvrtc
    except ImportError:
        raise ImportError(f"gp.jit needs NVRTC: {_INSTALL_HINT}") from None
    return pygpukit_nvrtc


def _load(runtime: Any, result: Any, nvrtc: Any) -> Any:
    import pygpukit_driver as drv

    runtime.activate()
    try:
        return drv.Module.load_data(result.binary)
    except drv.CudaError as exc:
        if exc.code == 222:  # CUDA_ERROR_UNSUPPORTED_PTX_VERSION
            version = drv.driver_version()
            major, minor = nvrtc.version()
            raise RuntimeError(
                f"the driver (CUDA {version // 1000}.{version % 1000 // 10}) cannot load PTX "
                f"from NVRTC {major}.{minor}: pin nvidia-cuda-nvrtc to the driver's version, "
                f"e.g. pip install 'nvidia-cuda-nvrtc=={version // 1000}.{version % 1000 // 10}.*'"
            ) from exc
        raise


def jit(source: str, func: str | None = None, *, options: Any = (), block_size: int = 256,
        device: Any = None, cache: bool = True) -> Any:
    """Compile CUDA C++ ``source`` for the current GPU and return a callable kernel.

    Parameters
    ----------
    source
        CUDA C++ with one or more ``__global__`` functions (``cuda_fp16.h``/``cuda_bf16.h``
        may be included).
    func
        The kernel to return, e.g. ``"scale"`` or a template instantiation ``"axpy<float>"``;
        if omitted, a :class:`JITModule` of every kernel is returned.
    options
        Extra NVRTC options.
    block_size
        Threads per block when ``block=`` is not given at the call.
    device
        Device index or :class:`~pygpukit.Device`; the current device if omitted.
    cache
        Use the on-disk compile cache.

    Raises
    ------
    ImportError
        Without the ``jit`` extra (the message says ``pip install pygpukit[jit]``).
    pygpukit.BackendUnavailableError
        On the CPU simulation backend, which cannot run CUDA C++.
    pygpukit_nvrtc.CompileError
        With NVRTC's log, when the source does not compile.
    """
    import pygpukit_driver as drv
    from pygpukit._backend import get_backend
    from pygpukit._device import runtime_for

    nvrtc = _nvrtc()
    if get_backend().name != "cuda":
        raise BackendUnavailableError("gp.jit needs the CUDA backend: the CPU simulation cannot "
                                      "run CUDA C++")
    runtime = runtime_for(device)
    kernels = parse_kernels(source)
    if not kernels:
        raise ValueError("source: no __global__ function found")
    wanted = [func] if func is not None else list(kernels)
    plans = []
    for expr in wanted:
        base = expr.split("<", 1)[0].strip()
        if base not in kernels:
            raise ValueError(f"func: no kernel {base!r} in the source (found: "
                             f"{', '.join(kernels)})")
        tparams, ptext = kernels[base]
        targs = [t.strip() for t in expr[len(base):].strip("<> ").split(",") if t.strip()]
        if tparams and len(targs) != len(tparams):
            raise ValueError(f"func: {base} is a template over {', '.join(tparams)}; name an "
                             f"instantiation such as {base}<float>")
        plans.append((expr, base, _parse_params(ptext, dict(zip(tparams, targs, strict=False)))))
    extern_c = {m.group("name") for m in _KERNEL.finditer(source) if 'extern "C"' in m.group(0)}
    expressions = [expr for expr, base, _ in plans if base not in extern_c]
    major, minor = runtime.compute_capability
    result = nvrtc.compile(source, name_expressions=expressions, options=list(options),
                           arch=major * 10 + minor, cache=cache,
                           cache_tag=f"driver={drv.driver_version()}")
    module = _load(runtime, result, nvrtc)
    compiled = {}
    for expr, base, params in plans:
        symbol = result.lowered_names.get(expr, base)
        compiled[expr] = JITKernel(module, module.get_function(symbol), expr, params,
                                   block_size, runtime)
    return compiled[func] if func is not None else JITModule(compiled)
