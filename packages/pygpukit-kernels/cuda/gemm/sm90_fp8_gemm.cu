// Hopper (sm_90a) FP8 GEMM family: configuration choice by shape and the entry point
// pgk::gemm::sm90_fp8_gemm.  The kernels live in sm90_k_fp8_*.cu (CUTLASS 3, see
// sm90_fp8_kernel.cuh); this file includes no CUTLASS header.
#include <atomic>
#include <cstdint>

#include "gemm_problem.cuh"
#include "launch_utils.cuh"
#include "pygpukit_kernels.h"
#include "sm90_fp8_configs.cuh"

namespace pgk::gemm {
namespace sm90fp8 {

// Configurations "w" (sm90_k_fp8_w.cu: cooperative 128x224x128) and "t" (sm90_k_fp8_t.cu:
// cooperative 128x32x128 swapped), cluster 1x1, e4m3 x e4m3.  Declared here, their only caller,
// rather than in sm90_fp8_configs.cuh: that header is included by every FP8 kernel translation
// unit (sm_90a and mma.sync), which a declaration added there would all recompile.
PGK_FP8_DECLARE(fp8_w_e4e4_bf16);
PGK_FP8_DECLARE(fp8_w_e4e4_f16);
PGK_FP8_DECLARE(fp8_w_e4e4_f32);
PGK_FP8_DECLARE(fp8_t_e4e4_bf16);
PGK_FP8_DECLARE(fp8_t_e4e4_f16);
PGK_FP8_DECLARE(fp8_t_e4e4_f32);

namespace {

std::atomic<int> g_force{0};  // test hook (pgk_gemm_fp8_force_config)

inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }


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
const Entry kW = PGK_FP8_ENTRY(w, e4e4, "128x224x128_c1x1_coop");
const Entry kT = PGK_FP8_ENTRY(t, e4e4, "128x32x128_c1x1_coop_t");
const Entry kM45 = PGK_FP8_ENTRY(m, e4e5, "128x128x128_c1x1_pp");
const Entry kM54 = PGK_FP8_ENTRY(m, e5e4, "128x128x128_c1x1_pp");

// Share of the SM slots the tiles fill over their waves (1 = whole waves).
double wave_fill(int64_t tiles, int sms) {
  return double(tiles) / double(cdiv(tiles, sms) * sms);
}

// e4m3 x e4m3 by shape, from the probe on an NVIDIA H200 (benchmarks/probe_fp8_configs.py,
// its output in benchmarks/gemm_probe/fp8-probe-h200.json; 2026-11-28, CUDA events, % of
// torch._scaled_mm per configuration l / m / s / w / t, N = 14336, K = 4096 unless noted):
//   M = 1: 57 / 73 / 83 / 76 / 110; 8: 56 / 70 / 81 / 70 / 101; 16: 67 / 73 / 85 / 75 / 106;
//   32: 58 / 69 / 84 / 73 / 102; 64: 79 / 93 / 112 / 89 / 112; 128: 76 / 97 / 88 / 83 / 78;
//   256: 98 / 96 / 79 / 103 / 67; 512: 97 / 99 / 60 / 107 / 63; 1024: 84 / 95 / 46 / 94 / 52;
//   2048: 96 / 100 / 48 / 95 / 48; 4096: 95 / 99 / 49 / 91 / 31;
//   4096^3: 98 / 99 / 51 / 87 / 34; 8192^3: 90 / 74 / 37 / 86 / 28.
// CUPTI kernel device times (us, ours / torch's): M = 1: t 16.6 / 16.7; 8: t 16.9 / 16.3;
// 16: t 16.9 / 16.3; 32: t 17.1 / 16.4; 64: s 18.5, t 18.2 / 17.5; 128: m 19.9 / 18.7;
// 256: w 25.4, m 27.2 / 22.7; 512: w 43.8, m 47.3 / 46.5.
// Since the kernels launch with PDL (sm90_fp8_kernel.cuh), a stream of products overlaps each
// one's set-up with the previous one's tail: the probe's heuristic column, PDL on / off
// (PGK_TUNE_PDL=0) in one session, M = 1: 108 / 102; 16: 110 / 101; 128: 106 / 96;
// 256: 98 / 92; 512: 112 / 107.  A 2x1 cluster on the 128x224 tile (the weight tile multicast
// to both M-tiles) was measured too and ran as the 1x1 kernel (M = 256: 91.9 / 96.6% against
// 91.8 / 96.2% in two probes): not kept.
// So: the swapped 128x32 kernel up to M = 32 (112 tiles of 128 weight rows: one wave; the
// swapped 64x64 kernel has 224), the swapped 64x64 kernel up to M = 64, the 128x224 kernel where
// its tiles fill the waves clearly better than 128x128 tiles (M = 256, 512), the 128x128
// ping-pong kernel otherwise, and the cooperative 128x256 kernel (cluster 2x1) only for long K
// with many waves of tiles (8192^3).
const Entry& choose_e4e4(const Fp8Problem& p, int sms) {
  const int forced = g_force.load(std::memory_order_relaxed);
  if (forced == 1) return kL;
  if (forced == 2) return kM;
  if (forced == 3) return kS;
  if (forced == 4) return kW;
  if (forced == 5) return kT;
  if (p.m <= 32) return kT;
  if (p.m <= 64) return kS;
  // 128x224 tiles where they fill the waves clearly better than 128x128 tiles (M = 256,
  // N = 14336: 128 tiles, 97% of one wave, vs 224 tiles, 85% of two).
  const int64_t tiles_m = cdiv(p.m, 128) * cdiv(p.n, 128);
  const int64_t tiles_w = cdiv(p.m, 128) * cdiv(p.n, 224);
  if (wave_fill(tiles_w, sms) > wave_fill(tiles_m, sms) + 0.05) return kW;
  const int64_t tiles_l = cdiv(cdiv(p.m, 128), 2) * 2 * cdiv(p.n, 256);
  if (p.k >= 8192 && tiles_l >= 4 * int64_t(sms)) return kL;
  return kM;
}

}  // namespace

// The sm_90a family's codes (fp8.cu maps pgk_gemm_fp8_force_config's onto them): 1 l, 2 m, 3 s,
// 4 w, 5 t.
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
    const int sms = current_sm_count(132);
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
