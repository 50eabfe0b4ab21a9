// FP8 GEMM on the mma.sync FP8 tensor cores (sm_89+): the CUTLASS 2.x kernel template.  Included
// only by the sm89_fp8_k_*.cu instantiation units; built for sm_89, sm_90, sm_100 and sm_120
// (mma.sync.m16n8k32 with e4m3/e5m2 operands exists from sm_89 on: Ada, and every later arch
// runs it, Hopper and Blackwell included).
//
//   C = act(acc * sa * sb * scale_a[m] * scale_b[n] + bias[n]),   acc = sum_k A[m,k] B[n,k]
//
// the same product as the sm_90a family (sm90_fp8_kernel.cuh): A (M, K) row-major, B (N, K)
// row-major (a column-major K x N operand for CUTLASS), float32 accumulation.  Mainloop: the
// Ampere-style multistage cp.async pipeline (CUTLASS's Sm89 DefaultGemm).  Epilogue: CUTLASS 2.x
// visitor tree (EVT),
//     Store(ScaleBiasAct(acc, Scalars(sa, sb), ColBroadcast(scale_a), RowBroadcast(scale_b),
//                        RowBroadcast(bias)))
// so one instantiation serves every scale kind, with or without bias, and any activation (null
// pointers read as 1 for scales and 0 for the bias; the activation is a run-time argument).
//
// Output accesses are one element wide (kAlignC = 1): the visitor loads/stores guard each access
// by its first element only, so a vector access would read past n in scale_b / bias and write
// past n in C; with one element per access any n and any ldc work.  The price, measured on an
// H200 (these kernels forced there; e4m3 -> bf16, per-row/column scales and bias): 255 vs 265
// TFLOP/s at 4096^3 for 8-element accesses, 259 vs 271 at 4096x14336x4096, within 3% for
// M <= 256 -- less than a second, vector-aligned set of nine kernels would add to the wheel.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "cute/tensor.hpp"
#include "cutlass/array.h"
#include "cutlass/cutlass.h"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/default_gemm_universal_with_visitor.h"
// After the GEMM headers: the visitors name cutlass::gemm and the epilogue thread maps.
#include "cutlass/epilogue/threadblock/fusion/visitors.hpp"
#include "cutlass/gemm/threadblock/threadblock_swizzle.h"
#include "cutlass/layout/matrix.h"
#include "cutlass/numeric_conversion.h"
#include "cutlass/numeric_types.h"

#include "epilogue_runtime_act.cuh"
#include "sm89_fp8_configs.cuh"

namespace pgk::gemm::sm89fp8 {

// The root compute node of the epilogue tree: act(acc * s * ra * cb + bias) in float32 with the
// activation read from the kernel's parameters (CUTLASS's VisitorCompute default-constructs its
// functor, so it cannot carry a run-time activation).
template <class ElementOut>
struct ScaleBiasActNode {
  struct Arguments {
    int act = 0;  // pgk::gemm::Activation
  };
  using Params = Arguments;
  struct SharedStorage {};

  template <class ProblemShape>
  static constexpr Params to_underlying_arguments(ProblemShape const&, Arguments const& args,
                                                  void*) {
    return args;
  }
  template <class ProblemShape>
  static size_t get_workspace_size(ProblemShape const&, Arguments const&) {
    return 0;
  }

  CUTLASS_HOST_DEVICE ScaleBiasActNode() {}
  CUTLASS_HOST_DEVICE ScaleBiasActNode(Params const& params, SharedStorage const&)
      : params_ptr(&params) {}

  Params const* params_ptr = nullptr;

  struct Callbacks : cutlass::epilogue::threadblock::EmptyCallbacks {
    int act;
    CUTLASS_DEVICE explicit Callbacks(int a) : act(a) {}

    // frg_acc: the raw accumulators (every node gets them); acc: the same values through the
    // AccFetch child, which the tree passes as the first input.
    template <class ElementAcc, class ElementIn, class ElementBias, int N>
    CUTLASS_DEVICE cutlass::Array<ElementOut, N> visit(
        int, int, int, int, cutlass::Array<ElementAcc, N> const&,
        cutlass::Array<ElementIn, N> const& acc, cutlass::Array<float, N> const& s,
        cutlass::Array<float, N> const& ra,
        cutlass::Array<float, N> const& cb, cutlass::Array<ElementBias, N> const& bias) {
      cutlass::Array<float, N> r;
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < N; ++i)
        r[i] = float(acc[i]) * s[i] * ra[i] * cb[i] + float(bias[i]);
      // One branch per fragment, the loop inside it.
      if (act != 0) {
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < N; ++i) r[i] = ::pgk::gemm::apply_activation<float>(r[i], act);
      }
      cutlass::NumericArrayConverter<ElementOut, float, N,
                                     cutlass::FloatRoundStyle::round_to_nearest> convert;
      return convert(r);
    }
  };

  template <class ProblemShape>
  CUTLASS_DEVICE Callbacks get_callbacks(cutlass::gemm::GemmCoord, int, ProblemShape) {
    return Callbacks(params_ptr->act);
  }
};

// Threadblock 128x128x64 with eight 64x32x64 warps, 4 stages: 64 KiB of shared memory, under
// the 99 KiB a block may have on sm_89 / sm_120 and far under sm_90 / sm_100's 227 KiB.  64x64x64
// warps (CUTLASS's usual FP8 warp tile) need 255 registers and spill 640 bytes per thread with
// this epilogue (ptxas, sm_89, CUDA 13.0); 64x32x64 warps take 198 registers without spills.
using TileShape = cutlass::gemm::GemmShape<128, 128, 64>;
using WarpShape = cutlass::gemm::GemmShape<64, 32, 64>;
constexpr int kStages = 4;
constexpr int kAlignC = 1;

