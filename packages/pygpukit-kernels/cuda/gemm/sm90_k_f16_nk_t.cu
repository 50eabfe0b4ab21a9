// Hopper GEMM kernels: float16, B column-major (K-contiguous); the swapped configurations d, e of
// PGK_SM90_CONFIGS16 (sm90_gemm_configs.cuh: C^T = B^T A^T, tiles in that problem's terms).
// See sm90_gemm_kernel.cuh.
#include "sm90_gemm_kernel.cuh"

namespace pgk::gemm::sm90 {
PGK_SM90_DEFINE(f16_d_nk, cutlass::half_t, true, 64, 64, 64, 1, 1, true, true)
PGK_SM90_DEFINE(f16_e_nk, cutlass::half_t, true, 128, 64, 64, 1, 1, false, true)
}  // namespace pgk::gemm::sm90
