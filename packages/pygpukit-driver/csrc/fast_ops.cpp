// FastOp: the C fast path of pygpukit's small-array ops.
//
// A FastOp stands in for one Python function or GPUArray method (`a + b`, `gp.exp(x)`,
// `x.sum()`, `x.astype(t)`, `gp.where(c, a, b)`, `gp.softmax(x)`).  For C-contiguous operands of
// a few thousand elements on the current stream it does in C what pygpukit._small does in
// Python: look the plan up (made once per (runtime, operand dtypes) by a Python planner),
// allocate the result from the allocator's BlockCache, make the GPUArray, pack the kernel's
// arguments and launch the `small_ops` kernel through its prepared Launcher.  Anything else --
// keyword arguments, other layouts, large arrays, a graph capture, a block in use on another
// stream, a cache miss, the CPU backend -- calls the Python function it wraps (`fallback`),
// which checks everything and raises the errors.  Results are those of the Python path bit
// for bit: same kernels, same arguments.
//
// GPUArray and Stream are Python classes with __slots__; their slots are read and written at
// the offsets their member descriptors give (configure()).
#include <Python.h>
#include <structmember.h>

#include <cstdint>
#include <cstring>
#include <unordered_map>

#include <pybind11/pybind11.h>

#include "block_cache.hpp"
#include "cuda_decls.hpp"
#include "driver_api.hpp"
#include "errors.hpp"

namespace pgk {

bool is_launcher(PyObject* obj);
CUresult launcher_launch_packed(PyObject* launcher, unsigned int grid_x, CUstream stream,
                                void** params);
const char* launcher_arg_types(PyObject* launcher, int* nargs);
bool launcher_pack_arg(char t, PyObject* value, unsigned char* slot);

namespace {

namespace py = pybind11;

enum Kind : int {
    kBinary = 0,     // f(a, b)
    kReflected = 1,  // f(self, other) computes op(other, self)
    kUnary = 2,      // f(x)
    kWhere = 3,      // f(cond, a, b)
    kAstype = 4,     // f(x, dtype)
    kReduce = 5,     // f(x): the whole array, keepdims False
    kRowNorm = 6,    // f(x): over the last axis, no weight/bias, eps 0
    kMatmul = 7,     // f(a, b): 2-D a @ b
    kLinear = 8,     // f(x, weight[, bias]): 2-D x @ weight.T (+ bias)
    kJit = 9,        // a JIT kernel's call: its parameters by position or by name
    kInplace = 10,   // f(self, other): self = op(self, other) (the in-place operators)
    kNumKinds = 11
};
const int kArity[kNumKinds] = {2, 2, 1, 3, 2, 1, 1, 2, 2, -1, 2};

// pgk_gemm_desc and the two GEMM entry points of pygpukit_kernels' C ABI.
struct GemmDesc {
    std::int64_t m, n, k, batch;
    std::int32_t dtype, precision, activation, b_col_major;
    const void* a;
    std::int64_t lda, batch_stride_a;
    const void* b;
    std::int64_t ldb, batch_stride_b;
    void* c;
    std::int64_t ldc, batch_stride_c;
    const void* bias;
};
using GemmFn = int (*)(const GemmDesc*, void*, std::uint64_t, void*);
using GemmWorkspaceFn = int (*)(const GemmDesc*, std::uint64_t*);

// The elementwise entry points of the same C ABI (pgk_binary, pgk_unary, pgk_where, pgk_copy):
// large contiguous operands go to them, with what pygpukit's Python path would pass.
using I64p = const std::int64_t*;
using BinaryFn = int (*)(int, const void*, int, I64p, const void*, int, I64p, void*, int, I64p,
                         int, I64p, int, double, std::int64_t, void*);
using UnaryFn = int (*)(int, const void*, int, I64p, void*, int, I64p, int, I64p, int, void*);
using WhereFn = int (*)(const void*, int, I64p, const void*, int, I64p, const void*, int, I64p,
                        void*, int, I64p, int, I64p, int, double, std::int64_t, double,
                        std::int64_t, void*);
using CopyFn = int (*)(const void*, int, I64p, void*, int, I64p, int, I64p, void*);

// Operand conversions (a plan's "conv"): an array, or a Python scalar converted as the kernel
// takes it.
enum Conv : int { kArray = 0, kFloat = 1, kIntRange = 2, kPython = 3 };

// The small_ops kernels' "kind" argument of the elementwise kernel.
constexpr int kEwBinary = 0, kEwUnary = 1, kEwWhere = 2;
constexpr unsigned int kGridMax = 1024;

// -- configuration (configure()) ---------------------------------------------------------------
struct Config {
    PyTypeObject* array_type = nullptr;
    Py_ssize_t a_rt = 0, a_block = 0, a_offset = 0, a_shape = 0, a_strides = 0, a_dtype = 0,
               a_contig = 0;
    PyTypeObject* stream_type = nullptr;
    Py_ssize_t s_pool = 0, s_keep = 0, s_before = 0, s_handle = 0;
    PyObject* thread_state = nullptr;  // pygpukit._context.state (a threading.local)
    PyObject* str_streams = nullptr;
    PyObject* str_dtype = nullptr;
    PyObject* zero = nullptr;
    bool ready = false;
};
Config g;

PyObject*& slot(PyObject* o, Py_ssize_t off) {
    return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(o) + off);
}

bool member_offset(PyTypeObject* type, const char* name, Py_ssize_t* out) {
    PyObject* d = PyDict_GetItemString(type->tp_dict, name);  // borrowed
    if (d == nullptr || !Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%s.%s must be a __slots__ member", type->tp_name, name);
        return false;
    }
    PyMemberDef* m = reinterpret_cast<PyMemberDescrObject*>(d)->d_member;
    if (m->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not an object slot", type->tp_name, name);
        return false;
    }
    *out = m->offset;
    return true;
}

// configure(array_type, stream_type, thread_state)
PyObject* configure(PyObject*, PyObject* const* a, Py_ssize_t n) {
    if (n != 3) return PyErr_Format(PyExc_TypeError, "configure takes 3 arguments, got %zd", n);
    if (!PyType_Check(a[0]) || !PyType_Check(a[1]))
        return PyErr_Format(PyExc_TypeError, "array_type and stream_type must be classes");
    auto* at = reinterpret_cast<PyTypeObject*>(a[0]);
    auto* st = reinterpret_cast<PyTypeObject*>(a[1]);
    Config c;
    if (!member_offset(at, "_rt", &c.a_rt) || !member_offset(at, "_block", &c.a_block) ||
        !member_offset(at, "_offset", &c.a_offset) || !member_offset(at, "shape", &c.a_shape) ||
        !member_offset(at, "strides", &c.a_strides) || !member_offset(at, "dtype", &c.a_dtype) ||
        !member_offset(at, "_contig", &c.a_contig) || !member_offset(st, "_pool", &c.s_pool) ||
        !member_offset(st, "_keep", &c.s_keep) ||
        !member_offset(st, "_before_launch", &c.s_before) ||
        !member_offset(st, "_handle", &c.s_handle))
        return nullptr;
    Py_INCREF(at);
    Py_INCREF(st);
    Py_INCREF(a[2]);
    c.array_type = at;
    c.stream_type = st;
    c.thread_state = a[2];
    c.str_streams = PyUnicode_InternFromString("streams");
    c.str_dtype = PyUnicode_InternFromString("dtype");
    c.zero = PyLong_FromLong(0);
    if (c.str_streams == nullptr || c.str_dtype == nullptr || c.zero == nullptr) return nullptr;
    c.ready = true;
    Py_XDECREF(reinterpret_cast<PyObject*>(g.array_type));
    Py_XDECREF(reinterpret_cast<PyObject*>(g.stream_type));
    Py_XDECREF(g.thread_state);
    Py_XDECREF(g.str_streams);
    Py_XDECREF(g.str_dtype);
    Py_XDECREF(g.zero);
    g = c;
    Py_RETURN_NONE;
}

// -- plans -------------------------------------------------------------------------------------
struct PlanKey {
    PyObject* rt;
    PyObject* k[3];
    bool operator==(const PlanKey& o) const {
        return rt == o.rt && k[0] == o.k[0] && k[1] == o.k[1] && k[2] == o.k[2];
    }
};
struct PlanKeyHash {
    std::size_t operator()(const PlanKey& p) const {
        std::size_t h = std::hash<const void*>()(p.rt);
        for (PyObject* k : p.k) h = h * 1000003u ^ std::hash<const void*>()(k);
        return h;
    }
};

struct Plan {
    bool ok = false;              // false: this key always takes the Python path
    PyObject* owner = nullptr;    // the planner's dict (keeps every object below alive)
    PyObject* launcher = nullptr;
    PyObject* allocator = nullptr;
    PyObject* cache = nullptr;    // the allocator's BlockCache
    PyObject* default_stream = nullptr;
    PyObject* index = nullptr;    // the runtime's device index (key of the stream stacks)
    PyObject* activate = nullptr; // makes the device's context current (retry of a launch)
    PyObject* out_dtype = nullptr;
    PyObject* convert = nullptr;  // Python converter for kPython scalars
    int out_itemsize = 0;
    int out_code = 0;
    int op = 0;
    int codes[3] = {0, 0, 0};
    int conv[3] = {0, 0, 0};
    long long lo = 0, hi = 0;     // kIntRange bounds
    char scalar_type = 'f';       // how the elementwise kernel takes scalars: f, d or q
    long long max_n = 0;          // most elements (row norms: most columns)
    long long max_total = 0;      // row norms: most elements in all
    bool share_strides = false;   // the result's strides are those of the first array operand
    int itemsizes[3] = {0, 0, 0}; // element size of each array operand (0: a scalar, unknown)
    // Contiguous operands past max_n: the C ABI entry of the op's kind (BinaryFn, UnaryFn,
    // WhereFn or CopyFn; null: the Python path) and the compute dtype it takes.
    void* large = nullptr;
    int compute_code = 0;
    // Products: the C ABI's entry points, what raises its errors, the device's context.
    GemmFn gemm = nullptr;
    GemmWorkspaceFn gemm_workspace = nullptr;
    PyObject* check = nullptr;    // check(name, status) raises for a non-zero status
    std::uint64_t context = 0;
    int precision = 0;
    // JIT kernels: parameter names (a tuple of str), per parameter its kind (0 scalar,
    // 1 pointer, 2 writable pointer) and accepted dtype (None: any), the size parameter that
    // gives the grid, threads per block, and the kernel's runtime.
    PyObject* names = nullptr;
    PyObject* pointees = nullptr;
    int param_kinds[32] = {};
    int nparams = 0;
    int size_index = -1;
    long long block_size = 0;
    PyObject* runtime = nullptr;
};

struct FastOpObject {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int kind;
    PyObject* name;      // the op's name, passed to the planner
    PyObject* fallback;  // the Python function
    PyObject* planner;   // planner(kind, name, runtime, k0, k1, k2) -> dict | None
    PyObject* dict;      // __dict__ (functools.update_wrapper fills it)
    std::unordered_map<PlanKey, Plan, PlanKeyHash>* plans;
};

PyTypeObject* g_fastop_type = nullptr;

void clear_plans(FastOpObject* self) {
    if (self->plans == nullptr) return;
    for (auto& kv : *self->plans) {
        Py_DECREF(kv.first.rt);
        for (PyObject* k : kv.first.k) Py_XDECREF(k);
        Py_XDECREF(kv.second.owner);
    }
    self->plans->clear();
}

bool get_int(PyObject* d, const char* key, long long* out) {
    PyObject* v = PyDict_GetItemString(d, key);
    if (v == nullptr) {
        PyErr_Format(PyExc_KeyError, "plan has no %s", key);
        return false;
    }
    *out = PyLong_AsLongLong(v);
    return !(*out == -1 && PyErr_Occurred());
}

bool get_obj(PyObject* d, const char* key, PyObject** out) {
    *out = PyDict_GetItemString(d, key);  // borrowed; the plan holds the dict
    if (*out == nullptr) PyErr_Format(PyExc_KeyError, "plan has no %s", key);
    return *out != nullptr;
}

bool get_ints3(PyObject* d, const char* key, int out[3]) {
    PyObject* v;
    if (!get_obj(d, key, &v)) return false;
    PyObject* seq = PySequence_Fast(v, "plan entries must be sequences");
    if (seq == nullptr) return false;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < 3; ++i) {
        out[i] = 0;
        if (i < n) {
            long x = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
            if (x == -1 && PyErr_Occurred()) {
                Py_DECREF(seq);
                return false;
            }
            out[i] = static_cast<int>(x);
        }
    }
    Py_DECREF(seq);
    return true;
}

