// Library-level entry points of the C ABI: version, build info, error names.
#include <cuda_runtime.h>

#include "pygpukit_kernels.h"

#define PGK_STRINGIFY_(x) #x
#define PGK_STRINGIFY(x) PGK_STRINGIFY_(x)

extern "C" PGK_API int pgk_abi_version(void) { return PGK_ABI_VERSION; }

extern "C" PGK_API const char* pgk_build_info(void) {
  return "{\"abi\": " PGK_STRINGIFY(PGK_ABI_VERSION) ", \"cuda_archs\": \"" PGK_CUDA_ARCHS
         "\", \"nvcc\": \"" PGK_CUDA_COMPILER_VERSION "\"}";
}

extern "C" PGK_API const char* pgk_error_name(int status) {
  return cudaGetErrorName(static_cast<cudaError_t>(status));
}

extern "C" PGK_API const char* pgk_error_string(int status) {
  return cudaGetErrorString(static_cast<cudaError_t>(status));
}
