// Hopper (sm_90a) FP8 GEMM family: the interface between the FP8 dispatcher (sm90_fp8_gemm.cu)
// and the FP8 kernel translation units (sm90_k_fp8_*.cu).  No CUTLASS headers here.
//
//   C = act(acc * sa * sb * scale_a[m] * scale_b[n] + bias[n]),   acc = sum_k A[m,k] B[n,k]
//
// A (M, K) and B (N, K) are both K-major (row-major, unit stride along K): WGMMA reads FP8
// operands K-major only.  sa / sb are per-tensor scales (float32 scalars in device memory,
// null = 1), scale_a / scale_b per-row / per-column scales (float32 vectors, null = 1), bias is
// null or N values of the output dtype.  Accumulation in float32 (CUTLASS's FP8 fast-accumulation
// mainloop: the tensor cores' own accumulation, as cuBLASLt and torch._scaled_mm with
// use_fast_accum=True).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace pgk::gemm::sm90fp8 {

struct Fp8Problem {
  int m, n, k;
  int a_dtype, b_dtype, out_dtype;  // PGK_FLOAT8_E4M3FN / PGK_FLOAT8_E5M2; PGK_(B)FLOAT16/32
  const void* a;
  int64_t lda;
  const void* b;
  int64_t ldb;
  void* c;
  int64_t ldc;
  const float* sa;       // per-tensor scale of A (1 float) or null
  const float* sb;       // per-tensor scale of B or null
  const float* row_a;    // M floats or null
  const float* col_b;    // N floats or null
  const void* bias;      // N elements of out_dtype or null
  int act;               // pgk::gemm::Activation
};

using Fp8KernelFn = cudaError_t (*)(const Fp8Problem& p, cudaStream_t s);

#define PGK_FP8_DECLARE(name) cudaError_t name(const Fp8Problem& p, cudaStream_t s)

// Configurations (tile in the kernel's terms; a swapped kernel runs C^T = B^T A^T, so its M is
// our N):
//   l: cooperative 128x256x128, cluster 2x1          large products
//   m: ping-pong   128x128x128, cluster 1x1          mid-size products; the mixed e4m3/e5m2 pairs
//   s: ping-pong    64x128x128 ... swapped           small M (our M along the kernel's 64-wide N)
// Output dtypes: bf16, f16, f32.  e4m3 x e4m3 has all three configurations, the mixed pairs
// (e4m3 x e5m2, e5m2 x e4m3) the "m" configuration only.
#define PGK_FP8_OUTS(X, cfg, ab) X(cfg, ab, bf16) X(cfg, ab, f16) X(cfg, ab, f32)
#define PGK_FP8_DECL_ONE(cfg, ab, out) PGK_FP8_DECLARE(fp8_##cfg##_##ab##_##out);
PGK_FP8_OUTS(PGK_FP8_DECL_ONE, l, e4e4)
PGK_FP8_OUTS(PGK_FP8_DECL_ONE, m, e4e4)
PGK_FP8_OUTS(PGK_FP8_DECL_ONE, s, e4e4)
PGK_FP8_OUTS(PGK_FP8_DECL_ONE, m, e4e5)
PGK_FP8_OUTS(PGK_FP8_DECL_ONE, m, e5e4)
#undef PGK_FP8_DECL_ONE

// Test hook: force configuration 1 = l, 2 = m, 3 = s (0 = the shape heuristic).
void force_config(int config);

}  // namespace pgk::gemm::sm90fp8

namespace pgk::gemm {
// The family's entry (sm90_fp8_gemm.cu, built for sm_90a only); cudaErrorNotSupported without
// launching anything for a device other than compute capability 9.0, an unsupported dtype pair or
// operands TMA cannot read (16-byte aligned pointers and row strides).
cudaError_t sm90_fp8_gemm(const sm90fp8::Fp8Problem& p, cudaStream_t s);
}  // namespace pgk::gemm
