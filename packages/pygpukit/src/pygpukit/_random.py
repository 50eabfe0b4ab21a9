"""Random numbers: ``default_rng`` and a NumPy-style ``Generator`` over Philox4x32-10 streams.

A generator's state is a 64-bit key and a 32-bit stream word (both hashed from the seed by
NumPy's ``SeedSequence``) and a 64-bit counter of Philox blocks.  Each draw takes the blocks
``counter .. counter + k - 1`` it needs and advances the counter by ``k``, so every value is a
pure function of the state and its index (:mod:`pygpukit._philox` defines the streams): the CUDA
kernels and the CPU simulation give the same numbers for a seed, wherever the generator is used.
"""

from __future__ import annotations

import math
import operator
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pygpukit import _layout, _philox
from pygpukit._array import GPUArray
from pygpukit._device import runtime_for
from pygpukit._dtypes import bfloat16, bool_, float16, float32, float64, int64, normalize_dtype
from pygpukit._philox import Dist
from pygpukit._stream import stream_for_runtime
from pygpukit._transfer import copy_into, empty_on, touch, upload

if TYPE_CHECKING:
    from pygpukit._backend import Runtime
    from pygpukit._stream import Stream

#: NumPy's seed hashing and spawning (``numpy.random.SeedSequence``), used as is.
SeedSequence = np.random.SeedSequence

_FLOATS = (float16, bfloat16, float32, float64)
_U64_MASK = (1 << 64) - 1
_F32_MAX = float(np.finfo(np.float32).max)

#: Fills ``out`` from the stream at ``(key, counter, stream_id)`` on ``stream``.
_Fill = Callable[["Runtime", GPUArray, int, int, int, "Stream"], None]


class Philox4x32:
    """The bit generator of PyGPUkit: counter-based Philox4x32-10.

    Parameters
    ----------
    seed
        ``None`` (fresh entropy from the OS), an int >= 0, a sequence of such ints, or a
        :class:`numpy.random.SeedSequence`: hashed by NumPy's ``SeedSequence`` into the key (64
        bits) and the stream word (32 bits).  The counter starts at 0.

    Notes
    -----
    ``state`` reports (and, assigned, restores) everything the next numbers depend on, so a run
    can be reproduced from a saved state on either backend.
    """

    def __init__(self, seed: Any = None) -> None:
        seed_seq = seed if isinstance(seed, SeedSequence) else _seed_sequence(seed)
        words = seed_seq.generate_state(3, np.uint32)
        self._seed_seq = seed_seq
        self._key = int(words[0]) | int(words[1]) << 32
        self._stream_id = int(words[2])
        self._counter = 0
        self._lock = threading.Lock()

    @property
    def seed_seq(self) -> np.random.SeedSequence:
        """The ``SeedSequence`` the key and stream word come from (``spawn`` uses it)."""
        return self._seed_seq

    @property
    def key(self) -> int:
        """The 64-bit Philox key (low 32 bits: ``k0``)."""
        return self._key

    @property
    def stream_id(self) -> int:
        """The 32-bit stream word (the last word of every Philox counter)."""
        return self._stream_id

    @property
    def counter(self) -> int:
        """The first Philox block the next draw uses (64 bits; each block is 4 words)."""
        return self._counter

    @property
    def state(self) -> dict[str, Any]:
        """``{"bit_generator": "Philox4x32-10", "state": {"key", "stream_id", "counter"}}``."""
        with self._lock:
            return {"bit_generator": "Philox4x32-10",
                    "state": {"key": self._key, "stream_id": self._stream_id,
                              "counter": self._counter}}

    @state.setter
    def state(self, value: dict[str, Any]) -> None:
        if not isinstance(value, dict) or value.get("bit_generator") != "Philox4x32-10":
            raise ValueError("state: expected a dict with 'bit_generator': 'Philox4x32-10' "
                             f"(as Philox4x32.state gives); got {value!r}")
        inner = value.get("state")
        if not isinstance(inner, dict):
            raise ValueError(f"state: expected a 'state' dict; got {inner!r}")
        fields = {}
        for name, bits in (("key", 64), ("stream_id", 32), ("counter", 64)):
            field = inner.get(name)
            if not isinstance(field, (int, np.integer)) or isinstance(field, bool) or not (
                    0 <= int(field) < 1 << bits):
                raise ValueError(f"state: {name} must be an int in [0, 2**{bits}); "
                                 f"got {field!r}")
            fields[name] = int(field)
        with self._lock:
            self._key, self._stream_id = fields["key"], fields["stream_id"]
            self._counter = fields["counter"]

    def advance(self, delta: int) -> Philox4x32:
        """Skip ``delta`` Philox blocks (modulo 2**64); returns ``self``."""
        delta = operator.index(delta)
        with self._lock:
            self._counter = (self._counter + delta) & _U64_MASK
        return self

    def spawn(self, n_children: int) -> list[Philox4x32]:
        """``n_children`` independent bit generators (``SeedSequence.spawn``: distinct keys)."""
        return [Philox4x32(child) for child in self._seed_seq.spawn(n_children)]

    def _reserve(self, blocks: int) -> tuple[int, int, int]:
        """Take ``blocks`` Philox blocks for one draw: ``(key, first counter, stream_id)``."""
        with self._lock:
            first = self._counter
            self._counter = (first + blocks) & _U64_MASK
            return self._key, first, self._stream_id

    def __repr__(self) -> str:
        return (f"Philox4x32(key=0x{self._key:016x}, stream_id=0x{self._stream_id:08x}, "
                f"counter={self._counter})")


