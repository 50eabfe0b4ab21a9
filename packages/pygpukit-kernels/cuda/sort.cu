// pgk_sort / pgk_searchsorted / pgk_unique_* / pgk_take_rows: sorting with CUB's radix sort.
//
// Compile time is kept small by sorting only four key types (unsigned integers of 1, 2, 4 and 8
// bytes), keys alone or with int64 values: every dtype is first mapped by a tiny kernel to an
// unsigned key whose unsigned order is NumPy's order (floats: the sign-magnitude bit trick, every
// NaN to the largest key, optionally -0.0 to +0.0).  Rows are sorted at once by putting the row
// id above the key bits of a 64-bit key ("packed"), or, where that does not fit in 64 bits, by
// two stable passes (the keys with their flat index, then the row ids of those indices).
// Rows whose keys fit in shared memory, when fewer than all and at most kSelMaxK (1024) leading
// columns are asked for (topk), skip the radix sort: one block per row selects and sorts only
// those (select_rows_kernel below), with the same result.
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include <cstdint>
#include <type_traits>

#include "launch_utils.cuh"
#include "pygpukit_kernels.h"

namespace pgk {
namespace {

constexpr int kInvalid = static_cast<int>(cudaErrorInvalidValue);
constexpr uint64_t kAlign = 256;
constexpr unsigned kBlock = 256;

using u64 = unsigned long long;

inline int sort_dtype_size(int code) {
  constexpr int sizes[10] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  return sizes[code];
}
template <int Code>
constexpr bool kEightByte = Code == PGK_INT64 || Code == PGK_FLOAT64;

// ---- keys: dtype bits <-> unsigned keys in NumPy's sort order --------------------------------

template <typename U>
__device__ __forceinline__ U float_key(U b, U sign, U abs_inf, bool canon_zero) {
  const U mag = b & static_cast<U>(~sign);
  if (mag > abs_inf) return static_cast<U>(~U{0});  // any NaN: the largest key
  if (canon_zero && mag == 0) b = 0;                // -0.0 sorts as +0.0
  return (b & sign) ? static_cast<U>(~b) : static_cast<U>(b | sign);
}

template <typename U>
__device__ __forceinline__ U float_bits(U key, U sign, U qnan) {
  if (key == static_cast<U>(~U{0})) return qnan;
  return (key & sign) ? static_cast<U>(key ^ sign) : static_cast<U>(~key);
}

// The key of element i of x (dtype Code), in the low bits of a u64.
template <int Code>
__device__ __forceinline__ u64 load_key(const void* x, int64_t i, bool canon_zero) {
  if constexpr (Code == PGK_BOOL) {
    return static_cast<const uint8_t*>(x)[i] != 0 ? 1u : 0u;
  } else if constexpr (Code == PGK_INT8) {
    return static_cast<uint8_t>(static_cast<const uint8_t*>(x)[i] ^ 0x80u);
  } else if constexpr (Code == PGK_UINT8) {
    return static_cast<const uint8_t*>(x)[i];
  } else if constexpr (Code == PGK_INT16) {
    return static_cast<uint16_t>(static_cast<const uint16_t*>(x)[i] ^ 0x8000u);
  } else if constexpr (Code == PGK_INT32) {
    return static_cast<const uint32_t*>(x)[i] ^ 0x80000000u;
  } else if constexpr (Code == PGK_INT64) {
    return static_cast<const u64*>(x)[i] ^ (u64{1} << 63);
  } else if constexpr (Code == PGK_FLOAT16) {
    return float_key<uint16_t>(static_cast<const uint16_t*>(x)[i], 0x8000u, 0x7C00u, canon_zero);
  } else if constexpr (Code == PGK_BFLOAT16) {
    return float_key<uint16_t>(static_cast<const uint16_t*>(x)[i], 0x8000u, 0x7F80u, canon_zero);
  } else if constexpr (Code == PGK_FLOAT32) {
    return float_key<uint32_t>(static_cast<const uint32_t*>(x)[i], 0x80000000u, 0x7F800000u,
                               canon_zero);
  } else {
    return float_key<u64>(static_cast<const u64*>(x)[i], u64{1} << 63,
                          u64{0x7FF0000000000000ull}, canon_zero);
  }
}

// Store the element whose (ascending) key is `key` at out[p].
template <int Code>
__device__ __forceinline__ void store_key(void* out, int64_t p, u64 key) {
  if constexpr (Code == PGK_BOOL || Code == PGK_UINT8) {
    static_cast<uint8_t*>(out)[p] = static_cast<uint8_t>(key);
  } else if constexpr (Code == PGK_INT8) {
    static_cast<uint8_t*>(out)[p] = static_cast<uint8_t>(key ^ 0x80u);
  } else if constexpr (Code == PGK_INT16) {
    static_cast<uint16_t*>(out)[p] = static_cast<uint16_t>(key ^ 0x8000u);
  } else if constexpr (Code == PGK_INT32) {
    static_cast<uint32_t*>(out)[p] = static_cast<uint32_t>(key) ^ 0x80000000u;
  } else if constexpr (Code == PGK_INT64) {
    static_cast<u64*>(out)[p] = key ^ (u64{1} << 63);
  } else if constexpr (Code == PGK_FLOAT16) {
    static_cast<uint16_t*>(out)[p] = float_bits<uint16_t>(static_cast<uint16_t>(key), 0x8000u,
                                                          0x7E00u);
  } else if constexpr (Code == PGK_BFLOAT16) {
    static_cast<uint16_t*>(out)[p] = float_bits<uint16_t>(static_cast<uint16_t>(key), 0x8000u,
                                                          0x7FC0u);
  } else if constexpr (Code == PGK_FLOAT32) {
    static_cast<uint32_t*>(out)[p] = float_bits<uint32_t>(static_cast<uint32_t>(key),
                                                          0x80000000u, 0x7FC00000u);
  } else {
    static_cast<u64*>(out)[p] = float_bits<u64>(key, u64{1} << 63, 0x7FF8000000000000ull);
  }
}

template <int Code>
__device__ __forceinline__ void copy_elem(const void* x, int64_t i, void* out, int64_t p) {
  if constexpr (Code == PGK_BOOL || Code == PGK_INT8 || Code == PGK_UINT8) {
    static_cast<uint8_t*>(out)[p] = static_cast<const uint8_t*>(x)[i];
  } else if constexpr (Code == PGK_INT16 || Code == PGK_FLOAT16 || Code == PGK_BFLOAT16) {
    static_cast<uint16_t*>(out)[p] = static_cast<const uint16_t*>(x)[i];
  } else if constexpr (Code == PGK_INT32 || Code == PGK_FLOAT32) {
    static_cast<uint32_t*>(out)[p] = static_cast<const uint32_t*>(x)[i];
  } else {
    static_cast<u64*>(out)[p] = static_cast<const u64*>(x)[i];
  }
}

// The unsigned key type of a dtype's own width.
template <int Code>
using NativeKey = std::conditional_t<
    (Code == PGK_BOOL || Code == PGK_INT8 || Code == PGK_UINT8), uint8_t,
    std::conditional_t<(Code == PGK_INT16 || Code == PGK_FLOAT16 || Code == PGK_BFLOAT16),
                       uint16_t,
                       std::conditional_t<(Code == PGK_INT32 || Code == PGK_FLOAT32), uint32_t,
                                          u64>>>;

template <typename F>
inline int dispatch_code(int code, F&& f) {
  switch (code) {
    case PGK_BOOL: return f(std::integral_constant<int, PGK_BOOL>{});
    case PGK_INT8: return f(std::integral_constant<int, PGK_INT8>{});
    case PGK_UINT8: return f(std::integral_constant<int, PGK_UINT8>{});
    case PGK_INT16: return f(std::integral_constant<int, PGK_INT16>{});
    case PGK_INT32: return f(std::integral_constant<int, PGK_INT32>{});
    case PGK_INT64: return f(std::integral_constant<int, PGK_INT64>{});
    case PGK_FLOAT16: return f(std::integral_constant<int, PGK_FLOAT16>{});
    case PGK_BFLOAT16: return f(std::integral_constant<int, PGK_BFLOAT16>{});
    case PGK_FLOAT32: return f(std::integral_constant<int, PGK_FLOAT32>{});
    default: return f(std::integral_constant<int, PGK_FLOAT64>{});
  }
}

// ---- kernels ---------------------------------------------------------------------------------

// i / d, in 32 bits when both fit (far cheaper than a 64-bit division on the GPU).
__device__ __forceinline__ int64_t div_index(int64_t i, int64_t d) {
  if (((i | d) >> 32) == 0) return static_cast<uint32_t>(i) / static_cast<uint32_t>(d);
  return i / d;
}

// keys[i] = (row(i) << shift) | key(x[i]) (row only when shift > 0), flipped for descending;
// vals[i] = i when vals is given.
template <int Code, typename K>
__global__ void encode_kernel(const void* __restrict__ x, int64_t n, int64_t cols, int shift,
                              bool descending, bool canon_zero, int key_bits,
                              K* __restrict__ keys, int64_t* __restrict__ vals) {
  const u64 mask = key_bits >= 64 ? ~u64{0} : ((u64{1} << key_bits) - 1);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    u64 k = load_key<Code>(x, i, canon_zero);
    if (descending) k = ~k & mask;
    if (shift > 0) k |= static_cast<u64>(div_index(i, cols)) << shift;
    keys[i] = static_cast<K>(k);
    if (vals != nullptr) vals[i] = i;
  }
}

// Second pass of the two-pass row sort: the row id of each (flat) index, as the new key.
__global__ void row_keys_kernel(const int64_t* __restrict__ vals, int64_t n, int64_t cols,
                                u64* __restrict__ keys) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    keys[i] = static_cast<u64>(div_index(vals[i], cols));
  }
}

