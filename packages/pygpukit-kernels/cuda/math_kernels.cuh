// Elementwise math behind pgk_binary / pgk_unary / pgk_where: one generic N-d kernel per compute
// type (float, double, int64) that reads and writes any dtype (a uniform switch on the dtype code
// per access) and applies any op (a uniform switch on the op code), plus vectorized fast paths
// for contiguous operands of one floating dtype.  Operands are coalesced together first (size-1
// dims dropped, dims ordered by the output's strides, neighbours contiguous in every operand
// merged), as pgk_copy does.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "dtypes.cuh"
#include "launch_utils.cuh"

namespace pgk {

constexpr int kMathMaxOperands = 4;  // output + up to three inputs
constexpr unsigned kMathBlock = 256;

// A coalesced index space over several operands; dim 0 is the innermost.  Operand 0 is the
// output.  Strides are in bytes.
struct MathPlan {
  int ndim = 0;
  int nops = 0;
  int64_t n = 1;
  int64_t shape[PGK_MAX_DIMS];
  int64_t st[kMathMaxOperands][PGK_MAX_DIMS];
  char* ptr[kMathMaxOperands];
};

// Validates and coalesces.  sizes[k] is the element size of operand k; ptr[k] may be null for a
// scalar operand (then its strides must be null too and it is read from the scalar argument).
// Returns cudaErrorInvalidValue on bad arguments, 0 (with n == 0 for an empty space) otherwise.
int make_math_plan(int nops, void* const* ptrs, const int* sizes, const int64_t* const* strides,
                   int ndim, const int64_t* shape, MathPlan& plan);

bool math_fits_32bit(const MathPlan& p);

// Kernel parameters (by value).
template <typename Idx, typename Off>
struct MathParams {
  Idx shape[PGK_MAX_DIMS];
  Off st[kMathMaxOperands][PGK_MAX_DIMS];
  char* ptr[kMathMaxOperands];
  int dtype[kMathMaxOperands];
  Idx n;
  int ndim;
  int nops;
  int op;
};

template <typename Idx, typename Off>
inline MathParams<Idx, Off> math_params(const MathPlan& p, const int* dtypes, int op) {
  MathParams<Idx, Off> k{};
  for (int d = 0; d < p.ndim; ++d) {
    k.shape[d] = static_cast<Idx>(p.shape[d]);
    for (int o = 0; o < p.nops; ++o) k.st[o][d] = static_cast<Off>(p.st[o][d]);
  }
  for (int o = 0; o < p.nops; ++o) {
    k.ptr[o] = p.ptr[o];
    k.dtype[o] = dtypes[o];
  }
  k.n = static_cast<Idx>(p.n);
  k.ndim = p.ndim;
  k.nops = p.nops;
  k.op = op;
  return k;
}

// ---- loads and stores through a runtime dtype code ----
template <class C>
__device__ __forceinline__ C load_as(const char* p, int dtype) {
  using CT = std::conditional_t<std::is_same_v<C, float>, TF32,
                                std::conditional_t<std::is_same_v<C, double>, TF64, TI64>>;
  switch (dtype) {
    case PGK_BOOL: return convert<TBool, CT>(*reinterpret_cast<const uint8_t*>(p));
    case PGK_INT8: return convert<TI8, CT>(*reinterpret_cast<const int8_t*>(p));
    case PGK_UINT8: return convert<TU8, CT>(*reinterpret_cast<const uint8_t*>(p));
    case PGK_INT16: return convert<TI16, CT>(*reinterpret_cast<const int16_t*>(p));
    case PGK_INT32: return convert<TI32, CT>(*reinterpret_cast<const int32_t*>(p));
    case PGK_INT64: return convert<TI64, CT>(*reinterpret_cast<const long long*>(p));
    case PGK_FLOAT16: return convert<TF16, CT>(*reinterpret_cast<const uint16_t*>(p));
    case PGK_BFLOAT16: return convert<TBF16, CT>(*reinterpret_cast<const uint16_t*>(p));
    case PGK_FLOAT32: return convert<TF32, CT>(*reinterpret_cast<const float*>(p));
    default: return convert<TF64, CT>(*reinterpret_cast<const double*>(p));
  }
}

template <class C>
__device__ __forceinline__ void store_from(char* p, int dtype, C v) {
  using CT = std::conditional_t<std::is_same_v<C, float>, TF32,
                                std::conditional_t<std::is_same_v<C, double>, TF64, TI64>>;
  switch (dtype) {
    case PGK_BOOL: *reinterpret_cast<uint8_t*>(p) = convert<CT, TBool>(v); break;
    case PGK_INT8: *reinterpret_cast<int8_t*>(p) = convert<CT, TI8>(v); break;
    case PGK_UINT8: *reinterpret_cast<uint8_t*>(p) = convert<CT, TU8>(v); break;
    case PGK_INT16: *reinterpret_cast<int16_t*>(p) = convert<CT, TI16>(v); break;
    case PGK_INT32: *reinterpret_cast<int32_t*>(p) = convert<CT, TI32>(v); break;
    case PGK_INT64: *reinterpret_cast<long long*>(p) = convert<CT, TI64>(v); break;
    case PGK_FLOAT16: *reinterpret_cast<uint16_t*>(p) = convert<CT, TF16>(v); break;
    case PGK_BFLOAT16: *reinterpret_cast<uint16_t*>(p) = convert<CT, TBF16>(v); break;
    case PGK_FLOAT32: *reinterpret_cast<float*>(p) = convert<CT, TF32>(v); break;
    default: *reinterpret_cast<double*>(p) = convert<CT, TF64>(v); break;
  }
}

// Truthiness of an element of any dtype (NaN is true, -0.0 false).
__device__ __forceinline__ bool load_nonzero(const char* p, int dtype) {
  switch (dtype) {
    case PGK_BOOL:
    case PGK_INT8:
    case PGK_UINT8: return *reinterpret_cast<const uint8_t*>(p) != 0;
    case PGK_INT16: return *reinterpret_cast<const int16_t*>(p) != 0;
    case PGK_FLOAT16:
    case PGK_BFLOAT16: return (*reinterpret_cast<const uint16_t*>(p) & 0x7fffu) != 0;
    case PGK_INT32: return *reinterpret_cast<const int32_t*>(p) != 0;
    case PGK_FLOAT32: return *reinterpret_cast<const float*>(p) != 0.0f;
    case PGK_INT64: return *reinterpret_cast<const long long*>(p) != 0;
    default: return *reinterpret_cast<const double*>(p) != 0.0;
  }
}

// ---- the ops (NumPy's definitions) ----
template <class C>
__device__ __forceinline__ C floor_div(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    if (b == 0) return 0;
    if (b == -1) return static_cast<C>(0ull - static_cast<unsigned long long>(a));
    C q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  } else {
    if (b == 0) return a / b;
    const C mod = fmod(a, b);
    C div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
    if (div == 0) return copysign(C(0), a / b);
    C fl = floor(div);
    if (div - fl > C(0.5)) fl += 1;
    return fl;
  }
}

