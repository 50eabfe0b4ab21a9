// The caching allocator's bookkeeping core (BlockCache) and its blocks (CachedBlock), shared
// by block_cache.cpp and the array fast path (fast_ops.cpp).
#pragma once

#include <Python.h>

#include <cstdint>

namespace pgk {

// A cache hit without a charger: a new CachedBlock of at least `nbytes` for `stream` that
// returns to `allocator`'s cache, or nullptr with no Python error set (a miss, a charger
// installed, or released blocks that need the Python allocator).  `cache` must be a BlockCache.
PyObject* block_cache_malloc(PyObject* cache, PyObject* allocator, std::int64_t nbytes,
                             PyObject* stream);

bool is_block_cache(PyObject* obj);

// Fields of a CachedBlock read by the fast path (borrowed references).
bool is_cached_block(PyObject* obj);
std::uint64_t cached_block_address(PyObject* block);  // 0: spilled to host memory
// A use of the block by an operation: stamps its LRU clock if it is tracked (spill-enabled
// partitions); a flag test otherwise.
void cached_block_use(PyObject* block);
PyObject* cached_block_stream(PyObject* block);
PyObject* cached_block_writer(PyObject* block);

}  // namespace pgk
