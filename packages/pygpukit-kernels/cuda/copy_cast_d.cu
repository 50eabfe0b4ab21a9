// Cast kernels from source dtypes 8 9 (the pairs are split over files to compile in parallel).
#include "copy_kernels.cuh"

namespace pgk {
PGK_DEFINE_LAUNCH_CAST_FROM
template int launch_cast_from<8>(int, const Plan&, bool, cudaStream_t);
template int launch_cast_from<9>(int, const Plan&, bool, cudaStream_t);
}  // namespace pgk
