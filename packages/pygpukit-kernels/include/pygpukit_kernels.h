/* C ABI of libpygpukit_kernels: the precompiled kernels of PyGPUkit.
 *
 * Every launcher enqueues work on the CUstream it is given (0 = the legacy default stream) in the
 * context current on the calling thread (PyGPUkit makes the device's primary context current) and
 * returns without synchronizing.  Return value: 0 on success, otherwise a cudaError_t code whose
 * name pgk_error_name() gives.  Pointers are device pointers.  Thread-safe.
 */
#ifndef PYGPUKIT_KERNELS_H
#define PYGPUKIT_KERNELS_H

#include <stdint.h>

#if defined(_WIN32)
#  if defined(PGK_BUILDING_LIBRARY)
#    define PGK_API __declspec(dllexport)
#  else
#    define PGK_API __declspec(dllimport)
#  endif
#else
#  define PGK_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a signature below changes; callers refuse a library with another value. */
#define PGK_ABI_VERSION 5

PGK_API int pgk_abi_version(void);

/* JSON object: {"abi": 4, "cuda_archs": "80-real,...,120", "nvcc": "13.0.88"} (static storage). */
PGK_API const char* pgk_build_info(void);

/* CUDA error name and description for a status returned by a launcher (static storage). */
PGK_API const char* pgk_error_name(int status);
PGK_API const char* pgk_error_string(int status);

/* out[i] = a[i] + b[i] for i < n.  out may alias a or b exactly. */
PGK_API int pgk_add_f32(const float* a, const float* b, float* out, int64_t n, void* stream);

/* ---- copies with conversion, fill, ranges (ABI 2) ----
 *
 * dtype codes, fixed forever (Python mirrors them as pygpukit_kernels.DType).  bool is one byte
 * (0/1; any non-zero byte reads as true), float16 is IEEE binary16, bfloat16 the top half of a
 * float32 (ml_dtypes.bfloat16).
 *
 * Conversions equal NumPy's astype bit for bit wherever NumPy defines the result:
 *  - integer -> integer wraps modulo 2^bits (NumPy's C casts); integer -> float rounds to nearest
 *    even (to float16/bfloat16 through float32, as NumPy and ml_dtypes do);
 *  - float -> integer truncates toward zero (out of range and NaN: undefined, as in NumPy);
 *  - anything -> bool is != 0 (NaN -> true, -0.0 -> false); bool -> number is 0 or 1;
 *  - float64 -> float16 rounds once from the double; float64 -> bfloat16 goes through float32
 *    (ml_dtypes' bfloat16(float(x))); float16 <-> bfloat16 through float32;
 *  - NaN -> a float type: a quiet NaN with the sign kept (the standard NaN of the target for the
 *    standard NaN of the source).
 *
 * Launchers check their arguments first and return cudaErrorInvalidValue (1) without touching the
 * device for: an unknown dtype code, ndim outside 0..PGK_MAX_DIMS, a negative dimension, a null
 * shape/strides array with ndim > 0, a null data pointer when there is at least one element, a
 * data pointer or a stride (of a dim longer than 1) that is not a multiple of its element size,
 * or an element count that overflows int64.  An empty index space (some dim 0, n == 0) launches
 * nothing and returns 0.
 */
enum {
  PGK_BOOL = 0,
  PGK_INT8 = 1,
  PGK_UINT8 = 2,
  PGK_INT16 = 3,
  PGK_INT32 = 4,
  PGK_INT64 = 5,
  PGK_FLOAT16 = 6,
  PGK_BFLOAT16 = 7,
  PGK_FLOAT32 = 8,
  PGK_FLOAT64 = 9
};
#define PGK_MAX_DIMS 16

/* dst[i] = (dst_dtype) src[i] for every index i of the N-d index space `shape` (ndim 0..
 * PGK_MAX_DIMS; ndim 0 = one element, and shape/strides may then be NULL).  Strides are in BYTES,
 * may be 0 (broadcast) or negative (reversed views), and are multiples of the element size (as
 * the pointers are).  Any dtype pair.  src and dst must not overlap (the caller stages overlapping copies).
 * Dimensions are coalesced first (size-1 dims dropped, reversed destination dims flipped, dims
 * ordered by destination stride, neighbours contiguous on both sides merged): a C-contiguous
 * copy runs one flat vectorized kernel (cudaMemcpyAsync when the dtypes are equal), a 2-D
 * transpose of one dtype a tiled kernel, anything else an N-d kernel (32-bit index math when
 * the element count and byte extents fit). */
PGK_API int pgk_copy(const void* src, int src_dtype, const int64_t* src_strides,
                     void* dst, int dst_dtype, const int64_t* dst_strides,
                     int ndim, const int64_t* shape, void* stream);

/* dst[i] = value over a strided N-d view (strides in bytes, as pgk_copy).  Integer dtypes take
 * `ival` (wrapped like a C cast), bool takes ival != 0, floating dtypes take `dval` converted
 * exactly as pgk_copy converts a float64 (so equal to numpy.array(dval).astype(dtype); for
 * bfloat16 that is through float32, as ml_dtypes does). */
PGK_API int pgk_fill(void* dst, int dtype, const int64_t* strides, int ndim, const int64_t* shape,
                     double dval, int64_t ival, void* stream);

