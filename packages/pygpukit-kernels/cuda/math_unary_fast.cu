// Vectorized fast path of pgk_unary: contiguous x and out of one floating dtype (one kernel per
// op and dtype; in a file of its own so that it compiles in parallel with the rest).
#include "math_kernels.cuh"

namespace pgk {
int launch_unary_fast_any(int dtype, int op, const void* x, void* out, int64_t n,
                          cudaStream_t stream) {
  switch (dtype) {
    case PGK_FLOAT16: return launch_unary_fast<TF16>(op, x, out, n, stream);
    case PGK_BFLOAT16: return launch_unary_fast<TBF16>(op, x, out, n, stream);
    case PGK_FLOAT32: return launch_unary_fast<TF32>(op, x, out, n, stream);
    case PGK_FLOAT64: return launch_unary_fast<TF64>(op, x, out, n, stream);
    default: return -1;
  }
}
}  // namespace pgk
