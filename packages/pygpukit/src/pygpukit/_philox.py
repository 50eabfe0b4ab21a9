"""Philox4x32-10 and the distributions built on it, in vectorized NumPy.

This module is the definition of every random stream PyGPUkit makes: the CPU simulation runs it,
and the CUDA kernels (``pygpukit-kernels/cuda/random.cu``) compute the same functions, so a
seed gives the same numbers on both backends.  Every value is a pure function of
``(key, counter, stream_id, element index)``:

* Philox block ``b`` of a call is ``philox4x32_10(ctr, key)`` with the 128-bit counter
  ``ctr = (lo32(counter + b), hi32(counter + b), attempt, stream_id)`` (``counter + b`` modulo
  2**64; ``attempt`` is 0 except for the redraws of rejected integers) and the 64-bit key
  ``(lo32(key), hi32(key))``.  It gives four 32-bit words ``r0..r3``.
* "32-bit" outputs take element ``i`` from word ``i % 4`` of block ``i // 4``; "64-bit" outputs
  from the 64-bit word ``j = i % 2`` of block ``i // 2``, ``r[2j] | r[2j+1] << 32``.  A call of
  ``n`` elements uses blocks ``0 .. blocks_used(...) - 1``; the generator then advances its
  counter by that many blocks.

Distributions (``x`` a 32-bit word, ``X`` a 64-bit word):

* uniform float32 ``(x >> 8) * 2**-24``; float16 ``(x >> 21) * 2**-11``; bfloat16
  ``(x >> 24) * 2**-8``; float64 ``(X >> 11) * 2**-53`` -- exact, in ``[0, 1)``.  With
  ``low``/``scale``: ``low + scale * u`` rounded after the product and after the sum (no FMA), in
  float32 for the 16/32-bit types (then rounded once to the half type), in float64 for float64.
  Bit-identical on both backends.
* normal float32 (inverse CDF, one word per value): from ``x``, ``y = |int32(x)|`` (``x`` or
  ``2**32 - x``) and ``v = float32(y) * 2**-32 + 2**-33`` (float32, the conversion and the sum
  each rounded once, in ``(0, 1/2]``), ``z = Phi^-1(v)`` by the cubic of ``v``'s
  segment in :mod:`pygpukit._normal_icdf_table` (index ``(bits(v) >> 19) - (94 << 4)``, local
  coordinate ``t = float32 from bits((bits(v) & 0x7ffff) | 0x3f800000) - (1 + 2**-5)``,
  ``z = fma(fma(fma(c3, t, c2), t, c1), t, c0)`` in float32), and the value is ``z`` with its
  sign bit flipped when ``x``'s top bit is set.  Every step is exact integer arithmetic or one
  IEEE float32 rounding (FMAs emulated exactly here), so both backends give the same bits.
  ``|z| <= 6.33``; the table is within about 1 ulp of the exact quantile.
* normal float64 (Box-Muller, one pair per two 64-bit words ``(X0, X1)``):
  ``u1 = float64(X0 >> 11) * 2**-53 + 2**-54`` (in ``(0, 1]``), ``t = (X1 >> 11) * 2**-52``
  (exact, in ``[0, 2)``), ``rad = sqrt(-2 log(u1))``, ``z0 = rad * cos(pi t)``,
  ``z1 = rad * sin(pi t)``, computed here with an exact reduction of ``pi t`` (within an ulp of
  the exact value) and on the GPU with CUDA's ``log``, ``sqrt`` and ``sincospi``: the two agree
  within a few ulp, not bit for bit.  ``|z| <= sqrt(108 ln 2) = 8.65``.
* With ``loc``/``scale``, normals are ``loc + scale * z``, rounded after the product and after
  the sum (no FMA).
* integers in ``[low, low + span]`` (``span`` = range - 1, up to 2**64 - 1): Lemire's
  multiply-and-reject on 32-bit words when ``span < 2**32``, on 64-bit words otherwise
  (``span == 2**32 - 1`` / ``2**64 - 1`` take the word itself).  A rejected element redraws from
  the same block position with ``attempt`` 1, 2, ... (only that element), so the result is
  unbiased and still a pure function of the element index.
* categorical (``choice`` with ``p``): ``v = ((X >> 11) * 2**-53) * cdf[-1]`` in float64; the
  index is the first ``k`` with ``cdf[k] > v`` (``numpy.searchsorted(cdf, v, "right")``), or
  ``last`` (the last category of positive weight) when there is none.
"""

