// pgk_scan: inclusive cumulative sums and products along the rows of a matrix.
//
// Three accumulator types (int64, float32, float64) x two ops.  A single row, or a few long
// rows, go through CUB's single-pass DeviceScan (decoupled look-back: about one read and one
// write per element), one call per row; many rows go through one block per row (cub::BlockScan
// over tiles, the running prefix carried from tile to tile).
#include <cuda_runtime.h>

#include <cub/block/block_load.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cub/device/dispatch/dispatch_scan.cuh>
#include <cuda/std/functional>

#include <cstdint>
#include <type_traits>

#include "launch_utils.cuh"
#include "pygpukit_kernels.h"

namespace pgk {
namespace {

constexpr int kInvalid = static_cast<int>(cudaErrorInvalidValue);
constexpr uint64_t kAlign = 256;
constexpr int kRowThreads = 256;
constexpr int kRowItems = 4;

struct SumOp {
  template <typename T>
  __host__ __device__ __forceinline__ T operator()(const T& a, const T& b) const {
    return a + b;
  }
};

struct ProdOp {
  template <typename T>
  __host__ __device__ __forceinline__ T operator()(const T& a, const T& b) const {
    return a * b;
  }
};

// Integer accumulation wraps modulo 2^64 (as NumPy's int64 does): done in unsigned arithmetic.
template <typename T>
struct Acc {
  using type = T;
};
template <>
struct Acc<long long> {
  using type = unsigned long long;
};

// The running prefix of one row, handed from tile to tile.
template <typename T, typename Op>
struct RunningPrefix {
  T total;
  bool first;
  Op op;
  __device__ T operator()(T block_aggregate) {
    const T old = total;
    total = first ? block_aggregate : op(total, block_aggregate);
    first = false;
    return old;
  }
};

// One block per row (grid-stride over rows): tiles of kRowThreads * kRowItems elements.
template <typename T, typename Op>
__global__ void __launch_bounds__(kRowThreads)
    row_scan_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t rows, int64_t cols) {
  using Load = cub::BlockLoad<T, kRowThreads, kRowItems, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Store = cub::BlockStore<T, kRowThreads, kRowItems, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  using Scan = cub::BlockScan<T, kRowThreads>;
  __shared__ union {
    typename Load::TempStorage load;
    typename Store::TempStorage store;
    typename Scan::TempStorage scan;
  } smem;
  constexpr int64_t tile = int64_t{kRowThreads} * kRowItems;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row_in = x + r * cols;
    T* row_out = out + r * cols;
    RunningPrefix<T, Op> prefix{T{}, true, Op{}};
    for (int64_t start = 0; start < cols; start += tile) {
      const int valid = static_cast<int>(cols - start < tile ? cols - start : tile);
      T items[kRowItems];
      if (valid == tile) {
        Load(smem.load).Load(row_in + start, items);
      } else {
        Load(smem.load).Load(row_in + start, items, valid, T{});
      }
      __syncthreads();
      if (start == 0) {
        // The first tile has no prefix: a plain inclusive scan, whose aggregate starts the
        // running prefix.
        T aggregate;
        Scan(smem.scan).InclusiveScan(items, items, Op{}, aggregate);
        prefix.total = aggregate;
        prefix.first = false;
      } else {
        Scan(smem.scan).InclusiveScan(items, items, Op{}, prefix);
      }
      __syncthreads();
      if (valid == tile) {
        Store(smem.store).Store(row_out + start, items);
      } else {
        Store(smem.store).Store(row_out + start, items, valid);
      }
      __syncthreads();
    }
  }
}

// A row count and length for which one DeviceScan per row beats one block per row.
inline bool per_row_device_scan(int64_t rows, int64_t cols) {
  return rows == 1 || (rows <= 32 && cols >= 65536);
}

// The functor CUB's tuning tables recognise: with a user-defined functor (SumOp) DeviceScan
// falls back to its untuned default policy (128 threads x 15 items, default look-back delays);
// ::cuda::std::plus / multiplies select the sm_90 / sm_100 tunings (float32 sum on sm_90:
// 128 x 24 items, tuned delays).  Same operation, same result type.
template <typename A, typename Op>
struct CubOp;
template <typename A>
struct CubOp<A, SumOp> {
  using type = ::cuda::std::plus<A>;
};
template <typename A>
struct CubOp<A, ProdOp> {
  using type = ::cuda::std::multiplies<A>;
};

