// Kernels for small arrays, launched through the driver API from the standalone fatbin
// `small_ops.fatbin` (cuModuleLoadData + a prepared launcher), not through the C ABI.
//
// For a few thousand elements the device work is nothing and the host's cost of a launch is
// everything, so these kernels take flat, scalar parameters that a prepared launcher packs in
// C (no strides arrays, no structs) and dispatch on dtype and op codes at run time.  Operands
// are contiguous (the caller checks) or, for inputs, a single element broadcast (step 0).
// Element semantics are those of the C ABI kernels (math_kernels.cuh, reduce_kernels.cuh,
// norm): the same loads, conversions, ops and stores, so a small array gives what a large one
// would (reductions and norms combine in their own fixed order: deterministic, not
// bit-identical to the large-array path).
//
// Every kernel is extern "C" so the driver API finds it by name; parameter lists are mirrored
// by pygpukit's launch table (arg type strings) and checked by its tests.  Each starts with
// pdl_enter(): on sm_90+ they are launched as programmatic dependents (the launch overlaps the
// previous kernel's tail; in a CUDA graph the edges become programmatic), and wait there for
// the previous kernel to finish before touching memory.
#include <cuda_runtime.h>

#include <cstdint>

#include "dtypes.cuh"
#include "math_kernels.cuh"
#include "pygpukit_kernels.h"
#include "reduce_kernels.cuh"

// ---- fused CUDA-graph steps (this fatbin's ABI with the driver binding's graph_fuse.cpp) ----
// When a CUDA graph is captured, each line of these kernels that wait for one another is
// replaced by one launch of pgk_small_program(steps, count) (one block of 256 threads): it runs
// the steps in order, each as its kernel would (the same device functions, the kernel's blocks
// one after another, so results are bit for bit the same), with a block barrier between steps.
// A step names its kernel, the grid it was launched with, and holds the kernel's parameter
// buffer as the driver lays it out (cuFuncGetParamInfo offsets).  Kinds: pygpukit_kernels'
// SmallStep (a test compares).
enum {
  PGK_STEP_EW_F32 = 0, PGK_STEP_EW_F64 = 1, PGK_STEP_EW_I64 = 2, PGK_STEP_CAST = 3,
  PGK_STEP_REDUCE_F32 = 4, PGK_STEP_REDUCE_F64 = 5, PGK_STEP_REDUCE_I64 = 6,
  PGK_STEP_ROW_NORM_F32 = 7, PGK_STEP_ROW_NORM_F64 = 8
};
#define PGK_STEP_PARAM_BYTES 128
struct pgk_small_step {
  int32_t kernel;  // PGK_STEP_*
  uint32_t grid;   // blocks the kernel was launched with (grid x)
  int64_t params[PGK_STEP_PARAM_BYTES / 8];
};
static_assert(sizeof(pgk_small_step) == 136, "pgk_small_step layout (graph_fuse.cpp's Step)");

