// Stream and Event: owned driver handles that keep their primary context retained.
#include <memory>
#include <mutex>
#include <shared_mutex>

#include <pybind11/stl.h>

#include "context.hpp"
#include "loader.hpp"
#include "pyutil.hpp"

namespace py = pybind11;

namespace pgk {
namespace {

class Stream {
public:
    Stream(bool non_blocking, int priority) {
        PrimaryContextRef ref = PrimaryContextRef::retain_current();
        unsigned int flags = non_blocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT;
        CU(cuStreamCreateWithPriority)(&stream_, flags, priority);
        ref_ = std::move(ref);  // only now: on failure above `ref` releases itself
    }
    ~Stream() {
        std::unique_lock<std::shared_mutex> lock(mu_);
        destroy_locked();
    }

    CUstream get_locked() const {
        if (stream_ == nullptr) throw py::value_error("Stream is closed");
        return stream_;
    }
    std::uintptr_t handle() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return reinterpret_cast<std::uintptr_t>(get_locked());
    }
    void synchronize() const {
        py::gil_scoped_release nogil;
        std::shared_lock<std::shared_mutex> lock(mu_);
        CU(cuStreamSynchronize)(get_locked());
    }
    bool query() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        CUresult r = CU(cuStreamQuery).raw(get_locked());
        if (r == CUDA_SUCCESS) return true;
        if (r == CUDA_ERROR_NOT_READY) return false;
        throw_cuda(r, "cuStreamQuery");
    }
    void close() {
        py::gil_scoped_release nogil;
        std::unique_lock<std::shared_mutex> lock(mu_);
        destroy_locked();
    }
    bool closed() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return stream_ == nullptr;
    }

private:
    void destroy_locked() noexcept {
        if (stream_ == nullptr) return;
        CU_NOINIT(cuStreamDestroy).quiet(stream_);
        stream_ = nullptr;
        ref_.release();
    }

    mutable std::shared_mutex mu_;
    CUstream stream_ = nullptr;
    PrimaryContextRef ref_;
};

class Event {
public:
    explicit Event(bool timing) {
        PrimaryContextRef ref = PrimaryContextRef::retain_current();
        CU(cuEventCreate)(&event_, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING);
        ref_ = std::move(ref);
    }
    ~Event() {
        std::unique_lock<std::shared_mutex> lock(mu_);
        destroy_locked();
    }

    CUevent get_locked() const {
        if (event_ == nullptr) throw py::value_error("Event is closed");
        return event_;
    }
    std::uintptr_t handle() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return reinterpret_cast<std::uintptr_t>(get_locked());
    }
    void record(py::handle stream_obj) const {
        CUstream s = to_stream(stream_obj, "stream");
        std::shared_lock<std::shared_mutex> lock(mu_);
        CU(cuEventRecord)(get_locked(), s);
    }
    void synchronize() const {
        py::gil_scoped_release nogil;
        std::shared_lock<std::shared_mutex> lock(mu_);
        CU(cuEventSynchronize)(get_locked());
    }
    bool query() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        CUresult r = CU(cuEventQuery).raw(get_locked());
        if (r == CUDA_SUCCESS) return true;
        if (r == CUDA_ERROR_NOT_READY) return false;
        throw_cuda(r, "cuEventQuery");
    }
    float elapsed_time(const Event& end) const {
        // Lock both (once if they are the same event), in address order.
        const Event* first = this < &end ? this : &end;
        const Event* second = this < &end ? &end : this;
        std::shared_lock<std::shared_mutex> lock(first->mu_);
        std::shared_lock<std::shared_mutex> lock_end;
        if (second != first) lock_end = std::shared_lock(second->mu_);
        float ms = 0.0f;
        CUevent e = &end == this ? get_locked() : end.get_locked();
        CU(cuEventElapsedTime)(&ms, get_locked(), e);
        return ms;
    }
    void close() {
        py::gil_scoped_release nogil;
        std::unique_lock<std::shared_mutex> lock(mu_);
        destroy_locked();
    }
    bool closed() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return event_ == nullptr;
    }
    std::shared_lock<std::shared_mutex> use() const { return std::shared_lock(mu_); }

