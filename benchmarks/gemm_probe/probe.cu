// Issue 13's configuration probe: candidate Hopper GEMM kernels (the library's own template,
// packages/pygpukit-kernels/cuda/gemm/sm90_gemm_kernel.cuh) behind a small C ABI that
// benchmarks/probe_gemm_configs.py drives through ctypes on the lent GPU.  Not part of any wheel.
//
// build.sh compiles this file once per candidate (-DPGK_PROBE_PART=i: that candidate's
// instantiation, in parallel) and once with -DPGK_PROBE_PART=-1 (the registry and the C ABI).
//
// C ABI (every function returns a cudaError_t code):
//   probe_count(), probe_info(i, ...)                 the candidates
//   probe_workspace(i, desc, opts, &bytes)            workspace of a (candidate, options)
//   probe_run(i, desc, opts, ws, ws_bytes, stream)    one launch (graph capture, checks)
//   probe_loop(i, desc, opts, ws, ws_bytes, stream, iters, uncached, &dev_ms, &host_us)
//        iters back-to-back launches between two events: device ms per launch (the stream's
//        throughput, host cost included where it is the bottleneck) and host microseconds
//        per call; uncached: CUTLASS's own per-call conversion and adapter launch
//   probe_launch_floor(stream, iters, &host_us)       an empty kernel's launch cost
//   probe_selftest(i, m, n, k, bias, act, splits, &rel_err)
//        random operands, NaN-poisoned output, against a naive float32 product
#define PGK_GEMM_PROBE 1
#include <chrono>
#include <cstdio>

#include "pygpukit_kernels.h"
#include "sm90_gemm_kernel.cuh"

// X(idx, name, Elem, dtype code, BColMajor, TM, TN, TK, CM, CN, PingPong, Swap)
// Tiles in the kernel's terms (a swapped kernel's TM runs along our N, its TN along our M).
#define PGK_PROBE_CANDIDATES(X)                                                                  \
  X(0, f16_coop_128x256_c2x1, cutlass::half_t, PGK_FLOAT16, false, 128, 256, 64, 2, 1, false, false) \
  X(1, f16_coop_128x256_c1x1, cutlass::half_t, PGK_FLOAT16, false, 128, 256, 64, 1, 1, false, false) \
  X(2, f16_coop_128x128_c1x2, cutlass::half_t, PGK_FLOAT16, false, 128, 128, 64, 1, 2, false, false) \
  X(3, f16_coop_128x128_c2x1, cutlass::half_t, PGK_FLOAT16, false, 128, 128, 64, 2, 1, false, false) \
  X(4, f16_coop_128x128_c1x1, cutlass::half_t, PGK_FLOAT16, false, 128, 128, 64, 1, 1, false, false) \
  X(5, f16_coop_256x128_c2x1, cutlass::half_t, PGK_FLOAT16, false, 256, 128, 64, 2, 1, false, false) \
  X(6, f16_pp_64x128_c1x1, cutlass::half_t, PGK_FLOAT16, false, 64, 128, 64, 1, 1, true, false)      \
  X(7, f16_pp_64x256_c1x1, cutlass::half_t, PGK_FLOAT16, false, 64, 256, 64, 1, 1, true, false)      \
  X(8, f16_pp_128x128_c1x1, cutlass::half_t, PGK_FLOAT16, false, 128, 128, 64, 1, 1, true, false)    \
  X(9, f16_swap_coop_128x64_c1x1, cutlass::half_t, PGK_FLOAT16, false, 128, 64, 64, 1, 1, false, true) \
  X(10, f16_swap_coop_128x64_c2x1, cutlass::half_t, PGK_FLOAT16, false, 128, 64, 64, 2, 1, false, true) \
  X(11, f16_swap_pp_64x64_c1x1, cutlass::half_t, PGK_FLOAT16, false, 64, 64, 64, 1, 1, true, true)   \
  X(12, tf32_coop_128x256_c2x1_t, float, PGK_FLOAT32, false, 128, 256, 32, 2, 1, false, false)      \
  X(13, tf32_coop_128x128_c1x1_t, float, PGK_FLOAT32, false, 128, 128, 32, 1, 1, false, false)      \
  X(14, tf32_coop_128x256_c1x1_t, float, PGK_FLOAT32, false, 128, 256, 32, 1, 1, false, false)      \
  X(15, f16_nk_swap_coop_128x64_c1x1, cutlass::half_t, PGK_FLOAT16, true, 128, 64, 64, 1, 1, false, true) \
  X(16, bf16_swap_coop_128x64_c1x1, cutlass::bfloat16_t, PGK_BFLOAT16, false, 128, 64, 64, 1, 1, false, true) \
  X(17, bf16_nk_coop_128x128_c1x1, cutlass::bfloat16_t, PGK_BFLOAT16, true, 128, 128, 64, 1, 1, false, false)

