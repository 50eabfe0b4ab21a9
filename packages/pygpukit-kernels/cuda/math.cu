// pgk_binary / pgk_unary / pgk_where: validation, coalescing of the operands' dimensions, choice
// of kernel (the vectorized fast path or the generic N-d kernel of the compute type).
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "math_kernels.cuh"
#include "pygpukit_kernels.h"

namespace pgk {

namespace {
constexpr int kInvalid = static_cast<int>(cudaErrorInvalidValue);
int64_t abs64(int64_t v) { return v < 0 ? -v : v; }
}  // namespace

bool math_fits_32bit(const MathPlan& p) {
  constexpr __int128 lim = INT32_MAX;
  if (p.n > INT32_MAX) return false;
  for (int o = 0; o < p.nops; ++o) {
    __int128 ext = 0;
    for (int d = 0; d < p.ndim; ++d) {
      if (abs64(p.st[o][d]) > lim) return false;
      ext += static_cast<__int128>(abs64(p.st[o][d])) * (p.shape[d] - 1);
    }
    if (ext > lim) return false;
  }
  return true;
}

int make_math_plan(int nops, void* const* ptrs, const int* sizes, const int64_t* const* strides,
                   int ndim, const int64_t* shape, MathPlan& plan) {
  if (ndim < 0 || ndim > PGK_MAX_DIMS || nops < 1 || nops > kMathMaxOperands) return kInvalid;
  if (ndim > 0 && shape == nullptr) return kInvalid;
  for (int o = 0; o < nops; ++o) {
    if (ndim > 0 && ptrs[o] != nullptr && strides[o] == nullptr) return kInvalid;
  }
  int64_t n = 1;
  bool overflow = false;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] < 0) return kInvalid;
    if (shape[d] != 0 && n > INT64_MAX / shape[d]) overflow = true;
    else n *= shape[d];
  }
  plan.nops = nops;
  if (n == 0) {
    plan.n = 0;
    return 0;
  }
  if (overflow || ptrs[0] == nullptr) return kInvalid;
  for (int o = 0; o < nops; ++o) {
    if (ptrs[o] == nullptr) continue;
    if (reinterpret_cast<uintptr_t>(ptrs[o]) % sizes[o] != 0) return kInvalid;
    for (int d = 0; d < ndim; ++d) {
      if (shape[d] > 1 && strides[o][d] % sizes[o] != 0) return kInvalid;
    }
  }
  // Dims that matter, outermost first.
  int nd = 0;
  int64_t sh[PGK_MAX_DIMS], st[kMathMaxOperands][PGK_MAX_DIMS];
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] == 1) continue;
    sh[nd] = shape[d];
    for (int o = 0; o < nops; ++o) st[o][nd] = ptrs[o] ? strides[o][d] : 0;
    ++nd;
  }
  // Order by |output stride|, largest outermost (stable), so the output is walked densely.
  for (int i = 1; i < nd; ++i) {
    for (int j = i; j > 0 && abs64(st[0][j - 1]) < abs64(st[0][j]); --j) {
      std::swap(sh[j - 1], sh[j]);
      for (int o = 0; o < nops; ++o) std::swap(st[o][j - 1], st[o][j]);
    }
  }
  int m = 0;
  for (int d = 0; d < nd; ++d) {
    bool merge = m > 0;
    for (int o = 0; merge && o < nops; ++o) merge = st[o][m - 1] == st[o][d] * sh[d];
    if (merge) {
      sh[m - 1] *= sh[d];
      for (int o = 0; o < nops; ++o) st[o][m - 1] = st[o][d];
    } else {
      sh[m] = sh[d];
      for (int o = 0; o < nops; ++o) st[o][m] = st[o][d];
      ++m;
    }
  }
  if (m == 0) {
    sh[0] = 1;
    for (int o = 0; o < nops; ++o) st[o][0] = 0;
    m = 1;
  }
  plan.ndim = m;
  plan.n = n;
  for (int d = 0; d < m; ++d) {
    plan.shape[d] = sh[m - 1 - d];
    for (int o = 0; o < nops; ++o) plan.st[o][d] = st[o][m - 1 - d];
  }
  for (int o = 0; o < kMathMaxOperands; ++o) {
    plan.ptr[o] = o < nops ? static_cast<char*>(ptrs[o]) : nullptr;
  }
  return 0;
}