bool fill_plan(PyObject* d, Plan* p) {
    long long v;
    PyObject* st;
    if (!get_obj(d, "launcher", &p->launcher) || !get_obj(d, "allocator", &p->allocator) ||
        !get_obj(d, "cache", &p->cache) || !get_obj(d, "default_stream", &p->default_stream) ||
        !get_obj(d, "index", &p->index) || !get_obj(d, "activate", &p->activate) ||
        !get_obj(d, "out_dtype", &p->out_dtype) || !get_obj(d, "convert", &p->convert) ||
        !get_obj(d, "scalar_type", &st) || !get_ints3(d, "codes", p->codes) ||
        !get_ints3(d, "conv", p->conv))
        return false;
    if ((p->launcher != Py_None && !is_launcher(p->launcher)) || !is_block_cache(p->cache)) {
        PyErr_SetString(PyExc_TypeError, "plan: launcher/cache of the wrong type");
        return false;
    }
    if (!get_int(d, "out_itemsize", &v)) return false;
    p->out_itemsize = static_cast<int>(v);
    if (!get_int(d, "out_code", &v)) return false;
    p->out_code = static_cast<int>(v);
    if (!get_int(d, "op", &v)) return false;
    p->op = static_cast<int>(v);
    if (!get_int(d, "lo", &p->lo) || !get_int(d, "hi", &p->hi) ||
        !get_int(d, "max_n", &p->max_n) || !get_int(d, "max_total", &p->max_total))
        return false;
    if (!get_int(d, "share_strides", &v)) return false;
    p->share_strides = v != 0;
    PyObject* names = PyDict_GetItemString(d, "names");  // JIT kernels only
    if (names != nullptr) {
        long long si, bs;
        int kinds[32];
        if (!get_obj(d, "pointees", &p->pointees) || !get_obj(d, "runtime", &p->runtime) ||
            !get_int(d, "size_index", &si) || !get_int(d, "block_size", &bs))
            return false;
        PyObject* pk;
        if (!get_obj(d, "param_kinds", &pk) || !PyTuple_Check(pk) || !PyTuple_Check(names) ||
            !PyTuple_Check(p->pointees) || PyTuple_GET_SIZE(names) > 32 ||
            PyTuple_GET_SIZE(pk) != PyTuple_GET_SIZE(names) ||
            PyTuple_GET_SIZE(p->pointees) != PyTuple_GET_SIZE(names)) {
            PyErr_SetString(PyExc_TypeError, "plan: names/param_kinds/pointees mismatch");
            return false;
        }
        p->nparams = static_cast<int>(PyTuple_GET_SIZE(names));
        for (int i = 0; i < p->nparams; ++i) {
            kinds[i] = static_cast<int>(PyLong_AsLong(PyTuple_GET_ITEM(pk, i)));
            p->param_kinds[i] = kinds[i];
        }
        if (PyErr_Occurred()) return false;
        p->names = names;
        p->size_index = static_cast<int>(si);
        p->block_size = bs;
        long long ctx;
        if (!get_int(d, "context", &ctx)) return false;
        p->context = static_cast<std::uint64_t>(ctx);
    }
    PyObject* gemm = PyDict_GetItemString(d, "gemm");  // products only
    if (gemm != nullptr) {
        long long ws, ctx, prec;
        if (!get_int(d, "gemm", &v) || !get_int(d, "gemm_workspace", &ws) ||
            !get_int(d, "context", &ctx) || !get_int(d, "precision", &prec) ||
            !get_obj(d, "check", &p->check))
            return false;
        p->gemm = reinterpret_cast<GemmFn>(static_cast<std::uintptr_t>(v));
        p->gemm_workspace = reinterpret_cast<GemmWorkspaceFn>(static_cast<std::uintptr_t>(ws));
        p->context = static_cast<std::uint64_t>(ctx);
        p->precision = static_cast<int>(prec);
    }
    if (PyDict_GetItemString(d, "itemsizes") != nullptr && !get_ints3(d, "itemsizes", p->itemsizes))
        return false;
    if (PyDict_GetItemString(d, "large") != nullptr) {  // elementwise plans with the C ABI
        long long cc, ctx;
        if (!get_int(d, "large", &v) || !get_int(d, "compute_code", &cc) ||
            !get_int(d, "context", &ctx) || !get_obj(d, "check", &p->check))
            return false;
        p->large = reinterpret_cast<void*>(static_cast<std::uintptr_t>(v));
        p->compute_code = static_cast<int>(cc);
        p->context = static_cast<std::uint64_t>(ctx);
    }
    const char* s = PyUnicode_AsUTF8(st);
    if (s == nullptr) return false;
    p->scalar_type = s[0];
    p->ok = true;
    return true;
}

