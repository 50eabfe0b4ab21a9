// FP8 (float8_e4m3fn, float8_e5m2): the scaled cast kernel (pgk_fp8_cast) and the FP8 matrix
// product's C ABI (pgk_gemm_fp8): the sm_90a TMA/WGMMA family on compute capability 9.0, the
// small-M streaming kernel (sm_89+) for m <= 16 elsewhere (and on 9.0 for what the sm_90a family
// declines), the mma.sync tile family (sm_89+) on 8.9, 10.x and 12.x and for what the others
// decline.
// Built for every arch of the build: cuda_fp8.h converts in hardware on sm_89+ and in software
// before.
#include <atomic>
#include <climits>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include "gemm/gemm_problem.cuh"
#include "gemm/sm89_fp8_configs.cuh"
#include "gemm/sm89_fp8_gemv.cuh"
#include "gemm/sm90_fp8_configs.cuh"
#include "pygpukit_kernels.h"

namespace pgk::gemm {
// dispatch.cu: pgk_gemm_last_kernel() then names the kernel the launch noted (note_kernel).
void publish_kernel(bool success);
}  // namespace pgk::gemm

namespace {

__host__ __device__ bool is_fp8(int dt) { return dt == PGK_FLOAT8_E4M3FN || dt == PGK_FLOAT8_E5M2; }
bool is_wide_float(int dt) {
  return dt == PGK_FLOAT16 || dt == PGK_BFLOAT16 || dt == PGK_FLOAT32 || dt == PGK_FLOAT64;
}
int wide_size(int dt) { return dt == PGK_FLOAT64 ? 8 : dt == PGK_FLOAT32 ? 4 : 2; }

__device__ __forceinline__ __nv_fp8_interpretation_t interp(int dt) {
  return dt == PGK_FLOAT8_E4M3FN ? __NV_E4M3 : __NV_E5M2;
}

// Exact widening of an FP8 value to float32 (every FP8 value is a float16 value).
__device__ __forceinline__ float fp8_to_f32(uint8_t v, int dt) {
  const __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(v), interp(dt));
  return __half2float(__half(h));
}

__device__ __forceinline__ float load_f32(const void* src, int dt, int64_t i) {
  switch (dt) {
    case PGK_FLOAT16: return __half2float(static_cast<const __half*>(src)[i]);
    case PGK_BFLOAT16: return __bfloat162float(static_cast<const __nv_bfloat16*>(src)[i]);
    case PGK_FLOAT32: return static_cast<const float*>(src)[i];
    default: return static_cast<float>(static_cast<const double*>(src)[i]);
  }
}

__device__ __forceinline__ void store_wide(void* dst, int dt, int64_t i, float x) {
  switch (dt) {
    case PGK_FLOAT16: static_cast<__half*>(dst)[i] = __float2half_rn(x); break;
    case PGK_BFLOAT16: static_cast<__nv_bfloat16*>(dst)[i] = __float2bfloat16_rn(x); break;
    case PGK_FLOAT32: static_cast<float*>(dst)[i] = x; break;
    default: static_cast<double*>(dst)[i] = static_cast<double>(x); break;
  }
}

// One element per thread per step of a grid-stride loop.  scale (device, float32) is null, one
// value (row_len 0) or one value per row of row_len elements.
__global__ void fp8_cast_kernel(const void* __restrict__ src, int sdt, void* __restrict__ dst,
                                int ddt, int64_t n, const float* __restrict__ scale,
                                int64_t row_len, int saturate) {
  const __nv_saturation_t sat = saturate ? __NV_SATFINITE : __NV_NOSAT;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float s = scale == nullptr ? 1.f : scale[row_len > 0 ? i / row_len : 0];
    if (is_fp8(ddt)) {
      __nv_fp8_storage_t q;
      if (is_fp8(sdt)) {
        q = __nv_cvt_float_to_fp8(fp8_to_f32(static_cast<const uint8_t*>(src)[i], sdt) / s, sat,
                                  interp(ddt));
      } else if (sdt == PGK_FLOAT64 && scale == nullptr) {
        // Unscaled float64: one rounding, from the double (as ml_dtypes).
        q = __nv_cvt_double_to_fp8(static_cast<const double*>(src)[i], sat, interp(ddt));
      } else {
        q = __nv_cvt_float_to_fp8(load_f32(src, sdt, i) / s, sat, interp(ddt));
      }
      static_cast<uint8_t*>(dst)[i] = static_cast<uint8_t>(q);
    } else {
      const float x = fp8_to_f32(static_cast<const uint8_t*>(src)[i], sdt);
      store_wide(dst, ddt, i, scale == nullptr ? x : x * s);
    }
  }
}

}  // namespace