// Outputs of the first k columns of each sorted row: values (decoded from the key, or gathered
// from x by the flat index when `gather`) and indices within the row.
template <int Code, typename K>
__global__ void decode_kernel(const void* __restrict__ x, const K* __restrict__ keys,
                              const int64_t* __restrict__ vals, int64_t rows, int64_t cols,
                              int64_t k, bool descending, int key_bits, bool gather,
                              bool canon_values, void* __restrict__ values_out,
                              int64_t* __restrict__ indices_out) {
  const u64 mask = key_bits >= 64 ? ~u64{0} : ((u64{1} << key_bits) - 1);
  const int64_t total = rows * k;
  for (int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; p < total;
       p += int64_t{gridDim.x} * blockDim.x) {
    int64_t r = 0, q = p;
    if (k != cols) {
      r = div_index(p, k);
      q = r * cols + (p - r * k);
    } else if (rows > 1 && indices_out != nullptr) {
      r = div_index(p, cols);
    }
    if (values_out != nullptr) {
      if (gather && canon_values) {
        // A values-only result: NaNs as the dtype's default NaN, as the decoded keys give.
        store_key<Code>(values_out, p, load_key<Code>(x, vals[q], false));
      } else if (gather) {
        copy_elem<Code>(x, vals[q], values_out, p);
      } else {
        u64 key = static_cast<u64>(keys[q]) & mask;
        if (descending) key = ~key & mask;
        store_key<Code>(values_out, p, key);
      }
    }
    if (indices_out != nullptr) indices_out[p] = vals[q] - r * cols;
  }
}

