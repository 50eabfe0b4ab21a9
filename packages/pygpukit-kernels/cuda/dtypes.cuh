// dtype codes of the C ABI -> C++ storage types, and element conversions that equal NumPy's
// `astype` bit for bit (ml_dtypes.bfloat16 standing in for NumPy's bfloat16).
//
// Every element is handled as its raw storage (bool as a byte, float16/bfloat16 as uint16_t bits),
// so everything here is trivially copyable and usable on the host too (the fill launcher converts
// its value on the host with the same functions).
//
// Semantics (all verified against NumPy 2.x / ml_dtypes 0.5+ on x86-64):
//  * integer -> integer: C cast (wraps modulo 2^bits, like NumPy's C casts).
//  * integer -> float32/float64: round to nearest even (C cast).
//  * integer -> float16 / bfloat16: to float32 first (round to nearest), then to the 16-bit type
//    (NumPy converts ints to half through float; ml_dtypes converts ints to bfloat16 through float).
//  * float -> integer: truncation toward zero (out-of-range and NaN are undefined in NumPy too).
//  * anything -> bool: != 0 (NaN -> true, -0.0 -> false); bool -> number: 0 / 1.
//  * float64 -> float16: rounded once, to nearest even, from the double (NumPy's doublebits_to_halfbits).
//  * float64 -> bfloat16: through float32 (ml_dtypes does `bfloat16(float(x))`: two roundings).
//  * float16 <-> bfloat16: through float32 (exact widening, then one rounding; what ml_dtypes does).
//  * NaN -> float target: a quiet NaN with the source's sign; payload bits as x86 / NumPy keep them
//    (float16 targets: NumPy's `0x7c00 + (mantissa >> shift)`; bfloat16 targets: Eigen's canonical
//    0x7fc0 / 0xffc0), so the standard NaNs map to the standard NaNs of the target.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "pygpukit_kernels.h"

#define PGK_HD __host__ __device__ __forceinline__

namespace pgk {

enum class Kind { Bool, Int, F16, BF16, F32, F64 };

template <int Code, typename Storage, Kind K>
struct DT {
  using T = Storage;
  static constexpr int code = Code;
  static constexpr Kind kind = K;
};

using TBool = DT<PGK_BOOL, uint8_t, Kind::Bool>;
using TI8 = DT<PGK_INT8, int8_t, Kind::Int>;
using TU8 = DT<PGK_UINT8, uint8_t, Kind::Int>;
using TI16 = DT<PGK_INT16, int16_t, Kind::Int>;
using TI32 = DT<PGK_INT32, int32_t, Kind::Int>;
using TI64 = DT<PGK_INT64, long long, Kind::Int>;
using TF16 = DT<PGK_FLOAT16, uint16_t, Kind::F16>;
using TBF16 = DT<PGK_BFLOAT16, uint16_t, Kind::BF16>;
using TF32 = DT<PGK_FLOAT32, float, Kind::F32>;
using TF64 = DT<PGK_FLOAT64, double, Kind::F64>;

constexpr int kNumDtypes = 10;

inline bool valid_dtype(int code) { return code >= 0 && code < kNumDtypes; }

inline int dtype_size(int code) {
  constexpr int sizes[kNumDtypes] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  return sizes[code];
}

// Calls f(Tag{}) for the tag of `code` (which must be valid).
template <typename F>
inline auto dispatch_dtype(int code, F&& f) {
  switch (code) {
    case PGK_BOOL: return f(TBool{});
    case PGK_INT8: return f(TI8{});
    case PGK_UINT8: return f(TU8{});
    case PGK_INT16: return f(TI16{});
    case PGK_INT32: return f(TI32{});
    case PGK_INT64: return f(TI64{});
    case PGK_FLOAT16: return f(TF16{});
    case PGK_BFLOAT16: return f(TBF16{});
    case PGK_FLOAT32: return f(TF32{});
    default: return f(TF64{});
  }
}

// ---- bit casts usable on host and device ----
PGK_HD uint32_t f32_bits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
#endif
}
PGK_HD float bits_f32(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, 4);
  return x;
#endif
}
PGK_HD uint64_t f64_bits(double x) {
#ifdef __CUDA_ARCH__
  return static_cast<uint64_t>(__double_as_longlong(x));
#else
  uint64_t u;
  std::memcpy(&u, &x, 8);
  return u;
#endif
}
PGK_HD double bits_f64(uint64_t u) {
#ifdef __CUDA_ARCH__
  return __longlong_as_double(static_cast<long long>(u));
#else
  double x;
  std::memcpy(&x, &u, 8);
  return x;
#endif
}

// ---- float <-> float conversions on raw bits ----

// float32 -> float64: exact; NaN keeps sign and payload (x86 cvtss2sd, quieted).
PGK_HD double f32_to_f64(float x) {
  const uint32_t u = f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return bits_f64((static_cast<uint64_t>(u & 0x80000000u) << 32) | 0x7ff8000000000000ull |
                    (static_cast<uint64_t>(u & 0x007fffffu) << 29));
  }
  return static_cast<double>(x);
}

