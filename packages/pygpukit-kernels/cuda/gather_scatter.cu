// Advanced indexing: gather / scatter over an index space (outer..., count, inner...), mask
// compaction (packed flags, then one block per tile), unravelling of flat indices, and a deterministic scatter-add
// (a stable radix sort of the destinations, then a segmented reduction in a fixed order).
//
// Template instantiations are kept few: gather/scatter/compaction dispatch on the element size
// (1/2/4/8 bytes) and a 32/64-bit index type; only scatter-add does arithmetic (float32,
// float64, int32, int64).
#include <cuda_runtime.h>

#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>

#include <cstdint>

#include "copy_kernels.cuh"
#include "pygpukit_kernels.h"

namespace pgk {
namespace {

constexpr int kInvalidArg = static_cast<int>(cudaErrorInvalidValue);
constexpr int kIndexMax = PGK_INDEX_MAX;
constexpr unsigned kGatherBlock = 256;
constexpr int kAddItems = 8;         // sorted elements per thread of the segmented reduction
constexpr int kAddBlock = 256;       // threads per chunk
constexpr int64_t kAddChunk = int64_t{kAddItems} * kAddBlock;
constexpr uint64_t kAlign = 256;

uint64_t align_up(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// The descriptor as the kernels take it (by value; dims of size 1 already dropped by the
// caller, outer/inner ordered outermost first).
struct IndexParams {
  int64_t outer_shape[kIndexMax];
  int64_t outer_strides[kIndexMax];
  int64_t inner_shape[kIndexMax];
  int64_t inner_strides[kIndexMax];
  const int64_t* index[kIndexMax];
  int64_t size[kIndexMax];
  int64_t stride[kIndexMax];
  int64_t count;    // M
  int64_t inner_n;  // Q
  int64_t total;    // P * M * Q
  int n_outer, n_inner, n_index, mode;
};

// One index resolved by the mode; `ok` false for an out-of-range index in PGK_INDEX_RAISE mode.
// An empty axis has no element to wrap or clip to: out of range in every mode.
__device__ __forceinline__ int64_t resolve(int64_t v, int64_t size, int mode, bool& ok) {
  if (size == 0) {
    ok = false;
    return 0;
  }
  if (mode == PGK_INDEX_WRAP) {
    const int64_t r = v % size;
    return r < 0 ? r + size : r;
  }
  if (mode == PGK_INDEX_CLIP) {
    if (v < 0) return 0;
    return v >= size ? size - 1 : v;
  }
  if (v < -size || v >= size) {
    ok = false;
    return 0;
  }
  return v < 0 ? v + size : v;
}

// Byte offset of element i of the index space (from the view's origin); `ok` false and
// `*bad` the error code (k * count + m) when index k at m is out of range.
template <typename Idx>
__device__ __forceinline__ int64_t element_offset(const IndexParams& p, Idx i, bool& ok,
                                                  uint64_t* bad) {
  Idx q = i, m = i, r = 0;
  if (p.inner_n != 1) {
    const Idx t = i / static_cast<Idx>(p.inner_n);
    q = i - t * static_cast<Idx>(p.inner_n);
    m = t;
  } else {
    q = 0;
  }
  if (p.n_outer > 0) {
    r = m / static_cast<Idx>(p.count);
    m -= r * static_cast<Idx>(p.count);
  }
  int64_t off = 0;
  for (int d = p.n_inner - 1; d >= 0; --d) {
    const Idx n = static_cast<Idx>(p.inner_shape[d]);
    const Idx c = d == 0 ? q : q % n;
    q = d == 0 ? 0 : q / n;
    off += static_cast<int64_t>(c) * p.inner_strides[d];
  }
  for (int d = p.n_outer - 1; d >= 0; --d) {
    const Idx n = static_cast<Idx>(p.outer_shape[d]);
    const Idx c = d == 0 ? r : r % n;
    r = d == 0 ? 0 : r / n;
    off += static_cast<int64_t>(c) * p.outer_strides[d];
  }
  for (int k = 0; k < p.n_index; ++k) {
    bool this_ok = true;
    const int64_t v = resolve(__ldg(p.index[k] + m), p.size[k], p.mode, this_ok);
    if (!this_ok && ok) {
      ok = false;
      *bad = static_cast<uint64_t>(k) * static_cast<uint64_t>(p.count) + static_cast<uint64_t>(m);
    }
    off += v * p.stride[k];
  }
  return off;
}

__device__ __forceinline__ void record_error(int64_t* error, uint64_t code) {
  if (error != nullptr) {
    atomicMin(reinterpret_cast<unsigned long long*>(error),
              static_cast<unsigned long long>(code));
  }
}

// What the index kernels do with element i: gather it, scatter to it, or add to it atomically.
enum Act { kGather = 0, kScatter = 1, kAtomicAdd = 2 };

// One element's access: W is the moved word (gather/scatter) or the arithmetic type (add:
// float, double, unsigned int for int32, unsigned long long for int64: two's complement sums
// wrap the same as signed ones).
template <int A, typename W>
__device__ __forceinline__ void access(char* base, int64_t off, bool ok, W* slot) {
  if constexpr (A == kScatter) {
    if (ok) *reinterpret_cast<W*>(base + off) = __ldcs(slot);
  } else if constexpr (A == kAtomicAdd) {
    if (ok) atomicAdd(reinterpret_cast<W*>(base + off), __ldcs(slot));
  } else {
    __stcs(slot, ok ? *reinterpret_cast<const W*>(base + off) : W{});
  }
}

// Gather: out[i] = base[offset(i)], 0 for an out-of-range index.  Scatter: base[offset(i)] =
// other[i]; atomic add: base[offset(i)] += other[i]; both for in-range indices only.
template <int A, typename W, typename Idx>
__global__ void __launch_bounds__(kGatherBlock)
gather_scatter_kernel(char* base, char* other, int64_t* error, IndexParams p) {
  pdl_enter();
  const Idx total = static_cast<Idx>(p.total);
  const Idx step = static_cast<Idx>(gridDim.x) * blockDim.x;
  for (Idx i = static_cast<Idx>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    bool ok = true;
    uint64_t bad = 0;
    const int64_t off = element_offset<Idx>(p, i, ok, &bad);
    if (!ok) record_error(error, bad);
    access<A>(base, off, ok, reinterpret_cast<W*>(other) + i);
  }
}

// The common case a[idx] / a[idx] = v / take(a, idx): one index array and no other dims, so
// element i is base[resolve(index[i]) * stride] (no div/mod of the general layout).  Each
// thread handles kUnroll elements a block apart: their index loads, then their kUnroll
// independent random accesses, are in flight together.  The streams (index, the gathered
// output, the scattered values) are read / written with evict-first hints (ld/st.global.cs):
// touched once, they then leave more of L2 to the randomly accessed array, whose hit rate
// bounds the kernel.  The error code is as the general kernel's: k * count + m, k = 0.
constexpr int kUnroll = 4;

template <int A, typename W>
__global__ void __launch_bounds__(kGatherBlock)
index_1d_kernel(char* base, char* other, int64_t* error, const int64_t* __restrict__ index,
                int64_t size, int64_t stride, int mode, uint32_t total) {
  pdl_enter();
  W* slots = reinterpret_cast<W*>(other);
  const uint32_t tile = blockDim.x * kUnroll;
  for (uint32_t i0 = blockIdx.x * tile + threadIdx.x; i0 < total; i0 += gridDim.x * tile) {
    int64_t v[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const uint32_t i = i0 + j * blockDim.x;
      v[j] = i < total ? __ldcs(reinterpret_cast<const long long*>(index) + i) : 0;
    }
    int64_t off[kUnroll];
    bool ok[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const uint32_t i = i0 + j * blockDim.x;
      ok[j] = i < total;
      off[j] = 0;
      if (ok[j]) {
        off[j] = resolve(v[j], size, mode, ok[j]) * stride;
        if (!ok[j]) record_error(error, i);
      }
    }
    if (A == kGather) {
      // All kUnroll loads first, then the stores: the random reads overlap.
      W w[kUnroll];
#pragma unroll
      for (int j = 0; j < kUnroll; ++j) {
        w[j] = ok[j] ? *reinterpret_cast<const W*>(base + off[j]) : W{};
      }
#pragma unroll
      for (int j = 0; j < kUnroll; ++j) {
        const uint32_t i = i0 + j * blockDim.x;
        if (i < total) __stcs(slots + i, w[j]);
      }
    } else {
#pragma unroll
      for (int j = 0; j < kUnroll; ++j) {
        access<A>(base, off[j], ok[j], slots + i0 + j * blockDim.x);
      }
    }
  }
}

// The bounds check of pgk_index_check: index k at m for every k and m, the code of the first
// failing k at m (k * count + m, as element_offset records it; the smallest code over the
// space is the same).  The target is not touched.
template <typename Idx>
__global__ void __launch_bounds__(kGatherBlock) index_check_kernel(int64_t* error, IndexParams p) {
  pdl_enter();
  const Idx count = static_cast<Idx>(p.count);
  const Idx step = static_cast<Idx>(gridDim.x) * blockDim.x;
  for (Idx m = static_cast<Idx>(blockIdx.x) * blockDim.x + threadIdx.x; m < count; m += step) {
    for (int k = 0; k < p.n_index; ++k) {
      bool ok = true;
      resolve(__ldcs(reinterpret_cast<const long long*>(p.index[k]) + m), p.size[k], p.mode, ok);
      if (!ok) {
        record_error(error, static_cast<uint64_t>(k) * static_cast<uint64_t>(p.count) +
                                static_cast<uint64_t>(m));
        break;
      }
    }
  }
}

// Validate a descriptor and copy it into kernel parameters.
int make_params(const pgk_index_desc* d, IndexParams& p, bool need_base = true) {
  if (d == nullptr || !valid_dtype(d->dtype)) return kInvalidArg;
  if (d->mode < PGK_INDEX_RAISE || d->mode > PGK_INDEX_CLIP) return kInvalidArg;
  if ((d->flags & ~PGK_ERROR_SLOT_PRESET) != 0) return kInvalidArg;
  if (d->n_outer < 0 || d->n_inner < 0 || d->n_index < 0 || d->n_outer > kIndexMax ||
      d->n_inner > kIndexMax || d->n_index > kIndexMax || d->count < 0) {
    return kInvalidArg;
  }
  const int size = dtype_size(d->dtype);
  int64_t total = d->count, inner = 1;
  bool overflow = false;
  auto mul = [&](int64_t v) {
    if (v < 0) return false;
    if (v != 0 && total > INT64_MAX / v) overflow = true;
    else total *= v;
    return true;
  };
  for (int i = 0; i < d->n_outer; ++i) {
    if (!mul(d->outer_shape[i])) return kInvalidArg;
    p.outer_shape[i] = d->outer_shape[i];
    p.outer_strides[i] = d->outer_strides[i];
    if (d->outer_shape[i] > 1 && d->outer_strides[i] % size != 0) return kInvalidArg;
  }
  for (int i = 0; i < d->n_inner; ++i) {
    if (!mul(d->inner_shape[i])) return kInvalidArg;
    inner *= d->inner_shape[i];
    p.inner_shape[i] = d->inner_shape[i];
    p.inner_strides[i] = d->inner_strides[i];
    if (d->inner_shape[i] > 1 && d->inner_strides[i] % size != 0) return kInvalidArg;
  }
  if (overflow) return kInvalidArg;
  for (int k = 0; k < d->n_index; ++k) {
    if (d->index_size[k] < 0 || d->index_stride[k] % size != 0) return kInvalidArg;
    if (d->count > 0 && d->index[k] == nullptr) return kInvalidArg;
    if (reinterpret_cast<uintptr_t>(d->index[k]) % 8 != 0) return kInvalidArg;
    p.index[k] = d->index[k];
    p.size[k] = d->index_size[k];
    p.stride[k] = d->index_stride[k];
  }
  p.count = d->count;
  p.inner_n = inner;
  p.total = total;
  p.n_outer = d->n_outer;
  p.n_inner = d->n_inner;
  p.n_index = d->n_index;
  p.mode = d->mode;
  if (total > 0 && need_base && (d->base == nullptr ||
                                 reinterpret_cast<uintptr_t>(d->base) % size != 0)) {
    return kInvalidArg;
  }
  return 0;
}

template <int A, typename W>
int launch_index(const IndexParams& p, char* base, char* other, int64_t* error,
                 cudaStream_t stream) {
  if (p.n_index == 1 && p.n_outer == 0 && p.n_inner == 0 && p.total <= INT32_MAX) {
    launch_k(index_1d_kernel<A, W>,
             dim3(grid_for((p.total + kUnroll - 1) / kUnroll, kGatherBlock)), dim3(kGatherBlock),
             stream, base, other, error, p.index[0], p.size[0], p.stride[0], p.mode,
             static_cast<uint32_t>(p.total));
    return launch_status();
  }
  const unsigned grid = grid_for(p.total, kGatherBlock);
  if (p.total <= INT32_MAX) {
    launch_k(gather_scatter_kernel<A, W, uint32_t>, dim3(grid), dim3(kGatherBlock), stream, base,
             other, error, p);
  } else {
    launch_k(gather_scatter_kernel<A, W, uint64_t>, dim3(grid), dim3(kGatherBlock), stream, base,
             other, error, p);
  }
  return launch_status();
}

// Resets the error slot ("no error": all ones, which atomicMin of an error code replaces), not
// when the caller preset it.
int reset_error(const pgk_index_desc* d, int64_t* error, cudaStream_t s) {
  if (error == nullptr) return 0;
  if (reinterpret_cast<uintptr_t>(error) % 8 != 0) return kInvalidArg;
  if ((d->flags & PGK_ERROR_SLOT_PRESET) != 0) return 0;
  return static_cast<int>(cudaMemsetAsync(error, 0xff, sizeof(int64_t), s));
}

// Validates the descriptor, resets the error slot and checks the values / output operand: 0 to
// go on, a status to return, or -1 when there is nothing to do.
int begin_index(const pgk_index_desc* d, IndexParams& p, const void* other, int64_t* error,
                cudaStream_t s) {
  if (const int rc = make_params(d, p)) return rc;
  if (const int rc = reset_error(d, error, s)) return rc;
  if (p.total == 0) return -1;
  const int size = dtype_size(d->dtype);
  if (other == nullptr || reinterpret_cast<uintptr_t>(other) % size != 0) return kInvalidArg;
  return 0;
}

template <int A>
int gather_scatter(const pgk_index_desc* d, void* other, int64_t* error, void* stream) {
  IndexParams p;
  auto s = static_cast<cudaStream_t>(stream);
  if (const int rc = begin_index(d, p, other, error, s)) return rc < 0 ? 0 : rc;
  char* base = static_cast<char*>(d->base);
  char* o = static_cast<char*>(other);
  switch (dtype_size(d->dtype)) {
    case 1: return launch_index<A, Word<1>::T>(p, base, o, error, s);
    case 2: return launch_index<A, Word<2>::T>(p, base, o, error, s);
    case 4: return launch_index<A, Word<4>::T>(p, base, o, error, s);
    default: return launch_index<A, Word<8>::T>(p, base, o, error, s);
  }
}

// ---- mask compaction ----
//
// Two passes over a bit-packed copy of the flags: no block waits on another (a single pass
// needs a look-back over its predecessors' counts, whose latency a measured single-pass kernel
// did not hide) and the values are read once:
//   1. pack_flags_kernel reads the flag bytes (16-byte loads) and writes one bit per element,
//      the number of flags set in each tile of kSelTile elements and in each group of
//      kPackTiles tiles (one block's).  More tiles per block (8, 16, 32: more loads in flight
//      per thread, fewer blocks) measured no faster on an H200 (2^26 flags: 27 us at 4 and 8,
//      28-29 us at 16, 35 us at 32);
//   2. group_offsets_kernel (one block) turns the group counts into exclusive offsets and the
//      total (the selected count, in the workspace's first 8 bytes).  Groups, not tiles: a
//      quarter of the values, read and written in 16-byte pieces (one block moving a value per
//      tile, with 8-byte stores 128 bytes apart, took 22 us for 2^26 elements on an H200;
//      this kernel takes 6 us);
//   3. compact_kernel, one block per tile, takes its group's offset plus the counts of the
//      tiles before it in the group, ranks the tile's flagged elements from the bits
//      (popcounts only), reads the values (vector loads), stages the selected ones in shared
//      memory in order and writes them out contiguously at the tile's offset.
// For float32 about n (flags) + n/4 (bits, written and read) + 4n + 4k bytes move, against
// 2n + 4n + 4k for CUB's DeviceSelect.  Counts are integers: the output does not depend on
// the order in which blocks run.
constexpr int kSelThreads = 256;
constexpr int kSelWarps = kSelThreads / 32;
constexpr int kSelSteps = 4;                        // 128-element steps of a warp
constexpr int kSelWarpSpan = kSelSteps * 128;       // contiguous elements of a warp
constexpr int kSelTile = kSelWarps * kSelWarpSpan;  // elements of a tile
constexpr int kPackTiles = 4;                       // tiles per block of the packing pass
constexpr int kOffsetThreads = 1024;
constexpr int kOffsetItems = 4;  // group counts per thread: one 16-byte load
static_assert(kSelTile == kSelThreads * 16, "the packing pass reads 16 flags per thread");
static_assert(kPackTiles == 4, "a group's tile counts are read as one int4");

// Workspace of a compaction: the count, the groups' offsets and counts, the tiles' counts,
// the packed flags.
struct SelLayout {
  uint64_t offsets, group_counts, counts, bits, total;
};

SelLayout sel_layout(int64_t n) {
  const uint64_t tiles = static_cast<uint64_t>((n + kSelTile - 1) / kSelTile);
  const uint64_t groups = (tiles + kPackTiles - 1) / kPackTiles;
  SelLayout L{};
  L.offsets = kAlign;
  L.group_counts = L.offsets + align_up(groups * 8);
  // Tile counts: room for whole groups (a compaction block reads its group's four at once).
  L.counts = L.group_counts + align_up(groups * 4);
  L.bits = L.counts + align_up(groups * kPackTiles * 4);
  L.total = L.bits + tiles * (kSelTile / 8);
  return L;
}

// Bit k (k < 4) of the result: byte k of w is non-zero.  The OR-folds leave bit 0 of each
// byte set for a non-zero byte; the multiply gathers those four bits into bits 28..31 (the
// shifted copies land on distinct bits, so no carries reach them).
__device__ __forceinline__ unsigned byte_flags(unsigned w) {
  w |= w >> 4;
  w |= w >> 2;
  w |= w >> 1;
  return ((w & 0x01010101u) * 0x10204080u) >> 28;
}

// Thread t of a block handles flags 16t..16t+15 of kPackTiles consecutive tiles: 16 bits,
// which an even lane joins with its odd neighbour's into one 32-bit word of the tile's bits.
// Vec: flags is 16-byte aligned (else byte loads).
template <bool Vec>
__global__ void __launch_bounds__(kSelThreads)
pack_flags_kernel(const uint8_t* __restrict__ flags, int64_t n, int64_t tiles,
                  uint32_t* __restrict__ bits, int* __restrict__ counts,
                  int* __restrict__ group_counts) {
  pdl_enter();
  __shared__ int warp_counts[kPackTiles][kSelWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t first_tile = static_cast<int64_t>(blockIdx.x) * kPackTiles;
  unsigned half[kPackTiles];
#pragma unroll
  for (int i = 0; i < kPackTiles; ++i) {
    const int64_t e = (first_tile + i) * kSelTile + 16 * static_cast<int64_t>(threadIdx.x);
    unsigned h = 0;
    if (Vec && e + 16 <= n) {
      const uint4 w = *reinterpret_cast<const uint4*>(flags + e);
      h = byte_flags(w.x) | byte_flags(w.y) << 4 | byte_flags(w.z) << 8 | byte_flags(w.w) << 12;
    } else if (e < n) {
#pragma unroll
      for (int k = 0; k < 16; ++k) h |= (e + k < n && flags[e + k] != 0 ? 1u : 0u) << k;
    }
    half[i] = h;
  }
#pragma unroll
  for (int i = 0; i < kPackTiles; ++i) {
    const int64_t tile = first_tile + i;
    const unsigned odd = __shfl_down_sync(0xffffffffu, half[i], 1);
    if ((lane & 1) == 0 && tile < tiles) {
      bits[tile * (kSelTile / 32) + (threadIdx.x >> 1)] = half[i] | odd << 16;
    }
    int c = __popc(half[i]);
    for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xffffffffu, c, o);
    if (lane == 0) warp_counts[i][warp] = c;
  }
  __syncthreads();
  // Every tile of the group gets a count (0 past the last tile: its flags read as unset).
  if (threadIdx.x < kPackTiles) {
    int c = 0;
#pragma unroll
    for (int w = 0; w < kSelWarps; ++w) c += warp_counts[threadIdx.x][w];
    counts[first_tile + threadIdx.x] = c;
  } else if (threadIdx.x == 32) {
    int c = 0;
#pragma unroll
    for (int i = 0; i < kPackTiles; ++i) {
#pragma unroll
      for (int w = 0; w < kSelWarps; ++w) c += warp_counts[i][w];
    }
    group_counts[blockIdx.x] = c;
  }
}

// One block: offsets[g] = counts[0] + ... + counts[g - 1] over the groups, *total = the sum
// of all.
__global__ void __launch_bounds__(kOffsetThreads)
group_offsets_kernel(const int* __restrict__ counts, int64_t groups,
                     int64_t* __restrict__ offsets, int64_t* __restrict__ total) {
  pdl_enter();
  using Scan = cub::BlockScan<int64_t, kOffsetThreads>;
  __shared__ typename Scan::TempStorage scan;
  constexpr int64_t chunk = int64_t{kOffsetThreads} * kOffsetItems;
  int64_t running = 0;
  for (int64_t start = 0; start < groups; start += chunk) {
    const int64_t first = start + static_cast<int64_t>(threadIdx.x) * kOffsetItems;
    int c[kOffsetItems];
    const bool whole = first + kOffsetItems <= groups;
    if (whole) {
      // counts starts 16-byte aligned (as every workspace part) and first is a multiple of 4:
      // one 16-byte load.
      const int4 q = *reinterpret_cast<const int4*>(counts + first);
      c[0] = q.x;
      c[1] = q.y;
      c[2] = q.z;
      c[3] = q.w;
    } else {
#pragma unroll
      for (int j = 0; j < kOffsetItems; ++j) c[j] = first + j < groups ? counts[first + j] : 0;
    }
    int64_t sum = 0;
#pragma unroll
    for (int j = 0; j < kOffsetItems; ++j) sum += c[j];
    int64_t prefix = 0, aggregate = 0;
    Scan(scan).ExclusiveSum(sum, prefix, aggregate);
    int64_t o[kOffsetItems];
    o[0] = running + prefix;
#pragma unroll
    for (int j = 1; j < kOffsetItems; ++j) o[j] = o[j - 1] + c[j - 1];
    if (whole) {
      // Likewise two 16-byte stores.
      auto* dst = reinterpret_cast<longlong2*>(offsets + first);
      dst[0] = make_longlong2(o[0], o[1]);
      dst[1] = make_longlong2(o[2], o[3]);
    } else {
#pragma unroll
      for (int j = 0; j < kOffsetItems; ++j) {
        if (first + j < groups) offsets[first + j] = o[j];
      }
    }
    running += aggregate;
    __syncthreads();  // the scan storage is reused by the next chunk
  }
  if (threadIdx.x == 0) *total = running;
}

// Four consecutive elements at p, aligned to 4 * sizeof(T) bytes.
template <typename T>
__device__ __forceinline__ void load4(const T* p, T (&v)[4]) {
  if constexpr (sizeof(T) == 1) {
    const uint32_t w = *reinterpret_cast<const uint32_t*>(p);
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = static_cast<T>(w >> (8 * k));
  } else if constexpr (sizeof(T) == 2) {
    const uint2 w = *reinterpret_cast<const uint2*>(p);
    v[0] = static_cast<T>(w.x);
    v[1] = static_cast<T>(w.x >> 16);
    v[2] = static_cast<T>(w.y);
    v[3] = static_cast<T>(w.y >> 16);
  } else if constexpr (sizeof(T) == 4) {
    const uint4 w = *reinterpret_cast<const uint4*>(p);
    v[0] = w.x;
    v[1] = w.y;
    v[2] = w.z;
    v[3] = w.w;
  } else {
    const ulonglong2 a = reinterpret_cast<const ulonglong2*>(p)[0];
    const ulonglong2 b = reinterpret_cast<const ulonglong2*>(p)[1];
    v[0] = a.x;
    v[1] = a.y;
    v[2] = b.x;
    v[3] = b.y;
  }
}

// One tile per block.  Warp w owns elements [w * kSelWarpSpan, (w + 1) * kSelWarpSpan) of the
// tile, in kSelSteps steps of 128 (lane l: elements 4l..4l+3 of a step, one vector load); the
// step's 128 flag bits are one 16-byte load, the same for every lane, from which each lane
// counts the flags below its own.  Positions: T is int64 and the value is the flat position.
// Vec: x is aligned to 4 * sizeof(T) bytes (else element loads).
template <typename T, bool Positions, bool Vec>
__global__ void __launch_bounds__(kSelThreads)
compact_kernel(const T* __restrict__ x, const uint32_t* __restrict__ bits,
               const int64_t* __restrict__ offsets, const int* __restrict__ counts, int64_t n,
               T* __restrict__ out) {
  pdl_enter();
  __shared__ T stage[kSelTile];
  __shared__ int warp_counts[kSelWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t tile = blockIdx.x;
  const int64_t seg = tile * kSelTile + warp * kSelWarpSpan;
  const bool full = seg + kSelWarpSpan <= n;
  // The tile's output offset: its group's, plus the counts of the tiles before it there.
  const int in_group = static_cast<int>(tile % kPackTiles);
  const int4 group = *reinterpret_cast<const int4*>(counts + (tile - in_group));
  const int64_t base = offsets[tile / kPackTiles] + (in_group > 0 ? group.x : 0) +
                       (in_group > 1 ? group.y : 0) + (in_group > 2 ? group.z : 0);
  const uint4* seg_bits = reinterpret_cast<const uint4*>(bits) + seg / 128;
  uint4 b[kSelSteps];
#pragma unroll
  for (int j = 0; j < kSelSteps; ++j) b[j] = seg_bits[j];
  T v[kSelSteps][4];
  if constexpr (!Positions) {
#pragma unroll
    for (int j = 0; j < kSelSteps; ++j) {
      const int64_t e = seg + j * 128 + 4 * lane;
      if (Vec && full) {
        load4(x + e, v[j]);
      } else {
#pragma unroll
        for (int k = 0; k < 4; ++k) v[j][k] = e + k < n ? x[e + k] : T{};
      }
    }
  }
  // Lane l's four flags are bits 4(l % 8).. of word l / 8 of the step.
  const int sub = lane >> 3;
  const int shift = 4 * (lane & 7);
  int warp_total = 0;
  int rank[kSelSteps];
  unsigned nib[kSelSteps];
#pragma unroll
  for (int j = 0; j < kSelSteps; ++j) {
    const unsigned p0 = __popc(b[j].x), p1 = __popc(b[j].y), p2 = __popc(b[j].z);
    const unsigned mine = sub == 0 ? b[j].x : sub == 1 ? b[j].y : sub == 2 ? b[j].z : b[j].w;
    const int below = (sub > 0 ? p0 : 0) + (sub > 1 ? p1 : 0) + (sub > 2 ? p2 : 0) +
                      __popc(mine & ((1u << shift) - 1));
    nib[j] = (mine >> shift) & 15u;
    rank[j] = warp_total + below;
    warp_total += static_cast<int>(p0 + p1 + p2 + __popc(b[j].w));
  }
  if (lane == 0) warp_counts[warp] = warp_total;
  __syncthreads();
  int warp_off = 0, tile_count = 0;
#pragma unroll
  for (int w = 0; w < kSelWarps; ++w) {
    const int c = warp_counts[w];
    warp_off += w < warp ? c : 0;
    tile_count += c;
  }
#pragma unroll
  for (int j = 0; j < kSelSteps; ++j) {
    int pos = warp_off + rank[j];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if ((nib[j] >> k) & 1u) {
        if constexpr (Positions) {
          stage[pos] = static_cast<T>(seg + j * 128 + 4 * lane + k);
        } else {
          stage[pos] = v[j][k];
        }
        ++pos;
      }
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < tile_count; i += kSelThreads) out[base + i] = stage[i];
}

template <typename T, bool Positions>
int launch_compact(const void* x, const uint32_t* bits, const int64_t* offsets,
                   const int* counts, int64_t n, void* out, unsigned tiles,
                   cudaStream_t stream) {
  const T* xt = static_cast<const T*>(x);
  T* o = static_cast<T*>(out);
  const bool vec = reinterpret_cast<uintptr_t>(x) % (4 * sizeof(T)) == 0;
  if (vec) {
    launch_k(compact_kernel<T, Positions, true>, dim3(tiles), dim3(kSelThreads), stream, xt,
             bits, offsets, counts, n, o);
  } else {
    launch_k(compact_kernel<T, Positions, false>, dim3(tiles), dim3(kSelThreads), stream, xt,
             bits, offsets, counts, n, o);
  }
  return launch_status();
}

// Passes 1 and 2 (n > 0): the packed flags, the tiles' offsets and the count in `ws`.
int select_count(const uint8_t* flags, int64_t n, char* ws, cudaStream_t stream) {
  const SelLayout L = sel_layout(n);
  const int64_t tiles = (n + kSelTile - 1) / kSelTile;
  if (tiles > INT32_MAX) return kInvalidArg;
  auto* bits = reinterpret_cast<uint32_t*>(ws + L.bits);
  auto* counts = reinterpret_cast<int*>(ws + L.counts);
  auto* group_counts = reinterpret_cast<int*>(ws + L.group_counts);
  auto* offsets = reinterpret_cast<int64_t*>(ws + L.offsets);
  auto* total = reinterpret_cast<int64_t*>(ws);
  const int64_t groups = (tiles + kPackTiles - 1) / kPackTiles;
  const dim3 pack_grid(static_cast<unsigned>(groups));
  if (reinterpret_cast<uintptr_t>(flags) % 16 == 0) {
    launch_k(pack_flags_kernel<true>, pack_grid, dim3(kSelThreads), stream, flags, n, tiles,
             bits, counts, group_counts);
  } else {
    launch_k(pack_flags_kernel<false>, pack_grid, dim3(kSelThreads), stream, flags, n, tiles,
             bits, counts, group_counts);
  }
  if (const int rc = launch_status()) return rc;
  launch_k(group_offsets_kernel, dim3(1), dim3(kOffsetThreads), stream,
           static_cast<const int*>(group_counts), groups, offsets, total);
  return launch_status();
}

// Pass 3 (n > 0) over a workspace that select_count filled (x null: the flat positions).
int select_compact(const void* x, int elem_size, void* out, int64_t n, const char* ws,
                   cudaStream_t stream) {
  const SelLayout L = sel_layout(n);
  const int64_t tiles = (n + kSelTile - 1) / kSelTile;
  if (tiles > INT32_MAX) return kInvalidArg;
  const auto* bits = reinterpret_cast<const uint32_t*>(ws + L.bits);
  const auto* offsets = reinterpret_cast<const int64_t*>(ws + L.offsets);
  const auto* counts = reinterpret_cast<const int*>(ws + L.counts);
  const unsigned grid = static_cast<unsigned>(tiles);
  if (x == nullptr) {
    return launch_compact<long long, true>(nullptr, bits, offsets, counts, n, out, grid, stream);
  }
  switch (elem_size) {
    case 1:
      return launch_compact<uint8_t, false>(x, bits, offsets, counts, n, out, grid, stream);
    case 2:
      return launch_compact<uint16_t, false>(x, bits, offsets, counts, n, out, grid, stream);
    case 4:
      return launch_compact<uint32_t, false>(x, bits, offsets, counts, n, out, grid, stream);
    default:
      return launch_compact<unsigned long long, false>(x, bits, offsets, counts, n, out, grid,
                                                       stream);
  }
}

// Argument checks shared by the entry points (x: whether the values are given).
int check_select(bool has_x, const void* x, int dtype, int64_t n, const void* out,
                 const void* workspace, uint64_t workspace_bytes) {
  if (n < 0 || (has_x && x != nullptr && !valid_dtype(dtype))) return kInvalidArg;
  if (n == 0) return 0;
  if (workspace == nullptr || reinterpret_cast<uintptr_t>(workspace) % 16 != 0 ||
      workspace_bytes < sel_layout(n).total) {
    return kInvalidArg;
  }
  if (has_x) {
    const int size = x == nullptr ? 8 : dtype_size(dtype);
    if (out == nullptr || reinterpret_cast<uintptr_t>(out) % size != 0 ||
        (x != nullptr && reinterpret_cast<uintptr_t>(x) % size != 0)) {
      return kInvalidArg;
    }
  }
  return 0;
}

// ---- counting the flags set ----

// Non-zero bytes of a 32-bit word.
__device__ __forceinline__ unsigned nonzero_bytes(unsigned x) {
  x |= x >> 4;
  x |= x >> 2;
  x |= x >> 1;
  return static_cast<unsigned>(__popc(x & 0x01010101u));
}

// *count += the non-zero bytes of flags[0, n): 16-byte loads over the aligned middle, integer
// atomics once per warp (exact, so the result does not depend on their order).
__global__ void __launch_bounds__(kGatherBlock)
count_flags_kernel(const uint8_t* __restrict__ flags, int64_t n, unsigned long long* count) {
  pdl_enter();
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t head = static_cast<int64_t>((16 - (reinterpret_cast<uintptr_t>(flags) & 15)) & 15);
  if (head > n) head = n;
  const int64_t nvec = (n - head) / 16;
  const int64_t tail = head + nvec * 16;
  unsigned long long c = 0;
  if (tid < head) c += flags[tid] != 0;
  if (tid < n - tail) c += flags[tail + tid] != 0;
  const uint4* vec = reinterpret_cast<const uint4*>(flags + head);
  for (int64_t i = tid; i < nvec; i += step) {
    const uint4 w = vec[i];
    c += nonzero_bytes(w.x) + nonzero_bytes(w.y) + nonzero_bytes(w.z) + nonzero_bytes(w.w);
  }
  for (int offset = 16; offset > 0; offset >>= 1) c += __shfl_down_sync(0xffffffffu, c, offset);
  if ((threadIdx.x & 31) == 0 && c != 0) atomicAdd(count, c);
}

// ---- unravel ----

struct UnravelParams {
  int64_t shape[kMaxDims];
  int64_t size;
  int64_t count;
  int64_t stride_dim, stride_i;  // bytes
  int ndim, mode;
};

__global__ void __launch_bounds__(kGatherBlock)
unravel_kernel(const int64_t* __restrict__ flat, char* out, int64_t* error, UnravelParams p) {
  pdl_enter();
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < p.count;
       i += step) {
    bool ok = true;
    int64_t v = resolve(flat[i], p.size, p.mode, ok);
    if (!ok) record_error(error, static_cast<uint64_t>(i));
    for (int d = p.ndim - 1; d >= 0; --d) {
      const int64_t n = p.shape[d];
      const int64_t c = n > 0 ? v % n : 0;
      v = n > 0 ? v / n : v;
      *reinterpret_cast<int64_t*>(out + d * p.stride_dim + i * p.stride_i) = c;
    }
  }
}

// ---- deterministic scatter-add ----

// Destination keys: element offsets from the lowest element the plan can touch (`low`, bytes);
// an out-of-range index gets key `invalid` (sorted last, never written).
template <typename Idx>
__global__ void __launch_bounds__(kGatherBlock)
add_keys_kernel(IndexParams p, int64_t low, int elem_size, uint64_t invalid, int64_t* error,
                uint64_t* keys, int64_t* positions) {
  pdl_enter();
  const Idx total = static_cast<Idx>(p.total);
  const Idx step = static_cast<Idx>(gridDim.x) * blockDim.x;
  for (Idx i = static_cast<Idx>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    bool ok = true;
    uint64_t bad = 0;
    const int64_t off = element_offset<Idx>(p, i, ok, &bad);
    if (!ok) record_error(error, bad);
    keys[i] = ok ? static_cast<uint64_t>((off - low) / elem_size) : invalid;
    positions[i] = static_cast<int64_t>(i);
  }
}

template <typename T> struct AccOf { using type = T; };
template <> struct AccOf<int32_t> { using type = uint32_t; };  // wrap-around, no UB
template <> struct AccOf<int64_t> { using type = uint64_t; };

template <typename A>
struct SegPair {
  int head;  // a segment starts within the span
  A val;     // sum since the last segment start (or of the whole span)
};

template <typename A>
struct SegOp {
  __device__ __forceinline__ SegPair<A> operator()(const SegPair<A>& a,
                                                   const SegPair<A>& b) const {
    return {a.head | b.head, b.head ? b.val : static_cast<A>(a.val + b.val)};
  }
};

// One chunk of kAddChunk sorted elements per block.  Segments (runs of equal keys) that start
// and end inside the chunk are added to their destination here (their only writer);
// the chunk's first and last segment, when they continue into a neighbour, leave their
// partial sums in head[c] / tail[c] for add_carry_kernel.  Order of the sums: each thread adds
// its kAddItems consecutive elements in order, then a fixed block scan: no atomics, no
// dependence on timing.
template <typename T>
__global__ void __launch_bounds__(kAddBlock)
add_segments_kernel(const uint64_t* __restrict__ keys, const int64_t* __restrict__ positions,
                    const T* __restrict__ values, int64_t n, uint64_t invalid, char* low_base,
                    typename AccOf<T>::type* head, typename AccOf<T>::type* tail) {
  pdl_enter();
  using A = typename AccOf<T>::type;
  using Scan = cub::BlockScan<SegPair<A>, kAddBlock>;
  __shared__ typename Scan::TempStorage scan_storage;
  const int64_t c = blockIdx.x;
  const int64_t cs = c * kAddChunk;
  const int64_t ce = cs + kAddChunk < n ? cs + kAddChunk : n;
  const int64_t first = cs + static_cast<int64_t>(threadIdx.x) * kAddItems;
  uint64_t k[kAddItems];
  A v[kAddItems];
  SegPair<A> agg{0, A{}};
#pragma unroll
  for (int j = 0; j < kAddItems; ++j) {
    const int64_t e = first + j;
    if (e < ce) {
      k[j] = keys[e];
      v[j] = static_cast<A>(values[positions[e]]);
      const bool starts = e == cs || keys[e - 1] != k[j];
      if (starts) {
        agg.head = 1;
        agg.val = v[j];
      } else {
        agg.val = static_cast<A>(agg.val + v[j]);
      }
    }
  }
  SegPair<A> prefix;
  Scan(scan_storage).ExclusiveScan(agg, prefix, SegPair<A>{0, A{}}, SegOp<A>());
  if (threadIdx.x == 0) prefix = SegPair<A>{0, A{}};
  const bool continues_in = cs > 0 && keys[cs - 1] == keys[cs];
  const uint64_t first_key = keys[cs];
  const bool continues_out = ce < n && keys[ce] == keys[ce - 1];
  A running = prefix.val;
#pragma unroll
  for (int j = 0; j < kAddItems; ++j) {
    const int64_t e = first + j;
    if (e >= ce) continue;
    const bool starts = e == cs || keys[e - 1] != k[j];
    running = starts ? v[j] : static_cast<A>(running + v[j]);
    const bool ends = e + 1 == ce || keys[e + 1] != k[j];
    if (!ends) continue;
    const bool is_first = k[j] == first_key, is_last = e + 1 == ce;
    const bool partial_in = is_first && continues_in;
    const bool partial_out = is_last && continues_out;
    if (partial_in) head[c] = running;
    if (partial_out) tail[c] = running;
    if (!partial_in && !partial_out && k[j] != invalid) {
      T* dst = reinterpret_cast<T*>(low_base) + k[j];
      *dst = static_cast<T>(static_cast<A>(static_cast<A>(*dst) + running));
    }
  }
}

// The segments that cross chunk boundaries: the chunk where one starts adds its tail partial
// and the head partials of the chunks it covers, in chunk order, then writes the destination.
template <typename T>
__global__ void __launch_bounds__(kGatherBlock)
add_carry_kernel(const uint64_t* __restrict__ keys, int64_t n, int64_t chunks, uint64_t invalid,
                 char* low_base, const typename AccOf<T>::type* head,
                 const typename AccOf<T>::type* tail) {
  pdl_enter();
  using A = typename AccOf<T>::type;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= chunks) return;
  const int64_t cs = c * kAddChunk;
  const int64_t ce = cs + kAddChunk < n ? cs + kAddChunk : n;
  const uint64_t key = keys[ce - 1];
  if (ce >= n || keys[ce] != key) return;        // the last segment ends in this chunk
  if (cs > 0 && keys[cs - 1] == key) return;     // it started in an earlier chunk
  if (key == invalid) return;
  A sum = tail[c];
  for (int64_t c2 = c + 1; c2 < chunks; ++c2) {
    sum = static_cast<A>(sum + head[c2]);
    const int64_t e2 = (c2 * kAddChunk + kAddChunk < n ? c2 * kAddChunk + kAddChunk : n);
    if (keys[e2 - 1] != key || e2 >= n || keys[e2] != key) break;
  }
  T* dst = reinterpret_cast<T*>(low_base) + key;
  *dst = static_cast<T>(static_cast<A>(static_cast<A>(*dst) + sum));
}

// Workspace of a scatter-add: keys and positions (in and out of the sort), head and tail
// partials, CUB's temporary storage.
struct AddLayout {
  uint64_t keys_in, keys_out, pos_in, pos_out, head, tail, temp, temp_bytes, total;
};

int add_layout(int64_t n, int end_bit, AddLayout& L) {
  size_t temp = 0;
  const cudaError_t rc = cub::DeviceRadixSort::SortPairs(
      nullptr, temp, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
      static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr), n, 0, end_bit);
  if (rc != cudaSuccess) return static_cast<int>(rc);
  const uint64_t items = align_up(static_cast<uint64_t>(n) * 8);
  const int64_t chunks = (n + kAddChunk - 1) / kAddChunk;
  const uint64_t partials = align_up(static_cast<uint64_t>(chunks) * 8);
  L.keys_in = 0;
  L.keys_out = L.keys_in + items;
  L.pos_in = L.keys_out + items;
  L.pos_out = L.pos_in + items;
  L.head = L.pos_out + items;
  L.tail = L.head + partials;
  L.temp = L.tail + partials;
  L.temp_bytes = temp;
  L.total = L.temp + align_up(temp);
  return 0;
}

// Lowest byte offset (from the origin) any element of the plan can have, and the key range.
void key_range(const IndexParams& p, int elem_size, int64_t& low, uint64_t& span) {
  int64_t lo = 0, hi = 0;
  auto add = [&](int64_t n, int64_t s) {
    if (n <= 0) return;
    if (s < 0) lo += (n - 1) * s;
    else hi += (n - 1) * s;
  };
  for (int d = 0; d < p.n_outer; ++d) add(p.outer_shape[d], p.outer_strides[d]);
  for (int d = 0; d < p.n_inner; ++d) add(p.inner_shape[d], p.inner_strides[d]);
  for (int k = 0; k < p.n_index; ++k) add(p.size[k], p.stride[k]);
  low = lo;
  span = static_cast<uint64_t>((hi - lo) / elem_size) + 1;  // keys 0..span-1; span = invalid
}

int bits_for(uint64_t v) {
  int bits = 1;
  while (bits < 64 && (v >> bits) != 0) ++bits;
  return bits;
}

bool add_dtype(int dtype) {
  return dtype == PGK_FLOAT32 || dtype == PGK_FLOAT64 || dtype == PGK_INT32 ||
         dtype == PGK_INT64;
}

template <typename T>
int launch_add(const IndexParams& p, char* base, const T* values, int64_t* error, char* ws,
               const AddLayout& L, int end_bit, int64_t low, uint64_t invalid,
               cudaStream_t stream) {
  using A = typename AccOf<T>::type;
  const int64_t n = p.total;
  auto* keys_in = reinterpret_cast<uint64_t*>(ws + L.keys_in);
  auto* keys_out = reinterpret_cast<uint64_t*>(ws + L.keys_out);
  auto* pos_in = reinterpret_cast<int64_t*>(ws + L.pos_in);
  auto* pos_out = reinterpret_cast<int64_t*>(ws + L.pos_out);
  auto* head = reinterpret_cast<A*>(ws + L.head);
  auto* tail = reinterpret_cast<A*>(ws + L.tail);
  const unsigned grid = grid_for(n, kGatherBlock);
  if (n <= INT32_MAX) {
    add_keys_kernel<uint32_t><<<grid, kGatherBlock, 0, stream>>>(
        p, low, static_cast<int>(sizeof(T)), invalid, error, keys_in, pos_in);
  } else {
    add_keys_kernel<uint64_t><<<grid, kGatherBlock, 0, stream>>>(
        p, low, static_cast<int>(sizeof(T)), invalid, error, keys_in, pos_in);
  }
  if (const int rc = launch_status()) return rc;
  size_t temp = L.temp_bytes;
  const cudaError_t rc = cub::DeviceRadixSort::SortPairs(
      ws + L.temp, temp, keys_in, keys_out, pos_in, pos_out, n, 0, end_bit, stream);
  if (rc != cudaSuccess) return static_cast<int>(rc);
  const int64_t chunks = (n + kAddChunk - 1) / kAddChunk;
  char* low_base = base + low;
  add_segments_kernel<T><<<static_cast<unsigned>(chunks), kAddBlock, 0, stream>>>(
      keys_out, pos_out, values, n, invalid, low_base, head, tail);
  if (const int rc2 = launch_status()) return rc2;
  if (chunks > 1) {
    const unsigned carry_grid = static_cast<unsigned>((chunks + kGatherBlock - 1) / kGatherBlock);
    add_carry_kernel<T><<<carry_grid, kGatherBlock, 0, stream>>>(keys_out, n, chunks, invalid,
                                                                 low_base, head, tail);
  }
  return launch_status();
}

}  // namespace
}  // namespace pgk

