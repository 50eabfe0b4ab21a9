// pgk_random, pgk_random_integers, pgk_random_choice: counter-based Philox4x32-10 streams.
//
// The streams are defined in pygpukit/_philox.py (see also philox.cuh and the header).  One
// kernel template runs every distribution: a grid-stride loop over Philox blocks where one thread
// computes one block (four 32-bit words; two blocks for the float32 normals) per iteration and
// stores the 4 (32-bit outputs) or 2 (64-bit outputs) values a block gives with one vector store
// where the output is aligned for it.
// What a block gives is a host/device functor per distribution, so a host build of this file
// can be checked against the NumPy mirror without a GPU.
#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "dtypes.cuh"
#include "launch_utils.cuh"
#include "philox.cuh"
#include "pygpukit_kernels.h"

namespace pgk {
namespace {

constexpr int kInvalid = static_cast<int>(cudaErrorInvalidValue);
constexpr int kThreads = 256;

using rng::Stream;
using rng::Words;

// N values of T, stored with one vector store where aligned.
template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// Roundings spelled out: the device must not contract a * b + c into an FMA (the NumPy mirror
// rounds the product and the sum); the host compiler (SSE2, no FMA) rounds each anyway.
PGK_HD float fmul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
PGK_HD float fadd(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
PGK_HD double dmul(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
PGK_HD double dadd(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// ---- what one Philox block gives, per distribution (host and device: the host build is what
// tests/random_host_check.cu compares with the NumPy mirror) ----

// Uniform float32 (Kind 0), float16 (1) or bfloat16 (2, both stored as bits), computed in float32.
template <int Kind>
struct Uniform32 {
  using T = typename std::conditional<Kind == 0, float, uint16_t>::type;
  static constexpr int N = 4;
  Stream s;
  float low, scale;
  bool affine;
  PGK_HD Pack<T, 4> operator()(uint64_t b) const {
    constexpr int bits = Kind == 0 ? 24 : Kind == 1 ? 11 : 8;
    const Words w = rng::block_at(s, b, 0);
    Pack<T, 4> p;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float u = rng::unit_f32(w.w[j], bits);
      if (affine) u = fadd(fmul(u, scale), low);
      if constexpr (Kind == 0) p.v[j] = u;
      else if constexpr (Kind == 1) p.v[j] = f32_to_f16(u);
      else p.v[j] = f32_to_bf16(u);
    }
    return p;
  }
};

struct Uniform64 {
  using T = double;
  static constexpr int N = 2;
  Stream s;
  double low, scale;
  bool affine;
  PGK_HD Pack<double, 2> operator()(uint64_t b) const {
    const Words w = rng::block_at(s, b, 0);
    Pack<double, 2> p;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      double u = rng::unit_f64(rng::word64(w, j));
      if (affine) u = dadd(dmul(u, scale), low);
      p.v[j] = u;
    }
    return p;
  }
};

// Constants of the float32 Box-Muller below that ptxas would otherwise rematerialize into a
// register for every Philox block (an FMA takes one immediate operand, a funnel shift none): as
// fields of the functor, a kernel parameter, they are loaded into registers once per thread.
struct BoxMullerConsts {
  float log_d8 = 0x1.0aa04ep-12f;  // neg2_logf_u1's leading coefficient (bits 0x39855027)
  float sin_c3 = -0x1.2f5992p-1f;  // sincospif's, sin(pi a): -0x3f17acc9
  float cos_c4 = 0x1.d09c24p-3f;   // cos(pi a): 0x3e684e12
  uint32_t one_hi = 0xfeu;         // 0x3f800000 (1.0f) >> 22, for sincospi_word's funnel shift
};

#ifdef __CUDA_ARCH__
// CUDA's accurate logf / sqrtf / sincospif, restricted to the inputs Box-Muller gives them and
// rearranged for a kernel bound by instruction issue, not by memory.  The polynomials, their
// constants and the order of their roundings are those of the SASS nvcc 13.0 emits for
// logf(u1), sqrtf(x) and sincospif(t) (the same on sm_80 and sm_90), so the values are bit for
// bit the library's (the exceptions: a tie in sincospi_word's reduction, a zero's sign in
// sqrtf_nonneg).  What is left out are the branches for inputs that never occur here (zero,
// subnormal, infinite and NaN arguments of logf; subnormal, infinite and negative ones of
// sqrtf; |t| >= 2^24 in sincospif); what is rearranged are exact steps: scalings by powers of
// two folded into constants, and the reduction of sincospif done on the integer word.  About
// 140 SASS instructions per Philox block (4 normals) with the loop, from 176.

// fmul(-2, logf(u1)) for u1 = v 2^-31, v in [1/2, 2^31] (the Box-Muller u1 below), bit for bit
// but for u1 = 1 (+0 here, -0 there).  logf reduces u1 = 2^e m with m in [2/3, 4/3),
// f = m - 1, and returns e ln2 + (f + f (f poly(f))).  Here
// the exponent arithmetic starts from v's bits (the 2^-31 folded into it, as is the 2 of 2 m
// below), and the polynomial runs on g = -2 f with its coefficients scaled by (-1/2)^(i+1)
// (every intermediate is the library's times a power of two, rounded alike): the last FMA gives
// -2 log(u1) directly, one FMUL less, and no FMA has two constant operands (a constant register
// reloaded per block).
__device__ __forceinline__ float neg2_logf_u1(float v, const BoxMullerConsts& k) {
  const int xb = __float_as_int(v) - (31 << 23);                     // the bits of u1
  const int e = (xb - 0x3f2aaaab) & static_cast<int>(0xff800000u);  // exponent, mantissa near 1
  const float g = __fadd_rn(2.0f, -__int_as_float(xb - e + (1 << 23)));  // 2 - 2 m = -2 f, exact
  float p = __fmaf_rn(g, k.log_d8, __int_as_float(0x3a1039f6));
  p = __fmaf_rn(g, p, __int_as_float(0x3a78cdcc));
  p = __fmaf_rn(g, p, __int_as_float(0x3b0f2955));
  p = __fmaf_rn(g, p, __int_as_float(0x3baad8b9));
  p = __fmaf_rn(g, p, __int_as_float(0x3c4ced0b));
  p = __fmaf_rn(g, p, __int_as_float(0x3cffff22));
  p = __fmaf_rn(g, p, __int_as_float(0x3daaaa78));
  p = __fmaf_rn(g, p, 0.25f);  // -poly(f) / 2
  p = __fmul_rn(g, p);         // f poly(f), the library's value
  p = __fmaf_rn(g, p, g);      // -2 (f + f^2 poly(f))
  // The library's e ln2 is (e 2^-23) * ln2 with e a multiple of 2^23 (exact, the subnormal
  // -23 being 0): one FMA with the product of the constants, -2 ln2 2^-23.
  return __fmaf_rn(__int2float_rn(e), __int_as_float(0xb4317218), p);
}

// sqrtf(x) for x = +0 or x in [2^-100, 2^126] (here -2 logf(u1): +0 when u1 == 1, else in
// [2^-24, 45)).  The library's fast path: y = x rsqrt(x), one Newton correction.  Its slow
// path returns a zero argument itself; here the rsqrt of a zero x is taken of 2^-126 instead
// (finite), so the fast path gives y = 0 and a +0 result: one FMNMX rather than a compare and
// a select.  (The library's value is -0 there, from fmul(-2, +0); equal, sign aside, and
// u1 == 1 is a 2^-25 event per pair.)
__device__ __forceinline__ float sqrtf_nonneg(float x) {
  float r;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(fmaxf(x, 0x1p-126f)));
  const float y = __fmul_rn(x, r);
  const float h = __fmul_rn(r, 0.5f);
  return __fmaf_rn(__fmaf_rn(-y, y, x), h, y);
}

// (sin(pi t), cos(pi t)) for t = (x1 >> 8) 2^-23, from the word x1 itself.  sincospif reduces
// t = q/2 + a with q = rint(2 t), |a| <= 1/4 (exact), evaluates sin(pi a) and cos(pi a) and
// picks and negates them by q mod 4.  On the word: w = x1 + 2^29 (mod 2^32) holds q mod 4 in its
// top two bits and a 2^23 + 2^21 in bits 8..29, so a is one float subtraction from the word's
// bits and the quadrant logic is sign-bit arithmetic.  The one difference from the library:
// a tie 2t = q0 + 1/2 rounds up here (a = -1/4, q = q0 + 1) instead of to even; then both
// evaluate sin(pi/4) = cos(pi/4), one with the sine polynomial, the other with the cosine one.
// Zeros are +0, as the library's (and the NumPy mirror's): sin(pi a) is odd in a, so its sign is
// applied to a (where sin(pi (-0)) = +0, the polynomial's "+ 0" terms seeing to it); cos(pi a)
// is never 0 for |a| <= 1/4.
__device__ __forceinline__ void sincospi_word(uint32_t x1, const BoxMullerConsts& k, float& s,
                                              float& c) {
  const uint32_t w = x1 + 0x20000000u;
  // The bits of 1.25 + a: w's bits 8..29 under the exponent of 1 (0xfe << 22), one funnel shift
  // of w << 2 (= 4 x1 + 2^31).
  const uint32_t m = __funnelshift_r(w << 2, k.one_hi, 10);
  const float a = __fadd_rn(__uint_as_float(m), -1.25f);     // exact
  const float a2 = __fmul_rn(a, a);
  // The sine goes to s (q even) or to c (q odd), negated for q = 1 and 2: the sign bit of
  // w + 2^30 (the second bit of q + 1).
  const float as = __uint_as_float(__float_as_uint(a) ^ ((x1 + 0x60000000u) & 0x80000000u));
  float ps = __fmaf_rn(a2, k.sin_c3, __int_as_float(0x40233590));
  ps = __fmaf_rn(a2, ps, __int_as_float(0xc0a55df6));
  ps = __fmaf_rn(ps, __fmaf_rn(as, a2, 0.0f), 0.0f);
  const float sin_a = __fmaf_rn(as, __int_as_float(0x40490fdb), ps);  // +-sin(pi a)
  float pc = __fmaf_rn(a2, k.cos_c4, __int_as_float(0xbfaad2e0));
  pc = __fmaf_rn(a2, pc, __int_as_float(0x4081e0cf));
  pc = __fmaf_rn(a2, pc, __int_as_float(0xc09de9e6));
  // The cosine goes to c (q even) or to s (q odd), negated for q = 2 and 3: w's sign bit.
  const float cos_a =
      __uint_as_float(__float_as_uint(__fmaf_rn(a2, pc, 1.0f)) ^ (w & 0x80000000u));
  // q odd (w's bit 30) swaps them: a predicate from one LOP3 and two FSELs (written as C++,
  // ptxas tests the bit with a shift, a LOP3 and an ISETP).
  asm("{\n\t.reg .pred odd;\n\t.reg .b32 bit;\n\t"
      "and.b32 bit, %2, 0x40000000;\n\t"
      "setp.ne.u32 odd, bit, 0;\n\t"
      "selp.f32 %0, %3, %4, odd;\n\t"
      "selp.f32 %1, %4, %3, odd;\n\t}"
      : "=f"(s), "=f"(c)
      : "r"(w), "f"(cos_a), "f"(sin_a));
}
#endif

// Box-Muller: u1 in (0, 1] and t = 2 u2 in [0, 2), exact functions of the words (equal to the
// NumPy mirror's), then CUDA's accurate logf / sqrtf / sincospif on the device (above, bit
// for bit but for the ties of sincospi_word and the sign of a zero radius).  The host build
// computes in double as the mirror does (it checks the words and the pairing, not CUDA's math).
PGK_HD void box_muller_f32(uint32_t x0, uint32_t x1, const BoxMullerConsts& k, float& z0,
                           float& z1) {
#ifdef __CUDA_ARCH__
  // u1 = fadd(fmul(v, 2^-31), 2^-32) with an exact product, = 2^-31 fadd(v, 1/2): the scaling
  // is left to neg2_logf_u1's exponent arithmetic.
  const float rad =
      sqrtf_nonneg(neg2_logf_u1(__fadd_rn(static_cast<float>(static_cast<int>(x0 >> 1)), 0.5f), k));
  float s, c;
  sincospi_word(x1, k, s, c);
  z0 = __fmul_rn(rad, c);
  z1 = __fmul_rn(rad, s);
#else
  const float u1 = fadd(fmul(static_cast<float>(static_cast<int>(x0 >> 1)), 0x1p-31f), 0x1p-32f);
  const float t = fmul(static_cast<float>(x1 >> 8), 0x1p-23f);  // exact
  double s, c;
  rng::host_sincospi(t, s, c);
  const double rad = std::sqrt(-2.0 * std::log(static_cast<double>(u1)));
  z0 = static_cast<float>(rad * c);
  z1 = static_cast<float>(rad * s);
#endif
}

PGK_HD void box_muller_f64(uint64_t x0, uint64_t x1, double& z0, double& z1) {
  const double u1 = dadd(static_cast<double>(x0 >> 11) * 0x1p-53, 0x1p-54);
  const double t = static_cast<double>(x1 >> 11) * 0x1p-52;  // exact
  double s, c;
#ifdef __CUDA_ARCH__
  sincospi(t, &s, &c);
#else
  rng::host_sincospi(t, s, c);
#endif
  const double rad = sqrt(-2.0 * log(u1));
  z0 = dmul(rad, c);
  z1 = dmul(rad, s);
}

struct Normal32 {
  using T = float;
  static constexpr int N = 4;
  Stream s;
  float loc, scale;
  bool affine;
  BoxMullerConsts k{};
  PGK_HD Pack<float, 4> operator()(uint64_t b) const {
    const Words w = rng::block_at(s, b, 0);
    Pack<float, 4> p;
    box_muller_f32(w.w[0], w.w[1], k, p.v[0], p.v[1]);
    box_muller_f32(w.w[2], w.w[3], k, p.v[2], p.v[3]);
    if (affine) {
#pragma unroll
      for (int j = 0; j < 4; ++j) p.v[j] = fadd(fmul(p.v[j], scale), loc);
    }
    return p;
  }
};

struct Normal64 {
  using T = double;
  static constexpr int N = 2;
  Stream s;
  double loc, scale;
  bool affine;
  PGK_HD Pack<double, 2> operator()(uint64_t b) const {
    const Words w = rng::block_at(s, b, 0);
    Pack<double, 2> p;
    box_muller_f64(rng::word64(w, 0), rng::word64(w, 1), p.v[0], p.v[1]);
    if (affine) {
#pragma unroll
      for (int j = 0; j < 2; ++j) p.v[j] = dadd(dmul(p.v[j], scale), loc);
    }
    return p;
  }
};

// Raw words: uint32_t (32-bit words) or unsigned long long (64-bit words).
template <typename W>
struct Bits {
  using T = W;
  static constexpr int N = sizeof(W) == 4 ? 4 : 2;
  Stream s;
  PGK_HD Pack<W, N> operator()(uint64_t b) const {
    const Words w = rng::block_at(s, b, 0);
    Pack<W, N> p;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      if constexpr (N == 4) p.v[j] = w.w[j];
      else p.v[j] = rng::word64(w, j);
    }
    return p;
  }
};

// Integers low + [0, r) (r == 0: the whole word), narrowed to the storage type S (1, 2, 4 or 8
// bytes) like a C cast; Wide: 64-bit words, else 32-bit words.
template <typename S, bool Wide>
struct Integers {
  using T = S;
  static constexpr int N = Wide ? 2 : 4;
  Stream s;
  uint64_t low, r, t;
  PGK_HD Pack<S, N> operator()(uint64_t b) const {
    const Words w = rng::block_at(s, b, 0);
    Pack<S, N> p;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      uint64_t offset;
      if constexpr (Wide) {
        offset = rng::lemire64(s, b, j, rng::word64(w, j), r, t);
      } else {
        offset = rng::lemire32(s, b, j, w.w[j], static_cast<uint32_t>(r),
                               static_cast<uint32_t>(t));
      }
      p.v[j] = static_cast<S>(low + offset);  // modulo 2^bits
    }
    return p;
  }
};

