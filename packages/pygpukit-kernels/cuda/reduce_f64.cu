// Reduction kernels accumulating in double (one compute type per file: parallel builds).
#include "reduce_kernels.cuh"

namespace pgk {
int launch_reduce_f64(const ReducePlan& plan, const void* x, int x_dtype, void* out,
                      int out_dtype, int op, double ddof, void* work, int chunks,
                      cudaStream_t stream) {
  return launch_reduce<double>(plan, x, x_dtype, out, out_dtype, op, ddof, work, chunks, stream);
}
}  // namespace pgk
