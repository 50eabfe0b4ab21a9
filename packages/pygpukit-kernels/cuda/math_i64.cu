// The generic N-d math kernel computing in long long (one compute type per file: parallel builds).
#include "math_kernels.cuh"

namespace pgk {
int launch_math_i64(const MathPlan& plan, const int* dtypes, int op, int kind, int64_t sa,
                    int64_t sb, cudaStream_t stream) {
  return launch_math_nd<long long>(plan, dtypes, op, kind, static_cast<long long>(sa),
                              static_cast<long long>(sb), stream);
}
}  // namespace pgk
