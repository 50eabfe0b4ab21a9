// Hopper GEMM kernel: float16, B row-major (N-contiguous), few rows (m <= 16): ping-pong
// 64x256x64, no cluster (sm90_gemm.cu's small-M choice).  See sm90_gemm_kernel.cuh.
#include "sm90_gemm_kernel.cuh"

namespace pgk::gemm::sm90 {
PGK_SM90_DEFINE(f16_s_kn, cutlass::half_t, false, 64, 256, 64, 1, 1, true, false)
}  // namespace pgk::gemm::sm90