def _seed_sequence(seed: Any) -> np.random.SeedSequence:
    if isinstance(seed, (bool, float, np.floating, GPUArray)):
        raise TypeError("seed: expected None, an int >= 0, a sequence of ints or a "
                        f"SeedSequence; got {seed!r}")
    try:
        return SeedSequence(seed)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"seed: expected None, an int >= 0, a sequence of ints >= 0 or a "
                        f"SeedSequence; got {seed!r} ({exc})") from None


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))


def _float_dtype(name: str, dtype: Any) -> np.dtype[Any]:
    dt = normalize_dtype(dtype)
    if dt not in _FLOATS:
        raise TypeError(f"{name}: dtype must be float16, bfloat16, float32 or float64; got "
                        f"{dt.name}")
    return dt


class Generator:
    """Random numbers on the device, with ``numpy.random.Generator``'s method names.

    Results are new GPUArrays on the current device, enqueued on its current stream (a draw
    returns without waiting).  ``size`` is ``None`` (a 0-d array: PyGPUkit keeps results on the
    device, as CuPy does), an int or a shape.  Floating draws default to float32, PyGPUkit's
    default float (NumPy: float64); pass ``dtype=float64`` for NumPy's.

    Every draw consumes whole Philox blocks from the bit generator's counter (4 values per
    block for 32-bit outputs, 2 for float64 and wide integers), so consecutive draws give fresh
    numbers and the same seed gives the same numbers on the GPU and on the CPU simulation:
    integers, uniform floats, ``choice``, ``permutation`` and float32 normals bit for bit,
    float64 normals within a few ulp (see :mod:`pygpukit._philox`).

    A generator is thread-safe (each draw reserves its blocks under a lock).  A draw captured in
    a CUDA graph replays the numbers of the capture.
    """

    def __init__(self, bit_generator: Philox4x32) -> None:
        if not isinstance(bit_generator, Philox4x32):
            raise TypeError("bit_generator: expected a pygpukit.random.Philox4x32; got "
                            f"{type(bit_generator).__name__}")
        self._bit_generator = bit_generator

    @property
    def bit_generator(self) -> Philox4x32:
        """The :class:`Philox4x32` whose state the draws advance (``.state`` to save it)."""
        return self._bit_generator

    def __repr__(self) -> str:
        return f"Generator({self._bit_generator!r})"

    def spawn(self, n_children: int) -> list[Generator]:
        """``n_children`` independent generators (NumPy's ``Generator.spawn``).

        Children come from ``SeedSequence.spawn`` of this generator's seed sequence: each has a
        key and stream word of its own, and spawning again gives further, different children.
        """
        return [Generator(bg) for bg in self._bit_generator.spawn(n_children)]

    # -- the draws --------------------------------------------------------------------------
    def _draw(self, name: str, size: Any, dtype: np.dtype[Any], per_block: int, fill: _Fill,
              out: GPUArray | None = None) -> GPUArray:
        """A new array (or ``out``) of ``size`` filled by ``fill`` from freshly reserved blocks."""
        if out is not None:
            if not isinstance(out, GPUArray):
                raise TypeError(f"{name}: out must be a GPUArray; got {type(out).__name__}")
            if out.dtype != dtype:
                raise TypeError(f"{name}: out has dtype {out.dtype.name}, the draw gives "
                                f"{dtype.name}")
            if size is not None and _layout.as_shape(size, argument="size") != out.shape:
                raise ValueError(f"{name}: size {size!r} does not match out.shape {out.shape}")
            shape, rt = out.shape, out._rt
        else:
            shape = () if size is None else _layout.as_shape(size, argument="size")
            rt = runtime_for(None)
        target = out if out is not None and out.is_contiguous() else empty_on(rt, shape, dtype)
        n = math.prod(shape)
        if n:
            key, counter, sid = self._bit_generator._reserve(_philox.blocks_used(n, per_block))
            stream = stream_for_runtime(rt)
            touch(stream, written=target)
            fill(rt, target, key, counter, sid, stream)
        if out is not None and target is not out:
            copy_into(target, out)
            return out
        return target

    def _dist(self, name: str, dist: Dist, size: Any, dtype: np.dtype[Any], a: float, b: float,
              out: GPUArray | None = None) -> GPUArray:
        def fill(rt: Runtime, target: GPUArray, key: int, counter: int, sid: int,
                 stream: Stream) -> None:
            rt.random(int(dist), target, key, counter, sid, a, b, stream)

        return self._draw(name, size, dtype, _philox.per_block(dist, dtype), fill, out)

    def random(self, size: Any = None, dtype: Any = float32, out: GPUArray | None = None
               ) -> GPUArray:
        """Uniform floats in ``[0, 1)``.

        Parameters
        ----------
        size
            ``None`` (0-d), an int or a shape.
        dtype
            float16, bfloat16, float32 (default) or float64; the values are multiples of
            2**-11, 2**-8, 2**-24 and 2**-53 respectively (exact, never 1).
        out
            Optional array of that dtype to fill (its shape is the size).

        Notes
        -----
        Bernoulli draws are ``rng.random(n) < p`` (a bool array).
        """
        dt = _float_dtype("random", dtype)
        return self._dist("random", Dist.UNIFORM, size, dt, 0.0, 1.0, out)

    def uniform(self, low: Any = 0.0, high: Any = 1.0, size: Any = None,
                dtype: Any = float32) -> GPUArray:
        """Uniform floats in ``[low, high)``: ``low + (high - low) * random()``.

        ``low`` and ``high`` are scalars (computed in the kernel: float32 arithmetic for the
        16/32-bit dtypes, float64 for float64, one rounding per operation) or arrays (GPUArrays
        or array-likes, broadcast with ``size``; then computed by array operations).  As in
        NumPy, rounding may give ``high`` itself, and ``low > high`` is allowed.

        Raises
        ------
        OverflowError
            If ``high - low`` is not finite (in the dtype's compute precision).
        """
        dt = _float_dtype("uniform", dtype)
        if _is_scalar(low) and _is_scalar(high):
            lo, span = float(low), float(high) - float(low)
            limit = math.inf if dt == float64 else _F32_MAX
            if not (math.isfinite(lo) and math.isfinite(span)) or abs(span) > limit or abs(
                    lo) > limit:
                raise OverflowError(f"uniform: high - low range exceeds the bounds of "
                                    f"{dt.name}: low={low!r}, high={high!r}")
            return self._dist("uniform", Dist.UNIFORM, size, dt, lo, span)
        lo_a, hi_a = _operand(low, dt), _operand(high, dt)
        shape = _broadcast_size(size, lo_a, hi_a)
        return lo_a + (hi_a - lo_a) * self.random(shape, dt)

    def standard_normal(self, size: Any = None, dtype: Any = float32,
                        out: GPUArray | None = None) -> GPUArray:
        """Standard normal floats.

        float32: the inverse CDF of one Philox word per value (a table of cubics within ~1 ulp
        of the normal quantile; ``|z| <= 6.33``), bit-identical across backends.  float64:
        Box-Muller on pairs of 64-bit words, equal across backends within a few ulp.  float16
        and bfloat16 are float32 draws rounded to the half type.
        """
        dt = _float_dtype("standard_normal", dtype)
        if dt in (float16, bfloat16):
            if out is not None:
                self._check_out("standard_normal", out, dt, out.shape if size is None else
                                _layout.as_shape(size, argument="size"))
            z = self._dist("standard_normal", Dist.NORMAL, size if out is None else out.shape,
                           float32, 0.0, 1.0)
            result = z.astype(dt)
            if out is not None:
                copy_into(result, out)
                return out
            return result
        return self._dist("standard_normal", Dist.NORMAL, size, dt, 0.0, 1.0, out)

    @staticmethod
    def _check_out(name: str, out: Any, dtype: np.dtype[Any], shape: tuple[int, ...]) -> None:
        if not isinstance(out, GPUArray) or out.dtype != dtype or out.shape != shape:
            raise TypeError(f"{name}: out must be a GPUArray of dtype {dtype.name} and shape "
                            f"{shape}")

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None,
               dtype: Any = float32) -> GPUArray:
        """Normal floats: ``loc + scale * standard_normal()``.

        Scalars are applied in the kernel (one rounding per operation, in the dtype's compute
        precision); arrays (GPUArrays or array-likes) broadcast with ``size``.

        Raises
        ------
        ValueError
            If a scalar ``scale`` is negative (NumPy's rule).
        """
        dt = _float_dtype("normal", dtype)
        if _is_scalar(loc) and _is_scalar(scale) and dt in (float32, float64):
            if float(scale) < 0:
                raise ValueError(f"normal: scale must be >= 0; got {scale!r}")
            limit = math.inf if dt == float64 else _F32_MAX
            if not all(math.isfinite(float(v)) and abs(float(v)) <= limit for v in (loc, scale)):
                raise OverflowError(f"normal: loc and scale must be finite in {dt.name}; got "
                                    f"loc={loc!r}, scale={scale!r}")
            return self._dist("normal", Dist.NORMAL, size, dt, float(loc), float(scale))
        if _is_scalar(scale) and float(scale) < 0:
            raise ValueError(f"normal: scale must be >= 0; got {scale!r}")
        loc_a, scale_a = _operand(loc, dt), _operand(scale, dt)
        shape = _broadcast_size(size, loc_a, scale_a)
        return loc_a + scale_a * self.standard_normal(shape, dt)

    def integers(self, low: Any, high: Any = None, size: Any = None, dtype: Any = int64,
                 endpoint: bool = False) -> GPUArray:
        """Uniform integers in ``[low, high)`` (``[low, high]`` with ``endpoint=True``).

        With ``high=None`` the range is ``[0, low)``.  Unbiased (Lemire's multiply-and-reject;
        see :mod:`pygpukit._philox`).  ``dtype``: int8, uint8, int16, int32, int64 (default) or
        bool.

        Raises
        ------
        TypeError
            If a bound is not an int (arrays of bounds are not supported) or dtype is not an
            integer or bool dtype.
        ValueError
            If the range is empty or a bound is out of the dtype's range.
        """
        dt = normalize_dtype(dtype)
        if dt.kind not in "biu":
            raise TypeError(f"integers: dtype must be an integer or bool dtype; got {dt.name}")
        if high is None:
            low, high = 0, low
        bounds = []
        for what, value in (("low", low), ("high", high)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
                raise TypeError(f"integers: {what} must be an int; got {value!r} (arrays of "
                                "bounds are not supported)")
            bounds.append(int(value))
        lo, hi = bounds
        top = hi if endpoint else hi - 1
        if lo > top:
            raise ValueError(f"integers: low {'>' if endpoint else '>='} high (low={lo}, "
                             f"high={hi}, endpoint={endpoint})")
        info_min, info_max = (0, 1) if dt == bool_ else (int(np.iinfo(dt).min),
                                                         int(np.iinfo(dt).max))
        if lo < info_min:
            raise ValueError(f"integers: low={lo} is out of bounds for {dt.name}")
        if top > info_max:
            raise ValueError(f"integers: high={hi} is out of bounds for {dt.name}"
                             f"{'' if endpoint else ' (high is exclusive)'}")
        span = top - lo

        def fill(rt: Runtime, target: GPUArray, key: int, counter: int, sid: int,
                 stream: Stream) -> None:
            rt.random_integers(target, key, counter, sid, lo, span, stream)

        return self._draw("integers", size, dt, 2 if span > 0xFFFFFFFF else 4, fill)

    def _bits64(self, n: int) -> GPUArray:
        """``n`` random 64-bit keys (int64 bit patterns)."""
        return self._dist("permutation", Dist.BITS, (n,), int64, 0.0, 1.0)

    def permutation(self, x: Any, axis: int = 0) -> GPUArray:
        """A random permutation of ``range(x)`` (int64), or a shuffled copy of the array ``x``.

        Made by sorting random 64-bit keys (``argsort``), then, for an array, taking its
        elements along ``axis`` in that order.
        """
        if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
            n = int(x)
            if n < 0:
                raise ValueError(f"permutation: x must be >= 0; got {n}")
            return _argsort(self._bits64(n))
        array = _operand(x, None)
        if array.ndim == 0:
            raise ValueError("permutation: x must be an int or an array of at least one "
                             "dimension")
        ax = _layout.normalize_axis(axis, array.ndim)
        return _take(array, self.permutation(array.shape[ax]), ax)

    def choice(self, a: Any, size: Any = None, replace: bool = True, p: Any = None,
               axis: int = 0, shuffle: bool = True) -> GPUArray:
        """Random samples of ``range(a)`` (``a`` an int) or of the array ``a`` along ``axis``.

        Parameters
        ----------
        a
            A positive int (the population ``range(a)``) or an array (GPUArray or array-like).
        size
            ``None`` (one sample, 0-d for an int ``a``), an int or a shape.
        replace
            With replacement (default): uniform indices, or with ``p`` the inverse of the
            cumulative weights (one float64 uniform per sample, bit-identical across backends).
            Without: the first samples of a random permutation; with ``p``, weighted sampling
            without replacement by exponential keys ``-log1p(-u) / p`` (the distribution of
            successive draws; the log is the device's, so not bit-identical across backends).
        p
            Probabilities of the entries (1-D, the population's length, >= 0, summing to 1
            within ``sqrt(eps)``); a GPUArray is read back to the host to check them.
        axis
            The axis of ``a`` to sample along.
        shuffle
            Accepted for NumPy compatibility: samples without replacement are always in random
            order.
        """
        array: GPUArray | None = None
        if isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)):
            pop = int(a)
            if pop < 0:
                raise ValueError(f"choice: a must be a positive int or an array; got {pop}")
        else:
            array = _operand(a, None)
            if array.ndim == 0:
                raise ValueError("choice: a must be a positive int or an array of at least one "
                                 "dimension")
            axis = _layout.normalize_axis(axis, array.ndim)
            pop = array.shape[axis]
        shape = () if size is None else _layout.as_shape(size, argument="size")
        k = math.prod(shape)
        if pop == 0 and k:
            raise ValueError("choice: a cannot be empty unless no samples are taken")
        weights = None if p is None else _probabilities(p, pop)
        if replace:
            if weights is None:
                idx = self.integers(0, max(pop, 1), shape)
            else:
                idx = self._categorical(weights, shape)
        else:
            if k > pop:
                raise ValueError(f"choice: cannot take a larger sample ({k}) than the population "
                                 f"({pop}) when replace is False")
            if weights is None:
                order = self.permutation(pop)
            else:
                nonzero = int(np.count_nonzero(weights))
                if nonzero < k:
                    raise ValueError(f"choice: fewer non-zero entries in p ({nonzero}) than "
                                     f"size ({k})")
                u = self.random(pop, float64)
                keys = -_log1p(-u) / upload(u._rt, weights)
                order = _argsort(keys)
            idx = order[:k].reshape(shape) if k < pop else order.reshape(shape)
            if k < pop:
                idx = idx.copy()
        return idx if array is None else _take(array, idx, axis)

    def _categorical(self, weights: np.ndarray[Any, Any], shape: tuple[int, ...]) -> GPUArray:
        """Indices drawn by ``weights`` (validated, float64) on the current device."""
        cdf = np.cumsum(weights)
        last = int(np.flatnonzero(weights > 0)[-1])
        rt = runtime_for(None)
        cdf_dev = upload(rt, cdf)

        def fill(rt: Runtime, target: GPUArray, key: int, counter: int, sid: int,
                 stream: Stream) -> None:
            touch(stream, cdf_dev)
            rt.random_choice(target, cdf_dev, last, key, counter, sid, stream)

        return self._draw("choice", shape, int64, 2, fill)


