// BlockCache: the bookkeeping of pygpukit's caching allocator (free lists per (stream, size
// class), blocks released by their arrays, statistics) in C, so that the allocation of a
// small op's result and its release cost tens of nanoseconds instead of microseconds of
// Python.  CachedBlock: one allocation; when the last reference goes, its dealloc queues it on
// its cache (no Python code runs).  Policy -- charging partitions, pending events, memory
// limits, going back to the driver -- stays in Python (pygpukit._allocator), which calls the
// methods below.  Every method runs with the GIL held and does not release it, so each call is
// atomic with respect to the others; that is what lets the cache-hit path (malloc_fast) skip
// the Python allocator's lock.
#include "block_cache.hpp"

#include <structmember.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <vector>

#include <pybind11/pybind11.h>

namespace pgk {
namespace {

namespace py = pybind11;

// Statistics, in the order memory_stats() reports them.
enum Stat : int {
    kAllocated, kActive, kReserved, kPeakAllocated, kPeakReserved, kNumAllocs, kNumFrees,
    kNumDeviceAllocs, kNumDeviceFrees, kNumAllocRetries, kNumOoms, kNumCacheHits, kNumStats
};
const char* const kStatNames[kNumStats] = {
    "allocated_bytes", "active_bytes", "reserved_bytes", "peak_allocated_bytes",
    "peak_reserved_bytes", "num_allocs", "num_frees", "num_device_allocs", "num_device_frees",
    "num_alloc_retries", "num_ooms", "num_cache_hits"};

constexpr std::int64_t kMinBlock = 512;
constexpr std::int64_t kSmallLimit = 1 << 20;
constexpr std::int64_t kLargeGranule = 2 << 20;

std::int64_t size_class(std::int64_t n) {
    if (n <= kMinBlock) return kMinBlock;
    if (n <= kSmallLimit) {
        std::int64_t c = kMinBlock;
        while (c < n) c <<= 1;
        return c;
    }
    return (n + kLargeGranule - 1) / kLargeGranule * kLargeGranule;
}

struct Entry {
    std::uint64_t address;
    PyObject* payload;  // strong
};

struct Key {
    PyObject* stream;  // strong while the bucket exists
    std::int64_t size;
    bool operator==(const Key& o) const { return stream == o.stream && size == o.size; }
};
struct KeyHash {
    std::size_t operator()(const Key& k) const {
        return std::hash<const void*>()(k.stream) ^ (std::hash<std::int64_t>()(k.size) << 1);
    }
};
struct Bucket {
    std::uint64_t seq;           // creation order (items() lists buckets oldest first)
    std::vector<Entry> entries;  // pushed at the back, reused from the back (LIFO: warm)
};

// A block given up by its arrays, waiting for the allocator (strong references).
struct Released {
    std::uint64_t address;
    PyObject* payload;
    std::int64_t size;
    PyObject* stream;
    PyObject* used;  // None or a set of other streams that used the block
};

struct CacheObject {
    PyObject_HEAD
    std::unordered_map<Key, Bucket, KeyHash>* buckets;
    std::vector<Released>* released;
    std::uint64_t seq;
    std::int64_t stats[kNumStats];
    int charged;       // a charger (partitions) is installed: the C fast paths stand aside
    PyObject* weakrefs;
};

struct BlockObject {
    PyObject_HEAD
    PyObject* cache;      // the BlockCache (strong) or nullptr
    PyObject* allocator;  // the Python allocator (strong; keeps a graph pool alive) or None
    std::uint64_t address;
    PyObject* payload;
    std::int64_t size;
    PyObject* stream;
    PyObject* used_streams;  // None or set
    PyObject* writer;        // the stream that last wrote the block
    // Spill (pygpukit._spill): blocks of spill-enabled partitions are `tracked`; their
    // `last_use` is stamped from g_use_clock on each use (the LRU order), `pins` > 0 keeps
    // them on the device.  A spilled block has address 0 and its host copy as payload.
    std::uint64_t last_use;
    int tracked;
    int pins;
    PyObject* weakrefs;
};

// The LRU clock of tracked blocks: one counter for the process (the GIL orders its uses).
std::uint64_t g_use_clock = 0;

PyTypeObject* g_cache_type = nullptr;
PyTypeObject* g_block_type = nullptr;

CacheObject* as_cache(PyObject* o) { return reinterpret_cast<CacheObject*>(o); }
BlockObject* as_block(PyObject* o) { return reinterpret_cast<BlockObject*>(o); }

void add_stat(CacheObject* c, int which, std::int64_t delta) {
    std::int64_t v = (c->stats[which] += delta);
    if (which == kAllocated && v > c->stats[kPeakAllocated]) c->stats[kPeakAllocated] = v;
    if (which == kReserved && v > c->stats[kPeakReserved]) c->stats[kPeakReserved] = v;
}

void push_entry(CacheObject* c, PyObject* stream, std::int64_t size, std::uint64_t address,
                PyObject* payload /* stolen */) {
    auto& buckets = *c->buckets;
    auto it = buckets.find(Key{stream, size});
    if (it == buckets.end()) {
        Py_INCREF(stream);
        it = buckets.emplace(Key{stream, size}, Bucket{c->seq++, {}}).first;
    }
    it->second.entries.push_back(Entry{address, payload});
}

// Drop a bucket that became empty (its stream reference goes with it).
void erase_if_empty(CacheObject* c, std::unordered_map<Key, Bucket, KeyHash>::iterator it) {
    if (it->second.entries.empty()) {
        PyObject* stream = it->first.stream;
        c->buckets->erase(it);
        Py_DECREF(stream);
    }
}

// Move released blocks that used no other stream into the cache, as the Python allocator's
// drain does for them.  Returns false (and moves nothing) if any record needs Python (events
// for other streams), or when a charger is installed (owners must be told).
bool drain_simple(CacheObject* c) {
    auto& rel = *c->released;
    if (rel.empty()) return true;
    if (c->charged) return false;
    for (const Released& r : rel)
        if (r.used != Py_None) return false;
    std::vector<Released> items;
    items.swap(rel);
    for (Released& r : items) {
        add_stat(c, kAllocated, -r.size);
        add_stat(c, kNumFrees, 1);
        add_stat(c, kActive, -r.size);
        push_entry(c, r.stream, r.size, r.address, r.payload);
        Py_DECREF(r.stream);
        Py_DECREF(r.used);
    }
    return true;
}

PyObject* new_block(CacheObject* cache, PyObject* allocator, std::uint64_t address,
                    PyObject* payload /* stolen */, std::int64_t size, PyObject* stream) {
    auto* b = PyObject_New(BlockObject, g_block_type);
    if (b == nullptr) {
        Py_DECREF(payload);
        return nullptr;
    }
    Py_XINCREF(reinterpret_cast<PyObject*>(cache));
    b->cache = reinterpret_cast<PyObject*>(cache);
    Py_INCREF(allocator);
    b->allocator = allocator;
    b->address = address;
    b->payload = payload;
    b->size = size;
    Py_INCREF(stream);
    b->stream = stream;
    Py_INCREF(Py_None);
    b->used_streams = Py_None;
    Py_INCREF(stream);
    b->writer = stream;
    b->last_use = 0;
    b->tracked = 0;
    b->pins = 0;
    b->weakrefs = nullptr;
    return reinterpret_cast<PyObject*>(b);
}

// -- BlockCache --------------------------------------------------------------------------------
PyObject* cache_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    if (!PyArg_ParseTuple(args, ":BlockCache") ||
        (kwargs != nullptr && PyDict_GET_SIZE(kwargs) != 0)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "BlockCache() takes no arguments");
        return nullptr;
    }
    auto* c = reinterpret_cast<CacheObject*>(type->tp_alloc(type, 0));
    if (c == nullptr) return nullptr;
    c->buckets = new std::unordered_map<Key, Bucket, KeyHash>();
    c->released = new std::vector<Released>();
    c->seq = 0;
    std::memset(c->stats, 0, sizeof(c->stats));
    c->charged = 0;
    c->weakrefs = nullptr;
    return reinterpret_cast<PyObject*>(c);
}

