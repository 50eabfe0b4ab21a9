// sm80 family: explicit instantiations (both B layouts).
#include "sm80_gemm_impl.cuh"

namespace pgk::gemm::sm80 {
PGK_SM80_INSTANTIATE(kF16, kSmall)
}  // namespace pgk::gemm::sm80
