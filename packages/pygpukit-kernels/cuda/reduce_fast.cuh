// The vectorized reduction path behind pgk_reduce: sum / mean / prod / max / min of a floating
// dtype over a reduced range that is contiguous in memory (any kept dims).  DETERMINISTIC: the
// order of every combination depends only on the shape, the dtype and `chunks`:
//  * a work item is one output (or one chunk of one output) and is reduced by TPR threads
//    (a warp, 32, when the item has at most kRedWarpGroups = 2048 groups, else a 256-thread
//    block);
//  * the item's range is cut into groups of V = 16 / sizeof(element) consecutive elements;
//    thread t of the item takes groups t, t + TPR, t + 2*TPR, ... in increasing order, adding
//    element e of each group into its own accumulator acc[e] (so V independent chains);
//  * the thread's V accumulators are combined pairwise ((0,1),(2,3)... then pairs of those),
//    the TPR thread values by an xor-butterfly over the warp (offsets 16, 8, 4, 2, 1) and, for
//    a block, the 8 warp values in warp order by thread 0.
// Groups are loaded as one 16-byte vector when the item's start is 16-byte aligned and as
// single elements otherwise: both give the same values in the same order.  With chunks > 1
// the chunk length is rounded up to a multiple of 8 elements (so chunk starts stay aligned)
// and the chunk values are combined by reduce_fast_partials_kernel (order described there).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "reduce_kernels.cuh"

namespace pgk {

constexpr int kRedUnroll = 4;

template <class C, int OP>
__device__ __forceinline__ C red_identity() {
  if constexpr (OP == PGK_RED_PROD) return C(1);
  else if constexpr (OP == PGK_RED_MAX) return -C(INFINITY);
  else if constexpr (OP == PGK_RED_MIN) return C(INFINITY);
  else return C(0);
}

template <class C, int OP>
__device__ __forceinline__ C red_op(C a, C b) {
  if constexpr (OP == PGK_RED_PROD) return a * b;
  else if constexpr (OP == PGK_RED_MAX) return (a >= b || a != a) ? a : b;  // NaN wins
  else if constexpr (OP == PGK_RED_MIN) return (a <= b || a != a) ? a : b;
  else return a + b;
}

template <class C, int OP>
__device__ __forceinline__ C red_shfl_xor(C v, int offset) {
  return red_op<C, OP>(v, __shfl_xor_sync(0xffffffffu, v, offset));
}

// The values of TPR threads (a warp or the whole block) combined: xor-butterfly over each warp
// (offsets 16, 8, 4, 2, 1), then, for a block, the warp values in warp order.  The result is in
// lane 0 of a warp / thread 0 of a block; a block's call ends in a barrier, so `warp_vals` may
// be reused right after.
template <class C, int OP, int TPR>
__device__ __forceinline__ C combine_threads(C v, C* warp_vals) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = red_shfl_xor<C, OP>(v, off);
  if constexpr (TPR > 32) {
    if (threadIdx.x % 32 == 0) warp_vals[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
      v = warp_vals[0];
#pragma unroll
      for (int k = 1; k < TPR / 32; ++k) v = red_op<C, OP>(v, warp_vals[k]);
    }
    __syncthreads();
  }
  return v;
}

// OP: the accumulation (PGK_RED_SUM for sum and mean, PROD, MAX, MIN); p.op the requested op.
template <class S, int OP, int TPR>
__global__ void __launch_bounds__(kReduceBlock)
reduce_fast_kernel(ReduceParams<ComputeOf<S>> p) {
  using T = typename S::T;
  using C = ComputeOf<S>;
  constexpr int V = 16 / sizeof(T);
  constexpr int RPB = kReduceBlock / TPR;  // items per block
  struct alignas(16) Pack { T v[V]; };
  __shared__ C warp_vals[kReduceBlock / 32];
  pdl_enter();
  const int lane = threadIdx.x % TPR;
  const int64_t items = p.nout * p.chunks;
  for (int64_t w0 = static_cast<int64_t>(blockIdx.x) * RPB; w0 < items;
       w0 += static_cast<int64_t>(gridDim.x) * RPB) {
    const int64_t w = w0 + threadIdx.x / TPR;
    const bool live = w < items;  // uniform per item (warp or block)
    const int64_t o = live ? w / p.chunks : 0;
    const int64_t c = live ? w - o * p.chunks : 0;
    const int64_t begin = c * p.chunk_len;
    int64_t end = begin + p.chunk_len;
    if (end > p.nred) end = p.nred;
    const int64_t len = live && end > begin ? end - begin : 0;
    const T* row = reinterpret_cast<const T*>(p.x + out_offset(p, o, true)) + begin;
    const bool vec = (reinterpret_cast<uintptr_t>(row) & 15u) == 0;
    const int64_t full = len / V, ngroups = (len + V - 1) / V;
    C acc[V];
#pragma unroll
    for (int e = 0; e < V; ++e) acc[e] = red_identity<C, OP>();
    for (int64_t g0 = lane; g0 < ngroups; g0 += static_cast<int64_t>(TPR) * kRedUnroll) {
      Pack pk[kRedUnroll];
#pragma unroll
      for (int u = 0; u < kRedUnroll; ++u) {
        const int64_t g = g0 + static_cast<int64_t>(u) * TPR;
        if (g < full && vec) {
          pk[u] = reinterpret_cast<const Pack*>(row)[g];
        }
      }
#pragma unroll
      for (int u = 0; u < kRedUnroll; ++u) {
        const int64_t g = g0 + static_cast<int64_t>(u) * TPR;
        if (g >= ngroups) continue;
        if (g < full && vec) {
#pragma unroll
          for (int e = 0; e < V; ++e) acc[e] = red_op<C, OP>(acc[e], to_compute<S>(pk[u].v[e]));
        } else {
#pragma unroll
          for (int e = 0; e < V; ++e) {
            const int64_t i = g * V + e;
            if (i < len) acc[e] = red_op<C, OP>(acc[e], to_compute<S>(row[i]));
          }
        }
      }
    }
#pragma unroll
    for (int s = 1; s < V; s *= 2) {
#pragma unroll
      for (int e = 0; e + s < V; e += 2 * s) acc[e] = red_op<C, OP>(acc[e], acc[e + s]);
    }
    const C v = combine_threads<C, OP, TPR>(acc[0], warp_vals);
    if (lane == 0 && live) {
      if (p.chunks > 1) {
        // An empty chunk leaves the identity, which the combination ignores.
        reinterpret_cast<C*>(p.work)[o * p.chunks + c] = v;
      } else {
        Acc<C> a{};
        a.v = v;
        finish_out(p, a, p.out + out_offset(p, o, false));
      }
    }
  }
}

