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
#define PGK_ABI_VERSION 1

PGK_API int pgk_abi_version(void);

/* JSON object: {"abi": 1, "cuda_archs": "80-real,...,120", "nvcc": "13.0.88"} (static storage). */
PGK_API const char* pgk_build_info(void);

/* CUDA error name and description for a status returned by a launcher (static storage). */
PGK_API const char* pgk_error_name(int status);
PGK_API const char* pgk_error_string(int status);

/* out[i] = a[i] + b[i] for i < n.  out may alias a or b exactly. */
PGK_API int pgk_add_f32(const float* a, const float* b, float* out, int64_t n, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* PYGPUKIT_KERNELS_H */
