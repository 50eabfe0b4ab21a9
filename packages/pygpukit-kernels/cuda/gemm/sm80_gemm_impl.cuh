// Ampere-style multistage mma.sync GEMMs (CUTLASS 2.x GemmUniversal), included only by the
// sm80_*.cu instantiation units.  SASS runs on sm_80 and every later arch (mma.sync + cp.async).
//
// Layouts: A row-major, B row- or column-major, C/D row-major.  Batches through kBatched mode
// (stride 0 = broadcast).  Bias: the C operand with ldc = 0 and batch stride 0, beta = 1.
#pragma once

#include <climits>
#include <cstdint>

#include <cuda_runtime.h>

#include "cutlass/cutlass.h"
#include "cutlass/gemm/device/gemm_universal.h"
#include "cutlass/gemm/threadblock/threadblock_swizzle.h"
#include "cutlass/layout/matrix.h"
#include "cutlass/numeric_types.h"

#include "epilogue_runtime_act.cuh"
#include "gemm_problem.cuh"
#include "sm80_gemm.cuh"

namespace pgk::gemm::sm80 {

template <typename Element, bool BCol, typename TB, typename Warp, typename Inst, int Stages,
          typename MathOp>
cudaError_t launch(const Problem& p, cudaStream_t stream, const char* name) {
  constexpr int kAlign = 128 / cutlass::sizeof_bits<Element>::value;
  using LayoutB = std::conditional_t<BCol, cutlass::layout::ColumnMajor, cutlass::layout::RowMajor>;
  using Epilogue = LinearCombinationRuntimeAct<Element, kAlign, float, float>;
  using Gemm = cutlass::gemm::device::GemmUniversal<
      Element, cutlass::layout::RowMajor, Element, LayoutB, Element, cutlass::layout::RowMajor,
      float, cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80, TB, Warp, Inst, Epilogue,
      cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<8>, Stages, kAlign, kAlign,
      MathOp>;

  const bool has_bias = p.bias != nullptr;
  typename Epilogue::Params ep(1.0f, has_bias ? 1.0f : 0.0f, static_cast<int>(p.act));
  const auto mode = p.batch > 1 ? cutlass::gemm::GemmUniversalMode::kBatched
                                : cutlass::gemm::GemmUniversalMode::kGemm;
  typename Gemm::Arguments args(
      mode, cutlass::gemm::GemmCoord(p.m, p.n, p.k), p.batch, ep, p.a, p.b,
      has_bias ? p.bias : p.c, p.c, p.batch_stride_a, p.batch_stride_b,
      has_bias ? 0 : p.batch_stride_c, p.batch_stride_c, p.lda, p.ldb, has_bias ? 0 : p.ldc,
      p.ldc);
  if (Gemm::can_implement(args) != cutlass::Status::kSuccess) return cudaErrorNotSupported;
  // Shared memory of the tile vs this device's opt-in limit (99 KiB on sm_86/89/120).
  int dev = 0, smem_optin = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
          cudaSuccess)
    return cudaErrorNotSupported;
  if (sizeof(typename Gemm::GemmKernel::SharedStorage) > static_cast<size_t>(smem_optin))
    return cudaErrorNotSupported;
  Gemm op;
  if (op.initialize(args, nullptr, stream) != cutlass::Status::kSuccess)
    return cudaErrorLaunchFailure;
  note_kernel(name);
  cutlass::Status st = op.run(stream);
  return st == cutlass::Status::kSuccess ? cudaSuccess : cudaErrorLaunchFailure;
}

using cutlass::gemm::GemmShape;

// Kind x Tile -> CUTLASS configuration.
template <int Kind, int Tile>
struct Config;
// float16 / bfloat16: 128x256x32 (3 stages, 72 KiB smem: fits the 99 KiB of sm_86/89/120) and
// 64x64x32 (5 stages, 40 KiB).
template <int Kind>
struct HalfLarge {
  using TB = GemmShape<128, 256, 32>;
  using Warp = GemmShape<64, 64, 32>;
  using Inst = GemmShape<16, 8, 16>;
  static constexpr int kStages = 3;
  using Op = cutlass::arch::OpMultiplyAdd;
};
template <int Kind>
struct HalfSmall {
  using TB = GemmShape<64, 64, 32>;
  using Warp = GemmShape<32, 32, 32>;
  using Inst = GemmShape<16, 8, 16>;
  static constexpr int kStages = 5;
  using Op = cutlass::arch::OpMultiplyAdd;
};
// float32, one TF32 product: 128x128x16 (4 stages, 64 KiB); both: 64x64x16 (5 stages, 40 KiB).
template <typename MathOp>
struct F32Large {
  using TB = GemmShape<128, 128, 16>;
  using Warp = GemmShape<64, 32, 16>;
  using Inst = GemmShape<16, 8, 8>;
  static constexpr int kStages = 4;
  using Op = MathOp;
};
// 3xTF32 (about 3x the mma work and twice the registers per fragment): 64x32 warp tiles (no
// spills; 64x64 spills), 128x128x32 with 3 stages (96 KiB: fits the 99 KiB of sm_86/89/120).
// On an H200 this measured 71.6 TFLOP/s at 4096^3 vs 68-69 for 128x128x16 (3 or 4 stages).
struct F32x3Large {
  using TB = GemmShape<128, 128, 32>;
  using Warp = GemmShape<64, 32, 32>;
  using Inst = GemmShape<16, 8, 8>;
  static constexpr int kStages = 3;
  using Op = cutlass::arch::OpMultiplyAddFastF32;
};
template <typename MathOp>
struct F32Small {
  using TB = GemmShape<64, 64, 16>;
  using Warp = GemmShape<32, 32, 16>;
  using Inst = GemmShape<16, 8, 8>;
  static constexpr int kStages = 5;
  using Op = MathOp;
};

template <int Kind> struct ElementOf;
template <> struct ElementOf<kF16> { using T = cutlass::half_t; };
template <> struct ElementOf<kBF16> { using T = cutlass::bfloat16_t; };
template <> struct ElementOf<kTF32> { using T = float; };
template <> struct ElementOf<kF32x3> { using T = float; };

template <int Kind, int Tile>
struct ConfigOf {
  static constexpr bool kHalf = Kind == kF16 || Kind == kBF16;
  using MathOp = std::conditional_t<Kind == kF32x3, cutlass::arch::OpMultiplyAddFastF32,
                                    cutlass::arch::OpMultiplyAdd>;
  using type = std::conditional_t<
      kHalf, std::conditional_t<Tile == kLarge, HalfLarge<Kind>, HalfSmall<Kind>>,
      std::conditional_t<Tile == kLarge,
                         std::conditional_t<Kind == kF32x3, F32x3Large, F32Large<MathOp>>,
                         F32Small<MathOp>>>;
};

template <int Kind, int Tile, bool BCol>
cudaError_t run(const Problem& p, cudaStream_t s) {
  using C = typename ConfigOf<Kind, Tile>::type;
  return launch<typename ElementOf<Kind>::T, BCol, typename C::TB, typename C::Warp,
                typename C::Inst, C::kStages, typename C::Op>(p, s, kernel_name(Kind, Tile, BCol));
}

#define PGK_SM80_INSTANTIATE(KIND, TILE)                                               \
  template cudaError_t run<KIND, TILE, false>(const Problem&, cudaStream_t);          \
  template cudaError_t run<KIND, TILE, true>(const Problem&, cudaStream_t);

}  // namespace pgk::gemm::sm80
