// Green contexts (SM partitions, CUDA 12.4+ drivers) and TMA tensor maps.
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

namespace py = pybind11;

namespace pgk {
namespace {

// The entry points green contexts need, with the CUDA version that introduced each.
std::vector<std::string> missing_green_symbols() {
    std::vector<std::string> missing;
    const Driver& d = driver();
#define PGK_CHECK(name) \
    if (d.name == nullptr) missing.emplace_back(#name);
    PGK_CHECK(cuDeviceGetDevResource)
    PGK_CHECK(cuDevSmResourceSplitByCount)
    PGK_CHECK(cuDevResourceGenerateDesc)
    PGK_CHECK(cuGreenCtxCreate)
    PGK_CHECK(cuGreenCtxDestroy)
    PGK_CHECK(cuGreenCtxGetDevResource)
    PGK_CHECK(cuCtxFromGreenCtx)
    PGK_CHECK(cuGreenCtxStreamCreate)
#undef PGK_CHECK
    return missing;
}

bool green_supported() {
    if (!library_loaded()) return false;
    return loaded_driver_version() >= 12050 && missing_green_symbols().empty();
}

void require_green(const char* api) {
    require_init();
    if (green_supported()) return;
    int v = loaded_driver_version();
    std::string msg = "green contexts need a CUDA 12.5+ driver (R555+); the loaded driver is CUDA " +
                      format_cuda_version(v);
    auto missing = missing_green_symbols();
    if (!missing.empty()) {
        msg += " and does not provide";
        for (const auto& s : missing) msg += " " + s;
    }
    throw CudaError(CUDA_ERROR_NOT_SUPPORTED, api, msg);
}

CUdevice to_device(py::handle obj) {
    int ordinal = static_cast<int>(to_int_in(obj, "device", 0, 0x7FFFFFFF));
    CUdevice d = 0;
    CU(cuDeviceGet)(&d, ordinal);
    return d;
}

// A CUdevResource of SM type (a value: copying it is fine).
class SmResource {
public:
    SmResource(const CUdevResource& r, int device) : res_(r), device_(device) {}
    unsigned int sm_count() const { return res_.sm.smCount; }
    unsigned int min_partition_size() const { return res_.sm.minSmPartitionSize; }
    unsigned int coscheduled_alignment() const { return res_.sm.smCoscheduledAlignment; }
    int device() const { return device_; }
    const CUdevResource& raw() const { return res_; }

    py::tuple split(py::handle groups_obj, py::handle min_count_obj) const {
        require_green("cuDevSmResourceSplitByCount");
        unsigned int groups =
            static_cast<unsigned int>(to_int_in(groups_obj, "groups", 1, 1 << 16));
        unsigned int min_count =
            static_cast<unsigned int>(to_int_in(min_count_obj, "min_sm_count", 1, 1 << 20));
        std::vector<CUdevResource> result(groups);
        std::memset(result.data(), 0, sizeof(CUdevResource) * groups);
        CUdevResource remaining;
        std::memset(&remaining, 0, sizeof(remaining));
        unsigned int n = groups;
        CUdevResource input = res_;
        CU(cuDevSmResourceSplitByCount)(result.data(), &n, &input, &remaining, 0u, min_count);
        py::list out;
        for (unsigned int i = 0; i < n && i < groups; ++i) out.append(SmResource(result[i], device_));
        return py::make_tuple(out, SmResource(remaining, device_));
    }

private:
    CUdevResource res_;
    int device_;
};

// The driver object; destroyed when the GreenContext and every stream/module made in it are gone.
struct GreenState {
    CUgreenCtx green = nullptr;
    CUcontext ctx = nullptr;
    int device = 0;
    ~GreenState() {
        if (ctx != nullptr) unregister_context_owner(ctx);
        if (green != nullptr) CU_NOINIT(cuGreenCtxDestroy).quiet(green);
    }
};

class GreenContext {
public:
    explicit GreenContext(const SmResource& r) {
        require_green("cuGreenCtxCreate");
        auto state = std::make_shared<GreenState>();
        state->device = r.device();
        CUdevice dev = 0;
        CU(cuDeviceGet)(&dev, r.device());
        CUdevResource res = r.raw();
        CUdevResourceDesc desc = nullptr;
        CU(cuDevResourceGenerateDesc)(&desc, &res, 1u);
        CU(cuGreenCtxCreate)(&state->green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM);
        CU(cuCtxFromGreenCtx)(&state->ctx, state->green);
        register_context_owner(state->ctx, state);
        state_ = std::move(state);
    }

    std::shared_ptr<GreenState> get_locked() const {
        if (!state_) throw py::value_error("GreenContext is closed");
        return state_;
    }
    std::uintptr_t handle() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return reinterpret_cast<std::uintptr_t>(get_locked()->green);
    }
    std::uintptr_t context_handle() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return reinterpret_cast<std::uintptr_t>(get_locked()->ctx);
    }
    int device() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return get_locked()->device;
    }
    SmResource sm_resource() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        auto st = get_locked();
        CUdevResource r;
        std::memset(&r, 0, sizeof(r));
        CU(cuGreenCtxGetDevResource)(st->green, &r, CU_DEV_RESOURCE_TYPE_SM);
        return SmResource(r, st->device);
    }
    void set_current() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        CU(cuCtxSetCurrent)(get_locked()->ctx);
    }
    std::unique_ptr<Stream> create_stream(int priority) const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        auto st = get_locked();
        CUstream s = nullptr;
        CU(cuGreenCtxStreamCreate)(&s, st->green, CU_STREAM_NON_BLOCKING, priority);
        return std::make_unique<Stream>(s, PrimaryContextRef(), st);
    }
    void close() {
        std::shared_ptr<GreenState> doomed;
        {
            std::unique_lock<std::shared_mutex> lock(mu_);
            doomed = std::move(state_);
        }
        py::gil_scoped_release nogil;
        doomed.reset();
    }
    bool closed() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return !state_;
    }