// ---- the plan: which key type, how rows are handled, where the buffers lie --------------------

struct SortPlan {
  int width = 0;       // bytes of the radix-sorted key (1, 2, 4, 8)
  int key_bits = 0;    // significant bits of the element key (1 for bool)
  int shift = 0;       // packed rows: row id above this bit (0: not packed)
  int end_bit = 0;     // bits the (first) radix sort looks at
  bool two_pass = false;
  bool with_vals = false;
  int row_bits = 0;    // two-pass: bits of the row id
  uint64_t off_keys1 = 0, off_vals0 = 0, off_vals1 = 0, off_temp = 0, temp_bytes = 0;
  uint64_t total = 0;
};

inline int bits_for(int64_t v) {  // bits needed to hold 0..v
  int b = 0;
  while (b < 63 && (int64_t{1} << b) <= v) ++b;
  return b;
}

inline uint64_t round_up(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// CUB's offsets follow the type of the element count: 32-bit ones (the fastest) whenever the
// count fits, 64-bit ones past 2^32 elements.
template <typename K, typename N>
int temp_bytes_n(bool with_vals, N n, int begin_bit, int end_bit, size_t* bytes) {
  cub::DoubleBuffer<K> keys(nullptr, nullptr);
  cudaError_t st;
  if (with_vals) {
    cub::DoubleBuffer<int64_t> vals(nullptr, nullptr);
    st = cub::DeviceRadixSort::SortPairs(nullptr, *bytes, keys, vals, n, begin_bit, end_bit);
  } else {
    st = cub::DeviceRadixSort::SortKeys(nullptr, *bytes, keys, n, begin_bit, end_bit);
  }
  return static_cast<int>(st);
}

template <typename K>
int temp_bytes_for(bool with_vals, int64_t n, int begin_bit, int end_bit, size_t* bytes) {
  if (n <= int64_t{UINT32_MAX}) {
    return temp_bytes_n<K, uint32_t>(with_vals, static_cast<uint32_t>(n), begin_bit, end_bit,
                                     bytes);
  }
  return temp_bytes_n<K, int64_t>(with_vals, n, begin_bit, end_bit, bytes);
}

inline int temp_bytes_width(int width, bool with_vals, int64_t n, int end_bit, size_t* bytes) {
  switch (width) {
    case 1: return temp_bytes_for<uint8_t>(with_vals, n, 0, end_bit, bytes);
    case 2: return temp_bytes_for<uint16_t>(with_vals, n, 0, end_bit, bytes);
    case 4: return temp_bytes_for<uint32_t>(with_vals, n, 0, end_bit, bytes);
    default: return temp_bytes_for<u64>(with_vals, n, 0, end_bit, bytes);
  }
}

int make_plan(int dtype, int64_t rows, int64_t cols, int flags, SortPlan* plan) {
  SortPlan p;
  const int64_t n = rows * cols;
  const int esize = sort_dtype_size(dtype);
  p.key_bits = dtype == PGK_BOOL ? 1 : 8 * esize;
  p.with_vals = (flags & PGK_SORT_INDICES) != 0;
  p.width = esize;
  p.end_bit = p.key_bits;
  if (rows > 1) {
    const int rb = bits_for(rows - 1);
    if (p.key_bits + rb <= 64 && esize < 8) {
      p.width = 8;
      p.shift = p.key_bits;
      p.end_bit = p.key_bits + rb;
    } else {
      p.two_pass = true;
      p.with_vals = true;
      p.row_bits = rb;
    }
  }
  size_t temp = 0, temp2 = 0;
  int st = temp_bytes_width(p.width, p.with_vals, n, p.end_bit, &temp);
  if (st != 0) return st;
  if (p.two_pass) {
    st = temp_bytes_width(8, true, n, p.row_bits, &temp2);
    if (st != 0) return st;
    if (temp2 > temp) temp = temp2;
  }
  // keys0 at 0; keys1; vals0; vals1; CUB's temporary storage.  Two-pass sorts reuse the key
  // buffers for the 8-byte row keys, so they are sized for 8 bytes.
  const uint64_t kbytes = round_up(static_cast<uint64_t>(n) * (p.two_pass ? 8 : p.width));
  const uint64_t vbytes = p.with_vals ? round_up(static_cast<uint64_t>(n) * 8) : 0;
  p.off_keys1 = kbytes;
  p.off_vals0 = 2 * kbytes;
  p.off_vals1 = 2 * kbytes + vbytes;
  p.off_temp = 2 * kbytes + 2 * vbytes;
  p.temp_bytes = round_up(temp);
  p.total = p.off_temp + p.temp_bytes;
  *plan = p;
  return 0;
}

int check_sort_args(int dtype, int64_t rows, int64_t cols, int flags) {
  if (dtype < 0 || dtype > 9) return kInvalid;
  if (rows < 0 || cols < 0 || (flags & ~(PGK_SORT_INDICES | PGK_SORT_DESCENDING)) != 0) {
    return kInvalid;
  }
  if (cols != 0 && rows > INT64_MAX / 16 / cols) return kInvalid;  // n * 16 bytes must fit
  return 0;
}

template <typename K, typename N>
int radix_sort_n(char* ws, const SortPlan& p, N n, int begin_bit, int end_bit, K** keys_cur,
                 int64_t** vals_cur, cudaStream_t stream) {
  cub::DoubleBuffer<K> keys(reinterpret_cast<K*>(ws), reinterpret_cast<K*>(ws + p.off_keys1));
  if (*keys_cur != keys.Current()) keys.selector = 1;
  size_t temp = p.temp_bytes;
  cudaError_t st;
  if (p.with_vals) {
    cub::DoubleBuffer<int64_t> vals(reinterpret_cast<int64_t*>(ws + p.off_vals0),
                                    reinterpret_cast<int64_t*>(ws + p.off_vals1));
    if (*vals_cur != vals.Current()) vals.selector = 1;
    st = cub::DeviceRadixSort::SortPairs(ws + p.off_temp, temp, keys, vals, n, begin_bit,
                                         end_bit, stream);
    *vals_cur = vals.Current();
  } else {
    st = cub::DeviceRadixSort::SortKeys(ws + p.off_temp, temp, keys, n, begin_bit, end_bit,
                                        stream);
  }
  *keys_cur = keys.Current();
  return static_cast<int>(st);
}

// Radix sort of the n keys (and values) whose current buffers are *keys_cur / *vals_cur (one of
// the workspace's two each); on return they point at the sorted ones.
template <typename K>
int radix_sort(char* ws, const SortPlan& p, int64_t n, int begin_bit, int end_bit, K** keys_cur,
               int64_t** vals_cur, cudaStream_t stream) {
  if (n <= int64_t{UINT32_MAX}) {
    return radix_sort_n<K, uint32_t>(ws, p, static_cast<uint32_t>(n), begin_bit, end_bit,
                                     keys_cur, vals_cur, stream);
  }
  return radix_sort_n<K, int64_t>(ws, p, n, begin_bit, end_bit, keys_cur, vals_cur, stream);
}

template <int Code, typename K>
int run_sort_typed(const void* x, int64_t rows, int64_t cols, int flags, int64_t k,
                   void* values_out, int64_t* indices_out, char* ws, const SortPlan& p,
                   cudaStream_t stream) {
  const int64_t n = rows * cols;
  const bool desc = (flags & PGK_SORT_DESCENDING) != 0;
  // Equal keys for -0.0 and +0.0 whenever positions matter (indices): NumPy's order is stable
  // for them; a values-only sort orders -0.0 first (both orders are NumPy's).
  const bool with_indices = (flags & PGK_SORT_INDICES) != 0;
  const bool canon_zero = with_indices;
  K* keys = reinterpret_cast<K*>(ws);
  int64_t* vals = p.with_vals ? reinterpret_cast<int64_t*>(ws + p.off_vals0) : nullptr;
  const unsigned grid = grid_for(n, kBlock);
  encode_kernel<Code, K><<<grid, kBlock, 0, stream>>>(x, n, cols, p.shift, desc, canon_zero,
                                                      p.key_bits, keys, vals);
  int st = launch_status();
  if (st != 0) return st;
  st = radix_sort<K>(ws, p, n, 0, p.end_bit, &keys, &vals, stream);
  if (st != 0) return st;
  const void* final_keys = keys;
  if (p.two_pass) {
    // keys are no longer needed: the row ids of the sorted flat indices, sorted stably.
    u64* rk = reinterpret_cast<u64*>(reinterpret_cast<char*>(keys) == ws ? ws + p.off_keys1 : ws);
    row_keys_kernel<<<grid, kBlock, 0, stream>>>(vals, n, cols, rk);
    st = launch_status();
    if (st != 0) return st;
    st = radix_sort<u64>(ws, p, n, 0, p.row_bits, &rk, &vals, stream);
    if (st != 0) return st;
    final_keys = nullptr;
  }
  // Floats gather their values by index whenever indices exist (exact bits: -0.0, NaN payloads).
  const bool gather = p.two_pass || (p.with_vals && (Code == PGK_FLOAT16 || Code == PGK_BFLOAT16 ||
                                                     Code == PGK_FLOAT32 || Code == PGK_FLOAT64));
  const unsigned ogrid = grid_for(rows * k, kBlock);
  decode_kernel<Code, K><<<ogrid, kBlock, 0, stream>>>(
      x, static_cast<const K*>(final_keys), vals, rows, cols, k, desc, p.key_bits, gather,
      !with_indices, values_out, indices_out);
  return launch_status();
}


// ---- rows that fit in shared memory, k <= kSelMaxK: select, then sort only the k -------------
//
// topk needs the first k of each sorted row.  When a row's keys fit in
// shared memory, one block per row finds the k-th smallest key by a radix select (8-bit digits
// from the top; a histogram of the candidates' next digit per pass), gathers the keys below it
// and, in index order, as many of the keys equal to it as k needs, sorts those k (key, index)
// pairs with a bitonic network and writes them: the same first k columns, ties in index order,
// as the stable radix sort of the whole row — reading each row once instead of sorting it.
constexpr int kSelMaxK = 1024;

template <int Threads>
struct SelShared {
  u64 cand[kSelMaxK];  // (key << 32) | column
  unsigned hist[256];
  unsigned warp_less[Threads / 32], warp_eq[Threads / 32];
  unsigned bin, rank;
};

// The rank-th smallest (1-based) of the candidates' digit at `shift`: which bin holds it and its
// rank within that bin, by the 256 bins' inclusive prefix sums (threads 0-255).
template <int Threads>
__device__ __forceinline__ void pick_bin(SelShared<Threads>& sh, unsigned rank) {
  static_assert(Threads >= 256, "one thread per bin");
  __shared__ unsigned warp_sum[8];
  const int t = threadIdx.x, lane = t & 31;
  unsigned v = 0, incl = 0;
  if (t < 256) {
    v = sh.hist[t];
    incl = v;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const unsigned o = __shfl_up_sync(0xffffffffu, incl, d);
      if (lane >= d) incl += o;
    }
    if (lane == 31) warp_sum[t >> 5] = incl;
  }
  __syncthreads();
  if (t < 256) {
    for (int w = 0; w < (t >> 5); ++w) incl += warp_sum[w];
    const unsigned excl = incl - v;
    if (excl < rank && rank <= incl) {
      sh.bin = static_cast<unsigned>(t);
      sh.rank = rank - excl;
    }
  }
  __syncthreads();
}

