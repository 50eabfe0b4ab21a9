// Vectorized fast paths of pgk_binary: contiguous operands of one floating dtype.
#include "math_kernels.cuh"

namespace pgk {
#define PGK_FAST(NAME, TAG)                                                                \
  int NAME(int op, const void* a, const void* b, void* out, int64_t n, int scalar_side,    \
           double sval, cudaStream_t stream) {                                             \
    return launch_binary_fast<TAG>(op, a, b, out, n, scalar_side, sval, stream);           \
  }
PGK_FAST(launch_binary_fast_f16, TF16)
PGK_FAST(launch_binary_fast_bf16, TBF16)
PGK_FAST(launch_binary_fast_f32, TF32)
PGK_FAST(launch_binary_fast_f64, TF64)
#undef PGK_FAST
}  // namespace pgk