extern "C" PGK_API int pgk_index_gather(const pgk_index_desc* desc, void* out, int64_t* error,
                                        void* stream) {
  return pgk::gather_scatter<pgk::kGather>(desc, out, error, stream);
}

extern "C" PGK_API int pgk_index_check(const pgk_index_desc* desc, int64_t* error,
                                       void* stream) {
  using namespace pgk;
  IndexParams p;
  auto s = static_cast<cudaStream_t>(stream);
  if (error == nullptr) return kInvalidArg;
  if (const int rc = make_params(desc, p, false)) return rc;
  if (const int rc = reset_error(desc, error, s)) return rc;
  if (p.total == 0) return 0;  // no element: nothing is out of range
  const unsigned grid = grid_for(p.count, kGatherBlock);
  if (p.count <= INT32_MAX) {
    launch_k(index_check_kernel<uint32_t>, dim3(grid), dim3(kGatherBlock), s, error, p);
  } else {
    launch_k(index_check_kernel<uint64_t>, dim3(grid), dim3(kGatherBlock), s, error, p);
  }
  return launch_status();
}

extern "C" PGK_API int pgk_index_scatter(const pgk_index_desc* desc, const void* values,
                                         int64_t* error, void* stream) {
  return pgk::gather_scatter<pgk::kScatter>(desc, const_cast<void*>(values), error, stream);
}