void cache_dealloc(PyObject* o) {
    auto* c = as_cache(o);
    PyTypeObject* tp = Py_TYPE(o);
    if (c->weakrefs != nullptr) PyObject_ClearWeakRefs(o);
    if (c->buckets != nullptr) {
        for (auto& kv : *c->buckets) {
            for (Entry& e : kv.second.entries) Py_DECREF(e.payload);
            Py_DECREF(kv.first.stream);
        }
        delete c->buckets;
    }
    if (c->released != nullptr) {
        for (Released& r : *c->released) {
            Py_DECREF(r.payload);
            Py_DECREF(r.stream);
            Py_DECREF(r.used);
        }
        delete c->released;
    }
    tp->tp_free(o);
    Py_DECREF(tp);
}

bool parse_i64(PyObject* o, const char* what, std::int64_t* out) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, got %s", what, Py_TYPE(o)->tp_name);
        return false;
    }
    *out = v;
    return true;
}

bool parse_u64(PyObject* o, const char* what, std::uint64_t* out) {
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "%s must be an int in [0, 2**64), got %R", what, o);
        return false;
    }
    *out = v;
    return true;
}

int stat_index(PyObject* name) {
    for (int i = 0; i < kNumStats; ++i)
        if (PyUnicode_CompareWithASCIIString(name, kStatNames[i]) == 0) return i;
    PyErr_Format(PyExc_KeyError, "unknown allocator statistic %R", name);
    return -1;
}

