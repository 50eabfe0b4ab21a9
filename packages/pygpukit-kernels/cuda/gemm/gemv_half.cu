// Small-M GEMMs, float16 / bfloat16 (mma.sync, float32 accumulation): see gemv_kernels.cuh.
#include "gemv_kernels.cuh"
#include "gemv_launch.cuh"
#include "launch_utils.cuh"

namespace pgk::gemm::gemv {

namespace {
// Tuned on an H200 (M in {1, 16}, N = 14336, K = 4096, 117 MB weight), vs cuBLAS:
//  * column-major B: 4-warp blocks (4 resident per SM: finer work units than 8-warp blocks, so
//    the 448 blocks balance better over the SMs), warps interleave k32 steps (the block streams
//    each weight row contiguously), L1::no_allocate loads with an L2 256-byte prefetch hint.
//  * row-major B: k permuted inside each k32 chunk (8 B rows per thread, 16-byte A loads:
//    4x fewer A load instructions than k16 fragments), same streaming loads.
//                      NT U  W  PF     MB LM IL     KP
#define PGK_GEMV_COLB_CFG 4, 2, 4, false, 2, 2, true
#define PGK_GEMV_ROWB_CFG 8, 1, 8, false, 1, 2, false, true
//  * row-major B with few 64-column blocks (N <= SMs * 64, ~8K on an H200): 32-column blocks
//    and K split over more warps, so the SMs are not left idle.  Measured on an H200 (M = 1, 16;
//    time of torch / ours, over weight buffers in several placements): N = 4096, K = 14336 from
//    0.48-0.54 to 0.83-0.93 (16 warps), N = 4096, K = 4096 bfloat16 from 0.81-0.97 to
//    1.31-1.63, N = 6144 / 8192 from 0.68-0.93 / 0.78-0.89 to 0.80-1.12 / 0.85-0.97 (8 warps).
#define PGK_GEMV_ROWB_CFG_W16 4, 2, 16, false, 1, 2, true, true
#define PGK_GEMV_ROWB_CFG_W8 4, 2, 8, false, 1, 2, false, true

template <typename T, bool Vec>
void launch_rowb_sized(const Args& g, int batch, cudaStream_t s) {
  const int64_t blocks = int64_t{(g.n + 63) / 64} * batch;
  const int sms = current_sm_count(132);
  if (2 * blocks <= sms) launch_rowb<T, Vec, PGK_GEMV_ROWB_CFG_W16>(g, batch, s);
  else if (blocks <= sms) launch_rowb<T, Vec, PGK_GEMV_ROWB_CFG_W8>(g, batch, s);
  else launch_rowb<T, Vec, PGK_GEMV_ROWB_CFG>(g, batch, s);
}

template <typename T>
cudaError_t launch_t(bool bcol, bool vec, const Args& g, int batch, cudaStream_t s) {
  if (bcol) {
    if (vec) launch_colb<T, true, PGK_GEMV_COLB_CFG>(g, batch, s);
    else launch_colb<T, false, PGK_GEMV_COLB_CFG>(g, batch, s);
  } else {
    if (vec) launch_rowb_sized<T, true>(g, batch, s);
    else launch_rowb_sized<T, false>(g, batch, s);
  }
  return cudaPeekAtLastError();
}
}  // namespace

cudaError_t launch_half(int kind, bool bcol, bool vec, const Args& g, int batch, cudaStream_t s) {
  return kind == 0 ? launch_t<__half>(bcol, vec, g, batch, s)
                   : launch_t<__nv_bfloat16>(bcol, vec, g, batch, s);
}

}  // namespace pgk::gemm::gemv