template <class C>
__device__ __forceinline__ C py_mod(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    if (b == 0 || b == -1) return 0;
    C r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  } else {
    if (b == 0) return fmod(a, b);
    C mod = fmod(a, b);
    if (mod != 0) {
      if ((b < 0) != (mod < 0)) mod += b;
    } else {
      mod = copysign(C(0), b);
    }
    return mod;
  }
}

template <class C>
__device__ __forceinline__ C int_pow(C a, C b) {
  if (b < 0) {  // NumPy raises; the kernel cannot: 1 and -1 have exact answers, others give 0
    if (a == 1) return 1;
    if (a == -1) return (b & 1) ? -1 : 1;
    return 0;
  }
  unsigned long long r = 1, base = static_cast<unsigned long long>(a);
  unsigned long long e = static_cast<unsigned long long>(b);
  while (e) {
    if (e & 1) r *= base;
    base *= base;
    e >>= 1;
  }
  return static_cast<C>(r);
}

template <class C>
__device__ __forceinline__ C apply_binary(int op, C a, C b) {
  switch (op) {
    case PGK_OP_ADD: return a + b;
    case PGK_OP_SUBTRACT: return a - b;
    case PGK_OP_MULTIPLY: return a * b;
    case PGK_OP_DIVIDE: return a / b;
    case PGK_OP_MAXIMUM:
      if constexpr (std::is_integral_v<C>) return a >= b ? a : b;
      else return (a >= b || a != a) ? a : b;
    case PGK_OP_MINIMUM:
      if constexpr (std::is_integral_v<C>) return a <= b ? a : b;
      else return (a <= b || a != a) ? a : b;
    case PGK_OP_POWER:
      if constexpr (std::is_integral_v<C>) return int_pow(a, b);
      else return pow(a, b);
    case PGK_OP_FLOOR_DIVIDE: return floor_div(a, b);
    case PGK_OP_REMAINDER: return py_mod(a, b);
    case PGK_OP_EQUAL: return a == b;
    case PGK_OP_NOT_EQUAL: return a != b;
    case PGK_OP_LESS: return a < b;
    case PGK_OP_LESS_EQUAL: return a <= b;
    case PGK_OP_GREATER: return a > b;
    case PGK_OP_GREATER_EQUAL: return a >= b;
    case PGK_OP_LOGICAL_AND: return (a != 0) && (b != 0);
    case PGK_OP_LOGICAL_OR: return (a != 0) || (b != 0);
    case PGK_OP_LOGICAL_XOR: return (a != 0) != (b != 0);
    default:
      if constexpr (std::is_integral_v<C>) {
        if (op == PGK_OP_BITWISE_AND) return a & b;
        if (op == PGK_OP_BITWISE_OR) return a | b;
        return a ^ b;
      } else {
        return C(0);  // rejected by the launcher
      }
  }
}

