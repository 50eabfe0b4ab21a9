// Small-M GEMMs (m <= 16 per batch): B is streamed once from memory, A (tiny) stays in L1/L2.
//
// float16 / bfloat16: mma.sync m16n8k16 with float32 accumulation (A rows >= m are zeros), W warps
// per block splitting K (contiguous slices, or interleaved k steps: IL), partial sums reduced
// through shared memory in a fixed order (deterministic, no atomics).  B (read once) is loaded
// with streaming loads (LM: ld.global.nc.L1::no_allocate + L2 256-byte prefetch by default).
//  * column-major B (a linear layer's weight (N, K), K-contiguous): each thread loads 16 bytes of
//    one weight row and 16 bytes of two A rows at the same k; inside a 32-wide k chunk the k order
//    is permuted identically for A and B (a dot product does not care), so no shuffles are needed.
//  * row-major B (N-contiguous): each thread loads 16 bytes (8 columns) of 4 B rows (KP: 8 rows
//    8t..8t+7 of a k32 chunk, with the colb k permutation so A is one 16-byte load per row) and
//    pairs the rows in registers (byte_perm): column g*8+j of the warp's 64 goes to n-tile j.
// float32: FFMA (exact float32 products), column-major B = 4 weight rows per warp with float4
// loads and shuffle reduction, row-major B = float4 columns per lane, K split over 8 warps.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "epilogue_runtime_act.cuh"
#include "gemm_problem.cuh"

namespace pgk::gemm::gemv {

struct Args {
  int m, n, k;
  const void* a;
  int64_t lda, sa;
  const void* b;
  int64_t ldb, sb;
  void* c;
  int64_t ldc, sc;
  const void* bias;
  int act;
};

template <typename T> struct Cvt;
template <> struct Cvt<__half> {
  static __device__ __forceinline__ float to(__half x) { return __half2float(x); }
  static __device__ __forceinline__ __half from(float x) { return __float2half_rn(x); }
};
template <> struct Cvt<__nv_bfloat16> {
  static __device__ __forceinline__ float to(__nv_bfloat16 x) { return __bfloat162float(x); }
  static __device__ __forceinline__ __nv_bfloat16 from(float x) { return __float2bfloat16_rn(x); }
};
template <> struct Cvt<float> {
  static __device__ __forceinline__ float to(float x) { return x; }
  static __device__ __forceinline__ float from(float x) { return x; }
};

template <typename T>
__device__ __forceinline__ void store_out(const Args& g, T* c, const T* bias, int row, int col,
                                          float v) {
  if (bias) v += Cvt<T>::to(bias[col]);
  if (g.act != 0) v = apply_activation_outlined<float>(v, g.act);
  c[int64_t(row) * g.ldc + col] = Cvt<T>::from(v);
}

template <typename T>
__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
#endif
}

constexpr int kWarps = 8;  // float32 row-major kernel: warps splitting K

