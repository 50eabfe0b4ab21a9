// Kernels behind pgk_copy / pgk_fill: a vectorized flat path for C-contiguous operands, an N-d
// path (32-bit or 64-bit index math) for any strided view, and a tiled 2-D transpose for
// same-size copies.  The host side (copy.cu) coalesces dimensions before choosing one.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "dtypes.cuh"
#include "launch_utils.cuh"

namespace pgk {

constexpr int kMaxDims = PGK_MAX_DIMS;
constexpr unsigned kBlock = 256;

// An index space after coalescing: dimension 0 is the innermost (fastest varying).
// Strides are in bytes.
struct Plan {
  int ndim = 0;
  int64_t n = 1;
  int64_t shape[kMaxDims];
  int64_t ss[kMaxDims];
  int64_t ds[kMaxDims];
  const char* src = nullptr;
  char* dst = nullptr;
};

// Kernel parameter block (passed by value).  Idx: unsigned index type, Off: signed byte offset.
template <typename Idx, typename Off>
struct NdParams {
  Idx shape[kMaxDims];
  Off ss[kMaxDims];
  Off ds[kMaxDims];
  Idx n;
  int ndim;
};

template <typename Idx, typename Off>
inline NdParams<Idx, Off> nd_params(const Plan& p) {
  NdParams<Idx, Off> k{};
  for (int d = 0; d < p.ndim; ++d) {
    k.shape[d] = static_cast<Idx>(p.shape[d]);
    k.ss[d] = static_cast<Off>(p.ss[d]);
    k.ds[d] = static_cast<Off>(p.ds[d]);
  }
  k.n = static_cast<Idx>(p.n);
  k.ndim = p.ndim;
  return k;
}

// Whether every index and byte offset of the plan fits the 32-bit kernel.
bool fits_32bit(const Plan& p);

// Validates the arguments of pgk_copy / pgk_fill (has_src false: no source) and coalesces
// the dims: drops size-1 dims, flips dims the destination walks backwards, orders dims by
// destination stride and merges neighbours contiguous on both sides.  Returns
// cudaErrorInvalidValue on bad arguments (including pointers or strides that are not multiples
// of the element size); 0 with plan.n == 0 when there is nothing to do.
int make_plan(const void* src, const int64_t* src_strides, int src_size, void* dst,
              const int64_t* dst_strides, int dst_size, int ndim, const int64_t* shape,
              bool has_src, Plan& plan);

// One flat, dense run on both sides (or a single element).
bool plan_contiguous(const Plan& p, int src_size, int dst_size);

// ---- element operations ----
template <class S, class D>
struct CastOp {
  __device__ __forceinline__ void operator()(const char* s, char* d) const {
    *reinterpret_cast<typename D::T*>(d) =
        convert<S, D>(*reinterpret_cast<const typename S::T*>(s));
  }
};

template <int Bytes>
struct Word;
template <> struct Word<1> { using T = uint8_t; };
template <> struct Word<2> { using T = uint16_t; };
template <> struct Word<4> { using T = uint32_t; };
template <> struct Word<8> { using T = unsigned long long; };
template <> struct Word<16> { using T = uint4; };

template <int Bytes>
struct MoveOp {  // same-size copy: move the bits
  __device__ __forceinline__ void operator()(const char* s, char* d) const {
    using W = typename Word<Bytes>::T;
    *reinterpret_cast<W*>(d) = *reinterpret_cast<const W*>(s);
  }
};

template <int Bytes>
struct FillOp {  // the source pointer is ignored
  typename Word<Bytes>::T value;
  __device__ __forceinline__ void operator()(const char*, char* d) const {
    *reinterpret_cast<typename Word<Bytes>::T*>(d) = value;
  }
};

// ---- the N-d kernel ----
template <class Op, typename Idx, typename Off>
__global__ void __launch_bounds__(kBlock)
nd_kernel(const char* __restrict__ src, char* __restrict__ dst, NdParams<Idx, Off> p, Op op) {
  const Idx stride = static_cast<Idx>(gridDim.x) * blockDim.x;
  for (Idx i = static_cast<Idx>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.n; i += stride) {
    Idx rem = i;
    Off so = 0, dof = 0;
#pragma unroll
    for (int d = 0; d < kMaxDims; ++d) {
      if (d == p.ndim - 1) {  // outermost: no division
        so += static_cast<Off>(rem) * p.ss[d];
        dof += static_cast<Off>(rem) * p.ds[d];
        break;
      }
      const Idx q = rem / p.shape[d];
      const Off c = static_cast<Off>(rem - q * p.shape[d]);
      rem = q;
      so += c * p.ss[d];
      dof += c * p.ds[d];
    }
    op(src + so, dst + dof);
  }
}

template <class Op>
inline int launch_nd(const Plan& p, Op op, cudaStream_t stream) {
  if (fits_32bit(p)) {
    const unsigned grid = grid_for(p.n, kBlock);
    nd_kernel<Op, uint32_t, int32_t>
        <<<grid, kBlock, 0, stream>>>(p.src, p.dst, nd_params<uint32_t, int32_t>(p), op);
  } else {
    const unsigned grid = grid_for(p.n, kBlock);
    nd_kernel<Op, uint64_t, int64_t>
        <<<grid, kBlock, 0, stream>>>(p.src, p.dst, nd_params<uint64_t, int64_t>(p), op);
  }
  return launch_status();
}

// ---- tiled 2-D transpose ----
// 32x32 tiles through shared memory: reads walk the source's dense dim, writes the
// destination's, converting on the way out.  Plan dims: 0 is dense in dst, 1 is dense in src.
constexpr int kTile = 32;
constexpr int kTileRows = 8;

inline bool transpose_like(const Plan& p, int src_size, int dst_size) {
  return p.ndim == 2 && p.ds[0] == dst_size && p.ss[1] == src_size && p.shape[0] >= kTile &&
         p.shape[1] >= kTile && (p.shape[0] + kTile - 1) / kTile <= INT32_MAX;
}

template <typename ST, typename DT_, class Conv>
__global__ void __launch_bounds__(kTile * kTileRows)
transpose_kernel(const char* __restrict__ src, char* __restrict__ dst, int64_t n0, int64_t n1,
                 int64_t ss0, int64_t ss1, int64_t ds0, int64_t ds1, Conv conv) {
  __shared__ ST tile[kTile][kTile + 1];
  const int64_t tiles1 = (n1 + kTile - 1) / kTile;
  for (int64_t t1 = blockIdx.y; t1 < tiles1; t1 += gridDim.y) {
    const int64_t b0 = static_cast<int64_t>(blockIdx.x) * kTile, b1 = t1 * kTile;
    const int64_t i1 = b1 + threadIdx.x;  // read: threadIdx.x along dim 1 (dense in src)
#pragma unroll
    for (int r = threadIdx.y; r < kTile; r += kTileRows) {
      const int64_t i0 = b0 + r;
      if (i0 < n0 && i1 < n1) {
        tile[r][threadIdx.x] = *reinterpret_cast<const ST*>(src + i0 * ss0 + i1 * ss1);
      }
    }
    __syncthreads();
    const int64_t j0 = b0 + threadIdx.x;  // write: threadIdx.x along dim 0 (dense in dst)
#pragma unroll
    for (int r = threadIdx.y; r < kTile; r += kTileRows) {
      const int64_t j1 = b1 + r;
      if (j0 < n0 && j1 < n1) {
        *reinterpret_cast<DT_*>(dst + j0 * ds0 + j1 * ds1) = conv(tile[threadIdx.x][r]);
      }
    }
    __syncthreads();
  }
}

template <typename ST, typename DT_, class Conv>
inline int launch_transpose(const Plan& p, Conv conv, cudaStream_t stream) {
  const int64_t tiles0 = (p.shape[0] + kTile - 1) / kTile;
  const int64_t tiles1 = (p.shape[1] + kTile - 1) / kTile;
  const dim3 grid(static_cast<unsigned>(tiles0),
                  static_cast<unsigned>(tiles1 < 65535 ? tiles1 : 65535));
  transpose_kernel<ST, DT_><<<grid, dim3(kTile, kTileRows), 0, stream>>>(
      p.src, p.dst, p.shape[0], p.shape[1], p.ss[0], p.ss[1], p.ds[0], p.ds[1], conv);
  return launch_status();
}

template <typename W>
struct Identity {
  __device__ __forceinline__ W operator()(W v) const { return v; }
};

template <class S, class D>
struct ConvFn {
  __device__ __forceinline__ typename D::T operator()(typename S::T v) const {
    return convert<S, D>(v);
  }
};

// ---- the contiguous (flat) cast kernel ----
template <typename T, int N>
struct alignas(sizeof(T) * N < 16 ? sizeof(T) * N : 16) Pack {
  T v[N];
};

template <typename T, int N>
__device__ __forceinline__ Pack<T, N> load_pack(const T* p) {
  constexpr int B = sizeof(T) * N;
  constexpr int WB = B < 16 ? B : 16;
  using W = typename Word<WB>::T;
  Pack<T, N> r;
  const W* wp = reinterpret_cast<const W*>(p);
  W* wr = reinterpret_cast<W*>(&r);
#pragma unroll
  for (int k = 0; k < B / WB; ++k) wr[k] = __ldg(wp + k);
  return r;
}

template <typename T, int N>
__device__ __forceinline__ void store_pack(T* p, const Pack<T, N>& v) {
  constexpr int B = sizeof(T) * N;
  constexpr int WB = B < 16 ? B : 16;
  using W = typename Word<WB>::T;
  W* wp = reinterpret_cast<W*>(p);
  const W* wv = reinterpret_cast<const W*>(&v);
#pragma unroll
  for (int k = 0; k < B / WB; ++k) wp[k] = wv[k];
}

// The same with streaming stores (st.global.cs: evict-first, for write-only outputs).
template <typename T, int N>
__device__ __forceinline__ void store_pack_cs(T* p, const Pack<T, N>& v) {
  constexpr int B = sizeof(T) * N;
  constexpr int WB = B < 16 ? B : 16;
  using W = typename Word<WB>::T;
  W* wp = reinterpret_cast<W*>(p);
  const W* wv = reinterpret_cast<const W*>(&v);
#pragma unroll
  for (int k = 0; k < B / WB; ++k) __stcs(wp + k, wv[k]);
}

template <class S, class D>
constexpr int vec_elems() {  // the wider side moves 32 bytes per thread
  constexpr int w = sizeof(typename S::T) > sizeof(typename D::T) ? sizeof(typename S::T)
                                                                    : sizeof(typename D::T);
  return 32 / w;
}

// Needs src and dst aligned to min(16, N * element size) bytes.  Each thread converts `unroll`
// (1..kCastMaxUnroll) packs per step, all loads of a step issued before the first store.
constexpr int kCastMaxUnroll = 4;

inline int cast_unroll() {  // PGK_TUNE_CAST_UNROLL overrides, for benchmarks
  static const int u = tune_knob("PGK_TUNE_CAST_UNROLL", 2, 1, kCastMaxUnroll);
  return u;
}

inline int cast_cs() {  // streaming stores; PGK_TUNE_CAST_CS=0 turns them off, for benchmarks
  static const int c = tune_knob("PGK_TUNE_CAST_CS", 1, 0, 1);
  return c;
}

template <class S, class D>
__global__ void __launch_bounds__(kBlock)
cast_contig_kernel(const typename S::T* __restrict__ src, typename D::T* __restrict__ dst,
                   int64_t n, int unroll, int cs) {
  constexpr int N = vec_elems<S, D>();
  constexpr int MU = (sizeof(typename S::T) == 8 || sizeof(typename D::T) == 8) ? 2 : kCastMaxUnroll;
  pdl_enter();
  const int64_t nvec = n / N;
  const int64_t step = static_cast<int64_t>(kBlock) * unroll;
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * step; base < nvec;
       base += static_cast<int64_t>(gridDim.x) * step) {
    Pack<typename S::T, N> in[MU];
#pragma unroll
    for (int u = 0; u < MU; ++u) {
      const int64_t j = base + u * static_cast<int64_t>(kBlock) + threadIdx.x;
      if (u < unroll && j < nvec) in[u] = load_pack<typename S::T, N>(src + j * N);
    }
#pragma unroll
    for (int u = 0; u < MU; ++u) {
      const int64_t j = base + u * static_cast<int64_t>(kBlock) + threadIdx.x;
      if (u < unroll && j < nvec) {
        Pack<typename D::T, N> out;
#pragma unroll
        for (int k = 0; k < N; ++k) out.v[k] = convert<S, D>(in[u].v[k]);
        if (cs) store_pack_cs<typename D::T, N>(dst + j * N, out);
        else store_pack<typename D::T, N>(dst + j * N, out);
      }
    }
  }
  const int64_t tail = nvec * N + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tail < n) dst[tail] = convert<S, D>(src[tail]);
}

