/* C ABI of libpygpukit_kernels: the precompiled kernels of PyGPUkit.
 *
 * Every launcher enqueues work on the CUstream it is given (0 = the legacy default stream) in the
 * context current on the calling thread (PyGPUkit makes the device's primary context current) and
 * returns without synchronizing.  Return value: 0 on success, otherwise a cudaError_t code whose
 * name pgk_error_name() gives.  Pointers are device pointers.  Thread-safe.
 */
#ifndef PYGPUKIT_KERNELS_H
#define PYGPUKIT_KERNELS_H

#include <stdint.h>

#if defined(_WIN32)
#  if defined(PGK_BUILDING_LIBRARY)
#    define PGK_API __declspec(dllexport)
#  else
#    define PGK_API __declspec(dllimport)
#  endif
#else
#  define PGK_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a signature below changes; callers refuse a library with another value. */
#define PGK_ABI_VERSION 2

PGK_API int pgk_abi_version(void);

/* JSON object: {"abi": 2, "cuda_archs": "80-real,...,120", "nvcc": "13.0.88"} (static storage). */
PGK_API const char* pgk_build_info(void);

/* CUDA error name and description for a status returned by a launcher (static storage). */
PGK_API const char* pgk_error_name(int status);
PGK_API const char* pgk_error_string(int status);

/* out[i] = a[i] + b[i] for i < n.  out may alias a or b exactly. */
PGK_API int pgk_add_f32(const float* a, const float* b, float* out, int64_t n, void* stream);

/* ---- copies with conversion, fill, ranges (ABI 2) ----
 *
 * dtype codes, fixed forever (Python mirrors them as pygpukit_kernels.DType).  bool is one byte
 * (0/1; any non-zero byte reads as true), float16 is IEEE binary16, bfloat16 the top half of a
 * float32 (ml_dtypes.bfloat16).
 *
 * Conversions equal NumPy's astype bit for bit wherever NumPy defines the result:
 *  - integer -> integer wraps modulo 2^bits (NumPy's C casts); integer -> float rounds to nearest
 *    even (to float16/bfloat16 through float32, as NumPy and ml_dtypes do);
 *  - float -> integer truncates toward zero (out of range and NaN: undefined, as in NumPy);
 *  - anything -> bool is != 0 (NaN -> true, -0.0 -> false); bool -> number is 0 or 1;
 *  - float64 -> float16 rounds once from the double; float64 -> bfloat16 goes through float32
 *    (ml_dtypes' bfloat16(float(x))); float16 <-> bfloat16 through float32;
 *  - NaN -> a float type: a quiet NaN with the sign kept (the standard NaN of the target for the
 *    standard NaN of the source).
 *
 * Launchers check their arguments first and return cudaErrorInvalidValue (1) without touching the
 * device for: an unknown dtype code, ndim outside 0..PGK_MAX_DIMS, a negative dimension, a null
 * shape/strides array with ndim > 0, a null data pointer when there is at least one element, a
 * data pointer or a stride (of a dim longer than 1) that is not a multiple of its element size,
 * or an element count that overflows int64.  An empty index space (some dim 0, n == 0) launches
 * nothing and returns 0.
 */
enum {
  PGK_BOOL = 0,
  PGK_INT8 = 1,
  PGK_UINT8 = 2,
  PGK_INT16 = 3,
  PGK_INT32 = 4,
  PGK_INT64 = 5,
  PGK_FLOAT16 = 6,
  PGK_BFLOAT16 = 7,
  PGK_FLOAT32 = 8,
  PGK_FLOAT64 = 9
};
#define PGK_MAX_DIMS 16

/* dst[i] = (dst_dtype) src[i] for every index i of the N-d index space `shape` (ndim 0..
 * PGK_MAX_DIMS; ndim 0 = one element, and shape/strides may then be NULL).  Strides are in BYTES,
 * may be 0 (broadcast) or negative (reversed views), and are multiples of the element size (as
 * the pointers are).  Any dtype pair.  src and dst must not overlap (the caller stages overlapping copies).
 * Dimensions are coalesced first (size-1 dims dropped, reversed destination dims flipped, dims
 * ordered by destination stride, neighbours contiguous on both sides merged): a C-contiguous
 * copy runs one flat vectorized kernel (cudaMemcpyAsync when the dtypes are equal), a 2-D
 * transpose of one dtype a tiled kernel, anything else an N-d kernel (32-bit index math when
 * the element count and byte extents fit). */
PGK_API int pgk_copy(const void* src, int src_dtype, const int64_t* src_strides,
                     void* dst, int dst_dtype, const int64_t* dst_strides,
                     int ndim, const int64_t* shape, void* stream);

/* dst[i] = value over a strided N-d view (strides in bytes, as pgk_copy).  Integer dtypes take
 * `ival` (wrapped like a C cast), bool takes ival != 0, floating dtypes take `dval` converted
 * exactly as pgk_copy converts a float64 (so equal to numpy.array(dval).astype(dtype); for
 * bfloat16 that is through float32, as ml_dtypes does). */
PGK_API int pgk_fill(void* dst, int dtype, const int64_t* strides, int ndim, const int64_t* shape,
                     double dval, int64_t ival, void* stream);

/* Contiguous dst of n elements.  Integer dtypes: dst[i] = istart + i*istep computed in int64
 * with wrap-around, then narrowed like NumPy's C casts; bool: (istart + i*istep) != 0; float
 * dtypes: dst[i] = (T)(dstart + i*dstep), the product and the sum each rounded in double (no
 * FMA), then converted as pgk_copy converts a float64.  (numpy.arange fills with
 * delta = (start + step) - start; pass that as dstep to reproduce it bit for bit.) */
PGK_API int pgk_arange(void* dst, int dtype, int64_t n, double dstart, double dstep,
                       int64_t istart, int64_t istep, void* stream);

/* numpy.linspace(start, stop, n, endpoint, dtype=dtype) bit for bit: in float64,
 * div = endpoint ? n-1 : n, delta = stop - start, step = delta/div, y[i] = i*step + start
 * (when step == 0: y[i] = i/div*delta + start; when div == 0: y[i] = i*delta + start), with
 * endpoint and n > 1 the last element is exactly `stop`; integer dtypes take floor(y) (as numpy
 * does), then every dtype converts as pgk_copy converts a float64. */
PGK_API int pgk_linspace(void* dst, int dtype, int64_t n, double start, double stop,
                         int endpoint, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* PYGPUKIT_KERNELS_H */
