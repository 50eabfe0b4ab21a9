// mma.sync FP8 GEMM family (sm_89+): the entry point pgk::gemm::sm89_fp8_gemm and its test hook.
// The kernels live in sm89_fp8_k_*.cu (CUTLASS 2.x, see sm89_fp8_kernel.cuh); this file includes
// no CUTLASS header.
#include <atomic>
#include <cstdint>

#include "gemm_problem.cuh"
#include "pygpukit_kernels.h"
#include "sm89_fp8_configs.cuh"

namespace pgk::gemm {
namespace sm89fp8 {
namespace {

struct Entry {
  Fp8KernelFn bf16, f16, f32;
  const char *nbf16, *nf16, *nf32;
};

#define PGK_FP8MMA_NAME(ab, out) "sm89_fp8_" #ab "_128x128x64_w64x32_s4_" #out
#define PGK_FP8MMA_ENTRY(ab)                                                          \
  Entry {                                                                             \
    fp8mma_##ab##_bf16, fp8mma_##ab##_f16, fp8mma_##ab##_f32,                         \
        PGK_FP8MMA_NAME(ab, bf16), PGK_FP8MMA_NAME(ab, f16), PGK_FP8MMA_NAME(ab, f32) \
  }

const Entry kE4E4 = PGK_FP8MMA_ENTRY(e4e4);
const Entry kE4E5 = PGK_FP8MMA_ENTRY(e4e5);
const Entry kE5E4 = PGK_FP8MMA_ENTRY(e5e4);

}  // namespace
}  // namespace sm89fp8

cudaError_t sm89_fp8_gemm(const sm89fp8::Fp8Problem& p, cudaStream_t s) {
  using namespace sm89fp8;
  // mma.sync with FP8 operands exists from sm_89 on (this object library carries SASS for
  // sm_89/90/100 and SASS + PTX for sm_120); an sm_80/86 device has no FP8 tensor cores.
  if (current_sm() < 89) return cudaErrorNotSupported;
  // 16-byte cp.async of A and B: aligned bases and row strides, whole 16-element K chunks.
  auto aligned16 = [](const void* q) { return (reinterpret_cast<uintptr_t>(q) & 15u) == 0; };
  if (!aligned16(p.a) || !aligned16(p.b) || p.lda % 16 || p.ldb % 16 || p.k % 16)
    return cudaErrorNotSupported;
  const bool a4 = p.a_dtype == PGK_FLOAT8_E4M3FN, b4 = p.b_dtype == PGK_FLOAT8_E4M3FN;
  // e5m2 x e5m2: refused as by the sm_90a family (and torch._scaled_mm).
  const Entry* e = a4 && b4 ? &kE4E4 : a4 ? &kE4E5 : b4 ? &kE5E4 : nullptr;
  if (e == nullptr) return cudaErrorNotSupported;
  Fp8KernelFn fn =
      p.out_dtype == PGK_BFLOAT16 ? e->bf16 : p.out_dtype == PGK_FLOAT16 ? e->f16 : e->f32;
  const char* name =
      p.out_dtype == PGK_BFLOAT16 ? e->nbf16 : p.out_dtype == PGK_FLOAT16 ? e->nf16 : e->nf32;
  const cudaError_t err = fn(p, s);
  if (err == cudaSuccess) note_kernel(name);
  return err;
}

}  // namespace pgk::gemm