template <int Code, int Threads>
__global__ void __launch_bounds__(Threads)
    select_rows_kernel(const void* __restrict__ x, int64_t rows, int cols, int k, bool descending,
                       bool canon_zero, bool with_indices, int key_bits,
                       void* __restrict__ values_out, int64_t* __restrict__ indices_out) {
  constexpr int kWarps = Threads / 32;
  extern __shared__ uint32_t keys[];  // cols keys of the row
  __shared__ SelShared<Threads> sh;
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  pdl_enter();
  const uint32_t mask = key_bits >= 32 ? ~0u : ((1u << key_bits) - 1);
  constexpr bool kFloat = Code == PGK_FLOAT16 || Code == PGK_BFLOAT16 || Code == PGK_FLOAT32;
  constexpr int kSize = (Code == PGK_BOOL || Code == PGK_INT8 || Code == PGK_UINT8) ? 1
                        : (Code == PGK_INT16 || Code == PGK_FLOAT16 || Code == PGK_BFLOAT16) ? 2
                                                                                           : 4;
  int padded = 1;
  while (padded < k) padded <<= 1;
  // Warp w's contiguous columns (whole steps of 32), for the ordered gather.
  const int span = (cols + kWarps * 32 - 1) / (kWarps * 32) * 32;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const char* xr = static_cast<const char*>(x) + r * cols * kSize;
    for (int i = t; i < cols; i += Threads) {
      uint32_t key = static_cast<uint32_t>(load_key<Code>(xr, i, canon_zero));
      if (descending) key = ~key & mask;
      keys[i] = key;
    }
    // Radix select of the k-th smallest key: prefix / pmask fix its digits from the top.
    uint32_t prefix = 0, pmask = 0;
    unsigned rank = static_cast<unsigned>(k);
    for (int shift = (key_bits - 1) / 8 * 8; shift >= 0; shift -= 8) {
      if (t < 256) sh.hist[t] = 0;
      __syncthreads();
      for (int base = 0; base < cols; base += Threads) {
        const int i = base + t;
        const uint32_t key = i < cols ? keys[i] : 0u;
        const bool in = i < cols && (key & pmask) == prefix;
        const unsigned digit = in ? (key >> shift) & 255u : 256u;
        const unsigned peers = __match_any_sync(0xffffffffu, digit);
        if (in && lane == __ffs(peers) - 1) atomicAdd(&sh.hist[digit], __popc(peers));
      }
      __syncthreads();
      pick_bin<Threads>(sh, rank);
      prefix |= sh.bin << shift;
      pmask |= 255u << shift;
      rank = sh.rank;
    }
    const uint32_t pivot = prefix;
    const unsigned less_total = static_cast<unsigned>(k) - rank;  // keys below the pivot
    // Ordered gather: counts per warp, their exclusive sums, then the k pairs.
    const int lo = w * span, hi = min(cols, lo + span);
    unsigned n_less = 0, n_eq = 0;
    for (int b = lo; b < hi; b += 32) {
      const int i = b + lane;
      const uint32_t key = i < hi ? keys[i] : 0u;
      n_less += __popc(__ballot_sync(0xffffffffu, i < hi && key < pivot));
      n_eq += __popc(__ballot_sync(0xffffffffu, i < hi && key == pivot));
    }
    if (lane == 0) {
      sh.warp_less[w] = n_less;
      sh.warp_eq[w] = n_eq;
    }
    __syncthreads();
    unsigned less_base = 0, eq_base = 0;
    for (int v = 0; v < w; ++v) {
      less_base += sh.warp_less[v];
      eq_base += sh.warp_eq[v];
    }
    const unsigned lt_mask = (1u << lane) - 1;
    for (int b = lo; b < hi; b += 32) {
      const int i = b + lane;
      const uint32_t key = i < hi ? keys[i] : 0u;
      const bool is_less = i < hi && key < pivot, is_eq = i < hi && key == pivot;
      const unsigned bl = __ballot_sync(0xffffffffu, is_less);
      const unsigned be = __ballot_sync(0xffffffffu, is_eq);
      const u64 pair = (static_cast<u64>(key) << 32) | static_cast<u64>(i);
      if (is_less) sh.cand[less_base + __popc(bl & lt_mask)] = pair;
      const unsigned e = eq_base + __popc(be & lt_mask);
      if (is_eq && e < rank) sh.cand[less_total + e] = pair;
      less_base += __popc(bl);
      eq_base += __popc(be);
    }
    for (int j = k + t; j < padded; j += Threads) sh.cand[j] = ~u64{0};
    __syncthreads();
    // Bitonic sort of the padded k pairs, ascending.
    for (int size = 2; size <= padded; size <<= 1) {
      for (int stride = size >> 1; stride > 0; stride >>= 1) {
        for (int q = t; q < padded / 2; q += Threads) {
          const int a = 2 * q - (q & (stride - 1)), c = a + stride;
          const bool up = (a & size) == 0;
          const u64 va = sh.cand[a], vc = sh.cand[c];
          if ((va > vc) == up) {
            sh.cand[a] = vc;
            sh.cand[c] = va;
          }
        }
        __syncthreads();
      }
    }
    for (int j = t; j < k; j += Threads) {
      const int col = static_cast<int>(sh.cand[j] & 0xffffffffu);
      const int64_t p = r * k + j;
      if (values_out != nullptr) {
        if (kFloat && !with_indices) {
          // A values-only result: NaNs as the dtype's default NaN, as the sort's decoded keys.
          store_key<Code>(values_out, p, load_key<Code>(xr, col, false));
        } else {
          copy_elem<Code>(xr, col, values_out, p);
        }
      }
      if (indices_out != nullptr) indices_out[p] = col;
    }
    __syncthreads();  // keys and cand are rewritten by the next row
  }
}

