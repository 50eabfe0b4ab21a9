// Small-M FP8 GEMM (m <= 16 * MT): the weight B (N, K) is streamed once from memory, A (tiny)
// stays in L1/L2.  The FP8 twin of gemv_kernels.cuh's gemv_mma_colb:
//
//   C[m, n] = act(acc * sa * sb * row_a[m] * col_b[n] + bias[n]),  acc = sum_k A[m, k] B[n, k]
//
// mma.sync m16n8k32 (FP8 operands, float32 accumulation: every product of two FP8 values is exact
// in float32).  Each thread loads 16 bytes (16 k) of one B row and the same 16 k of A rows gi and
// gi + 8; inside a k64 chunk the k order is permuted identically for A and B (a dot product does
// not care), so bytes 0-7 feed one mma's fragments and bytes 8-15 the next one's, no shuffles.
// W warps per block split K in interleaved k64*U steps (the block streams each weight row
// contiguously); their partial sums are reduced through shared memory in a fixed order
// (deterministic, no atomics).  B is read with streaming loads (ld.global.nc.L1::no_allocate
// with an L2 256-byte prefetch hint), A with __ldg (re-read by every block).  Native FP8 mma.sync
// on sm_89 / sm_10x / sm_12x; on sm_90 ptxas emulates it (F2FP unpacks to f16, then HMMA), so the
// conversions, not only the loads, bound the kernel there (the instantiation in sm89_fp8_gemv.cu
// and fp8.cu's dispatch account for it).
//
// Requirements (checked by the launcher): A, B 16-byte aligned with lda, ldb multiples of 16 and
// k a multiple of 16, so every 16-byte load is either wholly inside a row or wholly past k.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "epilogue_runtime_act.cuh"
#include "gemv_kernels.cuh"
#include "sm90_fp8_configs.cuh"

namespace pgk::gemm::fp8gemv {

// The kernel takes the product as the FP8 dispatch describes it (a, b: FP8 bytes).
using Args = sm90fp8::Fp8Problem;
using gemv::Cvt;

// FP8 operand kinds of the mma: 0 = e4m3, 1 = e5m2 (e5m2 x e5m2 is not instantiated).
template <int EA, int EB>
__device__ __forceinline__ void mma16832(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define PGK_FP8_MMA(ta, tb)                                                                   \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." ta "." tb ".f32 {%0,%1,%2,%3}, "      \
               "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                                     \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                               \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))
  if constexpr (EA == 0 && EB == 0) PGK_FP8_MMA("e4m3", "e4m3");
  else if constexpr (EA == 0) PGK_FP8_MMA("e4m3", "e5m2");
  else PGK_FP8_MMA("e5m2", "e4m3");
#undef PGK_FP8_MMA
#else
  // The object library is built for sm_89+ only; nothing runs this branch.
  (void)d; (void)a0; (void)a1; (void)a2; (void)a3; (void)b0; (void)b1;
#endif
}

// NT n-tiles of 8 columns per warp (8 * NT columns per block), MT m-tiles of 16 rows, U k64
// chunks per step.
template <int NT, int MT, int U>
struct Frag {
  uint4 b[U][NT];
  uint4 a[U][MT][2];  // rows 16 * mt + gi, 16 * mt + gi + 8
};

