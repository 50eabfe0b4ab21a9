// Module (cuModuleLoadDataEx with JIT logs), Function, launch_kernel.
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "context.hpp"
#include "loader.hpp"
#include "pyutil.hpp"
#include "resources.hpp"

#include <structmember.h>

namespace py = pybind11;

namespace pgk {
namespace {

constexpr std::size_t kJitLogSize = 16384;

// Shared by a Module and the Functions taken from it, so a Function can tell its module closed.
struct ModuleState {
    mutable std::shared_mutex mu;
    CUmodule module = nullptr;
    CUcontext ctx = nullptr;       // the context the module was loaded in
    PrimaryContextRef ref;
    std::shared_ptr<void> owner;   // keeps a green context alive
    std::string info_log;

    CUmodule get_locked() const {
        if (module == nullptr) throw py::value_error("Module is closed");
        return module;
    }
    void destroy_locked() noexcept {
        if (module == nullptr) return;
        {
            // cuModuleUnload acts on the module's context: make it current for the call.
            ScopedCurrent current(ctx != nullptr ? ctx : ref.context());
            CU_NOINIT(cuModuleUnload).quiet(module);
        }
        module = nullptr;
        ref.release();
        owner.reset();
    }
    ~ModuleState() { destroy_locked(); }
};

std::string trim_log(const char* buf, std::size_t cap) {
    std::size_t n = strnlen(buf, cap);
    std::string s(buf, n);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
    return s;
}

class Function {
public:
    Function(std::shared_ptr<ModuleState> state, CUfunction fn, std::string name)
        : state_(std::move(state)), fn_(fn), name_(std::move(name)) {}

    std::shared_lock<std::shared_mutex> use() const {
        std::shared_lock<std::shared_mutex> lock(state_->mu);
        state_->get_locked();  // throws if the module was closed
        return lock;
    }
    CUfunction raw() const { return fn_; }
    std::uintptr_t handle() const {
        auto lock = use();
        return reinterpret_cast<std::uintptr_t>(fn_);
    }
    int get_attribute(int attr) const {
        auto lock = use();
        int v = 0;
        CU(cuFuncGetAttribute)(&v, attr, fn_);
        return v;
    }
    void set_attribute(int attr, int value) const {
        auto lock = use();
        CU(cuFuncSetAttribute)(fn_, attr, value);
    }
    const std::string& name() const { return name_; }
    int max_active_blocks(int block_size, std::size_t smem) const {
        auto lock = use();
        int n = 0;
        CU(cuOccupancyMaxActiveBlocksPerMultiprocessor)(&n, fn_, block_size, smem);
        return n;
    }
    std::pair<int, int> max_potential_block_size(std::size_t smem, int limit) const {
        auto lock = use();
        int grid = 0, block = 0;
        CU(cuOccupancyMaxPotentialBlockSize)(&grid, &block, fn_, nullptr, smem, limit);
        return {grid, block};
    }
    const std::shared_ptr<ModuleState>& state() const { return state_; }

private:
    std::shared_ptr<ModuleState> state_;
    CUfunction fn_;
    std::string name_;
};

class Module {
public:
    static std::unique_ptr<Module> load_data(py::handle image_obj) {
        std::vector<char> image;
        {
            BufferView view(image_obj, "image", BufferView::Mode::ReadAnyContiguous);
            if (view.size() == 0) throw py::value_error("image is empty");
            // Copy and NUL-terminate: PTX must be a C string; cubin/fatbin ignore the extra byte.
            image.resize(view.size() + 1);
            std::memcpy(image.data(), view.data(), view.size());
            image[view.size()] = '\0';
        }
        auto state = std::make_shared<ModuleState>();
        std::vector<char> info(kJitLogSize, '\0'), error(kJitLogSize, '\0');
        CUresult r;
        {
            py::gil_scoped_release nogil;
            PrimaryContextRef ref = PrimaryContextRef::retain_current();
            state->ctx = current_context();
            state->owner = current_context_owner();
            CUjit_option opts[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                   CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
            void* vals[] = {info.data(), reinterpret_cast<void*>(static_cast<std::uintptr_t>(kJitLogSize - 1)),
                            error.data(), reinterpret_cast<void*>(static_cast<std::uintptr_t>(kJitLogSize - 1))};
            r = CU(cuModuleLoadDataEx).raw(&state->module, image.data(), 4u, opts, vals);
            if (r == CUDA_SUCCESS) state->ref = std::move(ref);
        }
        if (r != CUDA_SUCCESS) {
            std::string log = trim_log(error.data(), kJitLogSize);
            std::string detail;
            if (!log.empty()) detail = "JIT error log:\n" + log;
            state->module = nullptr;
            throw_cuda(r, "cuModuleLoadDataEx", detail);
        }
        state->info_log = trim_log(info.data(), kJitLogSize);
        return std::unique_ptr<Module>(new Module(std::move(state)));
    }

    Function get_function(const std::string& name) const {
        std::shared_lock<std::shared_mutex> lock(state_->mu);
        CUfunction fn = nullptr;
        CUresult r = CU(cuModuleGetFunction).raw(&fn, state_->get_locked(), name.c_str());
        if (r != CUDA_SUCCESS) throw_cuda(r, "cuModuleGetFunction", "function '" + name + "'");
        return Function(state_, fn, name);
    }

    py::tuple get_global(const std::string& name) const {
        std::shared_lock<std::shared_mutex> lock(state_->mu);
        CUdeviceptr p = 0;
        std::size_t size = 0;
        CUresult r = CU(cuModuleGetGlobal).raw(&p, &size, state_->get_locked(), name.c_str());
        if (r != CUDA_SUCCESS) throw_cuda(r, "cuModuleGetGlobal", "global '" + name + "'");
        return py::make_tuple(static_cast<std::uint64_t>(p), size);
    }

    std::uintptr_t handle() const {
        std::shared_lock<std::shared_mutex> lock(state_->mu);
        return reinterpret_cast<std::uintptr_t>(state_->get_locked());
    }
    bool closed() const {
        std::shared_lock<std::shared_mutex> lock(state_->mu);
        return state_->module == nullptr;
    }
    const std::string& info_log() const { return state_->info_log; }

    void close() {
        py::gil_scoped_release nogil;
        std::unique_lock<std::shared_mutex> lock(state_->mu);
        state_->destroy_locked();
    }
    ~Module() {
        std::unique_lock<std::shared_mutex> lock(state_->mu);
        state_->destroy_locked();
    }

private:
    explicit Module(std::shared_ptr<ModuleState> s) : state_(std::move(s)) {}
    std::shared_ptr<ModuleState> state_;
};

// The parameter buffers of a launch_kernel call: one buffer per parameter.
struct PackedArgs {
    std::vector<py::object> items;  // keep the items alive while their buffers are held
    std::vector<BufferView> views;
    std::vector<void*> params;

