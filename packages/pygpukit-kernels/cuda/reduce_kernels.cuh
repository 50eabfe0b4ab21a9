// Reductions behind pgk_reduce: deterministic (no atomics; every output is reduced in a fixed
// order that depends only on the shape): one 256-thread block per output (or per chunk of an
// output, then a second pass over the chunks' partials), each thread accumulating a fixed
// strided subsequence, then a fixed shared-memory tree.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "launch_utils.cuh"
#include "math_kernels.cuh"

namespace pgk {

constexpr unsigned kReduceBlock = 256;
constexpr int kReduceSlotBytes = 32;  // workspace bytes per partial (see pgk_reduce)

// Merged index spaces: outer (kept) dims and inner (reduced) dims, innermost first.
struct ReducePlan {
  int nouter = 0, ninner = 0;
  int64_t nout = 1, nred = 1;
  int64_t oshape[PGK_MAX_DIMS], ostride_x[PGK_MAX_DIMS], ostride_o[PGK_MAX_DIMS];
  int64_t ishape[PGK_MAX_DIMS], istride[PGK_MAX_DIMS];
};

template <class C>
struct Acc {
  C v;
  C m2;         // var: sum of squared deviations (v is the mean)
  long long n;  // var: count; argmax/argmin: index of v
};

template <class C>
__device__ __forceinline__ Acc<C> acc_identity(int op) {
  Acc<C> a{};
  a.n = 0;
  a.m2 = C(0);
  switch (op) {
    case PGK_RED_PROD:
    case PGK_RED_ALL: a.v = C(1); break;
    case PGK_RED_MAX:
    case PGK_RED_ARGMAX: a.n = -1; a.v = C(0); break;  // n == -1: empty
    case PGK_RED_MIN:
    case PGK_RED_ARGMIN: a.n = -1; a.v = C(0); break;
    default: a.v = C(0); break;
  }
  return a;
}

template <class C>
__device__ __forceinline__ bool is_nan(C x) {
  if constexpr (std::is_integral_v<C>) return false;
  else return x != x;
}

// b "wins" over a for max (greater, or NaN) with ties / equal NaNs to the lower index.
template <class C>
__device__ __forceinline__ bool takes(int op, const Acc<C>& a, const Acc<C>& b) {
  if (b.n < 0) return false;
  if (a.n < 0) return true;
  const bool an = is_nan(a.v), bn = is_nan(b.v);
  if (an || bn) {
    if (an && bn) return b.n < a.n;
    return bn;
  }
  const bool maxlike = op == PGK_RED_MAX || op == PGK_RED_ARGMAX;
  if (maxlike ? (b.v > a.v) : (b.v < a.v)) return true;
  if (b.v == a.v) return b.n < a.n;
  return false;
}

template <class C>
__device__ __forceinline__ Acc<C> combine(int op, Acc<C> a, const Acc<C>& b) {
  switch (op) {
    case PGK_RED_SUM:
    case PGK_RED_MEAN: a.v += b.v; return a;
    case PGK_RED_PROD: a.v *= b.v; return a;
    case PGK_RED_ANY: a.v = (a.v != C(0) || b.v != C(0)) ? C(1) : C(0); return a;
    case PGK_RED_ALL: a.v = (a.v != C(0) && b.v != C(0)) ? C(1) : C(0); return a;
    case PGK_RED_VAR: {
      if (b.n == 0) return a;
      if (a.n == 0) return b;
      const long long n = a.n + b.n;
      const C delta = b.v - a.v;
      const C fb = static_cast<C>(b.n) / static_cast<C>(n);
      a.v = a.v + delta * fb;
      a.m2 = a.m2 + b.m2 + delta * delta * static_cast<C>(a.n) * fb;
      a.n = n;
      return a;
    }
    default: return takes(op, a, b) ? b : a;  // max, min, argmax, argmin
  }
}

template <class C>
__device__ __forceinline__ Acc<C> acc_element(int op, C x, long long index) {
  Acc<C> a{};
  a.v = x;
  // One element deviates 0 from itself, but NaN / inf must poison the variance as in NumPy
  // ((x - mean)^2 of a NaN or inf is NaN): x - x is 0, or NaN for those.
  a.m2 = (x - x) * (x - x);
  a.n = op == PGK_RED_VAR ? 1 : index;
  if (op == PGK_RED_ANY || op == PGK_RED_ALL) a.v = x != C(0) ? C(1) : C(0);
  return a;
}

template <class C>
struct ReduceParams {
  int64_t oshape[PGK_MAX_DIMS], ostride_x[PGK_MAX_DIMS], ostride_o[PGK_MAX_DIMS];
  int64_t ishape[PGK_MAX_DIMS], istride[PGK_MAX_DIMS];
  const char* x;
  char* out;
  Acc<C>* work;  // chunks > 1: partials [nout][chunks]
  int64_t nout, nred, chunk_len;
  int nouter, ninner, x_dtype, out_dtype, op, chunks;
  double ddof;
};

template <class C>
__device__ __forceinline__ void block_tree(int op, Acc<C>& a, Acc<C>* sh) {
  sh[threadIdx.x] = a;
  __syncthreads();
  for (unsigned s = kReduceBlock / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] = combine(op, sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  a = sh[0];
  __syncthreads();
}

template <class C>
__device__ __forceinline__ void finish(const ReduceParams<C>& p, const Acc<C>& a, char* dst) {
  if constexpr (std::is_integral_v<C>) {  // mean / var / std always compute in floating point
    if (p.op == PGK_RED_ARGMAX || p.op == PGK_RED_ARGMIN) {
      store_from<long long>(dst, p.out_dtype, a.n < 0 ? 0 : a.n);
    } else {
      store_from<C>(dst, p.out_dtype, a.v);
    }
    return;
  } else {
  switch (p.op) {
    case PGK_RED_MEAN: store_from<C>(dst, p.out_dtype, a.v / static_cast<C>(p.nred)); break;
    case PGK_RED_VAR: {
      const double dof = static_cast<double>(a.n) - p.ddof;
      store_from<C>(dst, p.out_dtype, dof <= 0 ? C(NAN) : a.m2 / static_cast<C>(dof));
      break;
    }
    case PGK_RED_ARGMAX:
    case PGK_RED_ARGMIN: store_from<long long>(dst, p.out_dtype, a.n < 0 ? 0 : a.n); break;
    default: store_from<C>(dst, p.out_dtype, a.v); break;
  }
  }
}

template <class C>
__device__ __forceinline__ void finish_out(const ReduceParams<C>& p, const Acc<C>& a,
                                           char* dst) {
  if constexpr (!std::is_integral_v<C>) {
    if (p.op == PGK_RED_STD) {
      const double dof = static_cast<double>(a.n) - p.ddof;
      const C var = dof <= 0 ? C(NAN) : a.m2 / static_cast<C>(dof);
      store_from<C>(dst, p.out_dtype, sqrt(var));
      return;
    }
  }
  finish(p, a, dst);
}

template <class C>
__device__ __forceinline__ int64_t out_offset(const ReduceParams<C>& p, int64_t o, bool for_x) {
  int64_t off = 0;
  for (int d = 0; d < p.nouter; ++d) {
    const int64_t c = d == p.nouter - 1 ? o : o % p.oshape[d];
    o = d == p.nouter - 1 ? 0 : o / p.oshape[d];
    off += c * (for_x ? p.ostride_x[d] : p.ostride_o[d]);
  }
  return off;
}

template <class C>
__global__ void __launch_bounds__(kReduceBlock) reduce_kernel(ReduceParams<C> p) {
  __shared__ Acc<C> sh[kReduceBlock];
  const int op = p.op == PGK_RED_STD ? PGK_RED_VAR : p.op;
  for (int64_t o = blockIdx.x; o < p.nout; o += gridDim.x) {
    const char* base = p.x + out_offset(p, o, true);
    const int64_t begin = static_cast<int64_t>(blockIdx.y) * p.chunk_len;
    int64_t end = begin + p.chunk_len;
    if (end > p.nred) end = p.nred;
    Acc<C> a = acc_identity<C>(op);
    for (int64_t r = begin + threadIdx.x; r < end; r += kReduceBlock) {
      int64_t off = 0;
      if (p.ninner == 1) {
        off = r * p.istride[0];
      } else {
        int64_t rem = r;
        for (int d = 0; d < p.ninner; ++d) {
          const int64_t c = d == p.ninner - 1 ? rem : rem % p.ishape[d];
          rem = d == p.ninner - 1 ? 0 : rem / p.ishape[d];
          off += c * p.istride[d];
        }
      }
      a = combine(op, a, acc_element<C>(op, load_as<C>(base + off, p.x_dtype), r));
    }
    block_tree(op, a, sh);
    if (threadIdx.x == 0) {
      if (p.chunks > 1) {
        p.work[o * p.chunks + blockIdx.y] = a;
      } else {
        finish_out(p, a, p.out + out_offset(p, o, false));
      }
    }
  }
}

template <class C>
__global__ void __launch_bounds__(kReduceBlock) reduce_partials_kernel(ReduceParams<C> p) {
  __shared__ Acc<C> sh[kReduceBlock];
  const int op = p.op == PGK_RED_STD ? PGK_RED_VAR : p.op;
  for (int64_t o = blockIdx.x; o < p.nout; o += gridDim.x) {
    Acc<C> a = acc_identity<C>(op);
#pragma unroll 4
    for (int c = threadIdx.x; c < p.chunks; c += kReduceBlock) {  // loads issued together
      a = combine(op, a, p.work[o * p.chunks + c]);
    }
    block_tree(op, a, sh);
    if (threadIdx.x == 0) finish_out(p, a, p.out + out_offset(p, o, false));
  }
}

// Kernel parameters for `plan`; each of the `chunks` chunks of an output covers chunk_len
// reduced elements.
template <class C>
ReduceParams<C> make_reduce_params(const ReducePlan& plan, const void* x, int x_dtype, void* out,
                                   int out_dtype, int op, double ddof, void* work, int chunks) {
  ReduceParams<C> p{};
  for (int d = 0; d < plan.nouter; ++d) {
    p.oshape[d] = plan.oshape[d];
    p.ostride_x[d] = plan.ostride_x[d];
    p.ostride_o[d] = plan.ostride_o[d];
  }
  for (int d = 0; d < plan.ninner; ++d) {
    p.ishape[d] = plan.ishape[d];
    p.istride[d] = plan.istride[d];
  }
  p.x = static_cast<const char*>(x);
  p.out = static_cast<char*>(out);
  p.work = static_cast<Acc<C>*>(work);
  p.nout = plan.nout;
  p.nred = plan.nred;
  p.chunks = chunks;
  p.chunk_len = (plan.nred + chunks - 1) / chunks;
  if (p.chunk_len == 0) p.chunk_len = 1;
  p.nouter = plan.nouter;
  p.ninner = plan.ninner;
  p.x_dtype = x_dtype;
  p.out_dtype = out_dtype;
  p.op = op;
  p.ddof = ddof;
  return p;
}

template <class C>
int launch_reduce(const ReducePlan& plan, const void* x, int x_dtype, void* out, int out_dtype,
                  int op, double ddof, void* work, int chunks, cudaStream_t stream) {
  static_assert(sizeof(Acc<C>) <= kReduceSlotBytes, "workspace slot");
  const ReduceParams<C> p =
      make_reduce_params<C>(plan, x, x_dtype, out, out_dtype, op, ddof, work, chunks);
  const int64_t gx = plan.nout < 65535 ? plan.nout : 65535;
  dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(chunks));
  reduce_kernel<C><<<grid, kReduceBlock, 0, stream>>>(p);
  if (chunks > 1) {
    if (const int rc = launch_status()) return rc;
    reduce_partials_kernel<C><<<static_cast<unsigned>(gx), kReduceBlock, 0, stream>>>(p);
  }
  return launch_status();
}

int launch_reduce_f32(const ReducePlan&, const void*, int, void*, int, int, double, void*, int,
                      cudaStream_t);
int launch_reduce_f64(const ReducePlan&, const void*, int, void*, int, int, double, void*, int,
                      cudaStream_t);
int launch_reduce_i64(const ReducePlan&, const void*, int, void*, int, int, double, void*, int,
                      cudaStream_t);

}  // namespace pgk
