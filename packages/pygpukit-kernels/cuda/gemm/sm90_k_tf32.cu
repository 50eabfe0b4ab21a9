// Hopper GEMM kernels: float32 inputs as TF32 (one TF32 product, FP32 accumulation), B
// column-major (K-contiguous: TF32 WGMMA reads K-major operands only).  See sm90_gemm_kernel.cuh.
#include "sm90_gemm_kernel.cuh"

namespace pgk::gemm::sm90 {
// 128x256x32 (128-byte K rows), cluster 2x1: large problems.
PGK_SM90_DEFINE(tf32_t256_nk, float, true, 128, 256, 32, 2, 1, false, false)
// 128x128x32, cluster 1x2: small M / few tiles.
PGK_SM90_DEFINE(tf32_t128_nk, float, true, 128, 128, 32, 1, 2, false, false)
}  // namespace pgk::gemm::sm90
