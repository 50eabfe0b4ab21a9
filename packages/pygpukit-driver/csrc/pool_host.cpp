// Memory pools (the device's default pool for stream-ordered allocation), pinned host memory
// (cuMemHostAlloc, exposed through the buffer protocol) and page-locking of existing buffers.
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>

#include <pybind11/stl.h>

#include "context.hpp"
#include "loader.hpp"
#include "pyutil.hpp"
#include "resources.hpp"

namespace py = pybind11;

namespace pgk {
namespace {

// A device's default memory pool (owned by the driver: never destroyed by us).
class MemPool {
public:
    explicit MemPool(int ordinal) : ordinal_(ordinal) {
        require_init();
        CU(cuDeviceGet)(&device_, ordinal);
        CU(cuDeviceGetDefaultMemPool)(&pool_, device_);
    }
    std::uint64_t get(int attr) const {
        cuuint64_t v = 0;
        CU(cuMemPoolGetAttribute)(pool_, attr, &v);
        return v;
    }
    void set(int attr, std::uint64_t value) const {
        cuuint64_t v = value;
        CU(cuMemPoolSetAttribute)(pool_, attr, &v);
    }
    void trim_to(std::size_t keep) const {
        py::gil_scoped_release nogil;
        CU(cuMemPoolTrimTo)(pool_, keep);
    }
    std::uint64_t alloc_async(py::handle nbytes_obj, py::handle stream_obj) const {
        std::size_t n = static_cast<std::size_t>(to_u64(nbytes_obj, "nbytes"));
        if (n == 0) throw py::value_error("nbytes must be positive, got 0");
        std::shared_lock<std::shared_mutex> guard;
        CUstream s = lock_stream_arg(stream_obj, "stream", guard);
        CUdeviceptr p = 0;
        py::gil_scoped_release nogil;
        CU(cuMemAllocFromPoolAsync)(&p, n, pool_, s);
        return p;
    }
    int ordinal() const { return ordinal_; }
    std::uintptr_t handle() const { return reinterpret_cast<std::uintptr_t>(pool_); }

private:
    int ordinal_ = 0;
    CUdevice device_ = 0;
    CUmemoryPool pool_ = nullptr;
};

// Pinned (page-locked) host memory from cuMemHostAlloc, readable and writable through the
// buffer protocol. Freed by close() or GC; close() refuses while buffers are exported.
class HostMemory {
public:
    HostMemory(std::size_t n, unsigned int flags) : size_(n), flags_(flags) {
        PrimaryContextRef ref = PrimaryContextRef::retain_current();
        {
            py::gil_scoped_release nogil;
            CU(cuMemHostAlloc)(&ptr_, n, flags);
        }
        ref_ = std::move(ref);
    }
    ~HostMemory() {
        std::unique_lock<std::shared_mutex> lock(mu_);
        destroy_locked();
    }
    void* get_locked() const {
        if (ptr_ == nullptr) throw py::value_error("HostMemory is closed");
        return ptr_;
    }
    std::uintptr_t ptr() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return reinterpret_cast<std::uintptr_t>(get_locked());
    }
    std::size_t size() const { return size_; }
    std::uint64_t device_pointer() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        CUdeviceptr d = 0;
        ScopedCurrent current(ref_.context());
        CU(cuMemHostGetDevicePointer)(&d, get_locked(), 0);
        return d;
    }
    bool closed() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return ptr_ == nullptr;
    }
    void close() {
        int n = exports_.load();
        if (n > 0)
            throw py::buffer_error("HostMemory cannot be closed while " + std::to_string(n) +
                                   " exported buffer(s) (memoryview, numpy array...) use it");
        py::gil_scoped_release nogil;
        std::unique_lock<std::shared_mutex> lock(mu_);
        destroy_locked();
    }

    // Buffer protocol slots (installed on the type after registration).
    static int getbuffer(PyObject* self, Py_buffer* view, int flags) noexcept {
        try {
            HostMemory* h = py::handle(self).cast<HostMemory*>();
            std::shared_lock<std::shared_mutex> lock(h->mu_);
            if (h->ptr_ == nullptr) {
                PyErr_SetString(PyExc_BufferError, "HostMemory is closed");
                return -1;
            }
            if (PyBuffer_FillInfo(view, self, h->ptr_, static_cast<Py_ssize_t>(h->size_), 0,
                                  flags) != 0)
                return -1;
            h->exports_.fetch_add(1);
            return 0;
        } catch (...) {
            set_error_from_current_exception();
            return -1;
        }
    }
    static void releasebuffer(PyObject* self, Py_buffer*) noexcept {
        try {
            py::handle(self).cast<HostMemory*>()->exports_.fetch_sub(1);
        } catch (...) {
        }
    }