namespace {

bool valid_compute(int c) { return c == PGK_FLOAT32 || c == PGK_FLOAT64 || c == PGK_INT64; }

int run_generic(const MathPlan& plan, const int* dtypes, int op, int kind, int compute,
                double fa, int64_t ia, double fb, int64_t ib, cudaStream_t s) {
  if (compute == PGK_FLOAT32) return launch_math_f32(plan, dtypes, op, kind, fa, fb, s);
  if (compute == PGK_FLOAT64) return launch_math_f64(plan, dtypes, op, kind, fa, fb, s);
  return launch_math_i64(plan, dtypes, op, kind, ia, ib, s);
}

// Whether every array operand is walked densely in one run (the plan's only dim) from a
// 16-byte-aligned start (the vectorized kernel loads 16-byte packs).
bool dense(const MathPlan& p, const int* sizes) {
  if (p.ndim != 1) return false;
  for (int o = 0; o < p.nops; ++o) {
    if (p.ptr[o] == nullptr) continue;
    if (p.st[o][0] != sizes[o] || reinterpret_cast<uintptr_t>(p.ptr[o]) % 16 != 0) return false;
  }
  return true;
}

// Whether a binary op fits the 2-D broadcast kernel (see Bcast2D), and its parameters.
bool bcast2d_plan(const MathPlan& p, int size, Bcast2D& bc, int64_t& rows, int64_t& cols) {
  if (p.ndim > 2 || (size != 2 && size != 4 && size != 8)) return false;
  const int vec = 16 / size;
  cols = p.shape[0];
  rows = p.ndim == 2 ? p.shape[1] : 1;
  if (cols % vec != 0 || p.st[0][0] != size) return false;
  if (p.ndim == 2 && p.st[0][1] != size * cols) return false;
  if (reinterpret_cast<uintptr_t>(p.ptr[0]) % 16 != 0) return false;
  if ((cols / vec) * rows >= (int64_t{1} << 32)) return false;
  for (int k = 0; k < 2; ++k) {
    const char* ptr = p.ptr[k + 1];
    bc.ptr[k] = ptr;
    bc.row_st[k] = 0;
    bc.inner_zero[k] = 0;
    if (ptr == nullptr) continue;
    const int64_t inner = p.st[k + 1][0];
    bc.row_st[k] = p.ndim == 2 ? p.st[k + 1][1] : 0;
    if (inner == 0) {
      bc.inner_zero[k] = 1;
    } else if (inner != size || reinterpret_cast<uintptr_t>(ptr) % 16 != 0 ||
               bc.row_st[k] % 16 != 0) {
      return false;
    }
  }
  return true;
}

}  // namespace

}  // namespace pgk

