// mma.sync FP8 GEMM kernels (sm_89+): e4m3 x e4m3 for each output dtype.  See sm89_fp8_kernel.cuh.
#include "sm89_fp8_kernel.cuh"

namespace pgk::gemm::sm89fp8 {
PGK_FP8MMA_DEFINE(fp8mma_e4e4_bf16, PGK_FP8MMA_E4, PGK_FP8MMA_E4, bf16)
PGK_FP8MMA_DEFINE(fp8mma_e4e4_f16, PGK_FP8MMA_E4, PGK_FP8MMA_E4, f16)
PGK_FP8MMA_DEFINE(fp8mma_e4e4_f32, PGK_FP8MMA_E4, PGK_FP8MMA_E4, f32)
}  // namespace pgk::gemm::sm89fp8