// push(stream, size, address, payload)
PyObject* cache_push(PyObject* o, PyObject* const* a, Py_ssize_t n) {
    if (n != 4) return PyErr_Format(PyExc_TypeError, "push takes 4 arguments, got %zd", n);
    std::int64_t size;
    std::uint64_t address;
    if (!parse_i64(a[1], "size", &size) || !parse_u64(a[2], "address", &address)) return nullptr;
    Py_INCREF(a[3]);
    push_entry(as_cache(o), a[0], size, address, a[3]);
    Py_RETURN_NONE;
}

// pop(stream, size) -> (address, payload) | None: the most recently cached block of the key.
PyObject* cache_pop(PyObject* o, PyObject* const* a, Py_ssize_t n) {
    if (n != 2) return PyErr_Format(PyExc_TypeError, "pop takes 2 arguments, got %zd", n);
    std::int64_t size;
    if (!parse_i64(a[1], "size", &size)) return nullptr;
    auto* c = as_cache(o);
    auto it = c->buckets->find(Key{a[0], size});
    if (it == c->buckets->end()) Py_RETURN_NONE;
    Entry e = it->second.entries.back();
    it->second.entries.pop_back();
    erase_if_empty(c, it);
    PyObject* addr = PyLong_FromUnsignedLongLong(e.address);
    if (addr == nullptr) {
        Py_DECREF(e.payload);
        return nullptr;
    }
    PyObject* t = PyTuple_Pack(2, addr, e.payload);
    Py_DECREF(addr);
    Py_DECREF(e.payload);
    return t;
}

std::vector<std::pair<const Key*, Bucket*>> ordered(CacheObject* c) {
    std::vector<std::pair<const Key*, Bucket*>> v;
    v.reserve(c->buckets->size());
    for (auto& kv : *c->buckets) v.emplace_back(&kv.first, &kv.second);
    std::sort(v.begin(), v.end(),
              [](const auto& x, const auto& y) { return x.second->seq < y.second->seq; });
    return v;
}

PyObject* entry_tuple(PyObject* stream, std::int64_t size, const Entry& e) {
    return Py_BuildValue("(OLKO)", stream, static_cast<long long>(size),
                         static_cast<unsigned long long>(e.address), e.payload);
}

// items() -> [(stream, size, address, payload)]: a snapshot, buckets oldest first, each
// bucket's blocks oldest first.
PyObject* cache_items(PyObject* o, PyObject*) {
    PyObject* out = PyList_New(0);
    if (out == nullptr) return nullptr;
    for (auto& kv : ordered(as_cache(o))) {
        for (const Entry& e : kv.second->entries) {
            PyObject* t = entry_tuple(kv.first->stream, kv.first->size, e);
            if (t == nullptr || PyList_Append(out, t) < 0) {
                Py_XDECREF(t);
                Py_DECREF(out);
                return nullptr;
            }
            Py_DECREF(t);
        }
    }
    return out;
}

// remove(stream, size, address) -> bool: take one cached block out (its payload dropped).
PyObject* cache_remove(PyObject* o, PyObject* const* a, Py_ssize_t n) {
    if (n != 3) return PyErr_Format(PyExc_TypeError, "remove takes 3 arguments, got %zd", n);
    std::int64_t size;
    std::uint64_t address;
    if (!parse_i64(a[1], "size", &size) || !parse_u64(a[2], "address", &address)) return nullptr;
    auto* c = as_cache(o);
    auto it = c->buckets->find(Key{a[0], size});
    if (it == c->buckets->end()) Py_RETURN_FALSE;
    auto& v = it->second.entries;
    for (auto e = v.begin(); e != v.end(); ++e) {
        if (e->address == address) {
            PyObject* payload = e->payload;
            v.erase(e);
            erase_if_empty(c, it);
            Py_DECREF(payload);
            Py_RETURN_TRUE;
        }
    }
    Py_RETURN_FALSE;
}

// take_all() -> [(stream, size, address, payload)]: empty the cache.
PyObject* cache_take_all(PyObject* o, PyObject*) {
    PyObject* out = cache_items(o, nullptr);
    if (out == nullptr) return nullptr;
    // Moved out first: a DECREF below may run code that uses the cache.
    std::unordered_map<Key, Bucket, KeyHash> taken;
    taken.swap(*as_cache(o)->buckets);
    for (auto& kv : taken) {
        for (Entry& e : kv.second.entries) Py_DECREF(e.payload);
        Py_DECREF(kv.first.stream);
    }
    return out;
}

