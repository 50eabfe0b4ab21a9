// Light declarations shared by the sm80 dispatcher (sm80_dispatch.cu) and the instantiation
// units; no CUTLASS here.
#pragma once

#include <cuda_runtime.h>

#include "gemm_problem.cuh"

namespace pgk::gemm::sm80 {

enum { kF16 = 0, kBF16 = 1, kTF32 = 2, kF32x3 = 3 };
enum { kLarge = 0, kSmall = 1 };

// Static names for note_kernel().
inline const char* kernel_name(int kind, int tile, bool bcol) {
  static const char* const names[4][2][2] = {
      {{"sm80_f16_128x256x32_s3_rr", "sm80_f16_128x256x32_s3_rc"},
       {"sm80_f16_64x64x32_s5_rr", "sm80_f16_64x64x32_s5_rc"}},
      {{"sm80_bf16_128x256x32_s3_rr", "sm80_bf16_128x256x32_s3_rc"},
       {"sm80_bf16_64x64x32_s5_rr", "sm80_bf16_64x64x32_s5_rc"}},
      {{"sm80_tf32_128x128x16_s4_rr", "sm80_tf32_128x128x16_s4_rc"},
       {"sm80_tf32_64x64x16_s5_rr", "sm80_tf32_64x64x16_s5_rc"}},
      {{"sm80_f32x3tf32_128x128x32_s3_rr", "sm80_f32x3tf32_128x128x32_s3_rc"},
       {"sm80_f32x3tf32_64x64x16_s5_rr", "sm80_f32x3tf32_64x64x16_s5_rc"}}};
  return names[kind][tile][bcol ? 1 : 0];
}

// Defined (explicitly instantiated) in sm80_<kind>.cu.
template <int Kind, int Tile, bool BCol>
cudaError_t run(const Problem& p, cudaStream_t s);

}  // namespace pgk::gemm::sm80