// The plan for a key; nullptr (no error) when the key takes the Python path.  nullptr with an
// error set only if the planner failed.
const Plan* find_plan(FastOpObject* self, PyObject* rt, PyObject* k0, PyObject* k1,
                      PyObject* k2) {
    PlanKey key{rt, {k0, k1, k2}};
    auto it = self->plans->find(key);
    if (it != self->plans->end()) return it->second.ok ? &it->second : nullptr;
    if (self->plans->size() >= 4096) clear_plans(self);  // bound the table (astype's dtype args)
    PyObject* kind = PyLong_FromLong(self->kind);
    if (kind == nullptr) return nullptr;
    PyObject* args[6] = {kind, self->name, rt, k0 ? k0 : Py_None, k1 ? k1 : Py_None,
                         k2 ? k2 : Py_None};
    PyObject* d = PyObject_Vectorcall(self->planner, args, 6, nullptr);
    Py_DECREF(kind);
    if (d == nullptr) return nullptr;
    Plan plan;
    if (d != Py_None) {
        if (!PyDict_Check(d)) {
            Py_DECREF(d);
            PyErr_SetString(PyExc_TypeError, "planner must return a dict or None");
            return nullptr;
        }
        if (!fill_plan(d, &plan)) {
            Py_DECREF(d);
            return nullptr;
        }
        plan.owner = d;
    } else {
        Py_DECREF(d);
    }
    // The planner ran Python code: another thread may have stored this key meanwhile.
    auto res = self->plans->emplace(key, plan);
    if (res.second) {
        Py_INCREF(rt);
        for (PyObject* k : key.k) Py_XINCREF(k);
    } else {
        Py_XDECREF(plan.owner);
    }
    return res.first->second.ok ? &res.first->second : nullptr;
}

// -- the fast path -----------------------------------------------------------------------------
// A strong reference dropped at scope exit (the GIL is held there).
struct Ref {
    PyObject* o = nullptr;
    Ref() = default;
    explicit Ref(PyObject* x) : o(x) {}
    Ref(const Ref&) = delete;
    Ref& operator=(const Ref&) = delete;
    ~Ref() { Py_XDECREF(o); }
};

// The plan of a call, copied out of the table with its owner held: another thread may clear
// the table (set_matmul_precision) while this one has released the GIL to launch.
struct HeldPlan {
    Plan plan;
    Ref owner;
    explicit HeldPlan(const Plan* p) : plan(*p), owner(Py_NewRef(p->owner)) {}
};
struct Params {
    alignas(16) unsigned char storage[20 * 8];
    void* p[20];
    int n = 0;
    unsigned char* next() {
        unsigned char* s = storage + 8 * n;
        p[n++] = s;
        return s;
    }
    void i32(long long v) {
        auto x = static_cast<std::int32_t>(v);
        std::memcpy(next(), &x, 4);
    }
    void i64(long long v) { std::memcpy(next(), &v, 8); }
    void ptr(std::uint64_t v) { std::memcpy(next(), &v, 8); }
    void f32(double v) {
        auto x = static_cast<float>(v);
        std::memcpy(next(), &x, 4);
    }
    void f64(double v) { std::memcpy(next(), &v, 8); }
    void scalar(char t, double f, long long i) {
        if (t == 'f') f32(f);
        else if (t == 'd') f64(f);
        else i64(i);
    }
};

bool is_array(PyObject* o) { return Py_IS_TYPE(o, g.array_type); }

// Elements of a C-contiguous array operand; -1 if it is not one (or not set up).
long long contiguous_size(PyObject* a) {
    PyObject* c = slot(a, g.a_contig);
    PyObject* shape = slot(a, g.a_shape);
    if (c != Py_True || shape == nullptr || !PyTuple_CheckExact(shape)) return -1;
    long long n = 1;
    for (Py_ssize_t i = 0, nd = PyTuple_GET_SIZE(shape); i < nd; ++i) {
        long long d = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
        if (d < 0) {
            PyErr_Clear();
            return -1;
        }
        n *= d;
    }
    return n;
}

