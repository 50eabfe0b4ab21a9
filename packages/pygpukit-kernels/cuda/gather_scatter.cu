// Advanced indexing: gather / scatter over an index space (outer..., count, inner...), mask
// compaction (CUB DeviceSelect), unravelling of flat indices, and a deterministic scatter-add
// (a stable radix sort of the destinations, then a segmented reduction in a fixed order).
//
// Template instantiations are kept few: gather/scatter/compaction dispatch on the element size
// (1/2/4/8 bytes) and a 32/64-bit index type; only scatter-add does arithmetic (float32,
// float64, int32, int64).
#include <cuda_runtime.h>

#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

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

// Validate a descriptor and copy it into kernel parameters.
int make_params(const pgk_index_desc* d, IndexParams& p) {
  if (d == nullptr || !valid_dtype(d->dtype)) return kInvalidArg;
  if (d->mode < PGK_INDEX_RAISE || d->mode > PGK_INDEX_CLIP) return kInvalidArg;
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
  if (total > 0 && (d->base == nullptr ||
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

// Validates the descriptor, resets the error slot ("no error": all ones, which atomicMin of an
// error code replaces) and checks the values / output operand: 0 to go on, a status to return,
// or -1 when there is nothing to do.
int begin_index(const pgk_index_desc* d, IndexParams& p, const void* other, int64_t* error,
                cudaStream_t s) {
  if (const int rc = make_params(d, p)) return rc;
  if (error != nullptr) {
    if (reinterpret_cast<uintptr_t>(error) % 8 != 0) return kInvalidArg;
    if (const cudaError_t rc = cudaMemsetAsync(error, 0xff, sizeof(int64_t), s)) {
      return static_cast<int>(rc);
    }
  }
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

// One compaction with CUB; with a null `workspace` only the CUB temporary size (`*query`).
template <typename In, typename Out>
int select_flagged(In in, const uint8_t* flags, Out out, int64_t n, void* workspace,
                   uint64_t workspace_bytes, size_t* query, cudaStream_t stream) {
  // The first kAlign bytes of the workspace hold the selected count (CUB writes it there).
  int64_t* num_selected = static_cast<int64_t*>(workspace);
  size_t temp_bytes = 0;
  cudaError_t rc = cub::DeviceSelect::Flagged(nullptr, temp_bytes, in, flags, out,
                                              num_selected, n, stream);
  if (rc != cudaSuccess) return static_cast<int>(rc);
  if (workspace == nullptr) {
    *query = temp_bytes;
    return 0;
  }
  if (workspace_bytes < kAlign + temp_bytes) return kInvalidArg;
  rc = cub::DeviceSelect::Flagged(static_cast<char*>(workspace) + kAlign, temp_bytes, in, flags,
                                  out, num_selected, n, stream);
  return static_cast<int>(rc);
}

// Dispatches one compaction on the element size (x null: the flat positions, int64).
int select_dispatch(const void* x, int elem_size, const uint8_t* flags, void* out, int64_t n,
                    void* workspace, uint64_t workspace_bytes, size_t* query,
                    cudaStream_t stream) {
  if (x == nullptr) {
    return select_flagged(thrust::counting_iterator<int64_t>(0), flags,
                          static_cast<int64_t*>(out), n, workspace, workspace_bytes, query,
                          stream);
  }
  switch (elem_size) {
    case 1:
      return select_flagged(static_cast<const uint8_t*>(x), flags, static_cast<uint8_t*>(out),
                            n, workspace, workspace_bytes, query, stream);
    case 2:
      return select_flagged(static_cast<const uint16_t*>(x), flags,
                            static_cast<uint16_t*>(out), n, workspace, workspace_bytes, query,
                            stream);
    case 4:
      return select_flagged(static_cast<const uint32_t*>(x), flags,
                            static_cast<uint32_t*>(out), n, workspace, workspace_bytes, query,
                            stream);
    default:
      return select_flagged(static_cast<const unsigned long long*>(x), flags,
                            static_cast<unsigned long long*>(out), n, workspace,
                            workspace_bytes, query, stream);
  }
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

extern "C" PGK_API int pgk_index_scatter(const pgk_index_desc* desc, const void* values,
                                         int64_t* error, void* stream) {
  return pgk::gather_scatter<pgk::kScatter>(desc, const_cast<void*>(values), error, stream);
}

extern "C" PGK_API int pgk_select_flagged_workspace_size(int dtype, int positions, int64_t n,
                                                         uint64_t* bytes) {
  using namespace pgk;
  if (bytes == nullptr || n < 0 || (!positions && !valid_dtype(dtype))) return kInvalidArg;
  // A non-null dummy input selects the element-size instantiation; no memory is touched.
  const void* x = positions ? nullptr : reinterpret_cast<const void*>(uintptr_t{256});
  size_t temp = 0;
  if (const int rc = select_dispatch(x, positions ? 8 : dtype_size(dtype), nullptr, nullptr, n,
                                     nullptr, 0, &temp, nullptr)) {
    return rc;
  }
  *bytes = kAlign + align_up(static_cast<uint64_t>(temp));
  return 0;
}

extern "C" PGK_API int pgk_select_flagged(const void* x, int dtype, const uint8_t* flags,
                                          int64_t n, void* out, void* workspace,
                                          uint64_t workspace_bytes, void* stream) {
  using namespace pgk;
  if (n < 0 || (x != nullptr && !valid_dtype(dtype))) return kInvalidArg;
  if (n == 0) return 0;
  if (flags == nullptr || out == nullptr || workspace == nullptr) return kInvalidArg;
  const int size = x == nullptr ? 8 : dtype_size(dtype);
  if (reinterpret_cast<uintptr_t>(out) % size != 0 ||
      (x != nullptr && reinterpret_cast<uintptr_t>(x) % size != 0) ||
      reinterpret_cast<uintptr_t>(workspace) % 16 != 0) {
    return kInvalidArg;
  }
  size_t unused = 0;
  return select_dispatch(x, size, flags, out, n, workspace, workspace_bytes, &unused,
                         static_cast<cudaStream_t>(stream));
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