// float32 sums on sm_90: CUB's tuning (128 threads x 24 items) with bigger tiles, 128 x 32
// items (fewer tiles, so fewer look-backs per byte): on an H200, 2^26 elements, 77% of the
// device-to-device copy bandwidth against 72% for 128 x 24 (also measured: 256 x 16..32,
// 384 x 20, 512 x 16..20, vectorized and streaming loads: 67-74%; 128 x 28..48, 160 x 32,
// 192 x 32, a raking block scan, streaming stores: 71-79%, none faster than 128 x 32 beyond
// run-to-run noise).
// The look-back's delays (CUB's fixed_delay_constructor_t<retry, first>: a block sleeps `first`
// ns after publishing its aggregate, then `retry` ns between reads of an unfinished window):
// CUB's sm_90 pair, 688 / 1140, except on long scans, where a first sleep in 2200..3500 ns ran
// 2.5% faster (H200, 2^26 elements, 3 rounds: 81.2-81.7% of the copy against 79.0-79.5%; 1.6%
// at 2^25, 1.2% at 2^24, equal at 2^23).  Below that the long sleep cost up to 17% (2^22: 13.2
// against 11.3 us).  1600 and 2000 ns ran as 1140, 4500 ns at 71%; retries of 350..1500 ns
// were equal, CUB's exponential back-off variants 1.5-5% slower.
// Other architectures keep CUB's own chain (its sm_100 tuning above, its defaults below).
constexpr int64_t kLongScanItems = int64_t{1} << 23;  // above this: the long first sleep

using F32SumPolicies = cub::detail::scan::policy_hub<float, float, float, unsigned,
                                                     ::cuda::std::plus<float>>;
template <unsigned FirstSleepNs>
struct F32SumHub {
  struct Policy900 : cub::ChainedPolicy<900, Policy900, F32SumPolicies::Policy860> {
    using ScanPolicyT =
        cub::AgentScanPolicy<128, 32, float, cub::BLOCK_LOAD_WARP_TRANSPOSE, cub::LOAD_DEFAULT,
                             cub::BLOCK_STORE_WARP_TRANSPOSE, cub::BLOCK_SCAN_WARP_SCANS,
                             cub::detail::MemBoundScaling<128, 32, float>,
                             cub::detail::fixed_delay_constructor_t<688, FirstSleepNs>>;
  };
  struct Policy1000 : cub::ChainedPolicy<1000, Policy1000, Policy900> {
    using ScanPolicyT = F32SumPolicies::Policy1000::ScanPolicyT;
  };
  using MaxPolicy = Policy1000;
};

// ---- DeviceScan with programmatic dependent launch ----
// CUB 3.0's DeviceScan runs an init kernel (the look-back tile states) and then the scan kernel,
// plainly launched: the scan kernel's launch waits for the init kernel to drain.  CUB lets a
// dispatch take its own kernels and launcher (DispatchScan's KernelSource and
// KernelLauncherFactory), so here both kernels are CUB's agents behind pdl_enter-style waits,
// launched with the PDL attribute where the device takes it: the scan kernel's blocks are placed
// while the init kernel runs and start when its writes are visible, and the init kernel's launch
// overlaps the end of the kernel before it.  On an H200 (float32 sum, 2^26 elements, 3 runs) this
// took the call from 78.0% (77.9-78.2) to 79.2% (79.0-79.4) of the device-to-device copy
// bandwidth; the scan kernel alone (ncu) runs at 83%.  The scan kernel does not
// signal its own dependents early: the next kernel's blocks, placed while its 16384 tiles are
// still being dispatched, would hold SM slots without doing work.
template <typename TileState>
__global__ void scan_init_kernel(TileState tile_state, int num_tiles) {
  pdl_enter();  // the tile states may be the previous call's, still being read
  tile_state.InitializeStatus(num_tiles);
}

// CUB's DeviceScanKernel (the same agent, policy and launch bounds) after pdl_wait().
template <typename ChainedPolicy, typename In, typename Out, typename TileState, typename ScanOp,
          typename Offset, typename AccumT>
