// Hopper (sm_90a) GEMM family: the CUTLASS 3 kernel template.  Included only by the kernel
// translation units (sm90_k_*.cu), each of which instantiates 2 configurations.
//
// Kernel: KernelTmaWarpSpecializedCooperative mainloop (TMA + WGMMA, 1 producer warp group, 2
// consumer warp groups), StreamKScheduler (data-parallel / split-K / stream-K chosen per launch),
// TMA-store epilogue (TmaWarpSpecializedCooperative) with the visitor tree
//     D = BiasAct(acc, RowBroadcast(bias))           (no C operand: ElementC = void)
// where BiasAct applies a run-time selected activation (Activation enum) and the row broadcast
// reads a null bias as zeros without touching memory.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>

#include <cuda_runtime.h>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/numeric_types.h"
#include "cutlass/array.h"
#include "cutlass/kernel_hardware_info.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/kernel/tile_scheduler.hpp"

#include "sm90_gemm_configs.cuh"

namespace pgk::gemm::sm90 {

// ---- epilogue functor: act(acc + bias), activation chosen at run time ---------------------------
struct ActArgs {
  int mode = 0;  // Activation: 0 none, 1 relu, 2 gelu (erf), 3 gelu (tanh)
};

CUTLASS_HOST_DEVICE float act_scalar_relu(float x) { return x > 0.f ? x : 0.f; }
CUTLASS_HOST_DEVICE float act_scalar_gelu(float x) {
  return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
}
CUTLASS_HOST_DEVICE float act_scalar_gelu_tanh(float x) {
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  -- accurate tanhf, not tanh.approx
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.f + tanhf(u));
}

template <class T>
struct BiasAct {
  using Arguments = ActArgs;
  CUTLASS_HOST_DEVICE T operator()(T const& acc, T const& bias, Arguments const& a) const {
    float x = float(acc) + float(bias);
    switch (a.mode) {
      case 1: x = act_scalar_relu(x); break;
      case 2: x = act_scalar_gelu(x); break;
      case 3: x = act_scalar_gelu_tanh(x); break;
      default: break;
    }
    return T(x);
  }
};

template <class T, int N>
struct BiasAct<cutlass::Array<T, N>> {
  using Arguments = ActArgs;
  CUTLASS_HOST_DEVICE cutlass::Array<T, N> operator()(cutlass::Array<T, N> const& acc,
                                                      cutlass::Array<T, N> const& bias,
                                                      Arguments const& a) const {
    cutlass::Array<T, N> r;
    // One branch per fragment, the loops inside it.
    if (a.mode == 0) {
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < N; ++i) r[i] = acc[i] + bias[i];
    } else if (a.mode == 1) {
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < N; ++i) r[i] = T(act_scalar_relu(float(acc[i] + bias[i])));
    } else if (a.mode == 2) {
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < N; ++i) r[i] = T(act_scalar_gelu(float(acc[i] + bias[i])));
    } else {
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < N; ++i) r[i] = T(act_scalar_gelu_tanh(float(acc[i] + bias[i])));
    }
    return r;
  }
};

// ---- the kernel type --------------------------------------------------------------------------
template <class ElementAB_, bool BColMajor, class TileShape_, class ClusterShape_>
struct Sm90Gemm {
  using ElementAB = ElementAB_;
  using ElementD = ElementAB_;      // output has the input dtype
  using ElementBias = ElementAB_;
  using ElementAcc = float;
  using ElementCompute = float;
  using TileShape = TileShape_;
  using ClusterShape = ClusterShape_;

  // TF32 WGMMA reads shared-memory operands K-major only.  With a row-major (N-contiguous) B the
  // kernel computes C^T = B^T A^T instead: its "A" is B^T (M-major, so CUTLASS's builder picks
  // the register-sourced mainloop, which transposes it on the way from shared memory to
  // registers), its "B" is A^T (K-major) and its column-major D is our row-major C; the bias (one
  // value per column of C) becomes a column broadcast.  No copy of B is made.
  static constexpr bool kTransposed = !BColMajor && sizeof(ElementAB) == 4;
  using LayoutA = cute::conditional_t<kTransposed, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  using LayoutB = cute::conditional_t<BColMajor || kTransposed, cutlass::layout::ColumnMajor,
                                      cutlass::layout::RowMajor>;
  using LayoutD = cute::conditional_t<kTransposed, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  static constexpr int kAlign = 16 / int(sizeof(ElementAB));

