// Hopper (sm_90a) GEMM family: the lightweight interface between the dispatcher (sm90_gemm.cu)
// and the kernel translation units (sm90_k_*.cu).  No CUTLASS headers here.
//
// Every kernel is a CUTLASS 3 warp-specialized GEMM (TMA loads, WGMMA, TMA-store epilogue):
// cooperative on the stream-K tile scheduler (which also runs plain data-parallel and split-K
// decompositions) or ping-pong on the persistent data-parallel one (sm90_gemm_kernel.cuh), with one
// fused epilogue: D = act(acc + bias[n]) where the activation is picked at run time and a null
// bias reads as zero.  So each (dtype, B layout, configuration) is ONE instantiation that covers
// plain, bias, act and bias+act problems.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "gemm_problem.cuh"

namespace pgk::gemm::sm90 {

// How the stream-K scheduler splits the problem (CUTLASS DecompositionMode), plus rasterization
// (the ping-pong kernels use swizzle and raster only).
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

// 16-bit configurations, one per code of the shape table (sm90_gemm.cu), each instantiated for
// float16 and bfloat16 and both B layouts (kn = row-major (K,N) B, nk = column-major B):
//   X(code, name, TM, TN, TK, CM, CN, ping-pong, swapped)
// Tiles are in the kernel's terms: a swapped kernel runs C^T = B^T A^T, so its TM runs along our
// N and its TN along our M.
//   a: cooperative 128x256x64, cluster 2x1 (stream-K scheduler)  large products
//   b: ping-pong   128x128x64                                     mid-size, many-tile products
//   c: ping-pong    64x128x64                                     M of a few hundred
//   d: ping-pong    64x64x64, swapped                             small M (64 x 64 output tiles)
//   e: cooperative 128x64x64, swapped (stream-K scheduler)         small M; split-K for long K
#define PGK_SM90_CONFIGS16(X)                  \
  X(0, a, 128, 256, 64, 2, 1, false, false)    \
  X(1, b, 128, 128, 64, 1, 1, true, false)     \
  X(2, c, 64, 128, 64, 1, 1, true, false)      \
  X(3, d, 64, 64, 64, 1, 1, true, true)        \
  X(4, e, 128, 64, 64, 1, 1, false, true)

#define PGK_SM90_DECLARE16(code, name, ...) \
  PGK_SM90_DECLARE(f16_##name##_kn);        \
  PGK_SM90_DECLARE(f16_##name##_nk);        \
  PGK_SM90_DECLARE(bf16_##name##_kn);       \
  PGK_SM90_DECLARE(bf16_##name##_nk);
PGK_SM90_CONFIGS16(PGK_SM90_DECLARE16)
#undef PGK_SM90_DECLARE16

// float32 as TF32.  "t256" = 128x256x32 cluster 2x1, "t128" = 128x128x32 (nk: cluster 1x2),
// "t256c1" = 128x256x32 without a cluster; B column-major (nk) directly, B row-major (kn)
// through the transposed problem.
PGK_SM90_DECLARE(tf32_t256_nk);
PGK_SM90_DECLARE(tf32_t128_nk);
PGK_SM90_DECLARE(tf32_t256_kn);
PGK_SM90_DECLARE(tf32_t128_kn);
PGK_SM90_DECLARE(tf32_t256c1_kn);

// A few rows (2 <= m <= 16) against a large row-major B: ping-pong 64x256x64, no cluster
// (sm90_k_*_kn_s.cu; sm90_gemm.cu's small_m).
PGK_SM90_DECLARE(f16_s_kn);
PGK_SM90_DECLARE(bf16_s_kn);

// Test hook (probe harness / benchmarks): force a configuration (0 = the table's choice; 16-bit:
// 1 + code; TF32: 1 = t256, 2 = t128, 3 = t256c1 (row-major B)) and, if opts is non-null, the
// run options.
void force_config(int config, const RunOpts* opts);

}  // namespace pgk::gemm::sm90
