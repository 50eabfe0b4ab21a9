// Generic SIMT GEMM: any of float16/bfloat16/float32/float64, any alignment, strides, B layout,
// batch strides (0 included), bias + activation.  64x64 output tiles, k-steps of 16 staged in
// shared memory (converted to the accumulation type: float32, float64 for float64), 4x4 outputs
// per thread.  Simple and obviously correct rather than fast.
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "epilogue_runtime_act.cuh"
#include "gemm_problem.cuh"
#include "pygpukit_kernels.h"

namespace pgk::gemm {
namespace {

template <typename T> struct SimtCvt;
template <> struct SimtCvt<__half> {
  using Acc = float;
  static __device__ __forceinline__ float to(__half x) { return __half2float(x); }
  static __device__ __forceinline__ __half from(float x) { return __float2half_rn(x); }
};
template <> struct SimtCvt<__nv_bfloat16> {
  using Acc = float;
  static __device__ __forceinline__ float to(__nv_bfloat16 x) { return __bfloat162float(x); }
  static __device__ __forceinline__ __nv_bfloat16 from(float x) { return __float2bfloat16_rn(x); }
};
template <> struct SimtCvt<float> {
  using Acc = float;
  static __device__ __forceinline__ float to(float x) { return x; }
  static __device__ __forceinline__ float from(float x) { return x; }
};
template <> struct SimtCvt<double> {
  using Acc = double;
  static __device__ __forceinline__ double to(double x) { return x; }
  static __device__ __forceinline__ double from(double x) { return x; }
};

constexpr int kTile = 64, kK = 16;

template <typename T>
__global__ void __launch_bounds__(256) simt_kernel(Problem p) {
  using Cv = SimtCvt<T>;
  using Acc = typename Cv::Acc;
  __shared__ Acc As[kK][kTile + 1];  // As[k][i]
  __shared__ Acc Bs[kK][kTile + 1];  // Bs[k][j]
  const int tid = threadIdx.x;
  const int tx = tid & 15, ty = tid >> 4;  // outputs rows ty + 16*r, columns tx + 16*c
  const int j0 = blockIdx.x * kTile;
  const int mtiles = (p.m + kTile - 1) / kTile;
  // Grid-stride over batches (grid z <= 65535) and row tiles (grid y <= 65535).
  for (int64_t bt = blockIdx.z; bt < p.batch; bt += gridDim.z)
  for (int ti = blockIdx.y; ti < mtiles; ti += gridDim.y) {
    const int i0 = ti * kTile;
    const T* A = static_cast<const T*>(p.a) + bt * p.batch_stride_a;
    const T* B = static_cast<const T*>(p.b) + bt * p.batch_stride_b;
    T* C = static_cast<T*>(p.c) + bt * p.batch_stride_c;
    Acc acc[4][4];
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[r][c] = Acc(0);
    for (int k0 = 0; k0 < p.k; k0 += kK) {
      // A tile 64 x 16: consecutive threads along k (the contiguous direction of row-major A).
#pragma unroll
      for (int e = tid; e < kTile * kK; e += 256) {
        const int kk = e % kK, i = e / kK;
        const int gi = i0 + i, gk = k0 + kk;
        As[kk][i] = (gi < p.m && gk < p.k) ? Cv::to(A[int64_t(gi) * p.lda + gk]) : Acc(0);
      }
      // B tile 16 x 64: consecutive threads along the contiguous direction of B.
#pragma unroll
      for (int e = tid; e < kTile * kK; e += 256) {
        int kk, j;
        if (p.b_col_major) { kk = e % kK; j = e / kK; } else { j = e % kTile; kk = e / kTile; }
        const int gj = j0 + j, gk = k0 + kk;
        Acc v = Acc(0);
        if (gj < p.n && gk < p.k)
          v = Cv::to(p.b_col_major ? B[int64_t(gj) * p.ldb + gk] : B[int64_t(gk) * p.ldb + gj]);
        Bs[kk][j] = v;
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kK; ++kk) {
        Acc a[4], b[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) a[r] = As[kk][ty + 16 * r];
#pragma unroll
        for (int c = 0; c < 4; ++c) b[c] = Bs[kk][tx + 16 * c];
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int c = 0; c < 4; ++c) acc[r][c] = fma(a[r], b[c], acc[r][c]);
      }
      __syncthreads();
    }
    const T* bias = static_cast<const T*>(p.bias);
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int gi = i0 + ty + 16 * r;
      if (gi >= p.m) continue;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int gj = j0 + tx + 16 * c;
        if (gj >= p.n) continue;
        Acc v = acc[r][c];
        if (bias) v += Cv::to(bias[gj]);
        if (p.act != Activation::None) v = apply_activation_outlined<Acc>(v, static_cast<int>(p.act));
        C[int64_t(gi) * p.ldc + gj] = Cv::from(v);
      }
    }
  }
}

}  // namespace

cudaError_t simt_gemm(const Problem& p, cudaStream_t s) {
  const dim3 block(256);
  const int mtiles = (p.m + kTile - 1) / kTile;
  const dim3 grid((p.n + kTile - 1) / kTile, mtiles < 65535 ? mtiles : 65535,
                  p.batch < 65535 ? p.batch : 65535);
  switch (p.dtype) {
    case PGK_FLOAT16: note_kernel("simt_f16_64x64"); simt_kernel<__half><<<grid, block, 0, s>>>(p); break;
    case PGK_BFLOAT16: note_kernel("simt_bf16_64x64"); simt_kernel<__nv_bfloat16><<<grid, block, 0, s>>>(p); break;
    case PGK_FLOAT32: note_kernel("simt_f32_64x64"); simt_kernel<float><<<grid, block, 0, s>>>(p); break;
    case PGK_FLOAT64: note_kernel("simt_f64_64x64"); simt_kernel<double><<<grid, block, 0, s>>>(p); break;
    default: return cudaErrorNotSupported;
  }
  return cudaPeekAtLastError();
}

}  // namespace pgk::gemm