// Whether pgk_sort takes the select path, and its threads per block and shared memory bytes.
struct SelPlan {
  bool use = false;
  int threads = 0;
  size_t smem = 0;
  int optin = 0;  // the device's opt-in shared memory per block
};

inline SelPlan select_plan(int dtype, int64_t cols, int64_t k) {
  SelPlan sp;
  // Whole rows (k == cols) stay with the radix sort: a bitonic sort of every row of 1000 keys
  // measured 0.65x torch's segmented sort on an H200 (100000 rows).
  if (sort_dtype_size(dtype) > 4 || k > kSelMaxK || k >= cols || cols > (int64_t{1} << 20)) {
    return sp;
  }
  static DeviceCache optin_cache = {};
  const int optin = cached_per_device(optin_cache, current_device(), [](int d) {
    int v = 0;
    return cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, d) == cudaSuccess
               ? v
               : 0;
  });
  if (optin == 0) return sp;
  sp.optin = optin;
  sp.threads = cols <= 2048 ? 256 : 1024;
  const size_t fixed = sizeof(SelShared<1024>) + 8 * sizeof(unsigned) + 1024;  // + reserve
  sp.smem = static_cast<size_t>(cols) * 4;
  sp.use = sp.smem + fixed <= static_cast<size_t>(optin);
  return sp;
}

