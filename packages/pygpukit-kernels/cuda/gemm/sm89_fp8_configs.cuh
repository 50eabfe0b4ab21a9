// FP8 GEMM on the mma.sync FP8 tensor cores (sm_89+): the interface between the FP8 C ABI
// (fp8.cu), the family's entry (sm89_fp8_gemm.cu) and its kernel translation units
// (sm89_fp8_k_*.cu, CUTLASS 2.x: see sm89_fp8_kernel.cuh).  No CUTLASS headers here.
//
// The product and its operands are those of the sm_90a family (sm90_fp8_configs.cuh: the same
// Fp8Problem).  One tile configuration (128x128x64, 64x32x64 warps, 4 stages) for every pair and
// output dtype: the family runs on Ada (sm_89), Blackwell (sm_100, sm_120, the latter also
// through PTX on later archs) and, when forced or when the sm_90a family declines, on Hopper.
#pragma once

#include <cuda_runtime.h>

#include "sm90_fp8_configs.cuh"

namespace pgk::gemm::sm89fp8 {

using Fp8Problem = ::pgk::gemm::sm90fp8::Fp8Problem;
using Fp8KernelFn = cudaError_t (*)(const Fp8Problem& p, cudaStream_t s);

#define PGK_FP8MMA_DECLARE(name) cudaError_t name(const Fp8Problem& p, cudaStream_t s)
// Pairs e4m3 x e4m3, e4m3 x e5m2, e5m2 x e4m3 (the sm_90a family's), outputs bf16, f16, f32.
#define PGK_FP8MMA_OUTS(X, ab) X(ab, bf16) X(ab, f16) X(ab, f32)
#define PGK_FP8MMA_DECL_ONE(ab, out) PGK_FP8MMA_DECLARE(fp8mma_##ab##_##out);
PGK_FP8MMA_OUTS(PGK_FP8MMA_DECL_ONE, e4e4)
PGK_FP8MMA_OUTS(PGK_FP8MMA_DECL_ONE, e4e5)
PGK_FP8MMA_OUTS(PGK_FP8MMA_DECL_ONE, e5e4)
#undef PGK_FP8MMA_DECL_ONE

}  // namespace pgk::gemm::sm89fp8

namespace pgk::gemm {
// The family's entry (sm89_fp8_gemm.cu).  cudaErrorNotSupported, without launching anything, for
// a device below compute capability 8.9, an e5m2 x e5m2 pair, or operands the 16-byte cp.async
// loads cannot read: A / B base addresses and lda / ldb not multiples of 16 bytes, or k not a
// multiple of 16 (a partial 16-byte access along K would read past k).  C and bias need only
// their element alignment, scales 4 bytes; any n, m and ldc.
cudaError_t sm89_fp8_gemm(const sm89fp8::Fp8Problem& p, cudaStream_t s);
}  // namespace pgk::gemm