    explicit PackedArgs(py::handle args_obj) {
        if (PyUnicode_Check(args_obj.ptr()) || PyBytes_Check(args_obj.ptr()) ||
            !PySequence_Check(args_obj.ptr()))
            throw py::type_error("args must be a sequence of buffer-protocol objects (e.g. "
                                 "[ctypes.c_uint64(ptr), ctypes.c_int32(n)]), got " +
                                 type_name(args_obj));
        py::sequence seq = py::reinterpret_borrow<py::sequence>(args_obj);
        std::size_t n = seq.size();
        items.reserve(n);
        views.reserve(n);
        params.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            std::string what = "args[" + std::to_string(i) + "]";
            items.push_back(seq[i]);
            views.emplace_back(items.back(), what.c_str(), BufferView::Mode::ReadAnyContiguous);
            if (views.back().size() == 0)
                throw py::value_error(what + " is an empty buffer; each argument's bytes are the "
                                      "parameter value");
            params.push_back(views.back().data());
        }
    }
    void** data() { return params.empty() ? nullptr : params.data(); }
};

// Launch attributes for cuLaunchKernelEx (at most 4: cluster, cooperative, priority,
// programmatic stream serialization).
struct LaunchAttrs {
    CUlaunchAttribute attrs[4];
    unsigned int count = 0;