inline bool aligned_to(const void* p, int64_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes)) == 0;
}

// A cast of any plan: the flat vector kernel when both sides are contiguous and aligned,
// otherwise the N-d kernel.
template <class S, class D>
inline int launch_cast(const Plan& p, bool contiguous, cudaStream_t stream) {
  using ST = typename S::T;
  using DT_ = typename D::T;
  constexpr int N = vec_elems<S, D>();
  constexpr int64_t sa = sizeof(ST) * N < 16 ? sizeof(ST) * N : 16;
  constexpr int64_t da = sizeof(DT_) * N < 16 ? sizeof(DT_) * N : 16;
  if (contiguous && aligned_to(p.src, sa) && aligned_to(p.dst, da)) {
    constexpr int MU = (sizeof(ST) == 8 || sizeof(DT_) == 8) ? 2 : kCastMaxUnroll;
    const int unroll = cast_unroll() < MU ? cast_unroll() : MU;
    const int64_t work = (p.n / N + unroll - 1) / unroll;
    launch_k(cast_contig_kernel<S, D>, grid_for(work, kBlock), kBlock, stream,
             reinterpret_cast<const ST*>(p.src), reinterpret_cast<DT_*>(p.dst), p.n, unroll,
             cast_cs());
    return launch_status();
  }
  if (transpose_like(p, sizeof(ST), sizeof(DT_))) {
    return launch_transpose<ST, DT_>(p, ConvFn<S, D>{}, stream);
  }
  return launch_nd(p, CastOp<S, D>{}, stream);
}

