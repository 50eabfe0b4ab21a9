// Small-M GEMMs, float16 / bfloat16 (mma.sync, float32 accumulation): see gemv_kernels.cuh.
#include "gemv_kernels.cuh"
#include "gemv_launch.cuh"

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

template <typename T>
cudaError_t launch_t(bool bcol, bool vec, const Args& g, int batch, cudaStream_t s) {
  if (bcol) {
    if (vec) launch_colb<T, true, PGK_GEMV_COLB_CFG>(g, batch, s);
    else launch_colb<T, false, PGK_GEMV_COLB_CFG>(g, batch, s);
  } else {
    if (vec) launch_rowb<T, true, PGK_GEMV_ROWB_CFG>(g, batch, s);
    else launch_rowb<T, false, PGK_GEMV_ROWB_CFG>(g, batch, s);
  }
  return cudaPeekAtLastError();
}
}  // namespace

cudaError_t launch_half(int kind, bool bcol, bool vec, const Args& g, int batch, cudaStream_t s) {
  return kind == 0 ? launch_t<__half>(bcol, vec, g, batch, s)
                   : launch_t<__nv_bfloat16>(bcol, vec, g, batch, s);
}

}  // namespace pgk::gemm::gemv
