// Hopper FP8 GEMM kernels: e4m3 x e4m3, configuration "w" (cooperative 128x224x128, cluster 1x1)
// for each output dtype.  See sm90_fp8_kernel.cuh.  N = 224 (a WGMMA N, multiple of 8 up to 256)
// makes M = 256, N = 14336 one wave on 132 SMs: 2 x 64 = 128 tiles (128x128: 224 tiles).
// CuTe's WGMMA selector offers the N sizes that are not powers of two (224 among them) only with
// CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED; without it a 224-wide tile is split into 7 WGMMAs of
// N = 32 (A re-read from shared memory 7 times).  Defined here only, before any CuTe header.
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED 1
#include "sm90_fp8_kernel.cuh"

namespace pgk::gemm::sm90fp8 {
PGK_FP8_DEFINE(fp8_w_e4e4_bf16, PGK_FP8_E4, PGK_FP8_E4, bf16, 128, 224, 128, 1, 1, false, false)
PGK_FP8_DEFINE(fp8_w_e4e4_f16, PGK_FP8_E4, PGK_FP8_E4, f16, 128, 224, 128, 1, 1, false, false)
PGK_FP8_DEFINE(fp8_w_e4e4_f32, PGK_FP8_E4, PGK_FP8_E4, f32, 128, 224, 128, 1, 1, false, false)
}  // namespace pgk::gemm::sm90fp8