/* Contiguous dst of n elements.  Integer dtypes: dst[i] = istart + i*istep computed in int64
 * with wrap-around, then narrowed like NumPy's C casts; bool: (istart + i*istep) != 0; float
 * dtypes: dst[i] = (T)(dstart + i*dstep), the product and the sum each rounded in double (no
 * FMA), then converted as pgk_copy converts a float64.  (numpy.arange fills with
 * delta = (start + step) - start; pass that as dstep to reproduce it bit for bit.) */
PGK_API int pgk_arange(void* dst, int dtype, int64_t n, double dstart, double dstep,
                       int64_t istart, int64_t istep, void* stream);

/* numpy.linspace(start, stop, n, endpoint, dtype=dtype) bit for bit: in float64,
 * div = endpoint ? n-1 : n, delta = stop - start, step = delta/div, y[i] = i*step + start
 * (when step == 0: y[i] = i/div*delta + start; when div == 0: y[i] = i*delta + start), with
 * endpoint and n > 1 the last element is exactly `stop`; integer dtypes take floor(y) (as numpy
 * does), then every dtype converts as pgk_copy converts a float64. */
PGK_API int pgk_linspace(void* dst, int dtype, int64_t n, double start, double stop,
                         int endpoint, void* stream);

/* ---- elementwise math (ABI 3) ----
 *
 * Operands are strided N-d views over one index space `shape` (strides in bytes, 0 = broadcast,
 * negative allowed, multiples of the element size), of any dtypes.  Each element is loaded and
 * converted (as pgk_copy converts) to the compute type `compute_dtype`, one of PGK_FLOAT32
 * (for float16/bfloat16/float32 loops), PGK_FLOAT64 or PGK_INT64 (integer and bool loops; the
 * result wraps when stored into a narrower integer), the op is applied in that type and the
 * result converted to `out_dtype`.  The caller resolves NumPy's type promotion (the loop dtype)
 * and converts weak scalars; an out array of another dtype than the loop's should be computed
 * into a temporary and cast (the kernel rounds once, from the compute type).  `out` may alias
 * an input exactly (same pointer and strides); other overlaps are the caller's to stage.
 * Contiguous operands of one floating dtype with add/subtract/multiply/divide/maximum/minimum
 * run a vectorized kernel; anything else the generic N-d kernel (dims coalesced as pgk_copy).
 * Results follow NumPy's definitions: maximum/minimum propagate NaN, floor_divide and
 * remainder are Python's (sign of the divisor), integer division by zero gives 0, integer
 * power with a negative exponent gives 0 (1 / -1 for a base of 1 / -1: NumPy raises), rint
 * rounds half to even.  Comparison and logical ops give 0/1 (store to bool). */
enum {
  PGK_OP_ADD = 0, PGK_OP_SUBTRACT = 1, PGK_OP_MULTIPLY = 2, PGK_OP_DIVIDE = 3,
  PGK_OP_MAXIMUM = 4, PGK_OP_MINIMUM = 5, PGK_OP_POWER = 6, PGK_OP_FLOOR_DIVIDE = 7,
  PGK_OP_REMAINDER = 8, PGK_OP_EQUAL = 9, PGK_OP_NOT_EQUAL = 10, PGK_OP_LESS = 11,
  PGK_OP_LESS_EQUAL = 12, PGK_OP_GREATER = 13, PGK_OP_GREATER_EQUAL = 14,
  PGK_OP_LOGICAL_AND = 15, PGK_OP_LOGICAL_OR = 16, PGK_OP_LOGICAL_XOR = 17,
  PGK_OP_BITWISE_AND = 18, PGK_OP_BITWISE_OR = 19, PGK_OP_BITWISE_XOR = 20,
  PGK_NUM_BINARY_OPS = 21
};
enum {
  PGK_UOP_NEGATIVE = 0, PGK_UOP_ABSOLUTE = 1, PGK_UOP_EXP = 2, PGK_UOP_LOG = 3,
  PGK_UOP_LOG1P = 4, PGK_UOP_EXPM1 = 5, PGK_UOP_SQRT = 6, PGK_UOP_RSQRT = 7, PGK_UOP_SIN = 8,
  PGK_UOP_COS = 9, PGK_UOP_TANH = 10, PGK_UOP_SIGMOID = 11, PGK_UOP_RELU = 12,
  PGK_UOP_GELU_TANH = 13, PGK_UOP_GELU_ERF = 14, PGK_UOP_SILU = 15, PGK_UOP_FLOOR = 16,
  PGK_UOP_CEIL = 17, PGK_UOP_RINT = 18, PGK_UOP_SIGN = 19, PGK_UOP_ISNAN = 20,
  PGK_UOP_ISINF = 21, PGK_UOP_LOGICAL_NOT = 22, PGK_UOP_INVERT = 23, PGK_UOP_SQUARE = 24,
  PGK_UOP_RECIPROCAL = 25, PGK_NUM_UNARY_OPS = 26
};

/* out = a (op) b.  Exactly one of a / b may be NULL: that operand is a scalar already converted
 * to the loop dtype, passed as `scalar_f` (float compute types) or `scalar_i` (PGK_INT64); its
 * dtype code and strides are then ignored (strides may be NULL).  Bitwise ops need PGK_INT64. */
