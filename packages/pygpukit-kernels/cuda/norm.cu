// pgk_row_norm: validation and the choice of dtype (the kernels are in norm_kernels.cuh).
#include <cuda_runtime.h>

#include <cstdint>

#include "norm_kernels.cuh"
#include "pygpukit_kernels.h"

extern "C" PGK_API int pgk_row_norm(int op, const void* x, int dtype, int64_t rows,
                                    int64_t cols, int64_t x_row_stride, int64_t x_col_stride,
                                    void* out, int64_t out_row_stride, const void* weight,
                                    int weight_dtype, int64_t weight_stride, const void* bias,
                                    int bias_dtype, int64_t bias_stride, double eps,
                                    void* stream) {
  using namespace pgk;
  constexpr int kInvalid = static_cast<int>(cudaErrorInvalidValue);
  if (op < 0 || op >= PGK_NUM_NORM_OPS) return kInvalid;
  if (dtype != PGK_FLOAT16 && dtype != PGK_BFLOAT16 && dtype != PGK_FLOAT32 &&
      dtype != PGK_FLOAT64) {
    return kInvalid;
  }
  if (rows < 0 || rows > INT32_MAX || cols < 0 || cols > INT32_MAX - 16 || !(eps >= 0)) {
    return kInvalid;
  }
  if (rows == 0 || cols == 0) return 0;
  if (x == nullptr || out == nullptr) return kInvalid;
  const bool affine = op == PGK_NORM_LAYER || op == PGK_NORM_RMS;
  if (!affine || op == PGK_NORM_RMS) bias = nullptr;
  if (!affine) weight = nullptr;
  const int compute = dtype == PGK_FLOAT64 ? PGK_FLOAT64 : PGK_FLOAT32;
  const int csize = dtype_size(compute);
  if ((weight != nullptr && weight_dtype != compute) ||
      (bias != nullptr && bias_dtype != compute)) {
    return kInvalid;
  }
  const int size = dtype_size(dtype);
  auto misaligned = [](const void* p, int64_t a) {
    return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(a) != 0;
  };
  if (misaligned(x, size) || misaligned(out, size) || x_row_stride % size != 0 ||
      x_col_stride % size != 0 || out_row_stride % size != 0) {
    return kInvalid;
  }
  if (weight != nullptr && (misaligned(weight, csize) || weight_stride % csize != 0)) {
    return kInvalid;
  }
  if (bias != nullptr && (misaligned(bias, csize) || bias_stride % csize != 0)) {
    return kInvalid;
  }
  NormParams p{};
  p.x = static_cast<const char*>(x);
  p.out = static_cast<char*>(out);
  p.w = static_cast<const char*>(weight);
  p.b = static_cast<const char*>(bias);
  p.rows = rows;
  p.cols = cols;
  p.xrs = rows > 1 ? x_row_stride : 0;
  p.xcs = x_col_stride;
  p.ors = out_row_stride;
  p.ws = weight_stride;
  p.bs = bias_stride;
  p.eps = eps;
  const int vec_elems = 16 / size;
  p.vec = (cols % vec_elems == 0 && x_col_stride == size && !misaligned(x, 16) &&
           !misaligned(out, 16) && (rows == 1 || (x_row_stride % 16 == 0)) &&
           (rows == 1 || out_row_stride % 16 == 0)) ? 1 : 0;
  p.wvec = (p.vec && weight != nullptr && weight_stride == csize &&
            !misaligned(weight, 16)) ? 1 : 0;
  p.bvec = (p.vec && bias != nullptr && bias_stride == csize &&
            !misaligned(bias, 16)) ? 1 : 0;
  auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case PGK_FLOAT16: return launch_norm_f16(op, p, s);
    case PGK_BFLOAT16: return launch_norm_bf16(op, p, s);
    case PGK_FLOAT32: return launch_norm_f32(op, p, s);
    default: return launch_norm_f64(op, p, s);
  }
}