namespace probe {
using pgk::gemm::Problem;
using pgk::gemm::sm90::RunOpts;

// Cfg<i>::K names candidate i's kernel type (naming it instantiates nothing).
template <int I>
struct Cfg;
#define PGK_PROBE_CFG(idx, name, Elem, code, BCol, TM, TN, TK, CM, CN, PP, SW)                 \
  template <>                                                                                 \
  struct Cfg<idx> {                                                                           \
    using K = ::pgk::gemm::sm90::Sm90Gemm<                                                    \
        Elem, BCol, cute::Shape<cute::Int<TM>, cute::Int<TN>, cute::Int<TK>>,                 \
        cute::Shape<cute::Int<CM>, cute::Int<CN>, cute::_1>, PP, SW>;                         \
  };
PGK_PROBE_CANDIDATES(PGK_PROBE_CFG)

// Defined once each, in the part that instantiates the kernel.
template <int I>
cudaError_t run_c(const Problem& p, const RunOpts& o, void* ws, size_t b, cudaStream_t s, size_t* need);
template <int I>
cudaError_t uncached_c(const Problem& p, const RunOpts& o, void* ws, size_t b, cudaStream_t s);
#define PGK_PROBE_DECL(idx, ...)                                                               \
  template <>                                                                                 \
  cudaError_t run_c<idx>(const Problem&, const RunOpts&, void*, size_t, cudaStream_t, size_t*); \
  template <>                                                                                 \
  cudaError_t uncached_c<idx>(const Problem&, const RunOpts&, void*, size_t, cudaStream_t);
PGK_PROBE_CANDIDATES(PGK_PROBE_DECL)

#if defined(PGK_PROBE_PART) && PGK_PROBE_PART >= 0
template <>
cudaError_t run_c<PGK_PROBE_PART>(const Problem& p, const RunOpts& o, void* ws, size_t b,
                                  cudaStream_t s, size_t* need) {
  return Cfg<PGK_PROBE_PART>::K::run(p, o, ws, b, s, need);
}
template <>
cudaError_t uncached_c<PGK_PROBE_PART>(const Problem& p, const RunOpts& o, void* ws, size_t b,
                                       cudaStream_t s) {
  return Cfg<PGK_PROBE_PART>::K::run_uncached(p, o, ws, b, s);
}
#else
struct Candidate {
  const char* name;
  int dtype, b_col_major, tm, tn, tk, cm, cn, pingpong, swap;
  cudaError_t (*run)(const Problem&, const RunOpts&, void*, size_t, cudaStream_t, size_t*);
  cudaError_t (*uncached)(const Problem&, const RunOpts&, void*, size_t, cudaStream_t);
};
#define PGK_PROBE_ROW(idx, name, Elem, code, BCol, TM, TN, TK, CM, CN, PP, SW)                 \
  {#name, code, BCol, TM, TN, TK, CM, CN, PP, SW, &run_c<idx>, &uncached_c<idx>},
const Candidate kCandidates[] = {PGK_PROBE_CANDIDATES(PGK_PROBE_ROW)};
constexpr int kCount = int(sizeof(kCandidates) / sizeof(kCandidates[0]));

Problem make_problem(int dtype, int b_col_major, int m, int n, int k, const void* a,
                     const void* b, void* c, const void* bias, int act) {
  Problem p{};
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = 1;
  p.dtype = dtype;
  p.a = a;
  p.lda = k;
  p.b = b;
  p.ldb = b_col_major ? k : n;
  p.b_col_major = b_col_major != 0;
  p.c = c;
  p.ldc = n;
  p.bias = bias;
  p.act = static_cast<pgk::gemm::Activation>(act);
  p.precision = pgk::gemm::Precision::Tf32;
  return p;
}

RunOpts make_opts(int decomposition, int splits, int swizzle, int raster) {
  RunOpts o;
  o.decomposition = decomposition;
  o.splits = splits;
  o.swizzle = swizzle;
  o.raster = raster;
  return o;
}

__global__ void empty_kernel() {}

// Uniform values in [-1, 1) from a hash of the index (no zeros in practice, reproducible).
template <class T>
__global__ void fill_kernel(T* x, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    h *= 3266489917u;
    h ^= h >> 16;
    x[i] = T(float(h >> 8) * (2.f / 16777216.f) - 1.f);
  }
}

template <class T>
__global__ void poison_kernel(T* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] = T(NAN);
}