// Second pass with chunks > 1: one block per output combines its chunk values — thread t takes
// chunks t, t + 256, ... in order, then the warp butterfly and the 8 warp values in warp order.
template <class C, int OP>
__global__ void __launch_bounds__(kReduceBlock) reduce_fast_partials_kernel(ReduceParams<C> p) {
  __shared__ C warp_vals[kReduceBlock / 32];
  pdl_enter();  // launched with launch_k right after the chunk kernel
  const C* parts = reinterpret_cast<const C*>(p.work);
  for (int64_t o = blockIdx.x; o < p.nout; o += gridDim.x) {
    C v = red_identity<C, OP>();
    for (int c = threadIdx.x; c < p.chunks; c += kReduceBlock) {
      v = red_op<C, OP>(v, parts[o * p.chunks + c]);
    }
    v = combine_threads<C, OP, kReduceBlock>(v, warp_vals);
    if (threadIdx.x == 0) {
      Acc<C> a{};
      a.v = v;
      finish_out(p, a, p.out + out_offset(p, o, false));
    }
  }
}

// The largest item (in groups of V elements) that a warp reduces; above it, a 256-thread block.
// A constant, not a tuning knob: it fixes the summation order (measured on an H200: rows of
// 4096 float32 ran 8% faster per warp than per block; chunks of 8192 groups 11% slower).
constexpr int64_t kRedWarpGroups = 2048;

// Launches the fast path if the op has one for dtype tag S; -1 otherwise.
template <class S>
int launch_reduce_fast(const ReducePlan& plan, const void* x, void* out, int out_dtype, int op,
                       void* work, int chunks, cudaStream_t stream) {
  using T = typename S::T;
  using C = ComputeOf<S>;
  constexpr int V = 16 / sizeof(T);
  ReduceParams<C> p =
      make_reduce_params<C>(plan, x, S::code, out, out_dtype, op, 0.0, work, chunks);
  // Chunk starts stay 16-byte aligned: chunk lengths in whole multiples of 8 elements.
  if (chunks > 1) p.chunk_len = (p.chunk_len + 7) / 8 * 8;
  const int64_t groups = (p.chunk_len + V - 1) / V;
  const bool warp = groups <= kRedWarpGroups;
  const int64_t items = plan.nout * chunks;
  const int rpb = warp ? kReduceBlock / 32 : 1;
  const unsigned grid = grid_for((items + rpb - 1) / rpb, 1);
  const int64_t gx = plan.nout < 65535 ? plan.nout : 65535;
#define PGK_RF(OPC)                                                                           \
  if (warp) launch_k(reduce_fast_kernel<S, OPC, 32>, grid, kReduceBlock, stream, p);          \
  else launch_k(reduce_fast_kernel<S, OPC, kReduceBlock>, grid, kReduceBlock, stream, p);     \
  if (chunks > 1) {                                                                           \
    if (const int rc = launch_status()) return rc;                                            \
    launch_k(reduce_fast_partials_kernel<C, OPC>, static_cast<unsigned>(gx), kReduceBlock,    \
             stream, p);                                                                      \
  }                                                                                           \
  break;
  switch (op) {
    case PGK_RED_SUM:
    case PGK_RED_MEAN: PGK_RF(PGK_RED_SUM)
    case PGK_RED_PROD: PGK_RF(PGK_RED_PROD)
    case PGK_RED_MAX: PGK_RF(PGK_RED_MAX)
    case PGK_RED_MIN: PGK_RF(PGK_RED_MIN)
    default: return -1;
  }
#undef PGK_RF
  return launch_status();
}

int launch_reduce_fast_any(const ReducePlan& plan, const void* x, int x_dtype, void* out,
                           int out_dtype, int op, void* work, int chunks, cudaStream_t stream);

}  // namespace pgk
