// Device, Context, device_count, current_context_handle.
#include <cstdio>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include <pybind11/stl.h>

#include "context.hpp"
#include "loader.hpp"
#include "pyutil.hpp"

namespace py = pybind11;

namespace pgk {

PrimaryContextRef PrimaryContextRef::retain(CUdevice device) {
    PrimaryContextRef ref;
    CU(cuDevicePrimaryCtxRetain)(&ref.context_, device);
    ref.device_ = device;
    ref.held_ = true;
    return ref;
}

PrimaryContextRef PrimaryContextRef::retain_current() {
    CUdevice dev = 0;
    CU(cuCtxGetDevice)(&dev);
    return retain(dev);
}

PrimaryContextRef::PrimaryContextRef(PrimaryContextRef&& o) noexcept
    : device_(o.device_), context_(o.context_), held_(o.held_) {
    o.held_ = false;
}

PrimaryContextRef& PrimaryContextRef::operator=(PrimaryContextRef&& o) noexcept {
    if (this != &o) {
        release();
        device_ = o.device_;
        context_ = o.context_;
        held_ = o.held_;
        o.held_ = false;
    }
    return *this;
}

void PrimaryContextRef::release() noexcept {
    if (!held_) return;
    held_ = false;
    CU_NOINIT(cuDevicePrimaryCtxRelease).quiet(device_);
}

ScopedCurrent::ScopedCurrent(CUcontext ctx) noexcept {
    if (ctx == nullptr) return;
    if (CU_NOINIT(cuCtxGetCurrent).quiet(&previous_) != CUDA_SUCCESS) return;
    if (previous_ == ctx) return;
    switched_ = CU_NOINIT(cuCtxSetCurrent).quiet(ctx) == CUDA_SUCCESS;
}

ScopedCurrent::~ScopedCurrent() {
    if (switched_) CU_NOINIT(cuCtxSetCurrent).quiet(previous_);
}

namespace {

std::mutex g_owner_mu;
std::unordered_map<CUcontext, std::weak_ptr<void>>& owners() {
    static auto* m = new std::unordered_map<CUcontext, std::weak_ptr<void>>();
    return *m;
}

}  // namespace

void register_context_owner(CUcontext ctx, std::weak_ptr<void> owner) {
    std::lock_guard<std::mutex> lock(g_owner_mu);
    owners()[ctx] = std::move(owner);
}

void unregister_context_owner(CUcontext ctx) noexcept {
    std::lock_guard<std::mutex> lock(g_owner_mu);
    owners().erase(ctx);
}

CUcontext current_context() {
    CUcontext c = nullptr;
    CU(cuCtxGetCurrent)(&c);
    return c;
}

std::shared_ptr<void> current_context_owner() {
    CUcontext c = current_context();
    std::lock_guard<std::mutex> lock(g_owner_mu);
    auto it = owners().find(c);
    if (it == owners().end()) return nullptr;
    return it->second.lock();
}

namespace {

int device_count() {
    int n = 0;
    CU(cuDeviceGetCount)(&n);
    return n;
}

class Device {
public:
    explicit Device(py::handle ordinal_obj) {
        require_init();
        int n = device_count();
        if (!PyIndex_Check(ordinal_obj.ptr()))
            throw py::type_error("ordinal must be an int, got " + type_name(ordinal_obj));
        long long o = to_int_in(ordinal_obj, "ordinal", -(1LL << 62), 1LL << 62);
        if (o < 0 || o >= n) {
            std::string range = n == 0 ? "no devices are present"
                                       : "must be in range 0.." + std::to_string(n - 1) + " (" +
                                             std::to_string(n) + " device" +
                                             (n == 1 ? "" : "s") + ")";
            throw py::value_error("device ordinal " + std::to_string(o) + " out of range: " +
                                  range);
        }
        ordinal = static_cast<int>(o);
        CU(cuDeviceGet)(&device, ordinal);
    }

    int attribute(int attr) const {
        int v = 0;
        CU(cuDeviceGetAttribute)(&v, attr, device);
        return v;
    }