template <class C>
__device__ __forceinline__ C rint_even(C x) {
  if constexpr (std::is_same_v<C, float>) return rintf(x);
  else return rint(x);
}

template <class C>
__device__ __forceinline__ C apply_unary(int op, C x) {
  if constexpr (std::is_integral_v<C>) {
    switch (op) {
      case PGK_UOP_NEGATIVE: return static_cast<C>(0ull - static_cast<unsigned long long>(x));
      case PGK_UOP_ABSOLUTE:
        return x < 0 ? static_cast<C>(0ull - static_cast<unsigned long long>(x)) : x;
      case PGK_UOP_RELU: return x > 0 ? x : 0;
      case PGK_UOP_SIGN: return (x > 0) - (x < 0);
      case PGK_UOP_ISNAN:
      case PGK_UOP_ISINF: return 0;
      case PGK_UOP_LOGICAL_NOT: return x == 0;
      case PGK_UOP_INVERT: return ~x;
      case PGK_UOP_SQUARE:  // wraps like NumPy's integer multiply
        return static_cast<C>(static_cast<unsigned long long>(x) *
                              static_cast<unsigned long long>(x));
      case PGK_UOP_RECIPROCAL:  // C division 1 / x (x == 0 gives 0; NumPy's is undefined)
        return x == 1 ? 1 : (x == -1 ? -1 : 0);
      default: return x;  // floor, ceil, rint of an integer
    }
  } else {
    const C one = C(1), half = C(0.5);
    switch (op) {
      case PGK_UOP_NEGATIVE: return -x;
      case PGK_UOP_ABSOLUTE: return fabs(x);
      case PGK_UOP_EXP: return exp(x);
      case PGK_UOP_LOG: return log(x);
      case PGK_UOP_LOG1P: return log1p(x);
      case PGK_UOP_EXPM1: return expm1(x);
      case PGK_UOP_SQRT: return sqrt(x);
      case PGK_UOP_RSQRT: return one / sqrt(x);
      case PGK_UOP_SIN: return sin(x);
      case PGK_UOP_COS: return cos(x);
      case PGK_UOP_TANH: return tanh(x);
      case PGK_UOP_SIGMOID: return one / (one + exp(-x));
      case PGK_UOP_RELU: return x > 0 ? x : (x != x ? x : C(0));
      case PGK_UOP_GELU_TANH: {
        const C k0 = C(0.7978845608028654), k1 = C(0.044715);
        return half * x * (one + tanh(k0 * (x + k1 * x * x * x)));
      }
      case PGK_UOP_GELU_ERF: return half * x * (one + erf(x * C(0.7071067811865476)));
      case PGK_UOP_SILU: return x / (one + exp(-x));
      case PGK_UOP_FLOOR: return floor(x);
      case PGK_UOP_CEIL: return ceil(x);
      case PGK_UOP_RINT: return rint_even(x);
      case PGK_UOP_SIGN: return x > 0 ? one : (x < 0 ? -one : (x == 0 ? C(0) : x));
      case PGK_UOP_ISNAN: return x != x;
      case PGK_UOP_ISINF: return isinf(x) ? one : C(0);
      case PGK_UOP_LOGICAL_NOT: return x == 0;
      case PGK_UOP_SQUARE: return x * x;
      case PGK_UOP_RECIPROCAL: return one / x;
      default: return x;
    }
  }
}