__device__ float act_ref(float x, int act) {
  switch (act) {
    case 1: return x > 0.f ? x : 0.f;
    case 2: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case 3: return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    default: return x;
  }
}

// Naive float32 product; the squared error and the squared reference accumulate in doubles.
template <class T>
__global__ void check_kernel(const T* a, const T* b, int b_col_major, const T* bias, int act,
                             const T* c, int m, int n, int k, double* sums) {
  const int i = blockIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m || j >= n) return;
  float acc = 0.f;
  for (int kk = 0; kk < k; ++kk) {
    const float bv = float(b_col_major ? b[int64_t(j) * k + kk] : b[int64_t(kk) * n + j]);
    acc += float(a[int64_t(i) * k + kk]) * bv;
  }
  const float ref = act_ref(acc + (bias ? float(bias[j]) : 0.f), act);
  const float got = float(c[int64_t(i) * n + j]);
  const double d = double(got) - double(ref);
  atomicAdd(&sums[0], isnan(got) ? 1e30 : d * d);
  atomicAdd(&sums[1], double(ref) * double(ref));
}

template <class T>
cudaError_t selftest_typed(const Candidate& cd, int m, int n, int k, int with_bias, int act,
                           int splits, double* rel_err) {
  T *a = nullptr, *b = nullptr, *c = nullptr, *bias = nullptr;
  double* sums = nullptr;
  void* ws = nullptr;
  cudaError_t e = cudaSuccess;
  auto chk = [&e](cudaError_t r) {
    if (e == cudaSuccess && r != cudaSuccess) e = r;
    return e == cudaSuccess;
  };
  const int64_t na = int64_t(m) * k, nb = int64_t(k) * n, nc = int64_t(m) * n;
  if (chk(cudaMalloc(&a, na * sizeof(T))) && chk(cudaMalloc(&b, nb * sizeof(T))) &&
      chk(cudaMalloc(&c, nc * sizeof(T))) && chk(cudaMalloc(&bias, n * sizeof(T))) &&
      chk(cudaMalloc(&sums, 2 * sizeof(double)))) {
    fill_kernel<<<256, 256>>>(a, na, 1u);
    fill_kernel<<<256, 256>>>(b, nb, 2u);
    fill_kernel<<<256, 256>>>(bias, n, 3u);
    poison_kernel<<<256, 256>>>(c, nc);
    chk(cudaGetLastError());
    chk(cudaMemset(sums, 0, 2 * sizeof(double)));
    Problem p = make_problem(cd.dtype, cd.b_col_major, m, n, k, a, b, c,
                             with_bias ? bias : nullptr, act);
    RunOpts o = make_opts(splits > 1 ? 2 : 1, splits, 1, 0);
    size_t need = 0;
    if (chk(cd.run(p, o, nullptr, 0, nullptr, &need)) && (need == 0 || chk(cudaMalloc(&ws, need))) &&
        chk(cd.run(p, o, ws, need, nullptr, nullptr)) && chk(cudaDeviceSynchronize())) {
      check_kernel<<<dim3((n + 127) / 128, m), 128>>>(a, b, cd.b_col_major, with_bias ? bias : nullptr,
                                                      act, c, m, n, k, sums);
      double h[2] = {0, 0};
      if (chk(cudaGetLastError()) && chk(cudaMemcpy(h, sums, sizeof(h), cudaMemcpyDeviceToHost)))
        *rel_err = h[1] > 0 ? std::sqrt(h[0] / h[1]) : -1.0;
    }
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaFree(bias);
  cudaFree(sums);
  cudaFree(ws);
  return e;
}
#endif
}  // namespace probe

#if !defined(PGK_PROBE_PART) || PGK_PROBE_PART < 0
using namespace probe;

#define PGK_PROBE_API extern "C" __attribute__((visibility("default")))

PGK_PROBE_API int probe_count() { return kCount; }

PGK_PROBE_API int probe_info(int i, const char** name, int* fields /* 10 ints */) {
  if (i < 0 || i >= kCount) return cudaErrorInvalidValue;
  const Candidate& c = kCandidates[i];
  *name = c.name;
  const int f[10] = {c.dtype, c.b_col_major, c.tm, c.tn, c.tk, c.cm, c.cn, c.pingpong, c.swap, 0};
  for (int j = 0; j < 10; ++j) fields[j] = f[j];
  return cudaSuccess;
}