namespace pgk {
namespace {

constexpr unsigned kSmallBlock = 256;

// Element size of a dtype code (dtype_size() is host-only).
__device__ __forceinline__ int elem_size(int code) {
  switch (code) {
    case PGK_BOOL: case PGK_INT8: case PGK_UINT8: return 1;
    case PGK_INT16: case PGK_FLOAT16: case PGK_BFLOAT16: return 2;
    case PGK_INT32: case PGK_FLOAT32: return 4;
    default: return 8;
  }
}

// ---- short paths for the common cases ----
// In pgk_small_program a step's time is its instruction chain (the program runs one block;
// its data sits in L1): operands of the compute type are checked for first and take a loop
// with no dtype dispatch and no element-size arithmetic; add, subtract, multiply and divide
// are tested before the full op switch; f32 <-> 16-bit casts have their own loops.  The
// standalone kernels share these paths, so a fused step stays bit for bit its kernel.
template <class C>
__device__ __forceinline__ C small_binary(int op, C a, C b) {
  switch (op) {
    case PGK_OP_ADD: return a + b;
    case PGK_OP_SUBTRACT: return a - b;
    case PGK_OP_MULTIPLY: return a * b;
    case PGK_OP_DIVIDE: return a / b;
    default: return apply_binary<C>(op, a, b);
  }
}
template <class C>
__device__ __forceinline__ C small_unary(int op, C x) {
  if constexpr (!std::is_integral_v<C>) {
    if (op == PGK_UOP_NEGATIVE) return -x;
  }
  return apply_unary<C>(op, x);
}

template <class C>
using ComputeTag = std::conditional_t<std::is_same_v<C, float>, TF32,
                                      std::conditional_t<std::is_same_v<C, double>, TF64, TI64>>;

// Operands of mixed dtypes: a conversion per load and store.
template <class C>
__device__ __forceinline__ void small_ew_generic(int kind, int op, char* out, int out_dt,
                                                 const char* a, int a_dt, long long a_step,
                                                 const char* b, int b_dt, long long b_step,
                                                 const char* c, int c_dt, long long c_step,
                                                 C sa, C sb, long long n, unsigned bx,
                                                 unsigned nb);

// n elements of a contiguous out from operands a, b, c (step 0: element 0 broadcast), the
// elements of block bx of nb.  kind 0: out = a (op) b; 1: out = op(a); 2: out = a ? b : c
// (a: the condition).  A null operand is the scalar sa / sb.
template <class C>
__device__ __forceinline__ void small_ew(int kind, int op, char* out, int out_dt,
                                         const char* a, int a_dt, long long a_step,
                                         const char* b, int b_dt, long long b_step,
                                         const char* c, int c_dt, long long c_step, C sa, C sb,
                                         long long n, unsigned bx, unsigned nb) {
  const long long stride = static_cast<long long>(nb) * kSmallBlock;
  const long long i0 = static_cast<long long>(bx) * kSmallBlock + threadIdx.x;
  constexpr int kNative = ComputeTag<C>::code;
  if (kind == 2 && out_dt == kNative && a_dt == PGK_BOOL && (!b || b_dt == kNative) &&
      (!c || c_dt == kNative)) {
    const auto* pm = reinterpret_cast<const uint8_t*>(a);
    const C* pb = reinterpret_cast<const C*>(b);
    const C* pc = reinterpret_cast<const C*>(c);
    C* po = reinterpret_cast<C*>(out);
    for (long long i = i0; i < n; i += stride) {
      po[i] = pm[i * a_step] != 0 ? (pb ? pb[i * b_step] : sa) : (pc ? pc[i * c_step] : sb);
    }
    return;
  }
  if (kind != 2 && out_dt == kNative && (!a || a_dt == kNative) && (!b || b_dt == kNative)) {
    const C* pa = reinterpret_cast<const C*>(a);
    const C* pb = reinterpret_cast<const C*>(b);
    C* po = reinterpret_cast<C*>(out);
    for (long long i = i0; i < n; i += stride) {
      const C x = pa ? pa[i * a_step] : sa;
      po[i] = kind == 0 ? small_binary<C>(op, x, pb ? pb[i * b_step] : sb)
                        : small_unary<C>(op, x);
    }
    return;
  }
  small_ew_generic<C>(kind, op, out, out_dt, a, a_dt, a_step, b, b_dt, b_step, c, c_dt, c_step,
                      sa, sb, n, bx, nb);
}

template <class C>
__device__ __forceinline__ void small_ew_generic(int kind, int op, char* out, int out_dt,
                                                 const char* a, int a_dt, long long a_step,
                                                 const char* b, int b_dt, long long b_step,
                                                 const char* c, int c_dt, long long c_step,
                                                 C sa, C sb, long long n, unsigned bx,
                                                 unsigned nb) {
  const long long stride = static_cast<long long>(nb) * kSmallBlock;
  const int out_size = elem_size(out_dt);
  const int a_size = a ? elem_size(a_dt) * static_cast<int>(a_step) : 0;
  const int b_size = b ? elem_size(b_dt) * static_cast<int>(b_step) : 0;
  const int c_size = c ? elem_size(c_dt) * static_cast<int>(c_step) : 0;
  for (long long i = static_cast<long long>(bx) * kSmallBlock + threadIdx.x; i < n;
       i += stride) {
    char* o = out + i * out_size;
    if (kind == 0) {
      const C x = a ? load_as<C>(a + i * a_size, a_dt) : sa;
      const C y = b ? load_as<C>(b + i * b_size, b_dt) : sb;
      store_from<C>(o, out_dt, small_binary<C>(op, x, y));
    } else if (kind == 1) {
      store_from<C>(o, out_dt, small_unary<C>(op, load_as<C>(a + i * a_size, a_dt)));
    } else {
      const C v = load_nonzero(a + i * a_size, a_dt)
                      ? (b ? load_as<C>(b + i * b_size, b_dt) : sa)
                      : (c ? load_as<C>(c + i * c_size, c_dt) : sb);
      store_from<C>(o, out_dt, v);
    }
  }
}

// dst = (D) src for one element of dtype code `src_dt`, as pgk_copy converts.
template <class D>
__device__ __forceinline__ typename D::T convert_from(const char* p, int src_dt) {
  switch (src_dt) {
    case PGK_BOOL: return convert<TBool, D>(*reinterpret_cast<const uint8_t*>(p));
    case PGK_INT8: return convert<TI8, D>(*reinterpret_cast<const int8_t*>(p));
    case PGK_UINT8: return convert<TU8, D>(*reinterpret_cast<const uint8_t*>(p));
    case PGK_INT16: return convert<TI16, D>(*reinterpret_cast<const int16_t*>(p));
    case PGK_INT32: return convert<TI32, D>(*reinterpret_cast<const int32_t*>(p));
    case PGK_INT64: return convert<TI64, D>(*reinterpret_cast<const long long*>(p));
    case PGK_FLOAT16: return convert<TF16, D>(*reinterpret_cast<const uint16_t*>(p));
    case PGK_BFLOAT16: return convert<TBF16, D>(*reinterpret_cast<const uint16_t*>(p));
    case PGK_FLOAT32: return convert<TF32, D>(*reinterpret_cast<const float*>(p));
    default: return convert<TF64, D>(*reinterpret_cast<const double*>(p));
  }
}

template <class D>
__device__ __forceinline__ void cast_one(char* dst, const char* src, int src_dt) {
  *reinterpret_cast<typename D::T*>(dst) = convert_from<D>(src, src_dt);
}

template <class C>
__device__ __forceinline__ Acc<C> shfl_down(const Acc<C>& a, unsigned s) {
  Acc<C> b;
  b.v = __shfl_down_sync(0xffffffffu, a.v, s);
  b.m2 = __shfl_down_sync(0xffffffffu, a.m2, s);
  b.n = __shfl_down_sync(0xffffffffu, a.n, s);
  return b;
}

// reduce_kernels.cuh's block_tree, pair for pair (t with t + s, s = 128 .. 1) and so bit for
// bit, with its last five levels inside warp 0 by shuffles instead of block barriers.  The
// result is thread 0's.
template <class C>
__device__ __forceinline__ void small_tree(int op, Acc<C>& a, Acc<C>* sh) {
  static_assert(kReduceBlock >= 64, "the shared levels end at s = 32");
  sh[threadIdx.x] = a;
  __syncthreads();
  for (unsigned s = kReduceBlock / 2; s >= 32; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] = combine(op, sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x < 32) {
    Acc<C> v = sh[threadIdx.x];
    // Sums, products, any / all combine v alone: one shuffle a level instead of four (each
    // level waits on the one before; m2 and n are not read by these ops).
    const bool v_only = op == PGK_RED_SUM || op == PGK_RED_MEAN || op == PGK_RED_PROD ||
                        op == PGK_RED_ANY || op == PGK_RED_ALL;
    for (unsigned s = 16; s > 0; s >>= 1) {
      Acc<C> o;
      if (v_only) {
        o = v;
        o.v = __shfl_down_sync(0xffffffffu, v.v, s);
      } else {
        o = shfl_down(v, s);
      }
      if (threadIdx.x < s) v = combine(op, v, o);
    }
    a = v;
  }
}

// One block reduces all n elements: thread t takes t, t + 256, ... in order, then the
// shared-memory tree of reduce_kernels.cuh (small_tree: the same pairs).  The result is
// thread 0's.
template <class C>
__device__ __forceinline__ void small_reduce(int op, const char* x, int x_dt, long long n,
                                             char* out, int out_dt, double ddof) {
  __shared__ Acc<C> sh[kReduceBlock];
  const int acc_op = op == PGK_RED_STD ? PGK_RED_VAR : op;
  constexpr int kNative = ComputeTag<C>::code;
  Acc<C> a = acc_identity<C>(acc_op);
  if (x_dt == kNative) {  // no dtype dispatch per load (load_as of the compute type: identity)
    const C* px = reinterpret_cast<const C*>(x);
    for (long long i = threadIdx.x; i < n; i += kReduceBlock) {
      a = combine(acc_op, a, acc_element<C>(acc_op, px[i], i));
    }
  } else {
    const int size = elem_size(x_dt);
    for (long long i = threadIdx.x; i < n; i += kReduceBlock) {
      a = combine(acc_op, a, acc_element<C>(acc_op, load_as<C>(x + i * size, x_dt), i));
    }
  }
  small_tree(acc_op, a, sh);
  if (threadIdx.x != 0) return;
  if (op == PGK_RED_ARGMAX || op == PGK_RED_ARGMIN) {
    store_from<long long>(out, out_dt, a.n < 0 ? 0 : a.n);
    return;
  }
  C r = a.v;
  if constexpr (!std::is_integral_v<C>) {
    if (op == PGK_RED_MEAN) {
      r = a.v / static_cast<C>(n);
    } else if (op == PGK_RED_VAR || op == PGK_RED_STD) {
      const double dof = static_cast<double>(a.n) - ddof;
      const C var = dof <= 0 ? C(NAN) : a.m2 / static_cast<C>(dof);
      r = op == PGK_RED_STD ? sqrt(var) : var;
    }
  }
  store_from<C>(out, out_dt, r);
}

// Block-wide sum or max of one value per thread, in a fixed order (deterministic).
template <class C, bool kMax>
__device__ __forceinline__ C block_all(C v, C* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = kSmallBlock / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      const C o = sh[threadIdx.x + s];
      C& m = sh[threadIdx.x];
      if constexpr (kMax) m = (m >= o || m != m) ? m : o;  // NaN propagates
      else m = m + o;
    }
    __syncthreads();
  }
  const C r = sh[0];
  __syncthreads();
  return r;
}