// ---- the generic N-d kernel ----
// kind 0: binary (out, a, b); kind 1: unary (out, a); kind 2: where (out, cond, a, b).
// A scalar operand has a null pointer and is read from `sa` / `sb`.
template <class C, typename Idx, typename Off>
__global__ void __launch_bounds__(kMathBlock)
math_nd_kernel(MathParams<Idx, Off> p, int kind, C sa, C sb) {
  const Idx stride = static_cast<Idx>(gridDim.x) * blockDim.x;
  for (Idx i = static_cast<Idx>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n; i += stride) {
    Idx rem = i;
    Off off[kMathMaxOperands] = {0, 0, 0, 0};
#pragma unroll
    for (int d = 0; d < PGK_MAX_DIMS; ++d) {
      if (d >= p.ndim) break;
      Off c;
      if (d == p.ndim - 1) {
        c = static_cast<Off>(rem);
      } else {
        const Idx q = rem / p.shape[d];
        c = static_cast<Off>(rem - q * p.shape[d]);
        rem = q;
      }
#pragma unroll
      for (int o = 0; o < kMathMaxOperands; ++o) off[o] += c * p.st[o][d];
    }
    if (kind == 0) {
      const C a = p.ptr[1] ? load_as<C>(p.ptr[1] + off[1], p.dtype[1]) : sa;
      const C b = p.ptr[2] ? load_as<C>(p.ptr[2] + off[2], p.dtype[2]) : sb;
      store_from<C>(p.ptr[0] + off[0], p.dtype[0], apply_binary<C>(p.op, a, b));
    } else if (kind == 1) {
      store_from<C>(p.ptr[0] + off[0], p.dtype[0],
                    apply_unary<C>(p.op, load_as<C>(p.ptr[1] + off[1], p.dtype[1])));
    } else {
      const bool cond = load_nonzero(p.ptr[1] + off[1], p.dtype[1]);
      const C v = cond ? (p.ptr[2] ? load_as<C>(p.ptr[2] + off[2], p.dtype[2]) : sa)
                       : (p.ptr[3] ? load_as<C>(p.ptr[3] + off[3], p.dtype[3]) : sb);
      store_from<C>(p.ptr[0] + off[0], p.dtype[0], v);
    }
  }
}

template <class C>
int launch_math_nd(const MathPlan& plan, const int* dtypes, int op, int kind, C sa, C sb,
                   cudaStream_t stream) {
  const unsigned grid = grid_for(plan.n, kMathBlock);
  if (math_fits_32bit(plan)) {
    math_nd_kernel<C, uint32_t, int32_t><<<grid, kMathBlock, 0, stream>>>(
        math_params<uint32_t, int32_t>(plan, dtypes, op), kind, sa, sb);
  } else {
    math_nd_kernel<C, uint64_t, int64_t><<<grid, kMathBlock, 0, stream>>>(
        math_params<uint64_t, int64_t>(plan, dtypes, op), kind, sa, sb);
  }
  return launch_status();
}

// ---- vectorized fast path: contiguous operands of one floating dtype, arithmetic ops ----
template <class S>
using ComputeOf = std::conditional_t<S::kind == Kind::F64, double, float>;

template <class S>
__device__ __forceinline__ ComputeOf<S> to_compute(typename S::T x) {
  if constexpr (S::kind == Kind::F64) return x;
  else return float_value<S>(x);
}

// U 16-byte packs per thread per step (a template parameter: 1, 2 or 4), all loads of a step
// issued before the first use.
constexpr int kMaxUnroll = 4;