// Load modes: 0 __ldg (A: re-read by every block), 1 __ldcs (evict-first), 2 streaming
// ld.global.nc.L1::no_allocate with an L2 256-byte prefetch hint, 3 L1::no_allocate only.
template <int LM>
__device__ __forceinline__ uint4 ld16(const uint16_t* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (LM == 2 || LM == 3) {
    uint4 v;
    if constexpr (LM == 2)
      asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
          : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    else
      asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
          : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
  }
#endif
  if constexpr (LM == 1) return __ldcs(reinterpret_cast<const uint4*>(p));
  return __ldg(reinterpret_cast<const uint4*>(p));
}
template <int LM>
__device__ __forceinline__ uint2 ld8(const uint16_t* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (LM == 2 || LM == 3) {
    uint2 v;
    if constexpr (LM == 2)
      asm("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0,%1}, [%2];"
          : "=r"(v.x), "=r"(v.y) : "l"(p));
    else
      asm("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
  }
#endif
  if constexpr (LM == 1) return __ldcs(reinterpret_cast<const uint2*>(p));
  return __ldg(reinterpret_cast<const uint2*>(p));
}

// NW 32-bit words = 2*NW consecutive 16-bit elements p[0..2*NW) (index >= lim reads 0).
template <int NW, bool Vec, int LM>
__device__ __forceinline__ void loadw(const uint16_t* p, int lim, uint32_t (&w)[NW]) {
  if (Vec && lim >= 2 * NW) {
    if constexpr (NW == 4) {
      const uint4 v = ld16<LM>(p);
      w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w;
    } else if constexpr (NW == 2) {
      const uint2 v = ld8<LM>(p);
      w[0] = v.x; w[1] = v.y;
    } else {
      w[0] = __ldg(reinterpret_cast<const uint32_t*>(p));
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < NW; ++i) {
    const uint32_t lo = (2 * i < lim) ? __ldg(p + 2 * i) : 0u;
    const uint32_t hi = (2 * i + 1 < lim) ? __ldg(p + 2 * i + 1) : 0u;
    w[i] = lo | (hi << 16);
  }
}

// Column-major B.  Block = W warps splitting K (contiguous slices of 32-multiples); each warp
// owns NT n-tiles of 8 columns (8*NT columns per block) and consumes U chunks of k32 per step.
// PF: software pipelining (the next step's loads are issued before this step's mma).
template <int NT, int U>
struct ColbFrag {
  uint32_t b[U][NT][4];
  uint32_t a0[U][4], a1[U][4];
};

template <typename T, bool Vec, int NT, int U, int W, bool PF, int MB, int LM, bool IL>
__global__ void __launch_bounds__(W * 32, MB) gemv_mma_colb(Args g) {
  constexpr int kStep = 32 * U;
  __shared__ float red[W][NT * 4][32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int gi = lane >> 2, ti = lane & 3;
  const int n0 = blockIdx.x * (8 * NT);
  const int64_t bt = blockIdx.y;
  const uint16_t* A = static_cast<const uint16_t*>(g.a) + bt * g.sa;
  const uint16_t* B = static_cast<const uint16_t*>(g.b) + bt * g.sb;

  // IL: warp w takes k steps w, w + W, ... (the block streams each row contiguously);
  // otherwise warp w takes one contiguous K slice.
  const int chunks = (g.k + 31) / 32;
  const int kper = (chunks + W - 1) / W * 32;
  const int kb = IL ? w * kStep : w * kper;
  const int ke = IL ? g.k : min(g.k, kb + kper);
  constexpr int kAdv = IL ? W * kStep : kStep;

  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;

  const bool r0ok = gi < g.m, r1ok = gi + 8 < g.m;
  const uint16_t* a0p = A + int64_t(gi) * g.lda;
  const uint16_t* a1p = A + int64_t(gi + 8) * g.lda;
  const uint16_t* bp[NT];
  bool nok[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int n = n0 + j * 8 + gi;
    nok[j] = n < g.n;
    bp[j] = B + int64_t(nok[j] ? n : 0) * g.ldb;
  }

  auto load = [&](int k0, ColbFrag<NT, U>& f) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int kk = k0 + u * 32 + ti * 8;
      const int lim = ke - kk;
#pragma unroll
      for (int j = 0; j < NT; ++j) loadw<4, Vec, LM>(bp[j] + kk, nok[j] ? lim : 0, f.b[u][j]);
      loadw<4, Vec, 0>(a0p + kk, r0ok ? lim : 0, f.a0[u]);
      loadw<4, Vec, 0>(a1p + kk, r1ok ? lim : 0, f.a1[u]);
    }
  };
  auto compute = [&](const ColbFrag<NT, U>& f) {
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        mma16816<T>(acc[j], f.a0[u][0], f.a1[u][0], f.a0[u][1], f.a1[u][1], f.b[u][j][0], f.b[u][j][1]);
        mma16816<T>(acc[j], f.a0[u][2], f.a1[u][2], f.a0[u][3], f.a1[u][3], f.b[u][j][2], f.b[u][j][3]);
      }
  };
  if constexpr (PF) {
    ColbFrag<NT, U> cur;
    load(kb, cur);
    for (int k0 = kb; k0 < ke; k0 += kAdv) {
      ColbFrag<NT, U> nxt;
      load(k0 + kAdv, nxt);  // past ke: zeros, no memory access
      compute(cur);
      cur = nxt;
    }
  } else {
    for (int k0 = kb; k0 < ke; k0 += kAdv) {
      ColbFrag<NT, U> cur;
      load(k0, cur);
      compute(cur);
    }
  }

#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int r = 0; r < 4; ++r) red[w][j * 4 + r][lane] = acc[j][r];
  __syncthreads();
  T* C = static_cast<T*>(g.c) + bt * g.sc;
  const T* bias = static_cast<const T*>(g.bias);
  for (int idx = threadIdx.x; idx < NT * 4 * 32; idx += blockDim.x) {
    const int jr = idx >> 5, l = idx & 31, j = jr >> 2, r = jr & 3;
    const int row = (l >> 2) + 8 * (r >> 1);
    const int col = n0 + j * 8 + 2 * (l & 3) + (r & 1);
    if (row >= g.m || col >= g.n) continue;
    float s = 0.f;
#pragma unroll
    for (int ww = 0; ww < W; ++ww) s += red[ww][jr][l];
    store_out<T>(g, C, bias, row, col, s);
  }
}