private:
    void destroy_locked() noexcept {
        if (ptr_ == nullptr) return;
        {
            ScopedCurrent current(ref_.context());
            CU_NOINIT(cuMemFreeHost).quiet(ptr_);
        }
        ptr_ = nullptr;
        ref_.release();
    }
    mutable std::shared_mutex mu_;
    void* ptr_ = nullptr;
    std::size_t size_ = 0;
    unsigned int flags_ = 0;
    std::atomic<int> exports_{0};
    PrimaryContextRef ref_;
};

// An existing writable buffer page-locked with cuMemHostRegister until close()/GC; the buffer
// is held (so it cannot be resized or freed) for as long.
class HostRegistration {
public:
    HostRegistration(py::handle obj, unsigned int flags) {
        BufferView::Mode mode = (flags & CU_MEMHOSTREGISTER_READ_ONLY)
                                    ? BufferView::Mode::ReadCContiguous
                                    : BufferView::Mode::WriteCContiguous;
        view_.emplace(obj, "buffer", mode);
        if (view_->size() == 0) throw py::value_error("buffer is empty");
        PrimaryContextRef ref = PrimaryContextRef::retain_current();
        {
            py::gil_scoped_release nogil;
            CU(cuMemHostRegister)(view_->data(), view_->size(), flags);
        }
        ptr_ = view_->data();
        size_ = view_->size();
        ref_ = std::move(ref);
    }
    ~HostRegistration() {
        std::unique_lock<std::shared_mutex> lock(mu_);
        unregister_locked();
        view_.reset();  // GIL held here (GC or close())
    }
    void close() {
        {
            py::gil_scoped_release nogil;
            std::unique_lock<std::shared_mutex> lock(mu_);
            unregister_locked();
        }
        std::unique_lock<std::shared_mutex> lock(mu_);
        view_.reset();
    }
    std::uintptr_t ptr() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        if (ptr_ == nullptr) throw py::value_error("HostRegistration is closed");
        return reinterpret_cast<std::uintptr_t>(ptr_);
    }
    std::size_t size() const { return size_; }
    std::uint64_t device_pointer() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        if (ptr_ == nullptr) throw py::value_error("HostRegistration is closed");
        CUdeviceptr d = 0;
        ScopedCurrent current(ref_.context());
        CU(cuMemHostGetDevicePointer)(&d, ptr_, 0);
        return d;
    }
    bool closed() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return ptr_ == nullptr;
    }

private:
    void unregister_locked() noexcept {
        if (ptr_ == nullptr) return;
        {
            ScopedCurrent current(ref_.context());
            CU_NOINIT(cuMemHostUnregister).quiet(ptr_);
        }
        ptr_ = nullptr;
        ref_.release();
    }
    mutable std::shared_mutex mu_;
    std::optional<BufferView> view_;
    void* ptr_ = nullptr;
    std::size_t size_ = 0;
    PrimaryContextRef ref_;
};

}  // namespace