// Packs per thread per step: 1 for every dtype (measured on an H200 at 256 MiB: float32 scalar
// multiply 100.6% of the copy bandwidth with 1, 97.8% with 2, 97.4% with 4; bfloat16 add
// 102.5% / 96.7% / 76.8%).  PGK_TUNE_EW_UNROLL (float32 / float64) and PGK_TUNE_EW_UNROLL16
// (float16 / bfloat16) override with 2 or 4, for benchmarks.
template <typename T>
inline int ew_unroll() {
  if constexpr (sizeof(T) == 2) {
    static const int u = tune_knob("PGK_TUNE_EW_UNROLL16", 1, 1, kMaxUnroll);
    return u == 3 ? 2 : u;
  } else {
    static const int u = tune_knob("PGK_TUNE_EW_UNROLL", 1, 1, kMaxUnroll);
    return u == 3 ? 2 : u;
  }
}

// Streaming stores (st.global.cs) for the outputs: off by default (1-3% slower on an H200 for
// float32 unary ops); PGK_TUNE_EW_CS=1 turns them on, for benchmarks.
inline int ew_cs() {
  static const int c = tune_knob("PGK_TUNE_EW_CS", 0, 0, 1);
  return c;
}

inline unsigned ew_grid(int64_t packs, int unroll) {
  return grid_for((packs + unroll - 1) / unroll, kMathBlock);
}

// Stores a 16-byte pack, streaming (cs) or plain.
template <class Pack>
__device__ __forceinline__ void store16(Pack* dst, const Pack& v, int cs) {
  static_assert(sizeof(Pack) == 16, "16-byte pack");
  if (cs) {
    __stcs(reinterpret_cast<uint4*>(dst), *reinterpret_cast<const uint4*>(&v));
  } else {
    *dst = v;
  }
}

// Results (of the compute type) rounded to dtype S.  bfloat16: pairs through the hardware
// cvt.rn.bf16x2.f32 (round to nearest even, as f32_to_bf16), NaN fixed up to ml_dtypes'
// 0x7fc0 / 0xffc0 (the instruction gives a canonical NaN): the same bits, fewer instructions.
template <class S, int N>
__device__ __forceinline__ void pack_results(typename S::T* dst, const ComputeOf<S>* v) {
  using C = ComputeOf<S>;
  using CT = std::conditional_t<std::is_same_v<C, double>, TF64, TF32>;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (S::kind == Kind::BF16 && N % 2 == 0) {
#pragma unroll
    for (int e = 0; e < N; e += 2) {
      const __nv_bfloat162 h = __floats2bfloat162_rn(v[e], v[e + 1]);
      uint16_t lo = __bfloat16_as_ushort(h.x), hi = __bfloat16_as_ushort(h.y);
      if (v[e] != v[e]) lo = signbit(v[e]) ? 0xffc0u : 0x7fc0u;
      if (v[e + 1] != v[e + 1]) hi = signbit(v[e + 1]) ? 0xffc0u : 0x7fc0u;
      dst[e] = lo;
      dst[e + 1] = hi;
    }
  } else  // the generic rounding
#endif
  {
#pragma unroll
    for (int e = 0; e < N; ++e) dst[e] = convert<CT, S>(v[e]);
  }
}

template <class S, int OP, int U>
__global__ void __launch_bounds__(kMathBlock)
binary_fast_kernel(const typename S::T* __restrict__ a, const typename S::T* __restrict__ b,
                   typename S::T* __restrict__ out, int64_t n, int scalar_side,
                   ComputeOf<S> sv, int cs) {
  using T = typename S::T;
  using C = ComputeOf<S>;
  using CT = std::conditional_t<std::is_same_v<C, double>, TF64, TF32>;
  constexpr int kVec = 16 / sizeof(T);
  struct alignas(16) Pack { T v[kVec]; };
  pdl_enter();
  const int64_t nv = n / kVec;
  constexpr int64_t step = static_cast<int64_t>(kMathBlock) * U;
  const Pack* ap = reinterpret_cast<const Pack*>(a);
  const Pack* bp = reinterpret_cast<const Pack*>(b);
  Pack* op = reinterpret_cast<Pack*>(out);
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * step; base < nv;
       base += static_cast<int64_t>(gridDim.x) * step) {
    Pack x[U], y[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t j = base + u * static_cast<int64_t>(kMathBlock) + threadIdx.x;
      if (j < nv) {
        if (scalar_side != 1) x[u] = ap[j];
        if (scalar_side != 2) y[u] = bp[j];
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t j = base + u * static_cast<int64_t>(kMathBlock) + threadIdx.x;
      if (j < nv) {
        C res[kVec];
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const C p = scalar_side == 1 ? sv : to_compute<S>(x[u].v[e]);
          const C q = scalar_side == 2 ? sv : to_compute<S>(y[u].v[e]);
          res[e] = apply_binary<C>(OP, p, q);
        }
        Pack r;
        pack_results<S, kVec>(r.v, res);
        store16(op + j, r, cs);
      }
    }
  }
  const int64_t tail = nv * kVec + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tail < n) {
    const C p = scalar_side == 1 ? sv : to_compute<S>(a[tail]);
    const C q = scalar_side == 2 ? sv : to_compute<S>(b[tail]);
    out[tail] = convert<CT, S>(apply_binary<C>(OP, p, q));
  }
}

