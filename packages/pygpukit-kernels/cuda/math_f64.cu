// The generic N-d math kernel computing in double (one compute type per file: parallel builds).
#include "math_kernels.cuh"

namespace pgk {
int launch_math_f64(const MathPlan& plan, const int* dtypes, int op, int kind, double sa,
                    double sb, cudaStream_t stream) {
  return launch_math_nd<double>(plan, dtypes, op, kind, static_cast<double>(sa),
                              static_cast<double>(sb), stream);
}
}  // namespace pgk