    LaunchAttrs(py::handle cluster, py::handle cooperative, py::handle priority,
                py::handle programmatic = py::none()) {
        std::memset(attrs, 0, sizeof(attrs));
        if (!cluster.is_none()) {
            auto dims = to_dim3(cluster, "cluster");
            CUlaunchAttribute& a = attrs[count++];
            a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
            a.value.clusterDim.x = dims[0];
            a.value.clusterDim.y = dims[1];
            a.value.clusterDim.z = dims[2];
        }
        if (!cooperative.is_none() && PyObject_IsTrue(cooperative.ptr()) == 1) {
            CUlaunchAttribute& a = attrs[count++];
            a.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
            a.value.cooperative = 1;
        }
        if (!priority.is_none()) {
            CUlaunchAttribute& a = attrs[count++];
            a.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
            a.value.priority =
                static_cast<int>(to_int_in(priority, "priority", -0x80000000LL, 0x7FFFFFFFLL));
        }
        // Programmatic dependent launch (compute capability 9.0+): the kernel may start while
        // the previous kernel of the stream finishes; it must wait for it (griddepcontrol.wait)
        // before touching memory.
        if (!programmatic.is_none() && PyObject_IsTrue(programmatic.ptr()) == 1) {
            CUlaunchAttribute& a = attrs[count++];
            a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            a.value.programmaticStreamSerializationAllowed = 1;
        }
    }
};

void launch_kernel(const Function& function, py::handle grid_obj, py::handle block_obj,
                   py::handle args_obj, py::handle shared_obj, py::handle stream_obj) {
    auto grid = to_dim3(grid_obj, "grid");
    auto block = to_dim3(block_obj, "block");
    auto shared = static_cast<unsigned int>(to_int_in(shared_obj, "shared_mem", 0, 0xFFFFFFFFLL));
    std::shared_lock<std::shared_mutex> sguard;
    CUstream stream = lock_stream_arg(stream_obj, "stream", sguard);
    PackedArgs args(args_obj);

    // Take the module lock only with the GIL released, and drop it before taking the GIL back:
    // no thread may wait for the GIL while holding an object lock.
    py::gil_scoped_release nogil;
    auto lock = function.use();
    CU(cuLaunchKernel)(function.raw(), grid[0], grid[1], grid[2], block[0], block[1], block[2],
                       shared, stream, args.data(), nullptr);
}

void launch_kernel_ex(const Function& function, py::handle grid_obj, py::handle block_obj,
                      py::handle args_obj, py::handle shared_obj, py::handle stream_obj,
                      py::handle cluster, py::handle cooperative, py::handle priority) {
    auto grid = to_dim3(grid_obj, "grid");
    auto block = to_dim3(block_obj, "block");
    auto shared = static_cast<unsigned int>(to_int_in(shared_obj, "shared_mem", 0, 0xFFFFFFFFLL));
    std::shared_lock<std::shared_mutex> sguard;
    CUstream stream = lock_stream_arg(stream_obj, "stream", sguard);
    LaunchAttrs attrs(cluster, cooperative, priority);
    PackedArgs args(args_obj);
    CUlaunchConfig cfg{};
    cfg.gridDimX = grid[0];
    cfg.gridDimY = grid[1];
    cfg.gridDimZ = grid[2];
    cfg.blockDimX = block[0];
    cfg.blockDimY = block[1];
    cfg.blockDimZ = block[2];
    cfg.sharedMemBytes = shared;
    cfg.hStream = stream;
    cfg.attrs = attrs.count ? attrs.attrs : nullptr;
    cfg.numAttrs = attrs.count;
    py::gil_scoped_release nogil;
    auto lock = function.use();
    CU(cuLaunchKernelEx)(&cfg, function.raw(), args.data(), nullptr);
}

// ---------------------------------------------------------------------------------------------
// Launcher: a prepared launch (function, grid, block, parameter types, stream). Calling it
// packs Python ints/floats straight into parameter slots and calls cuLaunchKernel(Ex). It is a
// plain CPython type with vectorcall so the hot path skips pybind11's dispatcher.
// ---------------------------------------------------------------------------------------------
constexpr int kMaxLauncherArgs = 64;

struct LauncherObject {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject* function_obj;  // the Function (strong reference)
    PyObject* stream_obj;    // the Stream or int given (strong reference)
    PyObject* arg_types;     // str
    const Function* function;
    Stream* stream;          // when stream_obj is a Stream
    CUstream raw_stream;     // when it is an int handle
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int shared;
    int nargs;
    char types[kMaxLauncherArgs];
    CUlaunchAttribute attrs[4];
    unsigned int nattrs;
};

PyTypeObject* g_launcher_type = nullptr;

int type_size(char c) {
    switch (c) {
        case 'P': case 'Q': case 'q': case 'd': return 8;
        case 'I': case 'i': case 'f': return 4;
        case 'H': case 'h': return 2;
        case 'B': case 'b': case '?': return 1;
        default: return 0;
    }
}

[[noreturn]] void bad_arg(int i, char t, PyObject* a, const char* why) {
    PyErr_Clear();
    throw py::type_error("argument " + std::to_string(i) + " ('" + std::string(1, t) +
                         "'): " + why + ", got " + type_name(a));
}

// Packs argument i of type t into an 8-byte slot.
inline void pack_one(int i, char t, PyObject* a, unsigned char* slot) {
    switch (t) {
        case 'P': case 'Q': {
            unsigned long long v;
            if (PyLong_CheckExact(a)) {
                v = PyLong_AsUnsignedLongLong(a);
                if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred())
                    bad_arg(i, t, a, "must be an int in [0, 2**64)");
            } else if (t == 'P' && a == Py_None) {
                v = 0;
            } else if (PyIndex_Check(a)) {
                v = to_u64(a, ("argument " + std::to_string(i)).c_str());
            } else {
                bad_arg(i, t, a, "must be an int");
            }
            std::memcpy(slot, &v, 8);
            return;
        }
        case 'q': case 'i': case 'I': case 'h': case 'H': case 'b': case 'B': {
            if (!PyLong_Check(a) && !PyIndex_Check(a)) bad_arg(i, t, a, "must be an int");
            int overflow = 0;
            long long v = PyLong_Check(a) ? PyLong_AsLongLongAndOverflow(a, &overflow)
                                          : to_int_in(a, "argument", -(1LL << 62), 1LL << 62);
            if (v == -1 && PyErr_Occurred()) bad_arg(i, t, a, "must be an int");
            long long lo = 0, hi = 0;
            switch (t) {
                case 'q': lo = INT64_MIN; hi = INT64_MAX; break;
                case 'i': lo = INT32_MIN; hi = INT32_MAX; break;
                case 'I': lo = 0; hi = UINT32_MAX; break;
                case 'h': lo = INT16_MIN; hi = INT16_MAX; break;
                case 'H': lo = 0; hi = UINT16_MAX; break;
                case 'b': lo = INT8_MIN; hi = INT8_MAX; break;
                default: lo = 0; hi = UINT8_MAX; break;
            }
            if (overflow != 0 || v < lo || v > hi)
                throw py::value_error("argument " + std::to_string(i) + " ('" + std::string(1, t) +
                                      "') out of range [" + std::to_string(lo) + ", " +
                                      std::to_string(hi) + "]");
            switch (type_size(t)) {
                case 8: std::memcpy(slot, &v, 8); break;
                case 4: { auto x = static_cast<std::int32_t>(v); std::memcpy(slot, &x, 4); break; }
                case 2: { auto x = static_cast<std::int16_t>(v); std::memcpy(slot, &x, 2); break; }
                default: { auto x = static_cast<std::int8_t>(v); std::memcpy(slot, &x, 1); break; }
            }
            return;
        }
        case 'f': case 'd': {
            double d = PyFloat_CheckExact(a) ? PyFloat_AS_DOUBLE(a) : PyFloat_AsDouble(a);
            if (d == -1.0 && PyErr_Occurred()) bad_arg(i, t, a, "must be a float");
            if (t == 'f') {
                auto f = static_cast<float>(d);
                std::memcpy(slot, &f, 4);
            } else {
                std::memcpy(slot, &d, 8);
            }
            return;
        }
        case '?': {
            int b = PyObject_IsTrue(a);
            if (b < 0) throw py::error_already_set();
            slot[0] = static_cast<unsigned char>(b);
            return;
        }
        default: throw py::value_error("bad type code");
    }
}

// Packs args and launches with the launcher's configuration; `grid_x` / `stream` override the
// prepared grid's x extent and stream when `override` is set (Launcher.launch).
PyObject* launcher_run(LauncherObject* self, PyObject* const* args, Py_ssize_t n, bool override,
                       unsigned int grid_x, CUstream stream_override) {
    if (n != self->nargs)
        throw py::type_error("Launcher expects " + std::to_string(self->nargs) +
                             " argument(s) (" + py::str(self->arg_types).cast<std::string>() +
                             "), got " + std::to_string(n));
    alignas(16) unsigned char storage[kMaxLauncherArgs * 8];
    void* params[kMaxLauncherArgs];
    for (Py_ssize_t i = 0; i < n; ++i) {
        unsigned char* slot = storage + 8 * i;
        pack_one(static_cast<int>(i), self->types[i], args[i], slot);
        params[i] = slot;
    }
    std::shared_lock<std::shared_mutex> flock(self->function->state()->mu);
    self->function->state()->get_locked();  // throws if the module was closed
    std::shared_lock<std::shared_mutex> slock;
    CUstream stream = self->raw_stream;
    unsigned int gx = self->grid[0];
    if (override) {
        stream = stream_override;
        gx = grid_x;
    } else if (self->stream != nullptr) {
        slock = self->stream->use();
        stream = self->stream->get_locked();
    }
    require_init();
    CUresult r;
    const char* api;
    if (self->nattrs == 0) {
        api = "cuLaunchKernel";
        auto* fn = driver().cuLaunchKernel;
        PyThreadState* ts = PyEval_SaveThread();
        r = fn(self->function->raw(), gx, self->grid[1], self->grid[2], self->block[0],
               self->block[1], self->block[2], self->shared, stream, n ? params : nullptr,
               nullptr);
        PyEval_RestoreThread(ts);
    } else {
        api = "cuLaunchKernelEx";
        auto* fn = driver().cuLaunchKernelEx;
        if (fn == nullptr) throw_missing_symbol("cuLaunchKernelEx", 12000);
        CUlaunchConfig cfg{};
        cfg.gridDimX = gx;
        cfg.gridDimY = self->grid[1];
        cfg.gridDimZ = self->grid[2];
        cfg.blockDimX = self->block[0];
        cfg.blockDimY = self->block[1];
        cfg.blockDimZ = self->block[2];
        cfg.sharedMemBytes = self->shared;
        cfg.hStream = stream;
        cfg.attrs = self->attrs;
        cfg.numAttrs = self->nattrs;
        PyThreadState* ts = PyEval_SaveThread();
        r = fn(&cfg, self->function->raw(), n ? params : nullptr, nullptr);
        PyEval_RestoreThread(ts);
    }
    if (r != CUDA_SUCCESS) throw_cuda(r, api);
    Py_RETURN_NONE;
}

}  // namespace