// Launches the fast path for dtype tag S if `op` has one; returns -1 when it has none.
template <class S>
int launch_binary_fast(int op, const void* a, const void* b, void* out, int64_t n,
                       int scalar_side, double sval, cudaStream_t stream) {
  using T = typename S::T;
  using C = ComputeOf<S>;
  const C sv = static_cast<C>(sval);
  const int unroll = ew_unroll<T>();
  const int cs = ew_cs();
  const unsigned grid = ew_grid(n / (16 / sizeof(T)), unroll);
  auto A = static_cast<const T*>(a);
  auto B = static_cast<const T*>(b);
  auto O = static_cast<T*>(out);
#define PGK_FAST_CASE(OPC)                                                                 \
  case OPC:                                                                                \
    if (unroll == 4)                                                                       \
      launch_k(binary_fast_kernel<S, OPC, 4>, grid, kMathBlock, stream, A, B, O, n,        \
               scalar_side, sv, cs);                                                       \
    else if (unroll == 1)                                                                  \
      launch_k(binary_fast_kernel<S, OPC, 1>, grid, kMathBlock, stream, A, B, O, n,        \
               scalar_side, sv, cs);                                                       \
    else                                                                                   \
      launch_k(binary_fast_kernel<S, OPC, 2>, grid, kMathBlock, stream, A, B, O, n,        \
               scalar_side, sv, cs);                                                       \
    return launch_status();
  switch (op) {
    PGK_FAST_CASE(PGK_OP_ADD)
    PGK_FAST_CASE(PGK_OP_SUBTRACT)
    PGK_FAST_CASE(PGK_OP_MULTIPLY)
    PGK_FAST_CASE(PGK_OP_DIVIDE)
    PGK_FAST_CASE(PGK_OP_MAXIMUM)
    PGK_FAST_CASE(PGK_OP_MINIMUM)
    default: return -1;
  }
#undef PGK_FAST_CASE
}

// ---- vectorized unary: contiguous x and out of one floating dtype, every float op ----
template <class S, int OP, int U>
__global__ void __launch_bounds__(kMathBlock)
unary_fast_kernel(const typename S::T* __restrict__ x, typename S::T* __restrict__ out,
                  int64_t n, int cs) {
  using T = typename S::T;
  using C = ComputeOf<S>;
  using CT = std::conditional_t<std::is_same_v<C, double>, TF64, TF32>;
  constexpr int kVec = 16 / sizeof(T);
  struct alignas(16) Pack { T v[kVec]; };
  pdl_enter();
  const int64_t nv = n / kVec;
  constexpr int64_t step = static_cast<int64_t>(kMathBlock) * U;
  const Pack* xp = reinterpret_cast<const Pack*>(x);
  Pack* op = reinterpret_cast<Pack*>(out);
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * step; base < nv;
       base += static_cast<int64_t>(gridDim.x) * step) {
    Pack v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t j = base + u * static_cast<int64_t>(kMathBlock) + threadIdx.x;
      if (j < nv) v[u] = xp[j];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t j = base + u * static_cast<int64_t>(kMathBlock) + threadIdx.x;
      if (j < nv) {
        C res[kVec];
#pragma unroll
        for (int e = 0; e < kVec; ++e) res[e] = apply_unary<C>(OP, to_compute<S>(v[u].v[e]));
        Pack r;
        pack_results<S, kVec>(r.v, res);
        store16(op + j, r, cs);
      }
    }
  }
  const int64_t tail = nv * kVec + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tail < n) out[tail] = convert<CT, S>(apply_unary<C>(OP, to_compute<S>(x[tail])));
}

