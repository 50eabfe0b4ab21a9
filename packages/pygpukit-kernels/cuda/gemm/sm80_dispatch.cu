// sm80 family entry points: checks (arch, dtype, alignment) and the shape -> tile choice.
// The kernels are the CUTLASS 2.x instantiations in sm80_<kind>.cu.
#include <climits>
#include <cstdint>

#include <cuda_runtime.h>

#include "gemm_problem.cuh"
#include "launch_utils.cuh"
#include "pygpukit_kernels.h"
#include "sm80_gemm.cuh"

namespace pgk::gemm {
namespace {

bool aligned_ptr(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Every operand must allow 128-bit accesses: `al` elements per access.
bool sm80_aligned(const Problem& p, int al) {
  auto ok = [al](int64_t v) { return v % al == 0; };
  if (!aligned_ptr(p.a) || !aligned_ptr(p.b) || !aligned_ptr(p.c)) return false;
  if (p.bias && !aligned_ptr(p.bias)) return false;
  if (!ok(p.k) || !ok(p.n) || !ok(p.lda) || !ok(p.ldb) || !ok(p.ldc)) return false;
  if (p.batch > 1 && (!ok(p.batch_stride_a) || !ok(p.batch_stride_b) || !ok(p.batch_stride_c)))
    return false;
  // CUTLASS 2.x strides are 32-bit.
  return p.lda <= INT_MAX && p.ldb <= INT_MAX && p.ldc <= INT_MAX;
}


int64_t tiles(const Problem& p, int tm, int tn) {
  return int64_t((p.m + tm - 1) / tm) * ((p.n + tn - 1) / tn) * p.batch;
}

}  // namespace

cudaError_t sm80_gemm(const Problem& p, void* workspace, size_t workspace_bytes,
                      cudaStream_t s) {
  (void)workspace;
  (void)workspace_bytes;
  if (current_sm() < 80) return cudaErrorNotSupported;
  if (p.batch > 65535) return cudaErrorNotSupported;  // grid z
  int kind;
  switch (p.dtype) {
    case PGK_FLOAT16: kind = sm80::kF16; break;
    case PGK_BFLOAT16: kind = sm80::kBF16; break;
    case PGK_FLOAT32:
      kind = p.precision == Precision::Tf32 ? sm80::kTF32 : sm80::kF32x3;
      break;
    default: return cudaErrorNotSupported;
  }
  const bool half = kind == sm80::kF16 || kind == sm80::kBF16;
  if (!sm80_aligned(p, half ? 8 : 4)) return cudaErrorNotSupported;

  // Large tiles once they fill the machine about once; small tiles for few-tile shapes.
  const int64_t large_tiles = half ? tiles(p, 128, 256) : tiles(p, 128, 128);
  const int tile = large_tiles >= current_sm_count(108) ? sm80::kLarge : sm80::kSmall;

#define PGK_SM80_CASE(KIND)                                                   \
  case KIND:                                                                  \
    if (tile == sm80::kLarge)                                                 \
      return p.b_col_major ? sm80::run<KIND, sm80::kLarge, true>(p, s)        \
                           : sm80::run<KIND, sm80::kLarge, false>(p, s);      \
    return p.b_col_major ? sm80::run<KIND, sm80::kSmall, true>(p, s)          \
                         : sm80::run<KIND, sm80::kSmall, false>(p, s);
  switch (kind) {
    PGK_SM80_CASE(sm80::kF16)
    PGK_SM80_CASE(sm80::kBF16)
    PGK_SM80_CASE(sm80::kTF32)
    PGK_SM80_CASE(sm80::kF32x3)
  }
#undef PGK_SM80_CASE
  return cudaErrorNotSupported;
}

size_t sm80_workspace_bytes(const Problem& p) {
  (void)p;
  return 0;  // no split-K: every configuration runs without a workspace
}

}  // namespace pgk::gemm
