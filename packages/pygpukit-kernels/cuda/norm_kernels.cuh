// Row-wise normalizations behind pgk_row_norm: softmax, log_softmax, layer_norm and rms_norm
// over the last axis, one pass over memory per row.
//
// A row is handled by TPR threads (a warp, 32, for short rows; a 256-thread block otherwise).
// When it fits, the row stays in registers: thread t holds groups t, t + TPR, ... (P of them)
// of V = 16 / sizeof(element) consecutive elements, loaded as 16-byte vectors when the rows
// are aligned (else element by element), converted to the compute type (float32 for
// float16 / bfloat16 / float32, float64 for float64).  Row statistics are reduced in a fixed
// order (per thread in group order, then an xor-butterfly over the warp, then the 8 warp
// values in warp order), so results are deterministic.  Rows too long for the registers take
// a looped kernel that reads the row once per statistic (2 reads for softmax / rms_norm, 3 for
// layer_norm) and once more to write.
//   softmax:     m = max(x); s = sum(exp(x - m)); y = exp(x - m) * (1 / s)
//   log_softmax: y = (x - m) - log(s)
//   layer_norm:  mu = sum(x) / n; var = sum((x - mu)^2) / n; y = (x - mu) * (1/sqrt(var + eps)) * w + b
//   rms_norm:    y = x * (1 / sqrt(sum(x^2) / n + eps)) * w
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "launch_utils.cuh"
#include "math_kernels.cuh"

namespace pgk {

constexpr unsigned kNormBlock = 256;

struct NormParams {
  const char* x;
  char* out;
  const char* w;  // null: no weight
  const char* b;  // null: no bias
  int64_t rows, cols;
  int64_t xrs, xcs;  // x row / column strides, bytes
  int64_t ors;       // out row stride, bytes (columns dense)
  int64_t ws, bs;    // weight / bias strides, bytes
  int vec;   // x and out rows 16-byte aligned, x columns dense, cols % V == 0
  int wvec;  // weight (of the compute type) dense and 16-byte aligned (with vec)
  int bvec;  // the same for the bias
  double eps;
};

template <class C>
__device__ __forceinline__ C nexp(C x) {
  if constexpr (std::is_same_v<C, float>) return expf(x);
  else return exp(x);
}

template <class C>
__device__ __forceinline__ C nmax(C a, C b) { return (a >= b || a != a) ? a : b; }

// Sum (MAX = false) or NaN-propagating max (MAX = true) over the TPR threads of a row; every
// thread of the row gets the result.  `sh` holds kNormBlock / 32 values.
template <class C, int TPR, bool MAX>
__device__ __forceinline__ C row_reduce(C v, C* sh) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const C o = __shfl_xor_sync(0xffffffffu, v, off);
    v = MAX ? nmax(v, o) : v + o;
  }
  if constexpr (TPR > 32) {
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    v = sh[0];
#pragma unroll
    for (int k = 1; k < TPR / 32; ++k) v = MAX ? nmax(v, sh[k]) : v + sh[k];
    __syncthreads();
  }
  return v;
}

// Group g of a row as V compute values; `n` of them valid (the others untouched).
template <class S>
__device__ __forceinline__ void load_group(const NormParams& p, const char* xr, int g,
                                           ComputeOf<S>* v) {
  using T = typename S::T;
  constexpr int V = 16 / sizeof(T);
  struct alignas(16) Pack { T v[V]; };
  const int cols = static_cast<int>(p.cols);
  if (p.vec) {
    const Pack pk = reinterpret_cast<const Pack*>(xr)[g];
#pragma unroll
    for (int e = 0; e < V; ++e) v[e] = to_compute<S>(pk.v[e]);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const int col = g * V + e;
      if (col < cols) v[e] = to_compute<S>(*reinterpret_cast<const T*>(xr + col * p.xcs));
    }
  }
}