extern "C" PGK_API int pgk_fp8_cast(const void* src, int src_dtype, void* dst, int dst_dtype,
                                    int64_t n, const float* scale, int64_t row_len, int saturate,
                                    void* stream) {
  const bool to8 = is_fp8(dst_dtype), from8 = is_fp8(src_dtype);
  if (!(to8 || from8)) return cudaErrorInvalidValue;
  if (!(to8 ? (from8 || is_wide_float(src_dtype)) : is_wide_float(dst_dtype)))
    return cudaErrorInvalidValue;
  if (n < 0 || row_len < 0 || (saturate != 0 && saturate != 1)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  if (src == nullptr || dst == nullptr) return cudaErrorInvalidValue;
  if (row_len > 0 && (scale == nullptr || n % row_len != 0)) return cudaErrorInvalidValue;
  const int ss = from8 ? 1 : wide_size(src_dtype), ds = to8 ? 1 : wide_size(dst_dtype);
  if (reinterpret_cast<uintptr_t>(src) % ss || reinterpret_cast<uintptr_t>(dst) % ds ||
      reinterpret_cast<uintptr_t>(scale) % 4)
    return cudaErrorInvalidValue;
  const int threads = 256;
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks > 65535LL * 16) blocks = 65535LL * 16;
  fp8_cast_kernel<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(
      src, src_dtype, dst, dst_dtype, n, scale, row_len, saturate);
  return static_cast<int>(cudaGetLastError());
}

// Which FP8 product families the build has (CMakeLists.txt defines both; 0 when absent).
#ifndef PGK_HAVE_SM90
#define PGK_HAVE_SM90 0
#endif
#ifndef PGK_HAVE_SM89_FP8
#define PGK_HAVE_SM89_FP8 0
#endif

namespace {
// Test hooks (pgk_gemm_fp8_force_config): 4 = the mma.sync family even on compute capability 9.0;
// small-M kernel: 0 by m (m <= kFp8GemvAutoMaxM), 1 whenever it can run (config 5), 2 never
// (configs 1-4, 6 and 7, which name a tile kernel).
std::atomic<bool> g_force_mma{false};
std::atomic<int> g_gemv_mode{0};

// The small-M kernel's range in the shape heuristic: m <= 16 (one m-tile; two m-tiles for m <= 32
// ran at 33 us on an H200 for N = 14336, K = 4096, twice the one-tile kernel).  Not first on
// Hopper when the sm_90a family is built: there FP8 mma.sync is emulated (each fragment converted
// to f16 for HMMA) and the swapped 128x32 WGMMA kernel streams the weight faster (CUPTI device
// times, m = 1 / 8 / 16: 16.6 / 16.9 / 16.9 us vs 17.2 / 17.6 / 17.9 us; torch._scaled_mm 16.7 /
// 16.3 / 16.3 us); it stays the fallback for what the sm_90a family declines.
constexpr int kFp8GemvAutoMaxM = 16;
}  // namespace

extern "C" PGK_API int pgk_gemm_fp8_force_config(int config) {
  if (config < 0 || config > 7) return cudaErrorInvalidValue;
  // 1-3, 6 and 7 pick a kernel of the sm_90a family, 4 and 5 mma.sync kernels: each needs its
  // family built.
  const bool sm90_cfg = (config >= 1 && config <= 3) || config >= 6;
  if ((sm90_cfg && !PGK_HAVE_SM90) || ((config == 4 || config == 5) && !PGK_HAVE_SM89_FP8) ||
      (!PGK_HAVE_SM90 && !PGK_HAVE_SM89_FP8))
    return cudaErrorNotSupported;
#if PGK_HAVE_SM90
  // The sm_90a family's own codes: 1 l, 2 m, 3 s, 4 w, 5 t.
  pgk::gemm::sm90fp8::force_config(config >= 6 ? config - 2 : (config == 4 || config == 5) ? 0 : config);
#endif
  g_force_mma.store(config == 4, std::memory_order_relaxed);
  g_gemv_mode.store(config == 0 ? 0 : config == 5 ? 1 : 2, std::memory_order_relaxed);
  return cudaSuccess;
}