// Weighted categories: the first k with cdf[k] > u * cdf[ncat - 1] (numpy.searchsorted "right").
struct Choice {
  using T = long long;
  static constexpr int N = 2;
  Stream s;
  const double* cdf;
  int64_t ncat, last;
  PGK_HD Pack<long long, 2> operator()(uint64_t b) const {
    const Words w = rng::block_at(s, b, 0);
    const double total = cdf[ncat - 1];
    Pack<long long, 2> p;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const double v = dmul(rng::unit_f64(rng::word64(w, j)), total);
      int64_t lo = 0, hi = ncat;
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (cdf[mid] > v) hi = mid;
        else lo = mid + 1;
      }
      p.v[j] = lo == ncat ? last : lo;
    }
    return p;
  }
};

// Philox blocks a thread computes per iteration of the vector-store loop: 2 for the float32
// normals (measured on an H200: 3% faster, the loop's bookkeeping shared by two blocks and
// more independent work to schedule), 1 for the rest (memory-bound, or with rejection loops).
template <class F>
struct BlocksPerIteration : std::integral_constant<int, 1> {};
template <>
struct BlocksPerIteration<Normal32> : std::integral_constant<int, 2> {};

// One kernel for every distribution: a grid-stride loop over Philox blocks, each thread storing
// the N values of its block with one vector store when `vec` (out aligned to N * sizeof(T)) and
// all N are in range.  32-bit indices: the host launches at most kChunkBlocks blocks at a time
// (a longer fill is several launches, each with its counter advanced), so no 64-bit index
// arithmetic runs per block (it was ~10% of the instructions of the normal fill).
constexpr uint32_t kChunkBlocks = 1u << 29;  // N <= 4: fewer than 2^31 elements per launch