template <class EA, class EB, class ED, class TB = TileShape, class Warp = WarpShape,
          int Stages = kStages, int AlignC = kAlignC>
struct Sm89Fp8Gemm {
  using Inst = cutlass::gemm::GemmShape<16, 8, 32>;
  static constexpr int kAlignAB = 16;  // 16-byte cp.async of FP8
  static constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;
  static constexpr int kEpilogueStages = 1;

  using ThreadMap = cutlass::epilogue::threadblock::OutputTileThreadLayout<TB, Warp, ED, AlignC,
                                                                           kEpilogueStages>;
  using Acc = cutlass::epilogue::threadblock::VisitorAccFetch;
  using Scalars = cutlass::epilogue::threadblock::VisitorScalarBroadcast<
      float, cute::Stride<cute::_0, cute::_0, cute::_0>, 2>;
  using RowScale = cutlass::epilogue::threadblock::VisitorColBroadcast<
      ThreadMap, float, cute::Stride<cute::_1, cute::_0, int64_t>>;
  using ColScale = cutlass::epilogue::threadblock::VisitorRowBroadcast<
      ThreadMap, float, cute::Stride<cute::_0, cute::_1, int64_t>>;
  using Bias = cutlass::epilogue::threadblock::VisitorRowBroadcast<
      ThreadMap, ED, cute::Stride<cute::_0, cute::_1, int64_t>>;
  using Compute = cutlass::epilogue::threadblock::Sm80EVT<ScaleBiasActNode<ED>, Acc, Scalars,
                                                          RowScale, ColScale, Bias>;
  using Store = cutlass::epilogue::threadblock::VisitorAuxStore<
      ThreadMap, ED, kRound, cute::Stride<int64_t, cute::_1, int64_t>>;
  using Callbacks = cutlass::epilogue::threadblock::Sm80EVT<Store, Compute>;

  using GemmKernel = typename cutlass::gemm::kernel::DefaultGemmWithVisitor<
      EA, cutlass::layout::RowMajor, cutlass::ComplexTransform::kNone, kAlignAB,
      EB, cutlass::layout::ColumnMajor, cutlass::ComplexTransform::kNone, kAlignAB,
      ED, cutlass::layout::RowMajor, AlignC,
      float, float, cutlass::arch::OpClassTensorOp, cutlass::arch::Sm89, TB, Warp, Inst,
      Callbacks, cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<8>, Stages,
      cutlass::arch::OpMultiplyAdd, kEpilogueStages>::GemmKernel;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;

  static typename Gemm::Arguments make_args(const Fp8Problem& p) {
    const int64_t m = p.m, n = p.n;
    typename Callbacks::Arguments cb{
        {
            {},                                                      // Acc
            {{1.f, 1.f}, {p.sa, p.sb}, {}},                          // Scalars
            {p.row_a, 1.f, {cute::_1{}, cute::_0{}, m}},             // RowScale
            {p.col_b, 1.f, {cute::_0{}, cute::_1{}, n}},             // ColScale
            {static_cast<ED const*>(p.bias), ED(0.f), {cute::_0{}, cute::_1{}, n}},  // Bias
            {p.act},                                                 // ScaleBiasAct
        },
        {static_cast<ED*>(p.c), {int64_t(p.ldc), cute::_1{}, m * int64_t(p.ldc)}},  // Store
    };
    return typename Gemm::Arguments(
        cutlass::gemm::GemmUniversalMode::kGemm, cutlass::gemm::GemmCoord(p.m, p.n, p.k),
        1, cb, p.a, p.b, nullptr, nullptr, 0, 0, 0, 0, p.lda, p.ldb, 0, 0);
  }

  static cudaError_t run(const Fp8Problem& p, cudaStream_t s) {
    typename Gemm::Arguments args = make_args(p);
    if (Gemm::can_implement(args) != cutlass::Status::kSuccess) return cudaErrorNotSupported;
    if (Gemm::get_workspace_size(args) != 0) return cudaErrorNotSupported;
    // Shared memory of the tile vs this device's opt-in limit.
    int dev = 0, smem_optin = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
            cudaSuccess)
      return cudaErrorNotSupported;
    if (sizeof(typename GemmKernel::SharedStorage) > static_cast<size_t>(smem_optin))
      return cudaErrorNotSupported;
    Gemm op;
    if (op.initialize(args, nullptr, s) != cutlass::Status::kSuccess) return cudaErrorLaunchFailure;
    if (op.run(s) != cutlass::Status::kSuccess) {
      const cudaError_t err = cudaGetLastError();
      return err != cudaSuccess ? err : cudaErrorLaunchFailure;
    }
    return cudaSuccess;
  }
};

}  // namespace pgk::gemm::sm89fp8

#define PGK_FP8MMA_E4 cutlass::float_e4m3_t
#define PGK_FP8MMA_E5 cutlass::float_e5m2_t
#define PGK_FP8MMA_OUT_bf16 cutlass::bfloat16_t
#define PGK_FP8MMA_OUT_f16 cutlass::half_t
#define PGK_FP8MMA_OUT_f32 float
// name, A element, B element, output tag.
#define PGK_FP8MMA_DEFINE(name, EA, EB, out)                                             \
  PGK_FP8MMA_DECLARE(name) {                                                             \
    return ::pgk::gemm::sm89fp8::Sm89Fp8Gemm<EA, EB, PGK_FP8MMA_OUT_##out>::run(p, s);   \
  }