// Every cast from source dtype Src (instantiated in copy_cast_*.cu).
template <int Src>
int launch_cast_from(int dst_dtype, const Plan& p, bool contiguous, cudaStream_t stream);

}  // namespace pgk

namespace pgk {

template <int Code> struct TagFor;
template <> struct TagFor<PGK_BOOL> { using type = TBool; };
template <> struct TagFor<PGK_INT8> { using type = TI8; };
template <> struct TagFor<PGK_UINT8> { using type = TU8; };
template <> struct TagFor<PGK_INT16> { using type = TI16; };
template <> struct TagFor<PGK_INT32> { using type = TI32; };
template <> struct TagFor<PGK_INT64> { using type = TI64; };
template <> struct TagFor<PGK_FLOAT16> { using type = TF16; };
template <> struct TagFor<PGK_BFLOAT16> { using type = TBF16; };
template <> struct TagFor<PGK_FLOAT32> { using type = TF32; };
template <> struct TagFor<PGK_FLOAT64> { using type = TF64; };

// Included by the copy_cast_*.cu files, each instantiating a few source dtypes (so that the
// 90 cast pairs compile in parallel).
#define PGK_DEFINE_LAUNCH_CAST_FROM                                                            \
  template <int Src>                                                                           \
  int launch_cast_from(int dst_dtype, const Plan& p, bool contiguous, cudaStream_t stream) {   \
    using S = typename TagFor<Src>::type;                                                      \
    return dispatch_dtype(dst_dtype, [&](auto dtag) -> int {                                   \
      using D = decltype(dtag);                                                                \
      if constexpr (std::is_same_v<S, D>) {                                                    \
        return static_cast<int>(cudaErrorInvalidValue); /* same dtype: copy.cu moves bits */   \
      } else {                                                                                 \
        return launch_cast<S, D>(p, contiguous, stream);                                       \
      }                                                                                        \
    });                                                                                        \
  }

}  // namespace pgk
