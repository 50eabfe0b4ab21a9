// The generic N-d math kernel computing in float (one compute type per file: parallel builds).
#include "math_kernels.cuh"

namespace pgk {
int launch_math_f32(const MathPlan& plan, const int* dtypes, int op, int kind, double sa,
                    double sb, cudaStream_t stream) {
  return launch_math_nd<float>(plan, dtypes, op, kind, static_cast<float>(sa),
                              static_cast<float>(sb), stream);
}
}  // namespace pgk