// Every floating unary op but the bool-valued ones (isnan, isinf, logical_not) and invert.
template <class S>
int launch_unary_fast(int op, const void* x, void* out, int64_t n, cudaStream_t stream) {
  using T = typename S::T;
  const int unroll = ew_unroll<T>();
  const int cs = ew_cs();
  const unsigned grid = ew_grid(n / (16 / sizeof(T)), unroll);
  auto X = static_cast<const T*>(x);
  auto O = static_cast<T*>(out);
#define PGK_UFAST_CASE(OPC)                                                                \
  case OPC:                                                                                \
    if (unroll == 4)                                                                       \
      launch_k(unary_fast_kernel<S, OPC, 4>, grid, kMathBlock, stream, X, O, n, cs);       \
    else if (unroll == 1)                                                                  \
      launch_k(unary_fast_kernel<S, OPC, 1>, grid, kMathBlock, stream, X, O, n, cs);       \
    else                                                                                   \
      launch_k(unary_fast_kernel<S, OPC, 2>, grid, kMathBlock, stream, X, O, n, cs);       \
    return launch_status();
  switch (op) {
    PGK_UFAST_CASE(PGK_UOP_NEGATIVE)
    PGK_UFAST_CASE(PGK_UOP_ABSOLUTE)
    PGK_UFAST_CASE(PGK_UOP_EXP)
    PGK_UFAST_CASE(PGK_UOP_LOG)
    PGK_UFAST_CASE(PGK_UOP_LOG1P)
    PGK_UFAST_CASE(PGK_UOP_EXPM1)
    PGK_UFAST_CASE(PGK_UOP_SQRT)
    PGK_UFAST_CASE(PGK_UOP_RSQRT)
    PGK_UFAST_CASE(PGK_UOP_SIN)
    PGK_UFAST_CASE(PGK_UOP_COS)
    PGK_UFAST_CASE(PGK_UOP_TANH)
    PGK_UFAST_CASE(PGK_UOP_SIGMOID)
    PGK_UFAST_CASE(PGK_UOP_RELU)
    PGK_UFAST_CASE(PGK_UOP_GELU_TANH)
    PGK_UFAST_CASE(PGK_UOP_GELU_ERF)
    PGK_UFAST_CASE(PGK_UOP_SILU)
    PGK_UFAST_CASE(PGK_UOP_FLOOR)
    PGK_UFAST_CASE(PGK_UOP_CEIL)
    PGK_UFAST_CASE(PGK_UOP_RINT)
    PGK_UFAST_CASE(PGK_UOP_SIGN)
    PGK_UFAST_CASE(PGK_UOP_SQUARE)
    PGK_UFAST_CASE(PGK_UOP_RECIPROCAL)
    default: return -1;
  }
#undef PGK_UFAST_CASE
}

// ---- 2-D broadcast binary: out dense (rows, cols); each array operand walks its row densely
// (inner stride = element size) or is constant along it (inner stride 0), with any row stride
// (0 = one row for all).  Vectorized over 16-byte packs of a row: needs cols a multiple of
// the pack, the operands' pointers and row strides 16-byte aligned. ----
struct Bcast2D {
  const char* ptr[2];    // a, b (null: scalar)
  int64_t row_st[2];     // bytes
  int inner_zero[2];     // 1: one value per row (inner stride 0)
};

constexpr int kBcastUnroll = 2;  // two operands per step: fewer packs keep the registers low

