"""``gp.jit``: compile CUDA C++ at run time with NVRTC and launch it (``pygpukit[jit]``).

The kernel's parameters are parsed from its signature, so calls take positional or keyword
arguments by name; scalars are converted to the declared C type and a GPUArray becomes its
device pointer (its dtype checked against the pointer type).  The grid follows from the
size-like parameter (``n``) and the block size unless ``grid=`` is given.  Code is compiled to
cubin for the device's exact ``sm_XY`` and cached on disk across processes.
"""

from __future__ import annotations

import operator
import re
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

from pygpukit import _fastpath, _spill
from pygpukit._array import GPUArray
from pygpukit._errors import BackendUnavailableError
from pygpukit._stream import stream_for_runtime
from pygpukit._transfer import touch

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
# Compiled at import: a fresh process's first gp.jit (a cache hit) should not compile regexes.
_SPACES = re.compile(r"\s+")
_TYPE_AND_NAME = re.compile(r"(?P<type>.*?)\s*(?P<name>\w+)")
_CONST = re.compile(r"\bconst\b")


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
        raw = _SPACES.sub(" ", raw.replace("*", " * ")).strip()
        match = _TYPE_AND_NAME.fullmatch(raw)
        if not match or not match.group("type").strip():
            raise ValueError(f"cannot parse kernel parameter {raw!r}")
        ctype, name = match.group("type").strip(), match.group("name")
        pointer = "*" in ctype
        writable = not _CONST.search(ctype.split("*")[0])
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
    return _scan(source)[0]


def _scan(source: str) -> tuple[dict[str, tuple[list[str], str]], set[str]]:
    """:func:`parse_kernels`, and the names declared ``extern "C"``, in one pass."""
    found, extern_c = {}, set()
    for m in _KERNEL.finditer(source):
        tparams = [t.split()[-1] for t in (m.group("tparams") or "").split(",") if t.strip()]
        found[m.group("name")] = (tparams, m.group("params"))
        if 'extern "C"' in m.group(0):
            extern_c.add(m.group("name"))
    return found, extern_c


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


# Launcher type codes: pointers, the struct formats the Launcher packs itself, and the 16-bit
# floats, passed as their bit pattern ('H') after a conversion in Python.
_LAUNCH_CODES = frozenset("?bBhHiIqQfd")
#: The call's keyword-only launch options (a parameter of that name cannot be passed by name).
_LAUNCH_OPTIONS = frozenset(("grid", "block", "shared_mem", "stream"))
_MAX_LAUNCHERS = 16  # prepared launches kept per kernel (distinct grid/block/shared/stream)


def _half_bits(dtype: np.dtype[Any]) -> Any:
    def convert(value: Any) -> int:
        return int(np.asarray(value, dtype=dtype).view(np.uint16))
    return convert


def _note_use(target: Any, array: GPUArray, writable: bool) -> None:
    """Record a launch's use of ``array`` on ``target`` (for the allocator and to_numpy).

    :func:`touch` is skipped when the block already names that stream (the common case).
    """
    block = array._block
    if block.stream is not target or (writable and block.writer is not target):
        touch(target, array, written=array if writable else None)