// The array fast path (fast_ops.cpp): launch with parameters already packed.  Returns the
// CUresult (CUDA_SUCCESS or the driver's error: nothing Python-side is set); throws (a
// CudaError) only if the launcher's module was closed.
bool is_launcher(PyObject* obj) {
    return g_launcher_type != nullptr && Py_IS_TYPE(obj, g_launcher_type);
}

CUresult launcher_launch_packed(PyObject* launcher, unsigned int grid_x, CUstream stream,
                                void** params) {
    auto* self = reinterpret_cast<LauncherObject*>(launcher);
    std::shared_lock<std::shared_mutex> flock(self->function->state()->mu);
    self->function->state()->get_locked();  // throws if the module was closed
    require_init();
    CUresult r;
    PyThreadState* ts = PyEval_SaveThread();
    if (self->nattrs == 0) {
        r = driver().cuLaunchKernel(self->function->raw(), grid_x, self->grid[1], self->grid[2],
                                    self->block[0], self->block[1], self->block[2],
                                    self->shared, stream, self->nargs ? params : nullptr,
                                    nullptr);
    } else if (driver().cuLaunchKernelEx == nullptr) {
        r = CUDA_ERROR_NOT_SUPPORTED;
    } else {
        CUlaunchConfig cfg{};
        cfg.gridDimX = grid_x;
        cfg.gridDimY = self->grid[1];
        cfg.gridDimZ = self->grid[2];
        cfg.blockDimX = self->block[0];
        cfg.blockDimY = self->block[1];
        cfg.blockDimZ = self->block[2];
        cfg.sharedMemBytes = self->shared;
        cfg.hStream = stream;
        cfg.attrs = self->attrs;
        cfg.numAttrs = self->nattrs;
        r = driver().cuLaunchKernelEx(&cfg, self->function->raw(),
                                      self->nargs ? params : nullptr, nullptr);
    }
    PyEval_RestoreThread(ts);
    return r;
}