PyObject* cache_streams(PyObject* o, PyObject*) {
    PyObject* out = PySet_New(nullptr);
    if (out == nullptr) return nullptr;
    for (auto& kv : *as_cache(o)->buckets)
        if (PySet_Add(out, kv.first.stream) < 0) {
            Py_DECREF(out);
            return nullptr;
        }
    return out;
}

// take_released() -> [(address, payload, size, stream, used_streams)], oldest first.
PyObject* cache_take_released(PyObject* o, PyObject*) {
    auto* c = as_cache(o);
    std::vector<Released> items;
    items.swap(*c->released);
    PyObject* out = PyList_New(static_cast<Py_ssize_t>(items.size()));
    Py_ssize_t i = 0;
    for (Released& r : items) {
        PyObject* t = out == nullptr ? nullptr
                                     : Py_BuildValue("(KOLOO)",
                                                     static_cast<unsigned long long>(r.address),
                                                     r.payload, static_cast<long long>(r.size),
                                                     r.stream, r.used);
        Py_DECREF(r.payload);
        Py_DECREF(r.stream);
        Py_DECREF(r.used);
        if (out != nullptr) {
            if (t == nullptr) {
                Py_CLEAR(out);
            } else {
                PyList_SET_ITEM(out, i++, t);
            }
        }
    }
    return out;
}

// add(name, delta): change a statistic (peaks follow allocated/reserved bytes).
PyObject* cache_add(PyObject* o, PyObject* const* a, Py_ssize_t n) {
    if (n != 2) return PyErr_Format(PyExc_TypeError, "add takes 2 arguments, got %zd", n);
    int i = stat_index(a[0]);
    std::int64_t delta;
    if (i < 0 || !parse_i64(a[1], "delta", &delta)) return nullptr;
    add_stat(as_cache(o), i, delta);
    Py_RETURN_NONE;
}

PyObject* cache_get(PyObject* o, PyObject* name) {
    int i = stat_index(name);
    if (i < 0) return nullptr;
    return PyLong_FromLongLong(as_cache(o)->stats[i]);
}

PyObject* cache_set(PyObject* o, PyObject* const* a, Py_ssize_t n) {
    if (n != 2) return PyErr_Format(PyExc_TypeError, "set takes 2 arguments, got %zd", n);
    int i = stat_index(a[0]);
    std::int64_t v;
    if (i < 0 || !parse_i64(a[1], "value", &v)) return nullptr;
    as_cache(o)->stats[i] = v;
    Py_RETURN_NONE;
}

PyObject* cache_stats(PyObject* o, PyObject*) {
    PyObject* d = PyDict_New();
    if (d == nullptr) return nullptr;
    for (int i = 0; i < kNumStats; ++i) {
        PyObject* v = PyLong_FromLongLong(as_cache(o)->stats[i]);
        if (v == nullptr || PyDict_SetItemString(d, kStatNames[i], v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return nullptr;
        }
        Py_DECREF(v);
    }
    return d;
}

// size_class(nbytes) -> int: the size class of a request (static).  The one rule of the
// allocator (pygpukit._allocator uses it); the Rust pool model's size_class is checked against
// it in pygpukit's tests.
PyObject* cache_size_class(PyObject*, PyObject* nbytes) {
    std::int64_t n;
    if (!parse_i64(nbytes, "nbytes", &n)) return nullptr;
    if (n > (std::int64_t{1} << 62))
        return PyErr_Format(PyExc_OverflowError, "nbytes %lld is too large",
                            static_cast<long long>(n));
    return PyLong_FromLongLong(size_class(n));
}

// block(allocator, address, payload, size, stream) -> CachedBlock (counted by the caller).
PyObject* cache_block(PyObject* o, PyObject* const* a, Py_ssize_t n) {
    if (n != 5) return PyErr_Format(PyExc_TypeError, "block takes 5 arguments, got %zd", n);
    std::uint64_t address;
    std::int64_t size;
    if (!parse_u64(a[1], "address", &address) || !parse_i64(a[3], "size", &size)) return nullptr;
    Py_INCREF(a[2]);
    return new_block(as_cache(o), a[0], address, a[2], size, a[4]);
}

PyObject* cache_get_charged(PyObject* o, void*) { return PyBool_FromLong(as_cache(o)->charged); }
int cache_set_charged(PyObject* o, PyObject* v, void*) {
    if (v == nullptr) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete charged");
        return -1;
    }
    int t = PyObject_IsTrue(v);
    if (t < 0) return -1;
    as_cache(o)->charged = t;
    return 0;
}
PyObject* cache_get_pending_releases(PyObject* o, void*) {
    return PyLong_FromSize_t(as_cache(o)->released->size());
}