// Weight / bias values (of the compute type C) for the V columns of group g.
template <class S>
__device__ __forceinline__ void load_affine(const NormParams& p, const char* ptr,
                                            int64_t stride, bool dense, int g,
                                            ComputeOf<S>* v) {
  using C = ComputeOf<S>;
  constexpr int V = 16 / sizeof(typename S::T);
  const int cols = static_cast<int>(p.cols);
  if (dense) {  // V values of C: V * sizeof(C) / 16 vectors
    constexpr int NW = V * static_cast<int>(sizeof(C)) / 16;
    const uint4* src = reinterpret_cast<const uint4*>(ptr) + g * NW;
#pragma unroll
    for (int k = 0; k < NW; ++k) {
      const uint4 u = __ldg(src + k);
      memcpy(v + k * (16 / sizeof(C)), &u, 16);
    }
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const int col = g * V + e;
      v[e] = col < cols ? __ldg(reinterpret_cast<const C*>(ptr + col * stride)) : C(0);
    }
  }
}

// y = f(x) for the V elements of group g (weight / bias applied), then stored.
template <class S, int OP>
__device__ __forceinline__ void finish_group(const NormParams& p, char* orow, int g,
                                             ComputeOf<S>* y) {
  using T = typename S::T;
  using C = ComputeOf<S>;
  using CT = std::conditional_t<std::is_same_v<C, double>, TF64, TF32>;
  constexpr int V = 16 / sizeof(T);
  struct alignas(16) Pack { T v[V]; };
  const int cols = static_cast<int>(p.cols);
  if constexpr (OP == PGK_NORM_LAYER || OP == PGK_NORM_RMS) {
    if (p.w) {
      C w[V];
      load_affine<S>(p, p.w, p.ws, p.wvec, g, w);
#pragma unroll
      for (int e = 0; e < V; ++e) y[e] *= w[e];
    }
    if (OP == PGK_NORM_LAYER && p.b) {
      C b[V];
      load_affine<S>(p, p.b, p.bs, p.bvec, g, b);
#pragma unroll
      for (int e = 0; e < V; ++e) y[e] += b[e];
    }
  }
  if (p.vec) {
    Pack pk;
#pragma unroll
    for (int e = 0; e < V; ++e) pk.v[e] = convert<CT, S>(y[e]);
    reinterpret_cast<Pack*>(orow)[g] = pk;
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const int col = g * V + e;
      if (col < cols) reinterpret_cast<T*>(orow)[col] = convert<CT, S>(y[e]);
    }
  }
}

