// The GEMM problem every kernel family receives, and the families' entry points.
//
// dispatch.cu (pgk_gemm) validates the public descriptor, folds/splits batches and picks the
// family; each family picks its own tile configuration by shape.  A family returns
// cudaErrorNotSupported (without launching anything) for a problem it cannot run — wrong arch,
// dtype, layout or alignment — so dispatch can try the next one; any other non-zero status is a
// real failure and is returned to the caller unchanged.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace pgk::gemm {

// Applied after the bias: out = act(acc + bias[n]).  Same codes as PGK_ACT_* in the C header.
enum class Activation : int { None = 0, Relu = 1, Gelu = 2 /* erf form */, GeluTanh = 3 };

// float32 only: Highest = FP32-accurate result (3xTF32 error-compensated tensor-core products or
// FFMA); Tf32 = one TF32 product (10-bit mantissa inputs), FP32 accumulation.
enum class Precision : int { Highest = 0, Tf32 = 1 };

struct Problem {
  int m, n, k;  // all >= 1 when a family is called
  int batch;    // >= 1
  int dtype;    // PGK_FLOAT16, PGK_BFLOAT16, PGK_FLOAT32 or PGK_FLOAT64: A, B, C and bias
  // A is row-major (M, K): element (i, kk) at a[i * lda + kk]; lda >= k.
  const void* a;
  int64_t lda;
  int64_t batch_stride_a;  // elements between batches; 0 = the same A for every batch
  // B is (K, N): row-major (b_col_major false): element (kk, j) at b[kk * ldb + j], ldb >= n;
  // column-major (true, e.g. a linear layer's weight (N, K) transposed): b[j * ldb + kk], ldb >= k.
  const void* b;
  int64_t ldb;
  int64_t batch_stride_b;
  bool b_col_major;
  // C is row-major (M, N): c[i * ldc + j], ldc >= n.  Never aliases A or B.
  void* c;
  int64_t ldc;
  int64_t batch_stride_c;
  const void* bias;  // nullptr, or N contiguous elements of `dtype` added to every row
  Activation act;
  Precision precision;  // ignored unless dtype is PGK_FLOAT32
};

// Compute capability of the current device, cached per device (cudaGetDevice + attributes).
int current_sm();  // 10 * major + minor, e.g. 90

// Families call this with a static string naming the kernel they launched (e.g.
// "sm90_bf16_128x256x64_coop_rr"); pgk_gemm_last_kernel() reports it for tests and benchmarks.
void note_kernel(const char* name);

// ---- families (each in its own translation units) ----
// Hopper (sm_90a only: TMA + WGMMA, warp-specialized).  float16/bfloat16 (row- or col-major B)
// and float32 with Precision::Tf32 (a row-major B through the transposed problem).
cudaError_t sm90_gemm(const Problem& p, void* workspace, size_t workspace_bytes, cudaStream_t s);
size_t sm90_workspace_bytes(const Problem& p);
// Whether the Hopper family, not the small-M streaming kernels, takes p (m <= 16): see
// sm90_gemm.cu's small_m.
bool sm90_takes_small_m(const Problem& p);

// Ampere-style multistage mma.sync (SASS for sm_80/86/89/90/100/120).  float16, bfloat16,
// float32 Tf32 and float32 Highest (3xTF32).
cudaError_t sm80_gemm(const Problem& p, void* workspace, size_t workspace_bytes, cudaStream_t s);
size_t sm80_workspace_bytes(const Problem& p);

// Small M (m <= 16): streams B once at memory bandwidth.  float16, bfloat16, float32 (FFMA,
// exact for both precisions).
cudaError_t gemv_gemm(const Problem& p, cudaStream_t s);

// Always runs: any supported dtype (float64 included), any alignment, any layout.  Correct, not
// fast; float accumulation in float32 for half types, float64 for float64.
cudaError_t simt_gemm(const Problem& p, cudaStream_t s);

}  // namespace pgk::gemm