// The operand's device address, if its block is a CachedBlock allocated for `stream` (work
// on other streams needs the Python path's bookkeeping).  0 if not, or if the block is spilled
// to host memory (address 0): the Python path brings it back (pygpukit._spill).  A use stamps
// the LRU clock of blocks of spill-enabled partitions (a flag test for the others).
std::uint64_t operand_address(PyObject* a, PyObject* stream) {
    PyObject* b = slot(a, g.a_block);
    PyObject* off = slot(a, g.a_offset);
    if (b == nullptr || off == nullptr || !is_cached_block(b) || cached_block_stream(b) != stream)
        return 0;
    std::uint64_t base = cached_block_address(b);
    if (base == 0) return 0;
    long long o = PyLong_AsLongLong(off);
    if (o == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    cached_block_use(b);
    return base + static_cast<std::uint64_t>(o);
}

// Whether an operand whose address was `addr` before the result's allocation still has it:
// under memory pressure in a spill-enabled partition the allocation may have spilled it, and
// then the Python path takes the op (and brings the operand back).
bool still_at(PyObject* a, std::uint64_t addr, PyObject* stream) {
    return a == nullptr || operand_address(a, stream) == addr;
}

// The calling thread's current stream on the plan's device (a new reference), or nullptr when
// it is one the fast path leaves alone (a graph capture).  Runs the stream's before-launch hook.
PyObject* current_stream(const Plan* p, bool* failed) {
    *failed = false;
    PyObject* stream = p->default_stream;
    PyObject* streams = PyObject_GetAttr(g.thread_state, g.str_streams);
    if (streams == nullptr) {
        *failed = true;
        return nullptr;
    }
    if (PyDict_Check(streams) && PyDict_GET_SIZE(streams) != 0) {
        PyObject* stack = PyDict_GetItemWithError(streams, p->index);  // borrowed
        if (stack != nullptr && PyList_Check(stack) && PyList_GET_SIZE(stack) != 0)
            stream = PyList_GET_ITEM(stack, PyList_GET_SIZE(stack) - 1);
        else if (PyErr_Occurred()) {
            Py_DECREF(streams);
            *failed = true;
            return nullptr;
        }
    }
    Py_INCREF(stream);
    Py_DECREF(streams);  // the stack holds the stream; our reference covers the hook call
    if (!Py_IS_TYPE(stream, g.stream_type) || slot(stream, g.s_pool) != Py_None ||
        slot(stream, g.s_keep) != Py_None) {
        Py_DECREF(stream);
        return nullptr;
    }
    PyObject* hook = slot(stream, g.s_before);
    if (hook != nullptr && hook != Py_None) {
        PyObject* r = PyObject_CallNoArgs(hook);
        if (r == nullptr) {
            Py_DECREF(stream);
            *failed = true;
            return nullptr;
        }
        Py_DECREF(r);
    }
    return stream;
}

// C-contiguous strides of `shape` for `itemsize` (a new tuple).
PyObject* c_strides(PyObject* shape, long long itemsize) {
    Py_ssize_t nd = PyTuple_GET_SIZE(shape);
    PyObject* t = PyTuple_New(nd);
    if (t == nullptr) return nullptr;
    long long s = itemsize;
    for (Py_ssize_t i = nd - 1; i >= 0; --i) {
        PyObject* v = PyLong_FromLongLong(s);
        if (v == nullptr) {
            Py_DECREF(t);
            return nullptr;
        }
        PyTuple_SET_ITEM(t, i, v);
        long long d = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
        s *= d > 1 ? d : 1;
    }
    return t;
}

// A new C-contiguous array of the plan's dtype and `shape` on `stream`; nullptr with the
// error set on failure (out of memory...).  The block comes from the allocator's C cache, or
// on a miss (or with partitions charging) from its Python malloc.  `like` lends its strides
// when the plan says they are the result's.
PyObject* new_result(const Plan* p, PyObject* rt, PyObject* shape, PyObject* like,
                     long long n, PyObject* stream, std::uint64_t* address) {
    long long nbytes = n * static_cast<long long>(p->out_itemsize);
    PyObject* block = block_cache_malloc(p->cache, p->allocator, nbytes, stream);
    if (block == nullptr) {
        block = PyObject_CallMethod(p->allocator, "malloc", "LO", nbytes, stream);
        if (block == nullptr) return nullptr;
        if (!is_cached_block(block)) {
            Py_DECREF(block);
            PyErr_SetString(PyExc_TypeError, "the allocator's malloc must return a CachedBlock");
            return nullptr;
        }
    }
    PyObject* strides;
    if (p->share_strides && slot(like, g.a_strides) != nullptr) {
        strides = slot(like, g.a_strides);
        Py_INCREF(strides);
    } else {
        strides = c_strides(shape, p->out_itemsize);
        if (strides == nullptr) {
            Py_DECREF(block);
            return nullptr;
        }
    }
    PyObject* out = g.array_type->tp_alloc(g.array_type, 0);
    if (out == nullptr) {
        Py_DECREF(block);
        Py_DECREF(strides);
        return nullptr;
    }
    *address = cached_block_address(block);
    Py_INCREF(rt);
    slot(out, g.a_rt) = rt;
    slot(out, g.a_block) = block;
    Py_INCREF(g.zero);
    slot(out, g.a_offset) = g.zero;
    Py_INCREF(shape);
    slot(out, g.a_shape) = shape;
    slot(out, g.a_strides) = strides;
    Py_INCREF(p->out_dtype);
    slot(out, g.a_dtype) = p->out_dtype;
    Py_INCREF(Py_True);
    slot(out, g.a_contig) = Py_True;
    return out;
}

// Convert a Python scalar operand as the plan says; false (no error) if the Python path must
// take it (a value out of range: NumPy raises there).
bool convert_scalar(const Plan* p, int conv, PyObject* v, double* f, long long* i) {
    *f = 0.0;
    *i = 0;
    if (conv == kFloat) {
        *f = PyFloat_AsDouble(v);  // bool, int and float, as Python's float()
        if (*f == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return false;
        }
        return true;
    }
    if (conv == kIntRange) {
        if (PyFloat_Check(v)) return false;
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if ((x == -1 && PyErr_Occurred()) || overflow != 0 || x < p->lo || x > p->hi) {
            PyErr_Clear();
            return false;
        }
        *i = x;
        *f = static_cast<double>(x);
        return true;
    }
    // kPython: the planner's converter gives the kernel's value (None: Python path).
    PyObject* r = PyObject_CallOneArg(p->convert, v);
    if (r == nullptr) {
        PyErr_Clear();
        return false;
    }
    bool ok = r != Py_None;
    if (ok) {
        if (PyFloat_Check(r)) {
            *f = PyFloat_AS_DOUBLE(r);
        } else {
            *i = PyLong_AsLongLong(r);
            if (*i == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                ok = false;
            }
            *f = static_cast<double>(*i);
        }
    }
    Py_DECREF(r);
    return ok;
}

// The operand's plan key: its dtype, or its Python scalar type (nullptr: not a fast operand).
PyObject* operand_key(PyObject* v) {
    if (is_array(v)) return slot(v, g.a_dtype);
    PyTypeObject* t = Py_TYPE(v);
    if (t == &PyFloat_Type || t == &PyLong_Type || t == &PyBool_Type)
        return reinterpret_cast<PyObject*>(t);
    return nullptr;
}

// Launch; on failure make the device's context current and launch once more (another
// library, or a new thread, may have left the primary context not current).  false with the
// Python error set if that fails too.
bool launch(const Plan* p, unsigned int grid, PyObject* stream, Params& params) {
    unsigned long long h = PyLong_AsUnsignedLongLong(slot(stream, g.s_handle));
    if (h == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return false;
    auto cs = reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(h));
    try {
        CUresult r = launcher_launch_packed(p->launcher, grid, cs, params.p);
        if (r == CUDA_SUCCESS) return true;
        PyObject* a = PyObject_CallNoArgs(p->activate);
        if (a == nullptr) return false;
        Py_DECREF(a);
        r = launcher_launch_packed(p->launcher, grid, cs, params.p);
        if (r == CUDA_SUCCESS) return true;
        throw_cuda(r, "cuLaunchKernel");
    } catch (...) {
        set_error_from_current_exception();
        return false;
    }
}

unsigned int ew_grid(long long n) {
    long long g2 = (n + 255) >> 8;
    return static_cast<unsigned int>(g2 < kGridMax ? g2 : kGridMax);
}

bool ensure_context(const Plan* p);

// Whether `out` can take the result of the plan's op in place, as the Python path
// would write it there itself: an array of the result's device, dtype and shape, C-contiguous,
// allocated for and last written on `stream`, and overlapping no input other than exactly
// (same start and element size; anything else is staged by the Python path).  Its address in
// *address.
bool out_fits(const Plan* p, PyObject* out, PyObject* rt, PyObject* shape, long long n,
              int nops, const std::uint64_t* addr, PyObject* stream, std::uint64_t* address) {
    if (!is_array(out) || slot(out, g.a_rt) != rt || slot(out, g.a_dtype) != p->out_dtype ||
        contiguous_size(out) != n)
        return false;
    int same = PyObject_RichCompareBool(slot(out, g.a_shape), shape, Py_EQ);
    if (same != 1) {
        PyErr_Clear();
        return false;
    }
    std::uint64_t o = operand_address(out, stream);
    if (o == 0 || cached_block_writer(slot(out, g.a_block)) != stream) return false;
    const auto out_end = o + static_cast<std::uint64_t>(n) * p->out_itemsize;
    for (int i = 0; i < nops; ++i) {
        if (p->conv[i] != kArray) continue;
        if (p->itemsizes[i] <= 0) return false;  // a plan without element sizes
        const auto end = addr[i] + static_cast<std::uint64_t>(n) * p->itemsizes[i];
        const bool overlap = addr[i] < out_end && o < end;
        if (overlap && !(addr[i] == o && p->itemsizes[i] == p->out_itemsize)) return false;
    }
    *address = o;
    return true;
}

// Large contiguous operands: the plan's C ABI entry over one dim of n elements (the kernels
// library coalesces a contiguous array's dims into one, so this is the kernel, and the
// arguments, of pygpukit's Python path).  False with the Python error set on failure.
bool call_large(const Plan* p, int kind, PyObject* stream, long long n, const std::uint64_t* addr,
                std::uint64_t out_addr, const double* f, const long long* iv) {
    if (!ensure_context(p)) return false;
    unsigned long long h = PyLong_AsUnsignedLongLong(slot(stream, g.s_handle));
    if (h == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return false;
    void* cs = reinterpret_cast<void*>(static_cast<std::uintptr_t>(h));
    const std::int64_t shape[1] = {n};
    std::int64_t st[3];
    const void* ptr[3];
    int code[3];
    for (int i = 0; i < 3; ++i) {
        const bool array = p->conv[i] == kArray && p->itemsizes[i] > 0;
        st[i] = p->itemsizes[i];
        ptr[i] = array ? reinterpret_cast<const void*>(static_cast<std::uintptr_t>(addr[i]))
                       : nullptr;
        code[i] = array ? p->codes[i] : 0;
    }
    const std::int64_t out_st[1] = {p->out_itemsize};
    void* out = reinterpret_cast<void*>(static_cast<std::uintptr_t>(out_addr));
    // A scalar operand as the Python path converts it: its (double, int64) pair of the compute
    // type, the double rounded to float32 first for float32 loops.
    const bool int_compute = p->scalar_type == 'q';
    auto sf = [&](int i) {
        if (int_compute) return 0.0;
        return p->scalar_type == 'f' ? static_cast<double>(static_cast<float>(f[i])) : f[i];
    };
    auto si = [&](int i) { return int_compute ? static_cast<std::int64_t>(iv[i]) : 0; };
    auto strides = [&](int i) { return ptr[i] != nullptr ? &st[i] : nullptr; };
    int status;
    const char* name;
    PyThreadState* ts = PyEval_SaveThread();
    if (kind == kUnary) {
        name = "pgk_unary";
        status = reinterpret_cast<UnaryFn>(p->large)(p->op, ptr[0], code[0], strides(0), out,
                                                     p->out_code, out_st, 1, shape,
                                                     p->compute_code, cs);
    } else if (kind == kWhere) {
        name = "pgk_where";
        status = reinterpret_cast<WhereFn>(p->large)(
            ptr[0], code[0], strides(0), ptr[1], code[1], strides(1), ptr[2], code[2], strides(2),
            out, p->out_code, out_st, 1, shape, p->compute_code, ptr[1] ? 0.0 : sf(1),
            ptr[1] ? 0 : si(1), ptr[2] ? 0.0 : sf(2), ptr[2] ? 0 : si(2), cs);
    } else if (kind == kAstype) {
        name = "pgk_copy";
        status = reinterpret_cast<CopyFn>(p->large)(ptr[0], code[0], strides(0), out,
                                                    p->out_code, out_st, 1, shape, cs);
    } else {  // kBinary, kReflected, kInplace (the operands in the op's order)
        name = "pgk_binary";
        const int scalar = ptr[0] == nullptr ? 0 : ptr[1] == nullptr ? 1 : -1;
        status = reinterpret_cast<BinaryFn>(p->large)(
            p->op, ptr[0], code[0], strides(0), ptr[1], code[1], strides(1), out, p->out_code,
            out_st, 1, shape, p->compute_code, scalar >= 0 ? sf(scalar) : 0.0,
            scalar >= 0 ? si(scalar) : 0, cs);
    }
    PyEval_RestoreThread(ts);
    if (status == 0) return true;
    PyObject* r = PyObject_CallFunction(p->check, "si", name, status);
    Py_XDECREF(r);
    if (!PyErr_Occurred()) PyErr_Format(PyExc_RuntimeError, "%s failed with status %d", name, status);
    return false;
}

// The fast path.  Returns a new array (or a new reference to `out_arg`, the out= array), or
// nullptr: with an error set (a real failure) or without (the Python path takes the call).
PyObject* run(FastOpObject* self, PyObject* const* args, PyObject* out_arg) {
    PyObject *x = nullptr, *k[3] = {nullptr, nullptr, nullptr};
    PyObject* ops[3] = {nullptr, nullptr, nullptr};
    int nops = kArity[self->kind];
    switch (self->kind) {
        case kBinary: ops[0] = args[0]; ops[1] = args[1]; break;
        case kInplace:
            ops[0] = args[0];
            ops[1] = args[1];
            if (!is_array(args[0])) return nullptr;
            out_arg = args[0];
            break;
        case kReflected: ops[0] = args[1]; ops[1] = args[0]; break;
        case kWhere: ops[0] = args[0]; ops[1] = args[1]; ops[2] = args[2]; break;
        case kAstype: ops[0] = args[0]; k[1] = args[1]; nops = 1; break;
        default: ops[0] = args[0]; break;
    }
    for (int i = 0; i < nops; ++i) {
        k[i] = operand_key(ops[i]);
        if (k[i] == nullptr) return nullptr;
        if (x == nullptr && is_array(ops[i])) x = ops[i];
    }
    if (x == nullptr || (self->kind == kWhere && x != ops[0])) return nullptr;
    PyObject* rt = slot(x, g.a_rt);
    if (rt == nullptr) return nullptr;
    const Plan* found = find_plan(self, rt, k[0], k[1], k[2]);
    if (found == nullptr) return nullptr;
    HeldPlan held(found);
    const Plan* p = &held.plan;
    long long n = contiguous_size(x);
    if (n <= 0) return nullptr;
    PyObject* shape = slot(x, g.a_shape);
    long long rows = 0, cols = 0;
    if (self->kind == kRowNorm) {
        Py_ssize_t nd = PyTuple_GET_SIZE(shape);
        if (nd == 0) return nullptr;
        cols = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, nd - 1));
        rows = n / cols;
        if (cols > p->max_n || n > p->max_total) return nullptr;
    } else if (n > p->max_n && p->large == nullptr) {
        return nullptr;
    }
    const bool large = self->kind != kRowNorm && n > p->max_n;
    double f[3];
    long long iv[3];
    for (int i = 0; i < nops; ++i) {
        if (p->conv[i] == kArray) {
            PyObject* v = ops[i];
            if (v != x && (slot(v, g.a_rt) != rt || contiguous_size(v) != n ||
                           PyObject_RichCompareBool(slot(v, g.a_shape), shape, Py_EQ) != 1)) {
                PyErr_Clear();
                return nullptr;
            }
        } else if (!convert_scalar(p, p->conv[i], ops[i], &f[i], &iv[i])) {
            return nullptr;
        }
    }
    bool failed;
    PyObject* stream = current_stream(p, &failed);
    if (stream == nullptr) return nullptr;  // failed: the error is set
    Ref stream_ref(stream);
    std::uint64_t addr[3] = {0, 0, 0};
    for (int i = 0; i < nops; ++i) {
        if (p->conv[i] == kArray && (addr[i] = operand_address(ops[i], stream)) == 0)
            return nullptr;
    }
    PyObject* out_shape = shape;
    if (self->kind == kReduce) {
        out_shape = PyTuple_New(0);  // the empty tuple singleton
        if (out_shape == nullptr) return nullptr;
        Py_DECREF(out_shape);  // immortal in practice; new_result takes its own reference
    }
    std::uint64_t out_addr = 0;
    PyObject* out;
    if (out_arg != nullptr) {
        if (!out_fits(p, out_arg, rt, shape, n, nops, addr, stream, &out_addr))
            return nullptr;
        out = Py_NewRef(out_arg);
    } else {
        out = new_result(p, rt, out_shape, x, self->kind == kReduce ? 1 : n, stream, &out_addr);
        if (out == nullptr) return nullptr;
        for (int i = 0; i < nops; ++i) {
            if (p->conv[i] == kArray && !still_at(ops[i], addr[i], stream)) {
                Py_DECREF(out);  // an operand was spilled meanwhile: the Python path
                return nullptr;
            }
        }
    }
    if (large) {
        if (!call_large(p, self->kind, stream, n, addr, out_addr, f, iv)) {
            Py_DECREF(out);
            return nullptr;
        }
        return out;
    }
    Params prm;
    unsigned int grid = ew_grid(n);
    switch (self->kind) {
        case kBinary:
        case kReflected:
        case kInplace:
        case kUnary:
        case kWhere: {
            int ew = self->kind == kUnary ? kEwUnary : self->kind == kWhere ? kEwWhere : kEwBinary;
            prm.i32(ew);
            prm.i32(p->op);
            prm.ptr(out_addr);
            prm.i32(p->out_code);
            double sv[2] = {0.0, 0.0};
            long long si[2] = {0, 0};
            int first = self->kind == kWhere ? 1 : 0;  // where: the scalars are a and b
            for (int i = 0; i < 3; ++i) {
                prm.ptr(i < nops ? addr[i] : 0);
                prm.i32(i < nops ? p->codes[i] : 0);
                prm.i64(i < nops ? 1 : 0);  // as pygpukit._small passes them
                if (i < nops && p->conv[i] != kArray && i - first >= 0 && i - first < 2) {
                    sv[i - first] = f[i];
                    si[i - first] = iv[i];
                }
            }
            prm.scalar(p->scalar_type, sv[0], si[0]);
            prm.scalar(p->scalar_type, sv[1], si[1]);
            prm.i64(n);
            break;
        }
        case kAstype:
            prm.ptr(out_addr);
            prm.i32(p->out_code);
            prm.ptr(addr[0]);
            prm.i32(p->codes[0]);
            prm.i64(1);
            prm.i64(n);
            break;
        case kReduce:
            grid = 1;
            prm.i32(p->op);
            prm.ptr(addr[0]);
            prm.i32(p->codes[0]);
            prm.i64(n);
            prm.ptr(out_addr);
            prm.i32(p->out_code);
            prm.f64(0.0);
            break;
        default:  // kRowNorm
            grid = static_cast<unsigned int>(rows);
            prm.i32(p->op);
            prm.ptr(addr[0]);
            prm.i32(p->codes[0]);
            prm.i64(cols);
            prm.ptr(out_addr);
            prm.ptr(0);
            prm.ptr(0);
            prm.f64(0.0);
            break;
    }
    if (!launch(p, grid, stream, prm)) {
        Py_DECREF(out);
        return nullptr;
    }
    return out;
}