// Row r of a C-contiguous (rows, cols) x into out (same layout), one block per row.  weight /
// bias: null or cols contiguous elements of the compute type C (layer_norm, rms_norm).
template <class C>
__device__ __forceinline__ void small_row_norm(int op, const char* x, int dt, long long cols,
                                               char* out, const C* w, const C* b, double eps,
                                               unsigned row) {
  __shared__ C sh[kSmallBlock];
  const int size = elem_size(dt);
  const char* xr = x + static_cast<long long>(row) * cols * size;
  char* orow = out + static_cast<long long>(row) * cols * size;
  if (op == PGK_NORM_SOFTMAX || op == PGK_NORM_LOG_SOFTMAX) {
    C m = C(-INFINITY);
    for (long long j = threadIdx.x; j < cols; j += kSmallBlock) {
      const C v = load_as<C>(xr + j * size, dt);
      m = (m >= v || m != m) ? m : v;
    }
    m = block_all<C, true>(m, sh);
    C s = C(0);
    for (long long j = threadIdx.x; j < cols; j += kSmallBlock) {
      s += exp(load_as<C>(xr + j * size, dt) - m);
    }
    s = block_all<C, false>(s, sh);
    if (op == PGK_NORM_SOFTMAX) {
      const C inv = C(1) / s;
      for (long long j = threadIdx.x; j < cols; j += kSmallBlock) {
        store_from<C>(orow + j * size, dt, exp(load_as<C>(xr + j * size, dt) - m) * inv);
      }
    } else {
      const C ls = log(s);
      for (long long j = threadIdx.x; j < cols; j += kSmallBlock) {
        store_from<C>(orow + j * size, dt, (load_as<C>(xr + j * size, dt) - m) - ls);
      }
    }
    return;
  }
  C mean = C(0);
  if (op == PGK_NORM_LAYER) {
    C s = C(0);
    for (long long j = threadIdx.x; j < cols; j += kSmallBlock) s += load_as<C>(xr + j * size, dt);
    mean = block_all<C, false>(s, sh) / static_cast<C>(cols);
  }
  C q = C(0);
  for (long long j = threadIdx.x; j < cols; j += kSmallBlock) {
    const C d = load_as<C>(xr + j * size, dt) - mean;
    q += d * d;
  }
  const C inv = C(1) / sqrt(block_all<C, false>(q, sh) / static_cast<C>(cols) + static_cast<C>(eps));
  for (long long j = threadIdx.x; j < cols; j += kSmallBlock) {
    C v = (load_as<C>(xr + j * size, dt) - mean) * inv;
    if (w) v *= w[j];
    if (b) v += b[j];
    store_from<C>(orow + j * size, dt, v);
  }
}

