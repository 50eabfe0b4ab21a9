// Launchers of the small-M kernels (defined in gemv_half.cu / gemv.cu).
#pragma once

#include <cuda_runtime.h>

#include "gemm_problem.cuh"

namespace pgk::gemm::gemv {

struct Args;
// kind: 0 float16, 1 bfloat16, 2 float32
cudaError_t launch_half(int kind, bool bcol, bool vec, const Args& g, int batch, cudaStream_t s);

}  // namespace pgk::gemm::gemv
