// Hopper (sm_90a) GEMM family: checks, configuration choice by shape, and the entry points
// pgk::gemm::sm90_gemm / sm90_workspace_bytes.  The kernels live in sm90_k_*.cu (CUTLASS 3,
// see sm90_gemm_kernel.cuh); this file includes no CUTLASS header.
#include <cstdint>
#include <cstring>

#include "gemm_problem.cuh"
#include "launch_utils.cuh"
#include "pygpukit_kernels.h"
#include "sm90_gemm_configs.cuh"

namespace pgk::gemm {
namespace sm90 {
namespace {

struct Choice {
  KernelFn fn = nullptr;
  const char* name = nullptr;
  RunOpts opts{};
};

// Test hook state (probe / benchmarks only); g_force_gen invalidates the plan caches.
int g_force_config = 0;
RunOpts g_force_opts{};
bool g_force_has_opts = false;
int g_force_gen = 0;

inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Returns false (NotSupported) for anything the TMA/WGMMA kernels cannot run.
bool supported(const Problem& p) {
  int elem = 0;
  if (p.dtype == PGK_FLOAT16 || p.dtype == PGK_BFLOAT16) {
    elem = 2;
  } else if (p.dtype == PGK_FLOAT32) {
    // FP32-accurate results are another family's.
    if (p.precision != Precision::Tf32) return false;
    elem = 4;
  } else {
    return false;
  }
  if (p.m < 1 || p.n < 1 || p.k < 1 || p.batch < 1) return false;
  const int64_t align = 16 / elem;  // TMA: 16-byte base addresses and strides
  auto aligned_ptr = [](const void* q) { return (reinterpret_cast<uintptr_t>(q) & 15u) == 0; };
  if (!aligned_ptr(p.a) || !aligned_ptr(p.b) || !aligned_ptr(p.c)) return false;
  if (p.lda % align || p.ldb % align || p.ldc % align) return false;
  if (p.lda < p.k || p.ldc < p.n || p.ldb < (p.b_col_major ? p.k : p.n)) return false;
  // TMA global strides must be < 2^40 bytes.
  const int64_t lim = (int64_t(1) << 40) / elem;
  if (p.lda >= lim || p.ldb >= lim || p.ldc >= lim) return false;
  if (p.batch > 1) {
    // A zero (broadcast) batch stride cannot be expressed as a run-time TMA stride; dispatch folds
    // or falls back.
    if (p.batch_stride_a <= 0 || p.batch_stride_b <= 0 || p.batch_stride_c <= 0) return false;
    if (p.batch_stride_a % align || p.batch_stride_b % align || p.batch_stride_c % align) return false;
    if (p.batch_stride_a >= lim || p.batch_stride_b >= lim || p.batch_stride_c >= lim) return false;
  }
  return true;
}

// ---- 16-bit: the measured shape table ---------------------------------------------------------
enum Cfg16 : uint8_t { kA = 0, kB = 1, kC = 2, kD = 3, kE = 4, kCfg16Count = 5 };

struct Config16 {
  KernelFn fn[2][2];  // [bfloat16][B column-major]
  const char* name[2][2];
};

// Kernel names (pgk_gemm_last_kernel): sm90_<dtype>_<tile>_<cluster>_<coop|pp>_<kn|nk>[_t], the
// tile in the kernel's terms and "_t" marking the transposed (swapped) problem, as TF32's
// row-major-B kernels are named.
#define PGK_SM90_STR_(x) #x
#define PGK_SM90_STR(x) PGK_SM90_STR_(x)
#define PGK_SM90_SCHED_false coop
#define PGK_SM90_SCHED_true pp
#define PGK_SM90_SUFFIX_false ""
#define PGK_SM90_SUFFIX_true "_t"
#define PGK_SM90_NAME(dt, TM, TN, TK, CM, CN, PP, SW, lay)                                        \
  "sm90_" #dt "_" #TM "x" #TN "x" #TK "_c" #CM "x" #CN "_" PGK_SM90_STR(PGK_SM90_SCHED_##PP) "_" #lay \
      PGK_SM90_SUFFIX_##SW
#define PGK_SM90_CONFIG16_ROW(code, name, TM, TN, TK, CM, CN, PP, SW)                            \
  Config16{{{f16_##name##_kn, f16_##name##_nk}, {bf16_##name##_kn, bf16_##name##_nk}},            \
           {{PGK_SM90_NAME(f16, TM, TN, TK, CM, CN, PP, SW, kn),                                  \
             PGK_SM90_NAME(f16, TM, TN, TK, CM, CN, PP, SW, nk)},                                 \
            {PGK_SM90_NAME(bf16, TM, TN, TK, CM, CN, PP, SW, kn),                                 \
             PGK_SM90_NAME(bf16, TM, TN, TK, CM, CN, PP, SW, nk)}}},

const Config16 kConfigs16[kCfg16Count] = {PGK_SM90_CONFIGS16(PGK_SM90_CONFIG16_ROW)};

// The shape -> configuration tables: M in {64, 128, ..., 4096} (rows) x N in {1024, ..., 8192}
// (columns), each cell the fastest of the five configurations, data-parallel, for float16 with a
// row-major B and K = N: by device time (CUDA graph of 10 products) where the products are short
// enough to be launch-bound, else by stream time.  One table per GPU model probed, each generated
// by
//     python benchmarks/probe_gemm_configs.py table --json benchmarks/gemm_probe/results-<gpu>.json
// from a probe run on that GPU (driver 580.159.04), the probe built from the library's kernel
// template.  The H100 run (2026-11-28, commit 058c1a2's template) also measured the neighbours of
// these cells (split-K 2..8, stream-K, other clusters and tiles): none of them beat the cell's
// choice on these shapes by more than the run-to-run spread.
using Table16 = uint8_t[7][4];
constexpr Table16 kTable16H100 = {
    {kD, kD, kD, kD},  // M = 64
    {kD, kD, kD, kE},  // M = 128
    {kD, kD, kC, kB},  // M = 256
    {kD, kE, kB, kA},  // M = 512
    {kE, kB, kA, kA},  // M = 1024
    {kB, kA, kA, kA},  // M = 2048
    {kB, kA, kA, kA},  // M = 4096
};
// The H200 run (2026-11-28, the template as at 2145cda): the ping-pong 128x128 tile (kB) wins at
// N = K = 2048 for M >= 2048 (2048^3: 97.6% of cuBLAS against 93.3% for kA; the H100 measured
// 91.9% against 93.2%), the 64-row cooperative swapped tile (kC) at 512x2048 and 1024x1024.
constexpr Table16 kTable16H200 = {
    {kD, kD, kD, kD},  // M = 64
    {kD, kD, kD, kE},  // M = 128
    {kD, kD, kC, kB},  // M = 256
    {kD, kC, kB, kA},  // M = 512
    {kC, kB, kA, kA},  // M = 1024
    {kB, kB, kA, kA},  // M = 2048
    {kB, kB, kA, kA},  // M = 4096
};

// Whether the current device's name says H200 (the H200 and the GH200, both HBM3e parts of 132
// SMs): the tunings measured there (the shape table below, few-row products) apply; every other
// sm_90 part keeps the H100's.  Cached per device: plan_for asks on every plan-cache miss.
bool is_h200() {
  static DeviceCache cache = {};  // 1 no, 2 yes
  return cached_per_device(cache, current_device(), [](int d) {
           cudaDeviceProp prop;
           if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
             cudaGetLastError();
             return 1;
           }
           return std::strstr(prop.name, "H200") != nullptr ? 2 : 1;
         }) == 2;
}

const Table16& table16() { return is_h200() ? kTable16H200 : kTable16H100; }

// Nearest table index of v on a log2 scale: lo -> 0, lo*2 -> 1, ..., clamped to [0, count).
int bucket(int64_t v, int lo_log2, int count) {
  int i = 0;
  // Round log2(v) to the nearest integer: compare v with 2^(e + 0.5) ~ 1.41421 * 2^e.
  while (i + 1 < count && double(v) >= 1.4142135623730951 * double(int64_t(1) << (lo_log2 + i))) ++i;
  return i;
}

Choice choose16(const Problem& p, int sms) {
  const bool bf16 = p.dtype == PGK_BFLOAT16;
  // A batch of products is scheduled like one product with batch times the rows.
  const int64_t m = int64_t(p.m) * p.batch;
  int code = table16()[bucket(m, 6, 7)][bucket(p.n, 10, 4)];
  RunOpts o{};
  // Few output tiles and a long K loop (beyond the probe's shapes, where data-parallel won):
  // the cooperative swapped kernel with K split so the tiles about fill the machine.  The
  // reduction goes through the workspace in a fixed order (deterministic).
  const int64_t tiles_d = cdiv(p.n, 64) * cdiv(p.m, 64) * p.batch;
  if (tiles_d * 4 <= sms && p.k >= 8192) {
    const int64_t tiles_e = cdiv(p.n, 128) * cdiv(p.m, 64) * p.batch;
    int64_t s = sms / tiles_e;
    if (s > 4) s = 4;
    if (s > p.k / 2048) s = p.k / 2048;
    if (s >= 2) {
      code = kE;
      o.decomposition = 2;
      o.splits = int(s);
    }
  }
  if (g_force_config >= 1 && g_force_config <= kCfg16Count) code = g_force_config - 1;
  const Config16& c = kConfigs16[code];
  return Choice{c.fn[bf16][p.b_col_major], c.name[bf16][p.b_col_major], o};
}

// ---- TF32 -------------------------------------------------------------------------------------
struct FamilyTf32 {
  KernelFn t256, t128;
  const char *n256, *n128;
  bool transposed = false;  // the kernels run C^T = B^T A^T: their M is our N
};

Choice choose_tf32(const Problem& p, int sms) {
  const FamilyTf32 f =
      p.b_col_major
          ? FamilyTf32{tf32_t256_nk, tf32_t128_nk, "sm90_tf32_128x256x32_c2x1_coop_nk",
                       "sm90_tf32_128x128x32_c1x2_coop_nk"}
          : FamilyTf32{tf32_t256_kn, tf32_t128_kn, "sm90_tf32_128x256x32_c2x1_coop_kn_t",
                       "sm90_tf32_128x128x32_c1x1_coop_kn_t", true};
  // The kernel's own M and N (swapped for a transposed family).
  const int64_t km = f.transposed ? p.n : p.m, kn = f.transposed ? p.m : p.n;
  // CTAs per configuration (tiles rounded up to whole clusters: the 2x1 cluster of the 128x256
  // tile pairs M tiles, the 1x2 cluster of the 128x128 tile pairs N tiles; the transposed
  // 128x128 tile has no cluster).
  const int64_t ctas256 = cdiv(cdiv(km, 128), 2) * 2 * cdiv(kn, 256) * p.batch;
  const int64_t ctas128 =
      cdiv(km, 128) * (f.transposed ? cdiv(kn, 128) : cdiv(cdiv(kn, 128), 2) * 2) * p.batch;
  // Estimated time = waves x time of one tile; a 128x256 tile costs ~1.8 128x128 tiles (measured
  // on an H200: the wide tile runs ~12% faster per flop).
  const double t256 = double(cdiv(ctas256, sms)) * 1.8;
  const double t128 = double(cdiv(ctas128, sms));
  bool wide = t256 <= t128;
  if (g_force_config == 1) wide = true;
  if (g_force_config == 2) wide = false;
  Choice c;
  c.fn = wide ? f.t256 : f.t128;
  c.name = wide ? f.n256 : f.n128;
  // Data-parallel: stream-K and split-K measured slower whenever the output tiles reach about
  // one wave (H200), and the 2026-11-28 probe on an H100 found split-K and stream-K slower at
  // 2048^3 too.  At four waves and more of 128x256 tiles the transposed kernel without a cluster
  // and with a swizzled raster (4) ran faster in that probe: 8192^3 at 92% of cuBLAS against 85%
  // (cluster 2x1, no swizzle; bench_matmul at 89eed35 on an H100: 83%); at 4096^3 (3.9 waves)
  // the 2x1 cluster stays ahead (90% against 73% for the unswizzled c1x1).
  const bool huge = f.transposed && wide && ctas256 >= 4 * int64_t(sms);
  if ((huge && g_force_config == 0) || (f.transposed && g_force_config == 3)) {
    c.fn = tf32_t256c1_kn;
    c.name = "sm90_tf32_128x256x32_c1x1_coop_kn_t";
    c.opts.swizzle = 4;
  }
  return c;
}

// ---- a few rows, row-major B -------------------------------------------------------------------
// 2 <= m <= 16 rows against a large row-major 16-bit B (a decoding step's weight) with enough
// 256-column tiles to occupy ~30% of the SMs: the TMA ping-pong 64x256 kernel rather than the
// streaming mma.sync kernels (gemv_half.cu).  Those hold 128 bytes per thread in flight in
// registers and slow down with the SM clocks: right after 1 s of big products (the GPU at its
// power limit) they fall to 70-84% of cuBLAS where this kernel holds 82-96% (float16 on an H200,
// k = 4096: n = 11008, 12288, 14336, 16384, 28672; and 14336 x 8192).  Rested, the streaming
// kernels are ahead by up to 12 points at n <= 16384.  With fewer tiles the TMA kernel leaves
// SMs idle: n = 8192 (32 tiles) 62-69% against 82-104%; n = 4096, k = 14336: 40-47% against
// 78-92%.  One row stays with the streaming kernel (rested 33.6 us against 36.5 us; hot 40.3
// against 38.1 us).  Only on the H200, where that was measured: on an H100 the streaming
// kernels ran these rows at 107-111% of cuBLAS (benchmarks/results/matmul-h100.json).
bool small_m(const Problem& p) {
  static const bool on = tune_knob("PGK_TUNE_SMALL_M", 1, 0, 1) == 1;  // probes: 0 = off
  if (!on || (p.dtype != PGK_FLOAT16 && p.dtype != PGK_BFLOAT16) || p.b_col_major ||
      p.batch != 1 || p.m < 2 || p.m > 16 || int64_t(p.n) * p.k < (int64_t(1) << 25)) {
    return false;
  }
  const int64_t tiles = (int64_t(p.n) + 255) / 256;
  return tiles * 10 >= int64_t(current_sm_count(132)) * 3 && is_h200();
}

Choice choose(const Problem& p) {
  if (small_m(p) && g_force_config == 0) {
    const bool bf16 = p.dtype == PGK_BFLOAT16;
    return Choice{bf16 ? bf16_s_kn : f16_s_kn,
                  bf16 ? "sm90_bf16_64x256x64_c1x1_pp_kn" : "sm90_f16_64x256x64_c1x1_pp_kn", {}};
  }
  const int sms = current_sm_count(132);
  Choice c = p.dtype == PGK_FLOAT32 ? choose_tf32(p, sms) : choose16(p, sms);
  if (g_force_has_opts) c.opts = g_force_opts;
  return c;
}

// Per-thread plan cache: the choice and its workspace size per problem shape, so that the two
// calls of a product (pgk_gemm_workspace_size, pgk_gemm) cost a lookup each.
struct PlanKey {
  int dev, dtype, b_col_major, precision, m, n, k, batch, gen;
};
struct Plan {
  PlanKey key;
  Choice choice;
  size_t need;
  bool valid;
};

// nullptr if the kernel's workspace query fails (then the family declines the problem).
const Plan* plan_for(const Problem& p) {
  PlanKey key;
  std::memset(&key, 0, sizeof(key));
  if (cudaGetDevice(&key.dev) != cudaSuccess) return nullptr;
  key.dtype = p.dtype;
  key.b_col_major = p.b_col_major;
  key.precision = int(p.precision);
  key.m = p.m;
  key.n = p.n;
  key.k = p.k;
  key.batch = p.batch;
  key.gen = g_force_gen;
  constexpr int kEntries = 8;
  thread_local Plan cache[kEntries] = {};
  thread_local int next = 0;
  for (const Plan& c : cache)
    if (c.valid && std::memcmp(&c.key, &key, sizeof(key)) == 0) return &c;
  Plan& e = cache[next];
  next = (next + 1) % kEntries;
  e.valid = false;
  e.key = key;
  e.choice = choose(p);
  // The workspace size depends on the shape and options only, not on the operands.
  if (e.choice.fn(p, e.choice.opts, nullptr, 0, nullptr, &e.need) != cudaSuccess) return nullptr;
  e.valid = true;
  return &e;
}

}  // namespace

void force_config(int config, const RunOpts* opts) {
  g_force_config = config;
  g_force_has_opts = opts != nullptr;
  if (opts) g_force_opts = *opts;
  ++g_force_gen;
}

}  // namespace sm90

bool sm90_takes_small_m(const Problem& p) {
  return current_sm() == 90 && sm90::supported(p) && sm90::small_m(p);
}

size_t sm90_workspace_bytes(const Problem& p) {
  if (current_sm() != 90 || !sm90::supported(p)) return 0;
  const sm90::Plan* plan = sm90::plan_for(p);
  return plan ? plan->need : 0;
}

cudaError_t sm90_gemm(const Problem& p, void* workspace, size_t workspace_bytes, cudaStream_t s) {
  // sm_90a SASS runs on compute capability 9.0 only.
  if (current_sm() != 90) return cudaErrorNotSupported;
  if (!sm90::supported(p)) return cudaErrorNotSupported;
  const sm90::Plan* plan = sm90::plan_for(p);
  if (plan == nullptr) return cudaErrorNotSupported;
  const sm90::Choice c = plan->choice;
  cudaError_t e = c.fn(p, c.opts, workspace, workspace_bytes, s, nullptr);
  if (e == cudaSuccess) note_kernel(c.name);
  return e;
}

}  // namespace pgk::gemm