// dst[i] = (dst_dt) src[i * step] (step 0 or 1) for the elements of block `bx` of `nb`: any
// dtype pair.
__device__ __forceinline__ void cast_generic(char* dst, int dst_dt, const char* src, int src_dt,
                                           long long step, long long n, unsigned bx,
                                           unsigned nb) {
  const long long stride = static_cast<long long>(nb) * kSmallBlock;
  const int ds = elem_size(dst_dt);
  const long long ss = elem_size(src_dt) * step;
  for (long long i = static_cast<long long>(bx) * kSmallBlock + threadIdx.x; i < n;
       i += stride) {
    char* d = dst + i * ds;
    const char* s = src + i * ss;
    switch (dst_dt) {
      case PGK_BOOL: cast_one<TBool>(d, s, src_dt); break;
      case PGK_INT8: cast_one<TI8>(d, s, src_dt); break;
      case PGK_UINT8: cast_one<TU8>(d, s, src_dt); break;
      case PGK_INT16: cast_one<TI16>(d, s, src_dt); break;
      case PGK_INT32: cast_one<TI32>(d, s, src_dt); break;
      case PGK_INT64: cast_one<TI64>(d, s, src_dt); break;
      case PGK_FLOAT16: cast_one<TF16>(d, s, src_dt); break;
      case PGK_BFLOAT16: cast_one<TBF16>(d, s, src_dt); break;
      case PGK_FLOAT32: cast_one<TF32>(d, s, src_dt); break;
      default: cast_one<TF64>(d, s, src_dt); break;
    }
  }
}

