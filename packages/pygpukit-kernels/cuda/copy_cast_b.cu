// Cast kernels from source dtypes 3 4 5 (the pairs are split over files to compile in parallel).
#include "copy_kernels.cuh"

namespace pgk {
PGK_DEFINE_LAUNCH_CAST_FROM
template int launch_cast_from<3>(int, const Plan&, bool, cudaStream_t);
template int launch_cast_from<4>(int, const Plan&, bool, cudaStream_t);
template int launch_cast_from<5>(int, const Plan&, bool, cudaStream_t);
}  // namespace pgk