// Packs one launcher argument of type code t into an 8-byte slot; false (no Python error set)
// if the value does not fit (the caller's Python path then raises naming the parameter).
bool launcher_pack_arg(char t, PyObject* value, unsigned char* slot) {
    try {
        pack_one(0, t, value, slot);
        return true;
    } catch (...) {
        PyErr_Clear();
        return false;
    }
}

const char* launcher_arg_types(PyObject* launcher, int* nargs) {
    auto* self = reinterpret_cast<LauncherObject*>(launcher);
    *nargs = self->nargs;
    return self->types;
}

namespace {

PyObject* launcher_vectorcall(PyObject* callable, PyObject* const* args, std::size_t nargsf,
                              PyObject* kwnames) noexcept {
    auto* self = reinterpret_cast<LauncherObject*>(callable);
    try {
        if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0)
            throw py::type_error("Launcher takes positional arguments only");
        return launcher_run(self, args, PyVectorcall_NARGS(nargsf), false, 0, nullptr);
    } catch (...) {
        set_error_from_current_exception();
        return nullptr;
    }
}

// Launcher.launch(grid_x, stream, *args): the same launch with the grid's x extent and the
// stream (a raw CUstream handle, 0 = legacy default) given per call, so one prepared launcher
// serves every size and stream (array ops: one launcher per kernel, not per size and stream).
PyObject* launcher_launch(PyObject* o, PyObject* const* args, Py_ssize_t nargs) noexcept {
    auto* self = reinterpret_cast<LauncherObject*>(o);
    try {
        if (nargs < 2) throw py::type_error("launch(grid_x, stream, *args): too few arguments");
        unsigned long long gx = PyLong_AsUnsignedLongLong(args[0]);
        if (PyErr_Occurred() || gx == 0 || gx > 0x7FFFFFFFULL) {
            PyErr_Clear();
            throw py::value_error("launch: grid_x must be an int in [1, 2**31), got " +
                                  type_name(args[0]));
        }
        unsigned long long sh = PyLong_AsUnsignedLongLong(args[1]);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            throw py::type_error("launch: stream must be a raw CUstream handle (int >= 0), got " +
                                 type_name(args[1]));
        }
        return launcher_run(self, args + 2, nargs - 2, true, static_cast<unsigned int>(gx),
                            reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(sh)));
    } catch (...) {
        set_error_from_current_exception();
        return nullptr;
    }
}