private:
    void destroy_locked() noexcept {
        if (event_ == nullptr) return;
        CU_NOINIT(cuEventDestroy).quiet(event_);
        event_ = nullptr;
        ref_.release();
    }

    mutable std::shared_mutex mu_;
    CUevent event_ = nullptr;
    PrimaryContextRef ref_;
};

}  // namespace

bool stream_handle_of(py::handle obj, CUstream* out) {
    if (!py::isinstance<Stream>(obj)) return false;
    *out = reinterpret_cast<CUstream>(obj.cast<const Stream&>().handle());
    return true;
}

void register_stream_event(py::module_& m) {
    m.attr("STREAM_LEGACY") = static_cast<std::uintptr_t>(CU_STREAM_LEGACY);
    m.attr("STREAM_PER_THREAD") = static_cast<std::uintptr_t>(CU_STREAM_PER_THREAD);

    m.def(
        "stream_priority_range",
        [] {
            int least = 0, greatest = 0;
            CU(cuCtxGetStreamPriorityRange)(&least, &greatest);
            return py::make_tuple(least, greatest);
        },
        "(least, greatest) stream priority of the current context; greatest is numerically lowest.");

    m.def(
        "stream_wait_event",
        [](py::handle stream_obj, const Event& event) {
            CUstream s = to_stream(stream_obj, "stream");
            auto guard = event.use();
            CU(cuStreamWaitEvent)(s, event.get_locked(), 0);
        },
        py::arg("stream"), py::arg("event"), "Make `stream` wait for `event` (cuStreamWaitEvent).");

    py::class_<Stream>(m, "Stream", "A CUstream owned by this object, in the current context.")
        .def(py::init([](bool non_blocking, py::handle priority) {
                 int p = static_cast<int>(to_int_in(priority, "priority", -0x80000000LL, 0x7FFFFFFFLL));
                 return std::make_unique<Stream>(non_blocking, p);
             }),
             py::arg("non_blocking") = true, py::arg("priority") = 0)
        .def_property_readonly("handle", &Stream::handle)
        .def_property_readonly("closed", &Stream::closed)
        .def("synchronize", &Stream::synchronize, "cuStreamSynchronize (GIL released).")
        .def("query", &Stream::query, "True if all work on the stream has completed.")
        .def("close", &Stream::close, "Destroy the stream (idempotent).")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](Stream& s, py::args) { s.close(); })
        .def("__int__", &Stream::handle)
        .def("__repr__", [](const Stream& s) {
            if (s.closed()) return std::string("<Stream closed>");
            return "<Stream handle=0x" + [&] {
                char buf[32];
                std::snprintf(buf, sizeof(buf), "%llx",
                              static_cast<unsigned long long>(s.handle()));
                return std::string(buf);
            }() + ">";
        });

    py::class_<Event>(m, "Event", "A CUevent owned by this object, in the current context.")
        .def(py::init([](bool timing) { return std::make_unique<Event>(timing); }),
             py::arg("timing") = true)
        .def_property_readonly("handle", &Event::handle)
        .def_property_readonly("closed", &Event::closed)
        .def("record", &Event::record, py::arg("stream") = 0, "cuEventRecord on `stream`.")
        .def("synchronize", &Event::synchronize, "cuEventSynchronize (GIL released).")
        .def("query", &Event::query, "True if the recorded work has completed.")
        .def("elapsed_time", &Event::elapsed_time, py::arg("end"),
             "Milliseconds from this event to `end` (both recorded and completed).")
        .def("close", &Event::close, "Destroy the event (idempotent).")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](Event& e, py::args) { e.close(); })
        .def("__repr__", [](const Event& e) {
            return std::string(e.closed() ? "<Event closed>" : "<Event>");
        });
}

}  // namespace pgk
