// pgk_copy: strided N-d copy with dtype conversion.  Host side: validation, coalescing of
// dimensions, choice of kernel.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <utility>

#include "copy_kernels.cuh"
#include "pygpukit_kernels.h"

namespace pgk {

namespace {
constexpr int kInvalid = static_cast<int>(cudaErrorInvalidValue);

int64_t abs64(int64_t v) { return v < 0 ? -v : v; }
}  // namespace

bool fits_32bit(const Plan& p) {
  constexpr __int128 lim = INT32_MAX;
  if (p.n > INT32_MAX) return false;
  __int128 sext = 0, dext = 0;
  for (int d = 0; d < p.ndim; ++d) {
    sext += static_cast<__int128>(abs64(p.ss[d])) * (p.shape[d] - 1);
    dext += static_cast<__int128>(abs64(p.ds[d])) * (p.shape[d] - 1);
    if (abs64(p.ss[d]) > lim || abs64(p.ds[d]) > lim) return false;
  }
  return sext <= lim && dext <= lim;
}

// Validate the arguments and build a coalesced plan.  Returns kInvalid on bad arguments, 0 with
// plan.n == 0 for an empty index space, 0 with a plan otherwise.  `src_strides` may be null when
// there is no source (fill).
int make_plan(const void* src, const int64_t* src_strides, int src_size, void* dst,
              const int64_t* dst_strides, int dst_size, int ndim, const int64_t* shape,
              bool has_src, Plan& plan) {
  if (ndim < 0 || ndim > kMaxDims) return kInvalid;
  if (ndim > 0 && (shape == nullptr || dst_strides == nullptr ||
                   (has_src && src_strides == nullptr))) {
    return kInvalid;
  }
  int64_t n = 1;
  bool overflow = false;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] < 0) return kInvalid;
    if (shape[d] != 0 && n > INT64_MAX / shape[d]) overflow = true;
    else n *= shape[d];
  }
  if (n == 0) {  // some dim is 0 (n stays 0 once multiplied by it)
    plan.n = 0;
    return 0;
  }
  if (overflow) return kInvalid;
  if (dst == nullptr || (has_src && src == nullptr)) return kInvalid;
  // Natural alignment: element accesses of a misaligned view would fault on the device.
  if (reinterpret_cast<uintptr_t>(dst) % dst_size != 0 ||
      (has_src && reinterpret_cast<uintptr_t>(src) % src_size != 0)) {
    return kInvalid;
  }
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] > 1 && (dst_strides[d] % dst_size != 0 ||
                         (has_src && src_strides[d] % src_size != 0))) {
      return kInvalid;
    }
  }

  const char* s = static_cast<const char*>(src);
  char* t = static_cast<char*>(dst);
  // Collect the dims that matter (outermost first), flipping dims the destination walks
  // backwards so that reversed views of both sides become forward ones.
  int nd = 0;
  int64_t sh[kMaxDims], ss[kMaxDims], ds[kMaxDims];
  for (int d = 0; d < ndim; ++d) {
    int64_t sst = has_src ? src_strides[d] : 0;
    int64_t dst_ = dst_strides[d];
    if (shape[d] == 1) continue;
    if (!has_src && dst_ == 0) continue;  // fill: writing the same value again
    if (sst == 0 && dst_ == 0) continue;  // the same element to the same place
    if (dst_ < 0 || (dst_ == 0 && sst < 0)) {
      s += (shape[d] - 1) * sst;
      t += (shape[d] - 1) * dst_;
      sst = -sst;
      dst_ = -dst_;
    }
    sh[nd] = shape[d];
    ss[nd] = sst;
    ds[nd] = dst_;
    ++nd;
  }
  // Order dims by destination stride, largest outermost (stable insertion sort; ties by the
  // source stride), so the innermost dim is the one the destination walks densely.
  for (int i = 1; i < nd; ++i) {
    for (int j = i; j > 0; --j) {
      const bool swap = ds[j - 1] < ds[j] || (ds[j - 1] == ds[j] && abs64(ss[j - 1]) < abs64(ss[j]));
      if (!swap) break;
      std::swap(sh[j - 1], sh[j]);
      std::swap(ss[j - 1], ss[j]);
      std::swap(ds[j - 1], ds[j]);
    }
  }
  // Merge each dim into the next inner one when both sides step over it contiguously.
  int m = 0;  // merged dims, outermost first, in sh/ss/ds[0..m)
  for (int d = 0; d < nd; ++d) {
    if (m > 0 && ss[m - 1] == ss[d] * sh[d] && ds[m - 1] == ds[d] * sh[d]) {
      sh[m - 1] *= sh[d];
      ss[m - 1] = ss[d];
      ds[m - 1] = ds[d];
    } else {
      sh[m] = sh[d];
      ss[m] = ss[d];
      ds[m] = ds[d];
      ++m;
    }
  }
  if (m == 0) {  // a single element (ndim 0, or only size-1 / stride-0 dims)
    sh[0] = 1;
    ss[0] = 0;
    ds[0] = 0;
    m = 1;
  }
  plan.ndim = m;
  plan.n = 1;  // the elements actually visited (dropped broadcast dims do not count)
  for (int d = 0; d < m; ++d) plan.n *= sh[d];
  for (int d = 0; d < m; ++d) {  // innermost first
    plan.shape[d] = sh[m - 1 - d];
    plan.ss[d] = ss[m - 1 - d];
    plan.ds[d] = ds[m - 1 - d];
  }
  plan.src = s;
  plan.dst = t;
  return 0;
}