// A cache hit without a charger: a new block (counted as allocated), or nullptr with no error
// set on a miss (or when the Python allocator must do the bookkeeping).
PyObject* malloc_hit(CacheObject* c, PyObject* allocator, std::int64_t nbytes,
                     PyObject* stream) {
    if (c->charged || !drain_simple(c)) return nullptr;
    std::int64_t size = size_class(nbytes);
    auto it = c->buckets->find(Key{stream, size});
    if (it == c->buckets->end()) return nullptr;
    Entry e = it->second.entries.back();
    it->second.entries.pop_back();
    erase_if_empty(c, it);
    add_stat(c, kNumCacheHits, 1);
    add_stat(c, kNumAllocs, 1);
    add_stat(c, kAllocated, size);
    add_stat(c, kActive, size);
    PyObject* b = new_block(c, allocator, e.address, e.payload, size, stream);
    if (b == nullptr) PyErr_Clear();  // out of memory for the object: the slow path raises
    return b;
}

// malloc_fast(allocator, nbytes, stream) -> CachedBlock | None
PyObject* cache_malloc_fast(PyObject* o, PyObject* const* a, Py_ssize_t n) {
    if (n != 3)
        return PyErr_Format(PyExc_TypeError, "malloc_fast takes 3 arguments, got %zd", n);
    std::int64_t nbytes;
    if (!parse_i64(a[1], "nbytes", &nbytes)) return nullptr;
    PyObject* b = malloc_hit(as_cache(o), a[0], nbytes, a[2]);
    if (b == nullptr) Py_RETURN_NONE;
    return b;
}

// -- CachedBlock -------------------------------------------------------------------------------
void block_dealloc(PyObject* o) {
    auto* b = as_block(o);
    PyTypeObject* tp = Py_TYPE(o);
    if (b->weakrefs != nullptr) PyObject_ClearWeakRefs(o);
    // address 0: spilled (its device memory went back already) or handed to another block.
    if (b->cache != nullptr && b->size != 0 && b->allocator != Py_None && b->address != 0) {
        // Queued for the allocator, which drains it under its lock (or the C fast path does).
        as_cache(b->cache)->released->push_back(
            Released{b->address, b->payload, b->size, b->stream, b->used_streams});
    } else {
        Py_DECREF(b->payload);
        Py_DECREF(b->stream);
        Py_DECREF(b->used_streams);
    }
    Py_XDECREF(b->cache);
    Py_DECREF(b->allocator);
    Py_DECREF(b->writer);
    PyObject_Free(o);
    Py_DECREF(tp);
}

PyObject* block_new(PyTypeObject*, PyObject* args, PyObject* kwargs) {
    PyObject *cache, *allocator, *addr, *payload, *size, *stream;
    static const char* kw[] = {"cache", "allocator", "address", "payload", "size", "stream",
                               nullptr};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOO:CachedBlock", const_cast<char**>(kw),
                                     &cache, &allocator, &addr, &payload, &size, &stream))
        return nullptr;
    if (cache != Py_None && !is_block_cache(cache))
        return PyErr_Format(PyExc_TypeError, "cache must be a BlockCache or None, got %s",
                            Py_TYPE(cache)->tp_name);
    std::uint64_t address;
    std::int64_t sz;
    if (!parse_u64(addr, "address", &address) || !parse_i64(size, "size", &sz)) return nullptr;
    if (sz < 0) return PyErr_Format(PyExc_ValueError, "size must be >= 0, got %lld",
                                    static_cast<long long>(sz));
    Py_INCREF(payload);
    return new_block(cache == Py_None ? nullptr : as_cache(cache), allocator, address, payload,
                     sz, stream);
}

// record_stream(stream): work on `stream` (not the allocating one) uses this block.
PyObject* block_record_stream(PyObject* o, PyObject* stream) {
    auto* b = as_block(o);
    if (stream == b->stream) Py_RETURN_NONE;
    if (b->used_streams == Py_None) {
        PyObject* s = PySet_New(nullptr);
        if (s == nullptr) return nullptr;
        Py_SETREF(b->used_streams, s);
    }
    if (PySet_Add(b->used_streams, stream) < 0) return nullptr;
    Py_RETURN_NONE;
}

// touch(): stamp the block's last use from the LRU clock (tracked blocks).
PyObject* block_touch(PyObject* o, PyObject*) {
    as_block(o)->last_use = ++g_use_clock;
    Py_RETURN_NONE;
}