  using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
  using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
  static constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;

  using BiasNode = cute::conditional_t<
      kTransposed,
      cutlass::epilogue::fusion::Sm90ColBroadcast<
          0, TileShape, ElementBias, ElementCompute, cute::Stride<cute::_1, cute::_0, int64_t>, 1>,
      cutlass::epilogue::fusion::Sm90RowBroadcast<
          0, TileShape, ElementBias, ElementCompute, cute::Stride<cute::_0, cute::_1, int64_t>, 1>>;
  using Callbacks = cutlass::epilogue::fusion::Sm90EVT<
      cutlass::epilogue::fusion::Sm90Compute<BiasAct, ElementD, ElementCompute, kRound>,
      cutlass::epilogue::fusion::Sm90AccFetch, BiasNode>;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, ElementAcc, ElementCompute,
      void, LayoutD, kAlign,        // no C operand
      ElementD, LayoutD, kAlign,
      EpilogueSchedule, Callbacks>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      ElementAB, LayoutA, kAlign,
      ElementAB, LayoutB, kAlign,
      ElementAcc, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;

  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<
      cute::Shape<int, int, int, int>, CollectiveMainloop, CollectiveEpilogue,
      cutlass::gemm::StreamKScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;
  // CUTLASS's own operand swap (register-sourced mainloop with a K-major A and an MN-major B)
  // would leave the epilogue's TMA descriptor unswapped: never take that path.
  static_assert(!cutlass::gemm::kernel::detail::Has_SwapAB_v<CollectiveMainloop>,
                "operand swap must be done by the problem (kTransposed), not the mainloop");

  using Arguments = typename Gemm::Arguments;
  using SchedArgs = typename GemmKernel::TileSchedulerArguments;
  using Scheduler = typename GemmKernel::TileScheduler;
  using Decomp = typename Scheduler::DecompositionMode;
  using Raster = typename Scheduler::RasterOrderOptions;

  static int sm_count(int dev) {
    static int cached[64] = {0};
    if (dev < 0 || dev >= 64) return 0;
    if (cached[dev] == 0) {
      int n = 0;
      if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 0;
      cached[dev] = n;
    }
    return cached[dev];
  }

