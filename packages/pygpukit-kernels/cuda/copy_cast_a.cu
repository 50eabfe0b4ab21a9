// Cast kernels from source dtypes 0 1 2 (the pairs are split over files to compile in parallel).
#include "copy_kernels.cuh"

namespace pgk {
PGK_DEFINE_LAUNCH_CAST_FROM
template int launch_cast_from<0>(int, const Plan&, bool, cudaStream_t);
template int launch_cast_from<1>(int, const Plan&, bool, cudaStream_t);
template int launch_cast_from<2>(int, const Plan&, bool, cudaStream_t);
}  // namespace pgk
