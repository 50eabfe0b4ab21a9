// Hopper (sm_90a) GEMM family: the CUTLASS 3 kernel template.  Included only by the kernel
// translation units (sm90_k_*.cu) and the configuration probe (benchmarks/gemm_probe/).
//
// Kernels: TMA + WGMMA warp-specialized mainloops, either
//   - cooperative (1 producer warp group, 2 consumer warp groups sharing one tile of >= 128 rows)
//     on the stream-K tile scheduler, which also runs plain data-parallel and split-K, or
//   - ping-pong (2 consumer warp groups, each on its own tile, their epilogues overlapping the
//     other's mainloop) on the persistent data-parallel scheduler (CUTLASS has no stream-K for it);
// TMA-store epilogue with the visitor tree
//     D = BiasAct(acc, RowBroadcast(bias))           (no C operand: ElementC = void)
// where BiasAct applies a run-time selected activation (Activation enum) and the row broadcast
// reads a null bias as zeros without touching memory.
//
// Swap (transposed problem): the kernel computes C^T = B^T A^T, so its M is our N and its N our
// M.  Small-M products then get a narrow kernel N tile (64) instead of a 128-row tile that is
// mostly empty.  TF32 with a row-major B always runs this way (TF32 WGMMA reads K-major
// shared-memory operands only; see kTransposed).
//
// Host side: the launch parameters (TMA descriptors included) are cached per thread and problem,
// so a repeated product (same shape, operands and workspace) skips the argument conversion, and
// the launch goes straight to cudaLaunchKernelExC (no per-call cudaFuncSetAttribute as in
// CUTLASS's adapter).
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>

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

#include "launch_utils.cuh"
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


// What a cached launch depends on besides the kernel type: every field is compared bytewise, so
// the struct is zeroed before it is filled (no stray padding bytes).
struct LaunchKey {
  const void *a, *b, *c, *bias;
  void* ws;
  uint64_t ws_bytes;
  int64_t lda, ldb, ldc, bsa, bsb, bsc;
  int m, n, k, batch, act, dev;
  RunOpts o;
};

// ---- the kernel type --------------------------------------------------------------------------
template <class ElementAB_, bool BColMajor, class TileShape_, class ClusterShape_, bool PingPong,
          bool Swap>
struct Sm90Gemm {
  using ElementAB = ElementAB_;
  using ElementD = ElementAB_;      // output has the input dtype
  using ElementBias = ElementAB_;
  using ElementAcc = float;
  using ElementCompute = float;
  using TileShape = TileShape_;
  using ClusterShape = ClusterShape_;

  // The kernel runs C^T = B^T A^T: its "A" is B^T (n, k), its "B" is A^T (m, k) (K-major), its
  // column-major D is our row-major C, and the bias (one value per column of C) becomes a column
  // broadcast.  No operand is copied.  TF32 WGMMA reads K-major operands only, so TF32 with a
  // row-major B always takes this path: its "A" is then M-major and CUTLASS's builder picks the
  // register-sourced mainloop, which transposes it on the way from shared memory to registers.
  static constexpr bool kTransposed = Swap || (!BColMajor && sizeof(ElementAB) == 4);
  using LayoutA = cute::conditional_t<kTransposed && !BColMajor, cutlass::layout::ColumnMajor,
                                      cutlass::layout::RowMajor>;
  using LayoutB = cute::conditional_t<BColMajor || kTransposed, cutlass::layout::ColumnMajor,
                                      cutlass::layout::RowMajor>;
  using LayoutD = cute::conditional_t<kTransposed, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  static constexpr int kAlign = 16 / int(sizeof(ElementAB));

  using MainloopSchedule = cute::conditional_t<PingPong, cutlass::gemm::KernelTmaWarpSpecializedPingpong,
                                               cutlass::gemm::KernelTmaWarpSpecializedCooperative>;
  using EpilogueSchedule = cute::conditional_t<PingPong, cutlass::epilogue::TmaWarpSpecialized,
                                               cutlass::epilogue::TmaWarpSpecializedCooperative>;
  // CUTLASS's ping-pong kernel has no stream-K; it runs the persistent data-parallel scheduler.
  using SchedulerTag = cute::conditional_t<PingPong, cutlass::gemm::PersistentScheduler,
                                           cutlass::gemm::StreamKScheduler>;
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
      cute::Shape<int, int, int, int>, CollectiveMainloop, CollectiveEpilogue, SchedulerTag>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;
  using Params = typename GemmKernel::Params;
  // CUTLASS's own operand swap (register-sourced mainloop with a K-major A and an MN-major B)
  // would leave the epilogue's TMA descriptor unswapped: never take that path.
  static_assert(!cutlass::gemm::kernel::detail::Has_SwapAB_v<CollectiveMainloop>,
                "operand swap must be done by the problem (kTransposed), not the mainloop");