private:
    mutable std::shared_mutex mu_;
    std::shared_ptr<GreenState> state_;
};

py::bytes tensor_map_encode_tiled(py::handle dtype, py::handle address, py::handle global_dim,
                                  py::handle global_strides, py::handle box_dim,
                                  py::handle element_strides, py::handle interleave,
                                  py::handle swizzle, py::handle l2_promotion,
                                  py::handle oob_fill) {
    auto to_list = [](py::handle obj, const char* what) {
        if (!PyTuple_Check(obj.ptr()) && !PyList_Check(obj.ptr()))
            throw py::type_error(std::string(what) + " must be a tuple or list of ints, got " +
                                 type_name(obj));
        std::vector<std::uint64_t> v;
        py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
        for (std::size_t i = 0; i < seq.size(); ++i) {
            std::string name = std::string(what) + "[" + std::to_string(i) + "]";
            v.push_back(to_u64(seq[i], name.c_str()));
        }
        return v;
    };
    auto dims = to_list(global_dim, "global_dim");
    std::size_t rank = dims.size();
    if (rank < 1 || rank > 5) throw py::value_error("global_dim must have 1 to 5 entries");
    auto strides = to_list(global_strides, "global_strides");
    if (strides.size() != rank - 1)
        throw py::value_error("global_strides must have rank-1 = " + std::to_string(rank - 1) +
                              " entries (bytes between rows of dims 1..rank-1)");
    auto box = to_list(box_dim, "box_dim");
    if (box.size() != rank) throw py::value_error("box_dim must have one entry per dimension");
    std::vector<std::uint64_t> estr(rank, 1);
    if (!element_strides.is_none()) {
        estr = to_list(element_strides, "element_strides");
        if (estr.size() != rank)
            throw py::value_error("element_strides must have one entry per dimension");
    }
    std::vector<cuuint64_t> gdim(dims.begin(), dims.end());
    std::vector<cuuint64_t> gstr(strides.begin(), strides.end());
    gstr.push_back(0);  // never read by the driver; keeps data() non-null for rank 1
    std::vector<cuuint32_t> bdim, es;
    for (auto b : box) bdim.push_back(static_cast<cuuint32_t>(b));
    for (auto e : estr) es.push_back(static_cast<cuuint32_t>(e));
    CUtensorMap map;
    std::memset(&map, 0, sizeof(map));
    void* addr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(to_u64(address, "global_address")));
    CU(cuTensorMapEncodeTiled)(
        &map, static_cast<int>(to_int_in(dtype, "data_type", 0, 0xFFFF)),
        static_cast<cuuint32_t>(rank), addr, gdim.data(), gstr.data(), bdim.data(), es.data(),
        static_cast<int>(to_int_in(interleave, "interleave", 0, 0xFFFF)),
        static_cast<int>(to_int_in(swizzle, "swizzle", 0, 0xFFFF)),
        static_cast<int>(to_int_in(l2_promotion, "l2_promotion", 0, 0xFFFF)),
        static_cast<int>(to_int_in(oob_fill, "oob_fill", 0, 0xFFFF)));
    return py::bytes(reinterpret_cast<const char*>(&map), sizeof(map));
}

}  // namespace