PGK_API int pgk_binary(int op, const void* a, int a_dtype, const int64_t* a_strides,
                       const void* b, int b_dtype, const int64_t* b_strides,
                       void* out, int out_dtype, const int64_t* out_strides,
                       int ndim, const int64_t* shape, int compute_dtype,
                       double scalar_f, int64_t scalar_i, void* stream);

/* out = op(x).  PGK_UOP_INVERT needs PGK_INT64. */
PGK_API int pgk_unary(int op, const void* x, int x_dtype, const int64_t* x_strides,
                      void* out, int out_dtype, const int64_t* out_strides, int ndim,
                      const int64_t* shape, int compute_dtype, void* stream);

/* out = cond ? a : b (cond: any dtype, its truthiness).  a or b may be NULL: a scalar
 * (a_f/a_i, b_f/b_i as for pgk_binary). */
PGK_API int pgk_where(const void* cond, int cond_dtype, const int64_t* cond_strides,
                      const void* a, int a_dtype, const int64_t* a_strides,
                      const void* b, int b_dtype, const int64_t* b_strides,
                      void* out, int out_dtype, const int64_t* out_strides, int ndim,
                      const int64_t* shape, int compute_dtype, double a_f, int64_t a_i,
                      double b_f, int64_t b_i, void* stream);

/* ---- reductions (ABI 3) ---- */
enum {
  PGK_RED_SUM = 0, PGK_RED_PROD = 1, PGK_RED_MAX = 2, PGK_RED_MIN = 3, PGK_RED_ARGMAX = 4,
  PGK_RED_ARGMIN = 5, PGK_RED_MEAN = 6, PGK_RED_VAR = 7, PGK_RED_STD = 8, PGK_RED_ANY = 9,
  PGK_RED_ALL = 10, PGK_NUM_REDUCE_OPS = 11
};

/* Reduce x (shape[0..ndim), strides in bytes) over its last `nred_dims` dims into out, whose
 * strides (ndim - nred_dims of them) index the kept leading dims (the caller moves the reduced
 * axes last; keepdims is a view).  Elements are loaded as `compute_dtype` (PGK_FLOAT32 for
 * half/float32 data, PGK_FLOAT64, or PGK_INT64 for integer sum/prod/max/min/argmax/any/all;
 * mean/var/std need a floating compute type) and the result converted to out_dtype.
 * DETERMINISTIC: no atomics, and the order of every combination depends only on the shape,
 * the strides' pattern (which path), the dtype and `chunks`, never on the device or on timing.
 * With chunks > 1 each output's reduced range is split into `chunks` ranges whose partials
 * (`workspace`: nout * chunks * 32 bytes, 16-byte aligned) a second kernel combines with a
 * 256-thread block (thread t takes partials t, t+256, ... in order, then a fixed shared-memory
 * tree).  Two paths reduce the ranges:
 *  - vectorized (sum, mean, prod, max, min of float16/bfloat16/float32/float64 computed in
 *    float32 / float64, reduced dims contiguous in memory): the chunk length is rounded up to a
 *    multiple of 8 elements; a range is read in groups of V = 16 / element-size consecutive
 *    elements by TPR threads (a warp when the range has at most 2048 groups, else a 256-thread
 *    block): thread t adds element e of groups t, t+TPR, ... (in order) into accumulator e;
 *    then the V accumulators pairwise ((0,1),(2,3).. then pairs of pairs), an xor butterfly
 *    over the warp (offsets 16..1) and, for a block, the 8 warp values in order.  16-byte
 *    loads when the range starts 16-byte aligned, single loads otherwise: the same order, so
 *    the same bits;
 *  - generic (everything else): one 256-thread block per range, thread t accumulating elements
 *    t, t+256, ... in order, then a fixed shared-memory tree; equal-length chunks.
 * max/min propagate NaN; argmax/argmin give the C-order flat index (over the reduced dims) of
 * the first maximum / minimum (a NaN counts as the extreme, as in NumPy; an empty range gives
 * 0 — the caller rejects it); var/std combine (count, mean, M2) partials (Chan et al.) and
 * divide by count - ddof (NaN when that is <= 0); mean of an empty range is NaN, sum 0,
 * prod 1, any false, all true. */
PGK_API int pgk_reduce(int op, const void* x, int x_dtype, const int64_t* x_strides, int ndim,
                       const int64_t* shape, int nred_dims, void* out, int out_dtype,
                       const int64_t* out_strides, int compute_dtype, double ddof,
                       void* workspace, int chunks, void* stream);