PGK_PROBE_API int probe_workspace(int i, int m, int n, int k, int decomposition, int splits,
                                  int swizzle, int raster, uint64_t* bytes) {
  if (i < 0 || i >= kCount) return cudaErrorInvalidValue;
  const Candidate& c = kCandidates[i];
  // Workspace size depends on the shape and options only; any aligned dummy pointers do.
  alignas(16) static char dummy[16];
  Problem p = make_problem(c.dtype, c.b_col_major, m, n, k, dummy, dummy, dummy, nullptr, 0);
  size_t need = 0;
  cudaError_t e = c.run(p, make_opts(decomposition, splits, swizzle, raster), nullptr, 0, nullptr, &need);
  *bytes = need;
  return e;
}

PGK_PROBE_API int probe_run(int i, int m, int n, int k, const void* a, const void* b, void* c,
                            const void* bias, int act, int decomposition, int splits, int swizzle,
                            int raster, void* ws, uint64_t ws_bytes, void* stream) {
  if (i < 0 || i >= kCount) return cudaErrorInvalidValue;
  const Candidate& cd = kCandidates[i];
  Problem p = make_problem(cd.dtype, cd.b_col_major, m, n, k, a, b, c, bias, act);
  cudaError_t e = cd.run(p, make_opts(decomposition, splits, swizzle, raster), ws, ws_bytes,
                         static_cast<cudaStream_t>(stream), nullptr);
  if (e == cudaSuccess) e = cudaGetLastError();
  return e;
}

PGK_PROBE_API int probe_loop(int i, int m, int n, int k, const void* a, const void* b, void* c,
                             int decomposition, int splits, int swizzle, int raster, void* ws,
                             uint64_t ws_bytes, void* stream, int iters, int uncached,
                             float* dev_ms, double* host_us) {
  if (i < 0 || i >= kCount || iters < 1) return cudaErrorInvalidValue;
  const Candidate& cd = kCandidates[i];
  Problem p = make_problem(cd.dtype, cd.b_col_major, m, n, k, a, b, c, nullptr, 0);
  const RunOpts o = make_opts(decomposition, splits, swizzle, raster);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  auto once = [&]() {
    return uncached ? cd.uncached(p, o, ws, ws_bytes, s) : cd.run(p, o, ws, ws_bytes, s, nullptr);
  };
  cudaEvent_t t0, t1;
  cudaError_t e = cudaEventCreate(&t0);
  if (e != cudaSuccess) return e;
  e = cudaEventCreate(&t1);
  if (e != cudaSuccess) {
    cudaEventDestroy(t0);
    return e;
  }
  // Two warm-ups, then one untimed launch so the device is busy when the timed ones queue.
  for (int w = 0; w < 3 && e == cudaSuccess; ++w) e = once();
  if (e == cudaSuccess) e = cudaEventRecord(t0, s);
  const auto h0 = std::chrono::steady_clock::now();
  for (int it = 0; it < iters && e == cudaSuccess; ++it) e = once();
  const auto h1 = std::chrono::steady_clock::now();
  if (e == cudaSuccess) e = cudaEventRecord(t1, s);
  if (e == cudaSuccess) e = cudaEventSynchronize(t1);
  float ms = 0.f;
  if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, t0, t1);
  if (e == cudaSuccess) e = cudaGetLastError();
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  *dev_ms = ms / iters;
  *host_us = std::chrono::duration<double, std::micro>(h1 - h0).count() / iters;
  return e;
}

PGK_PROBE_API int probe_launch_floor(void* stream, int iters, double* host_us) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  empty_kernel<<<1, 32, 0, s>>>();
  cudaError_t e = cudaStreamSynchronize(s);
  const auto h0 = std::chrono::steady_clock::now();
  for (int it = 0; it < iters && e == cudaSuccess; ++it) {
    empty_kernel<<<1, 32, 0, s>>>();
    e = cudaGetLastError();
  }
  const auto h1 = std::chrono::steady_clock::now();
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  *host_us = std::chrono::duration<double, std::micro>(h1 - h0).count() / iters;
  return e;
}

PGK_PROBE_API int probe_selftest(int i, int m, int n, int k, int with_bias, int act, int splits,
                                 double* rel_err) {
  if (i < 0 || i >= kCount) return cudaErrorInvalidValue;
  const Candidate& cd = kCandidates[i];
  *rel_err = -1.0;
  switch (cd.dtype) {
    case PGK_FLOAT16: return selftest_typed<cutlass::half_t>(cd, m, n, k, with_bias, act, splits, rel_err);
    case PGK_BFLOAT16: return selftest_typed<cutlass::bfloat16_t>(cd, m, n, k, with_bias, act, splits, rel_err);
    default: return selftest_typed<float>(cd, m, n, k, with_bias, act, splits, rel_err);
  }
}
#endif
