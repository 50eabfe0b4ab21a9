// pgk_fill, pgk_arange, pgk_linspace.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "copy_kernels.cuh"
#include "pygpukit_kernels.h"

namespace pgk {
namespace {

constexpr int kInvalid = static_cast<int>(cudaErrorInvalidValue);

// ---- fill ----
// Dense run: 16-byte stores of the replicated value (dst 16-byte aligned), then the tail.
template <int Bytes>
__global__ void __launch_bounds__(kBlock)
fill_contig_kernel(char* __restrict__ dst, int64_t n, uint4 pattern,
                   typename Word<Bytes>::T value) {
  const int64_t nvec = n * Bytes / 16;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t j = tid; j < nvec; j += stride) reinterpret_cast<uint4*>(dst)[j] = pattern;
  const int64_t tail = nvec * (16 / Bytes) + tid;
  if (tail < n) reinterpret_cast<typename Word<Bytes>::T*>(dst)[tail] = value;
}

template <int Bytes>
int launch_fill(const Plan& p, uint64_t bits, cudaStream_t stream) {
  using W = typename Word<Bytes>::T;
  W value;
  std::memcpy(&value, &bits, Bytes);  // little-endian: the low bytes
  if (plan_contiguous(p, Bytes, Bytes) && aligned_to(p.dst, 16)) {
    uint4 pattern;
    unsigned char* pb = reinterpret_cast<unsigned char*>(&pattern);
    for (int k = 0; k < 16; k += Bytes) std::memcpy(pb + k, &value, Bytes);
    const int64_t work = (p.n * Bytes + 15) / 16;
    fill_contig_kernel<Bytes><<<grid_for(work, kBlock), kBlock, 0, stream>>>(p.dst, p.n, pattern,
                                                                            value);
    return launch_status();
  }
  return launch_nd(p, FillOp<Bytes>{value}, stream);
}

// The storage bits of the fill value in dtype D.
template <class D>
uint64_t fill_bits(double dval, int64_t ival) {
  typename D::T v;
  if constexpr (D::kind == Kind::Bool) v = ival != 0 ? 1 : 0;
  else if constexpr (D::kind == Kind::Int) v = static_cast<typename D::T>(ival);  // wraps
  else v = convert<TF64, D>(dval);
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(v));
  return bits;
}

// ---- arange ----
template <class D>
__global__ void __launch_bounds__(kBlock)
arange_kernel(typename D::T* __restrict__ dst, int64_t n, double dstart, double dstep,
              int64_t istart, int64_t istep) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    if constexpr (D::kind == Kind::Bool || D::kind == Kind::Int) {
      // Two's-complement wrap-around, then a wrapping narrowing cast.
      const uint64_t v = static_cast<uint64_t>(istart) +
                         static_cast<uint64_t>(i) * static_cast<uint64_t>(istep);
      if constexpr (D::kind == Kind::Bool) dst[i] = v != 0 ? 1 : 0;
      else dst[i] = static_cast<typename D::T>(static_cast<long long>(v));
    } else {
      // No FMA contraction: one rounding for the product, one for the sum.
      const double y = __dadd_rn(dstart, __dmul_rn(static_cast<double>(i), dstep));
      dst[i] = convert<TF64, D>(y);
    }
  }
}

// ---- linspace ----
enum LinMode : int { kLinStep = 0, kLinStepZero = 1, kLinNoDiv = 2 };

template <class D>
__global__ void __launch_bounds__(kBlock)
linspace_kernel(typename D::T* __restrict__ dst, int64_t n, double start, double stop,
                double step, double delta, double div, int mode, int endpoint) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const double fi = static_cast<double>(i);
    double y;
    // numpy.linspace: y = arange(n); y *= step (or y /= div; y *= delta); y += start
    if (mode == kLinStep) y = __dmul_rn(fi, step);
    else if (mode == kLinStepZero) y = __dmul_rn(__ddiv_rn(fi, div), delta);
    else y = __dmul_rn(fi, delta);
    y = __dadd_rn(y, start);
    if (endpoint && n > 1 && i == n - 1) y = stop;
    if constexpr (D::kind == Kind::Int) y = floor(y);  // numpy floors for integer dtypes
    dst[i] = convert<TF64, D>(y);
  }
}

}  // namespace
}  // namespace pgk

extern "C" PGK_API int pgk_fill(void* dst, int dtype, const int64_t* strides, int ndim,
                                const int64_t* shape, double dval, int64_t ival, void* stream) {
  using namespace pgk;
  if (!valid_dtype(dtype)) return kInvalid;
  Plan plan;
  const int size = dtype_size(dtype);
  if (const int rc = make_plan(nullptr, nullptr, size, dst, strides, size, ndim, shape, false,
                               plan)) {
    return rc;
  }
  if (plan.n == 0) return 0;
  const uint64_t bits =
      dispatch_dtype(dtype, [&](auto tag) { return fill_bits<decltype(tag)>(dval, ival); });
  auto s = static_cast<cudaStream_t>(stream);
  switch (size) {
    case 1: return launch_fill<1>(plan, bits, s);
    case 2: return launch_fill<2>(plan, bits, s);
    case 4: return launch_fill<4>(plan, bits, s);
    default: return launch_fill<8>(plan, bits, s);
  }
}

extern "C" PGK_API int pgk_arange(void* dst, int dtype, int64_t n, double dstart, double dstep,
                                  int64_t istart, int64_t istep, void* stream) {
  using namespace pgk;
  if (!valid_dtype(dtype) || n < 0) return kInvalid;
  if (n == 0) return 0;
  if (dst == nullptr || reinterpret_cast<uintptr_t>(dst) % dtype_size(dtype) != 0) {
    return kInvalid;
  }
  auto s = static_cast<cudaStream_t>(stream);
  return dispatch_dtype(dtype, [&](auto tag) {
    using D = decltype(tag);
    arange_kernel<D><<<grid_for(n, kBlock), kBlock, 0, s>>>(
        static_cast<typename D::T*>(dst), n, dstart, dstep, istart, istep);
    return launch_status();
  });
}

extern "C" PGK_API int pgk_linspace(void* dst, int dtype, int64_t n, double start, double stop,
                                    int endpoint, void* stream) {
  using namespace pgk;
  if (!valid_dtype(dtype) || n < 0) return kInvalid;
  if (n == 0) return 0;
  if (dst == nullptr || reinterpret_cast<uintptr_t>(dst) % dtype_size(dtype) != 0) {
    return kInvalid;
  }
  // The host part of numpy.linspace, in the same float64 operations.
  const int64_t div_i = endpoint ? n - 1 : n;
  const double div = static_cast<double>(div_i);
  const double delta = stop - start;
  double step = 0.0;
  int mode = kLinNoDiv;
  if (div_i > 0) {
    step = delta / div;
    mode = step == 0.0 ? kLinStepZero : kLinStep;
  }
  auto s = static_cast<cudaStream_t>(stream);
  return dispatch_dtype(dtype, [&](auto tag) {
    using D = decltype(tag);
    linspace_kernel<D><<<grid_for(n, kBlock), kBlock, 0, s>>>(
        static_cast<typename D::T*>(dst), n, start, stop, step, delta, div, mode,
        endpoint ? 1 : 0);
    return launch_status();
  });
}