/* ---- row-wise normalizations (ABI 4) ----
 *
 * out[r, :] = f(x[r, :]) for each of `rows` rows of `cols` elements (the last axis):
 *   PGK_NORM_SOFTMAX:     e = exp(x - max(x)); out = e * (1 / sum(e))
 *   PGK_NORM_LOG_SOFTMAX: out = (x - max(x)) - log(sum(exp(x - max(x))))
 *   PGK_NORM_LAYER:       out = (x - mean) * (1 / sqrt(var + eps)) * w + b   (var: divisor cols)
 *   PGK_NORM_RMS:         out = x * (1 / sqrt(mean(x^2) + eps)) * w
 * x and out have one floating dtype `dtype` (PGK_FLOAT16, PGK_BFLOAT16, PGK_FLOAT32 or
 * PGK_FLOAT64); the computation is in float32 (float64 for PGK_FLOAT64) and rounds once into
 * out.  Strides are in BYTES: x may have any row and column strides (multiples of the element
 * size; 0 allowed); out's columns are dense, its rows `out_row_stride` apart, and out must not
 * overlap x.  weight (layer_norm, rms_norm) and bias (layer_norm) are NULL or `cols` elements
 * of the COMPUTE dtype (weight_dtype / bias_dtype must be PGK_FLOAT32, or PGK_FLOAT64 for
 * float64 x), `weight_stride` / `bias_stride` bytes apart (0: one value for all); other ops
 * ignore them.  max propagates NaN; a row of -inf gives NaN
 * (as torch).  Each row is reduced in a fixed order (per thread, then a warp butterfly, then
 * warps in order), so results are deterministic.  rows == 0 or cols == 0 launches nothing.
 * Returns cudaErrorInvalidValue (1) without touching the device for an unknown op or dtype,
 * negative sizes, rows > INT32_MAX or cols > INT32_MAX - 16, a null x/out with elements, a weight/bias of another dtype, misaligned
 * pointers or strides, or eps < 0 (or NaN). */
enum {
  PGK_NORM_SOFTMAX = 0, PGK_NORM_LOG_SOFTMAX = 1, PGK_NORM_LAYER = 2, PGK_NORM_RMS = 3,
  PGK_NUM_NORM_OPS = 4
};
PGK_API int pgk_row_norm(int op, const void* x, int dtype, int64_t rows, int64_t cols,
                         int64_t x_row_stride, int64_t x_col_stride, void* out,
                         int64_t out_row_stride, const void* weight, int weight_dtype,
                         int64_t weight_stride, const void* bias, int bias_dtype,
                         int64_t bias_stride, double eps, void* stream);

/* ---- matrix multiply (ABI 4) ----
 *
 * C[b] = act(A[b] @ B[b] + bias) for b < batch, with A (m, k), B (k, n), C (m, n), all of one
 * dtype (PGK_FLOAT16, PGK_BFLOAT16, PGK_FLOAT32 or PGK_FLOAT64), float32 accumulation for the
 * half types.  Strides are in ELEMENTS.  A is row-major with unit stride along k (lda >= k);
 * B is row-major (b_col_major = 0: element (kk, j) at b[kk*ldb + j], ldb >= n) or column-major
 * (b_col_major = 1: b[j*ldb + kk], ldb >= k); C is row-major with unit stride along n (ldc >= n)
 * and overlaps neither A nor B.  batch strides may be 0 (the same matrix for every batch).
 * bias is NULL or n contiguous elements of the dtype.  precision (float32 only):
 * PGK_PRECISION_HIGHEST gives FP32 accuracy, PGK_PRECISION_TF32 allows one TF32 product.
 * The kernel is chosen by the device's compute capability, dtype, layout, alignment and shape
 * (SM90a TMA/WGMMA on Hopper, multistage mma.sync on sm_80+, a small-m streaming kernel for
 * m <= 16, a SIMT kernel for float64 and for unaligned operands).  No memory is allocated:
 * pgk_gemm_workspace_size() tells how many bytes of device workspace (256-byte aligned) the
 * call needs, and pgk_gemm() must be given at least that much.  Returns cudaErrorInvalidValue
 * (1) without touching the device for bad arguments (unknown dtype/precision/activation,
 * sizes < 1 or > INT32_MAX, leading dimensions too small, null pointers, too little workspace). */
enum { PGK_ACT_NONE = 0, PGK_ACT_RELU = 1, PGK_ACT_GELU = 2, PGK_ACT_GELU_TANH = 3 };
enum { PGK_PRECISION_HIGHEST = 0, PGK_PRECISION_TF32 = 1 };

typedef struct pgk_gemm_desc {
  int64_t m, n, k, batch;
  int32_t dtype, precision, activation, b_col_major;
  const void* a;
  int64_t lda, batch_stride_a;
  const void* b;
  int64_t ldb, batch_stride_b;
  void* c;
  int64_t ldc, batch_stride_c;
  const void* bias;
} pgk_gemm_desc;

PGK_API int pgk_gemm_workspace_size(const pgk_gemm_desc* desc, uint64_t* bytes);
PGK_API int pgk_gemm(const pgk_gemm_desc* desc, void* workspace, uint64_t workspace_bytes,
                     void* stream);
/* Name of the kernel the calling thread's last successful pgk_gemm launched (static storage;
 * "" before the first).  For tests and benchmarks. */
PGK_API const char* pgk_gemm_last_kernel(void);