// OT: output type; EA / EB: operand kinds; MT m-tiles (MT = 0: one m-tile of which only rows
// 0-7 exist, m <= 8: the A fragments of rows 8-15 are constant zeros, neither loaded nor
// converted); W warps per block; MB: minimum blocks per SM (launch bounds); LM: B load mode; PF:
// software pipelining (the next step's loads issued before this step's mma).
template <typename OT, int EA, int EB, int NT, int MT_, int U, int W, int MB, int LM, bool PF>
__global__ void __launch_bounds__(W * 32, MB) fp8_gemv_colb(Args g) {
  constexpr int MT = MT_ == 0 ? 1 : MT_;
  constexpr bool kHalf = MT_ == 0;
  constexpr int kStep = 64 * U;      // k per warp step
  constexpr int kAdv = W * kStep;    // interleaved: warp w takes steps w, w + W, ...
  constexpr int kAcc = MT * NT * 4;  // accumulators per thread
  __shared__ float red[W][kAcc][32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int gi = lane >> 2, ti = lane & 3;
  const int n0 = blockIdx.x * (8 * NT);

  float acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.f;

  // Rows of A past m and columns past n read nothing (zeros); their results are not stored.
  const uint8_t* ap[MT][2];
  bool aok[MT][2];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = 16 * i + 8 * h + gi;
      aok[i][h] = r < g.m && !(kHalf && h == 1);
      ap[i][h] = static_cast<const uint8_t*>(g.a) + int64_t(aok[i][h] ? r : 0) * g.lda + ti * 16;
    }
  const uint8_t* bp[NT];
  bool nok[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int n = n0 + j * 8 + gi;
    nok[j] = n < g.n;
    bp[j] = static_cast<const uint8_t*>(g.b) + int64_t(nok[j] ? n : 0) * g.ldb + ti * 16;
  }

  const int kb = w * kStep;
  auto load = [&](int k0, Frag<NT, MT, U>& f) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int kk = k0 + u * 64;
      const bool kok = kk + ti * 16 < g.k;  // k % 16 == 0: the 16 bytes are all in or all out
      const uint4 z = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
      for (int j = 0; j < NT; ++j) f.b[u][j] = (kok && nok[j]) ? gemv::ld16<LM>(reinterpret_cast<const uint16_t*>(bp[j] + kk)) : z;
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < (kHalf ? 1 : 2); ++h)
          f.a[u][i][h] = (kok && aok[i][h]) ? __ldg(reinterpret_cast<const uint4*>(ap[i][h] + kk)) : z;
      if constexpr (kHalf) f.a[u][0][1] = z;
    }
  };
  auto compute = [&](const Frag<NT, MT, U>& f) {
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const uint4 &a0 = f.a[u][i][0], &a1 = f.a[u][i][1], &b = f.b[u][j];
          mma16832<EA, EB>(acc[i][j], a0.x, a1.x, a0.y, a1.y, b.x, b.y);
          mma16832<EA, EB>(acc[i][j], a0.z, a1.z, a0.w, a1.w, b.z, b.w);
        }
  };
  if constexpr (PF) {
    Frag<NT, MT, U> cur;
    load(kb, cur);
    for (int k0 = kb; k0 < g.k; k0 += kAdv) {
      Frag<NT, MT, U> nxt;
      load(k0 + kAdv, nxt);  // past k: zeros, no memory access
      compute(cur);
      cur = nxt;
    }
  } else {
    for (int k0 = kb; k0 < g.k; k0 += kAdv) {
      Frag<NT, MT, U> cur;
      load(k0, cur);
      compute(cur);
    }
  }

#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) red[w][(i * NT + j) * 4 + r][lane] = acc[i][j][r];
  __syncthreads();
  // Epilogue in the order of the sm_90a family's: acc * (sa * sb) * row_a * col_b + bias.
  const float s = (g.sa ? __ldg(g.sa) : 1.f) * (g.sb ? __ldg(g.sb) : 1.f);
  OT* C = static_cast<OT*>(g.c);
  const OT* bias = static_cast<const OT*>(g.bias);
  for (int idx = threadIdx.x; idx < kAcc * 32; idx += blockDim.x) {
    const int q = idx >> 5, l = idx & 31, i = q / (NT * 4), j = (q >> 2) % NT, r = q & 3;
    const int row = 16 * i + (l >> 2) + 8 * (r >> 1);
    const int col = n0 + j * 8 + 2 * (l & 3) + (r & 1);
    if (row >= g.m || col >= g.n) continue;
    float v = 0.f;
#pragma unroll
    for (int ww = 0; ww < W; ++ww) v += red[ww][q][l];
    v = v * s;
    if (g.row_a) v *= __ldg(g.row_a + row);
    if (g.col_b) v *= __ldg(g.col_b + col);
    if (bias) v += Cvt<OT>::to(bias[col]);
    if (g.act != 0) v = apply_activation_outlined<float>(v, g.act);
    C[int64_t(row) * g.ldc + col] = Cvt<OT>::from(v);
  }
}

template <typename OT, int EA, int EB, int NT, int MT, int U, int W, int MB, int LM, bool PF>
cudaError_t launch_colb(const Args& g, cudaStream_t s) {
  const unsigned blocks = static_cast<unsigned>((int64_t(g.n) + 8 * NT - 1) / (8 * NT));
  fp8_gemv_colb<OT, EA, EB, NT, MT, U, W, MB, LM, PF><<<blocks, W * 32, 0, s>>>(g);
  return cudaPeekAtLastError();
}

}  // namespace pgk::gemm::fp8gemv