__launch_bounds__(int(ChainedPolicy::ActivePolicy::ScanPolicyT::BLOCK_THREADS))
    __global__ void scan_kernel(In d_in, Out d_out, TileState tile_state, int start_tile,
                                ScanOp scan_op, cub::NullType init, Offset num_items) {
  pdl_wait();
  using Agent = cub::detail::scan::AgentScan<typename ChainedPolicy::ActivePolicy::ScanPolicyT,
                                             In, Out, ScanOp, cub::NullType, Offset, AccumT,
                                             false>;
  __shared__ typename Agent::TempStorage temp_storage;
  Agent(temp_storage, d_in, d_out, scan_op, init).ConsumeRange(num_items, tile_state, start_tile);
}

template <typename Hub, typename In, typename Out, typename ScanOp, typename Offset,
          typename AccumT>
struct PdlScanKernels {
  using ScanTileStateT = cub::ScanTileState<AccumT>;
  CUB_DEFINE_KERNEL_GETTER(InitKernel, scan_init_kernel<ScanTileStateT>)
  CUB_DEFINE_KERNEL_GETTER(ScanKernel, scan_kernel<typename Hub::MaxPolicy, In, Out,
                                                   ScanTileStateT, ScanOp, Offset, AccumT>)
  CUB_RUNTIME_FUNCTION static constexpr size_t AccumSize() { return sizeof(AccumT); }
  CUB_RUNTIME_FUNCTION ScanTileStateT TileState() { return ScanTileStateT(); }
};

// CUB's launcher with the PDL attribute on every launch where pdl_enabled() (the kernels above
// wait either way, so a plain launch is also correct).
struct PdlLaunchers : cub::detail::TripleChevronFactory {
  CUB_RUNTIME_FUNCTION THRUST_NS_QUALIFIER::cuda_cub::detail::triple_chevron operator()(
      dim3 grid, dim3 block, size_t smem, cudaStream_t stream, bool = false) const {
    return THRUST_NS_QUALIFIER::cuda_cub::detail::triple_chevron(grid, block, smem, stream,
                                                                 pdl_enabled());
  }
};

// One inclusive DeviceScan of n accumulators with CUB's tuning hub Hub and offsets Offset.
template <typename Hub, typename A, typename CubOpT, typename Offset>
int pdl_device_scan(void* temp, size_t* temp_bytes, const A* in, A* o, Offset n,
                    cudaStream_t stream) {
  using Dispatch =
      cub::DispatchScan<const A*, A*, CubOpT, cub::NullType, Offset, A, cub::ForceInclusive::No,
                        Hub, PdlScanKernels<Hub, const A*, A*, CubOpT, Offset, A>, PdlLaunchers>;
  return static_cast<int>(
      Dispatch::Dispatch(temp, *temp_bytes, in, o, CubOpT{}, cub::NullType{}, n, stream));
}

template <typename T, typename Op>
int device_scan(void* temp, size_t* temp_bytes, const T* x, T* out, int64_t n,
                cudaStream_t stream) {
  using A = typename Acc<T>::type;
  using CubOpT = typename CubOp<A, Op>::type;
  const A* in = reinterpret_cast<const A*>(x);
  A* o = reinterpret_cast<A*>(out);
  // 32-bit offsets where they suffice: cheaper index arithmetic in CUB's agent (the tunings
  // were made with them).
  if (n <= INT32_MAX) {
    const auto items = static_cast<unsigned>(n);
    if constexpr (std::is_same_v<T, float> && std::is_same_v<Op, SumOp>) {
      return n > kLongScanItems
                 ? pdl_device_scan<F32SumHub<3000>, A, CubOpT>(temp, temp_bytes, in, o, items,
                                                               stream)
                 : pdl_device_scan<F32SumHub<1140>, A, CubOpT>(temp, temp_bytes, in, o, items,
                                                               stream);
    } else {
      using Hub = cub::detail::scan::policy_hub<A, A, A, unsigned, CubOpT>;
      return pdl_device_scan<Hub, A, CubOpT>(temp, temp_bytes, in, o, items, stream);
    }
  }
  using Hub = cub::detail::scan::policy_hub<A, A, A, unsigned long long, CubOpT>;
  return pdl_device_scan<Hub, A, CubOpT>(temp, temp_bytes, in, o,
                                         static_cast<unsigned long long>(n), stream);
}

