// Module (cuModuleLoadDataEx with JIT logs), Function, launch_kernel.
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

namespace py = pybind11;

namespace pgk {
namespace {

constexpr std::size_t kJitLogSize = 16384;

// Shared by a Module and the Functions taken from it, so a Function can tell its module closed.
struct ModuleState {
    mutable std::shared_mutex mu;
    CUmodule module = nullptr;
    PrimaryContextRef ref;
    std::string info_log;

    CUmodule get_locked() const {
        if (module == nullptr) throw py::value_error("Module is closed");
        return module;
    }
    void destroy_locked() noexcept {
        if (module == nullptr) return;
        {
            // cuModuleUnload acts on the module's context: make it current for the call.
            ScopedCurrent current(ref.context());
            CU_NOINIT(cuModuleUnload).quiet(module);
        }
        module = nullptr;
        ref.release();
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

void launch_kernel(const Function& function, py::handle grid_obj, py::handle block_obj,
                   py::handle args_obj, py::handle shared_obj, py::handle stream_obj) {
    auto grid = to_dim3(grid_obj, "grid");
    auto block = to_dim3(block_obj, "block");
    auto shared = static_cast<unsigned int>(to_int_in(shared_obj, "shared_mem", 0, 0xFFFFFFFFLL));
    CUstream stream = to_stream(stream_obj, "stream");

    if (PyUnicode_Check(args_obj.ptr()) || PyBytes_Check(args_obj.ptr()) ||
        !PySequence_Check(args_obj.ptr()))
        throw py::type_error("args must be a sequence of buffer-protocol objects (e.g. "
                             "[ctypes.c_uint64(ptr), ctypes.c_int32(n)]), got " +
                             type_name(args_obj));
    py::sequence seq = py::reinterpret_borrow<py::sequence>(args_obj);
    std::size_t n = seq.size();
    std::vector<py::object> items;  // keep the items alive while their buffers are held
    std::vector<BufferView> views;
    std::vector<void*> params;
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

    // Take the module lock only with the GIL released, and drop it before taking the GIL back:
    // no thread may wait for the GIL while holding an object lock.
    py::gil_scoped_release nogil;
    auto lock = function.use();
    CU(cuLaunchKernel)(function.raw(), grid[0], grid[1], grid[2], block[0], block[1], block[2],
                       shared, stream, params.empty() ? nullptr : params.data(), nullptr);
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
}

}  // namespace pgk
