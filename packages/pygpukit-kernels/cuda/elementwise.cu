// Elementwise kernels.  Each has an extern "C" __global__ symbol (loadable by name from the
// standalone fatbin through the driver API) and a launcher in the C ABI.
#include <cstdint>

#include "pygpukit_kernels.h"
#include "launch_utils.cuh"

extern "C" __global__ void pgk_add_f32_kernel(const float* __restrict__ a,
                                              const float* __restrict__ b,
                                              float* __restrict__ out, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // 16-byte vector path when all three pointers are 16-byte aligned (the caching allocator's
  // blocks are); scalar tail / fallback otherwise.
  const bool aligned =
      ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) |
        reinterpret_cast<uintptr_t>(out)) & 15u) == 0;
  int64_t scalar_start = 0;
  if (aligned) {
    const int64_t n4 = n / 4;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* o4 = reinterpret_cast<float4*>(out);
    for (int64_t j = i; j < n4; j += stride) {
      const float4 x = a4[j];
      const float4 y = b4[j];
      o4[j] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    scalar_start = n4 * 4;
  }
  for (int64_t j = scalar_start + i; j < n; j += stride) out[j] = a[j] + b[j];
}

extern "C" PGK_API int pgk_add_f32(const float* a, const float* b, float* out, int64_t n,
                                   void* stream) {
  if (n < 0) return static_cast<int>(cudaErrorInvalidValue);
  if (n == 0) return 0;
  constexpr unsigned kBlock = 256;
  const unsigned grid = pgk::grid_for((n + 3) / 4, kBlock);
  pgk_add_f32_kernel<<<grid, kBlock, 0, static_cast<cudaStream_t>(stream)>>>(a, b, out, n);
  return pgk::launch_status();
}