// spill_out(record): the block's device memory goes back to its cache as if its arrays had
// released it (queued for the allocator, used_streams with it); the block keeps `record` (its
// host copy) as payload and has address 0 until adopt().  The caller has copied the bytes out
// (ordered before any reuse of the memory: see pygpukit._spill).
PyObject* block_spill_out(PyObject* o, PyObject* record) {
    auto* b = as_block(o);
    if (b->address == 0) return PyErr_Format(PyExc_ValueError, "the block is spilled already");
    if (b->cache == nullptr || b->size == 0 || b->allocator == Py_None)
        return PyErr_Format(PyExc_ValueError, "only a block of a caching allocator can spill");
    if (b->pins > 0) return PyErr_Format(PyExc_ValueError, "the block is pinned to the device");
    Py_INCREF(b->stream);
    as_cache(b->cache)->released->push_back(
        Released{b->address, b->payload, b->size, b->stream, b->used_streams});  // steals
    Py_INCREF(record);
    b->payload = record;
    Py_INCREF(Py_None);
    b->used_streams = Py_None;
    b->address = 0;
    Py_RETURN_NONE;
}

// adopt(other): a spilled block takes over `other`'s memory (a new block of the same cache,
// size and stream, made by the allocator to restore it); `other` is left empty (address 0:
// its dealloc gives nothing back).  The host copy (the old payload) is dropped.
PyObject* block_adopt(PyObject* o, PyObject* other) {
    auto* b = as_block(o);
    if (!is_cached_block(other) || other == o)
        return PyErr_Format(PyExc_TypeError, "adopt() takes another CachedBlock, got %s",
                            Py_TYPE(other)->tp_name);
    auto* n = as_block(other);
    if (b->address != 0) return PyErr_Format(PyExc_ValueError, "the block is not spilled");
    if (n->address == 0 || n->cache != b->cache || n->size != b->size || n->stream != b->stream)
        return PyErr_Format(PyExc_ValueError,
                            "adopt(): the new block must be live, of the same cache, size and "
                            "stream");
    PyObject* old = b->payload;
    b->address = n->address;
    b->payload = n->payload;
    Py_SETREF(b->used_streams, n->used_streams);
    Py_INCREF(Py_None);
    n->used_streams = Py_None;
    Py_INCREF(Py_None);
    n->payload = Py_None;
    n->address = 0;
    Py_DECREF(old);
    Py_RETURN_NONE;
}

PyObject* block_get_tracked(PyObject* o, void*) { return PyBool_FromLong(as_block(o)->tracked); }
int block_set_tracked(PyObject* o, PyObject* v, void*) {
    if (v == nullptr) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete tracked");
        return -1;
    }
    int t = PyObject_IsTrue(v);
    if (t < 0) return -1;
    as_block(o)->tracked = t;
    return 0;
}
PyObject* block_get_pins(PyObject* o, void*) { return PyLong_FromLong(as_block(o)->pins); }
int block_set_pins(PyObject* o, PyObject* v, void*) {
    if (v == nullptr) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete pins");
        return -1;
    }
    long n = PyLong_AsLong(v);
    if (n == -1 && PyErr_Occurred()) return -1;
    if (n < 0 || n > 0x7FFFFFFF) {
        PyErr_Format(PyExc_ValueError, "pins must be in [0, 2**31), got %ld", n);
        return -1;
    }
    as_block(o)->pins = static_cast<int>(n);
    return 0;
}
PyObject* block_get_last_use(PyObject* o, void*) {
    return PyLong_FromUnsignedLongLong(as_block(o)->last_use);
}

PyObject* block_get_address(PyObject* o, void*) {
    return PyLong_FromUnsignedLongLong(as_block(o)->address);
}
PyObject* block_get_size(PyObject* o, void*) { return PyLong_FromLongLong(as_block(o)->size); }

int set_object(PyObject** slot, PyObject* v, const char* name) {
    if (v == nullptr) {
        PyErr_Format(PyExc_AttributeError, "cannot delete %s", name);
        return -1;
    }
    Py_INCREF(v);
    Py_SETREF(*slot, v);
    return 0;
}
PyObject* block_get_used(PyObject* o, void*) { return Py_NewRef(as_block(o)->used_streams); }
int block_set_used(PyObject* o, PyObject* v, void*) {
    if (v != nullptr && v != Py_None && !PySet_Check(v)) {
        PyErr_SetString(PyExc_TypeError, "used_streams must be a set or None");
        return -1;
    }
    return set_object(&as_block(o)->used_streams, v, "used_streams");
}
PyObject* block_get_writer(PyObject* o, void*) { return Py_NewRef(as_block(o)->writer); }
int block_set_writer(PyObject* o, PyObject* v, void*) {
    return set_object(&as_block(o)->writer, v, "writer");
}
PyObject* block_get_allocator(PyObject* o, void*) { return Py_NewRef(as_block(o)->allocator); }
PyObject* block_get_payload(PyObject* o, void*) { return Py_NewRef(as_block(o)->payload); }
PyObject* block_get_stream(PyObject* o, void*) { return Py_NewRef(as_block(o)->stream); }