extern "C" PGK_API int pgk_binary(int op, const void* a, int a_dtype, const int64_t* a_strides,
                                  const void* b, int b_dtype, const int64_t* b_strides,
                                  void* out, int out_dtype, const int64_t* out_strides,
                                  int ndim, const int64_t* shape, int compute_dtype,
                                  double scalar_f, int64_t scalar_i, void* stream) {
  using namespace pgk;
  if (op < 0 || op >= PGK_NUM_BINARY_OPS || !valid_compute(compute_dtype)) return kInvalid;
  if ((op == PGK_OP_BITWISE_AND || op == PGK_OP_BITWISE_OR || op == PGK_OP_BITWISE_XOR) &&
      compute_dtype != PGK_INT64) {
    return kInvalid;
  }
  if (!valid_dtype(a_dtype) || !valid_dtype(b_dtype) || !valid_dtype(out_dtype)) return kInvalid;
  if (a == nullptr && b == nullptr) return kInvalid;
  const int dtypes[3] = {out_dtype, a_dtype, b_dtype};
  const int sizes[3] = {dtype_size(out_dtype), dtype_size(a_dtype), dtype_size(b_dtype)};
  void* ptrs[3] = {out, const_cast<void*>(a), const_cast<void*>(b)};
  const int64_t* strides[3] = {out_strides, a_strides, b_strides};
  MathPlan plan;
  if (const int rc = make_math_plan(3, ptrs, sizes, strides, ndim, shape, plan)) return rc;
  if (plan.n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  const int scalar_side = a == nullptr ? 1 : (b == nullptr ? 2 : 0);
  const bool is_float_out = out_dtype == PGK_FLOAT16 || out_dtype == PGK_BFLOAT16 ||
                            out_dtype == PGK_FLOAT32 || out_dtype == PGK_FLOAT64;
  const bool same_dtypes = (scalar_side == 1 || a_dtype == out_dtype) &&
                           (scalar_side == 2 || b_dtype == out_dtype);
  const bool natural_compute =
      (out_dtype == PGK_FLOAT64) == (compute_dtype == PGK_FLOAT64) && compute_dtype != PGK_INT64;
  if (is_float_out && same_dtypes && natural_compute && !dense(plan, sizes)) {
    Bcast2D bc;
    int64_t rows = 0, cols = 0;
    if (bcast2d_plan(plan, sizes[0], bc, rows, cols)) {
      const int rc = launch_binary_bcast2d_any(out_dtype, op, bc, plan.ptr[0], rows, cols,
                                               scalar_f, s);
      if (rc != -1) return rc;
    }
  }
  if (dense(plan, sizes) && (scalar_side == 1 || a_dtype == out_dtype) &&
      (scalar_side == 2 || b_dtype == out_dtype)) {
    int rc = -1;
    const bool natural =
        (out_dtype == PGK_FLOAT64) == (compute_dtype == PGK_FLOAT64) && compute_dtype != PGK_INT64;
    if (natural) {
      const void* pa = plan.ptr[1];
      const void* pb = plan.ptr[2];
      switch (out_dtype) {
        case PGK_FLOAT16: rc = launch_binary_fast_f16(op, pa, pb, plan.ptr[0], plan.n, scalar_side, scalar_f, s); break;
        case PGK_BFLOAT16: rc = launch_binary_fast_bf16(op, pa, pb, plan.ptr[0], plan.n, scalar_side, scalar_f, s); break;
        case PGK_FLOAT32: rc = launch_binary_fast_f32(op, pa, pb, plan.ptr[0], plan.n, scalar_side, scalar_f, s); break;
        case PGK_FLOAT64: rc = launch_binary_fast_f64(op, pa, pb, plan.ptr[0], plan.n, scalar_side, scalar_f, s); break;
        default: break;
      }
    }
    if (rc != -1) return rc;
  }
  return run_generic(plan, dtypes, op, 0, compute_dtype, scalar_f, scalar_i, scalar_f, scalar_i,
                     s);
}

extern "C" PGK_API int pgk_unary(int op, const void* x, int x_dtype, const int64_t* x_strides,
                                 void* out, int out_dtype, const int64_t* out_strides, int ndim,
                                 const int64_t* shape, int compute_dtype, void* stream) {
  using namespace pgk;
  if (op < 0 || op >= PGK_NUM_UNARY_OPS || !valid_compute(compute_dtype)) return kInvalid;
  if (op == PGK_UOP_INVERT && compute_dtype != PGK_INT64) return kInvalid;
  if (!valid_dtype(x_dtype) || !valid_dtype(out_dtype)) return kInvalid;
  const int dtypes[2] = {out_dtype, x_dtype};
  const int sizes[2] = {dtype_size(out_dtype), dtype_size(x_dtype)};
  void* ptrs[2] = {out, const_cast<void*>(x)};
  const int64_t* strides[2] = {out_strides, x_strides};
  MathPlan plan;
  if (const int rc = make_math_plan(2, ptrs, sizes, strides, ndim, shape, plan)) return rc;
  if (plan.n == 0) return 0;
  if (plan.ptr[1] == nullptr) return kInvalid;
  const bool natural_compute =
      (out_dtype == PGK_FLOAT64) == (compute_dtype == PGK_FLOAT64) && compute_dtype != PGK_INT64;
  if (x_dtype == out_dtype && natural_compute && dense(plan, sizes)) {
    const int rc = launch_unary_fast_any(out_dtype, op, plan.ptr[1], plan.ptr[0], plan.n,
                                         static_cast<cudaStream_t>(stream));
    if (rc != -1) return rc;
  }
  return run_generic(plan, dtypes, op, 1, compute_dtype, 0.0, 0, 0.0, 0,
                     static_cast<cudaStream_t>(stream));
}

extern "C" PGK_API int pgk_where(const void* cond, int cond_dtype, const int64_t* cond_strides,
                                 const void* a, int a_dtype, const int64_t* a_strides,
                                 const void* b, int b_dtype, const int64_t* b_strides, void* out,
                                 int out_dtype, const int64_t* out_strides, int ndim,
                                 const int64_t* shape, int compute_dtype, double a_f,
                                 int64_t a_i, double b_f, int64_t b_i, void* stream) {
  using namespace pgk;
  if (!valid_compute(compute_dtype)) return kInvalid;
  if (!valid_dtype(cond_dtype) || !valid_dtype(a_dtype) || !valid_dtype(b_dtype) ||
      !valid_dtype(out_dtype)) {
    return kInvalid;
  }
  const int dtypes[4] = {out_dtype, cond_dtype, a_dtype, b_dtype};
  const int sizes[4] = {dtype_size(out_dtype), dtype_size(cond_dtype), dtype_size(a_dtype),
                        dtype_size(b_dtype)};
  void* ptrs[4] = {out, const_cast<void*>(cond), const_cast<void*>(a), const_cast<void*>(b)};
  const int64_t* strides[4] = {out_strides, cond_strides, a_strides, b_strides};
  MathPlan plan;
  if (const int rc = make_math_plan(4, ptrs, sizes, strides, ndim, shape, plan)) return rc;
  if (plan.n == 0) return 0;
  if (plan.ptr[1] == nullptr) return kInvalid;
  return run_generic(plan, dtypes, 0, 2, compute_dtype, a_f, a_i, b_f, b_i,
                     static_cast<cudaStream_t>(stream));
}