template <class F>
__global__ void __launch_bounds__(kThreads)
random_kernel(typename F::T* __restrict__ out, uint32_t n, F f, bool vec) {
  pdl_enter();
  using T = typename F::T;
  constexpr uint32_t N = F::N;
  const uint32_t nblk = (n + N - 1) / N;
  const uint32_t full = vec ? n / N : 0;  // blocks stored with one vector store
  uint32_t stride = gridDim.x * blockDim.x;
  // Opaque to ptxas, which would otherwise recompute it from gridDim and blockDim per block (3
  // instructions of the loop) to save a register.
  asm("" : "+r"(stride));
  uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
  // Two loops rather than one with a test per block: the vector stores, then the rest (the last
  // partial block, or every block when out is not aligned for the vector store).
  if constexpr (BlocksPerIteration<F>::value == 2) {
    for (; b + stride < full; b += 2 * stride) {  // b + stride < full < 2^31: no wrap
      const Pack<T, N> p0 = f(b), p1 = f(b + stride);
      reinterpret_cast<Pack<T, N>*>(out)[b] = p0;
      reinterpret_cast<Pack<T, N>*>(out)[b + stride] = p1;
    }
  }
  for (; b < full; b += stride) reinterpret_cast<Pack<T, N>*>(out)[b] = f(b);
  for (; b < nblk; b += stride) {
    const Pack<T, N> p = f(b);
    const uint32_t i = b * N;
#pragma unroll
    for (uint32_t j = 0; j < N; ++j) {
      if (i + j < n) out[i + j] = p.v[j];
    }
  }
}