// The operand's two dims as a GEMM reads them: 0 row-major (unit stride along the last dim),
// 1 column-major (unit stride along the first), -1 neither.  Leading dimension in *ld.
int layout_2d(PyObject* v, long long itemsize, long long* rows, long long* cols, long long* ld) {
    PyObject* shape = slot(v, g.a_shape);
    PyObject* strides = slot(v, g.a_strides);
    if (shape == nullptr || strides == nullptr || PyTuple_GET_SIZE(shape) != 2) return -1;
    *rows = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, 0));
    *cols = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, 1));
    long long s0 = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, 0));
    long long s1 = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, 1));
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    if (*rows <= 0 || *cols <= 0) return -1;
    if (slot(v, g.a_contig) == Py_True) {
        *ld = *cols;
        return 0;
    }
    if (s0 == itemsize && s1 == *rows * itemsize) {  // the transpose of a contiguous matrix
        *ld = *rows;
        return 1;
    }
    return -1;
}

// a @ b (kMatmul) or x @ weight.T + bias (kLinear) for 2-D operands of the plan's dtype.
PyObject* run_product(FastOpObject* self, PyObject* const* args, Py_ssize_t nargs) {
    PyObject* a = args[0];
    PyObject* b = args[1];
    PyObject* bias = nargs > 2 && args[2] != Py_None ? args[2] : nullptr;
    if (!is_array(a) || !is_array(b) || (bias != nullptr && !is_array(bias))) return nullptr;
    PyObject* rt = slot(a, g.a_rt);
    if (rt == nullptr || slot(b, g.a_rt) != rt || (bias && slot(bias, g.a_rt) != rt))
        return nullptr;
    PyObject* dt = slot(a, g.a_dtype);
    if (slot(b, g.a_dtype) != dt || (bias && slot(bias, g.a_dtype) != dt)) return nullptr;
    const Plan* found = find_plan(self, rt, dt, nullptr, nullptr);
    if (found == nullptr || found->gemm == nullptr) return nullptr;
    HeldPlan held(found);
    const Plan* p = &held.plan;
    long long es = p->out_itemsize, m, k, rb, cb, lda, ldb;
    if (layout_2d(a, es, &m, &k, &lda) != 0) return nullptr;
    int lb = layout_2d(b, es, &rb, &cb, &ldb);
    if (lb < 0) return nullptr;
    long long n;
    int b_col_major;
    if (self->kind == kLinear) {  // weight (n, k): B = weight.T, column-major when weight is C
        if (cb != k) return nullptr;
        n = rb;
        b_col_major = lb == 0 ? 1 : 0;
    } else {
        if (rb != k) return nullptr;
        n = cb;
        b_col_major = lb;
    }
    if (bias != nullptr && (contiguous_size(bias) != n ||
                            PyTuple_GET_SIZE(slot(bias, g.a_shape)) != 1))
        return nullptr;
    bool failed;
    PyObject* stream = current_stream(p, &failed);
    if (stream == nullptr) return nullptr;
    Ref stream_ref(stream);
    std::uint64_t pa = operand_address(a, stream), pb = operand_address(b, stream);
    std::uint64_t pbias = bias != nullptr ? operand_address(bias, stream) : 0;
    if (pa == 0 || pb == 0 || (bias != nullptr && pbias == 0)) return nullptr;
    PyObject* shape = Py_BuildValue("(LL)", m, n);
    if (shape == nullptr) return nullptr;
    std::uint64_t pc = 0;
    PyObject* out = new_result(p, rt, shape, nullptr, m * n, stream, &pc);
    Py_DECREF(shape);
    if (out == nullptr) return nullptr;
    GemmDesc desc{};
    desc.m = m;
    desc.n = n;
    desc.k = k;
    desc.batch = 1;
    desc.dtype = p->out_code;
    desc.precision = p->precision;
    desc.activation = 0;
    desc.b_col_major = b_col_major;
    desc.a = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(pa));
    desc.lda = m > 1 ? lda : k;
    desc.b = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(pb));
    desc.ldb = b_col_major ? (n > 1 ? ldb : k) : (k > 1 ? ldb : n);
    desc.c = reinterpret_cast<void*>(static_cast<std::uintptr_t>(pc));
    desc.ldc = n;
    desc.bias = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(pbias));
    std::uint64_t ws_bytes = 0;
    int status = p->gemm_workspace(&desc, &ws_bytes);
    PyObject* workspace = nullptr;
    void* ws = nullptr;
    if (status == 0 && ws_bytes != 0) {
        std::uint64_t addr = 0;
        workspace = block_cache_malloc(p->cache, p->allocator,
                                       static_cast<std::int64_t>(ws_bytes), stream);
        if (workspace == nullptr) {
            workspace = PyObject_CallMethod(p->allocator, "malloc", "KO",
                                            static_cast<unsigned long long>(ws_bytes), stream);
            if (workspace == nullptr || !is_cached_block(workspace)) {
                if (workspace != nullptr)
                    PyErr_SetString(PyExc_TypeError, "malloc must return a CachedBlock");
                Py_XDECREF(workspace);
                Py_DECREF(out);
                return nullptr;
            }
        }
        addr = cached_block_address(workspace);
        ws = reinterpret_cast<void*>(static_cast<std::uintptr_t>(addr));
    }
    if (!still_at(a, pa, stream) || !still_at(b, pb, stream) || !still_at(bias, pbias, stream)) {
        Py_XDECREF(workspace);  // an operand was spilled by the allocations: the Python path
        Py_DECREF(out);
        return nullptr;
    }
    if (status == 0) {
        if (!ensure_context(p)) {
            Py_XDECREF(workspace);
            Py_DECREF(out);
            return nullptr;
        }
        unsigned long long h = PyLong_AsUnsignedLongLong(slot(stream, g.s_handle));
        if (h == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
            Py_XDECREF(workspace);
            Py_DECREF(out);
            return nullptr;
        }
        PyThreadState* ts = PyEval_SaveThread();
        status = p->gemm(&desc, ws, ws_bytes,
                         reinterpret_cast<void*>(static_cast<std::uintptr_t>(h)));
        PyEval_RestoreThread(ts);
    }
    Py_XDECREF(workspace);  // back in the cache: reused only by later work of this stream
    if (status != 0) {
        Py_DECREF(out);
        PyObject* r = PyObject_CallFunction(p->check, "si", "pgk_gemm", status);
        Py_XDECREF(r);
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_RuntimeError, "pgk_gemm failed with status %d", status);
        return nullptr;
    }
    return out;
}


