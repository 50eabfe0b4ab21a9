// Vectorized fast paths of pgk_binary: contiguous operands of one floating dtype, and dense
// rows with a broadcast operand.
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

int launch_binary_bcast2d_any(int dtype, int op, const Bcast2D& p, void* out, int64_t rows,
                              int64_t cols, double sval, cudaStream_t stream) {
  switch (dtype) {
    case PGK_FLOAT16: return launch_binary_bcast2d<TF16>(op, p, out, rows, cols, sval, stream);
    case PGK_BFLOAT16: return launch_binary_bcast2d<TBF16>(op, p, out, rows, cols, sval, stream);
    case PGK_FLOAT32: return launch_binary_bcast2d<TF32>(op, p, out, rows, cols, sval, stream);
    case PGK_FLOAT64: return launch_binary_bcast2d<TF64>(op, p, out, rows, cols, sval, stream);
    default: return -1;
  }
}
}  // namespace pgk