extern "C" PGK_API int pgk_select_flagged_workspace_size(int dtype, int positions, int64_t n,
                                                         uint64_t* bytes) {
  using namespace pgk;
  if (bytes == nullptr || n < 0 || (!positions && !valid_dtype(dtype))) return kInvalidArg;
  *bytes = sel_layout(n).total;
  return 0;
}

extern "C" PGK_API int pgk_select_flagged(const void* x, int dtype, const uint8_t* flags,
                                          int64_t n, void* out, void* workspace,
                                          uint64_t workspace_bytes, void* stream) {
  using namespace pgk;
  if (const int rc = check_select(true, x, dtype, n, out, workspace, workspace_bytes)) return rc;
  if (n == 0) return 0;
  if (flags == nullptr) return kInvalidArg;
  auto s = static_cast<cudaStream_t>(stream);
  char* ws = static_cast<char*>(workspace);
  if (const int rc = select_count(flags, n, ws, s)) return rc;
  return select_compact(x, x == nullptr ? 8 : dtype_size(dtype), out, n, ws, s);
}

extern "C" PGK_API int pgk_select_flagged_count(const uint8_t* flags, int64_t n, void* workspace,
                                                uint64_t workspace_bytes, void* stream) {
  using namespace pgk;
  if (const int rc = check_select(false, nullptr, 0, n, nullptr, workspace, workspace_bytes)) {
    return rc;
  }
  if (n == 0) return 0;
  if (flags == nullptr) return kInvalidArg;
  return select_count(flags, n, static_cast<char*>(workspace), static_cast<cudaStream_t>(stream));
}

