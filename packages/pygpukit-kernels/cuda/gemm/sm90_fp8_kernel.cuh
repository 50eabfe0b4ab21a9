// Hopper (sm_90a) FP8 GEMM: the CUTLASS 3 kernel template.  Included only by sm90_k_fp8_*.cu.
//
// TMA + WGMMA warp-specialized mainloop with FP8 fast accumulation (cooperative or ping-pong, on
// the persistent data-parallel tile scheduler: no workspace), TMA-store epilogue computing, with
// the visitor tree,
//     D = ScaleBiasAct(acc, Scalars(sa, sb), PerRow(scale_a), PerCol(scale_b), PerCol(bias))
// so one instantiation serves per-tensor scales (Scalars read from device pointers), per-row
// scales (vector broadcasts), both, and no scale (null pointers read as 1), with or without bias
// (null reads as 0) and with any activation.
//
// Swap: the kernel runs C^T = B^T A^T (its M is our N): our per-row scale of A then runs along
// the kernel's N (a row broadcast) and scale_b / bias along its M (column broadcasts).
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <cuda_runtime.h>

// Programmatic dependent launch (launch_utils.cuh): the kernels are launched with the PDL
// attribute (where pdl_enabled()), so a product's CTAs are placed as the previous kernel's exit
// and run their set-up (barriers, TMA descriptor prefetch) under its tail; CUTLASS's kernels then
// wait (griddepcontrol.wait, in the warps that read global memory first) before touching memory
// and signal their dependents once the last tile's mainloop is done.  Defined before any CUTLASS
// header: it switches those calls on.
#define CUTLASS_ENABLE_GDC_FOR_SM90 1

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

#include "epilogue_runtime_act.cuh"
#include "launch_utils.cuh"
#include "sm90_fp8_configs.cuh"

namespace pgk::gemm::sm90fp8 {

struct ActArgs {
  int mode = 0;  // pgk::gemm::Activation
};

// act(acc * s * ra * cb + bias), all in float32; the activation is chosen at run time.
template <class T>
struct ScaleBiasAct {
  using Arguments = ActArgs;
  CUTLASS_HOST_DEVICE T operator()(T const& acc, T const& s, T const& ra, T const& cb,
                                   T const& bias, Arguments const& a) const {
    return T(::pgk::gemm::apply_activation<float>(float(acc) * float(s) * float(ra) * float(cb) +
                                                  float(bias), a.mode));
  }
};

template <class T, int N>
struct ScaleBiasAct<cutlass::Array<T, N>> {
  using Arguments = ActArgs;
  CUTLASS_HOST_DEVICE cutlass::Array<T, N> operator()(
      cutlass::Array<T, N> const& acc, cutlass::Array<T, N> const& s,
      cutlass::Array<T, N> const& ra, cutlass::Array<T, N> const& cb,
      cutlass::Array<T, N> const& bias, Arguments const& a) const {
    cutlass::Array<T, N> r;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < N; ++i) r[i] = acc[i] * s[i] * ra[i] * cb[i] + bias[i];
    // One branch per fragment, the loop inside it.
    if (a.mode != 0) {
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < N; ++i) r[i] = ::pgk::gemm::apply_activation<float>(float(r[i]), a.mode);
    }
    return r;
  }
};


template <class EA, class EB, class ED, class TileShape_, class ClusterShape_, bool PingPong,
          bool Swap>
struct Sm90Fp8Gemm {
  using TileShape = TileShape_;
  using ClusterShape = ClusterShape_;
  // The kernel's operands: A (kernel M, K) and B (kernel N, K), both K-major.
  using KA = cute::conditional_t<Swap, EB, EA>;
  using KB = cute::conditional_t<Swap, EA, EB>;
  using ElementAcc = float;
  using ElementCompute = float;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  using LayoutD = cute::conditional_t<Swap, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  static constexpr int kAlignAB = 16;
  static constexpr int kAlignD = 16 / int(sizeof(ED));

  using MainloopSchedule =
      cute::conditional_t<PingPong, cutlass::gemm::KernelTmaWarpSpecializedPingpongFP8FastAccum,
                          cutlass::gemm::KernelTmaWarpSpecializedCooperativeFP8FastAccum>;
  using EpilogueSchedule = cute::conditional_t<PingPong, cutlass::epilogue::TmaWarpSpecialized,
                                               cutlass::epilogue::TmaWarpSpecializedCooperative>;
  static constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;

