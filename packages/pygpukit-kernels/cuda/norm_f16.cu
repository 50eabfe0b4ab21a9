// Row-wise normalization kernels of one dtype (see norm_kernels.cuh; one file per dtype so that
// they compile in parallel).
#include "norm_kernels.cuh"

namespace pgk {
int launch_norm_f16(int op, const NormParams& p, cudaStream_t stream) {
  return launch_norm<TF16>(op, p, stream);
}
}  // namespace pgk