// Makes the device's context current if it is not (the JIT and product paths run the kernel
// through the current context).  false with the Python error set if that fails.
bool ensure_context(const Plan* p) {
    CUcontext current = nullptr;
    auto get_current = driver().cuCtxGetCurrent;
    if (get_current != nullptr && get_current(&current) == CUDA_SUCCESS &&
        reinterpret_cast<std::uint64_t>(current) == p->context)
        return true;
    PyObject* r = PyObject_CallNoArgs(p->activate);
    if (r == nullptr) return false;
    Py_DECREF(r);
    return true;
}

bool same_name(PyObject* a, PyObject* b) {
    return a == b || PyUnicode_Compare(a, b) == 0;
}

// A JIT kernel's call: every parameter given once (by position or name), arrays of the
// kernel's device and dtype allocated for (and last written on) the current stream, the grid
// from the size parameter.  Returns a new reference to None once launched.
PyObject* run_jit(FastOpObject* self, PyObject* const* args, Py_ssize_t nargs,
                  PyObject* kwnames) {
    Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
    const Plan* found = find_plan(self, Py_None, nullptr, nullptr, nullptr);
    if (found == nullptr || found->names == nullptr || nargs + nkw != found->nparams ||
        found->nparams > 32)
        return nullptr;
    HeldPlan held(found);
    const Plan* p = &held.plan;
    PyObject* values[32] = {};
    for (Py_ssize_t i = 0; i < nargs; ++i) values[i] = args[i];
    for (Py_ssize_t j = 0; j < nkw; ++j) {
        PyObject* key = PyTuple_GET_ITEM(kwnames, j);
        int at = -1;
        for (int i = static_cast<int>(nargs); i < p->nparams; ++i) {
            if (same_name(PyTuple_GET_ITEM(p->names, i), key)) {
                at = i;
                break;
            }
        }
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return nullptr;
        }
        if (at < 0 || values[at] != nullptr) return nullptr;  // unknown or given twice
        values[at] = args[nargs + j];
    }
    PyObject* size = values[p->size_index];
    if (!PyLong_CheckExact(size)) return nullptr;
    long long n = PyLong_AsLongLong(size);
    if (n < 0 || (n == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return nullptr;
    }
    bool failed;
    PyObject* stream = current_stream(p, &failed);
    if (stream == nullptr) return nullptr;
    Ref stream_ref(stream);
    int ntypes = 0;
    const char* types = launcher_arg_types(p->launcher, &ntypes);
    if (ntypes != p->nparams) return nullptr;
    Params prm;
    for (int i = 0; i < p->nparams; ++i) {
        PyObject* v = values[i];
        unsigned char* slot8 = prm.next();
        if (p->param_kinds[i] == 0) {
            if (!launcher_pack_arg(types[i], v, slot8)) return nullptr;
            continue;
        }
        PyObject* want = PyTuple_GET_ITEM(p->pointees, i);
        if (!is_array(v) || slot(v, g.a_rt) != p->runtime ||
            (want != Py_None && slot(v, g.a_dtype) != want))
            return nullptr;
        std::uint64_t address = operand_address(v, stream);
        if (address == 0) return nullptr;
        if (p->param_kinds[i] == 2 && cached_block_writer(slot(v, g.a_block)) != stream)
            return nullptr;  // last written elsewhere: the Python path records this write
        std::memcpy(slot8, &address, 8);
    }
    long long blocks = n / p->block_size + (n % p->block_size != 0);
    if (blocks < 1) blocks = 1;
    if (blocks > 0x7FFFFFFFLL) return nullptr;
    if (!ensure_context(p)) return nullptr;
    if (!launch(p, static_cast<unsigned int>(blocks), stream, prm)) return nullptr;
    Py_RETURN_NONE;
}