  using Arguments = typename Gemm::Arguments;
  using SchedArgs = typename GemmKernel::TileSchedulerArguments;
  using Scheduler = typename GemmKernel::TileScheduler;
  using Raster = typename Scheduler::RasterOrderOptions;
  static constexpr int kClusterM = cute::size<0>(ClusterShape{});
  static constexpr int kClusterN = cute::size<1>(ClusterShape{});

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
      // (n, m, k) problem: "A" = B^T, (n,k) at k*ldb + n (row-major B) or n*ldb + k;
      // "B" = A^T, (m,k) at m*lda + k; D = C^T, (n,m) at m*ldc + n.
      args.problem_shape = cute::make_shape(p.n, p.m, p.k, p.batch);
      args.mainloop.ptr_A = static_cast<ElementAB const*>(p.b);
      if constexpr (BColMajor) {
        args.mainloop.dA = cute::make_stride(int64_t(p.ldb), cute::Int<1>{}, bsb);
      } else {
        args.mainloop.dA = cute::make_stride(cute::Int<1>{}, int64_t(p.ldb), bsb);
      }
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
    sa.max_swizzle_size = o.swizzle > 0 ? o.swizzle : 1;
    sa.raster_order = o.raster == 1 ? Raster::AlongM : o.raster == 2 ? Raster::AlongN : Raster::Heuristic;
    if constexpr (!PingPong) {
      using Decomp = typename Scheduler::DecompositionMode;
      sa.splits = o.decomposition == 2 ? (o.splits > 1 ? o.splits : 2) : 1;
      sa.decomposition_mode = o.decomposition == 0   ? Decomp::Heuristic
                              : o.decomposition == 2 ? Decomp::SplitK
                              : o.decomposition == 3 ? Decomp::StreamK
                                                     : Decomp::DataParallel;
    }
    return args;
  }

  // Data-parallel options: what a decomposition that needs more workspace than given falls back
  // to (the ping-pong kernels never need workspace).
  static RunOpts data_parallel(RunOpts o) {
    o.decomposition = 1;
    o.splits = 1;
    return o;
  }

  // One launch (the grid comes from get_grid_shape: whole clusters, at most one wave for the
  // persistent schedulers).  A 1x1 cluster launches without the cluster attribute, as CUTLASS does.
  static cudaError_t launch(const Params& params, dim3 grid, cudaStream_t s) {
    if (grid.x % kClusterM != 0 || grid.y % kClusterN != 0) return cudaErrorNotSupported;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = GemmKernel::get_block_shape();
    cfg.dynamicSmemBytes = GemmKernel::SharedStorageSize;
    cfg.stream = s;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = kClusterM;
    attr[0].val.clusterDim.y = kClusterN;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = kClusterM * kClusterN > 1 ? 1 : 0;
    void* kernel_args[] = {const_cast<Params*>(&params)};
    return cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(&cutlass::device_kernel<GemmKernel>),
                               kernel_args);
  }

  // Per-thread cache of converted launches (a few entries, replaced round robin): a hit skips
  // make_args / get_workspace_size / to_underlying_arguments (three TMA descriptor encodings).
  struct Entry {
    LaunchKey key;
    Arguments args;
    Params params;
    dim3 grid;
    size_t need;
    bool valid;
  };
  static constexpr int kCacheEntries = 4;

  static cudaError_t run(const Problem& p, const RunOpts& o_in, void* ws, size_t ws_bytes,
                         cudaStream_t s, size_t* ws_needed) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return cudaErrorNotSupported;
    const int sms = sm_count_of_device(dev);
    if (sms <= 0) return cudaErrorNotSupported;
    const RunOpts o = PingPong ? data_parallel(o_in) : o_in;
    if (ws_needed) {
      *ws_needed = Gemm::get_workspace_size(make_args(p, o, sms, dev));
      return cudaSuccess;
    }
    LaunchKey key;
    std::memset(&key, 0, sizeof(key));
    key.a = p.a; key.b = p.b; key.c = p.c; key.bias = p.bias;
    key.ws = ws; key.ws_bytes = ws_bytes;
    key.lda = p.lda; key.ldb = p.ldb; key.ldc = p.ldc;
    key.bsa = p.batch_stride_a; key.bsb = p.batch_stride_b; key.bsc = p.batch_stride_c;
    key.m = p.m; key.n = p.n; key.k = p.k; key.batch = p.batch; key.act = int(p.act); key.dev = dev;
    key.o = o;
    thread_local Entry cache[kCacheEntries] = {};
    thread_local int next = 0;
    Entry* e = nullptr;
    for (Entry& c : cache) {
      if (c.valid && std::memcmp(&c.key, &key, sizeof(key)) == 0) {
        e = &c;
        break;
      }
    }
    if (e == nullptr) {
      Arguments args = make_args(p, o, sms, dev);
      size_t need = Gemm::get_workspace_size(args);
      if (need > ws_bytes || (need > 0 && ws == nullptr)) {
        // Not enough workspace for this decomposition: run data-parallel (no workspace) instead.
        args = make_args(p, data_parallel(o), sms, dev);
        need = Gemm::get_workspace_size(args);
        if (need > ws_bytes || (need > 0 && ws == nullptr)) return cudaErrorNotSupported;
      }
      // No GemmKernel::can_implement here: it also asks for K (and N or M) to be multiples of 16
      // bytes, which TMA does not need (only the strides, checked by sm90_gemm.cu's supported()).
      // Raise the dynamic shared-memory limit once per device (not on every call, as
      // GemmUniversalAdapter::initialize does).
      if (!smem_attr_set(dev)) return cudaErrorNotSupported;
      e = &cache[next];
      next = (next + 1) % kCacheEntries;
      e->valid = false;
      e->key = key;
      e->args = args;
      e->need = need;
      e->params = GemmKernel::to_underlying_arguments(args, ws);
      e->grid = GemmKernel::get_grid_shape(e->params);
      e->valid = true;
    }
    if (e->need > 0) {
      // Split-K / stream-K: the reduction's flags must start cleared on every launch.
      cutlass::Status st = GemmKernel::initialize_workspace(e->args, ws, s);
      if (st != cutlass::Status::kSuccess) {
        cudaError_t err = cudaGetLastError();
        return err != cudaSuccess ? err : cudaErrorLaunchFailure;
      }
    }
    return launch(e->params, e->grid, s);
  }