PyObject* block_repr(PyObject* o) {
    auto* b = as_block(o);
    return PyUnicode_FromFormat("<CachedBlock address=0x%llx size=%lld>",
                                static_cast<unsigned long long>(b->address),
                                static_cast<long long>(b->size));
}

PyObject* make_cache_type(PyObject* module) {
    static PyMethodDef methods[] = {
        {"push", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&cache_push)),
         METH_FASTCALL, "push($self, stream, size, address, payload, /)\n--\n\n"
                        "Cache a free block for reuse on `stream`."},
        {"pop", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&cache_pop)),
         METH_FASTCALL, "pop($self, stream, size, /)\n--\n\n"
                        "(address, payload) of the latest cached block of the key, or None."},
        {"remove", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&cache_remove)),
         METH_FASTCALL, "remove($self, stream, size, address, /)\n--\n\n"
                        "Take one cached block out; whether it was there."},
        {"items", &cache_items, METH_NOARGS,
         "items($self, /)\n--\n\n"
         "[(stream, size, address, payload)] of the cached blocks (oldest first)."},
        {"take_all", &cache_take_all, METH_NOARGS,
         "take_all($self, /)\n--\n\nEmpty the cache; returns what items() would."},
        {"streams", &cache_streams, METH_NOARGS,
         "streams($self, /)\n--\n\nThe streams that have cached blocks."},
        {"take_released", &cache_take_released, METH_NOARGS,
         "take_released($self, /)\n--\n\n"
         "[(address, payload, size, stream, used_streams)] released since the last call."},
        {"add", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&cache_add)),
         METH_FASTCALL, "add($self, name, delta, /)\n--\n\n"
                        "Change a statistic (peaks follow allocated/reserved bytes)."},
        {"get", &cache_get, METH_O, "get($self, name, /)\n--\n\nOne statistic."},
        {"set", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&cache_set)),
         METH_FASTCALL, "set($self, name, value, /)\n--\n\nSet a statistic."},
        {"stats", &cache_stats, METH_NOARGS, "stats($self, /)\n--\n\nAll statistics (a dict)."},
        {"size_class", &cache_size_class, METH_O | METH_STATIC,
         "size_class(nbytes, /)\n--\n\n"
         "The size class of a request: 512 B to 1 MiB in powers of two, then multiples of "
         "2 MiB."},
        {"block", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&cache_block)),
         METH_FASTCALL, "block($self, allocator, address, payload, size, stream, /)\n--\n\n"
                        "A new CachedBlock that returns to this cache when it goes."},
        {"malloc_fast",
         reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&cache_malloc_fast)),
         METH_FASTCALL,
         "malloc_fast($self, allocator, nbytes, stream, /)\n--\n\n"
         "A cached block of nbytes' size class for stream (counted as allocated), or None "
         "when the cache has none, a charger is installed, or released blocks need the "
         "allocator's Python bookkeeping."},
        {nullptr, nullptr, 0, nullptr}};
    static PyGetSetDef getset[] = {
        {"charged", &cache_get_charged, &cache_set_charged,
         "Whether partitions charge this allocator (the C fast paths then stand aside).",
         nullptr},
        {"released_count", &cache_get_pending_releases, nullptr,
         "Blocks released by their arrays and not yet taken by the allocator.", nullptr},
        {nullptr, nullptr, nullptr, nullptr, nullptr}};
    static PyMemberDef members[] = {
        {"__weaklistoffset__", T_PYSSIZET,
         static_cast<Py_ssize_t>(offsetof(CacheObject, weakrefs)), READONLY, nullptr},
        {nullptr, 0, 0, 0, nullptr}};
    static PyType_Slot slots[] = {
        {Py_tp_new, reinterpret_cast<void*>(&cache_new)},
        {Py_tp_dealloc, reinterpret_cast<void*>(&cache_dealloc)},
        {Py_tp_methods, methods},
        {Py_tp_getset, getset},
        {Py_tp_members, members},
        {Py_tp_doc, const_cast<char*>(
                        "BlockCache()\n--\n\nThe caching allocator's bookkeeping in C: free "
                        "blocks per (stream, size class), released blocks, statistics.")},
        {0, nullptr}};
    static PyType_Spec spec = {"pygpukit_driver._driver.BlockCache",
                               static_cast<int>(sizeof(CacheObject)), 0, Py_TPFLAGS_DEFAULT,
                               slots};
    return PyType_FromModuleAndSpec(module, &spec, nullptr);
}