// Whether every keyword of a matmul / linear call is one of its parameters left at None (the
// defaults), but linear's bias=, returned in *bias (nullptr when absent or None).
bool product_keywords_default(int kind, PyObject* const* values, PyObject* kwnames,
                              PyObject** bias) {
    static const char* const matmul_names[] = {"out", "precision", "use_tf32", "scale_a",
                                               "scale_b", "out_dtype", nullptr};
    static const char* const linear_names[] = {"activation", "precision", "scale_x",
                                               "scale_weight", "out_dtype", nullptr};
    const char* const* names = kind == kLinear ? linear_names : matmul_names;
    *bias = nullptr;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(kwnames); ++j) {
        PyObject* key = PyTuple_GET_ITEM(kwnames, j);
        if (kind == kLinear && PyUnicode_CompareWithASCIIString(key, "bias") == 0) {
            *bias = values[j] != Py_None ? values[j] : nullptr;
            continue;
        }
        if (values[j] != Py_None) return false;
        bool known = false;
        for (const char* const* name = names; *name != nullptr && !known; ++name)
            known = PyUnicode_CompareWithASCIIString(key, *name) == 0;
        if (!known) return false;
    }
    return true;
}

PyObject* fastop_vectorcall(PyObject* callable, PyObject* const* args, std::size_t nargsf,
                            PyObject* kwnames) {
    auto* self = reinterpret_cast<FastOpObject*>(callable);
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (self->kind == kJit) {
        if (g.ready) {
            PyObject* r = run_jit(self, args, n, kwnames);
            if (r != nullptr || PyErr_Occurred()) return r;
        }
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    }
    bool product = self->kind == kMatmul || self->kind == kLinear;
    Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject* out = nullptr;  // the elementwise functions' out= (None: as if not given)
    if (nkw == 1 && n == kArity[self->kind] &&
        (self->kind == kBinary || self->kind == kUnary || self->kind == kWhere) &&
        PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "out") == 0) {
        out = args[n] != Py_None ? args[n] : nullptr;
        nkw = 0;
    }
    // Products: keywords left at their defaults (None) keep the call on the fast path, and
    // linear's bias= is its third argument; any other keyword (a precision, an out array, FP8
    // scales, an unknown name) goes to the Python function, which handles or refuses it.
    PyObject* const* pargs = args;
    PyObject* with_bias[3];
    Py_ssize_t pn = n;
    if (product && nkw > 0 && n == 2 && product_keywords_default(self->kind, args + n, kwnames,
                                                                 &with_bias[2])) {
        nkw = 0;
        if (with_bias[2] != nullptr) {
            with_bias[0] = args[0];
            with_bias[1] = args[1];
            pargs = with_bias;
            pn = 3;
        }
    }
    if (g.ready && (pn == kArity[self->kind] || (self->kind == kLinear && pn == 3)) && nkw == 0) {
        PyObject* r = product ? run_product(self, pargs, pn) : run(self, args, out);
        if (r != nullptr || PyErr_Occurred()) return r;
    }
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

