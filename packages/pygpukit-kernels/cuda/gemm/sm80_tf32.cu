// sm80 family: explicit instantiations (both B layouts).
#include "sm80_gemm_impl.cuh"

namespace pgk::gemm::sm80 {
PGK_SM80_INSTANTIATE(kTF32, kLarge)
PGK_SM80_INSTANTIATE(kTF32, kSmall)
}  // namespace pgk::gemm::sm80