// The row in registers: P groups per thread.
template <class S, int OP, int TPR, int P>
__global__ void __launch_bounds__(kNormBlock, (P <= 4 ? 3 : 1)) norm_rows_kernel(NormParams p) {
  using T = typename S::T;
  using C = ComputeOf<S>;
  constexpr int V = 16 / sizeof(T);
  constexpr int RPB = kNormBlock / TPR;
  __shared__ C sh[kNormBlock / 32];
  const int lane = threadIdx.x % TPR;
  const int cols = static_cast<int>(p.cols);  // <= INT32_MAX (checked by the launcher)
  const int ngroups = (cols + V - 1) / V;
  const C n = static_cast<C>(p.cols);
  {  // one row per TPR threads, no loop (a loop would keep the weights in registers)
    const int64_t r0 = static_cast<int64_t>(blockIdx.x) * RPB;
    const int64_t r = r0 + threadIdx.x / TPR;
    const bool live = r < p.rows;  // uniform per row
    const char* xr = p.x + (live ? r : 0) * p.xrs;
    pdl_enter();
    C v[P][V];
#pragma unroll
    for (int q = 0; q < P; ++q)
#pragma unroll
      for (int e = 0; e < V; ++e) v[q][e] = C(0);
#pragma unroll
    for (int q = 0; q < P; ++q) {
      const int g = q * TPR + lane;
      if (live && g < ngroups) load_group<S>(p, xr, g, v[q]);
    }
    auto valid = [&](int q, int e) {
      const int g = q * TPR + lane;
      return live && g * V + e < cols;
    };
    C s1 = C(0);
    if constexpr (OP == PGK_NORM_SOFTMAX || OP == PGK_NORM_LOG_SOFTMAX) {
      C m = -C(INFINITY);
#pragma unroll
      for (int q = 0; q < P; ++q)
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (valid(q, e)) m = nmax(m, v[q][e]);
      m = row_reduce<C, TPR, true>(m, sh);
#pragma unroll
      for (int q = 0; q < P; ++q)
#pragma unroll
        for (int e = 0; e < V; ++e) {
          if constexpr (OP == PGK_NORM_SOFTMAX) {
            v[q][e] = nexp(v[q][e] - m);
            if (valid(q, e)) s1 += v[q][e];
          } else {
            v[q][e] -= m;
            if (valid(q, e)) s1 += nexp(v[q][e]);
          }
        }
      s1 = row_reduce<C, TPR, false>(s1, sh);
      const C shift = OP == PGK_NORM_LOG_SOFTMAX ? log(s1) : C(1) / s1;
#pragma unroll
      for (int q = 0; q < P; ++q)
#pragma unroll
        for (int e = 0; e < V; ++e)
          v[q][e] = OP == PGK_NORM_LOG_SOFTMAX ? v[q][e] - shift : v[q][e] * shift;
    } else if constexpr (OP == PGK_NORM_LAYER) {
#pragma unroll
      for (int q = 0; q < P; ++q)
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (valid(q, e)) s1 += v[q][e];
      const C mean = row_reduce<C, TPR, false>(s1, sh) / n;
      C s2 = C(0);
#pragma unroll
      for (int q = 0; q < P; ++q)
#pragma unroll
        for (int e = 0; e < V; ++e) {
          v[q][e] -= mean;
          if (valid(q, e)) s2 += v[q][e] * v[q][e];
        }
      const C var = row_reduce<C, TPR, false>(s2, sh) / n;
      const C rstd = C(1) / sqrt(var + static_cast<C>(p.eps));
#pragma unroll
      for (int q = 0; q < P; ++q)
#pragma unroll
        for (int e = 0; e < V; ++e) v[q][e] *= rstd;
    } else {  // rms_norm
#pragma unroll
      for (int q = 0; q < P; ++q)
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (valid(q, e)) s1 += v[q][e] * v[q][e];
      const C ms = row_reduce<C, TPR, false>(s1, sh) / n;
      const C rstd = C(1) / sqrt(ms + static_cast<C>(p.eps));
#pragma unroll
      for (int q = 0; q < P; ++q)
#pragma unroll
        for (int e = 0; e < V; ++e) v[q][e] *= rstd;
    }
    if (live) {
      char* orow = p.out + r * p.ors;
#pragma unroll
      for (int q = 0; q < P; ++q) {
        const int g = q * TPR + lane;
        if (g < ngroups) finish_group<S, OP>(p, orow, g, v[q]);
      }
    }
  }
}

