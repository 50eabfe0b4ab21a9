// pgk_sort / pgk_searchsorted / pgk_unique_* / pgk_take_rows: sorting with CUB's radix sort.
//
// Compile time is kept small by sorting only four key types (unsigned integers of 1, 2, 4 and 8
// bytes), keys alone or with int64 values: every dtype is first mapped by a tiny kernel to an
// unsigned key whose unsigned order is NumPy's order (floats: the sign-magnitude bit trick, every
// NaN to the largest key, optionally -0.0 to +0.0).  Rows are sorted at once by putting the row
// id above the key bits of a 64-bit key ("packed"), or, where that does not fit in 64 bits, by
// two stable passes (the keys with their flat index, then the row ids of those indices).
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

}  // namespace
}  // namespace pgk

extern "C" PGK_API int pgk_sort_workspace_size(int dtype, int64_t rows, int64_t cols, int flags,
                                               uint64_t* bytes) {
  using namespace pgk;
  if (bytes == nullptr) return kInvalid;
  int st = check_sort_args(dtype, rows, cols, flags);
  if (st != 0) return st;
  if (rows == 0 || cols == 0) {
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
  if (misaligned(x, esize) || misaligned(values_out, esize) || misaligned(indices_out, 8) ||
      workspace == nullptr || misaligned(workspace, kAlign)) {
    return kInvalid;
  }
  SortPlan p;
  st = make_plan(dtype, rows, cols, flags, &p);
  if (st != 0) return st;
  if (workspace_bytes < p.total) return kInvalid;
  auto s = static_cast<cudaStream_t>(stream);
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