extern "C" PGK_API int pgk_select_flagged_compact(const void* x, int dtype, int64_t n, void* out,
                                                  const void* workspace,
                                                  uint64_t workspace_bytes, void* stream) {
  using namespace pgk;
  if (const int rc = check_select(true, x, dtype, n, out, workspace, workspace_bytes)) return rc;
  if (n == 0) return 0;
  return select_compact(x, x == nullptr ? 8 : dtype_size(dtype), out, n,
                        static_cast<const char*>(workspace), static_cast<cudaStream_t>(stream));
}

extern "C" PGK_API int pgk_count_flags(const uint8_t* flags, int64_t n, int64_t* count,
                                       void* stream) {
  using namespace pgk;
  if (n < 0 || count == nullptr || reinterpret_cast<uintptr_t>(count) % 8 != 0) {
    return kInvalidArg;
  }
  if (n > 0 && flags == nullptr) return kInvalidArg;
  auto s = static_cast<cudaStream_t>(stream);
  if (const cudaError_t rc = cudaMemsetAsync(count, 0, sizeof(int64_t), s)) {
    return static_cast<int>(rc);
  }
  if (n == 0) return 0;
  // About 8 blocks per SM of the largest GPUs: enough loads in flight, few atomics.
  int64_t blocks = (n / 16 + kGatherBlock - 1) / kGatherBlock;
  if (blocks > 2048) blocks = 2048;
  if (blocks < 1) blocks = 1;
  launch_k(count_flags_kernel, dim3(static_cast<unsigned>(blocks)), dim3(kGatherBlock), s, flags,
           n, reinterpret_cast<unsigned long long*>(count));
  return launch_status();
}