bool plan_contiguous(const Plan& p, int src_size, int dst_size) {
  return p.n == 1 || (p.ndim == 1 && p.ss[0] == src_size && p.ds[0] == dst_size);
}

namespace {

template <int Bytes>
int launch_move(const Plan& p, cudaStream_t stream) {
  if (plan_contiguous(p, Bytes, Bytes)) {
    return static_cast<int>(cudaMemcpyAsync(p.dst, p.src, static_cast<size_t>(p.n) * Bytes,
                                            cudaMemcpyDeviceToDevice, stream));
  }
  if (transpose_like(p, Bytes, Bytes)) {
    using W = typename Word<Bytes>::T;
    return launch_transpose<W, W>(p, Identity<W>{}, stream);
  }
  return launch_nd(p, MoveOp<Bytes>{}, stream);
}

}  // namespace

}  // namespace pgk

extern "C" PGK_API int pgk_copy(const void* src, int src_dtype, const int64_t* src_strides,
                                void* dst, int dst_dtype, const int64_t* dst_strides, int ndim,
                                const int64_t* shape, void* stream) {
  using namespace pgk;
  if (!valid_dtype(src_dtype) || !valid_dtype(dst_dtype)) return kInvalid;
  Plan plan;
  const int ssize = dtype_size(src_dtype), dsize = dtype_size(dst_dtype);
  if (const int rc = make_plan(src, src_strides, ssize, dst, dst_strides, dsize, ndim, shape,
                               true, plan)) {
    return rc;
  }
  if (plan.n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (src_dtype == dst_dtype) {
    switch (ssize) {
      case 1: return launch_move<1>(plan, s);
      case 2: return launch_move<2>(plan, s);
      case 4: return launch_move<4>(plan, s);
      default: return launch_move<8>(plan, s);
    }
  }
  const bool contig = plan_contiguous(plan, ssize, dsize);
  switch (src_dtype) {
    case 0: return launch_cast_from<0>(dst_dtype, plan, contig, s);
    case 1: return launch_cast_from<1>(dst_dtype, plan, contig, s);
    case 2: return launch_cast_from<2>(dst_dtype, plan, contig, s);
    case 3: return launch_cast_from<3>(dst_dtype, plan, contig, s);
    case 4: return launch_cast_from<4>(dst_dtype, plan, contig, s);
    case 5: return launch_cast_from<5>(dst_dtype, plan, contig, s);
    case 6: return launch_cast_from<6>(dst_dtype, plan, contig, s);
    case 7: return launch_cast_from<7>(dst_dtype, plan, contig, s);
    case 8: return launch_cast_from<8>(dst_dtype, plan, contig, s);
    default: return launch_cast_from<9>(dst_dtype, plan, contig, s);
  }
}