/* ---- sort, scan, searchsorted, runs (sort.cu, scan.cu) ----
 *
 * Arrays are C-contiguous (rows, cols) matrices; each row is sorted / scanned on its own (the
 * caller moves the axis last).  Sizes are int64 (more than 2^31 elements work).  Functions that
 * need device scratch memory take a workspace of at least the bytes their *_workspace_size
 * query gives (256-byte aligned; nothing is allocated inside the library).
 *
 * pgk_sort: sorts each row of x (any dtype) in NumPy's order: NaNs last (every NaN compares
 * equal), -0.0 equal to +0.0 when indices are asked for; ascending, or descending with
 * PGK_SORT_DESCENDING (NaNs first).  STABLE: equal keys keep their order (in both directions).
 * Writes the first k (<= cols) columns of each sorted row: values_out (rows, k) of x's dtype (or
 * NULL), indices_out (rows, k) int64 column indices within the row (non-NULL exactly when
 * flags has PGK_SORT_INDICES).  Values are x's elements bit for bit, except that a values-only
 * sort of floats writes NaNs as the dtype's default quiet NaN and may order -0.0 before +0.0.
 * Radix sort (CUB) of unsigned keys of 1/2/4/8 bytes; several rows share one sort with the row
 * id above the key bits, or take two stable passes (8-byte dtypes).  A top-k (k < cols,
 * k <= 1024) of rows of keys of at most 4 bytes that fit in the current device's shared memory
 * is a select in shared memory instead: its workspace query gives 0 bytes (workspace may then be
 * NULL).  The query takes the k of the call. */
enum { PGK_SORT_INDICES = 1, PGK_SORT_DESCENDING = 2 };
PGK_API int pgk_sort_workspace_size(int dtype, int64_t rows, int64_t cols, int flags, int64_t k,
                                    uint64_t* bytes);
PGK_API int pgk_sort(const void* x, int dtype, int64_t rows, int64_t cols, int flags, int64_t k,
                     void* values_out, int64_t* indices_out, void* workspace,
                     uint64_t workspace_bytes, void* stream);

/* out[j] = the insertion point of v[j] into the sorted a (n elements; a[sorter[i]] when sorter
 * is not NULL), side left (first i with v[j] <= a[i]) or right (side_right: first i with
 * v[j] < a[i]), in pgk_sort's order (NaN largest, -0.0 == +0.0).  a and v have one dtype. */
PGK_API int pgk_searchsorted(const void* a, int dtype, int64_t n, const int64_t* sorter,
                             const void* v, int64_t m, int side_right, int64_t* out,
                             void* stream);

/* Runs of equal elements of a sorted array (pgk_sort's equality), for unique:
 * pgk_run_starts: flags[i] = 1 (int64) where a run starts (i == 0 or sorted[i] != sorted[i-1]).
 * pgk_run_scatter: gid = the inclusive cumulative sum of those flags; for the start i of run
 * g = gid[i]-1: uniq_out[g] = sorted[i], starts_out[g] = i, first_out[g] = perm[i]; and for
 * every i: inverse_out[perm ? perm[i] : i] = gid[i]-1.  Each output may be NULL. */
PGK_API int pgk_run_starts(const void* sorted, int dtype, int64_t n, int64_t* flags,
                           void* stream);
PGK_API int pgk_run_scatter(const int64_t* gid, int64_t n, const void* sorted, int dtype,
                            const int64_t* perm, void* uniq_out, int64_t* starts_out,
                            int64_t* first_out, int64_t* inverse_out, void* stream);

/* dst[r, j] = src[r, idx[r, j]] for src (rows, cols), idx and dst (rows, k); every idx in
 * [0, cols) (the caller's to guarantee: not checked on the device). */
PGK_API int pgk_take_rows(const void* src, int dtype, int64_t rows, int64_t cols,
                          const int64_t* idx, int64_t k, void* dst, void* stream);

/* pgk_scan: inclusive cumulative sum / product along each row: out[r, j] = x[r, 0] (op) ...
 * (op) x[r, j], x and out of one dtype: PGK_INT64 (wrapping), PGK_FLOAT32 or PGK_FLOAT64 (the
 * caller converts other dtypes).  out may alias x exactly.  Integer results are exact; float
 * results are those of a parallel scan (CUB's decoupled look-back for single or few long rows,
 * one block per row otherwise): they differ from a sequential sum by rounding, and for the
 * decoupled look-back may differ between runs in the last bits. */
enum { PGK_SCAN_SUM = 0, PGK_SCAN_PROD = 1, PGK_NUM_SCAN_OPS = 2 };
PGK_API int pgk_scan_workspace_size(int op, int dtype, int64_t rows, int64_t cols,
                                    uint64_t* bytes);
PGK_API int pgk_scan(int op, const void* x, void* out, int dtype, int64_t rows, int64_t cols,
                     void* workspace, uint64_t workspace_bytes, void* stream);
/* ---- random numbers: counter-based Philox4x32-10 (random.cu) ----
 *
 * Every value is a pure function of (key, counter, stream_id, element index), the same on every
 * device and in PyGPUkit's NumPy mirror (pygpukit/_philox.py, which defines the streams in full).
 * Philox block b of a call is philox4x32_10(ctr = {lo32(counter + b), hi32(counter + b), attempt,
 * stream_id}, key = {lo32(key), hi32(key)}) (counter + b modulo 2^64; attempt is 0 except for
 * the redraws of rejected integers), four 32-bit words r0..r3 (Random123's definition and known
 * answers).  32-bit outputs take element i from word i % 4 of block i / 4; 64-bit outputs from
 * the 64-bit word j = i % 2 of block i / 2, r[2j] | r[2j+1] << 32.  A call of n elements uses
 * blocks 0 .. ceil(n / 4) - 1 (32-bit outputs) or ceil(n / 2) - 1 (64-bit outputs: float64,
 * integers with span >= 2^32, PGK_INT64 bits, choice); the caller advances its counter by that.
 * Outputs are contiguous (n elements); vector stores where they are 16-byte aligned.  Launchers
 * return cudaErrorInvalidValue (1) without touching the device for an unknown distribution, a
 * dtype the distribution does not produce, n < 0, a null or misaligned pointer with n > 0, or
 * non-finite parameters; n == 0 launches nothing. */