template <typename T, typename Op>
int scan_typed(const void* xv, void* outv, int64_t rows, int64_t cols, void* workspace,
               uint64_t workspace_bytes, bool query_only, uint64_t* bytes, cudaStream_t stream) {
  const T* x = static_cast<const T*>(xv);
  T* out = static_cast<T*>(outv);
  if (per_row_device_scan(rows, cols)) {
    size_t temp = 0;
    int st = device_scan<T, Op>(nullptr, &temp, x, out, cols, stream);
    if (st != 0) return st;
    if (query_only) {
      *bytes = (temp + kAlign - 1) / kAlign * kAlign;
      return 0;
    }
    if (workspace_bytes < temp || workspace == nullptr) return kInvalid;
    for (int64_t r = 0; r < rows; ++r) {
      size_t given = workspace_bytes;
      st = device_scan<T, Op>(workspace, &given, x + r * cols, out + r * cols, cols, stream);
      if (st != 0) return st;
    }
    return 0;
  }
  if (query_only) {
    *bytes = 0;
    return 0;
  }
  using A = typename Acc<T>::type;
  const int64_t grid = rows < (int64_t{1} << 20) ? rows : (int64_t{1} << 20);
  row_scan_kernel<A, Op><<<static_cast<unsigned>(grid), kRowThreads, 0, stream>>>(
      reinterpret_cast<const A*>(x), reinterpret_cast<A*>(out), rows, cols);
  return launch_status();
}

int scan_dispatch(int op, int dtype, const void* x, void* out, int64_t rows, int64_t cols,
                  void* workspace, uint64_t workspace_bytes, bool query_only, uint64_t* bytes,
                  cudaStream_t stream) {
  const bool sum = op == PGK_SCAN_SUM;
  switch (dtype) {
    case PGK_INT64:
      return sum ? scan_typed<long long, SumOp>(x, out, rows, cols, workspace, workspace_bytes,
                                                query_only, bytes, stream)
                 : scan_typed<long long, ProdOp>(x, out, rows, cols, workspace, workspace_bytes,
                                                 query_only, bytes, stream);
    case PGK_FLOAT32:
      return sum ? scan_typed<float, SumOp>(x, out, rows, cols, workspace, workspace_bytes,
                                            query_only, bytes, stream)
                 : scan_typed<float, ProdOp>(x, out, rows, cols, workspace, workspace_bytes,
                                             query_only, bytes, stream);
    default:
      return sum ? scan_typed<double, SumOp>(x, out, rows, cols, workspace, workspace_bytes,
                                             query_only, bytes, stream)
                 : scan_typed<double, ProdOp>(x, out, rows, cols, workspace, workspace_bytes,
                                              query_only, bytes, stream);
  }
}

int check_scan_args(int op, int dtype, int64_t rows, int64_t cols) {
  if (op < 0 || op >= PGK_NUM_SCAN_OPS) return kInvalid;
  if (dtype != PGK_INT64 && dtype != PGK_FLOAT32 && dtype != PGK_FLOAT64) return kInvalid;
  if (rows < 0 || cols < 0) return kInvalid;
  if (cols != 0 && rows > INT64_MAX / 8 / cols) return kInvalid;
  return 0;
}

}  // namespace
}  // namespace pgk

extern "C" PGK_API int pgk_scan_workspace_size(int op, int dtype, int64_t rows, int64_t cols,
                                               uint64_t* bytes) {
  using namespace pgk;
  if (bytes == nullptr) return kInvalid;
  int st = check_scan_args(op, dtype, rows, cols);
  if (st != 0) return st;
  *bytes = 0;
  if (rows == 0 || cols == 0) return 0;
  return scan_dispatch(op, dtype, nullptr, nullptr, rows, cols, nullptr, 0, true, bytes,
                       nullptr);
}

extern "C" PGK_API int pgk_scan(int op, const void* x, void* out, int dtype, int64_t rows,
                                int64_t cols, void* workspace, uint64_t workspace_bytes,
                                void* stream) {
  using namespace pgk;
  int st = check_scan_args(op, dtype, rows, cols);
  if (st != 0) return st;
  if (rows == 0 || cols == 0) return 0;
  const uintptr_t esize = dtype == PGK_FLOAT32 ? 4 : 8;
  if (x == nullptr || out == nullptr || reinterpret_cast<uintptr_t>(x) % esize != 0 ||
      reinterpret_cast<uintptr_t>(out) % esize != 0 ||
      reinterpret_cast<uintptr_t>(workspace) % kAlign != 0) {
    return kInvalid;
  }
  uint64_t unused = 0;
  return scan_dispatch(op, dtype, x, out, rows, cols, workspace, workspace_bytes, false, &unused,
                       static_cast<cudaStream_t>(stream));
}