def _probabilities(p: Any, pop: int) -> np.ndarray[Any, Any]:
    """``p`` as validated float64 host weights (NumPy's rules for ``choice``)."""
    host = p.to_numpy() if isinstance(p, GPUArray) else np.asarray(p)
    if host.ndim != 1:
        raise ValueError(f"choice: p must be 1-dimensional; got shape {host.shape}")
    if host.size != pop:
        raise ValueError(f"choice: a and p must have the same size; got {pop} and {host.size}")
    if host.dtype.kind not in "biuf" and host.dtype != bfloat16:
        raise TypeError(f"choice: p must hold real numbers; got dtype {host.dtype}")
    weights = host.astype(np.float64)
    if not np.all(np.isfinite(weights)):
        raise ValueError("choice: probabilities contain NaN or infinity")
    if np.any(weights < 0):
        raise ValueError("choice: probabilities are not non-negative")
    total = float(weights.sum())
    tolerance = math.sqrt(float(np.finfo(host.dtype if host.dtype.kind == "f" and
                                         host.dtype != bfloat16 else np.float64).eps))
    if abs(total - 1.0) > tolerance:
        raise ValueError(f"choice: probabilities do not sum to 1 (sum {total!r})")
    return weights


def _operand(value: Any, dtype: np.dtype[Any] | None) -> GPUArray:
    """``value`` as a GPUArray (of ``dtype`` when given) on the current device."""
    from pygpukit._creation import asarray

    return asarray(value, dtype)


