// Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3", SC11) and the
// integer parts of PyGPUkit's random streams, usable on the host and the device.  The streams
// are defined in pygpukit/_philox.py (the NumPy mirror the CPU simulation runs); random.cu
// launches them.  Everything here is exact integer arithmetic: host and device agree bit for bit.
#pragma once

#include <cmath>
#include <cstdint>

#include "dtypes.cuh"

namespace pgk {
namespace rng {

constexpr uint32_t kM0 = 0xD2511F53u;
constexpr uint32_t kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u;
constexpr uint32_t kW1 = 0xBB67AE85u;
constexpr int kRounds = 10;

struct Words {
  uint32_t w[4];
};

PGK_HD uint32_t mulhi32(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

PGK_HD uint64_t mulhi64(uint64_t a, uint64_t b) {
#ifdef __CUDA_ARCH__
  return __umul64hi(a, b);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
}

// The 10 round keys of a 64-bit key (k0 = low word): loop-invariant in a kernel, so computed
// once per thread rather than bumped inside every block.
struct RoundKeys {
  uint32_t k0[kRounds];
  uint32_t k1[kRounds];
};

PGK_HD RoundKeys round_keys(uint64_t key) {
  RoundKeys rk;
  uint32_t a = static_cast<uint32_t>(key), b = static_cast<uint32_t>(key >> 32);
#pragma unroll
  for (int r = 0; r < kRounds; ++r) {
    rk.k0[r] = a;
    rk.k1[r] = b;
    a += kW0;
    b += kW1;
  }
  return rk;
}

// Random123's philox4x32_10(ctr, key): each round maps (c0, c1, c2, c3) to
// (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0)).
PGK_HD Words philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, const RoundKeys& rk) {
#pragma unroll
  for (int r = 0; r < kRounds; ++r) {
    const uint32_t hi0 = mulhi32(kM0, c0), lo0 = kM0 * c0;
    const uint32_t hi1 = mulhi32(kM1, c2), lo1 = kM1 * c2;
    c0 = hi1 ^ c1 ^ rk.k0[r];
    c1 = lo1;
    c2 = hi0 ^ c3 ^ rk.k1[r];
    c3 = lo0;
  }
  return Words{{c0, c1, c2, c3}};
}

// Where a call draws from: key, the counter of its first block, the stream word.
struct Stream {
  RoundKeys rk;
  uint64_t counter;
  uint32_t stream_id;
};

// Block b of the call (attempt > 0: the redraws of rejected integers at that position).
PGK_HD Words block_at(const Stream& s, uint64_t b, uint32_t attempt) {
  const uint64_t pos = s.counter + b;  // wraps modulo 2^64
  return philox(static_cast<uint32_t>(pos), static_cast<uint32_t>(pos >> 32), attempt,
                s.stream_id, s.rk);
}

// block_at(s, b, 0) where the caller guarantees that lo32(counter) + b does not wrap (random.cu
// ends a launch where the counter's low word wraps): on the device the high word is then a
// launch constant, which takes a 64-bit add per block and a round's multiply (made on the
// uniform datapath) out of the per-thread work.
PGK_HD Words block_in_launch(const Stream& s, uint64_t b) {
#ifdef __CUDA_ARCH__
  return philox(static_cast<uint32_t>(s.counter) + static_cast<uint32_t>(b),
                static_cast<uint32_t>(s.counter >> 32), 0, s.stream_id, s.rk);
#else
  return block_at(s, b, 0);
#endif
}

PGK_HD uint32_t word32(const Words& w, int j) {
  // A select chain rather than an indexed local array (which would live in local memory).
  return j == 0 ? w.w[0] : j == 1 ? w.w[1] : j == 2 ? w.w[2] : w.w[3];
}

PGK_HD uint64_t word64(const Words& w, int j) {
  return j == 0 ? (static_cast<uint64_t>(w.w[1]) << 32) | w.w[0]
                : (static_cast<uint64_t>(w.w[3]) << 32) | w.w[2];
}

// Offset in [0, r) for word j of block b, unbiased (Lemire's multiply-and-reject): a word whose
// low product is below t = 2^32 mod r is redrawn from attempt 1, 2, ... of the same block.
// r == 0 means 2^32 (the word itself).
PGK_HD uint32_t lemire32(const Stream& s, uint64_t b, int j, uint32_t x, uint32_t r, uint32_t t) {
  if (r == 0) return x;
  uint64_t m = static_cast<uint64_t>(x) * r;
  for (uint32_t attempt = 1; static_cast<uint32_t>(m) < t; ++attempt) {
    x = word32(block_at(s, b, attempt), j);
    m = static_cast<uint64_t>(x) * r;
  }
  return static_cast<uint32_t>(m >> 32);
}

// The same on 64-bit words (r == 0 means 2^64; t = 2^64 mod r).
PGK_HD uint64_t lemire64(const Stream& s, uint64_t b, int j, uint64_t x, uint64_t r, uint64_t t) {
  if (r == 0) return x;
  uint64_t lo = x * r;
  for (uint32_t attempt = 1; lo < t; ++attempt) {
    x = word64(block_at(s, b, attempt), j);
    lo = x * r;
  }
  return mulhi64(x, r);
}

// Uniform floats in [0, 1), exact: float32 keeps 24 bits of the word, float16 11, bfloat16 8,
// float64 53 of a 64-bit word.
PGK_HD float unit_f32(uint32_t x, int bits) {
  return static_cast<float>(x >> (32 - bits)) * bits_f32(static_cast<uint32_t>(127 - bits) << 23);
}
PGK_HD double unit_f64(uint64_t x) { return static_cast<double>(x >> 11) * 0x1p-53; }

#ifndef __CUDA_ARCH__
// (sin(pi t), cos(pi t)) for t in [0, 2) on the host, reduced exactly as the NumPy mirror
// (pygpukit._philox.sincospi) does: a = t - q/2 with q = rint(2 t), |a| <= 1/4.
inline void host_sincospi(double t, double& s, double& c) {
  const double q = std::nearbyint(t * 2.0);
  const double a = t - q * 0.5;
  const double x = a * 3.141592653589793;
  const double sa = std::sin(x), ca = std::cos(x);
  switch (static_cast<long long>(q) & 3) {
    case 0: s = sa; c = ca; break;
    case 1: s = ca; c = 0.0 - sa; break;
    case 2: s = 0.0 - sa; c = 0.0 - ca; break;
    default: s = 0.0 - ca; c = sa; break;
  }
}
#endif

}  // namespace rng
}  // namespace pgk