from __future__ import annotations

import functools
from typing import Any

import ml_dtypes
import numpy as np

from pygpukit_kernels import RandomDist

M0 = 0xD2511F53
M1 = 0xCD9E8D57
W0 = 0x9E3779B9
W1 = 0xBB67AE85
ROUNDS = 10

_M32 = np.uint64(0xFFFFFFFF)
_U64 = np.uint64
#: Philox blocks computed at once by the NumPy functions (bounds their temporary memory).
CHUNK_BLOCKS = 1 << 18


#: The distributions of ``pgk_random`` (``PGK_RAND_*`` of the C ABI).
Dist = RandomDist


def philox4x32_10(counter: tuple[Any, Any, Any, Any], key: tuple[int, int],
                  rounds: int = ROUNDS) -> tuple[np.ndarray[Any, Any], ...]:
    """Philox4x32 of counter words and a key of two 32-bit ints, on arrays.

    ``counter``: four words (uint32 values in integer arrays or ints, broadcast together).
    Returns four uint64 arrays holding the 32-bit output words.

    Random123's definition: each round maps ``(c0, c1, c2, c3)`` to
    ``(hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0))`` and the key is bumped by
    ``(W0, W1)`` between rounds.
    """
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) & _M32 for c in counter)
    c0, c1, c2, c3 = np.broadcast_arrays(c0, c1, c2, c3)
    k0, k1 = key[0] & 0xFFFFFFFF, key[1] & 0xFFFFFFFF
    m0, m1 = _U64(M0), _U64(M1)
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + W0) & 0xFFFFFFFF, (k1 + W1) & 0xFFFFFFFF
        p0 = c0 * m0
        p1 = c2 * m1
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ _U64(k0), p1 & _M32,
                          (p0 >> 32) ^ c3 ^ _U64(k1), p0 & _M32)
    return c0, c1, c2, c3


def _blocks(key: int, counter: int, stream_id: int, positions: np.ndarray[Any, Any],
            attempt: Any = 0) -> np.ndarray[Any, Any]:
    """Words of the Philox blocks at ``positions`` (block indices of the call).

    Shape ``(n, 4)``, uint64 holding 32-bit values.
    """
    pos = positions.astype(np.uint64) + _U64(counter & 0xFFFFFFFFFFFFFFFF)  # wraps mod 2**64
    r = philox4x32_10((pos & _M32, pos >> _U64(32), attempt, stream_id),
                      (key & 0xFFFFFFFF, key >> 32))
    return np.stack(r, axis=-1)