def _broadcast_size(size: Any, *arrays: GPUArray) -> tuple[int, ...]:
    shape = _layout.broadcast_shapes(*(a.shape for a in arrays))
    if size is None:
        return shape
    target = _layout.as_shape(size, argument="size")
    if _layout.broadcast_shapes(shape, target) != target:
        raise ValueError(f"size {target} does not fit the parameters' broadcast shape {shape}")
    return target


def _log1p(x: GPUArray) -> GPUArray:
    from pygpukit._ops import log1p

    return log1p(x)


def _argsort(keys: GPUArray) -> GPUArray:
    """Stable ascending argsort of a 1-D array (``pygpukit._sorting``), int64 indices."""
    from pygpukit._sorting import argsort  # type: ignore[import-not-found, unused-ignore]

    result: GPUArray = argsort(keys)
    return result


def _take(array: GPUArray, idx: GPUArray, axis: int) -> GPUArray:
    """``array`` indexed by ``idx`` along ``axis`` (advanced indexing: ``numpy.take``)."""
    key: tuple[Any, ...] = (slice(None),) * axis + (idx,)
    result: GPUArray = array[key]
    return result


def default_rng(seed: Any = None) -> Generator:
    """A :class:`Generator` over :class:`Philox4x32` (NumPy's ``default_rng``).

    Parameters
    ----------
    seed
        ``None`` (OS entropy), an int >= 0, a sequence of ints >= 0, a
        ``numpy.random.SeedSequence``, a :class:`Philox4x32` (wrapped) or a :class:`Generator`
        (returned as is).

    Examples
    --------
    >>> import pygpukit as gp
    >>> rng = gp.random.default_rng(42)
    >>> x = rng.standard_normal((1024, 1024))          # float32 on the current device
    >>> mask = rng.random(1024) < 0.25                 # Bernoulli(0.25)
    >>> children = rng.spawn(4)                        # independent streams
    """
    if isinstance(seed, Generator):
        return seed
    if isinstance(seed, Philox4x32):
        return Generator(seed)
    return Generator(Philox4x32(seed))


__all__: Sequence[str] = ["Generator", "Philox4x32", "SeedSequence", "default_rng"]