extern "C" PGK_API int pgk_unravel_index(const int64_t* flat, int64_t count, int ndim,
                                         const int64_t* shape, int mode, int64_t* out,
                                         int64_t out_stride_dim, int64_t out_stride_i,
                                         int64_t* error, void* stream) {
  using namespace pgk;
  if (count < 0 || ndim < 1 || ndim > kMaxDims || shape == nullptr) return kInvalidArg;
  if (mode < PGK_INDEX_RAISE || mode > PGK_INDEX_CLIP) return kInvalidArg;
  UnravelParams p{};
  p.size = 1;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] < 0 || (shape[d] != 0 && p.size > INT64_MAX / shape[d])) return kInvalidArg;
    p.shape[d] = shape[d];
    p.size *= shape[d];
  }
  p.count = count;
  p.ndim = ndim;
  p.mode = mode;
  p.stride_dim = out_stride_dim;
  p.stride_i = out_stride_i;
  auto s = static_cast<cudaStream_t>(stream);
  if (error != nullptr) {
    if (reinterpret_cast<uintptr_t>(error) % 8 != 0) return kInvalidArg;
    if (const cudaError_t rc = cudaMemsetAsync(error, 0xff, sizeof(int64_t), s)) {
      return static_cast<int>(rc);
    }
  }
  if (count == 0) return 0;
  if (flat == nullptr || out == nullptr || reinterpret_cast<uintptr_t>(flat) % 8 != 0 ||
      reinterpret_cast<uintptr_t>(out) % 8 != 0 || out_stride_dim % 8 != 0 ||
      out_stride_i % 8 != 0) {
    return kInvalidArg;
  }
  launch_k(unravel_kernel, dim3(grid_for(count, kGatherBlock)), dim3(kGatherBlock), s, flat,
           reinterpret_cast<char*>(out), error, p);
  return launch_status();
}