void register_green_tma(py::module_& m) {
    m.def("green_contexts_supported", &green_supported,
          "True if the loaded driver has green contexts (CUDA 12.5+: SM partitions, streams on "
          "them). Never raises.");

    py::class_<SmResource>(m, "SmResource", "A set of SMs (CUdevResource of SM type).")
        .def_property_readonly("sm_count", &SmResource::sm_count)
        .def_property_readonly("min_partition_size", &SmResource::min_partition_size,
                               "Minimum SMs per split group (CUDA 13+ drivers; else 0).")
        .def_property_readonly("coscheduled_alignment", &SmResource::coscheduled_alignment,
                               "SM count granularity of a split (CUDA 13+ drivers; else 0).")
        .def_property_readonly("device", &SmResource::device)
        .def("split", &SmResource::split, py::arg("groups"), py::arg("min_sm_count"),
             "cuDevSmResourceSplitByCount: up to `groups` groups of at least `min_sm_count` SMs "
             "each (rounded up to the hardware granularity) -> (groups, remaining).")
        .def("__repr__", [](const SmResource& r) {
            return "<SmResource device=" + std::to_string(r.device()) +
                   " sm_count=" + std::to_string(r.sm_count()) + ">";
        });

    m.def(
        "device_sm_resource",
        [](py::handle device) {
            require_green("cuDeviceGetDevResource");
            CUdevice d = to_device(device);
            CUdevResource r;
            std::memset(&r, 0, sizeof(r));
            CU(cuDeviceGetDevResource)(d, &r, CU_DEV_RESOURCE_TYPE_SM);
            return SmResource(r, static_cast<int>(to_int_in(device, "device", 0, 0x7FFFFFFF)));
        },
        py::arg("device") = 0, "cuDeviceGetDevResource: all SMs of a device.");

    py::class_<GreenContext>(m, "GreenContext",
                             "A green context on an SmResource (cuGreenCtxCreate).")
        .def(py::init<const SmResource&>(), py::arg("resource"))
        .def_property_readonly("handle", &GreenContext::handle, "The CUgreenCtx.")
        .def_property_readonly("context_handle", &GreenContext::context_handle,
                               "The CUcontext it converts to (cuCtxFromGreenCtx).")
        .def_property_readonly("device", &GreenContext::device)
        .def_property_readonly("sm_count",
                               [](const GreenContext& g) { return g.sm_resource().sm_count(); })
        .def("sm_resource", &GreenContext::sm_resource, "cuGreenCtxGetDevResource (SM).")
        .def("set_current", &GreenContext::set_current,
             "Make it the calling thread's current context (cuCtxSetCurrent); modules, memory "
             "and streams made then belong to it and keep it alive.")
        .def(
            "create_stream",
            [](const GreenContext& g, py::handle priority) {
                return g.create_stream(static_cast<int>(
                    to_int_in(priority, "priority", -0x80000000LL, 0x7FFFFFFFLL)));
            },
            py::arg("priority") = 0,
            "cuGreenCtxStreamCreate (non-blocking): work on it runs on this context's SMs.")
        .def_property_readonly("closed", &GreenContext::closed)
        .def("close", &GreenContext::close,
             "Drop this reference (idempotent); the green context is destroyed once its streams "
             "and modules are gone too.")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](GreenContext& g, py::args) { g.close(); })
        .def("__repr__", [](const GreenContext& g) {
            return std::string(g.closed() ? "<GreenContext closed>" : "<GreenContext>");
        });

    m.def("tensor_map_encode_tiled", &tensor_map_encode_tiled, py::arg("data_type"),
          py::arg("global_address"), py::arg("global_dim"), py::arg("global_strides"),
          py::arg("box_dim"), py::arg("element_strides") = py::none(), py::arg("interleave") = 0,
          py::arg("swizzle") = 0, py::arg("l2_promotion") = 0, py::arg("oob_fill") = 0,
          "cuTensorMapEncodeTiled: the 128-byte CUtensorMap (pass it to a kernel as a "
          "__grid_constant__ parameter). global_strides are in bytes, for dims 1..rank-1.");
}

}  // namespace pgk
