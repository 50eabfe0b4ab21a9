// Hopper FP8 GEMM kernels: e4m3 x e4m3, configuration "t" (cooperative 128x32x128 on the swapped
// problem C^T = B^T A^T, cluster 1x1) for each output dtype.  See sm90_fp8_kernel.cuh.
// For 16 < M <= 32 (our M along the kernel's 32-wide N): N = 14336 gives 112 tiles of 128 weight
// rows, one wave on 132 SMs, where the 64x64 swapped kernel ("s") has 224 tiles (1.7 waves).
#include "sm90_fp8_kernel.cuh"

namespace pgk::gemm::sm90fp8 {
PGK_FP8_DEFINE(fp8_t_e4e4_bf16, PGK_FP8_E4, PGK_FP8_E4, bf16, 128, 32, 128, 1, 1, false, true)
PGK_FP8_DEFINE(fp8_t_e4e4_f16, PGK_FP8_E4, PGK_FP8_E4, f16, 128, 32, 128, 1, 1, false, true)
PGK_FP8_DEFINE(fp8_t_e4e4_f32, PGK_FP8_E4, PGK_FP8_E4, f32, 128, 32, 128, 1, 1, false, true)
}  // namespace pgk::gemm::sm90fp8