// Diagnostics for the benchmark: repeat the launcher's launch n times from C++ (GIL released),
// so the driver's own cost per launch can be told apart from the Python call's.
void launch_loop(py::handle launcher_obj, py::handle n_obj, py::args args) {
    if (g_launcher_type == nullptr || !PyObject_TypeCheck(launcher_obj.ptr(), g_launcher_type))
        throw py::type_error("launcher must be a Launcher");
    auto* self = reinterpret_cast<LauncherObject*>(launcher_obj.ptr());
    std::uint64_t n = to_u64(n_obj, "n");
    if (static_cast<int>(args.size()) != self->nargs) throw py::type_error("wrong argument count");
    alignas(16) unsigned char storage[kMaxLauncherArgs * 8];
    void* params[kMaxLauncherArgs];
    for (int i = 0; i < self->nargs; ++i) {
        pack_one(i, self->types[i], args[static_cast<std::size_t>(i)].ptr(), storage + 8 * i);
        params[i] = storage + 8 * i;
    }
    std::shared_lock<std::shared_mutex> flock(self->function->state()->mu);
    self->function->state()->get_locked();
    std::shared_lock<std::shared_mutex> slock;
    CUstream stream = self->raw_stream;
    if (self->stream != nullptr) {
        slock = self->stream->use();
        stream = self->stream->get_locked();
    }
    require_init();
    auto* fn = driver().cuLaunchKernel;
    CUfunction f = self->function->raw();
    py::gil_scoped_release nogil;
    for (std::uint64_t k = 0; k < n; ++k) {
        CUresult r = fn(f, self->grid[0], self->grid[1], self->grid[2], self->block[0],
                        self->block[1], self->block[2], self->shared, stream,
                        self->nargs ? params : nullptr, nullptr);
        if (r != CUDA_SUCCESS) throw_cuda(r, "cuLaunchKernel");
    }
}

PyObject* launcher_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) noexcept {
    static const char* kwlist[] = {"function", "grid", "block", "arg_types", "shared_mem",
                                   "stream", "cluster", "cooperative", "priority",
                                   "programmatic", nullptr};
    PyObject *fn_obj = nullptr, *grid_obj = nullptr, *block_obj = nullptr, *types_obj = nullptr;
    PyObject *shared_obj = nullptr, *stream_obj = nullptr;
    PyObject *cluster = Py_None, *cooperative = Py_False, *priority = Py_None;
    PyObject* programmatic = Py_False;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOU|OO$OOOO:Launcher",
                                     const_cast<char**>(kwlist), &fn_obj, &grid_obj, &block_obj,
                                     &types_obj, &shared_obj, &stream_obj, &cluster, &cooperative,
                                     &priority, &programmatic))
        return nullptr;
    auto* self = reinterpret_cast<LauncherObject*>(type->tp_alloc(type, 0));
    if (self == nullptr) return nullptr;
    self->vectorcall = &launcher_vectorcall;
    try {
        py::handle fh(fn_obj);
        if (!py::isinstance<Function>(fh))
            throw py::type_error("function must be a Function, got " + type_name(fh));
        self->function = fh.cast<const Function*>();
        self->function_obj = fn_obj;
        Py_INCREF(fn_obj);
        auto grid = to_dim3(grid_obj, "grid");
        auto block = to_dim3(block_obj, "block");
        for (int i = 0; i < 3; ++i) {
            self->grid[i] = grid[static_cast<std::size_t>(i)];
            self->block[i] = block[static_cast<std::size_t>(i)];
        }
        self->shared = shared_obj ? static_cast<unsigned int>(
                                        to_int_in(shared_obj, "shared_mem", 0, 0xFFFFFFFFLL))
                                  : 0u;
        std::string t = py::handle(types_obj).cast<std::string>();
        if (t.size() > static_cast<std::size_t>(kMaxLauncherArgs))
            throw py::value_error("at most " + std::to_string(kMaxLauncherArgs) +
                                  " parameters are supported");
        for (std::size_t i = 0; i < t.size(); ++i) {
            if (type_size(t[i]) == 0)
                throw py::value_error("arg_types[" + std::to_string(i) + "] = '" +
                                      std::string(1, t[i]) +
                                      "' is not one of P (pointer), Q q I i H h B b (integers), "
                                      "f d (float, double), ? (bool)");
            self->types[i] = t[i];
        }
        self->nargs = static_cast<int>(t.size());
        self->arg_types = types_obj;
        Py_INCREF(types_obj);
        if (stream_obj == nullptr || stream_obj == Py_None) stream_obj = PyLong_FromLong(0);
        else Py_INCREF(stream_obj);
        self->stream_obj = stream_obj;
        self->stream = as_stream(stream_obj);
        if (self->stream != nullptr)
            self->stream->handle();  // raises if closed
        else
            self->raw_stream = reinterpret_cast<CUstream>(
                static_cast<std::uintptr_t>(to_u64(stream_obj, "stream")));
        LaunchAttrs la{py::handle(cluster), py::handle(cooperative), py::handle(priority),
                       py::handle(programmatic)};
        std::memcpy(self->attrs, la.attrs, sizeof(la.attrs));
        self->nattrs = la.count;
        return reinterpret_cast<PyObject*>(self);
    } catch (...) {
        set_error_from_current_exception();
        Py_DECREF(self);
        return nullptr;
    }
}

int launcher_traverse(PyObject* o, visitproc visit, void* arg) {
    auto* self = reinterpret_cast<LauncherObject*>(o);
    Py_VISIT(self->function_obj);
    Py_VISIT(self->stream_obj);
    Py_VISIT(Py_TYPE(o));
    return 0;
}

