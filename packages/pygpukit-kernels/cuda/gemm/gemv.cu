// Small-M family entry point (m <= 16 per batch) and the float32 (FFMA) kernels' launches.
#include <cstdint>

#include "gemv_kernels.cuh"
#include "gemv_launch.cuh"
#include "pygpukit_kernels.h"

namespace pgk::gemm {

namespace {
bool al16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }
}  // namespace

cudaError_t gemv_gemm(const Problem& p, cudaStream_t s) {
  if (p.m > 16 || p.batch > 65535) return cudaErrorNotSupported;
  int kind;
  switch (p.dtype) {
    case PGK_FLOAT16: kind = 0; break;
    case PGK_BFLOAT16: kind = 1; break;
    case PGK_FLOAT32: kind = 2; break;
    default: return cudaErrorNotSupported;
  }
  if (kind < 2 && current_sm() < 80) return cudaErrorNotSupported;  // mma.sync bf16/f16.f32
  const int vl = kind < 2 ? 8 : 4;  // elements per 16 bytes
  const bool vec = al16(p.a) && al16(p.b) && p.lda % vl == 0 && p.ldb % vl == 0 &&
                   (p.batch == 1 || (p.batch_stride_a % vl == 0 && p.batch_stride_b % vl == 0));
  gemv::Args g{p.m, p.n, p.k, p.a, p.lda, p.batch_stride_a, p.b, p.ldb, p.batch_stride_b,
               p.c, p.ldc, p.batch_stride_c, p.bias, static_cast<int>(p.act)};
  static const char* const names[3][2] = {{"gemv_f16_mma_rowb", "gemv_f16_mma_colb"},
                                          {"gemv_bf16_mma_rowb", "gemv_bf16_mma_colb"},
                                          {"gemv_f32_ffma_rowb", "gemv_f32_ffma_colb"}};
  note_kernel(names[kind][p.b_col_major ? 1 : 0]);
  if (kind < 2) return gemv::launch_half(kind, p.b_col_major, vec, g, p.batch, s);

  const dim3 block(256);
  if (p.b_col_major) {
    const int per_block = gemv::kWarps * gemv::kF32Rows;
    const dim3 grid((p.n + per_block - 1) / per_block, p.batch);
    if (vec) gemv::gemv_f32_colb<true><<<grid, block, 0, s>>>(g);
    else gemv::gemv_f32_colb<false><<<grid, block, 0, s>>>(g);
  } else {
    const dim3 grid((p.n + 127) / 128, p.batch);
    if (vec) gemv::gemv_f32_rowb<true><<<grid, block, 0, s>>>(g);
    else gemv::gemv_f32_rowb<false><<<grid, block, 0, s>>>(g);
  }
  return cudaPeekAtLastError();
}

}  // namespace pgk::gemm