// The same for one pair of dtypes, with no dispatch per element.
template <class S, class D>
__device__ __forceinline__ void cast_pair(char* dst, const char* src, long long step,
                                          long long n, long long i0, long long stride) {
  const auto* ps = reinterpret_cast<const typename S::T*>(src);
  auto* pd = reinterpret_cast<typename D::T*>(dst);
  for (long long i = i0; i < n; i += stride) pd[i] = convert<S, D>(ps[i * step]);
}

// dst[i] = (dst_dt) src[i * step], as pgk_copy converts: the f32 <-> 16-bit pairs (mixed
// precision's casts) on their own loops, others through cast_generic.
__device__ __forceinline__ void small_cast(char* dst, int dst_dt, const char* src, int src_dt,
                                           long long step, long long n, unsigned bx,
                                           unsigned nb) {
  const long long stride = static_cast<long long>(nb) * kSmallBlock;
  const long long i0 = static_cast<long long>(bx) * kSmallBlock + threadIdx.x;
  if (src_dt == PGK_FLOAT32 && dst_dt == PGK_FLOAT16) {
    cast_pair<TF32, TF16>(dst, src, step, n, i0, stride);
  } else if (src_dt == PGK_FLOAT16 && dst_dt == PGK_FLOAT32) {
    cast_pair<TF16, TF32>(dst, src, step, n, i0, stride);
  } else if (src_dt == PGK_FLOAT32 && dst_dt == PGK_BFLOAT16) {
    cast_pair<TF32, TBF16>(dst, src, step, n, i0, stride);
  } else if (src_dt == PGK_BFLOAT16 && dst_dt == PGK_FLOAT32) {
    cast_pair<TBF16, TF32>(dst, src, step, n, i0, stride);
  } else {
    cast_generic(dst, dst_dt, src, src_dt, step, n, bx, nb);
  }
}

