// Hopper GEMM kernels: bfloat16, B column-major (K-contiguous); configurations a, b, c of
// PGK_SM90_CONFIGS16 (sm90_gemm_configs.cuh).  See sm90_gemm_kernel.cuh.
#include "sm90_gemm_kernel.cuh"

namespace pgk::gemm::sm90 {
PGK_SM90_DEFINE(bf16_a_nk, cutlass::bfloat16_t, true, 128, 256, 64, 2, 1, false, false)
PGK_SM90_DEFINE(bf16_b_nk, cutlass::bfloat16_t, true, 128, 128, 64, 1, 1, true, false)
PGK_SM90_DEFINE(bf16_c_nk, cutlass::bfloat16_t, true, 64, 128, 64, 1, 1, true, false)
}  // namespace pgk::gemm::sm90