template <class S, int OP>
__global__ void __launch_bounds__(kMathBlock)
binary_bcast2d_kernel(Bcast2D p, typename S::T* __restrict__ out, uint32_t packs_per_row,
                      int64_t npacks, ComputeOf<S> sv, int unroll) {
  using T = typename S::T;
  using C = ComputeOf<S>;
  using CT = std::conditional_t<std::is_same_v<C, double>, TF64, TF32>;
  constexpr int kVec = 16 / sizeof(T);
  struct alignas(16) Pack { T v[kVec]; };
  Pack* op = reinterpret_cast<Pack*>(out);
  const int64_t step = static_cast<int64_t>(kMathBlock) * unroll;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * step; base < npacks;
       base += static_cast<int64_t>(gridDim.x) * step) {
    Pack in[2][kBcastUnroll];
#pragma unroll
    for (int u = 0; u < kBcastUnroll; ++u) {
      const int64_t j = base + u * static_cast<int64_t>(kMathBlock) + threadIdx.x;
      if (u < unroll && j < npacks) {
        const uint32_t row = static_cast<uint32_t>(j) / packs_per_row;  // npacks < 2^32
        const uint32_t col = static_cast<uint32_t>(j) - row * packs_per_row;
#pragma unroll
        for (int k = 0; k < 2; ++k) {
          if (p.ptr[k] == nullptr) continue;
          const char* rp = p.ptr[k] + static_cast<int64_t>(row) * p.row_st[k];
          if (p.inner_zero[k]) {
            const T s = *reinterpret_cast<const T*>(rp);
#pragma unroll
            for (int e = 0; e < kVec; ++e) in[k][u].v[e] = s;
          } else {
            in[k][u] = reinterpret_cast<const Pack*>(rp)[col];
          }
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kBcastUnroll; ++u) {
      const int64_t j = base + u * static_cast<int64_t>(kMathBlock) + threadIdx.x;
      if (u < unroll && j < npacks) {
        Pack r;
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const C x = p.ptr[0] ? to_compute<S>(in[0][u].v[e]) : sv;
          const C y = p.ptr[1] ? to_compute<S>(in[1][u].v[e]) : sv;
          r.v[e] = convert<CT, S>(apply_binary<C>(OP, x, y));
        }
        op[j] = r;
      }
    }
  }
}

template <class S>
int launch_binary_bcast2d(int op, const Bcast2D& p, void* out, int64_t rows, int64_t cols,
                          double sval, cudaStream_t stream) {
  using T = typename S::T;
  using C = ComputeOf<S>;
  constexpr int kVec = 16 / sizeof(T);
  const C sv = static_cast<C>(sval);
  const int unroll = kBcastUnroll;
  const int64_t ppr = cols / kVec;
  const int64_t npacks = ppr * rows;
  const unsigned grid = ew_grid(npacks, unroll);
  auto O = static_cast<T*>(out);
#define PGK_BC_CASE(OPC)                                                                   \
  case OPC:                                                                                \
    binary_bcast2d_kernel<S, OPC><<<grid, kMathBlock, 0, stream>>>(                        \
        p, O, static_cast<uint32_t>(ppr), npacks, sv, unroll);                             \
    return launch_status();
  switch (op) {
    PGK_BC_CASE(PGK_OP_ADD)
    PGK_BC_CASE(PGK_OP_SUBTRACT)
    PGK_BC_CASE(PGK_OP_MULTIPLY)
    PGK_BC_CASE(PGK_OP_DIVIDE)
    PGK_BC_CASE(PGK_OP_MAXIMUM)
    PGK_BC_CASE(PGK_OP_MINIMUM)
    default: return -1;
  }
#undef PGK_BC_CASE
}

int launch_binary_fast_f16(int op, const void* a, const void* b, void* out, int64_t n,
                           int scalar_side, double sval, cudaStream_t stream);
int launch_binary_fast_bf16(int op, const void* a, const void* b, void* out, int64_t n,
                            int scalar_side, double sval, cudaStream_t stream);
int launch_binary_fast_f32(int op, const void* a, const void* b, void* out, int64_t n,
                           int scalar_side, double sval, cudaStream_t stream);
int launch_binary_fast_f64(int op, const void* a, const void* b, void* out, int64_t n,
                           int scalar_side, double sval, cudaStream_t stream);
// dtype: PGK_FLOAT16 / PGK_BFLOAT16 / PGK_FLOAT32 / PGK_FLOAT64; -1 when there is no fast path.
int launch_unary_fast_any(int dtype, int op, const void* x, void* out, int64_t n,
                          cudaStream_t stream);
int launch_binary_bcast2d_any(int dtype, int op, const Bcast2D& p, void* out, int64_t rows,
                              int64_t cols, double sval, cudaStream_t stream);

// The generic kernels, one compute type per file.
int launch_math_f32(const MathPlan& plan, const int* dtypes, int op, int kind, double sa_d,
                    double sb_d, cudaStream_t stream);
int launch_math_f64(const MathPlan& plan, const int* dtypes, int op, int kind, double sa_d,
                    double sb_d, cudaStream_t stream);
int launch_math_i64(const MathPlan& plan, const int* dtypes, int op, int kind, int64_t sa_i,
                    int64_t sb_i, cudaStream_t stream);

}  // namespace pgk