// The entry points' parameter lists as structs: a step's parameter buffer (laid out by the
// driver as the kernel takes it, which is these structs' natural layout) read back.
template <class C>
struct EwParams {
  int kind, op;
  char* out;
  int out_dt;
  const char* a;
  int a_dt;
  long long a_step;
  const char* b;
  int b_dt;
  long long b_step;
  const char* c;
  int c_dt;
  long long c_step;
  C sa, sb;
  long long n;
};
struct CastParams {
  char* dst;
  int dst_dt;
  const char* src;
  int src_dt;
  long long step, n;
};
struct ReduceParams {
  int op;
  const char* x;
  int x_dt;
  long long n;
  char* out;
  int out_dt;
  double ddof;
};
template <class C>
struct NormParams {
  int op;
  const char* x;
  int dt;
  long long cols;
  char* out;
  const C* w;
  const C* b;
  double eps;
};
static_assert(sizeof(EwParams<double>) <= PGK_STEP_PARAM_BYTES, "step parameter buffer");
static_assert(sizeof(NormParams<double>) <= PGK_STEP_PARAM_BYTES, "step parameter buffer");

// A fused elementwise step runs its kernel's blocks as one block: each element is computed as
// the kernel computes it, so which block takes it does not change the result.
template <class C>
__device__ __forceinline__ void ew_step(const void* p) {
  const auto& q = *static_cast<const EwParams<C>*>(p);
  small_ew<C>(q.kind, q.op, q.out, q.out_dt, q.a, q.a_dt, q.a_step, q.b, q.b_dt, q.b_step, q.c,
              q.c_dt, q.c_step, q.sa, q.sb, q.n, 0, 1);
}
template <class C>
__device__ __forceinline__ void reduce_step(const void* p) {
  const auto& q = *static_cast<const ReduceParams*>(p);
  small_reduce<C>(q.op, q.x, q.x_dt, q.n, q.out, q.out_dt, q.ddof);
}
// Rows one after another, each as its block of the kernel computes it (same tree).
template <class C>
__device__ __forceinline__ void norm_step(const void* p, unsigned rows) {
  const auto& q = *static_cast<const NormParams<C>*>(p);
  for (unsigned r = 0; r < rows; ++r) {
    small_row_norm<C>(q.op, q.x, q.dt, q.cols, q.out, q.w, q.b, q.eps, r);
  }
}

}  // namespace
}  // namespace pgk

// ---- the entry points (names and parameter lists are the launch table's) ----
// Each waits in pdl_enter() first: on sm_90+ they are launched as programmatic dependents.
// Elementwise: kind 0 binary, 1 unary, 2 where; computing in float, double or int64.
#define PGK_SMALL_EW(NAME, C)                                                                  \
  extern "C" __global__ void __launch_bounds__(pgk::kSmallBlock) NAME(                         \
      int kind, int op, char* out, int out_dt, const char* a, int a_dt, long long a_step,       \
      const char* b, int b_dt, long long b_step, const char* c, int c_dt, long long c_step,     \
      C sa, C sb, long long n) {                                                                \
    pgk::pdl_enter();                                                                           \
    pgk::small_ew<C>(kind, op, out, out_dt, a, a_dt, a_step, b, b_dt, b_step, c, c_dt, c_step,  \
                     sa, sb, n, blockIdx.x, gridDim.x);                                         \
  }
PGK_SMALL_EW(pgk_small_ew_f32, float)
PGK_SMALL_EW(pgk_small_ew_f64, double)
PGK_SMALL_EW(pgk_small_ew_i64, long long)
#undef PGK_SMALL_EW