  template <class E>
  using AlongM = cutlass::epilogue::fusion::Sm90ColBroadcast<
      0, TileShape, E, ElementCompute, cute::Stride<cute::_1, cute::_0, int64_t>, 1>;
  template <class E>
  using AlongN = cutlass::epilogue::fusion::Sm90RowBroadcast<
      0, TileShape, E, ElementCompute, cute::Stride<cute::_0, cute::_1, int64_t>, 1>;
  using Scalars = cutlass::epilogue::fusion::Sm90ScalarBroadcast<
      ElementCompute, cute::Stride<cute::_0, cute::_0, int64_t>, 2>;
  // Our rows (scale_a) and our columns (scale_b, bias) in the kernel's terms.
  using RowScale = cute::conditional_t<Swap, AlongN<float>, AlongM<float>>;
  using ColScale = cute::conditional_t<Swap, AlongM<float>, AlongN<float>>;
  using BiasNode = cute::conditional_t<Swap, AlongM<ED>, AlongN<ED>>;

  using Callbacks = cutlass::epilogue::fusion::Sm90EVT<
      cutlass::epilogue::fusion::Sm90Compute<ScaleBiasAct, ED, ElementCompute, kRound>,
      cutlass::epilogue::fusion::Sm90AccFetch, Scalars, RowScale, ColScale, BiasNode>;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, ElementAcc, ElementCompute,
      void, LayoutD, kAlignD,  // no C operand
      ED, LayoutD, kAlignD, EpilogueSchedule, Callbacks>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      KA, LayoutA, kAlignAB,
      KB, LayoutB, kAlignAB,
      ElementAcc, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;

  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<
      cute::Shape<int, int, int, int>, CollectiveMainloop, CollectiveEpilogue,
      cutlass::gemm::PersistentScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;
  using Params = typename GemmKernel::Params;
  using Arguments = typename Gemm::Arguments;
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

  static Arguments make_args(const Fp8Problem& p, int sms, int dev) {
    Arguments args{};
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    // The tree's arguments (a tuple): 0 acc, 1 scalars, 2 row scale, 3 col scale, 4 bias, 5 fn.
    auto& f = args.epilogue.thread;
    if constexpr (Swap) {
      args.problem_shape = cute::make_shape(p.n, p.m, p.k, 1);
      args.mainloop.ptr_A = static_cast<KA const*>(p.b);
      args.mainloop.dA = cute::make_stride(int64_t(p.ldb), cute::Int<1>{}, int64_t(0));
      args.mainloop.ptr_B = static_cast<KB const*>(p.a);
      args.mainloop.dB = cute::make_stride(int64_t(p.lda), cute::Int<1>{}, int64_t(0));
      args.epilogue.dC = args.epilogue.dD =
          cute::make_stride(cute::Int<1>{}, int64_t(p.ldc), int64_t(0));
      cute::get<2>(f).ptr_row = p.row_a;
      cute::get<3>(f).ptr_col = p.col_b;
      cute::get<4>(f).ptr_col = static_cast<ED const*>(p.bias);
    } else {
      args.problem_shape = cute::make_shape(p.m, p.n, p.k, 1);
      args.mainloop.ptr_A = static_cast<KA const*>(p.a);
      args.mainloop.dA = cute::make_stride(int64_t(p.lda), cute::Int<1>{}, int64_t(0));
      args.mainloop.ptr_B = static_cast<KB const*>(p.b);
      args.mainloop.dB = cute::make_stride(int64_t(p.ldb), cute::Int<1>{}, int64_t(0));
      args.epilogue.dC = args.epilogue.dD =
          cute::make_stride(int64_t(p.ldc), cute::Int<1>{}, int64_t(0));
      cute::get<2>(f).ptr_col = p.row_a;
      cute::get<3>(f).ptr_row = p.col_b;
      cute::get<4>(f).ptr_row = static_cast<ED const*>(p.bias);
    }
    cute::get<1>(f).scalars[0] = 1.f;
    cute::get<1>(f).scalars[1] = 1.f;
    cute::get<1>(f).scalar_ptrs[0] = p.sa;
    cute::get<1>(f).scalar_ptrs[1] = p.sb;
    cute::get<2>(f).null_default = 1.f;
    cute::get<3>(f).null_default = 1.f;
    cute::get<4>(f).null_default = ED(0);
    cute::get<5>(f).mode = p.act;
    args.epilogue.ptr_C = nullptr;
    args.epilogue.ptr_D = static_cast<ED*>(p.c);
    args.hw_info.device_id = dev;
    args.hw_info.sm_count = sms;
    return args;
  }