    std::string name() const {
        char buf[256] = {0};
        CU(cuDeviceGetName)(buf, static_cast<int>(sizeof(buf) - 1), device);
        return buf;
    }

    std::size_t total_memory() const {
        std::size_t v = 0;
        CU(cuDeviceTotalMem)(&v, device);
        return v;
    }

    std::string pci_bus_id() const {
        char buf[64] = {0};
        CU(cuDeviceGetPCIBusId)(buf, static_cast<int>(sizeof(buf) - 1), device);
        return buf;
    }

    std::string uuid() const {
        CUuuid u{};
        CU(cuDeviceGetUuid)(&u, device);
        char buf[64];
        const unsigned char* b = u.bytes;
        std::snprintf(buf, sizeof(buf),
                      "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                      b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                      b[12], b[13], b[14], b[15]);
        return buf;
    }

    int ordinal = 0;
    CUdevice device = 0;
};

// A retained primary context. The retain is given back by close(), __exit__ or GC, once.
class Context {
public:
    Context(const Device& dev, PrimaryContextRef ref) : device_(dev), ref_(std::move(ref)) {}
    ~Context() {
        // GC (GIL held, no other references) or interpreter teardown: never throw.
        std::unique_lock<std::shared_mutex> lock(mu_);
        ref_.release();
    }

    CUcontext handle_locked() const {
        if (!ref_.held()) throw py::value_error("Context is closed");
        return ref_.context();
    }

    std::uintptr_t handle() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return reinterpret_cast<std::uintptr_t>(handle_locked());
    }

    void set_current() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        CU(cuCtxSetCurrent)(handle_locked());
    }

    void synchronize() const {
        py::gil_scoped_release nogil;
        std::shared_lock<std::shared_mutex> lock(mu_);
        ScopedCurrent current(handle_locked());
        CU(cuCtxSynchronize)();
    }

    void close() {
        py::gil_scoped_release nogil;
        std::unique_lock<std::shared_mutex> lock(mu_);
        ref_.release();
    }

    bool enable_peer_access(const Context& peer) const {
        CUcontext peer_ctx = nullptr;
        {
            std::shared_lock<std::shared_mutex> lock(peer.mu_);
            peer_ctx = peer.handle_locked();
        }
        std::shared_lock<std::shared_mutex> lock(mu_);
        ScopedCurrent current(handle_locked());
        CUresult r = CU(cuCtxEnablePeerAccess).raw(peer_ctx, 0u);
        if (r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) return false;
        if (r != CUDA_SUCCESS) throw_cuda(r, "cuCtxEnablePeerAccess");
        return true;
    }

    bool closed() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return !ref_.held();
    }

    const Device& device() const { return device_; }

private:
    Device device_;
    mutable std::shared_mutex mu_;
    PrimaryContextRef ref_;
};

}  // namespace

