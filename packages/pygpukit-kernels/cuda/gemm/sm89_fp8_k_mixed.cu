// mma.sync FP8 GEMM kernels (sm_89+): the mixed pairs e4m3 x e5m2 and e5m2 x e4m3 for each output
// dtype.  See sm89_fp8_kernel.cuh.
#include "sm89_fp8_kernel.cuh"

namespace pgk::gemm::sm89fp8 {
PGK_FP8MMA_DEFINE(fp8mma_e4e5_bf16, PGK_FP8MMA_E4, PGK_FP8MMA_E5, bf16)
PGK_FP8MMA_DEFINE(fp8mma_e4e5_f16, PGK_FP8MMA_E4, PGK_FP8MMA_E5, f16)
PGK_FP8MMA_DEFINE(fp8mma_e4e5_f32, PGK_FP8MMA_E4, PGK_FP8MMA_E5, f32)
PGK_FP8MMA_DEFINE(fp8mma_e5e4_bf16, PGK_FP8MMA_E5, PGK_FP8MMA_E4, bf16)
PGK_FP8MMA_DEFINE(fp8mma_e5e4_f16, PGK_FP8MMA_E5, PGK_FP8MMA_E4, f16)
PGK_FP8MMA_DEFINE(fp8mma_e5e4_f32, PGK_FP8MMA_E5, PGK_FP8MMA_E4, f32)
}  // namespace pgk::gemm::sm89fp8