// Rows too long for the registers: one 256-thread block per row, looping over the row.
template <class S, int OP>
__global__ void __launch_bounds__(kNormBlock) norm_rows_looped_kernel(NormParams p) {
  using T = typename S::T;
  using C = ComputeOf<S>;
  constexpr int V = 16 / sizeof(T);
  constexpr int TPR = kNormBlock;
  __shared__ C sh[kNormBlock / 32];
  const int cols = static_cast<int>(p.cols);
  const int ngroups = (cols + V - 1) / V;
  const C n = static_cast<C>(p.cols);
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const char* xr = p.x + r * p.xrs;
    char* orow = p.out + r * p.ors;
    C a = C(0), shift = C(0), scale = C(1);
    if constexpr (OP == PGK_NORM_SOFTMAX || OP == PGK_NORM_LOG_SOFTMAX) {
      C m = -C(INFINITY);
      for (int g = threadIdx.x; g < ngroups; g += TPR) {
        C v[V] = {};
        load_group<S>(p, xr, g, v);
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (g * V + e < cols) m = nmax(m, v[e]);
      }
      m = row_reduce<C, TPR, true>(m, sh);
      for (int g = threadIdx.x; g < ngroups; g += TPR) {
        C v[V] = {};
        load_group<S>(p, xr, g, v);
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (g * V + e < cols) a += nexp(v[e] - m);
      }
      a = row_reduce<C, TPR, false>(a, sh);
      shift = m;
      scale = OP == PGK_NORM_LOG_SOFTMAX ? log(a) : C(1) / a;
    } else if constexpr (OP == PGK_NORM_LAYER) {
      for (int g = threadIdx.x; g < ngroups; g += TPR) {
        C v[V] = {};
        load_group<S>(p, xr, g, v);
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (g * V + e < cols) a += v[e];
      }
      const C mean = row_reduce<C, TPR, false>(a, sh) / n;
      C s2 = C(0);
      for (int g = threadIdx.x; g < ngroups; g += TPR) {
        C v[V] = {};
        load_group<S>(p, xr, g, v);
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (g * V + e < cols) s2 += (v[e] - mean) * (v[e] - mean);
      }
      const C var = row_reduce<C, TPR, false>(s2, sh) / n;
      shift = mean;
      scale = C(1) / sqrt(var + static_cast<C>(p.eps));
    } else {
      for (int g = threadIdx.x; g < ngroups; g += TPR) {
        C v[V] = {};
        load_group<S>(p, xr, g, v);
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (g * V + e < cols) a += v[e] * v[e];
      }
      scale = C(1) / sqrt(row_reduce<C, TPR, false>(a, sh) / n + static_cast<C>(p.eps));
    }
    for (int g = threadIdx.x; g < ngroups; g += TPR) {
      C v[V] = {};
      load_group<S>(p, xr, g, v);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        if constexpr (OP == PGK_NORM_SOFTMAX) v[e] = nexp(v[e] - shift) * scale;
        else if constexpr (OP == PGK_NORM_LOG_SOFTMAX) v[e] = (v[e] - shift) - scale;
        else v[e] = (v[e] - shift) * scale;
      }
      finish_group<S, OP>(p, orow, g, v);
    }
  }
}

// Chooses threads per row and groups per thread from the row length; launches.
template <class S, int OP>
int launch_norm_op(const NormParams& p, cudaStream_t stream) {
  constexpr int V = 16 / sizeof(typename S::T);
  const int64_t groups = (p.cols + V - 1) / V;
  auto grid = [&](int rpb) { return static_cast<unsigned>((p.rows + rpb - 1) / rpb); };
  constexpr int W = 32, B = kNormBlock, WR = kNormBlock / 32;
  if (groups <= W) launch_k(norm_rows_kernel<S, OP, W, 1>, grid(WR), B, stream, p);
  else if (groups <= 2 * W) launch_k(norm_rows_kernel<S, OP, W, 2>, grid(WR), B, stream, p);
  else if (groups <= 4 * W) launch_k(norm_rows_kernel<S, OP, W, 4>, grid(WR), B, stream, p);
  else if (groups <= B) launch_k(norm_rows_kernel<S, OP, B, 1>, grid(1), B, stream, p);
  else if (groups <= 2 * B) launch_k(norm_rows_kernel<S, OP, B, 2>, grid(1), B, stream, p);
  else if (groups <= 4 * B) launch_k(norm_rows_kernel<S, OP, B, 4>, grid(1), B, stream, p);
  else if (groups <= 8 * B) launch_k(norm_rows_kernel<S, OP, B, 8>, grid(1), B, stream, p);
  else norm_rows_looped_kernel<S, OP><<<grid(1), B, 0, stream>>>(p);
  return launch_status();
}

template <class S>
int launch_norm(int op, const NormParams& p, cudaStream_t stream) {
  switch (op) {
    case PGK_NORM_SOFTMAX: return launch_norm_op<S, PGK_NORM_SOFTMAX>(p, stream);
    case PGK_NORM_LOG_SOFTMAX: return launch_norm_op<S, PGK_NORM_LOG_SOFTMAX>(p, stream);
    case PGK_NORM_LAYER: return launch_norm_op<S, PGK_NORM_LAYER>(p, stream);
    default: return launch_norm_op<S, PGK_NORM_RMS>(p, stream);
  }
}

int launch_norm_f16(int op, const NormParams& p, cudaStream_t stream);
int launch_norm_bf16(int op, const NormParams& p, cudaStream_t stream);
int launch_norm_f32(int op, const NormParams& p, cudaStream_t stream);
int launch_norm_f64(int op, const NormParams& p, cudaStream_t stream);

}  // namespace pgk