// dst[i] = (dst_dt) src[i * step] (step 0 or 1), any dtype pair, as pgk_copy converts.
extern "C" __global__ void __launch_bounds__(pgk::kSmallBlock)
pgk_small_cast(char* dst, int dst_dt, const char* src, int src_dt, long long step, long long n) {
  pgk::pdl_enter();
  pgk::small_cast(dst, dst_dt, src, src_dt, step, n, blockIdx.x, gridDim.x);
}

// out[0] = reduce(op, x[0..n)), n >= 1; launched with one block of 256 threads.
#define PGK_SMALL_REDUCE(NAME, C)                                                              \
  extern "C" __global__ void __launch_bounds__(pgk::kReduceBlock) NAME(                        \
      int op, const char* x, int x_dt, long long n, char* out, int out_dt, double ddof) {       \
    pgk::pdl_enter();                                                                           \
    pgk::small_reduce<C>(op, x, x_dt, n, out, out_dt, ddof);                                    \
  }
PGK_SMALL_REDUCE(pgk_small_reduce_f32, float)
PGK_SMALL_REDUCE(pgk_small_reduce_f64, double)
PGK_SMALL_REDUCE(pgk_small_reduce_i64, long long)
#undef PGK_SMALL_REDUCE

// Row-wise softmax / log_softmax / layer_norm / rms_norm of a C-contiguous (rows, cols) x;
// one 256-thread block per row (grid = rows).
#define PGK_SMALL_NORM(NAME, C)                                                                \
  extern "C" __global__ void __launch_bounds__(pgk::kSmallBlock) NAME(                         \
      int op, const char* x, int dt, long long cols, char* out, const C* w, const C* b,         \
      double eps) {                                                                             \
    pgk::pdl_enter();                                                                           \
    pgk::small_row_norm<C>(op, x, dt, cols, out, w, b, eps, blockIdx.x);                        \
  }
PGK_SMALL_NORM(pgk_small_row_norm_f32, float)
PGK_SMALL_NORM(pgk_small_row_norm_f64, double)
#undef PGK_SMALL_NORM

// A captured graph's line of small kernels as one launch of one block (pgk_small_step, at
// the top of this file): the steps in order, a barrier after each (their global writes are then
// visible to the whole block, the only reader of what they wrote).
// The steps are copied to shared memory a batch at a time, by the whole block at once: read
// from global memory one by one, each step's parameters would cost a dependent round trip
// before its own loads could start.
constexpr int kStepBatch = 64;
extern "C" __global__ void __launch_bounds__(pgk::kSmallBlock)
pgk_small_program(const pgk_small_step* steps, int count) {
  using namespace pgk;
  __shared__ pgk_small_step batch[kStepBatch];
  pdl_enter();
  for (int s = 0; s < count; ++s) {
    if (s % kStepBatch == 0) {
      const int n = min(kStepBatch, count - s) * static_cast<int>(sizeof(pgk_small_step) / 8);
      const auto* src = reinterpret_cast<const int64_t*>(steps + s);
      auto* dst = reinterpret_cast<int64_t*>(batch);
      for (int i = threadIdx.x; i < n; i += kSmallBlock) dst[i] = src[i];
      __syncthreads();
    }
    const pgk_small_step& step = batch[s % kStepBatch];
    const void* p = step.params;
    switch (step.kernel) {
      case PGK_STEP_EW_F32: ew_step<float>(p); break;
      case PGK_STEP_EW_F64: ew_step<double>(p); break;
      case PGK_STEP_EW_I64: ew_step<long long>(p); break;
      case PGK_STEP_CAST: {
        const auto& q = *static_cast<const CastParams*>(p);
        small_cast(q.dst, q.dst_dt, q.src, q.src_dt, q.step, q.n, 0, 1);
        break;
      }
      case PGK_STEP_REDUCE_F32: reduce_step<float>(p); break;
      case PGK_STEP_REDUCE_F64: reduce_step<double>(p); break;
      case PGK_STEP_REDUCE_I64: reduce_step<long long>(p); break;
      case PGK_STEP_ROW_NORM_F32: norm_step<float>(p, step.grid); break;
      case PGK_STEP_ROW_NORM_F64: norm_step<double>(p, step.grid); break;
      default: break;  // the driver binding writes only the kinds above
    }
    __syncthreads();
  }
}
