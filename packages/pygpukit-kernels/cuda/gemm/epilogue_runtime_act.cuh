// Epilogue thread op for the CUTLASS 2.x GEMMs: D = act(alpha * acc + beta * C), with the
// activation chosen at run time (Params::act), so one instantiation covers None/Relu/Gelu/GeluTanh.
// Same interface as cutlass::epilogue::thread::LinearCombination.  The bias is fed as the C
// operand with ldc = 0 (row broadcast) and beta = 1; without a bias beta = 0 and C is never read.
// Serial split-K: partitions before the last skip the activation (their D is a partial sum).
#pragma once

#include <cuda_runtime.h>

#include "cutlass/array.h"
#include "cutlass/cutlass.h"
#include "cutlass/numeric_conversion.h"
#include "cutlass/numeric_types.h"

namespace pgk::gemm {

// act codes as pgk::gemm::Activation.  Computed in the accumulator type; precise erf/tanh.
template <typename T>
__host__ __device__ __forceinline__ T apply_activation(T x, int act) {
  switch (act) {
    case 1: return x > T(0) ? x : T(0);
    case 2: return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440)));
    case 3: {
      const T k0 = T(0.79788456080286535588);  // sqrt(2/pi)
      return T(0.5) * x * (T(1) + tanh(k0 * (x + T(0.044715) * x * x * x)));
    }
    default: return x;
  }
}

// Out-of-line copy for hand-written epilogues that unroll over many outputs (one call site's
// worth of erf/tanh code instead of one per unrolled element).
template <typename T>
__device__ __noinline__ T apply_activation_outlined(T x, int act) {
  return apply_activation<T>(x, act);
}

template <typename ElementOutput_, int Count, typename ElementAccumulator_ = float,
          typename ElementCompute_ = float>
class LinearCombinationRuntimeAct {
 public:
  using ElementOutput = ElementOutput_;
  using ElementSource = ElementOutput_;
  using ElementAccumulator = ElementAccumulator_;
  using ElementCompute = ElementCompute_;
  using ElementScalar = ElementCompute;
  using ElementC = ElementOutput_;
  using ElementD = ElementOutput_;

  static int const kCount = Count;
  static bool const kIsHeavy = true;  // erf/tanh: keep the epilogue loop rolled
  using FragmentOutput = cutlass::Array<ElementOutput, kCount>;
  using FragmentSource = cutlass::Array<ElementSource, kCount>;
  using FragmentAccumulator = cutlass::Array<ElementAccumulator, kCount>;
  using FragmentCompute = cutlass::Array<ElementCompute, kCount>;
  static cutlass::FloatRoundStyle const kRound = cutlass::FloatRoundStyle::round_to_nearest;

  struct Params {
    ElementCompute alpha;
    ElementCompute beta;
    int act;
    CUTLASS_HOST_DEVICE Params() : alpha(1), beta(0), act(0) {}
    CUTLASS_HOST_DEVICE Params(ElementCompute alpha_, ElementCompute beta_, int act_ = 0)
        : alpha(alpha_), beta(beta_), act(act_) {}
  };

 private:
  ElementCompute alpha_;
  ElementCompute beta_;
  int act_;

 public:
  CUTLASS_HOST_DEVICE explicit LinearCombinationRuntimeAct(Params const& p)
      : alpha_(p.alpha), beta_(p.beta), act_(p.act) {}
  CUTLASS_HOST_DEVICE LinearCombinationRuntimeAct(Params const& p, int /*group_idx*/)
      : LinearCombinationRuntimeAct(p) {}

  CUTLASS_HOST_DEVICE bool is_source_needed() const { return beta_ != ElementCompute(0); }

  CUTLASS_HOST_DEVICE void set_k_partition(int k_partition, int k_partition_count) {
    if (k_partition) beta_ = ElementCompute(1);
    if (k_partition != k_partition_count - 1) act_ = 0;
  }

  CUTLASS_HOST_DEVICE FragmentOutput operator()(FragmentAccumulator const& accumulator,
                                                FragmentSource const& source) const {
    cutlass::NumericArrayConverter<ElementCompute, ElementSource, kCount, kRound> src_conv;
    cutlass::NumericArrayConverter<ElementCompute, ElementAccumulator, kCount, kRound> acc_conv;
    cutlass::NumericArrayConverter<ElementOutput, ElementCompute, kCount, kRound> dst_conv;
    FragmentCompute s = src_conv(source);
    FragmentCompute a = acc_conv(accumulator);
    FragmentCompute r;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kCount; ++i)
      r[i] = apply_activation<ElementCompute>(alpha_ * a[i] + beta_ * s[i], act_);
    return dst_conv(r);
  }

  CUTLASS_HOST_DEVICE FragmentOutput operator()(FragmentAccumulator const& accumulator) const {
    cutlass::NumericArrayConverter<ElementCompute, ElementAccumulator, kCount, kRound> acc_conv;
    cutlass::NumericArrayConverter<ElementOutput, ElementCompute, kCount, kRound> dst_conv;
    FragmentCompute a = acc_conv(accumulator);
    FragmentCompute r;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < kCount; ++i) r[i] = apply_activation<ElementCompute>(alpha_ * a[i], act_);
    return dst_conv(r);
  }
};

}  // namespace pgk::gemm