enum { PGK_RAND_UNIFORM = 0, PGK_RAND_NORMAL = 1, PGK_RAND_BITS = 2 };

/* PGK_RAND_UNIFORM (float16, bfloat16, float32: 32-bit words; float64: 64-bit words):
 *   u = (x >> 8) * 2^-24 (float32), (x >> 21) * 2^-11 (float16), (x >> 24) * 2^-8 (bfloat16),
 *   (X >> 11) * 2^-53 (float64), exact in [0, 1); out = a + b * u rounded after the product and
 *   after the sum (no FMA) in float32 (then once to the half type) or float64, with a and b
 *   rounded once to float32 for the 16/32-bit types; a == 0 and b == 1 give u itself.
 * PGK_RAND_NORMAL, float32 (one 32-bit word x per value): the inverse CDF
 *   z = +-Phi^-1(v), v = |float32(int32(x))| * 2^-32 + 2^-33 in (0, 1/2] (one FMA), by a table of
 *   cubics (cuda/normal_icdf_table.cuh, within ~1 ulp of the exact quantile), the sign from x's
 *   top bit; integer steps and IEEE float32 roundings only, so bit-identical to the NumPy mirror
 *   (pygpukit/_philox.py, which defines it).  float64 (64-bit words): Box-Muller on the pair
 *   (X0, X1) of one block: u1 = float64(X0 >> 11) * 2^-53 + 2^-54, t = (X1 >> 11) * 2^-52,
 *   rad = sqrt(-2 log(u1)), z0 = rad * cospi(t), z1 = rad * sinpi(t) with CUDA's accurate
 *   log/sqrt/sincospi: within a few ulp of the exact values (and of the mirror's).  Both then
 *   a + b * z as for uniform.
 * PGK_RAND_BITS: the words themselves, PGK_INT32 (32-bit words) or PGK_INT64 (64-bit words);
 *   a and b are ignored (pass 0 and 1). */
PGK_API int pgk_random(int dist, void* out, int dtype, int64_t n, uint64_t key, uint64_t counter,
                       uint32_t stream_id, double a, double b, void* stream);

/* out[i] = low + offset_i (modulo 2^64, then narrowed like a C cast), offset_i uniform in
 * [0, span] and unbiased (Lemire's multiply-and-reject; a rejected element redraws from the same
 * block with attempt 1, 2, ...).  span < 2^32: 32-bit words, else 64-bit words.  dtype: any
 * integer dtype or PGK_BOOL (the caller keeps low .. low + span inside the dtype's range). */
PGK_API int pgk_random_integers(void* out, int dtype, int64_t n, uint64_t key, uint64_t counter,
                                uint32_t stream_id, int64_t low, uint64_t span, void* stream);

/* Weighted categories: out[i] (int64) is the first k with cdf[k] > u_i * cdf[ncat - 1] (u_i =
 * (X >> 11) * 2^-53 of 64-bit word i, the product rounded once), or `last` when there is none.
 * cdf: ncat >= 1 non-decreasing finite float64 cumulative weights (device memory);
 * 0 <= last < ncat is the last index of positive weight. */
PGK_API int pgk_random_choice(int64_t* out, int64_t n, const double* cdf, int64_t ncat,
                              int64_t last, uint64_t key, uint64_t counter, uint32_t stream_id,
                              void* stream);


/* ---- advanced indexing (gather_scatter.cu) ----
 *
 * An index space (outer..., count, inner...) in C order over a strided view `base` (of `dtype`):
 * element (p, m, q) is the element at byte offset
 *     outer_offset(p) + sum_k resolve(index[k][m], index_size[k]) * index_stride[k] + inner_offset(q)
 * from `base`, where outer_offset / inner_offset walk the outer / inner dims (shape and byte
 * strides, outermost first, n_outer / n_inner of them, at most PGK_INDEX_MAX each) and index[k]
 * are n_index C-contiguous int64 arrays of `count` elements (8-byte aligned).  resolve() by
 * `mode`: PGK_INDEX_RAISE: v in [-size, size), negative counting from the end, anything else
 * out of range (the element is skipped: a gather stores 0, a scatter/add writes nothing);
 * PGK_INDEX_WRAP: v modulo size (non-negative); PGK_INDEX_CLIP: clipped into [0, size - 1]
 * (an axis of size 0 has every index out of range, in every mode).
 * `error` (NULL: not reported) is an 8-byte slot that the launcher first sets to -1 (stream
 * ordered) and the kernel, for out-of-range indices, lowers to the smallest k * count + m.
 * `flags`: 0, or PGK_ERROR_SLOT_PRESET when the caller has already set the slot to -1 (the
 * launcher then leaves it alone: no memset launch; for slots reset in batches, as pygpukit's
 * deferred index checks do).  Other bits are invalid.
 * Strides are multiples of the element size and may be 0 or negative.  64-bit index math
 * where the space has more than INT32_MAX elements.  Returns cudaErrorInvalidValue (1)
 * without touching the device for bad arguments (unknown dtype or mode, counts out of range,
 * negative sizes, null or misaligned pointers where there are elements). */