// ---- launch configuration ----
// A grid-stride loop amortizes the per-thread setup over many Philox blocks: one full wave of
// thread blocks (the kernel's occupancy times the SMs; PGK_TUNE_RAND_WAVES waves, default 1,
// for benchmarking), never more than the work needs.  A single wave keeps every thread's share
// of the work equal (no tail wave of a few blocks).
constexpr int kMaxDevices = 64;

int current_device() {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) {
    cudaGetLastError();
    return -1;
  }
  return dev;
}

// Resident blocks of kThreads threads per SM for `kernel` on device `dev` (cached per kernel).
template <class F>
int blocks_per_sm(int dev) {
  static std::atomic<int> cache[kMaxDevices];
  if (dev < 0) return 1;
  int b = cache[dev].load(std::memory_order_relaxed);
  if (b == 0) {
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, random_kernel<F>, kThreads, 0) !=
            cudaSuccess || b < 1) {
      cudaGetLastError();
      b = 1;
    }
    cache[dev].store(b, std::memory_order_relaxed);
  }
  return b;
}

template <class F>
dim3 grid_for_blocks(int64_t philox_blocks) {
  static const int waves = tune_knob("PGK_TUNE_RAND_WAVES", 1, 1, 64);
  const int dev = current_device();
  const int sms = sm_count_of_device(dev);
  const int64_t cap = int64_t{sms > 0 ? sms : 1} * blocks_per_sm<F>(dev) * waves;
  int64_t g = (philox_blocks + kThreads - 1) / kThreads;
  if (g > cap) g = cap;
  return dim3(static_cast<unsigned>(g < 1 ? 1 : g));
}

