// Hopper FP8 GEMM kernels: e4m3 x e4m3, configuration "s" (ping-pong 64x64x128 on the swapped
// problem C^T = B^T A^T: small M runs along the kernel's 64-wide N) for each output dtype.
// See sm90_fp8_kernel.cuh.
#include "sm90_fp8_kernel.cuh"

namespace pgk::gemm::sm90fp8 {
PGK_FP8_DEFINE(fp8_s_e4e4_bf16, PGK_FP8_E4, PGK_FP8_E4, bf16, 64, 64, 128, 1, 1, true, true)
PGK_FP8_DEFINE(fp8_s_e4e4_f16, PGK_FP8_E4, PGK_FP8_E4, f16, 64, 64, 128, 1, 1, true, true)
PGK_FP8_DEFINE(fp8_s_e4e4_f32, PGK_FP8_E4, PGK_FP8_E4, f32, 64, 64, 128, 1, 1, true, true)
}  // namespace pgk::gemm::sm90fp8