int launcher_clear(PyObject* o) {
    auto* self = reinterpret_cast<LauncherObject*>(o);
    self->function = nullptr;
    self->stream = nullptr;
    Py_CLEAR(self->function_obj);
    Py_CLEAR(self->stream_obj);
    Py_CLEAR(self->arg_types);
    return 0;
}

void launcher_dealloc(PyObject* o) {
    PyTypeObject* tp = Py_TYPE(o);
    PyObject_GC_UnTrack(o);
    launcher_clear(o);
    tp->tp_free(o);
    Py_DECREF(tp);
}

PyObject* launcher_dims(unsigned int* d) { return Py_BuildValue("(III)", d[0], d[1], d[2]); }
PyObject* launcher_get_grid(PyObject* o, void*) {
    return launcher_dims(reinterpret_cast<LauncherObject*>(o)->grid);
}
PyObject* launcher_get_block(PyObject* o, void*) {
    return launcher_dims(reinterpret_cast<LauncherObject*>(o)->block);
}
PyObject* launcher_get_shared(PyObject* o, void*) {
    return PyLong_FromUnsignedLong(reinterpret_cast<LauncherObject*>(o)->shared);
}
PyObject* launcher_repr(PyObject* o) {
    auto* self = reinterpret_cast<LauncherObject*>(o);
    return PyUnicode_FromFormat("<Launcher %R grid=(%u, %u, %u) block=(%u, %u, %u) arg_types=%R>",
                                self->function_obj, self->grid[0], self->grid[1], self->grid[2],
                                self->block[0], self->block[1], self->block[2], self->arg_types);
}

PyObject* make_launcher_type(PyObject* module) {
    static PyMemberDef members[] = {
        {"__vectorcalloffset__", T_PYSSIZET,
         static_cast<Py_ssize_t>(offsetof(LauncherObject, vectorcall)), READONLY, nullptr},
        {"function", T_OBJECT, static_cast<Py_ssize_t>(offsetof(LauncherObject, function_obj)),
         READONLY, "The Function launched."},
        {"stream", T_OBJECT, static_cast<Py_ssize_t>(offsetof(LauncherObject, stream_obj)),
         READONLY, "The stream launched on."},
        {"arg_types", T_OBJECT, static_cast<Py_ssize_t>(offsetof(LauncherObject, arg_types)),
         READONLY, "One type code per kernel parameter."},
        {nullptr, 0, 0, 0, nullptr}};
    static PyMethodDef methods[] = {
        {"launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&launcher_launch)),
         METH_FASTCALL,
         "launch($self, grid_x, stream, /, *args)\n--\n\n"
         "Launch with the grid's x extent and the stream "
         "(raw CUstream handle) given per call; other settings as prepared."},
        {nullptr, nullptr, 0, nullptr}};
    static PyGetSetDef getset[] = {
        {"grid", &launcher_get_grid, nullptr, "Grid dimensions.", nullptr},
        {"block", &launcher_get_block, nullptr, "Block dimensions.", nullptr},
        {"shared_mem", &launcher_get_shared, nullptr, "Dynamic shared memory bytes.", nullptr},
        {nullptr, nullptr, nullptr, nullptr, nullptr}};
    static const char doc[] =
        "Launcher(function, grid, block, arg_types, shared_mem=0, stream=0, *, cluster=None, "
        "cooperative=False, priority=None, programmatic=False)\n--\n\n"
        "A prepared kernel launch. arg_types has one code per parameter: P (pointer: int or "
        "None), Q/q (u64/i64), I/i (u32/i32), H/h, B/b, f (float32), d (float64), ? (bool). "
        "Calling it with the parameter values launches (cuLaunchKernel, or cuLaunchKernelEx "
        "when cluster/cooperative/priority/programmatic are given) with the GIL released. "
        "programmatic=True allows programmatic dependent launch (sm_90+): the kernel must "
        "execute griddepcontrol.wait before touching memory.";
    static PyType_Slot slots[] = {
        {Py_tp_new, reinterpret_cast<void*>(&launcher_new)},
        {Py_tp_dealloc, reinterpret_cast<void*>(&launcher_dealloc)},
        {Py_tp_traverse, reinterpret_cast<void*>(&launcher_traverse)},
        {Py_tp_clear, reinterpret_cast<void*>(&launcher_clear)},
        {Py_tp_call, reinterpret_cast<void*>(&PyVectorcall_Call)},
        {Py_tp_members, members},
        {Py_tp_methods, methods},
        {Py_tp_getset, getset},
        {Py_tp_repr, reinterpret_cast<void*>(&launcher_repr)},
        {Py_tp_doc, const_cast<char*>(doc)},
        {0, nullptr}};
    static PyType_Spec spec = {
        "pygpukit_driver._driver.Launcher", static_cast<int>(sizeof(LauncherObject)), 0,
        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, slots};
    return PyType_FromModuleAndSpec(module, &spec, nullptr);
}

}  // namespace