extern "C" PGK_API int pgk_gemm_fp8(const pgk_gemm_fp8_desc* d, void* stream) {
  if (d == nullptr) return cudaErrorInvalidValue;
  if (!is_fp8(d->a_dtype) || !is_fp8(d->b_dtype)) return cudaErrorInvalidValue;
  if (d->out_dtype != PGK_BFLOAT16 && d->out_dtype != PGK_FLOAT16 && d->out_dtype != PGK_FLOAT32)
    return cudaErrorInvalidValue;
  if (d->activation < PGK_ACT_NONE || d->activation > PGK_ACT_GELU_TANH) return cudaErrorInvalidValue;
  auto fits = [](int64_t v) { return v >= 1 && v <= INT_MAX; };
  if (!fits(d->m) || !fits(d->n) || !fits(d->k)) return cudaErrorInvalidValue;
  if (d->a == nullptr || d->b == nullptr || d->c == nullptr) return cudaErrorInvalidValue;
  if (d->lda < d->k || d->ldb < d->k || d->ldc < d->n) return cudaErrorInvalidValue;
  const int os = d->out_dtype == PGK_FLOAT32 ? 4 : 2;
  auto mis = [](const void* p, int a) { return reinterpret_cast<uintptr_t>(p) % a != 0; };
  if (mis(d->c, os) || mis(d->bias, os) || mis(d->scale_a, 4) || mis(d->scale_b, 4))
    return cudaErrorInvalidValue;
  if ((d->scale_a_per_row != 0 && d->scale_a_per_row != 1) ||
      (d->scale_b_per_col != 0 && d->scale_b_per_col != 1))
    return cudaErrorInvalidValue;
  if ((d->scale_a_per_row && d->scale_a == nullptr) || (d->scale_b_per_col && d->scale_b == nullptr))
    return cudaErrorInvalidValue;
#if PGK_HAVE_SM90 || PGK_HAVE_SM89_FP8
  pgk::gemm::sm90fp8::Fp8Problem p{};
  p.m = int(d->m);
  p.n = int(d->n);
  p.k = int(d->k);
  p.a_dtype = d->a_dtype;
  p.b_dtype = d->b_dtype;
  p.out_dtype = d->out_dtype;
  p.a = d->a;
  p.lda = d->lda;
  p.b = d->b;
  p.ldb = d->ldb;
  p.c = d->c;
  p.ldc = d->ldc;
  p.sa = d->scale_a_per_row ? nullptr : d->scale_a;
  p.row_a = d->scale_a_per_row ? d->scale_a : nullptr;
  p.sb = d->scale_b_per_col ? nullptr : d->scale_b;
  p.col_b = d->scale_b_per_col ? d->scale_b : nullptr;
  p.bias = d->bias;
  p.act = d->activation;
  pgk::gemm::note_kernel("");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  // Each family declines (cudaErrorNotSupported, nothing launched) what it cannot run: another
  // arch, the e5m2 x e5m2 pair, operands it cannot read.  m <= 16: the small-M streaming kernel
  // first (the weight read is the whole cost), except on Hopper with the sm_90a family built (see
  // kFp8GemvAutoMaxM), where it follows that family.  Hopper: WGMMA first (faster), then mma.sync
  // (e.g. a C whose rows are not 16-byte aligned); elsewhere mma.sync alone.
  cudaError_t status = cudaErrorNotSupported;
  bool tried = false;  // a family declined before the next one runs
#if PGK_HAVE_SM89_FP8
  const int gemv_mode = g_gemv_mode.load(std::memory_order_relaxed);
  const bool gemv_auto = gemv_mode == 0 && p.m <= kFp8GemvAutoMaxM;
  const bool hopper_first = PGK_HAVE_SM90 && pgk::gemm::current_sm() == 90;
  const bool gemv_first = gemv_mode == 1 || (gemv_auto && !hopper_first);
  if (gemv_first) {
    status = pgk::gemm::sm89_fp8_gemv(p, s);
    tried = true;
  }
#endif
#if PGK_HAVE_SM90
  if (status == cudaErrorNotSupported && !g_force_mma.load(std::memory_order_relaxed)) {
    if (tried) (void)cudaGetLastError();  // a decline launched nothing; keep the state clean
    status = pgk::gemm::sm90_fp8_gemm(p, s);
    tried = true;
  }
#endif
#if PGK_HAVE_SM89_FP8
  if (status == cudaErrorNotSupported && gemv_auto && !gemv_first) {
    if (tried) (void)cudaGetLastError();
    status = pgk::gemm::sm89_fp8_gemv(p, s);  // Hopper: what the sm_90a family declined
    tried = true;
  }
  if (status == cudaErrorNotSupported) {
    (void)cudaGetLastError();  // a decline launched nothing; keep the error state clean anyway
    status = pgk::gemm::sm89_fp8_gemm(p, s);
  }
#endif
  (void)tried;
  pgk::gemm::publish_kernel(status == cudaSuccess);
  return static_cast<int>(status);
#else
  (void)stream;
  return cudaErrorNotSupported;
#endif
}
