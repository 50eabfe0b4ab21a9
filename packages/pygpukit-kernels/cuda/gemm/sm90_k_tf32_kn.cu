// Hopper GEMM kernels: float32 inputs as TF32, B row-major (N-contiguous).  TF32 WGMMA reads
// K-major operands only, so these run the transposed problem C^T = B^T A^T with B^T in registers
// (kTransposed in sm90_gemm_kernel.cuh); tile shapes are in that problem's terms: M there is N.
#include "sm90_gemm_kernel.cuh"

namespace pgk::gemm::sm90 {
// 128x256x32 (128 columns of C by 256 rows), cluster 2x1: large problems.
PGK_SM90_DEFINE(tf32_t256_kn, float, false, 128, 256, 32, 2, 1, false, false)
// 128x128x32, no cluster: few tiles along M (a 1x2 cluster would pair M tiles that are not
// there: measured 2.2x slower at 128x14336x4096 on an H200).
PGK_SM90_DEFINE(tf32_t128_kn, float, false, 128, 128, 32, 1, 1, false, false)
// 128x256x32 without a cluster: very large problems, with a swizzled raster (sm90_gemm.cu).
PGK_SM90_DEFINE(tf32_t256c1_kn, float, false, 128, 256, 32, 1, 1, false, false)
}  // namespace pgk::gemm::sm90