// Opts `Kernel` into all the dynamic shared memory the device allows beside its static shared
// memory (`optin` per block in all), once per device, so that any size select_plan picks may be
// launched without a cudaFuncSetAttribute per call; false if that failed.
template <auto Kernel>
bool smem_opted_in(int optin) {
  static DeviceCache done = {};  // 1: opted in on that device
  return cached_per_device(done, current_device(), [optin](int) {
           cudaFuncAttributes a{};
           return cudaFuncGetAttributes(&a, Kernel) == cudaSuccess &&
                          cudaFuncSetAttribute(
                              Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              optin - static_cast<int>(a.sharedSizeBytes)) == cudaSuccess
                      ? 1
                      : 0;
         }) == 1;
}

template <int Code, int Threads>
int launch_select(const void* x, int64_t rows, int64_t cols, int flags, int64_t k,
                  void* values_out, int64_t* indices_out, const SelPlan& sp,
                  cudaStream_t stream) {
  constexpr auto kernel = &select_rows_kernel<Code, Threads>;
  if (sp.smem > 48 * 1024 && !smem_opted_in<kernel>(sp.optin)) {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  const bool desc = (flags & PGK_SORT_DESCENDING) != 0;
  const bool with_indices = (flags & PGK_SORT_INDICES) != 0;
  const int key_bits = Code == PGK_BOOL ? 1 : 8 * sort_dtype_size(Code);
  const unsigned grid = static_cast<unsigned>(rows < (int64_t{1} << 20) ? rows : (int64_t{1} << 20));
  launch_k_smem(kernel, grid, Threads, sp.smem, stream, x, rows, static_cast<int>(cols),
                static_cast<int>(k), desc, with_indices, with_indices, key_bits, values_out,
                indices_out);
  return launch_status();
}

template <int Code>
int run_select(const void* x, int64_t rows, int64_t cols, int flags, int64_t k,
               void* values_out, int64_t* indices_out, const SelPlan& sp, cudaStream_t stream) {
  return sp.threads == 256
             ? launch_select<Code, 256>(x, rows, cols, flags, k, values_out, indices_out, sp,
                                        stream)
             : launch_select<Code, 1024>(x, rows, cols, flags, k, values_out, indices_out, sp,
                                         stream);
}

}  // namespace
}  // namespace pgk

