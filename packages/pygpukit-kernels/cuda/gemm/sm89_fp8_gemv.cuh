// Small-M FP8 GEMM on the mma.sync FP8 tensor cores (sm_89+): the entry point of the kernel in
// sm89_fp8_gemv.cu (fp8_gemv_kernel.cuh).  No CUTLASS headers here (fp8.cu includes it).
#pragma once

#include <cuda_runtime.h>

#include "sm90_fp8_configs.cuh"

namespace pgk::gemm {

// Largest m the small-M kernel runs (one m-tile of 16 rows; beyond, the tile families).
constexpr int kFp8GemvMaxM = 16;

// The small-M FP8 product of an Fp8Problem (sm90_fp8_configs.cuh), m <= kFp8GemvMaxM.
// cudaErrorNotSupported, without launching anything, for a device below compute capability 8.9,
// m > kFp8GemvMaxM, the e5m2 x e5m2 pair, or operands its 16-byte loads cannot read: A / B base
// addresses and lda / ldb not multiples of 16 bytes, or k not a multiple of 16.  C and bias need
// only their element alignment, scales 4 bytes; any n and ldc.
cudaError_t sm89_fp8_gemv(const sm90fp8::Fp8Problem& p, cudaStream_t s);

}  // namespace pgk::gemm