// Row-major B.  Each thread loads NT consecutive columns (NT = 8: 16 bytes, 4: 8 bytes) of B
// rows k+2t, k+2t+1, k+2t+8, k+2t+9 and pairs rows in registers: column g*NT + j of the warp's
// 8*NT goes to n-tile j.  U k16 steps per loop step; W warps split K.
template <int NT, int U>
struct RowbFrag {
  uint32_t r[U][4][NT / 2];
  uint32_t a[U][4];
};

// KP: k permuted inside each 32-wide chunk as in the column-major kernel (thread t takes B rows
// 8t..8t+7, A gets 16-byte loads); U then counts k32 chunks.
template <int NT, int U>
struct RowbFragP {
  uint32_t r[U][8][NT / 2];
  uint32_t a0[U][4], a1[U][4];
};

template <typename T, bool Vec, int NT, int U, int W, bool PF, int MB, int LM, bool IL, bool KP>
__global__ void __launch_bounds__(W * 32, MB) gemv_mma_rowb(Args g) {
  constexpr int kStep = (KP ? 32 : 16) * U;
  using Frag = std::conditional_t<KP, RowbFragP<NT, U>, RowbFrag<NT, U>>;
  __shared__ float red[W][NT * 4][32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int gi = lane >> 2, ti = lane & 3;
  const int n0 = blockIdx.x * (8 * NT);
  const int64_t bt = blockIdx.y;
  const uint16_t* A = static_cast<const uint16_t*>(g.a) + bt * g.sa;
  const uint16_t* B = static_cast<const uint16_t*>(g.b) + bt * g.sb;

  // IL: warp w takes k steps w, w + W, ... (the block streams each row contiguously);
  // otherwise warp w takes one contiguous K slice.
  const int chunks = (g.k + 31) / 32;
  const int kper = (chunks + W - 1) / W * 32;
  const int kb = IL ? w * kStep : w * kper;
  const int ke = IL ? g.k : min(g.k, kb + kper);
  constexpr int kAdv = IL ? W * kStep : kStep;

  float acc[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;

  const bool r0ok = gi < g.m, r1ok = gi + 8 < g.m;
  const uint16_t* a0p = A + int64_t(gi) * g.lda;
  const uint16_t* a1p = A + int64_t(gi + 8) * g.lda;
  const int ncol = n0 + gi * NT;
  const int nlim = g.n - ncol;  // columns available from ncol
  const uint16_t* bcol = B + (nlim > 0 ? ncol : 0);

  auto load = [&](int k0, Frag& f) {
    if constexpr (KP) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int kk = k0 + u * 32 + ti * 8;
#pragma unroll
        for (int q = 0; q < 8; ++q) {
          const int kr = kk + q;
          loadw<NT / 2, Vec, LM>(bcol + int64_t(kr < ke ? kr : 0) * g.ldb, kr < ke ? nlim : 0, f.r[u][q]);
        }
        loadw<4, Vec, 0>(a0p + kk, r0ok ? ke - kk : 0, f.a0[u]);
        loadw<4, Vec, 0>(a1p + kk, r1ok ? ke - kk : 0, f.a1[u]);
      }
    } else {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int kk = k0 + u * 16 + 2 * ti;
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int kr = kk + (q & 1) + 8 * (q >> 1);  // rows 2t, 2t+1, 2t+8, 2t+9
          loadw<NT / 2, Vec, LM>(bcol + int64_t(kr < ke ? kr : 0) * g.ldb, kr < ke ? nlim : 0, f.r[u][q]);
        }
        uint32_t t1[1];
        loadw<1, Vec, 0>(a0p + kk, r0ok ? ke - kk : 0, t1); f.a[u][0] = t1[0];
        loadw<1, Vec, 0>(a1p + kk, r1ok ? ke - kk : 0, t1); f.a[u][1] = t1[0];
        loadw<1, Vec, 0>(a0p + kk + 8, r0ok ? ke - kk - 8 : 0, t1); f.a[u][2] = t1[0];
        loadw<1, Vec, 0>(a1p + kk + 8, r1ok ? ke - kk - 8 : 0, t1); f.a[u][3] = t1[0];
      }
    }
  };
  auto compute = [&](const Frag& f) {
    if constexpr (KP) {
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const uint32_t sel = (j & 1) ? 0x7632u : 0x5410u;
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const uint32_t b0 = __byte_perm(f.r[u][4 * h][j >> 1], f.r[u][4 * h + 1][j >> 1], sel);
            const uint32_t b1 = __byte_perm(f.r[u][4 * h + 2][j >> 1], f.r[u][4 * h + 3][j >> 1], sel);
            mma16816<T>(acc[j], f.a0[u][2 * h], f.a1[u][2 * h], f.a0[u][2 * h + 1], f.a1[u][2 * h + 1], b0, b1);
          }
        }
    } else {
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const uint32_t sel = (j & 1) ? 0x7632u : 0x5410u;
          const uint32_t b0 = __byte_perm(f.r[u][0][j >> 1], f.r[u][1][j >> 1], sel);
          const uint32_t b1 = __byte_perm(f.r[u][2][j >> 1], f.r[u][3][j >> 1], sel);
          mma16816<T>(acc[j], f.a[u][0], f.a[u][1], f.a[u][2], f.a[u][3], b0, b1);
        }
    }
  };
  if constexpr (PF) {
    Frag cur;
    load(kb, cur);
    for (int k0 = kb; k0 < ke; k0 += kAdv) {
      Frag nxt;
      load(k0 + kAdv, nxt);
      compute(cur);
      cur = nxt;
    }
  } else {
    for (int k0 = kb; k0 < ke; k0 += kAdv) {
      Frag cur;
      load(k0, cur);
      compute(cur);
    }
  }

  T* C = static_cast<T*>(g.c) + bt * g.sc;
  const T* bias = static_cast<const T*>(g.bias);
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int r = 0; r < 4; ++r) red[w][j * 4 + r][lane] = acc[j][r];
  __syncthreads();
  for (int idx = threadIdx.x; idx < NT * 4 * 32; idx += blockDim.x) {
    const int jr = idx >> 5, l = idx & 31, j = jr >> 2, r = jr & 3;
    const int row = (l >> 2) + 8 * (r >> 1);
    const int col = n0 + (2 * (l & 3) + (r & 1)) * NT + j;
    if (row >= g.m || col >= g.n) continue;
    float s = 0.f;
#pragma unroll
    for (int ww = 0; ww < W; ++ww) s += red[ww][jr][l];
    store_out<T>(g, C, bias, row, col, s);
  }
}