extern "C" PGK_API int pgk_sort_workspace_size(int dtype, int64_t rows, int64_t cols, int flags,
                                               int64_t k, uint64_t* bytes) {
  using namespace pgk;
  if (bytes == nullptr) return kInvalid;
  int st = check_sort_args(dtype, rows, cols, flags);
  if (st != 0) return st;
  if (k < 0 || k > cols) return kInvalid;
  // Nothing to sort, or rows the select kernel serves (it keeps them in shared memory).
  if (rows == 0 || cols == 0 || k == 0 || select_plan(dtype, cols, k).use) {
    *bytes = 0;
    return 0;
  }
  SortPlan p;
  st = make_plan(dtype, rows, cols, flags, &p);
  if (st != 0) return st;
  *bytes = p.total;
  return 0;
}

extern "C" PGK_API int pgk_sort(const void* x, int dtype, int64_t rows, int64_t cols, int flags,
                                int64_t k, void* values_out, int64_t* indices_out,
                                void* workspace, uint64_t workspace_bytes, void* stream) {
  using namespace pgk;
  int st = check_sort_args(dtype, rows, cols, flags);
  if (st != 0) return st;
  if (k < 0 || k > cols) return kInvalid;
  if ((indices_out != nullptr) != ((flags & PGK_SORT_INDICES) != 0)) return kInvalid;
  if (rows == 0 || cols == 0 || k == 0) return 0;
  if (x == nullptr || (values_out == nullptr && indices_out == nullptr)) return kInvalid;
  const int esize = sort_dtype_size(dtype);
  auto misaligned = [](const void* ptr, uintptr_t a) {
    return reinterpret_cast<uintptr_t>(ptr) % a != 0;
  };
  if (misaligned(x, esize) || misaligned(values_out, esize) || misaligned(indices_out, 8)) {
    return kInvalid;
  }
  auto s = static_cast<cudaStream_t>(stream);
  const SelPlan sp = select_plan(dtype, cols, k);
  if (sp.use) {  // no workspace (pgk_sort_workspace_size gave 0 bytes)
    return dispatch_code(dtype, [&](auto code) {
      constexpr int C = decltype(code)::value;
      if constexpr (kEightByte<C>) {
        return kInvalid;  // not reached: select_plan refuses 8-byte dtypes
      } else {
        return run_select<C>(x, rows, cols, flags, k, values_out, indices_out, sp, s);
      }
    });
  }
  if (workspace == nullptr || misaligned(workspace, kAlign)) return kInvalid;
  SortPlan p;
  st = make_plan(dtype, rows, cols, flags, &p);
  if (st != 0) return st;
  if (workspace_bytes < p.total) return kInvalid;
  char* ws = static_cast<char*>(workspace);
  return dispatch_code(dtype, [&](auto code) {
    constexpr int C = decltype(code)::value;
    if (p.width == 8) {
      return run_sort_typed<C, pgk::u64>(x, rows, cols, flags, k, values_out, indices_out, ws, p,
                                         s);
    }
    return run_sort_typed<C, NativeKey<C>>(x, rows, cols, flags, k, values_out, indices_out, ws,
                                           p, s);
  });
}

// ---- searchsorted, runs of equal keys (unique), row gathers ----------------------------------

namespace pgk {
namespace {

template <int Code>
__global__ void searchsorted_kernel(const void* __restrict__ a, int64_t n,
                                    const int64_t* __restrict__ sorter,
                                    const void* __restrict__ v, int64_t m, bool right,
                                    int64_t* __restrict__ out) {
  for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < m;
       j += int64_t{gridDim.x} * blockDim.x) {
    const u64 key = load_key<Code>(v, j, true);
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      const u64 ak = load_key<Code>(a, sorter != nullptr ? sorter[mid] : mid, true);
      if (right ? ak <= key : ak < key) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    out[j] = lo;
  }
}

template <int Code>
__global__ void run_starts_kernel(const void* __restrict__ x, int64_t n,
                                  int64_t* __restrict__ flags) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    flags[i] = (i == 0 || load_key<Code>(x, i, true) != load_key<Code>(x, i - 1, true)) ? 1 : 0;
  }
}

template <int Code>
__global__ void run_scatter_kernel(const int64_t* __restrict__ gid, int64_t n,
                                   const void* __restrict__ sorted,
                                   const int64_t* __restrict__ perm, void* __restrict__ uniq,
                                   int64_t* __restrict__ starts, int64_t* __restrict__ first,
                                   int64_t* __restrict__ inverse) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t g = gid[i] - 1;
    if (i == 0 || gid[i - 1] != gid[i]) {
      if (uniq != nullptr) copy_elem<Code>(sorted, i, uniq, g);
      if (starts != nullptr) starts[g] = i;
      if (first != nullptr) first[g] = perm[i];
    }
    if (inverse != nullptr) inverse[perm != nullptr ? perm[i] : i] = g;
  }
}