bool aligned(const void* p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// Launch F over n elements of out (aligned to sizeof(T): checked by the caller): one launch
// per kChunkBlocks Philox blocks, the counter of each chunk advanced by the blocks before it
// (block b of a chunk is block start + b of the call, the same words).
template <class F>
int launch(typename F::T* out, int64_t n, const F& f, cudaStream_t st) {
  const bool vec = aligned(out, sizeof(typename F::T) * F::N);
  const int64_t nblk = (n + F::N - 1) / F::N;
  for (int64_t start = 0; start < nblk; start += kChunkBlocks) {
    const int64_t blocks = nblk - start < kChunkBlocks ? nblk - start : int64_t{kChunkBlocks};
    const int64_t first = start * F::N;
    const int64_t count = n - first < blocks * F::N ? n - first : blocks * F::N;
    F g = f;
    g.s.counter += static_cast<uint64_t>(start);  // wraps modulo 2^64, as block_at does
    launch_k(random_kernel<F>, grid_for_blocks<F>(blocks), dim3(kThreads), st, out + first,
             static_cast<uint32_t>(count), g, vec);
    if (const int rc = launch_status()) return rc;
  }
  return 0;
}

Stream make_stream(uint64_t key, uint64_t counter, uint32_t stream_id) {
  return Stream{rng::round_keys(key), counter, stream_id};
}

template <typename S>
int launch_integers(void* dst, int64_t n, const Stream& s, uint64_t low, uint64_t span,
                    cudaStream_t st) {
  S* out = static_cast<S*>(dst);
  if (span > 0xFFFFFFFFull) {
    const uint64_t r = span + 1;                  // 0 when span == 2^64 - 1 (the word itself)
    const uint64_t t = r == 0 ? 0 : (0 - r) % r;  // 2^64 mod r
    return launch(out, n, Integers<S, true>{s, low, r, t}, st);
  }
  const uint64_t r = (span + 1) & 0xFFFFFFFFull;  // 0 when span == 2^32 - 1
  const uint64_t t = r == 0 ? 0 : ((1ull << 32) - r) % r;
  return launch(out, n, Integers<S, false>{s, low, r, t}, st);
}

}  // namespace
}  // namespace pgk

