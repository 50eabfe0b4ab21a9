// pgk_gemm: argument checks, batch folding and the choice of kernel family.
//
// Order of preference: float64 -> SIMT; m <= 16 -> the streaming small-m family (float32
// only with a column-major B); Hopper -> the SM90a TMA/WGMMA family; sm_80+ -> multistage
// mma.sync; anything the faster families decline (alignment, layout) -> SIMT.  A family
// declines with cudaErrorNotSupported before launching anything.
#include <climits>
#include <cstdint>

#include <cuda_runtime.h>

#include "gemm_problem.cuh"
#include "../launch_utils.cuh"  // the library target's include path has no cuda/
#include "pygpukit_kernels.h"

namespace pgk::gemm {
namespace {

thread_local const char* t_pending_kernel = "";
thread_local const char* t_last_kernel = "";

constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

size_t element_size(int dtype) {
  switch (dtype) {
    case PGK_FLOAT16:
    case PGK_BFLOAT16: return 2;
    case PGK_FLOAT32: return 4;
    case PGK_FLOAT64: return 8;
    default: return 0;
  }
}

bool fits_int(int64_t v) { return v >= 1 && v <= INT_MAX; }

// Checks the public descriptor and converts it; cudaErrorInvalidValue for anything malformed.
cudaError_t to_problem(const pgk_gemm_desc* d, Problem* p) {
  if (d == nullptr || element_size(d->dtype) == 0) return cudaErrorInvalidValue;
  if (d->precision != PGK_PRECISION_HIGHEST && d->precision != PGK_PRECISION_TF32)
    return cudaErrorInvalidValue;
  if (d->activation < PGK_ACT_NONE || d->activation > PGK_ACT_GELU_TANH) return cudaErrorInvalidValue;
  if (d->b_col_major != 0 && d->b_col_major != 1) return cudaErrorInvalidValue;
  if (!fits_int(d->m) || !fits_int(d->n) || !fits_int(d->k) || !fits_int(d->batch))
    return cudaErrorInvalidValue;
  if (d->a == nullptr || d->b == nullptr || d->c == nullptr) return cudaErrorInvalidValue;
  if (d->lda < d->k || d->ldb < (d->b_col_major ? d->k : d->n) || d->ldc < d->n)
    return cudaErrorInvalidValue;
  if (d->batch_stride_a < 0 || d->batch_stride_b < 0 || d->batch_stride_c < 0)
    return cudaErrorInvalidValue;
  // Distinct batches of C must not overlap (their rows span (m-1)*ldc + n elements).
  if (d->batch > 1 && d->batch_stride_c < (d->m - 1) * d->ldc + d->n) return cudaErrorInvalidValue;
  const size_t es = element_size(d->dtype);
  auto aligned = [es](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % es == 0; };
  if (!aligned(d->a) || !aligned(d->b) || !aligned(d->c) || (d->bias && !aligned(d->bias)))
    return cudaErrorInvalidValue;

  p->m = static_cast<int>(d->m);
  p->n = static_cast<int>(d->n);
  p->k = static_cast<int>(d->k);
  p->batch = static_cast<int>(d->batch);
  p->dtype = d->dtype;
  p->a = d->a;
  p->lda = d->lda;
  p->batch_stride_a = d->batch > 1 ? d->batch_stride_a : 0;
  p->b = d->b;
  p->ldb = d->ldb;
  p->batch_stride_b = d->batch > 1 ? d->batch_stride_b : 0;
  p->b_col_major = d->b_col_major != 0;
  p->c = d->c;
  p->ldc = d->ldc;
  p->batch_stride_c = d->batch > 1 ? d->batch_stride_c : 0;
  p->bias = d->bias;
  p->act = static_cast<Activation>(d->activation);
  p->precision = static_cast<Precision>(d->precision);

  // x @ W with a batch of x and one W: the batches of A and C are evenly spaced rows, so the
  // whole batch is one (batch*m, k) @ (k, n) product — one launch with bigger tiles.
  const int64_t rows = int64_t{p->batch} * p->m;
  if (p->batch > 1 && p->batch_stride_b == 0 && p->batch_stride_a == p->m * p->lda &&
      p->batch_stride_c == p->m * p->ldc && rows <= INT_MAX) {
    p->m = static_cast<int>(rows);
    p->batch = 1;
    p->batch_stride_a = p->batch_stride_c = 0;
  }
  return cudaSuccess;
}

size_t workspace_bytes(const Problem& p, int sm) {
  size_t bytes = 0;
  auto at_least = [&bytes](size_t b) { bytes = b > bytes ? b : bytes; };
#if PGK_HAVE_SM90
  if (sm == 90) at_least(sm90_workspace_bytes(p));
#endif
  if (sm >= 80) at_least(sm80_workspace_bytes(p));
  return bytes ? align_up(bytes) : 0;
}

bool declined(cudaError_t status) {
  if (status != cudaErrorNotSupported) return false;
  // A decline launched nothing, but keep cudaGetLastError clean for the next family anyway.
  (void)cudaGetLastError();
  return true;
}

cudaError_t run(const Problem& p, int sm, void* ws, size_t ws_bytes, cudaStream_t s) {
  cudaError_t status;
  if (p.dtype == PGK_FLOAT64) return simt_gemm(p, s);
  // float32 streams well only down K-contiguous columns; a row-major float32 B with small m
  // goes to the tensor-core families instead.
  if (p.m <= 16 && (p.dtype != PGK_FLOAT32 || p.b_col_major)) {
#if PGK_HAVE_SM90
    if (sm == 90 && sm90_takes_small_m(p)) {
      status = sm90_gemm(p, ws, ws_bytes, s);
      if (!declined(status)) return status;
    }
#endif
    status = gemv_gemm(p, s);
    if (!declined(status)) return status;
  }
#if PGK_HAVE_SM90
  if (sm == 90) {
    status = sm90_gemm(p, ws, ws_bytes, s);
    if (!declined(status)) return status;
  }
#endif
  if (sm >= 80) {
    status = sm80_gemm(p, ws, ws_bytes, s);
    if (!declined(status)) return status;
  }
  return simt_gemm(p, s);
}

}  // namespace

void note_kernel(const char* name) { t_pending_kernel = name; }

// Entry points other than pgk_gemm (the FP8 product, fp8.cu) publish the kernel their launch
// noted the same way: pgk_gemm_last_kernel() names it after a success.
void publish_kernel(bool success) {
  if (success) t_last_kernel = t_pending_kernel;
  t_pending_kernel = "";
}

int current_sm() {
  static DeviceCache cache = {};
  return cached_per_device(cache, current_device(), [](int d) {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d) != cudaSuccess) {
      return 0;
    }
    return 10 * major + minor;
  });
}

}  // namespace pgk::gemm

