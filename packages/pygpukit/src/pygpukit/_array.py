"""GPUArray: an n-dimensional strided view of device memory (or of host memory, simulated)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pygpukit import _dtypes, _layout, _spill
from pygpukit._dtypes import normalize_dtype

if TYPE_CHECKING:
    from pygpukit._allocator import Block
    from pygpukit._backend import Runtime
    from pygpukit._device import Device
    from pygpukit._stream import Stream


class ComplexOps(Protocol):
    """Complex dtypes' operations, composed from the real kernels (``pygpukit._complex``).

    The single place where complex operands leave the real path: the elementwise, reduction,
    copy, fill, cast, product and advanced indexing functions hand them here before anything
    reaches the op table's kernel plans, so no kernel ever sees a complex dtype.
    """

    def binary(self, name: str, a: Any, b: Any, out: GPUArray | None) -> GPUArray: ...
    def unary(self, name: str, x: GPUArray, out: GPUArray | None) -> GPUArray: ...
    def where(self, cond: GPUArray, a: Any, b: Any, out: GPUArray | None) -> GPUArray: ...
    def reduce(self, name: str, x: GPUArray, axis: Any, keepdims: bool, ddof: float,
               out: GPUArray | None) -> GPUArray: ...
    def copy(self, src: GPUArray, dst: GPUArray) -> None: ...
    def fill(self, dst: GPUArray, value: Any) -> None: ...
    def astype(self, x: GPUArray, dtype: np.dtype[Any]) -> GPUArray: ...
    def matmul(self, a: GPUArray, b: GPUArray, out: GPUArray | None,
               precision: str) -> GPUArray: ...
    def getitem(self, x: GPUArray, key: Any) -> GPUArray: ...
    def setitem(self, x: GPUArray, key: Any, value: Any) -> None: ...
    def nonzero(self, x: GPUArray) -> tuple[GPUArray, ...]: ...
    def imag(self, x: GPUArray) -> GPUArray: ...
    def cumprod(self, x: GPUArray, axis: int) -> GPUArray: ...
    def unique(self, x: GPUArray, return_index: bool, return_inverse: bool,
               return_counts: bool) -> Any: ...


class _Hooks:
    """What ``GPUArray``'s methods call in the layers above: set once by ``pygpukit._ops``.

    Array data and views live here, at the bottom; transfers, math, products and interop are
    implemented above and reached through these slots, so no module below the ops layer
    imports one above it (the import-linter contract in pyproject.toml).
    """

    assign: Callable[[GPUArray, Any], None]
    astype: Callable[[GPUArray, np.dtype[Any]], GPUArray]
    to_numpy: Callable[[GPUArray], np.ndarray[Any, Any]]
    to_device: Callable[[GPUArray, Any], GPUArray]
    export_capsule: Callable[..., Any]
    device_tuple: Callable[[GPUArray], tuple[int, int]]
    cuda_array_interface: Callable[[GPUArray], dict[str, Any]]
    matmul: Callable[..., GPUArray]
    # ``dst[...] = src`` where one side is FP8 and the dtypes differ (pygpukit._fp8)
    fp8_cast_into: Callable[[GPUArray, GPUArray], None]
    binary: Callable[..., GPUArray]
    small_binary: Callable[[str, Any, Any], GPUArray | None]
    unary: Callable[[str, GPUArray], GPUArray]
    reduce: Callable[..., GPUArray]
    # sort and scan methods (set by pygpukit._sorting)
    sort: Callable[..., None]
    argsort: Callable[..., GPUArray]
    cumsum: Callable[..., GPUArray]
    cumprod: Callable[..., GPUArray]
    # advanced indexing (pygpukit._indexing)
    getitem: Callable[[GPUArray, Any], GPUArray]
    setitem: Callable[[GPUArray, Any, Any], None]
    nonzero: Callable[[GPUArray], tuple[GPUArray, ...]]
    # NumPy's protocols (set by pygpukit._protocols) and the Array API namespace (by
    # pygpukit.array_api).
    array_ufunc: Callable[..., Any]
    array_function: Callable[..., Any]
    array_namespace: Callable[[GPUArray, str | None], Any]
    shift: Callable[[str, Any, Any, GPUArray | None], GPUArray]  # by pygpukit._elementwise
    complex: ComplexOps  # by pygpukit._complex


hooks = _Hooks()


class GPUArray:
    """An n-dimensional array on a GPU (or on the CPU simulation backend).

    Arrays are made by the creation functions (:func:`~pygpukit.zeros`,
    :func:`~pygpukit.from_numpy`, :func:`~pygpukit.asarray`, ...), not by calling this class.
    Views (slicing, ``.T``, :meth:`reshape`, ...) share memory with their base.  Operations
    enqueue work on the current stream and return at once; only reading data on the host
    (:meth:`to_numpy`, :meth:`item`, :meth:`tolist`, ``print``) waits, and only for the stream
    that last wrote this array.

    Attributes
    ----------
    shape
        Extent of each dimension.
    strides
        Bytes to step in each dimension (NumPy's convention; may be 0 or negative for views).
    dtype
        Element type (a NumPy dtype; bfloat16 is ``ml_dtypes.bfloat16``).
    """

    __slots__ = ("__weakref__", "_block", "_contig", "_offset", "_rt", "dtype", "shape",
                 "strides")

    __array_priority__ = 100

    _rt: Runtime

    def __init__(self, runtime: Runtime, block: Block, offset: int, shape: tuple[int, ...],
                 strides: tuple[int, ...], dtype: np.dtype[Any],
                 contiguous: bool | None = None) -> None:
        self._rt = runtime
        self._block = block
        self._offset = offset
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        # C-contiguity, fixed when the array or view is made (ops test it on every call).
        self._contig = (_layout.is_c_contiguous(shape, strides, dtype.itemsize)
                        if contiguous is None else contiguous)

    # -- metadata ------------------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of element data (``size * itemsize``)."""
        return self.size * self.dtype.itemsize

    @property
    def device(self) -> Device:
        """The :class:`~pygpukit.Device` holding the data."""
        from pygpukit._device import Device

        return Device(self._rt.index)

    @property
    def backend(self) -> str:
        """``"cuda"`` or ``"cpu"`` (the simulation)."""
        from pygpukit._backend import get_backend

        return get_backend().name

    @property
    def data_ptr(self) -> int:
        """Address of element ``[0, ..., 0]`` (a device pointer on the CUDA backend).

        An array of a spill-enabled partition that was spilled to host memory is brought back
        first (a pointer that must stay valid needs DLPack or ``__cuda_array_interface__``,
        which keep the array on the device).
        """
        block = self._block
        if not block.address and block.tracked:
            _spill.ensure(self, "data_ptr read")
        return block.address + self._offset

    def is_contiguous(self) -> bool:
        """Whether the elements are laid out in C order without gaps."""
        return self._contig

    # -- views ---------------------------------------------------------------------------------
    def _view(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int = 0) -> GPUArray:
        return GPUArray(self._rt, self._block, self._offset + offset, shape, strides, self.dtype)

    def __getitem__(self, key: Any) -> GPUArray:
        try:
            shape, strides, offset = _layout.index_view(self.shape, self.strides, key)
        except _layout.AdvancedIndex:  # integer arrays, masks: a gather (a new array)
            if self.dtype.kind == "c":
                return hooks.complex.getitem(self, key)
            return hooks.getitem(self, key)
        return self._view(shape, strides, offset)

    def __setitem__(self, key: Any, value: Any) -> None:
        try:
            shape, strides, offset = _layout.index_view(self.shape, self.strides, key)
        except _layout.AdvancedIndex:  # integer arrays, masks: a scatter
            if self.dtype.kind == "c":
                hooks.complex.setitem(self, key, value)
            else:
                hooks.setitem(self, key, value)
            return
        hooks.assign(self._view(shape, strides, offset), value)

    def nonzero(self) -> tuple[GPUArray, ...]:
        """Indices of the non-zero elements, one int64 array per dimension (as NumPy)."""
        if self.dtype.kind == "c":
            return hooks.complex.nonzero(self)
        return hooks.nonzero(self)

    def reshape(self, *shape: Any) -> GPUArray:
        """Return the array with a new shape: a view when NumPy would give one, else a copy.

        One dimension may be -1.  Accepts ``reshape(2, 3)`` and ``reshape((2, 3))``.
        """
        requested = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        new_shape = _layout.resolve_reshape(self.size, tuple(int(d) for d in requested))
        strides = _layout.reshape_strides(self.shape, self.strides, new_shape, self.itemsize)
        if strides is not None:
            return self._view(new_shape, strides)
        return self.copy().reshape(new_shape)

    def ravel(self) -> GPUArray:
        """Return a 1-D array (a view when possible)."""
        return self.reshape(-1)

    def flatten(self) -> GPUArray:
        """Return a 1-D copy."""
        return self.copy().reshape(-1)

    def transpose(self, *axes: Any) -> GPUArray:
        """Permute the dimensions (reversed when ``axes`` is omitted); a view."""
        if not axes or axes == (None,):
            order = tuple(range(self.ndim))[::-1]
        else:
            raw = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
            order = tuple(_layout.normalize_axis(a, self.ndim) for a in raw)
            if sorted(order) != list(range(self.ndim)):
                raise ValueError(f"axes {tuple(raw)} don't match an array of {self.ndim} dims")
        return self._view(tuple(self.shape[a] for a in order),
                          tuple(self.strides[a] for a in order))

    @property
    def T(self) -> GPUArray:  # noqa: N802 (NumPy's name)
        """The transposed view (dimensions reversed)."""
        return self.transpose()

    def swapaxes(self, axis1: int, axis2: int) -> GPUArray:
        """Swap two dimensions; a view."""
        a = _layout.normalize_axis(axis1, self.ndim, argument="axis1")
        b = _layout.normalize_axis(axis2, self.ndim, argument="axis2")
        order = list(range(self.ndim))
        order[a], order[b] = order[b], order[a]
        return self.transpose(order)

    def squeeze(self, axis: int | tuple[int, ...] | None = None) -> GPUArray:
        """Drop dimensions of size 1 (all of them, or those in ``axis``); a view."""
        if axis is None:
            drop = {i for i, d in enumerate(self.shape) if d == 1}
        else:
            drop = {_layout.normalize_axis(a, self.ndim)
                    for a in (axis if isinstance(axis, tuple) else (axis,))}
            for a in drop:
                if self.shape[a] != 1:
                    raise ValueError(
                        f"cannot select an axis to squeeze out which has size not equal to "
                        f"one (axis {a} has size {self.shape[a]})"
                    )
        keep = [i for i in range(self.ndim) if i not in drop]
        return self._view(tuple(self.shape[i] for i in keep), tuple(self.strides[i] for i in keep))

    def expand_dims(self, axis: int | tuple[int, ...]) -> GPUArray:
        """Insert dimensions of size 1 at ``axis`` (positions in the result); a view."""
        axes = axis if isinstance(axis, tuple) else (axis,)
        ndim = self.ndim + len(axes)
        where = {_layout.normalize_axis(a, ndim) for a in axes}
        if len(where) != len(axes):
            raise ValueError("repeated axis in expand_dims")
        shape, strides = iter(self.shape), iter(self.strides)
        new_shape = tuple(1 if i in where else next(shape) for i in range(ndim))
        new_strides = tuple(0 if i in where else next(strides) for i in range(ndim))
        return self._view(_layout.as_shape(new_shape), new_strides)

    # -- complex parts -------------------------------------------------------------------------
    @property
    def real(self) -> GPUArray:
        """The real part.

        For a complex dtype a view of the same memory (writable, as NumPy's ``.real``) with
        the float dtype of its parts; for a real dtype the array itself.
        """
        if self.dtype.kind != "c":
            return self
        part = np.dtype(f"f{self.itemsize // 2}")
        return GPUArray(self._rt, self._block, self._offset, self.shape, self.strides, part)

    @property
    def imag(self) -> GPUArray:
        """The imaginary part.

        For a complex dtype a view of the same memory (writable); for a real dtype a new array
        of zeros of the same dtype (NumPy gives a read-only one).
        """
        if self.dtype.kind != "c":
            return hooks.complex.imag(self)
        half = self.itemsize // 2
        return GPUArray(self._rt, self._block, self._offset + half, self.shape, self.strides,
                        np.dtype(f"f{half}"))

    def conj(self) -> GPUArray:
        """The complex conjugate (a new array; a copy for real dtypes)."""
        return hooks.complex.unary("conjugate", self, None)

    conjugate = conj

    # -- data ----------------------------------------------------------------------------------
    def astype(self, dtype: Any, *, copy: bool = True) -> GPUArray:
        """Convert to ``dtype`` on the device (NumPy's casting rules, as ``numpy.astype``).

        With ``copy=False`` the array itself is returned when it already has that dtype.
        """
        target = normalize_dtype(dtype)
        if target == self.dtype and not copy:
            return self
        return hooks.astype(self, target)

    def copy(self) -> GPUArray:
        """Return a C-contiguous copy on the same device."""
        return self.astype(self.dtype, copy=True)

    def to_numpy(self) -> np.ndarray[Any, Any]:
        """Copy to a new NumPy array, waiting for the work that writes this array only."""
        return hooks.to_numpy(self)

    def item(self) -> Any:
        """The single element as a Python scalar (waits for the data)."""
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self.to_numpy().item()

    def tolist(self) -> Any:
        """The data as nested Python lists (waits for the data)."""
        return self.to_numpy().tolist()

    def to(self, device: Any) -> GPUArray:
        """Return a copy on ``device`` (this array itself if it is there already)."""
        return hooks.to_device(self, device)

    def record_stream(self, stream: Stream) -> None:
        """Declare that work on ``stream`` uses this array.

        Its memory is then not reused for another allocation until that work has finished
        (as ``torch.Tensor.record_stream``).
        """
        self._block.record_stream(stream)

    # -- interop -------------------------------------------------------------------------------
    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: Any = None, copy: bool | None = None) -> Any:
        return hooks.export_capsule(self, stream=stream, max_version=max_version,
                              dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return hooks.device_tuple(self)

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return hooks.cuda_array_interface(self)

    # NEP 13 / NEP 18: NumPy's ufuncs and functions run on the device through pygpukit's own
    # functions (TypeError naming what is not implemented; never a copy to the host).
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return hooks.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return hooks.array_function(func, types, args, kwargs)

    # -- the Array API standard (pygpukit.array_api) ---------------------------------------------
    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        """The Array API namespace of these arrays, :mod:`pygpukit.array_api`."""
        return hooks.array_namespace(self, api_version)

    def to_device(self, device: Any, /, *, stream: Any = None) -> GPUArray:
        """A copy on ``device`` (this array itself if it is there already)."""
        if stream is not None:
            raise ValueError("to_device: stream= is not supported; the copy runs on the "
                             "current stream")
        return hooks.to_device(self, device)

    def __lshift__(self, other: object) -> GPUArray:
        return _shift("bitwise_left_shift", self, other)

    def __rlshift__(self, other: object) -> GPUArray:
        return _shift("bitwise_left_shift", other, self)

    def __ilshift__(self, other: object) -> GPUArray:
        return _shift("bitwise_left_shift", self, other, out=self)

    def __rshift__(self, other: object) -> GPUArray:
        return _shift("bitwise_right_shift", self, other)

    def __rrshift__(self, other: object) -> GPUArray:
        return _shift("bitwise_right_shift", other, self)

    def __irshift__(self, other: object) -> GPUArray:
        return _shift("bitwise_right_shift", self, other, out=self)

    def __index__(self) -> int:
        if self.dtype.kind not in "iu" or self.ndim != 0:
            raise TypeError("only 0-d integer arrays can be converted to an index; got "
                            f"shape {self.shape} and dtype {self.dtype.name}")
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    @property
    def mT(self) -> GPUArray:  # noqa: N802 (the standard's name)
        """The last two dimensions swapped (a view)."""
        if self.ndim < 2:
            raise ValueError(f"mT needs at least 2 dimensions; the array has {self.ndim}")
        return self.swapaxes(-1, -2)

    # -- operators -----------------------------------------------------------------------------
    def __add__(self, other: object) -> GPUArray:
        return _binop("add", self, other)

    def __radd__(self, other: object) -> GPUArray:
        return _binop("add", other, self)

    def __matmul__(self, other: object) -> GPUArray:
        if not isinstance(other, GPUArray):
            return NotImplemented
        return hooks.matmul(self, other)

    def __rmatmul__(self, other: object) -> GPUArray:
        if not isinstance(other, GPUArray):
            return NotImplemented
        return hooks.matmul(other, self)

    def __imatmul__(self, other: object) -> GPUArray:
        if not isinstance(other, GPUArray):
            return NotImplemented
        return hooks.matmul(self, other, out=self)

    def __iadd__(self, other: object) -> GPUArray:
        return _binop("add", self, other, out=self)

    def __sub__(self, other: object) -> GPUArray:
        return _binop("subtract", self, other)

    def __rsub__(self, other: object) -> GPUArray:
        return _binop("subtract", other, self)

    def __isub__(self, other: object) -> GPUArray:
        return _binop("subtract", self, other, out=self)

    def __mul__(self, other: object) -> GPUArray:
        return _binop("multiply", self, other)

    def __rmul__(self, other: object) -> GPUArray:
        return _binop("multiply", other, self)

    def __imul__(self, other: object) -> GPUArray:
        return _binop("multiply", self, other, out=self)

    def __truediv__(self, other: object) -> GPUArray:
        return _binop("divide", self, other)

    def __rtruediv__(self, other: object) -> GPUArray:
        return _binop("divide", other, self)

    def __itruediv__(self, other: object) -> GPUArray:
        return _binop("divide", self, other, out=self)

    def __floordiv__(self, other: object) -> GPUArray:
        return _binop("floor_divide", self, other)

    def __rfloordiv__(self, other: object) -> GPUArray:
        return _binop("floor_divide", other, self)

    def __ifloordiv__(self, other: object) -> GPUArray:
        return _binop("floor_divide", self, other, out=self)

    def __mod__(self, other: object) -> GPUArray:
        return _binop("remainder", self, other)

    def __rmod__(self, other: object) -> GPUArray:
        return _binop("remainder", other, self)

    def __imod__(self, other: object) -> GPUArray:
        return _binop("remainder", self, other, out=self)

    def __pow__(self, other: object) -> GPUArray:
        if _squares(self, other):
            # NumPy's ``**`` computes ``x ** 2`` as ``square(x)`` (one rounding, and here a
            # bandwidth-bound kernel instead of pow's): the same result, and as fast as a copy.
            return hooks.unary("square", self)
        return _binop("power", self, other)

    def __rpow__(self, other: object) -> GPUArray:
        return _binop("power", other, self)

    def __ipow__(self, other: object) -> GPUArray:
        return _binop("power", self, other, out=self)

    def __and__(self, other: object) -> GPUArray:
        return _binop("bitwise_and", self, other)

    def __rand__(self, other: object) -> GPUArray:
        return _binop("bitwise_and", other, self)

    def __iand__(self, other: object) -> GPUArray:
        return _binop("bitwise_and", self, other, out=self)

    def __or__(self, other: object) -> GPUArray:
        return _binop("bitwise_or", self, other)

    def __ror__(self, other: object) -> GPUArray:
        return _binop("bitwise_or", other, self)

    def __ior__(self, other: object) -> GPUArray:
        return _binop("bitwise_or", self, other, out=self)

    def __xor__(self, other: object) -> GPUArray:
        return _binop("bitwise_xor", self, other)

    def __rxor__(self, other: object) -> GPUArray:
        return _binop("bitwise_xor", other, self)

    def __ixor__(self, other: object) -> GPUArray:
        return _binop("bitwise_xor", self, other, out=self)

    def __eq__(self, other: object) -> GPUArray:  # type: ignore[override]
        return _binop("equal", self, other)

    def __ne__(self, other: object) -> GPUArray:  # type: ignore[override]
        return _binop("not_equal", self, other)

    def __lt__(self, other: object) -> GPUArray:
        return _binop("less", self, other)

    def __le__(self, other: object) -> GPUArray:
        return _binop("less_equal", self, other)

    def __gt__(self, other: object) -> GPUArray:
        return _binop("greater", self, other)

    def __ge__(self, other: object) -> GPUArray:
        return _binop("greater_equal", self, other)

    __hash__ = None  # type: ignore[assignment]  # == is elementwise, as in NumPy

    def __neg__(self) -> GPUArray:
        return hooks.unary("negative", self)

    def __pos__(self) -> GPUArray:
        return self.copy()

    def __abs__(self) -> GPUArray:
        return hooks.unary("absolute", self)

    def __invert__(self) -> GPUArray:
        return hooks.unary("invert", self)

    # -- reductions (see pygpukit.sum ...) ------------------------------------------------------
    def sum(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, *,
            dtype: Any = None) -> GPUArray:
        """Sum over ``axis`` (see :func:`pygpukit.sum`); ``dtype``: cast to it first."""
        return _reduce("sum", self if dtype is None else self.astype(dtype), axis, keepdims)

    def prod(self, axis: int | tuple[int, ...] | None = None,
             keepdims: bool = False) -> GPUArray:
        """Product over ``axis``."""
        return _reduce("prod", self, axis, keepdims)

    def mean(self, axis: int | tuple[int, ...] | None = None,
             keepdims: bool = False) -> GPUArray:
        """Mean over ``axis``."""
        return _reduce("mean", self, axis, keepdims)

    def max(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> GPUArray:
        """Maximum over ``axis`` (NaN propagates)."""
        return _reduce("max", self, axis, keepdims)

    def min(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> GPUArray:
        """Minimum over ``axis`` (NaN propagates)."""
        return _reduce("min", self, axis, keepdims)

    def argmax(self, axis: int | None = None, keepdims: bool = False) -> GPUArray:
        """Index of the first maximum along ``axis`` (of the flattened array for None)."""
        return _reduce("argmax", self, axis, keepdims)

    def argmin(self, axis: int | None = None, keepdims: bool = False) -> GPUArray:
        """Index of the first minimum along ``axis`` (of the flattened array for None)."""
        return _reduce("argmin", self, axis, keepdims)

    def var(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, *,
            ddof: float = 0) -> GPUArray:
        """Variance over ``axis`` (divisor ``n - ddof``)."""
        return _reduce("var", self, axis, keepdims, ddof)

    def std(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False, *,
            ddof: float = 0) -> GPUArray:
        """Standard deviation over ``axis`` (divisor ``n - ddof``)."""
        return _reduce("std", self, axis, keepdims, ddof)

    def any(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> GPUArray:
        """Whether any element over ``axis`` is non-zero."""
        return _reduce("any", self, axis, keepdims)

    def all(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> GPUArray:
        """Whether every element over ``axis`` is non-zero."""
        return _reduce("all", self, axis, keepdims)

    # -- sort and scan (see pygpukit.sort ...) ---------------------------------------------------
    def sort(self, axis: int = -1, kind: str | None = None, *,
             stable: bool | None = None) -> None:
        """Sort in place along ``axis`` (as ``numpy.ndarray.sort``; see :func:`pygpukit.sort`)."""
        hooks.sort(self, axis, kind, stable=stable)

    def argsort(self, axis: int | None = -1, kind: str | None = None, *,
                stable: bool | None = None) -> GPUArray:
        """Indices that sort along ``axis``, stable (see :func:`pygpukit.argsort`)."""
        return hooks.argsort(self, axis, kind, stable=stable)

    def cumsum(self, axis: int | None = None, dtype: Any = None) -> GPUArray:
        """Cumulative sum along ``axis`` (see :func:`pygpukit.cumsum`)."""
        return hooks.cumsum(self, axis, dtype)

    def cumprod(self, axis: int | None = None, dtype: Any = None) -> GPUArray:
        """Cumulative product along ``axis`` (see :func:`pygpukit.cumprod`)."""
        return hooks.cumprod(self, axis, dtype)

    # -- Python protocols ----------------------------------------------------------------------
    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d GPUArray")
        return self.shape[0]

    def __iter__(self) -> Iterator[GPUArray]:
        if not self.shape:
            raise TypeError("iteration over a 0-d GPUArray")
        for i in range(self.shape[0]):
            yield self[i]

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                "The truth value of an array with more than one element is ambiguous"
            )
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray[Any, Any]:
        # CuPy's convention: no implicit device-to-host copies.
        raise TypeError(
            "Implicit conversion of a GPUArray to a NumPy array is not allowed: "
            "call .to_numpy() to copy it to the host explicitly"
        )

    def __repr__(self) -> str:
        return (f"GPUArray(shape={self.shape}, dtype={self.dtype.name}, "
                f"device={self._rt.describe().split(' ')[0]})")

    def __str__(self) -> str:
        return str(self.to_numpy())


_OPERAND_TYPES = (GPUArray, bool, int, float, complex, np.generic)
# The dtypes whose ``x ** 2`` (Python int / float 2) keeps the dtype, so is ``square(x)``.
_SQUARE_FLOAT = frozenset((_dtypes.float16, _dtypes.bfloat16, _dtypes.float32, _dtypes.float64))
# With a Python int 2 NumPy squares bool arrays too (into int8, as np.square does).
_SQUARE_INT_OR_FLOAT = _SQUARE_FLOAT | frozenset(
    (_dtypes.bool_, _dtypes.int8, _dtypes.uint8, _dtypes.int16, _dtypes.int32, _dtypes.int64))


def _squares(x: GPUArray, exponent: object) -> bool:
    """Whether ``x ** exponent`` is ``square(x)``: a Python 2 (int: numbers; float: floats)."""
    if exponent.__class__ is int:
        return exponent == 2 and x.dtype in _SQUARE_INT_OR_FLOAT
    return exponent.__class__ is float and exponent == 2.0 and x.dtype in _SQUARE_FLOAT


def _binop(name: str, a: object, b: object, out: GPUArray | None = None) -> GPUArray:
    """An operator: NotImplemented for operands it does not take (Python then tries the other)."""
    if out is None and (fast := hooks.small_binary(name, a, b)) is not None:
        return fast
    if not isinstance(a, _OPERAND_TYPES) or not isinstance(b, _OPERAND_TYPES):
        return NotImplemented  # type: ignore[no-any-return]
    return hooks.binary(name, a, b, out)


def _shift(name: str, a: object, b: object, out: GPUArray | None = None) -> GPUArray:
    if not isinstance(a, _OPERAND_TYPES) or not isinstance(b, _OPERAND_TYPES):
        return NotImplemented  # type: ignore[no-any-return]
    return hooks.shift(name, a, b, out)


def _reduce(name: str, x: GPUArray, axis: Any, keepdims: bool, ddof: float = 0) -> GPUArray:
    return hooks.reduce(name, x, axis, keepdims, ddof=ddof)


def complex_pairs(x: GPUArray) -> GPUArray:
    """Complex ``x`` of shape ``S`` as the float array of shape ``S + (2,)`` it is in memory.

    Real part at ``[..., 0]``, imaginary part at ``[..., 1]``: a view (no copy) that every real
    kernel takes.  ``S`` may have at most ``MAX_DIMS - 1`` dimensions for the kernels.
    """
    half = x.itemsize // 2
    return GPUArray(x._rt, x._block, x._offset, (*x.shape, 2), (*x.strides, half),
                    np.dtype(f"f{half}"))


def from_pairs(f: GPUArray) -> GPUArray:
    """A float array of shape ``S + (2,)`` as the complex array of shape ``S``.

    A view when the pairs are adjacent in memory, else a view of a contiguous copy.
    """
    if f.ndim == 0 or f.shape[-1] != 2 or f.dtype.kind != "f" or f.itemsize not in (4, 8):
        raise ValueError(f"expected float32/float64 pairs along a last axis of length 2; got "
                         f"shape {f.shape} and dtype {f.dtype.name}")
    if f.strides[-1] != f.itemsize or any(s % (2 * f.itemsize) for s in f.strides[:-1]):
        f = f.copy()
    return GPUArray(f._rt, f._block, f._offset, f.shape[:-1], f.strides[:-1],
                    np.dtype(f"c{2 * f.itemsize}"))