template <typename T, bool Vec, int NT, int U, int W, bool PF, int MB, int LM, bool IL>
void launch_colb(const Args& g, int batch, cudaStream_t s) {
  const dim3 grid((g.n + 8 * NT - 1) / (8 * NT), batch);
  gemv_mma_colb<T, Vec, NT, U, W, PF, MB, LM, IL><<<grid, W * 32, 0, s>>>(g);
}
template <typename T, bool Vec, int NT, int U, int W, bool PF, int MB, int LM, bool IL, bool KP>
void launch_rowb(const Args& g, int batch, cudaStream_t s) {
  const dim3 grid((g.n + 8 * NT - 1) / (8 * NT), batch);
  gemv_mma_rowb<T, Vec, NT, U, W, PF, MB, LM, IL, KP><<<grid, W * 32, 0, s>>>(g);
}

// ---- float32 (FFMA) ----
constexpr int kF32Rows = 4;  // weight rows per warp (column-major B)

template <bool Vec>
__device__ __forceinline__ float4 load4f(const float* p, int lim, bool stream) {
  if (Vec && lim >= 4)
    return stream ? __ldcs(reinterpret_cast<const float4*>(p))
                  : __ldg(reinterpret_cast<const float4*>(p));
  float4 v;
  v.x = lim > 0 ? __ldg(p) : 0.f;
  v.y = lim > 1 ? __ldg(p + 1) : 0.f;
  v.z = lim > 2 ? __ldg(p + 2) : 0.f;
  v.w = lim > 3 ? __ldg(p + 3) : 0.f;
  return v;
}

