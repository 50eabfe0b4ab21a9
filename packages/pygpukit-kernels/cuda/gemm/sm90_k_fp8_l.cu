// Hopper FP8 GEMM kernels: e4m3 x e4m3, configuration "l" (cooperative 128x256x128, cluster 2x1)
// for each output dtype.  See sm90_fp8_kernel.cuh.
#include "sm90_fp8_kernel.cuh"

namespace pgk::gemm::sm90fp8 {
PGK_FP8_DEFINE(fp8_l_e4e4_bf16, PGK_FP8_E4, PGK_FP8_E4, bf16, 128, 256, 128, 2, 1, false, false)
PGK_FP8_DEFINE(fp8_l_e4e4_f16, PGK_FP8_E4, PGK_FP8_E4, f16, 128, 256, 128, 2, 1, false, false)
PGK_FP8_DEFINE(fp8_l_e4e4_f32, PGK_FP8_E4, PGK_FP8_E4, f32, 128, 256, 128, 2, 1, false, false)
}  // namespace pgk::gemm::sm90fp8