template <int Code>
__global__ void take_rows_kernel(const void* __restrict__ src, int64_t rows, int64_t cols,
                                 const int64_t* __restrict__ idx, int64_t k,
                                 void* __restrict__ dst) {
  const int64_t total = rows * k;
  for (int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; p < total;
       p += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = rows > 1 ? div_index(p, k) : 0;
    copy_elem<Code>(src, r * cols + idx[p], dst, p);
  }
}

inline bool misaligned_to(const void* ptr, uintptr_t a) {
  return reinterpret_cast<uintptr_t>(ptr) % a != 0;
}

}  // namespace
}  // namespace pgk

extern "C" PGK_API int pgk_searchsorted(const void* a, int dtype, int64_t n,
                                        const int64_t* sorter, const void* v, int64_t m,
                                        int side_right, int64_t* out, void* stream) {
  using namespace pgk;
  if (dtype < 0 || dtype > 9 || n < 0 || m < 0) return kInvalid;
  if (m == 0) return 0;
  if (v == nullptr || out == nullptr || (n > 0 && a == nullptr)) return kInvalid;
  const int esize = sort_dtype_size(dtype);
  if (misaligned_to(a, esize) || misaligned_to(v, esize) || misaligned_to(out, 8) ||
      misaligned_to(sorter, 8)) {
    return kInvalid;
  }
  auto s = static_cast<cudaStream_t>(stream);
  return dispatch_code(dtype, [&](auto code) {
    constexpr int C = decltype(code)::value;
    searchsorted_kernel<C><<<grid_for(m, kBlock), kBlock, 0, s>>>(a, n, sorter, v, m,
                                                                   side_right != 0, out);
    return launch_status();
  });
}

extern "C" PGK_API int pgk_run_starts(const void* sorted, int dtype, int64_t n, int64_t* flags,
                                      void* stream) {
  using namespace pgk;
  if (dtype < 0 || dtype > 9 || n < 0) return kInvalid;
  if (n == 0) return 0;
  if (sorted == nullptr || flags == nullptr || misaligned_to(sorted, sort_dtype_size(dtype)) ||
      misaligned_to(flags, 8)) {
    return kInvalid;
  }
  auto s = static_cast<cudaStream_t>(stream);
  return dispatch_code(dtype, [&](auto code) {
    constexpr int C = decltype(code)::value;
    run_starts_kernel<C><<<grid_for(n, kBlock), kBlock, 0, s>>>(sorted, n, flags);
    return launch_status();
  });
}

extern "C" PGK_API int pgk_run_scatter(const int64_t* gid, int64_t n, const void* sorted,
                                       int dtype, const int64_t* perm, void* uniq_out,
                                       int64_t* starts_out, int64_t* first_out,
                                       int64_t* inverse_out, void* stream) {
  using namespace pgk;
  if (dtype < 0 || dtype > 9 || n < 0) return kInvalid;
  if (n == 0) return 0;
  if (gid == nullptr || (uniq_out != nullptr && sorted == nullptr) ||
      (first_out != nullptr && perm == nullptr)) {
    return kInvalid;
  }
  const int esize = sort_dtype_size(dtype);
  if (misaligned_to(gid, 8) || misaligned_to(sorted, esize) || misaligned_to(uniq_out, esize) ||
      misaligned_to(perm, 8) || misaligned_to(starts_out, 8) || misaligned_to(first_out, 8) ||
      misaligned_to(inverse_out, 8)) {
    return kInvalid;
  }
  auto s = static_cast<cudaStream_t>(stream);
  return dispatch_code(dtype, [&](auto code) {
    constexpr int C = decltype(code)::value;
    run_scatter_kernel<C><<<grid_for(n, kBlock), kBlock, 0, s>>>(
        gid, n, sorted, perm, uniq_out, starts_out, first_out, inverse_out);
    return launch_status();
  });
}

extern "C" PGK_API int pgk_take_rows(const void* src, int dtype, int64_t rows, int64_t cols,
                                     const int64_t* idx, int64_t k, void* dst, void* stream) {
  using namespace pgk;
  if (dtype < 0 || dtype > 9 || rows < 0 || cols < 0 || k < 0) return kInvalid;
  if (rows == 0 || k == 0) return 0;
  if (cols == 0 || src == nullptr || idx == nullptr || dst == nullptr) return kInvalid;
  if (k > INT64_MAX / rows) return kInvalid;
  const int esize = sort_dtype_size(dtype);
  if (misaligned_to(src, esize) || misaligned_to(dst, esize) || misaligned_to(idx, 8)) {
    return kInvalid;
  }
  auto s = static_cast<cudaStream_t>(stream);
  return dispatch_code(dtype, [&](auto code) {
    constexpr int C = decltype(code)::value;
    take_rows_kernel<C><<<grid_for(rows * k, kBlock), kBlock, 0, s>>>(src, rows, cols, idx, k,
                                                                       dst);
    return launch_status();
  });
}
