// Hopper (sm_90a) GEMM family: checks, configuration choice by shape, and the entry points
// pgk::gemm::sm90_gemm / sm90_workspace_bytes.  The kernels live in sm90_k_*.cu (CUTLASS 3,
// see sm90_gemm_kernel.cuh); this file includes no CUTLASS header.
#include <cstdint>

#include "gemm_problem.cuh"
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

// Test hook state (probe / benchmarks only).
int g_force_tile = 0;
RunOpts g_force_opts{};
bool g_force_has_opts = false;

inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int sm_count_cached() {
  static int cached[64] = {0};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return 0;
  if (cached[dev] == 0) {
    int n = 0;
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 0;
    cached[dev] = n;
  }
  return cached[dev];
}

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

struct Family {
  KernelFn t256, t128;
  const char *n256, *n128;
  bool transposed = false;  // the kernels run C^T = B^T A^T: their M is our N
};

Family family_of(const Problem& p) {
  if (p.dtype == PGK_FLOAT16) {
    return p.b_col_major
               ? Family{f16_t256_nk, f16_t128_nk, "sm90_f16_128x256x64_c2x1_coop_nk",
                        "sm90_f16_128x128x64_c1x2_coop_nk"}
               : Family{f16_t256_kn, f16_t128_kn, "sm90_f16_128x256x64_c2x1_coop_kn",
                        "sm90_f16_128x128x64_c1x2_coop_kn"};
  }
  if (p.dtype == PGK_BFLOAT16) {
    return p.b_col_major
               ? Family{bf16_t256_nk, bf16_t128_nk, "sm90_bf16_128x256x64_c2x1_coop_nk",
                        "sm90_bf16_128x128x64_c1x2_coop_nk"}
               : Family{bf16_t256_kn, bf16_t128_kn, "sm90_bf16_128x256x64_c2x1_coop_kn",
                        "sm90_bf16_128x128x64_c1x2_coop_kn"};
  }
  return p.b_col_major
             ? Family{tf32_t256_nk, tf32_t128_nk, "sm90_tf32_128x256x32_c2x1_coop_nk",
                      "sm90_tf32_128x128x32_c1x2_coop_nk"}
             : Family{tf32_t256_kn, tf32_t128_kn, "sm90_tf32_128x256x32_c2x1_coop_kn_t",
                      "sm90_tf32_128x128x32_c1x1_coop_kn_t", true};
}

// Configuration by shape.  Both tiles run on the stream-K scheduler: data-parallel when the
// output tiles fill the machine, stream-K when they are fewer than the SMs (small M or N).
Choice choose(const Problem& p) {
  const Family f = family_of(p);
  const int sms = sm_count_cached() > 0 ? sm_count_cached() : 132;
  // The kernel's own M and N (swapped for a transposed family).
  const int64_t km = f.transposed ? p.n : p.m, kn = f.transposed ? p.m : p.n;
  // CTAs per configuration (tiles rounded up to whole clusters: the 2x1 cluster of the 128x256
  // tile pairs M tiles, the 1x2 cluster of the 128x128 tile pairs N tiles; the transposed
  // 128x128 tile has no cluster).
  const int64_t ctas256 = cdiv(cdiv(km, 128), 2) * 2 * cdiv(kn, 256) * p.batch;
  const int64_t ctas128 =
      cdiv(km, 128) * (f.transposed ? cdiv(kn, 128) : cdiv(cdiv(kn, 128), 2) * 2) * p.batch;
  // Estimated time = waves x time of one tile; a 128x256 tile costs ~1.8 128x128 tiles (measured
  // on an H200: the wide tile runs ~12% faster per flop).  Small M favours 128x128: the 2x1
  // cluster would spend half its CTAs on an empty M tile.
  const double t256 = double(cdiv(ctas256, sms)) * 1.8;
  const double t128 = double(cdiv(ctas128, sms));

  Choice c;
  const bool wide = t256 <= t128;
  c.fn = wide ? f.t256 : f.t128;
  c.name = wide ? f.n256 : f.n128;
  c.opts = RunOpts{};
  // Data-parallel (persistent) decomposition by default: stream-K and split-K measured slower
  // whenever the output tiles reach about one wave (2048^3; M=128, N=14336: 112 CTAs), and
  // split-K also for short K loops (1024^3: -18%).  With at most half a wave of output tiles and
  // K >= 2048, split K in two (deterministic reduction through the workspace; +11..24% on an
  // H200 for 64..512 x 4096..8192 x 4096..8192; 4-way measured no better).  Without enough
  // workspace the kernel falls back to data-parallel.
  c.opts.decomposition = 1;
  c.opts.splits = 1;
  const int64_t ctas = wide ? ctas256 : ctas128;
  if (ctas * 2 <= sms && p.k >= 2048) {
    c.opts.decomposition = 2;
    c.opts.splits = 2;
  }
  c.opts.swizzle = 1;
  c.opts.raster = 0;

  if (g_force_tile == 1) {
    c.fn = f.t256;
    c.name = f.n256;
  } else if (g_force_tile == 2) {
    c.fn = f.t128;
    c.name = f.n128;
  }
  if (g_force_has_opts) c.opts = g_force_opts;
  return c;
}

}  // namespace

void force_config(int tile, const RunOpts* opts) {
  g_force_tile = tile;
  g_force_has_opts = opts != nullptr;
  if (opts) g_force_opts = *opts;
}

}  // namespace sm90

size_t sm90_workspace_bytes(const Problem& p) {
  if (current_sm() != 90 || !sm90::supported(p)) return 0;
  const sm90::Choice c = sm90::choose(p);
  size_t need = 0;
  if (c.fn(p, c.opts, nullptr, 0, nullptr, &need) != cudaSuccess) return 0;
  return need;
}

cudaError_t sm90_gemm(const Problem& p, void* workspace, size_t workspace_bytes, cudaStream_t s) {
  // sm_90a SASS runs on compute capability 9.0 only.
  if (current_sm() != 90) return cudaErrorNotSupported;
  if (!sm90::supported(p)) return cudaErrorNotSupported;
  const sm90::Choice c = sm90::choose(p);
  cudaError_t e = c.fn(p, c.opts, workspace, workspace_bytes, s, nullptr);
  if (e == cudaSuccess) note_kernel(c.name);
  return e;
}

}  // namespace pgk::gemm