extern "C" PGK_API int pgk_index_add_workspace_size(const pgk_index_desc* desc,
                                                    uint64_t* bytes) {
  using namespace pgk;
  IndexParams p;
  if (bytes == nullptr) return kInvalidArg;
  if (const int rc = make_params(desc, p)) return rc;
  if (!add_dtype(desc->dtype)) return kInvalidArg;
  if (p.total == 0) {
    *bytes = 0;
    return 0;
  }
  int64_t low = 0;
  uint64_t span = 0;
  key_range(p, dtype_size(desc->dtype), low, span);
  AddLayout L{};
  if (const int rc = add_layout(p.total, bits_for(span), L)) return rc;
  *bytes = L.total;
  return 0;
}

extern "C" PGK_API int pgk_index_add(const pgk_index_desc* desc, const void* values,
                                     int64_t* error, void* workspace, uint64_t workspace_bytes,
                                     void* stream) {
  using namespace pgk;
  if (desc == nullptr || !add_dtype(desc->dtype)) return kInvalidArg;
  IndexParams p;
  auto s = static_cast<cudaStream_t>(stream);
  if (const int rc = begin_index(desc, p, values, error, s)) return rc < 0 ? 0 : rc;
  const int size = dtype_size(desc->dtype);
  int64_t low = 0;
  uint64_t span = 0;
  key_range(p, size, low, span);
  const int end_bit = bits_for(span);
  AddLayout L{};
  if (const int rc = add_layout(p.total, end_bit, L)) return rc;
  if (workspace == nullptr || workspace_bytes < L.total ||
      reinterpret_cast<uintptr_t>(workspace) % kAlign != 0) {
    return kInvalidArg;
  }
  char* base = static_cast<char*>(desc->base);
  char* ws = static_cast<char*>(workspace);
  switch (desc->dtype) {
    case PGK_FLOAT32:
      return launch_add(p, base, static_cast<const float*>(values), error, ws, L, end_bit, low,
                        span, s);
    case PGK_FLOAT64:
      return launch_add(p, base, static_cast<const double*>(values), error, ws, L, end_bit, low,
                        span, s);
    case PGK_INT32:
      return launch_add(p, base, static_cast<const int32_t*>(values), error, ws, L, end_bit,
                        low, span, s);
    default:
      return launch_add(p, base, static_cast<const int64_t*>(values), error, ws, L, end_bit,
                        low, span, s);
  }
}

extern "C" PGK_API int pgk_index_add_atomic(const pgk_index_desc* desc, const void* values,
                                            int64_t* error, void* stream) {
  using namespace pgk;
  if (desc == nullptr || !add_dtype(desc->dtype)) return kInvalidArg;
  IndexParams p;
  auto s = static_cast<cudaStream_t>(stream);
  if (const int rc = begin_index(desc, p, values, error, s)) return rc < 0 ? 0 : rc;
  char* base = static_cast<char*>(desc->base);
  char* v = static_cast<char*>(const_cast<void*>(values));
  switch (desc->dtype) {
    case PGK_FLOAT32: return launch_index<kAtomicAdd, float>(p, base, v, error, s);
    case PGK_FLOAT64: return launch_index<kAtomicAdd, double>(p, base, v, error, s);
    case PGK_INT32: return launch_index<kAtomicAdd, unsigned int>(p, base, v, error, s);
    default: return launch_index<kAtomicAdd, unsigned long long>(p, base, v, error, s);
  }
}
