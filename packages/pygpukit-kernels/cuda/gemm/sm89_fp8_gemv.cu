// Small-M FP8 GEMM (mma.sync m16n8k32, sm_89+): instantiations and the entry point
// pgk::gemm::sm89_fp8_gemv.  The kernel is in fp8_gemv_kernel.cuh.
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fp8_gemv_kernel.cuh"
#include "gemm_problem.cuh"
#include "pygpukit_kernels.h"
#include "sm89_fp8_gemv.cuh"

namespace pgk::gemm {
namespace fp8gemv {
namespace {

// Tuned on an H200 (M in {1, 8, 16}, N = 14336, K = 4096: a 58.7 MB weight; CUDA events over 50
// back-to-back launches, 27 variants): 2 n-tiles (16 columns) per warp, 4 warps interleaving k128
// steps, 8 blocks per SM (64 registers): 896 blocks fit one wave on 132 SMs (1056 slots) and
// 32 warps per SM keep enough 16-byte loads in flight; 18.3-18.8 us (3.1-3.2 TB/s) for m 1-16.
// Fewer resident blocks than blocks (6 per SM: 792 slots) cost a second partial wave (+40%);
// software pipelining costs registers (fewer warps, slower); a second m-tile for m <= 32 runs at
// 33 us (the FP8 mma is emulated on sm_90: each fragment converted to f16 for HMMA), slower than
// the sm_90a WGMMA kernels there, hence kFp8GemvMaxM = 16.  CUPTI device times in the library
// (m = 1 / 8 / 16): 17.2 / 17.6 / 17.9 us, torch._scaled_mm 16.7 / 16.3 / 16.3 us (91-97%); on
// Hopper the swapped 128x32 WGMMA kernel is faster still (16.6-16.9 us) and runs first (fp8.cu).
//                       NT MT U  W  MB LM PF
#define PGK_FP8_GEMV_CFG 2, 1, 2, 4, 8, 2, false

template <typename OT, int EA, int EB>
cudaError_t launch_m(const Args& g, cudaStream_t s) {
  return launch_colb<OT, EA, EB, PGK_FP8_GEMV_CFG>(g, s);
}

template <typename OT>
cudaError_t launch_ab(int ea, int eb, const Args& g, cudaStream_t s) {
  if (ea == 0 && eb == 0) return launch_m<OT, 0, 0>(g, s);
  if (ea == 0) return launch_m<OT, 0, 1>(g, s);
  return launch_m<OT, 1, 0>(g, s);
}

const char* kernel_name(int ea, int eb, int out_dtype) {
  // Static strings for note_kernel: pair x output.
  static const char* const names[3][3] = {
      {"sm89_fp8_gemv_e4e4_bf16", "sm89_fp8_gemv_e4e4_f16", "sm89_fp8_gemv_e4e4_f32"},
      {"sm89_fp8_gemv_e4e5_bf16", "sm89_fp8_gemv_e4e5_f16", "sm89_fp8_gemv_e4e5_f32"},
      {"sm89_fp8_gemv_e5e4_bf16", "sm89_fp8_gemv_e5e4_f16", "sm89_fp8_gemv_e5e4_f32"}};
  const int pair = ea == 0 && eb == 0 ? 0 : ea == 0 ? 1 : 2;
  const int out = out_dtype == PGK_BFLOAT16 ? 0 : out_dtype == PGK_FLOAT16 ? 1 : 2;
  return names[pair][out];
}

}  // namespace
}  // namespace fp8gemv

cudaError_t sm89_fp8_gemv(const sm90fp8::Fp8Problem& p, cudaStream_t s) {
  using namespace fp8gemv;
  if (current_sm() < 89) return cudaErrorNotSupported;  // no FP8 mma.sync before sm_89
  if (p.m < 1 || p.m > kFp8GemvMaxM) return cudaErrorNotSupported;
  auto aligned16 = [](const void* q) { return (reinterpret_cast<uintptr_t>(q) & 15u) == 0; };
  if (!aligned16(p.a) || !aligned16(p.b) || p.lda % 16 || p.ldb % 16 || p.k % 16)
    return cudaErrorNotSupported;
  const bool a4 = p.a_dtype == PGK_FLOAT8_E4M3FN, b4 = p.b_dtype == PGK_FLOAT8_E4M3FN;
  if (!a4 && !b4) return cudaErrorNotSupported;  // e5m2 x e5m2: no such mma pair used
  const int ea = a4 ? 0 : 1, eb = b4 ? 0 : 1;
  const Args& g = p;
  cudaError_t err;
  if (p.out_dtype == PGK_BFLOAT16) err = launch_ab<__nv_bfloat16>(ea, eb, g, s);
  else if (p.out_dtype == PGK_FLOAT16) err = launch_ab<__half>(ea, eb, g, s);
  else if (p.out_dtype == PGK_FLOAT32) err = launch_ab<float>(ea, eb, g, s);
  else return cudaErrorNotSupported;
  if (err == cudaSuccess) note_kernel(kernel_name(ea, eb, p.out_dtype));
  return err;
}

}  // namespace pgk::gemm