extern "C" PGK_API int pgk_random(int dist, void* out, int dtype, int64_t n, uint64_t key,
                                  uint64_t counter, uint32_t stream_id, double a, double b,
                                  void* stream) {
  using namespace pgk;
  bool ok;
  switch (dist) {
    case PGK_RAND_UNIFORM:
      ok = dtype == PGK_FLOAT16 || dtype == PGK_BFLOAT16 || dtype == PGK_FLOAT32 ||
           dtype == PGK_FLOAT64;
      break;
    case PGK_RAND_NORMAL: ok = dtype == PGK_FLOAT32 || dtype == PGK_FLOAT64; break;
    case PGK_RAND_BITS: ok = dtype == PGK_INT32 || dtype == PGK_INT64; break;
    default: ok = false;
  }
  if (!ok || n < 0 || !std::isfinite(a) || !std::isfinite(b)) return kInvalid;
  // float32 parameters for the 16/32-bit types, rounded once from the doubles.
  const float af = static_cast<float>(a), bf = static_cast<float>(b);
  if (dtype != PGK_FLOAT64 && dist != PGK_RAND_BITS && !(std::isfinite(af) && std::isfinite(bf))) {
    return kInvalid;
  }
  if (n == 0) return 0;
  if (out == nullptr || !aligned(out, static_cast<uintptr_t>(dtype_size(dtype)))) {
    return kInvalid;
  }
  auto st = static_cast<cudaStream_t>(stream);
  const Stream s = make_stream(key, counter, stream_id);
  const bool affine = !(a == 0.0 && b == 1.0);
  if (dist == PGK_RAND_BITS) {
    if (dtype == PGK_INT32) return launch(static_cast<uint32_t*>(out), n, Bits<uint32_t>{s}, st);
    return launch(static_cast<unsigned long long*>(out), n, Bits<unsigned long long>{s}, st);
  }
  if (dist == PGK_RAND_NORMAL) {
    if (dtype == PGK_FLOAT64) {
      return launch(static_cast<double*>(out), n, Normal64{s, a, b, affine}, st);
    }
    return launch(static_cast<float*>(out), n, Normal32{s, af, bf, affine}, st);
  }
  switch (dtype) {
    case PGK_FLOAT64:
      return launch(static_cast<double*>(out), n, Uniform64{s, a, b, affine}, st);
    case PGK_FLOAT32:
      return launch(static_cast<float*>(out), n, Uniform32<0>{s, af, bf, affine}, st);
    case PGK_FLOAT16:
      return launch(static_cast<uint16_t*>(out), n, Uniform32<1>{s, af, bf, affine}, st);
    default:
      return launch(static_cast<uint16_t*>(out), n, Uniform32<2>{s, af, bf, affine}, st);
  }
}

