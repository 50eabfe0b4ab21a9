// Hopper (sm_90a) FP8 GEMM family: configuration choice by shape and the entry point
// pgk::gemm::sm90_fp8_gemm.  The kernels live in sm90_k_fp8_*.cu (CUTLASS 3, see
// sm90_fp8_kernel.cuh); this file includes no CUTLASS header.
#include <atomic>
#include <cstdint>

#include "gemm_problem.cuh"
#include "pygpukit_kernels.h"
#include "sm90_fp8_configs.cuh"

namespace pgk::gemm {
namespace sm90fp8 {
namespace {

std::atomic<int> g_force{0};  // test hook (pgk_gemm_fp8_force_config)

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

struct Entry {
  Fp8KernelFn bf16, f16, f32;
  const char *nbf16, *nf16, *nf32;
};

#define PGK_FP8_ENTRY(cfg, ab, desc)                                                   \
  Entry {                                                                              \
    fp8_##cfg##_##ab##_bf16, fp8_##cfg##_##ab##_f16, fp8_##cfg##_##ab##_f32,           \
        "sm90_fp8_" #ab "_" desc "_bf16", "sm90_fp8_" #ab "_" desc "_f16",               \
        "sm90_fp8_" #ab "_" desc "_f32"                                                  \
  }

const Entry kL = PGK_FP8_ENTRY(l, e4e4, "128x256x128_c2x1_coop");
const Entry kM = PGK_FP8_ENTRY(m, e4e4, "128x128x128_c1x1_pp");
const Entry kS = PGK_FP8_ENTRY(s, e4e4, "64x64x128_c1x1_pp_t");
const Entry kM45 = PGK_FP8_ENTRY(m, e4e5, "128x128x128_c1x1_pp");
const Entry kM54 = PGK_FP8_ENTRY(m, e5e4, "128x128x128_c1x1_pp");

// e4m3 x e4m3 by shape, from the probe on an NVIDIA H200 (benchmarks/probe_fp8_configs.py,
// its output in benchmarks/gemm_probe/fp8-probe-h200.json;
// 2026-11-28, % of torch._scaled_mm per configuration l / m / s):
//   M = 1: 78 / 95 / 98; 16: 77 / 86 / 93; 64: 79 / 104 / 126; 128: 93 / 121 / 108;
//   256: 90 / 89 / 72; 512: 96 / 99 / 61; 1024: 82 / 95 / 46; 2048: 98 / 104 / 50;
//   4096: 87 / 95 / 46 (N = 14336, K = 4096); 4096^3: 98 / 100 / 50; 8192^3: 83 / 76 / 39.
// So: the swapped 64x64 kernel up to M = 64 (our M along its 64-wide N), the 128x128 ping-pong
// kernel from there on, and the cooperative 128x256 kernel (cluster 2x1) only for long K with
// many waves of tiles (8192^3).
const Entry& choose_e4e4(const Fp8Problem& p, int sms) {
  const int forced = g_force.load(std::memory_order_relaxed);
  if (forced == 1) return kL;
  if (forced == 2) return kM;
  if (forced == 3) return kS;
  if (p.m <= 64) return kS;
  const int64_t tiles_l = cdiv(cdiv(p.m, 128), 2) * 2 * cdiv(p.n, 256);
  if (p.k >= 8192 && tiles_l >= 4 * int64_t(sms)) return kL;
  return kM;
}

}  // namespace

void force_config(int config) { g_force.store(config, std::memory_order_relaxed); }

}  // namespace sm90fp8

// cudaErrorNotSupported for anything this family cannot run (arch, dtypes, alignment).
cudaError_t sm90_fp8_gemm(const sm90fp8::Fp8Problem& p, cudaStream_t s) {
  using namespace sm90fp8;
  if (current_sm() != 90) return cudaErrorNotSupported;
  // TMA: 16-byte aligned base addresses and row strides.
  auto aligned16 = [](const void* q) { return (reinterpret_cast<uintptr_t>(q) & 15u) == 0; };
  const int64_t out_size = p.out_dtype == PGK_FLOAT32 ? 4 : 2;
  if (!aligned16(p.a) || !aligned16(p.b) || !aligned16(p.c)) return cudaErrorNotSupported;
  if (p.lda % 16 || p.ldb % 16 || (p.ldc * out_size) % 16) return cudaErrorNotSupported;
  const Entry* e = nullptr;
  const bool a4 = p.a_dtype == PGK_FLOAT8_E4M3FN, b4 = p.b_dtype == PGK_FLOAT8_E4M3FN;
  if (a4 && b4) {
    const int sms = sm_count_cached() > 0 ? sm_count_cached() : 132;
    e = &choose_e4e4(p, sms);
  } else if (a4) {
    e = &kM45;
  } else if (b4) {
    e = &kM54;
  } else {
    return cudaErrorNotSupported;  // e5m2 x e5m2: no FP8 WGMMA for it in torch's set either
  }
  Fp8KernelFn fn = p.out_dtype == PGK_BFLOAT16 ? e->bf16 : p.out_dtype == PGK_FLOAT16 ? e->f16 : e->f32;
  const char* name =
      p.out_dtype == PGK_BFLOAT16 ? e->nbf16 : p.out_dtype == PGK_FLOAT16 ? e->nf16 : e->nf32;
  cudaError_t err = fn(p, s);
  if (err == cudaSuccess) note_kernel(name);
  return err;
}

}  // namespace pgk::gemm