template <bool Vec>
__global__ void __launch_bounds__(256) gemv_f32_colb(Args g) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int nb = (blockIdx.x * kWarps + w) * kF32Rows;
  const int64_t bt = blockIdx.y;
  const float* A = static_cast<const float*>(g.a) + bt * g.sa;
  const float* B = static_cast<const float*>(g.b) + bt * g.sb;
  if (nb >= g.n) return;  // whole warp (no block-level sync below)
  float acc[16][kF32Rows];
#pragma unroll
  for (int i = 0; i < 16; ++i)
#pragma unroll
    for (int r = 0; r < kF32Rows; ++r) acc[i][r] = 0.f;
  const float* bp[kF32Rows];
#pragma unroll
  for (int r = 0; r < kF32Rows; ++r) bp[r] = B + int64_t(min(nb + r, g.n - 1)) * g.ldb;

#pragma unroll 2
  for (int kk = lane * 4; kk < g.k; kk += 128) {
    const int lim = g.k - kk;
    float4 bv[kF32Rows];
#pragma unroll
    for (int r = 0; r < kF32Rows; ++r) bv[r] = load4f<Vec>(bp[r] + kk, lim, true);
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      if (i < g.m) {
        const float4 av = load4f<Vec>(A + int64_t(i) * g.lda + kk, lim, false);
#pragma unroll
        for (int r = 0; r < kF32Rows; ++r)
          acc[i][r] = fmaf(av.w, bv[r].w, fmaf(av.z, bv[r].z,
                      fmaf(av.y, bv[r].y, fmaf(av.x, bv[r].x, acc[i][r]))));
      }
    }
  }
  float* C = static_cast<float*>(g.c) + bt * g.sc;
  const float* bias = static_cast<const float*>(g.bias);
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    if (i < g.m) {
#pragma unroll
      for (int r = 0; r < kF32Rows; ++r) {
        float v = acc[i][r];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == ((i * kF32Rows + r) & 31) && nb + r < g.n) store_out<float>(g, C, bias, i, nb + r, v);
      }
    }
  }
}

template <bool Vec>
__global__ void __launch_bounds__(256) gemv_f32_rowb(Args g) {
  __shared__ float red[kWarps][128];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int n = blockIdx.x * 128 + lane * 4;
  const int64_t bt = blockIdx.y;
  const float* A = static_cast<const float*>(g.a) + bt * g.sa;
  const float* B = static_cast<const float*>(g.b) + bt * g.sb;
  const int kper = (g.k + kWarps - 1) / kWarps;
  const int kb = w * kper, ke = min(g.k, kb + kper);
  const int nlim = g.n - n;
  float acc[16][4];
#pragma unroll
  for (int i = 0; i < 16; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
  if (nlim > 0) {
#pragma unroll 4
    for (int kk = kb; kk < ke; ++kk) {
      const float4 bv = load4f<Vec>(B + int64_t(kk) * g.ldb + n, nlim, true);
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        if (i < g.m) {
          const float av = __ldg(A + int64_t(i) * g.lda + kk);
          acc[i][0] = fmaf(av, bv.x, acc[i][0]);
          acc[i][1] = fmaf(av, bv.y, acc[i][1]);
          acc[i][2] = fmaf(av, bv.z, acc[i][2]);
          acc[i][3] = fmaf(av, bv.w, acc[i][3]);
        }
      }
    }
  }
  float* C = static_cast<float*>(g.c) + bt * g.sc;
  const float* bias = static_cast<const float*>(g.bias);
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    if (i < g.m) {
#pragma unroll
      for (int q = 0; q < 4; ++q) red[w][lane * 4 + q] = acc[i][q];
      __syncthreads();
      if (threadIdx.x < 128) {
        const int col = blockIdx.x * 128 + threadIdx.x;
        float s = 0.f;
#pragma unroll
        for (int ww = 0; ww < kWarps; ++ww) s += red[ww][threadIdx.x];
        if (col < g.n) store_out<float>(g, C, bias, i, col, s);
      }
      __syncthreads();
    }
  }
}

}  // namespace pgk::gemm::gemv