extern "C" PGK_API int pgk_gemm_workspace_size(const pgk_gemm_desc* desc, uint64_t* bytes) {
  using namespace pgk::gemm;
  if (bytes == nullptr) return cudaErrorInvalidValue;
  Problem p;
  cudaError_t status = to_problem(desc, &p);
  if (status != cudaSuccess) return status;
  *bytes = workspace_bytes(p, current_sm());
  return cudaSuccess;
}

extern "C" PGK_API int pgk_gemm(const pgk_gemm_desc* desc, void* workspace,
                                uint64_t workspace_bytes_given, void* stream) {
  using namespace pgk::gemm;
  Problem p;
  cudaError_t status = to_problem(desc, &p);
  if (status != cudaSuccess) return status;
  const int sm = current_sm();
  const size_t needed = workspace_bytes(p, sm);
  if (workspace_bytes_given < needed || (needed > 0 && workspace == nullptr) ||
      reinterpret_cast<uintptr_t>(workspace) % kAlign != 0)
    return cudaErrorInvalidValue;
  t_pending_kernel = "";
  status = run(p, sm, workspace, workspace_bytes_given, static_cast<cudaStream_t>(stream));
  if (status == cudaSuccess) t_last_kernel = t_pending_kernel;
  return status;
}

extern "C" PGK_API const char* pgk_gemm_last_kernel(void) { return pgk::gemm::t_last_kernel; }