#define PGK_INDEX_MAX 16
enum { PGK_INDEX_RAISE = 0, PGK_INDEX_WRAP = 1, PGK_INDEX_CLIP = 2 };
enum { PGK_ERROR_SLOT_PRESET = 1 };

typedef struct pgk_index_desc {
  void* base;
  int32_t dtype, mode;
  int32_t n_outer, n_inner, n_index, flags;
  int64_t count;
  int64_t outer_shape[PGK_INDEX_MAX], outer_strides[PGK_INDEX_MAX];
  int64_t inner_shape[PGK_INDEX_MAX], inner_strides[PGK_INDEX_MAX];
  const int64_t* index[PGK_INDEX_MAX];
  int64_t index_size[PGK_INDEX_MAX], index_stride[PGK_INDEX_MAX];
} pgk_index_desc;

/* out[i] = element i of the index space (out: C-contiguous, of desc->dtype). */
PGK_API int pgk_index_gather(const pgk_index_desc* desc, void* out, int64_t* error,
                             void* stream);
/* The bounds check alone: lowers *error (required) to the smallest k * count + m of an
 * out-of-range index (resolve() by desc->mode, as above) and touches no element of the target:
 * what a caller runs first when a scatter must write nothing if an index is out of range.
 * desc->base may be NULL; nothing is launched when the index space is empty. */
PGK_API int pgk_index_check(const pgk_index_desc* desc, int64_t* error, void* stream);
/* element i of the index space = values[i] (values: C-contiguous, of desc->dtype, not
 * overlapping the target).  Repeated destinations: one of the values wins (unspecified). */
PGK_API int pgk_index_scatter(const pgk_index_desc* desc, const void* values, int64_t* error,
                              void* stream);

/* Deterministic scatter-add: element i of the index space += values[i], repeated destinations
 * accumulating.  dtype PGK_FLOAT32, PGK_FLOAT64, PGK_INT32 or PGK_INT64 (integers wrap).  The
 * destinations are sorted stably (CUB radix sort of their element offsets, positions as
 * values), then each destination's values are summed in a fixed order: chunks of 2048 sorted
 * elements, within a chunk each of 256 threads adds 8 consecutive elements in order and a
 * cub::BlockScan combines the threads; a destination spanning chunks adds the chunks' partials
 * in chunk order.  The order depends on the index pattern only: the same call gives the same
 * bits on every run.  No atomics on the data; no memory allocated: `workspace` (256-byte
 * aligned) of at least pgk_index_add_workspace_size() bytes. */
PGK_API int pgk_index_add_workspace_size(const pgk_index_desc* desc, uint64_t* bytes);
PGK_API int pgk_index_add(const pgk_index_desc* desc, const void* values, int64_t* error,
                          void* workspace, uint64_t workspace_bytes, void* stream);

/* Scatter-add with atomics: element i of the index space += values[i] (the same dtypes and
 * error reporting as pgk_index_add), one atomicAdd per element: no sort and no workspace, but
 * float sums of repeated destinations are rounded in an order that varies from run to run
 * (integers are exact).  What torch's index_add_ / scatter_add_ do by default. */
PGK_API int pgk_index_add_atomic(const pgk_index_desc* desc, const void* values, int64_t* error,
                                 void* stream);

/* Mask compaction: the elements of the contiguous x (n of dtype) whose flag byte is non-zero,
 * in order, into out; with x NULL, their positions 0..n-1 as int64 (nonzero).  out has room for
 * the flags set (at most n); their number goes to the first 8 bytes of `workspace` (16-byte
 * aligned, at least pgk_select_flagged_workspace_size(dtype, x == NULL, n) bytes, which also
 * holds the bit-packed flags and per-tile offsets between the passes). */
PGK_API int pgk_select_flagged_workspace_size(int dtype, int positions, int64_t n,
                                              uint64_t* bytes);
PGK_API int pgk_select_flagged(const void* x, int dtype, const uint8_t* flags, int64_t n,
                               void* out, void* workspace, uint64_t workspace_bytes,
                               void* stream);

/* The two halves of pgk_select_flagged, for a caller that reads the count on the host before
 * the compaction has run: pgk_select_flagged_count writes the count into the first 8 bytes of
 * `workspace` (and the packed flags and tile offsets that the compaction reads after it);
 * pgk_select_flagged_compact, later on the same stream with the same workspace and n, writes
 * the flagged elements of x (or with x NULL their int64 positions) into out. */
PGK_API int pgk_select_flagged_count(const uint8_t* flags, int64_t n, void* workspace,
                                     uint64_t workspace_bytes, void* stream);
PGK_API int pgk_select_flagged_compact(const void* x, int dtype, int64_t n, void* out,
                                       const void* workspace, uint64_t workspace_bytes,
                                       void* stream);

/* *count = the number of non-zero bytes of flags[0, n) (the launcher zeroes it first; exact:
 * integer atomics).  Sizes the result of a compaction. */
PGK_API int pgk_count_flags(const uint8_t* flags, int64_t n, int64_t* count, void* stream);

/* Coordinates of C-order flat indices in `shape` (ndim 1..PGK_MAX_DIMS): element d of flat[i]
 * (resolved by `mode` against the total size, as above; `error` gets the smallest i out of
 * range) at byte offset d * out_stride_dim + i * out_stride_i of out. */