// float64 -> float32: round to nearest even; NaN keeps sign and the top payload bits (x86).
PGK_HD float f64_to_f32(double x) {
  const uint64_t u = f64_bits(x);
  if ((u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) {
    return bits_f32(static_cast<uint32_t>((u >> 32) & 0x80000000u) | 0x7fc00000u |
                    static_cast<uint32_t>((u & 0x000fffffffffffffull) >> 29));
  }
  return static_cast<float>(x);
}

// float16 bits -> float32: exact; NaN as NumPy's halfbits_to_floatbits.
PGK_HD float f16_to_f32(uint16_t h) {
  if ((h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0) {
    return bits_f32((static_cast<uint32_t>(h & 0x8000u) << 16) | 0x7f800000u |
                    (static_cast<uint32_t>(h & 0x03ffu) << 13));
  }
  return __half2float(__ushort_as_half(h));
}

// float32 -> float16 bits: round to nearest even (overflow -> inf); NaN as NumPy's
// floatbits_to_halfbits.
PGK_HD uint16_t f32_to_f16(float x) {
  const uint32_t u = f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    uint16_t r = static_cast<uint16_t>(0x7c00u + ((u & 0x007fffffu) >> 13));
    if (r == 0x7c00u) ++r;
    return static_cast<uint16_t>(((u >> 16) & 0x8000u) | r);
  }
  return __half_as_ushort(__float2half_rn(x));
}

// float64 -> float16 bits, rounded once from the double (NumPy's doublebits_to_halfbits).
// Done in integer arithmetic: identical on host and device, no double rounding.
PGK_HD uint16_t f64_to_f16(double x) {
  const uint64_t u = f64_bits(x);
  const uint16_t sign = static_cast<uint16_t>((u >> 48) & 0x8000u);
  const uint64_t a = u & 0x7fffffffffffffffull;
  const uint64_t m = a & 0x000fffffffffffffull;
  if (a > 0x7ff0000000000000ull) {  // NaN
    uint16_t r = static_cast<uint16_t>(0x7c00u + (m >> 42));
    if (r == 0x7c00u) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  const int e = static_cast<int>(a >> 52) - 1023;  // unbiased exponent (-1023 for zero/subnormal)
  if (e > 15) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 2^16 (and inf): inf
  uint64_t mant;   // significand with implicit bit
  int shift;       // bits dropped
  uint32_t base;   // exponent field contribution
  if (e >= -14) {  // normal half
    mant = m;
    shift = 42;
    base = static_cast<uint32_t>(e + 15) << 10;
  } else {  // subnormal half (or zero): units of 2^-24
    if (e < -25) return sign;  // < 2^-25: rounds to zero (2^-25 exactly ties to even zero too)
    mant = m | (1ull << 52);
    shift = 28 - e;  // 43 .. 53
    base = 0;
  }
  uint32_t r = base + static_cast<uint32_t>(mant >> shift);
  const uint64_t rem = mant & ((1ull << shift) - 1);
  const uint64_t half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (r & 1u))) ++r;  // carries into the exponent / to inf
  return static_cast<uint16_t>(sign | r);
}

// bfloat16 bits -> float32: exact (ml_dtypes: bits << 16).
PGK_HD float bf16_to_f32(uint16_t b) { return bits_f32(static_cast<uint32_t>(b) << 16); }

// float32 -> bfloat16 bits: round to nearest even; NaN -> 0x7fc0 / 0xffc0 (Eigen/ml_dtypes).
PGK_HD uint16_t f32_to_bf16(float x) {
  const uint32_t u = f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u & 0x80000000u) ? 0xffc0u : 0x7fc0u;
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// ---- value views ----
template <class S>
PGK_HD bool nonzero(typename S::T x) {
  if constexpr (S::kind == Kind::F16 || S::kind == Kind::BF16) {
    return (x & 0x7fffu) != 0;
  } else {
    return x != 0;  // NaN != 0 is true
  }
}

// The element as float32 (F16/BF16/F32) or float64 (F64): what integer targets truncate.
template <class S>
PGK_HD auto float_value(typename S::T x) {
  if constexpr (S::kind == Kind::F16) return f16_to_f32(x);
  else if constexpr (S::kind == Kind::BF16) return bf16_to_f32(x);
  else return x;
}

// ---- the conversion ----
template <class S, class D>
PGK_HD typename D::T convert(typename S::T x) {
  using DT_ = typename D::T;
  if constexpr (std::is_same_v<S, D>) {
    return x;
  } else if constexpr (D::kind == Kind::Bool) {
    return nonzero<S>(x) ? DT_{1} : DT_{0};
  } else if constexpr (S::kind == Kind::Bool) {
    return convert<TI32, D>(x != 0 ? 1 : 0);
  } else if constexpr (S::kind == Kind::Int) {
    if constexpr (D::kind == Kind::Int) return static_cast<DT_>(x);
    else if constexpr (D::kind == Kind::F32) return static_cast<float>(x);
    else if constexpr (D::kind == Kind::F64) return static_cast<double>(x);
    else if constexpr (D::kind == Kind::F16) return f32_to_f16(static_cast<float>(x));
    else return f32_to_bf16(static_cast<float>(x));
  } else if constexpr (D::kind == Kind::Int) {  // float-like -> integer: truncate
    return static_cast<DT_>(float_value<S>(x));
  } else if constexpr (S::kind == Kind::F64) {
    if constexpr (D::kind == Kind::F32) return f64_to_f32(x);
    else if constexpr (D::kind == Kind::F16) return f64_to_f16(x);
    else return f32_to_bf16(f64_to_f32(x));  // BF16: through float32, as ml_dtypes
  } else if constexpr (S::kind == Kind::F32) {
    if constexpr (D::kind == Kind::F64) return f32_to_f64(x);
    else if constexpr (D::kind == Kind::F16) return f32_to_f16(x);
    else return f32_to_bf16(x);
  } else {  // F16 or BF16 source: widen exactly to float32, then convert once
    return convert<TF32, D>(float_value<S>(x));
  }
}

}  // namespace pgk