PyObject* fastop_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    static const char* kw[] = {"kind", "name", "fallback", "planner", nullptr};
    int kind;
    PyObject *name, *fallback, *planner;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iUOO:FastOp", const_cast<char**>(kw), &kind,
                                     &name, &fallback, &planner))
        return nullptr;
    if (kind < 0 || kind >= kNumKinds)
        return PyErr_Format(PyExc_ValueError, "kind must be in [0, %d), got %d", kNumKinds, kind);
    if (!PyCallable_Check(fallback) || !PyCallable_Check(planner))
        return PyErr_Format(PyExc_TypeError, "fallback and planner must be callable");
    auto* self = reinterpret_cast<FastOpObject*>(type->tp_alloc(type, 0));
    if (self == nullptr) return nullptr;
    self->vectorcall = &fastop_vectorcall;
    self->kind = kind;
    Py_INCREF(name);
    self->name = name;
    Py_INCREF(fallback);
    self->fallback = fallback;
    Py_INCREF(planner);
    self->planner = planner;
    self->dict = nullptr;
    self->plans = new std::unordered_map<PlanKey, Plan, PlanKeyHash>();
    return reinterpret_cast<PyObject*>(self);
}

int fastop_traverse(PyObject* o, visitproc visit, void* arg) {
    auto* self = reinterpret_cast<FastOpObject*>(o);
    Py_VISIT(self->fallback);
    Py_VISIT(self->planner);
    Py_VISIT(self->dict);
    if (self->plans != nullptr)
        for (auto& kv : *self->plans) Py_VISIT(kv.second.owner);
    Py_VISIT(Py_TYPE(o));
    return 0;
}

int fastop_clear(PyObject* o) {
    auto* self = reinterpret_cast<FastOpObject*>(o);
    clear_plans(self);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->planner);
    Py_CLEAR(self->dict);
    Py_CLEAR(self->name);
    return 0;
}

void fastop_dealloc(PyObject* o) {
    PyTypeObject* tp = Py_TYPE(o);
    PyObject_GC_UnTrack(o);
    fastop_clear(o);
    delete reinterpret_cast<FastOpObject*>(o)->plans;
    tp->tp_free(o);
    Py_DECREF(tp);
}

// A method of GPUArray: `a.sum` gives a bound method (the method-descriptor flag lets
// `a.sum()` and operators call it with `a` first, unbound).
PyObject* fastop_descr_get(PyObject* self, PyObject* obj, PyObject*) {
    if (obj == nullptr || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

PyObject* fastop_clear_plans(PyObject* o, PyObject*) {
    clear_plans(reinterpret_cast<FastOpObject*>(o));
    Py_RETURN_NONE;
}

PyObject* fastop_get_plans(PyObject* o, void*) {
    return PyLong_FromSize_t(reinterpret_cast<FastOpObject*>(o)->plans->size());
}

PyObject* fastop_repr(PyObject* o) {
    auto* self = reinterpret_cast<FastOpObject*>(o);
    return PyUnicode_FromFormat("<FastOp %U of %R>", self->name, self->fallback);
}

PyObject* make_fastop_type(PyObject* module) {
    static PyMemberDef members[] = {
        {"__vectorcalloffset__", T_PYSSIZET,
         static_cast<Py_ssize_t>(offsetof(FastOpObject, vectorcall)), READONLY, nullptr},
        {"__dictoffset__", T_PYSSIZET, static_cast<Py_ssize_t>(offsetof(FastOpObject, dict)),
         READONLY, nullptr},
        {"kind", T_INT, static_cast<Py_ssize_t>(offsetof(FastOpObject, kind)), READONLY,
         "What the op computes (pygpukit._fastpath.Kind)."},
        {"fallback", T_OBJECT, static_cast<Py_ssize_t>(offsetof(FastOpObject, fallback)),
         READONLY, "The Python function called when the fast path does not apply."},
        {nullptr, 0, 0, 0, nullptr}};
    static PyMethodDef methods[] = {
        {"clear_plans", &fastop_clear_plans, METH_NOARGS,
         "clear_plans($self, /)\n--\n\nForget the cached plans (they are made again)."},
        {nullptr, nullptr, 0, nullptr}};
    static PyGetSetDef getset[] = {
        {"plan_count", &fastop_get_plans, nullptr, "Plans cached (diagnostics).", nullptr},
        {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
        {nullptr, nullptr, nullptr, nullptr, nullptr}};
    static PyType_Slot slots[] = {
        {Py_tp_new, reinterpret_cast<void*>(&fastop_new)},
        {Py_tp_dealloc, reinterpret_cast<void*>(&fastop_dealloc)},
        {Py_tp_traverse, reinterpret_cast<void*>(&fastop_traverse)},
        {Py_tp_clear, reinterpret_cast<void*>(&fastop_clear)},
        {Py_tp_call, reinterpret_cast<void*>(&PyVectorcall_Call)},
        {Py_tp_descr_get, reinterpret_cast<void*>(&fastop_descr_get)},
        {Py_tp_members, members},
        {Py_tp_methods, methods},
        {Py_tp_getset, getset},
        {Py_tp_repr, reinterpret_cast<void*>(&fastop_repr)},
        {Py_tp_doc, const_cast<char*>(
                        "FastOp(kind, name, fallback, planner)\n--\n\n"
                        "A pygpukit op with a C fast path for small contiguous operands; "
                        "calls `fallback` whenever the fast path does not apply.")},
        {0, nullptr}};
    static PyType_Spec spec = {
        "pygpukit_driver._driver.FastOp", static_cast<int>(sizeof(FastOpObject)), 0,
        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
            Py_TPFLAGS_METHOD_DESCRIPTOR,
        slots};
    return PyType_FromModuleAndSpec(module, &spec, nullptr);
}

PyMethodDef g_configure_def = {
    "configure_fast_ops", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&configure)),
    METH_FASTCALL,
    "configure_fast_ops(array_type, stream_type, thread_state, /)\n--\n\n"
    "Tell FastOp where GPUArray's and Stream's slots are and where the per-thread stream "
    "stacks live (pygpukit does this at import)."};

}  // namespace

void register_fast_ops(py::module_& m) {
    PyObject* t = make_fastop_type(m.ptr());
    if (t == nullptr) throw py::error_already_set();
    g_fastop_type = reinterpret_cast<PyTypeObject*>(t);
    m.add_object("FastOp", py::reinterpret_steal<py::object>(t));
    PyObject* f = PyCFunction_NewEx(&g_configure_def, nullptr, m.attr("__name__").ptr());
    if (f == nullptr) throw py::error_already_set();
    m.add_object("configure_fast_ops", py::reinterpret_steal<py::object>(f));
}

}  // namespace pgk