extern "C" PGK_API int pgk_random_integers(void* out, int dtype, int64_t n, uint64_t key,
                                           uint64_t counter, uint32_t stream_id, int64_t low,
                                           uint64_t span, void* stream) {
  using namespace pgk;
  if (!valid_dtype(dtype) || n < 0) return kInvalid;
  if (dtype == PGK_FLOAT16 || dtype == PGK_BFLOAT16 || dtype == PGK_FLOAT32 ||
      dtype == PGK_FLOAT64) {
    return kInvalid;
  }
  if (n == 0) return 0;
  const int size = dtype_size(dtype);
  if (out == nullptr || !aligned(out, static_cast<uintptr_t>(size))) return kInvalid;
  auto st = static_cast<cudaStream_t>(stream);
  const Stream s = make_stream(key, counter, stream_id);
  const uint64_t ulow = static_cast<uint64_t>(low);
  switch (size) {
    case 1: return launch_integers<uint8_t>(out, n, s, ulow, span, st);
    case 2: return launch_integers<uint16_t>(out, n, s, ulow, span, st);
    case 4: return launch_integers<uint32_t>(out, n, s, ulow, span, st);
    default: return launch_integers<unsigned long long>(out, n, s, ulow, span, st);
  }
}

extern "C" PGK_API int pgk_random_choice(int64_t* out, int64_t n, const double* cdf,
                                         int64_t ncat, int64_t last, uint64_t key,
                                         uint64_t counter, uint32_t stream_id, void* stream) {
  using namespace pgk;
  if (n < 0 || ncat < 1 || last < 0 || last >= ncat) return kInvalid;
  if (n == 0) return 0;
  if (out == nullptr || cdf == nullptr || !aligned(out, 8) || !aligned(cdf, 8)) return kInvalid;
  return launch(reinterpret_cast<long long*>(out), n,
                Choice{make_stream(key, counter, stream_id), cdf, ncat, last},
                static_cast<cudaStream_t>(stream));
}
