// Hopper GEMM kernels: bfloat16, B row-major (N-contiguous); the swapped configurations d, e of
// PGK_SM90_CONFIGS16 (sm90_gemm_configs.cuh: C^T = B^T A^T, tiles in that problem's terms).
// See sm90_gemm_kernel.cuh.
#include "sm90_gemm_kernel.cuh"

namespace pgk::gemm::sm90 {
PGK_SM90_DEFINE(bf16_d_kn, cutlass::bfloat16_t, false, 64, 64, 64, 1, 1, true, true)
PGK_SM90_DEFINE(bf16_e_kn, cutlass::bfloat16_t, false, 128, 64, 64, 1, 1, false, true)
}  // namespace pgk::gemm::sm90