def words32(key: int, counter: int, stream_id: int, n: int) -> np.ndarray[Any, Any]:
    """The first ``n`` 32-bit words of the stream, as uint32.

    Element ``i`` is word ``i % 4`` of block ``i // 4``.
    """
    out = np.empty(n, np.uint32)
    nblocks = -(-n // 4)
    for start in range(0, nblocks, CHUNK_BLOCKS):
        stop = min(nblocks, start + CHUNK_BLOCKS)
        w = _blocks(key, counter, stream_id, np.arange(start, stop)).reshape(-1)
        out[start * 4:stop * 4] = w[:n - start * 4].astype(np.uint32)
    return out


def _join64(w: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """(n, 4) words -> (n, 2) 64-bit words ``r[2j] | r[2j+1] << 32``."""
    joined: np.ndarray[Any, Any] = w[:, 0::2] | (w[:, 1::2] << _U64(32))
    return joined


def words64(key: int, counter: int, stream_id: int, n: int) -> np.ndarray[Any, Any]:
    """The first ``n`` 64-bit words of the stream, as uint64.

    Element ``i`` is word ``i % 2`` of block ``i // 2``.
    """
    out = np.empty(n, np.uint64)
    nblocks = -(-n // 2)
    for start in range(0, nblocks, CHUNK_BLOCKS):
        stop = min(nblocks, start + CHUNK_BLOCKS)
        w = _join64(_blocks(key, counter, stream_id, np.arange(start, stop))).reshape(-1)
        out[start * 2:stop * 2] = w[:n - start * 2]
    return out


def per_block(dist: Dist, dtype: np.dtype[Any]) -> int:
    """Elements one Philox block gives for ``dist`` into ``dtype`` (4: 32-bit words, 2: 64)."""
    if dist == Dist.UNIFORM or dist == Dist.NORMAL:
        return 2 if dtype == np.float64 else 4
    return 2 if dtype.itemsize == 8 else 4


def blocks_used(n: int, elements_per_block: int) -> int:
    """Philox blocks a call of ``n`` elements uses: the generator's counter advance."""
    return -(-n // elements_per_block)


# ---- sin(pi t), cos(pi t) with an exact reduction --------------------------------------------
def sincospi(t: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """``(sin(pi t), cos(pi t))`` in float64 for ``t`` in ``[0, 2)`` (float64 values).

    ``t`` is reduced exactly to ``a = t - q/2`` with ``|a| <= 1/4`` before multiplying by pi,
    so the results are within an ulp or so of the exact values, zeros included (``sin(pi) =
    cos(pi/2) = +0``, as CUDA's ``sincospi``).
    """
    q = np.rint(t * 2.0)
    a = t - q * 0.5  # exact (Sterbenz)
    x = a * np.pi
    s, c = np.sin(x), np.cos(x)
    quadrant = q.astype(np.int64) & 3
    sin = np.choose(quadrant, [s, c, 0.0 - s, 0.0 - c])
    cos = np.choose(quadrant, [c, 0.0 - s, 0.0 - c, s])
    return sin, cos


# ---- the distributions --------------------------------------------------------------------------
def uniform(dtype: np.dtype[Any], n: int, key: int, counter: int, stream_id: int,
            low: float = 0.0, scale: float = 1.0) -> np.ndarray[Any, Any]:
    """``n`` uniform values of ``dtype`` (float16, bfloat16, float32, float64)."""
    affine = not (low == 0.0 and scale == 1.0)
    if dtype == np.float64:
        u = (words64(key, counter, stream_id, n) >> _U64(11)).astype(np.float64) * 2.0**-53
        result: np.ndarray[Any, Any] = u * scale + low if affine else u
        return result
    shift, bits = {np.dtype(np.float32): (8, 24), np.dtype(np.float16): (21, 11),
                   np.dtype(ml_dtypes.bfloat16): (24, 8)}[dtype]
    w = words32(key, counter, stream_id, n)
    u32 = (w >> np.uint32(shift)).astype(np.float32) * np.float32(2.0**-bits)
    if affine:
        u32 = u32 * np.float32(scale) + np.float32(low)  # float32 ops, rounded each
    converted: np.ndarray[Any, Any] = u32.astype(dtype)
    return converted


def fma32(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any],
          c: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``a * b + c`` on float32 arrays with one rounding, as an IEEE (CUDA ``__fmaf_rn``) FMA.

    The float64 product of two float32 values is exact; the float64 sum ``s`` is exact up to an
    error ``e`` found by TwoSum.  Rounding ``s`` to float32 is then the correctly rounded
    result, except when ``s`` falls exactly halfway between two float32 values and ``e != 0``:
    there the true value lies on ``e``'s side of the tie.  (Normal float32 ranges only.)
    """
    p = a.astype(np.float64) * b.astype(np.float64)
    c64 = c.astype(np.float64)
    s = p + c64
    bv = s - p
    e = (p - (s - bv)) + (c64 - bv)
    r: np.ndarray[Any, Any] = s.astype(np.float32)
    tie = (s.view(np.uint64) & _U64(0x1FFFFFFF)) == _U64(0x10000000)
    fix = tie & (e != 0)
    if fix.any():
        r64 = r.astype(np.float64)
        above = np.where(r64 > s, r, np.nextafter(r, np.float32(np.inf)))
        below = np.where(r64 < s, r, np.nextafter(r, np.float32(-np.inf)))
        r = np.where(fix, np.where(e > 0, above, below), r)
    return r


@functools.cache
def _icdf_table() -> tuple[np.ndarray[Any, Any], int, int]:
    """The quantile table as float32 ``(entries, 4)``, its segment bits and first exponent.

    Parsed on the first float32 normal draw, not when pygpukit is imported (~7 ms).
    """
    from pygpukit import _normal_icdf_table as table

    coefficients = np.array([[float.fromhex(h) for h in row] for row in table.COEFFICIENTS],
                            dtype=np.float32)
    return coefficients, table.SEGMENT_BITS, table.FIRST_EXPONENT


def normal_f32(words: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Standard normal float32 values of 32-bit ``words`` (uint32), one per word (inverse CDF)."""
    coefficients, bits, first = _icdf_table()
    shift = 23 - bits
    # |int32(x)| (x, or 2**32 - x: at most 2**31, a uint32): the device converts the signed word
    # and takes |.| as an operand modifier of its add.
    y = np.where(words >= np.uint32(0x80000000), np.uint32(0) - words, words)
    v = y.astype(np.float32) * np.float32(2.0**-32) + np.float32(2.0**-33)  # exact product
    vb = v.view(np.uint32)
    idx = (vb >> np.uint32(shift)) - np.uint32(first << bits)
    local = (vb & np.uint32((1 << shift) - 1)) | np.uint32(0x3F800000)
    t = local.view(np.float32) - np.float32(1.0 + 2.0 ** -(bits + 1))
    c = coefficients[idx]
    z = fma32(fma32(fma32(c[:, 3], t, c[:, 2]), t, c[:, 1]), t, c[:, 0])
    signed: np.ndarray[Any, Any] = (z.view(np.uint32) ^ (words & np.uint32(0x80000000))).view(
        np.float32)
    return signed


def normal(dtype: np.dtype[Any], n: int, key: int, counter: int, stream_id: int,
           loc: float = 0.0, scale: float = 1.0) -> np.ndarray[Any, Any]:
    """``n`` standard normal values (float32 or float64), then ``loc + scale * z``."""
    affine = not (loc == 0.0 and scale == 1.0)
    if dtype == np.float64:
        w = words64(key, counter, stream_id, n + (n & 1)).reshape(-1, 2)
        u1 = (w[:, 0] >> _U64(11)).astype(np.float64) * 2.0**-53 + 2.0**-54
        t = (w[:, 1] >> _U64(11)).astype(np.float64) * 2.0**-52
        with np.errstate(all="ignore"):
            rad = np.sqrt(-2.0 * np.log(u1))
        sin, cos = sincospi(t)
        z = np.empty((rad.size, 2), np.float64)
        z[:, 0] = rad * cos
        z[:, 1] = rad * sin
        out = z.reshape(-1)[:n]
    else:
        out = np.empty(n, np.float32)
        for start in range(0, n, 4 * CHUNK_BLOCKS):  # bounds the temporaries
            stop = min(n, start + 4 * CHUNK_BLOCKS)
            w32 = words32(key, counter + start // 4, stream_id, stop - start)
            out[start:stop] = normal_f32(w32)
    if affine:
        out = out * dtype.type(scale) + dtype.type(loc)
    return out


def raw_bits(dtype: np.dtype[Any], n: int, key: int, counter: int,
             stream_id: int) -> np.ndarray[Any, Any]:
    """``n`` raw words as int32 (32-bit words) or int64 (64-bit words), bits reinterpreted."""
    if dtype == np.int64:
        return words64(key, counter, stream_id, n).view(np.int64)
    return words32(key, counter, stream_id, n).view(np.int32)


def _mulhi64(x: np.ndarray[Any, Any], r: int) -> np.ndarray[Any, Any]:
    """High 64 bits of ``x * r`` (uint64 arrays, 32-bit limbs)."""
    xl, xh = x & _M32, x >> _U64(32)
    rl, rh = _U64(r & 0xFFFFFFFF), _U64(r >> 32)
    ll, lh, hl, hh = xl * rl, xl * rh, xh * rl, xh * rh
    mid = (ll >> _U64(32)) + (lh & _M32) + (hl & _M32)
    high: np.ndarray[Any, Any] = hh + (lh >> _U64(32)) + (hl >> _U64(32)) + (mid >> _U64(32))
    return high


def integer_offsets(n: int, span: int, key: int, counter: int,
                    stream_id: int) -> np.ndarray[Any, Any]:
    """``n`` unbiased offsets in ``[0, span]`` (uint64), Lemire's method with redraws."""
    if not 0 <= span < 1 << 64:
        raise ValueError(f"span: expected 0 <= span < 2**64; got {span}")
    wide = span > 0xFFFFFFFF
    if span in (0xFFFFFFFF, (1 << 64) - 1):
        return (words64 if wide else words32)(key, counter, stream_id, n).astype(np.uint64)
    r = span + 1
    bits, per = (64, 2) if wide else (32, 4)
    threshold = _U64(((1 << bits) - r) % r)  # Lemire's t = 2**bits mod r

    def lemire(x: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """(offset, accepted) of words ``x`` (uint64)."""
        if wide:
            return _mulhi64(x, r), x * _U64(r) >= threshold  # the low 64 bits wrap
        m = x * _U64(r)
        return m >> _U64(32), (m & _M32) >= threshold

    # First draws: the stream's words, in chunks; then only the rejected elements, redrawn
    # from their own block position with attempt 1, 2, ...
    x = (words64 if wide else words32)(key, counter, stream_id, n).astype(np.uint64)
    out, ok = lemire(x)
    pending = np.flatnonzero(~ok).astype(np.uint64)
    attempt = 1
    while pending.size:
        w = _blocks(key, counter, stream_id, pending // _U64(per), attempt)
        lane = (pending % _U64(per)).astype(np.intp)
        rows = np.arange(pending.size)
        x = (_join64(w) if wide else w)[rows, lane]
        value, ok = lemire(x)
        out[pending[ok].astype(np.intp)] = value[ok]
        pending = pending[~ok]
        attempt += 1
        if attempt > 0xFFFFFFFF:  # probability below 2**-(2**32): a broken invariant
            raise RuntimeError("integers: rejection sampling did not terminate")
    result: np.ndarray[Any, Any] = out
    return result


def integers(dtype: np.dtype[Any], n: int, low: int, span: int, key: int, counter: int,
             stream_id: int) -> np.ndarray[Any, Any]:
    """``n`` integers ``low + offset`` (offset in ``[0, span]``) of an integer or bool dtype."""
    offsets = integer_offsets(n, span, key, counter, stream_id)
    values = (offsets + _U64(low & 0xFFFFFFFFFFFFFFFF)).view(np.int64)  # wraps as in C
    if dtype == np.bool_:
        flags: np.ndarray[Any, Any] = values != 0
        return flags
    narrowed: np.ndarray[Any, Any] = values.astype(dtype)
    return narrowed


def categorical(cdf: np.ndarray[Any, Any], last: int, n: int, key: int, counter: int,
                stream_id: int) -> np.ndarray[Any, Any]:
    """``n`` category indices (int64) drawn by the cumulative weights ``cdf`` (float64)."""
    u = (words64(key, counter, stream_id, n) >> _U64(11)).astype(np.float64) * 2.0**-53
    idx = np.searchsorted(cdf, u * cdf[-1], side="right").astype(np.int64)
    idx[idx >= cdf.size] = last
    result: np.ndarray[Any, Any] = idx
    return result


def generate(dist: int, dtype: np.dtype[Any], n: int, key: int, counter: int, stream_id: int,
             a: float, b: float) -> np.ndarray[Any, Any]:
    """What ``pgk_random(dist, ...)`` writes: ``n`` values of ``dtype``."""
    if dist == Dist.UNIFORM:
        return uniform(dtype, n, key, counter, stream_id, a, b)
    if dist == Dist.NORMAL:
        return normal(dtype, n, key, counter, stream_id, a, b)
    if dist == Dist.BITS:
        return raw_bits(dtype, n, key, counter, stream_id)
    raise ValueError(f"dist: expected one of {[int(d) for d in Dist]}; got {dist}")
