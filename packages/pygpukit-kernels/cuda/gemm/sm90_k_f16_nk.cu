// Hopper GEMM kernels: f16, B column-major (K-contiguous).  See sm90_gemm_kernel.cuh.
#include "sm90_gemm_kernel.cuh"

namespace pgk::gemm::sm90 {
// 128x256x64, cluster 2x1: large problems.
PGK_SM90_DEFINE(f16_t256_nk, cutlass::half_t, true, 128, 256, 64, 2, 1, false, false)
// 128x128x64, cluster 1x2: small M / few tiles.
PGK_SM90_DEFINE(f16_t128_nk, cutlass::half_t, true, 128, 128, 64, 1, 2, false, false)
}  // namespace pgk::gemm::sm90