#ifdef PGK_GEMM_PROBE
  // The probe's reference for host cost: CUTLASS's own path (conversion on every call, adapter
  // launch with its per-call cudaFuncSetAttribute).
  static cudaError_t run_uncached(const Problem& p, const RunOpts& o_in, void* ws, size_t ws_bytes,
                                  cudaStream_t s) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return cudaErrorNotSupported;
    const int sms = sm_count_of_device(dev);
    const RunOpts o = PingPong ? data_parallel(o_in) : o_in;
    Arguments args = make_args(p, o, sms, dev);
    size_t need = Gemm::get_workspace_size(args);
    if (need > ws_bytes) return cudaErrorNotSupported;
    if (!smem_attr_set(dev)) return cudaErrorNotSupported;
    if (need > 0 && GemmKernel::initialize_workspace(args, ws, s) != cutlass::Status::kSuccess)
      return cudaErrorLaunchFailure;
    Params params = GemmKernel::to_underlying_arguments(args, ws);
    if (Gemm::run(params, s) != cutlass::Status::kSuccess) return cudaErrorLaunchFailure;
    return cudaGetLastError();
  }
#endif
};

}  // namespace pgk::gemm::sm90

// name: the KernelFn; Elem: cutlass element type; BCol: B column-major; TM/TN/TK: tile (in the
// kernel's terms: for a swapped kernel TM runs along our N); CM/CN: cluster; PP: ping-pong;
// SW: swapped (transposed) problem.
#define PGK_SM90_DEFINE(name, Elem, BCol, TM, TN, TK, CM, CN, PP, SW)                          \
  PGK_SM90_DECLARE(name) {                                                                    \
    using K = ::pgk::gemm::sm90::Sm90Gemm<Elem, BCol, cute::Shape<cute::Int<TM>, cute::Int<TN>, \
                                          cute::Int<TK>>,                                     \
                                          cute::Shape<cute::Int<CM>, cute::Int<CN>, cute::_1>, \
                                          PP, SW>;                                            \
    return K::run(p, o, ws, ws_bytes, s, ws_needed);                                          \
  }