void register_module_launch(py::module_& m) {
    py::class_<Function>(m, "Function", "A kernel of a loaded Module.")
        .def_property_readonly("handle", &Function::handle)
        .def_property_readonly("name", &Function::name)
        .def(
            "get_attribute",
            [](const Function& f, py::handle attribute) {
                return f.get_attribute(
                    static_cast<int>(to_int_in(attribute, "attribute", 0, 0x7FFFFFFF)));
            },
            py::arg("attribute"), "cuFuncGetAttribute (see FunctionAttribute).")
        .def(
            "set_attribute",
            [](const Function& f, py::handle attribute, py::handle value) {
                f.set_attribute(
                    static_cast<int>(to_int_in(attribute, "attribute", 0, 0x7FFFFFFF)),
                    static_cast<int>(to_int_in(value, "value", -0x80000000LL, 0x7FFFFFFFLL)));
            },
            py::arg("attribute"), py::arg("value"),
            "cuFuncSetAttribute, e.g. MAX_DYNAMIC_SHARED_SIZE_BYTES.")
        .def(
            "max_active_blocks_per_multiprocessor",
            [](const Function& f, py::handle block_size, py::handle smem) {
                return f.max_active_blocks(
                    static_cast<int>(to_int_in(block_size, "block_size", 1, 0x7FFFFFFF)),
                    static_cast<std::size_t>(to_u64(smem, "dynamic_shared_mem")));
            },
            py::arg("block_size"), py::arg("dynamic_shared_mem") = 0,
            "cuOccupancyMaxActiveBlocksPerMultiprocessor.")
        .def(
            "max_potential_block_size",
            [](const Function& f, py::handle smem, py::handle limit) {
                return f.max_potential_block_size(
                    static_cast<std::size_t>(to_u64(smem, "dynamic_shared_mem")),
                    static_cast<int>(to_int_in(limit, "block_size_limit", 0, 0x7FFFFFFF)));
            },
            py::arg("dynamic_shared_mem") = 0, py::arg("block_size_limit") = 0,
            "cuOccupancyMaxPotentialBlockSize (fixed dynamic shared memory): "
            "(min_grid_size, block_size).")
        .def(
            "prepare",
            [](py::object self, py::handle grid, py::handle block, py::handle arg_types,
               py::handle shared_mem, py::handle stream) {
                return py::reinterpret_borrow<py::object>(
                    reinterpret_cast<PyObject*>(g_launcher_type))(self, grid, block, arg_types,
                                                                  shared_mem, stream);
            },
            py::arg("grid"), py::arg("block"), py::arg("arg_types"), py::arg("shared_mem") = 0,
            py::arg("stream") = 0, "Launcher(self, grid, block, arg_types, shared_mem, stream).")
        .def("__repr__", [](const Function& f) { return "<Function '" + f.name() + "'>"; });

    py::class_<Module>(m, "Module", "A loaded module (cubin, fatbin or PTX).")
        .def_static("load_data", &Module::load_data, py::arg("image"),
                    "cuModuleLoadDataEx in the current context; raises CudaError with the JIT "
                    "error log on failure.")
        .def("get_function", &Module::get_function, py::arg("name"), py::keep_alive<0, 1>(),
             "The kernel `name`; the Function keeps this Module alive.")
        .def("get_global", &Module::get_global, py::arg("name"), "(device pointer, size in bytes)")
        .def_property_readonly("handle", &Module::handle)
        .def_property_readonly("closed", &Module::closed)
        .def_property_readonly("info_log", &Module::info_log, "The JIT info log of the load.")
        .def("close", &Module::close, "Unload the module (idempotent).")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](Module& mod, py::args) { mod.close(); })
        .def("__repr__", [](const Module& mod) {
            return std::string(mod.closed() ? "<Module closed>" : "<Module>");
        });

    m.def("launch_kernel", &launch_kernel, py::arg("function"), py::arg("grid"), py::arg("block"),
          py::arg("args"), py::arg("shared_mem") = 0, py::arg("stream") = 0,
          "cuLaunchKernel; each element of args is a buffer whose bytes are the parameter value.");
    m.def("launch_kernel_ex", &launch_kernel_ex, py::arg("function"), py::arg("grid"),
          py::arg("block"), py::arg("args"), py::arg("shared_mem") = 0, py::arg("stream") = 0,
          py::kw_only(), py::arg("cluster") = py::none(), py::arg("cooperative") = false,
          py::arg("priority") = py::none(),
          "cuLaunchKernelEx with launch attributes: cluster dimensions (thread block clusters, "
          "compute capability 9.0+), cooperative launch, launch priority.");

    m.def("_launch_loop", &launch_loop, py::arg("launcher"), py::arg("n"),
          "Diagnostics: launch n times from C++ (the driver's own cost per launch).");

    PyObject* type = make_launcher_type(m.ptr());
    if (type == nullptr) throw py::error_already_set();
    g_launcher_type = reinterpret_cast<PyTypeObject*>(type);
    m.add_object("Launcher", py::reinterpret_steal<py::object>(type));
}

}  // namespace pgk