void register_device(py::module_& m) {
    m.def("device_count", &device_count, "Number of CUDA devices (cuDeviceGetCount).");
    m.def(
        "current_context_handle",
        [] {
            CUcontext ctx = nullptr;
            CU(cuCtxGetCurrent)(&ctx);
            return reinterpret_cast<std::uintptr_t>(ctx);
        },
        "The CUcontext current on this thread as an int, 0 if none.");

    py::class_<Device>(m, "Device", "A CUDA device, by ordinal.")
        .def(py::init<py::handle>(), py::arg("ordinal"))
        .def_readonly("ordinal", &Device::ordinal)
        .def_property_readonly("name", &Device::name)
        .def_property_readonly("compute_capability",
                               [](const Device& d) {
                                   return py::make_tuple(
                                       d.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                                       d.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
                               })
        .def_property_readonly("total_memory", &Device::total_memory)
        .def_property_readonly("multiprocessor_count",
                               [](const Device& d) {
                                   return d.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
                               })
        .def_property_readonly("pci_bus_id", &Device::pci_bus_id)
        .def("can_access_peer",
             [](const Device& d, const Device& peer) {
                 int v = 0;
                 CU(cuDeviceCanAccessPeer)(&v, d.device, peer.device);
                 return v != 0;
             },
             py::arg("peer"), "cuDeviceCanAccessPeer: can this device access `peer`'s memory?")
        .def_property_readonly("uuid", &Device::uuid)
        .def_property_readonly(
            "l2_cache_size", [](const Device& d) { return d.attribute(38); }, "L2 cache size in bytes.")
        .def_property_readonly(
            "clock_rate", [](const Device& d) { return d.attribute(13); }, "Peak SM clock in kHz.")
        .def_property_readonly(
            "memory_clock_rate", [](const Device& d) { return d.attribute(36); }, "Peak memory clock in kHz.")
        .def_property_readonly(
            "memory_bus_width", [](const Device& d) { return d.attribute(37); }, "Global memory bus width in bits.")
        .def_property_readonly(
            "warp_size", [](const Device& d) { return d.attribute(10); }, "Threads per warp.")
        .def_property_readonly(
            "max_threads_per_block", [](const Device& d) { return d.attribute(1); }, "Maximum threads per block.")
        .def_property_readonly(
            "max_threads_per_multiprocessor", [](const Device& d) { return d.attribute(39); }, "Maximum resident threads per SM.")
        .def_property_readonly(
            "max_shared_memory_per_block", [](const Device& d) { return d.attribute(8); }, "Shared memory per block without opt-in, bytes.")
        .def_property_readonly(
            "max_shared_memory_per_block_optin", [](const Device& d) { return d.attribute(97); }, "Shared memory per block with opt-in (FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES), bytes.")
        .def_property_readonly(
            "max_shared_memory_per_multiprocessor", [](const Device& d) { return d.attribute(81); }, "Shared memory per SM, bytes.")
        .def_property_readonly(
            "max_registers_per_block", [](const Device& d) { return d.attribute(12); }, "32-bit registers per block.")
        .def_property_readonly(
            "cooperative_launch", [](const Device& d) { return d.attribute(95) != 0; },
            "Supports cooperative launches.")
        .def_property_readonly(
            "cluster_launch", [](const Device& d) { return d.attribute(120) != 0; },
            "Supports thread block clusters (compute capability 9.0+).")
        .def(
            "get_attribute",
            [](const Device& d, py::handle attribute) {
                return d.attribute(static_cast<int>(
                    to_int_in(attribute, "attribute", 0, 0x7FFFFFFF)));
            },
            py::arg("attribute"), "cuDeviceGetAttribute (see DeviceAttribute).")
        .def(
            "primary_context",
            [](const Device& d) {
                return std::make_unique<Context>(d, PrimaryContextRef::retain(d.device));
            },
            "Retain this device's primary context (released by Context.close()).")
        .def("__eq__",
             [](const Device& a, py::object b) {
                 return py::isinstance<Device>(b) && a.ordinal == b.cast<const Device&>().ordinal;
             })
        .def("__hash__", [](const Device& d) { return py::hash(py::make_tuple("Device", d.ordinal)); })
        .def("__repr__", [](const Device& d) { return "<Device " + std::to_string(d.ordinal) + ">"; })
        .def("__int__", [](const Device& d) { return d.ordinal; })
        .def("__index__", [](const Device& d) { return d.ordinal; });

    py::class_<Context>(m, "Context", "A retained primary context.")
        .def_property_readonly("handle", &Context::handle)
        .def_property_readonly("device", &Context::device)
        .def_property_readonly("closed", &Context::closed)
        .def("set_current", &Context::set_current, "cuCtxSetCurrent on the calling thread.")
        .def("synchronize", &Context::synchronize, "cuCtxSynchronize (GIL released).")
        .def("enable_peer_access", &Context::enable_peer_access, py::arg("peer"),
             "cuCtxEnablePeerAccess: let this context access `peer`'s memory. True if enabled "
             "now, False if it already was.")
        .def("close", &Context::close, "Release the retained primary context (idempotent).")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](Context& c, py::args) { c.close(); })
        .def("__repr__", [](const Context& c) {
            return "<Context device=" + std::to_string(c.device().ordinal) +
                   (c.closed() ? " closed>" : ">");
        });
}

}  // namespace pgk
