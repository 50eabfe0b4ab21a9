// pgk_reduce: validation, merging of the kept and of the reduced dimensions, launch.
#include <cuda_runtime.h>

#include <cstdint>

#include "pygpukit_kernels.h"
#include "reduce_fast.cuh"
#include "reduce_kernels.cuh"

namespace pgk {
namespace {
constexpr int kInvalid = static_cast<int>(cudaErrorInvalidValue);
}  // namespace

}  // namespace pgk

extern "C" PGK_API int pgk_reduce(int op, const void* x, int x_dtype, const int64_t* x_strides,
                                  int ndim, const int64_t* shape, int nred_dims, void* out,
                                  int out_dtype, const int64_t* out_strides, int compute_dtype,
                                  double ddof, void* workspace, int chunks, void* stream) {
  using namespace pgk;
  if (op < 0 || op >= PGK_NUM_REDUCE_OPS) return kInvalid;
  if (compute_dtype != PGK_FLOAT32 && compute_dtype != PGK_FLOAT64 &&
      compute_dtype != PGK_INT64) {
    return kInvalid;
  }
  if ((op == PGK_RED_MEAN || op == PGK_RED_VAR || op == PGK_RED_STD) &&
      compute_dtype == PGK_INT64) {
    return kInvalid;
  }
  if (!valid_dtype(x_dtype) || !valid_dtype(out_dtype)) return kInvalid;
  if (ndim < 0 || ndim > PGK_MAX_DIMS || nred_dims < 0 || nred_dims > ndim || chunks < 1) {
    return kInvalid;
  }
  const int nkeep = ndim - nred_dims;
  if (ndim > 0 && (shape == nullptr || x_strides == nullptr)) return kInvalid;
  if (nkeep > 0 && out_strides == nullptr) return kInvalid;
  int64_t nout = 1, nred = 1;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] < 0) return kInvalid;
    int64_t& n = d < nkeep ? nout : nred;
    if (shape[d] != 0 && n > INT64_MAX / shape[d]) return kInvalid;
    n *= shape[d];
  }
  if (nout == 0) return 0;
  if (out == nullptr || (nred > 0 && x == nullptr)) return kInvalid;
  if (chunks > 1 && workspace == nullptr) return kInvalid;
  const int xs = dtype_size(x_dtype), os = dtype_size(out_dtype);
  if (reinterpret_cast<uintptr_t>(out) % os != 0 ||
      (x != nullptr && reinterpret_cast<uintptr_t>(x) % xs != 0) ||
      reinterpret_cast<uintptr_t>(workspace) % 16 != 0) {
    return kInvalid;
  }
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] > 1 && (x_strides[d] % xs != 0 || (d < nkeep && out_strides[d] % os != 0))) {
      return kInvalid;
    }
  }
  ReducePlan plan;
  plan.nout = nout;
  plan.nred = nred;
  // Kept dims: merge neighbours contiguous in both x and out (order kept: it is out's order).
  int64_t sh[PGK_MAX_DIMS], sx[PGK_MAX_DIMS], so[PGK_MAX_DIMS];
  int m = 0;
  for (int d = 0; d < nkeep; ++d) {
    if (shape[d] == 1) continue;
    if (m > 0 && sx[m - 1] == x_strides[d] * shape[d] && so[m - 1] == out_strides[d] * shape[d]) {
      sh[m - 1] *= shape[d];
      sx[m - 1] = x_strides[d];
      so[m - 1] = out_strides[d];
    } else {
      sh[m] = shape[d];
      sx[m] = x_strides[d];
      so[m] = out_strides[d];
      ++m;
    }
  }
  if (m == 0) {
    sh[0] = 1;
    sx[0] = so[0] = 0;
    m = 1;
  }
  plan.nouter = m;
  for (int d = 0; d < m; ++d) {
    plan.oshape[d] = sh[m - 1 - d];
    plan.ostride_x[d] = sx[m - 1 - d];
    plan.ostride_o[d] = so[m - 1 - d];
  }
  // Reduced dims, in C order (argmax's flat index): merge neighbours contiguous in x.
  m = 0;
  for (int d = nkeep; d < ndim; ++d) {
    if (shape[d] == 1) continue;
    if (m > 0 && sx[m - 1] == x_strides[d] * shape[d]) {
      sh[m - 1] *= shape[d];
      sx[m - 1] = x_strides[d];
    } else {
      sh[m] = shape[d];
      sx[m] = x_strides[d];
      ++m;
    }
  }
  if (m == 0) {
    sh[0] = nred == 0 ? 0 : 1;
    sx[0] = 0;
    m = 1;
  }
  plan.ninner = m;
  for (int d = 0; d < m; ++d) {
    plan.ishape[d] = sh[m - 1 - d];
    plan.istride[d] = sx[m - 1 - d];
  }
  auto s = static_cast<cudaStream_t>(stream);
  // A reduced range contiguous in memory, of a floating dtype computed in its natural type:
  // the vectorized path (sum, mean, prod, max, min).
  const bool is_float = x_dtype == PGK_FLOAT16 || x_dtype == PGK_BFLOAT16 ||
                        x_dtype == PGK_FLOAT32 || x_dtype == PGK_FLOAT64;
  if (is_float && nred > 0 && plan.ninner == 1 && plan.istride[0] == xs &&
      (compute_dtype == PGK_FLOAT64) == (x_dtype == PGK_FLOAT64)) {
    const int rc = launch_reduce_fast_any(plan, x, x_dtype, out, out_dtype, op, workspace,
                                          chunks, s);
    if (rc != -1) return rc;
  }
  if (compute_dtype == PGK_FLOAT32) {
    return launch_reduce_f32(plan, x, x_dtype, out, out_dtype, op, ddof, workspace, chunks, s);
  }
  if (compute_dtype == PGK_FLOAT64) {
    return launch_reduce_f64(plan, x, x_dtype, out, out_dtype, op, ddof, workspace, chunks, s);
  }
  return launch_reduce_i64(plan, x, x_dtype, out, out_dtype, op, ddof, workspace, chunks, s);
}