  static cudaError_t launch(const Params& params, dim3 grid, cudaStream_t s) {
    if (grid.x % kClusterM != 0 || grid.y % kClusterN != 0) return cudaErrorNotSupported;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = GemmKernel::get_block_shape();
    cfg.dynamicSmemBytes = GemmKernel::SharedStorageSize;
    cfg.stream = s;
    cudaLaunchAttribute attr[2];
    unsigned n_attr = 0;
    if (kClusterM * kClusterN > 1) {
      attr[n_attr].id = cudaLaunchAttributeClusterDimension;
      attr[n_attr].val.clusterDim.x = kClusterM;
      attr[n_attr].val.clusterDim.y = kClusterN;
      attr[n_attr].val.clusterDim.z = 1;
      ++n_attr;
    }
    n_attr = add_pdl_attribute(attr, n_attr);
    cfg.attrs = attr;
    cfg.numAttrs = n_attr;
    void* kernel_args[] = {const_cast<Params*>(&params)};
    return cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(&cutlass::device_kernel<GemmKernel>),
                               kernel_args);
  }

  // Per-thread cache of converted launches keyed by the whole problem (bytewise): a repeated
  // product skips the argument conversion (TMA descriptor encodings).
  struct Entry {
    Fp8Problem key;
    int dev;
    Params params;
    dim3 grid;
    bool valid;
  };
  static constexpr int kCacheEntries = 4;

  static cudaError_t run(const Fp8Problem& p_in, cudaStream_t s) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return cudaErrorNotSupported;
    const int sms = sm_count_of_device(dev);
    if (sms <= 0) return cudaErrorNotSupported;
    Fp8Problem p;
    std::memset(&p, 0, sizeof(p));  // no stray padding bytes in the key
    p.m = p_in.m; p.n = p_in.n; p.k = p_in.k;
    p.a_dtype = p_in.a_dtype; p.b_dtype = p_in.b_dtype; p.out_dtype = p_in.out_dtype;
    p.a = p_in.a; p.lda = p_in.lda; p.b = p_in.b; p.ldb = p_in.ldb; p.c = p_in.c; p.ldc = p_in.ldc;
    p.sa = p_in.sa; p.sb = p_in.sb; p.row_a = p_in.row_a; p.col_b = p_in.col_b;
    p.bias = p_in.bias; p.act = p_in.act;
    thread_local Entry cache[kCacheEntries] = {};
    thread_local int next = 0;
    Entry* e = nullptr;
    for (Entry& c : cache) {
      if (c.valid && c.dev == dev && std::memcmp(&c.key, &p, sizeof(p)) == 0) {
        e = &c;
        break;
      }
    }
    if (e == nullptr) {
      Arguments args = make_args(p, sms, dev);
      if (Gemm::get_workspace_size(args) != 0) return cudaErrorNotSupported;
      if (!smem_attr_set(dev)) return cudaErrorNotSupported;
      e = &cache[next];
      next = (next + 1) % kCacheEntries;
      e->valid = false;
      e->key = p;
      e->dev = dev;
      e->params = GemmKernel::to_underlying_arguments(args, nullptr);
      e->grid = GemmKernel::get_grid_shape(e->params);
      e->valid = true;
    }
    return launch(e->params, e->grid, s);
  }
};

}  // namespace pgk::gemm::sm90fp8

#define PGK_FP8_E4 cutlass::float_e4m3_t
#define PGK_FP8_E5 cutlass::float_e5m2_t
#define PGK_FP8_OUT_bf16 cutlass::bfloat16_t
#define PGK_FP8_OUT_f16 cutlass::half_t
#define PGK_FP8_OUT_f32 float
// name, A element, B element, output tag, tile (kernel terms), cluster, ping-pong, swapped.
#define PGK_FP8_DEFINE(name, EA, EB, out, TM, TN, TK, CM, CN, PP, SW)                              \
  PGK_FP8_DECLARE(name) {                                                                         \
    using K = ::pgk::gemm::sm90fp8::Sm90Fp8Gemm<                                                  \
        EA, EB, PGK_FP8_OUT_##out, cute::Shape<cute::Int<TM>, cute::Int<TN>, cute::Int<TK>>,      \
        cute::Shape<cute::Int<CM>, cute::Int<CN>, cute::_1>, PP, SW>;                             \
    return K::run(p, s);                                                                          \
  }
