// Hopper (sm_90a) GEMM family: the lightweight interface between the dispatcher (sm90_gemm.cu)
// and the kernel translation units (sm90_k_*.cu).  No CUTLASS headers here.
//
// Every kernel is a CUTLASS 3 warp-specialized cooperative GEMM (TMA loads, WGMMA, TMA-store
// epilogue) on the stream-K tile scheduler (which also runs plain data-parallel and split-K
// decompositions), with one fused epilogue: D = act(acc + bias[n]) where the activation is picked
// at run time and a null bias reads as zero.  So each (dtype, B layout, tile) is ONE
// instantiation that covers plain, bias, act and bias+act problems.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "gemm_problem.cuh"

namespace pgk::gemm::sm90 {

// How the stream-K scheduler splits the problem (CUTLASS DecompositionMode), plus rasterization.
struct RunOpts {
  int decomposition = 1;  // 0 heuristic, 1 data-parallel, 2 split-K, 3 stream-K
  int splits = 1;         // split-K factor (decomposition 2)
  int swizzle = 1;        // max_swizzle_size (1, 2, 4, 8)
  int raster = 0;         // 0 heuristic, 1 along M, 2 along N
};

// A kernel entry: when ws_needed is non-null only the workspace size is computed (no launch).
using KernelFn = cudaError_t (*)(const Problem& p, const RunOpts& o, void* ws, size_t ws_bytes,
                                 cudaStream_t s, size_t* ws_needed);

#define PGK_SM90_DECLARE(name)                                                              \
  cudaError_t name(const Problem& p, const RunOpts& o, void* ws, size_t ws_bytes, cudaStream_t s, \
                   size_t* ws_needed)

// Naming: <dtype>_<tile>_<cluster>_<B layout: kn = row-major (K,N) B, nk = col-major B>.
// tile "t256" = 128x256x64 (tf32: 128x256x32) cluster 2x1; "t128" = 128x128x64 cluster 1x2.
PGK_SM90_DECLARE(f16_t256_kn);
PGK_SM90_DECLARE(f16_t256_nk);
PGK_SM90_DECLARE(f16_t128_kn);
PGK_SM90_DECLARE(f16_t128_nk);
PGK_SM90_DECLARE(bf16_t256_kn);
PGK_SM90_DECLARE(bf16_t256_nk);
PGK_SM90_DECLARE(bf16_t128_kn);
PGK_SM90_DECLARE(bf16_t128_nk);
PGK_SM90_DECLARE(tf32_t256_nk);
PGK_SM90_DECLARE(tf32_t128_nk);
// TF32 with a row-major B: the transposed problem C^T = B^T A^T (tiles in its terms).
// "t256" = 128x256x32 cluster 2x1, "t128" = 128x128x32 without a cluster.
PGK_SM90_DECLARE(tf32_t256_kn);
PGK_SM90_DECLARE(tf32_t128_kn);

// Test hook (probe harness / benchmarks): force a tile (0 = auto, 1 = t256, 2 = t128) and the
// run options; cleared with force_config(0, nullptr).
void force_config(int tile, const RunOpts* opts);

}  // namespace pgk::gemm::sm90