void register_pool_host(py::module_& m) {
    py::class_<MemPool>(m, "MemPool",
                        "A device's default memory pool (cuDeviceGetDefaultMemPool), used by "
                        "mem_alloc_async.")
        .def(py::init([](py::handle device) {
                 return std::make_unique<MemPool>(
                     static_cast<int>(to_int_in(device, "device", 0, 0x7FFFFFFF)));
             }),
             py::arg("device") = 0)
        .def_property_readonly("device", &MemPool::ordinal, "The device ordinal.")
        .def_property_readonly("handle", &MemPool::handle)
        .def_property(
            "release_threshold",
            [](const MemPool& p) { return p.get(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD); },
            [](const MemPool& p, py::handle v) {
                p.set(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, to_u64(v, "release_threshold"));
            },
            "Bytes the pool keeps reserved across synchronizations (CU_MEMPOOL_ATTR_RELEASE_"
            "THRESHOLD); 2**64-1 keeps everything.")
        .def_property_readonly(
            "reserved_mem_current",
            [](const MemPool& p) { return p.get(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT); })
        .def_property_readonly(
            "reserved_mem_high",
            [](const MemPool& p) { return p.get(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH); })
        .def_property_readonly(
            "used_mem_current",
            [](const MemPool& p) { return p.get(CU_MEMPOOL_ATTR_USED_MEM_CURRENT); })
        .def_property_readonly(
            "used_mem_high", [](const MemPool& p) { return p.get(CU_MEMPOOL_ATTR_USED_MEM_HIGH); })
        .def(
            "reset_peaks",
            [](const MemPool& p) {
                p.set(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, 0);
                p.set(CU_MEMPOOL_ATTR_USED_MEM_HIGH, 0);
            },
            "Reset reserved_mem_high and used_mem_high to the current values.")
        .def(
            "trim_to",
            [](const MemPool& p, py::handle keep) {
                p.trim_to(static_cast<std::size_t>(to_u64(keep, "min_bytes_to_keep")));
            },
            py::arg("min_bytes_to_keep"),
            "cuMemPoolTrimTo: give unused reserved memory back to the OS.")
        .def("alloc_async", &MemPool::alloc_async, py::arg("nbytes"), py::arg("stream"),
             "cuMemAllocFromPoolAsync; free with mem_free_async.")
        .def("get_attribute",
             [](const MemPool& p, py::handle attr) {
                 return p.get(static_cast<int>(to_int_in(attr, "attribute", 4, 8)));
             },
             py::arg("attribute"), "A 64-bit CUmemPool_attribute (see MemPoolAttribute).")
        .def("__repr__", [](const MemPool& p) {
            return "<MemPool device=" + std::to_string(p.ordinal()) + ">";
        });

    auto host_cls =
        py::class_<HostMemory>(m, "HostMemory", py::buffer_protocol(),
                               "Pinned host memory (cuMemHostAlloc); a writable buffer.")
            .def(py::init([](py::handle nbytes, bool portable, bool device_map,
                             bool write_combined) {
                     std::size_t n = static_cast<std::size_t>(to_u64(nbytes, "nbytes"));
                     if (n == 0) throw py::value_error("nbytes must be positive, got 0");
                     unsigned int flags = (portable ? CU_MEMHOSTALLOC_PORTABLE : 0u) |
                                          (device_map ? CU_MEMHOSTALLOC_DEVICEMAP : 0u) |
                                          (write_combined ? CU_MEMHOSTALLOC_WRITECOMBINED : 0u);
                     return std::make_unique<HostMemory>(n, flags);
                 }),
                 py::arg("nbytes"), py::arg("portable") = false, py::arg("device_map") = false,
                 py::arg("write_combined") = false)
            .def_property_readonly("ptr", &HostMemory::ptr, "The host address.")
            .def_property_readonly("size", &HostMemory::size)
            .def_property_readonly("device_pointer", &HostMemory::device_pointer,
                                   "cuMemHostGetDevicePointer (mapped memory).")
            .def_property_readonly("closed", &HostMemory::closed)
            .def("__len__", &HostMemory::size)
            .def("close", &HostMemory::close,
                 "cuMemFreeHost (idempotent); BufferError while buffers are exported.")
            .def("__enter__", [](py::object self) { return self; })
            .def("__exit__", [](HostMemory& h, py::args) { h.close(); })
            .def("__repr__", [](const HostMemory& h) {
                return "<HostMemory " + std::to_string(h.size()) + " bytes" +
                       (h.closed() ? " closed>" : ">");
            });
    {
        auto* type = reinterpret_cast<PyTypeObject*>(host_cls.ptr());
        type->tp_as_buffer->bf_getbuffer = &HostMemory::getbuffer;
        type->tp_as_buffer->bf_releasebuffer = &HostMemory::releasebuffer;
    }

    py::class_<HostRegistration>(m, "HostRegistration",
                                 "A buffer page-locked by cuMemHostRegister (host_register).")
        .def_property_readonly("ptr", &HostRegistration::ptr)
        .def_property_readonly("size", &HostRegistration::size)
        .def_property_readonly("device_pointer", &HostRegistration::device_pointer)
        .def_property_readonly("closed", &HostRegistration::closed)
        .def("close", &HostRegistration::close, "cuMemHostUnregister (idempotent).")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](HostRegistration& h, py::args) { h.close(); })
        .def("__repr__", [](const HostRegistration& h) {
            return "<HostRegistration " + std::to_string(h.size()) + " bytes" +
                   (h.closed() ? " closed>" : ">");
        });

    m.def(
        "host_register",
        [](py::handle buffer, bool portable, bool device_map, bool read_only) {
            unsigned int flags = (portable ? CU_MEMHOSTREGISTER_PORTABLE : 0u) |
                                 (device_map ? CU_MEMHOSTREGISTER_DEVICEMAP : 0u) |
                                 (read_only ? CU_MEMHOSTREGISTER_READ_ONLY : 0u);
            return std::make_unique<HostRegistration>(buffer, flags);
        },
        py::arg("buffer"), py::arg("portable") = false, py::arg("device_map") = false,
        py::arg("read_only") = false,
        "cuMemHostRegister: page-lock a C-contiguous (writable unless read_only) buffer until "
        "the returned HostRegistration is closed.");
}

}  // namespace pgk
