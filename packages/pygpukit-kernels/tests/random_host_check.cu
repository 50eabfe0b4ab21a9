// Host build of cuda/random.cu's per-block functors, for tests/test_random_host.py: prints the
// values a kernel would store, so they can be compared with PyGPUkit's NumPy mirror
// (pygpukit/_philox.py) without a GPU.
//
//   random_host_check WHAT N KEY COUNTER STREAM_ID P1 P2 [CDF...]  > raw little-endian values
//   WHAT: u32 u16 ubf u64 (uniform, P1 = a, P2 = b), n32 n64 (normal, a, b), b32 b64 (bits),
//         i1 i2 i4 i8 (integers, P1 = low, P2 = span), choice (P1 = last, CDF values follow).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../cuda/random.cu"

namespace {

template <class F>
void emit(const F& f, int64_t n) {
  using T = typename F::T;
  std::vector<T> out(static_cast<size_t>(n));
  for (int64_t b = 0; b * F::N < n; ++b) {
    const auto p = f(static_cast<uint64_t>(b));
    for (int j = 0; j < F::N && b * F::N + j < n; ++j) out[b * F::N + j] = p.v[j];
  }
  std::fwrite(out.data(), sizeof(T), out.size(), stdout);
}

template <typename S>
void emit_integers(const pgk::rng::Stream& s, int64_t n, uint64_t low, uint64_t span) {
  using namespace pgk;
  if (span > 0xFFFFFFFFull) {
    const uint64_t r = span + 1, t = r == 0 ? 0 : (0 - r) % r;
    emit(Integers<S, true>{s, low, r, t}, n);
  } else {
    const uint64_t r = (span + 1) & 0xFFFFFFFFull, t = r == 0 ? 0 : ((1ull << 32) - r) % r;
    emit(Integers<S, false>{s, low, r, t}, n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pgk;
  if (argc < 8) {
    std::fprintf(stderr, "usage: %s WHAT N KEY COUNTER STREAM_ID P1 P2 [CDF...]\n", argv[0]);
    return 2;
  }
  const std::string what = argv[1];
  const int64_t n = std::strtoll(argv[2], nullptr, 10);
  const rng::Stream s{rng::round_keys(std::strtoull(argv[3], nullptr, 10)),
                      std::strtoull(argv[4], nullptr, 10),
                      static_cast<uint32_t>(std::strtoul(argv[5], nullptr, 10))};
  const double a = std::strtod(argv[6], nullptr), b = std::strtod(argv[7], nullptr);
  const bool affine = !(a == 0.0 && b == 1.0);
  const float af = static_cast<float>(a), bf = static_cast<float>(b);
  const uint64_t low = static_cast<uint64_t>(std::strtoll(argv[6], nullptr, 10));
  const uint64_t span = std::strtoull(argv[7], nullptr, 10);
  if (what == "u32") emit(Uniform32<0>{s, af, bf, affine}, n);
  else if (what == "u16") emit(Uniform32<1>{s, af, bf, affine}, n);
  else if (what == "ubf") emit(Uniform32<2>{s, af, bf, affine}, n);
  else if (what == "u64") emit(Uniform64{s, a, b, affine}, n);
  else if (what == "n32" && affine) emit(Normal32<true>{s, af, bf}, n);
  else if (what == "n32") emit(Normal32<false>{s, af, bf}, n);
  else if (what == "n64") emit(Normal64{s, a, b, affine}, n);
  else if (what == "b32") emit(Bits<uint32_t>{s}, n);
  else if (what == "b64") emit(Bits<unsigned long long>{s}, n);
  else if (what == "i1") emit_integers<uint8_t>(s, n, low, span);
  else if (what == "i2") emit_integers<uint16_t>(s, n, low, span);
  else if (what == "i4") emit_integers<uint32_t>(s, n, low, span);
  else if (what == "i8") emit_integers<unsigned long long>(s, n, low, span);
  else if (what == "choice") {
    std::vector<double> cdf;
    for (int i = 8; i < argc; ++i) cdf.push_back(std::strtod(argv[i], nullptr));
    if (cdf.empty()) return 2;
    emit(Choice{s, cdf.data(), static_cast<int64_t>(cdf.size()), std::strtoll(argv[6], nullptr, 10)},
         n);
  } else {
    std::fprintf(stderr, "unknown WHAT %s\n", what.c_str());
    return 2;
  }
  return 0;
}