  static bool smem_attr_set(int dev) {
    static std::atomic<bool> done[64] = {};
    if (dev < 0 || dev >= 64) return false;
    if (done[dev].load(std::memory_order_acquire)) return true;
    constexpr int smem = GemmKernel::SharedStorageSize;
    if (smem >= (48 << 10)) {
      if (cudaFuncSetAttribute(cutlass::device_kernel<GemmKernel>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
        cudaGetLastError();
        return false;
      }
    }
    done[dev].store(true, std::memory_order_release);
    return true;
  }

  static Arguments make_args(const Problem& p, const RunOpts& o, int sms, int dev) {
    const int64_t L = p.batch;
    const int64_t bsa = L > 1 ? p.batch_stride_a : 0, bsb = L > 1 ? p.batch_stride_b : 0;
    const int64_t bsc = L > 1 ? p.batch_stride_c : 0;
    Arguments args{};
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    auto& fa = args.epilogue.thread;  // op_0 acc fetch, op_1 bias broadcast, op_2 BiasAct
    if constexpr (kTransposed) {
      // (n, m, k) problem: "A" = B^T, (n,k) at k*ldb + n; "B" = A^T, (m,k) at m*lda + k;
      // D = C^T, (n,m) at m*ldc + n.
      args.problem_shape = cute::make_shape(p.n, p.m, p.k, p.batch);
      args.mainloop.ptr_A = static_cast<ElementAB const*>(p.b);
      args.mainloop.dA = cute::make_stride(cute::Int<1>{}, int64_t(p.ldb), bsb);
      args.mainloop.ptr_B = static_cast<ElementAB const*>(p.a);
      args.mainloop.dB = cute::make_stride(int64_t(p.lda), cute::Int<1>{}, bsa);
      args.epilogue.dC = args.epilogue.dD = cute::make_stride(cute::Int<1>{}, int64_t(p.ldc), bsc);
      fa.op_1.ptr_col = static_cast<ElementBias const*>(p.bias);
      fa.op_1.dCol = cute::make_stride(cute::_1{}, cute::_0{}, int64_t(0));
    } else {
      // A (m,k) at m*lda + k; B (n,k) at n*ldb + k (col-major) or k*ldb + n; D (m,n) at m*ldc + n.
      args.problem_shape = cute::make_shape(p.m, p.n, p.k, p.batch);
      args.mainloop.ptr_A = static_cast<ElementAB const*>(p.a);
      args.mainloop.dA = cute::make_stride(int64_t(p.lda), cute::Int<1>{}, bsa);
      args.mainloop.ptr_B = static_cast<ElementAB const*>(p.b);
      if constexpr (BColMajor) {
        args.mainloop.dB = cute::make_stride(int64_t(p.ldb), cute::Int<1>{}, bsb);
      } else {
        args.mainloop.dB = cute::make_stride(cute::Int<1>{}, int64_t(p.ldb), bsb);
      }
      args.epilogue.dC = args.epilogue.dD = cute::make_stride(int64_t(p.ldc), cute::Int<1>{}, bsc);
      fa.op_1.ptr_row = static_cast<ElementBias const*>(p.bias);
      fa.op_1.dRow = cute::make_stride(cute::_0{}, cute::_1{}, int64_t(0));
    }
    args.epilogue.ptr_C = nullptr;
    args.epilogue.ptr_D = static_cast<ElementD*>(p.c);
    fa.op_1.null_default = ElementBias(0);
    fa.op_2.mode = static_cast<int>(p.act);
    args.hw_info.device_id = dev;
    args.hw_info.sm_count = sms;
    SchedArgs& sa = args.scheduler;
    sa.splits = o.decomposition == 2 ? (o.splits > 1 ? o.splits : 2) : 1;
    sa.max_swizzle_size = o.swizzle > 0 ? o.swizzle : 1;
    sa.raster_order = o.raster == 1 ? Raster::AlongM : o.raster == 2 ? Raster::AlongN : Raster::Heuristic;
    sa.decomposition_mode = o.decomposition == 0   ? Decomp::Heuristic
                            : o.decomposition == 2 ? Decomp::SplitK
                            : o.decomposition == 3 ? Decomp::StreamK
                                                   : Decomp::DataParallel;
    return args;
  }

  static cudaError_t run(const Problem& p, const RunOpts& o, void* ws, size_t ws_bytes,
                         cudaStream_t s, size_t* ws_needed) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return cudaErrorNotSupported;
    const int sms = sm_count(dev);
    if (sms <= 0) return cudaErrorNotSupported;
    Arguments args = make_args(p, o, sms, dev);
    size_t need = Gemm::get_workspace_size(args);
    if (ws_needed) {
      *ws_needed = need;
      return cudaSuccess;
    }
    if (need > ws_bytes || (need > 0 && ws == nullptr)) {
      // Not enough workspace for this decomposition: run data-parallel (no workspace) instead.
      RunOpts dp = o;
      dp.decomposition = 1;
      dp.splits = 1;
      args = make_args(p, dp, sms, dev);
      need = Gemm::get_workspace_size(args);
      if (need > ws_bytes || (need > 0 && ws == nullptr)) return cudaErrorNotSupported;
    }
    // Raise the dynamic shared-memory limit once per device (not on every call, as
    // GemmUniversalAdapter::initialize does), then build the params and launch directly.
    if (!smem_attr_set(dev)) return cudaErrorNotSupported;
    if (need > 0) {
      cutlass::Status st = GemmKernel::initialize_workspace(args, ws, s);
      if (st != cutlass::Status::kSuccess) {
        cudaError_t e = cudaGetLastError();
        return e != cudaSuccess ? e : cudaErrorLaunchFailure;
      }
    }
    typename GemmKernel::Params params = GemmKernel::to_underlying_arguments(args, ws);
    cutlass::Status st = Gemm::run(params, s);
    if (st != cutlass::Status::kSuccess) {
      cudaError_t e = cudaGetLastError();
      return e != cudaSuccess ? e : cudaErrorLaunchFailure;
    }
    return cudaGetLastError();
  }
};

}  // namespace pgk::gemm::sm90

#define PGK_SM90_DEFINE(name, Elem, BCol, TM, TN, TK, CM, CN)                                  \
  PGK_SM90_DECLARE(name) {                                                                    \
    using K = ::pgk::gemm::sm90::Sm90Gemm<Elem, BCol, cute::Shape<cute::Int<TM>, cute::Int<TN>, \
                                          cute::Int<TK>>,                                     \
                                          cute::Shape<cute::Int<CM>, cute::Int<CN>, cute::_1>>; \
    return K::run(p, o, ws, ws_bytes, s, ws_needed);                                          \
  }