PGK_API int pgk_unravel_index(const int64_t* flat, int64_t count, int ndim, const int64_t* shape,
                              int mode, int64_t* out, int64_t out_stride_dim,
                              int64_t out_stride_i, int64_t* error, void* stream);

/* ---- FP8: float8_e4m3fn / float8_e5m2 (fp8.cu, gemm/sm90_fp8_*.cu, gemm/sm89_fp8_*.cu) ----
 *
 * Storage dtypes: one byte per element (OCP FP8: E4M3 without infinities, max 448, one NaN
 * pattern per sign; E5M2 with infinities, max 57344).  Only pgk_fp8_cast and pgk_gemm_fp8 take
 * these codes; every other launcher rejects them (a same-dtype copy of FP8 data is a uint8 copy).
 */
enum { PGK_FLOAT8_E4M3FN = 10, PGK_FLOAT8_E5M2 = 11 };

/* dst[i] = convert(src[i]) over n contiguous elements; one side FP8, the other FP8 or float16,
 * bfloat16, float32, float64.  Conversions round to nearest even.  To FP8: without a scale the
 * value converts directly (a float64 source with one rounding); with a scale, dst = fp8(x / s)
 * computed in float32 (x rounded to float32 first).  saturate = 0: overflow gives NaN for E4M3
 * (it has no infinity) and +-inf for E5M2, as torch's and ml_dtypes' casts; saturate = 1: finite
 * values and infinities clamp to +-max, NaN stays NaN.  From FP8 (exact widening): dst =
 * out(f * s) with the product in float32, or the exact value without a scale.  scale: NULL,
 * one float32 in device memory (row_len 0), or one per row of row_len elements (scale[i /
 * row_len]; n a multiple of row_len).  cudaErrorInvalidValue (1) for bad arguments. */
PGK_API int pgk_fp8_cast(const void* src, int src_dtype, void* dst, int dst_dtype, int64_t n,
                         const float* scale, int64_t row_len, int saturate, void* stream);

/* C = act(A @ B^T * sa[m] * sb[n] + bias[n]) with A (m, k) and B (n, k) FP8, both row-major
 * (unit stride along k: FP8 tensor cores read K-major operands only), float32 accumulation,
 * C row-major (m, n) of out_dtype (PGK_BFLOAT16, PGK_FLOAT16 or PGK_FLOAT32).  scale_a: one
 * float32 (scale_a_per_row 0) or m of them (1); scale_b: one (scale_b_per_col 0) or n (1); NULL
 * = 1.  bias: NULL or n contiguous elements of out_dtype.  Pairs: e4m3 x e4m3, e4m3 x e5m2,
 * e5m2 x e4m3.  Two kernel families: on compute capability 9.0 the sm_90a TMA/WGMMA kernels
 * (they need the pointers, lda, ldb and ldc*sizeof(out) to be multiples of 16 bytes); on 8.9
 * (Ada), 10.x and 12.x (Blackwell), and on 9.0 for what the WGMMA kernels decline, mma.sync FP8
 * kernels (CUTLASS 2.x; they need a, b, lda, ldb and k to be multiples of 16 bytes / elements,
 * C only its element alignment).  Below 8.9, for an e5m2 x e5m2 pair, in a build without a
 * family for the device, and for operands no family can read it returns cudaErrorNotSupported
 * (801) without launching anything.  cudaErrorInvalidValue (1) for malformed descriptors. */
typedef struct pgk_gemm_fp8_desc {
  int64_t m, n, k;
  int32_t a_dtype, b_dtype, out_dtype, activation;
  const void* a;
  int64_t lda;
  const void* b;
  int64_t ldb;
  void* c;
  int64_t ldc;
  const float* scale_a;
  const float* scale_b;
  int32_t scale_a_per_row, scale_b_per_col;
  const void* bias;
} pgk_gemm_fp8_desc;

PGK_API int pgk_gemm_fp8(const pgk_gemm_fp8_desc* desc, void* stream);
/* Test hook (benchmarks, configuration probes): 0 = choose the kernel by shape (default: for
 * m <= 16 the small-M streaming kernel on compute capability 8.9+ other than 9.0, where the
 * sm_90a kernels come first; then the tile kernels); 1, 2,
 * 3, 6, 7 = always the "l" (128x256 cooperative, cluster 2x1), "m" (128x128 ping-pong), "s"
 * (64x64 ping-pong on C^T = B^T A^T), "w" (128x224 cooperative) or "t" (128x32 cooperative on
 * C^T) sm_90a e4m3 x e4m3 kernel; 4 = the mma.sync tile family even on compute capability 9.0;
 * 5 = the small-M kernel whenever it can run (m <= 16; otherwise the shape heuristic's tile
 * kernel).  1-4, 6 and 7 bypass the small-M kernel.  Process-wide.  Returns
 * cudaErrorInvalidValue for another value, and cudaErrorNotSupported for 1-3, 6 and 7 in a build
 * without the sm_90a kernels and for 4 and 5 in a build without the mma.sync FP8 kernels. */
PGK_API int pgk_gemm_fp8_force_config(int config);

#ifdef __cplusplus
}
#endif

#endif /* PYGPUKIT_KERNELS_H */