class JITKernel:
    """A compiled kernel; call it with the kernel's arguments (by position or by name).

    Keyword-only launch options: ``grid``, ``block`` (ints or up to 3-tuples), ``shared_mem``
    (bytes of dynamic shared memory), ``stream`` (a :class:`~pygpukit.Stream`).

    A call goes through a prepared ``pygpukit_driver.Launcher`` (one per grid, block, shared
    memory and stream, kept on the kernel), which packs the arguments in C and launches with
    the GIL released; how each parameter is passed is worked out once, when the kernel is made.
    """

    def __init__(self, module: Any, function: Any, name: str, params: list[Param],
                 block_size: int, runtime: Any) -> None:
        self._module, self._function = module, function
        self.name, self.params, self.block_size = name, params, block_size
        self._runtime = runtime
        self._names = [p.name for p in params]
        self._index = {n: i for i, n in enumerate(self._names)}
        self._nparams = len(params)
        # Pointer parameters: (index, parameter, accepted dtype or None, written by the kernel).
        self._pointers = tuple((i, p, p.pointee, p.writable) for i, p in enumerate(params)
                               if p.pointer)
        # Scalars the Launcher cannot pack itself (__half, __nv_bfloat16): (index, converter).
        self._converts: tuple[tuple[int, Any], ...] = tuple(
            (i, _half_bits(p.scalar)) for i, p in enumerate(params)
            if not p.pointer and isinstance(p.scalar, np.dtype))
        self._arg_types = "".join(
            "P" if p.pointer else "H" if isinstance(p.scalar, np.dtype) else str(p.scalar)
            for p in params)
        assert all(c == "P" or c in _LAUNCH_CODES for c in self._arg_types)
        self._size_index = next((self._index[n] for n in _SIZE_NAMES if n in self._index
                                 and not params[self._index[n]].pointer), None)
        import pygpukit_driver as drv

        context = getattr(runtime, "_context", None)
        self._context_handle = context.handle if context is not None else None
        self._current_context = drv.current_context_handle
        self._launchers: dict[tuple[Any, ...], Any] = {}
        self._fast = drv.FastOp(int(_fastpath.Kind.JIT), name, self._call_default,
                                self._fast_plan)

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        """Match positional and keyword arguments to the parameters, in parameter order."""
        names = self._names
        if len(args) > self._nparams:
            raise TypeError(f"{self.name}() takes {len(names)} arguments; got {len(args)}")
        missing = object()
        values: list[Any] = [*args, *([missing] * (self._nparams - len(args)))]
        for key, value in kwargs.items():
            i = self._index.get(key)
            if i is None:
                raise TypeError(f"{self.name}() has no parameter {key!r} (parameters: "
                                f"{', '.join(names)})")
            if values[i] is not missing:
                raise TypeError(f"{self.name}() got two values for {key!r}")
            values[i] = value
        absent = [n for n, v in zip(names, values, strict=True) if v is missing]
        if absent:
            raise TypeError(f"{self.name}() missing arguments: {', '.join(absent)}")
        return values

    def _launcher(self, key: tuple[Any, ...]) -> Any:
        import pygpukit_driver as drv

        grid, block, shared_mem, target = key
        launcher = drv.Launcher(self._function, grid, block, self._arg_types,
                                shared_mem, target.handle)
        if len(self._launchers) >= _MAX_LAUNCHERS:
            self._launchers.clear()  # bounded: a launcher keeps its stream alive
        self._launchers[key] = launcher
        return launcher

    def _prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any, block: Any,
                 shared_mem: int, stream: Any) -> tuple[Any, list[Any], Any, list[Any]]:
        """Launcher, packed values, target stream and (array, written) pairs of one call."""
        if not kwargs:
            values = list(args) if len(args) == self._nparams else self._bind(args, kwargs)
        elif len(args) + len(kwargs) == self._nparams:
            # Every remaining parameter named once (the usual keyword call): no checks needed.
            try:
                values = [*args, *[kwargs[n] for n in self._names[len(args):]]]
            except KeyError:
                values = self._bind(args, kwargs)
        else:
            values = self._bind(args, kwargs)
        runtime = self._runtime
        target = stream if stream is not None else stream_for_runtime(runtime)
        if _spill.active:  # spilled arrays back before any address is read
            _spill.use(target, tuple(v for v in values
                                     if isinstance(v, GPUArray) and v._rt is runtime), None,
                       kept=False)
        arrays: list[Any] = []
        for i, param, pointee, writable in self._pointers:
            value = values[i]
            if isinstance(value, GPUArray):
                if value._rt is not runtime:
                    raise ValueError(f"{param.name}: array is on {value._rt.describe()}, the "
                                     f"kernel on {runtime.describe()}")
                if pointee is not None and value.dtype != pointee:
                    raise TypeError(f"{param.name}: the kernel takes {param.ctype}, the array "
                                    f"is {value.dtype.name} (expected {pointee.name})")
                _note_use(target, value, writable)
                values[i] = value._block.address + value._offset
                arrays.append((value, writable))
            elif not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{param.name}: expected a GPUArray or a device pointer (int) "
                                f"for {param.ctype}; got {type(value).__name__}")
        if block is None:
            block = self.block_size
        elif type(block) is list:
            block = tuple(block)
        if grid is None:
            if self._size_index is None:
                raise TypeError(f"{self.name}(): pass grid= (no size parameter among "
                                f"{', '.join(self._names)} to derive it from)")
            threads = block if type(block) is int else int(np.prod(block))
            grid = max(1, -(-int(values[self._size_index]) // threads))
        elif type(grid) is list:
            grid = tuple(grid)
        for i, convert in self._converts:
            try:
                values[i] = convert(values[i])
            except (TypeError, ValueError) as exc:
                param = self.params[i]
                raise TypeError(f"{param.name}: cannot pass {values[i]!r} as {param.ctype} "
                                f"({exc})") from None
        key = (grid, block, shared_mem, target)
        launcher = self._launchers.get(key)
        if launcher is None:
            launcher = self._launcher(key)
        return launcher, values, target, arrays

    if TYPE_CHECKING:
        def __call__(self, *args: Any, grid: Any = None, block: Any = None,
                     shared_mem: int = 0, stream: Any = None, **kwargs: Any) -> None: ...
    else:
        # The call is the kernel's pygpukit_driver.FastOp itself, reached through C only (a
        # property whose getter is attrgetter): arguments matched by position or by name and
        # packed in C, the grid from the size parameter, without a Python frame.  Anything
        # else (launch options, a mismatch, an error to explain) goes to _call_default.
        __call__ = property(operator.attrgetter("_fast"),
                            doc="Launch the kernel (see the class docstring).")

    def _call_default(self, *args: Any, grid: Any = None, block: Any = None,
                      shared_mem: int = 0, stream: Any = None, **kwargs: Any) -> None:
        """A call the C fast path declined: launch options given, or anything unusual."""
        if (grid is None and block is None and stream is None and not shared_mem
                and self._call_fast(args, kwargs)):
            return
        self._call_with(args, kwargs, grid, block, shared_mem, stream)

    def _call_with(self, args: tuple[Any, ...], kwargs: dict[str, Any], grid: Any, block: Any,
                   shared_mem: int, stream: Any) -> None:
        """The checking path: every argument converted and checked, errors name the parameter."""
        launcher, values, target, _ = self._prepare(args, kwargs, grid, block, shared_mem,
                                                    stream)
        if self._context_handle is None or self._current_context() != self._context_handle:
            self._runtime.activate()
        if target._before_launch is not None:  # the stream's before-launch hook (pacing)
            target._before_launch()
        try:
            launcher(*values)
        except (TypeError, ValueError, OverflowError) as exc:
            self._explain(exc, args, kwargs)
            raise

    def _fast_plan(self, *_: Any) -> dict[str, Any] | None:
        """The C fast path's plan of this kernel's calls (None: always the Python path)."""
        import pygpukit_driver as drv

        if (self._size_index is None or self._converts or self._nparams > 32
                or self._context_handle is None
                or not _LAUNCH_OPTIONS.isdisjoint(self._names)):
            # A parameter named like a launch option is passed by keyword as that option.
            return None
        plan = _fastpath.runtime_part(self._runtime, None)
        if plan is None:
            return None
        plan.update(
            launcher=drv.Launcher(self._function, 1, self.block_size, self._arg_types),
            names=tuple(self._names),
            pointees=tuple(p.pointee if p.pointer else None for p in self.params),
            param_kinds=tuple((2 if p.writable else 1) if p.pointer else 0
                              for p in self.params),
            size_index=self._size_index, block_size=self.block_size, runtime=self._runtime,
            context=self._context_handle, op=0, out_dtype=None, out_itemsize=0, out_code=0,
            codes=[], conv=[], max_n=0)
        return plan

    def _call_fast(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Launch the common call in one pass, or return False.

        The common call: every parameter given once, arrays of this device, the grid from the
        size parameter, the current stream.  False when it is not that call, or when anything
        is off: :meth:`__call__` then takes the checking path, which also raises the errors.
        """
        n = len(args)
        size_index = self._size_index
        if n + len(kwargs) != self._nparams or size_index is None or self._converts:
            return False
        if kwargs:
            try:
                values = [*args, *map(kwargs.__getitem__, self._names[n:])]
            except KeyError:
                return False
        else:
            values = list(args)
        runtime = self._runtime
        target = stream_for_runtime(runtime)
        if _spill.active:  # spilled arrays back before any address is read
            _spill.use(target, tuple(v for v in values
                                     if type(v) is GPUArray and v._rt is runtime), None,
                       kept=False)
        for i, _, pointee, writable in self._pointers:
            value = values[i]
            if (type(value) is not GPUArray or value._rt is not runtime
                    or (pointee is not None and value.dtype != pointee)):
                return False
            block = value._block
            if block.stream is not target or (writable and block.writer is not target):
                touch(target, value, written=value if writable else None)
            values[i] = block.address + value._offset
        size = values[size_index]
        if type(size) is not int or size < 0:
            return False
        if self._context_handle is None or self._current_context() != self._context_handle:
            runtime.activate()
        if target._before_launch is not None:  # the stream's before-launch hook (pacing)
            target._before_launch()
        key = (max(1, -(-size // self.block_size)), self.block_size, 0, target)
        launcher = self._launchers.get(key)
        if launcher is None:
            launcher = self._launcher(key)
        try:
            launcher(*values)
        except (TypeError, ValueError, OverflowError):
            return False  # the checking path raises, naming the parameter
        return True

    def bind(self, *args: Any, grid: Any = None, block: Any = None, shared_mem: int = 0,
             stream: Any = None, **kwargs: Any) -> BoundLaunch:
        """Check and pack the arguments once; return a launch to repeat at the driver's cost.

        Takes what a call takes.  The result launches the kernel with these very arguments on
        the stream chosen now (the current one unless ``stream=`` is given) each time it is
        called, skipping argument matching and conversion; the arrays are kept alive by it.

        Raises
        ------
        TypeError, ValueError
            As a call does, for arguments that do not fit the kernel's parameters.
        """
        launcher, values, target, arrays = self._prepare(args, kwargs, grid, block, shared_mem,
                                                         stream)
        # A call learns of a scalar that does not fit from the Launcher; check them now.
        for param, value in zip(self.params, self._bind(args, kwargs), strict=True):
            if not param.pointer:
                _pack(param, value, self._runtime)
        return BoundLaunch(self, launcher, tuple(values), target, arrays)

    def _explain(self, exc: BaseException, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        """Re-raise a Launcher's argument error naming the parameter, as packing it would."""
        import pygpukit_driver as drv

        if isinstance(exc, drv.CudaError):
            return
        values = self._bind(args, kwargs)
        for param, value in zip(self.params, values, strict=True):
            if not param.pointer:
                _pack(param, value, self._runtime)

    def __repr__(self) -> str:
        signature = ", ".join(f"{p.ctype} {p.name}" for p in self.params)
        return f"<pygpukit.JITKernel {self.name}({signature})>"


class BoundLaunch:
    """A kernel launch with its arguments packed, made by :meth:`JITKernel.bind`.

    Calling it enqueues the kernel again on its stream (its arrays' stream records are kept
    up to date, as a call's are); nothing is converted or matched any more.
    """

    __slots__ = ("_activate", "_arrays", "_context", "_current", "_launcher", "_values",
                 "kernel", "stream")

    def __init__(self, kernel: JITKernel, launcher: Any, values: tuple[Any, ...], stream: Any,
                 arrays: list[Any]) -> None:
        self.kernel, self.stream = kernel, stream
        self._launcher, self._values, self._arrays = launcher, values, tuple(arrays)
        for array, _ in self._arrays:  # their addresses are packed: no spill while bound
            _spill.pin(array, "bound in a JIT launch")
        self._context, self._current = kernel._context_handle, kernel._current_context
        self._activate = kernel._runtime.activate

    def __call__(self) -> None:
        target = self.stream
        for array, writable in self._arrays:
            _note_use(target, array, writable)
        if self._context is None or self._current() != self._context:
            self._activate()
        if target._before_launch is not None:  # the stream's before-launch hook (pacing)
            target._before_launch()
        self._launcher(*self._values)

    def __del__(self) -> None:
        for array, _ in getattr(self, "_arrays", ()):
            _spill.unpin(array)

    def __repr__(self) -> str:
        return f"<pygpukit.BoundLaunch of {self.kernel.name}>"


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
    kernels, extern_c = _scan(source)
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
