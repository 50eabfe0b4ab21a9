// The vectorized reduction path (see reduce_fast.cuh), one instantiation per floating dtype.
#include "reduce_fast.cuh"

namespace pgk {
int launch_reduce_fast_any(const ReducePlan& plan, const void* x, int x_dtype, void* out,
                           int out_dtype, int op, void* work, int chunks, cudaStream_t stream) {
  switch (x_dtype) {
    case PGK_FLOAT16: return launch_reduce_fast<TF16>(plan, x, out, out_dtype, op, work, chunks, stream);
    case PGK_BFLOAT16: return launch_reduce_fast<TBF16>(plan, x, out, out_dtype, op, work, chunks, stream);
    case PGK_FLOAT32: return launch_reduce_fast<TF32>(plan, x, out, out_dtype, op, work, chunks, stream);
    case PGK_FLOAT64: return launch_reduce_fast<TF64>(plan, x, out, out_dtype, op, work, chunks, stream);
    default: return -1;
  }
}
}  // namespace pgk