PyObject* make_block_type(PyObject* module) {
    static PyMethodDef methods[] = {
        {"record_stream", &block_record_stream, METH_O,
         "record_stream($self, stream, /)\n--\n\n"
         "Note that work on `stream` (not the allocating one) uses this block."},
        {"touch", &block_touch, METH_NOARGS,
         "touch($self, /)\n--\n\nStamp the block's last use from the LRU clock."},
        {"spill_out", &block_spill_out, METH_O,
         "spill_out($self, record, /)\n--\n\n"
         "Give the device memory back to the cache (its bytes copied out by the caller); "
         "the block keeps `record` as payload and has address 0."},
        {"adopt", &block_adopt, METH_O,
         "adopt($self, other, /)\n--\n\n"
         "A spilled block takes over the memory of `other` (same cache, size and stream)."},
        {nullptr, nullptr, 0, nullptr}};
    static PyGetSetDef getset[] = {
        {"address", &block_get_address, nullptr, "Device (or host) address.", nullptr},
        {"size", &block_get_size, nullptr, "Bytes (the size class).", nullptr},
        {"payload", &block_get_payload, nullptr, "What the raw allocator returned with it.",
         nullptr},
        {"stream", &block_get_stream, nullptr, "The stream it was allocated for.", nullptr},
        {"used_streams", &block_get_used, &block_set_used,
         "Other streams whose work uses it (None: none).", nullptr},
        {"writer", &block_get_writer, &block_set_writer,
         "The stream of the last operation that wrote it.", nullptr},
        {"allocator", &block_get_allocator, nullptr, "The allocator it returns to.", nullptr},
        {"tracked", &block_get_tracked, &block_set_tracked,
         "Whether uses stamp last_use (a block of a spill-enabled partition).", nullptr},
        {"pins", &block_get_pins, &block_set_pins,
         "Pins keeping it on the device (exports, graphs); 0: it may spill.", nullptr},
        {"last_use", &block_get_last_use, nullptr, "The LRU stamp of its last use.", nullptr},
        {nullptr, nullptr, nullptr, nullptr, nullptr}};
    static PyMemberDef members[] = {
        {"__weaklistoffset__", T_PYSSIZET,
         static_cast<Py_ssize_t>(offsetof(BlockObject, weakrefs)), READONLY, nullptr},
        {nullptr, 0, 0, 0, nullptr}};
    static PyType_Slot slots[] = {
        {Py_tp_new, reinterpret_cast<void*>(&block_new)},
        {Py_tp_dealloc, reinterpret_cast<void*>(&block_dealloc)},
        {Py_tp_methods, methods},
        {Py_tp_getset, getset},
        {Py_tp_repr, reinterpret_cast<void*>(&block_repr)},
        {Py_tp_members, members},
        {Py_tp_doc, const_cast<char*>(
                        "CachedBlock(cache, allocator, address, payload, size, stream)\n--\n\n"
                        "One allocation, shared by an array and its views; when the last "
                        "reference goes it is queued on its BlockCache (size 0 or no cache: "
                        "nothing to give back).")},
        {0, nullptr}};
    static PyType_Spec spec = {"pygpukit_driver._driver.CachedBlock",
                               static_cast<int>(sizeof(BlockObject)), 0, Py_TPFLAGS_DEFAULT,
                               slots};
    return PyType_FromModuleAndSpec(module, &spec, nullptr);
}

}  // namespace

bool is_block_cache(PyObject* obj) {
    return g_cache_type != nullptr && Py_IS_TYPE(obj, g_cache_type);
}
bool is_cached_block(PyObject* obj) {
    return g_block_type != nullptr && Py_IS_TYPE(obj, g_block_type);
}
std::uint64_t cached_block_address(PyObject* block) { return as_block(block)->address; }
void cached_block_use(PyObject* block) {
    auto* b = as_block(block);
    if (b->tracked) b->last_use = ++g_use_clock;
}
PyObject* cached_block_stream(PyObject* block) { return as_block(block)->stream; }
PyObject* cached_block_writer(PyObject* block) { return as_block(block)->writer; }

PyObject* block_cache_malloc(PyObject* cache, PyObject* allocator, std::int64_t nbytes,
                             PyObject* stream) {
    return malloc_hit(as_cache(cache), allocator, nbytes, stream);
}

void register_block_cache(py::module_& m) {
    PyObject* ct = make_cache_type(m.ptr());
    if (ct == nullptr) throw py::error_already_set();
    g_cache_type = reinterpret_cast<PyTypeObject*>(ct);
    m.add_object("BlockCache", py::reinterpret_steal<py::object>(ct));
    PyObject* bt = make_block_type(m.ptr());
    if (bt == nullptr) throw py::error_already_set();
    g_block_type = reinterpret_cast<PyTypeObject*>(bt);
    m.add_object("CachedBlock", py::reinterpret_steal<py::object>(bt));
}

}  // namespace pgk
