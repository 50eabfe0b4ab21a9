// Stream and Event: owned driver handles that keep their primary context retained.
#include <cstdio>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include <pybind11/stl.h>

#include "context.hpp"
#include "graph_fuse.hpp"
#include "loader.hpp"
#include "pyutil.hpp"
#include "resources.hpp"

namespace py = pybind11;

namespace pgk {
namespace {

PyTypeObject* g_stream_type = nullptr;
PyTypeObject* g_event_type = nullptr;

bool is_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing() != 0;
#else
    return _Py_IsFinalizing() != 0;
#endif
}

// Runs on a driver thread: take the GIL, call, report an exception as unraisable, drop the
// reference taken by launch_host_func. Never lets anything escape into the driver.
void host_trampoline(void* user_data) noexcept {
    auto* fn = static_cast<PyObject*>(user_data);
    if (!Py_IsInitialized() || is_finalizing()) return;  // leak rather than touch a dying VM
    PyGILState_STATE st = PyGILState_Ensure();
    PyObject* r = PyObject_CallObject(fn, nullptr);
    if (r == nullptr)
        PyErr_WriteUnraisable(fn);
    else
        Py_DECREF(r);
    Py_DECREF(fn);
    PyGILState_Release(st);
}

// A stream-captured CUDA graph (owned).
class Graph;
class GraphExec {
public:
    GraphExec(CUgraphExec exec, PrimaryContextRef ref) : exec_(exec), ref_(std::move(ref)) {}
    ~GraphExec() {
        std::unique_lock<std::shared_mutex> lock(mu_);
        destroy_locked();
    }
    void launch(py::handle stream_obj) const {
        std::shared_lock<std::shared_mutex> sguard;
        CUstream s = lock_stream_arg(stream_obj, "stream", sguard);
        std::shared_lock<std::shared_mutex> lock(mu_);
        CUgraphExec e = get_locked();
        py::gil_scoped_release nogil;
        CU(cuGraphLaunch)(e, s);
    }
    CUgraphExec get_locked() const {
        if (exec_ == nullptr) throw py::value_error("GraphExec is closed");
        return exec_;
    }
    std::uintptr_t handle() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return reinterpret_cast<std::uintptr_t>(get_locked());
    }
    bool closed() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return exec_ == nullptr;
    }
    void close() {
        py::gil_scoped_release nogil;
        std::unique_lock<std::shared_mutex> lock(mu_);
        destroy_locked();
    }

private:
    void destroy_locked() noexcept {
        if (exec_ == nullptr) return;
        {
            ScopedCurrent current(ref_.context());
            CU_NOINIT(cuGraphExecDestroy).quiet(exec_);
        }
        exec_ = nullptr;
        ref_.release();
    }
    mutable std::shared_mutex mu_;
    CUgraphExec exec_ = nullptr;
    PrimaryContextRef ref_;
};

class Graph {
public:
    Graph(CUgraph g, PrimaryContextRef ref) : graph_(g), ref_(std::move(ref)) {}
    ~Graph() {
        std::unique_lock<std::shared_mutex> lock(mu_);
        destroy_locked();
    }
    CUgraph get_locked() const {
        if (graph_ == nullptr) throw py::value_error("Graph is closed");
        return graph_;
    }
    std::uintptr_t handle() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return reinterpret_cast<std::uintptr_t>(get_locked());
    }
    std::size_t node_count() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        std::size_t n = 0;
        CU(cuGraphGetNodes)(get_locked(), nullptr, &n);
        return n;
    }
    std::unique_ptr<GraphExec> instantiate(unsigned long long flags) const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        CUgraph g = get_locked();
        PrimaryContextRef ref = PrimaryContextRef::retain(ref_.device());
        CUgraphExec exec = nullptr;
        {
            py::gil_scoped_release nogil;
            ScopedCurrent current(ref.context());
            CU(cuGraphInstantiateWithFlags)(&exec, g, flags);
        }
        return std::make_unique<GraphExec>(exec, std::move(ref));
    }
    bool closed() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return graph_ == nullptr;
    }
    FuseCount fuse_small_steps(const std::unordered_map<CUfunction, StepKind>& kinds,
                               CUfunction program, unsigned block,
                               const std::function<CUdeviceptr(std::size_t)>& alloc) {
        std::unique_lock<std::shared_mutex> lock(mu_);  // edits the graph
        CUgraph g = get_locked();
        ScopedCurrent current(ref_.context());
        return pgk::fuse_small_steps(g, kinds, program, block, alloc);
    }
    void close() {
        py::gil_scoped_release nogil;
        std::unique_lock<std::shared_mutex> lock(mu_);
        destroy_locked();
    }

private:
    void destroy_locked() noexcept {
        if (graph_ == nullptr) return;
        CU_NOINIT(cuGraphDestroy).quiet(graph_);
        graph_ = nullptr;
        ref_.release();
    }
    mutable std::shared_mutex mu_;
    CUgraph graph_ = nullptr;
    PrimaryContextRef ref_;
};

// Event.record(stream=0) as a METH_FASTCALL method: the hot path skips pybind11's dispatcher.
PyObject* event_record_fast(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                            PyObject* kwnames) noexcept {
    try {
        PyObject* stream_obj = nullptr;
        Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
        if (nargs + nkw > 1) throw py::type_error("record() takes at most 1 argument (stream)");
        if (nargs == 1) stream_obj = args[0];
        if (nkw == 1) {
            if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "stream") != 0)
                throw py::type_error("record() got an unexpected keyword argument");
            stream_obj = args[0];
        }
        Event* ev = py::handle(self).cast<Event*>();
        std::shared_lock<std::shared_mutex> sguard;
        CUstream s = nullptr;
        if (stream_obj != nullptr) {
            if (PyLong_CheckExact(stream_obj)) {
                unsigned long long v = PyLong_AsUnsignedLongLong(stream_obj);
                if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
                    PyErr_Clear();
                    throw py::value_error("stream must be a non-negative int handle or a Stream");
                }
                s = reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(v));
            } else {
                s = lock_stream_arg(stream_obj, "stream", sguard);
            }
        }
        auto guard = ev->use();
        CUevent e = ev->get_locked();
        require_init();
        CUresult r;
        {
            PyThreadState* ts = PyEval_SaveThread();
            r = CU_NOINIT(cuEventRecord).raw(e, s);
            PyEval_RestoreThread(ts);
        }
        if (r != CUDA_SUCCESS) throw_cuda(r, "cuEventRecord");
        Py_RETURN_NONE;
    } catch (...) {
        set_error_from_current_exception();
        return nullptr;
    }
}

PyMethodDef g_event_record_def = {
    "record", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(&event_record_fast)),
    METH_FASTCALL | METH_KEYWORDS,
    "record($self, /, stream=0)\n--\n\ncuEventRecord on `stream` (GIL released)."};

}  // namespace

Stream* as_stream(py::handle obj) {
    PyTypeObject* t = Py_TYPE(obj.ptr());
    if (g_stream_type == nullptr || (t != g_stream_type && !PyType_IsSubtype(t, g_stream_type)))
        return nullptr;
    return obj.cast<Stream*>();
}

CUstream lock_stream_arg(py::handle obj, const char* what,
                         std::shared_lock<std::shared_mutex>& guard) {
    if (Stream* s = as_stream(obj)) {
        guard = s->use();
        return s->get_locked();
    }
    if (obj.is_none()) return nullptr;
    return reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(to_u64(obj, what)));
}

bool stream_handle_of(py::handle obj, CUstream* out) {
    Stream* s = as_stream(obj);
    if (s == nullptr) return false;
    *out = reinterpret_cast<CUstream>(s->handle());
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
            std::shared_lock<std::shared_mutex> sguard;
            CUstream s = lock_stream_arg(stream_obj, "stream", sguard);
            auto guard = event.use();
            CUevent e = event.get_locked();
            py::gil_scoped_release nogil;
            CU(cuStreamWaitEvent)(s, e, 0);
        },
        py::arg("stream"), py::arg("event"), "Make `stream` wait for `event` (cuStreamWaitEvent).");

    m.def(
        "launch_host_func",
        [](py::handle stream_obj, py::handle callback) {
            if (!PyCallable_Check(callback.ptr()))
                throw py::type_error("callback must be callable, got " + type_name(callback));
            std::shared_lock<std::shared_mutex> sguard;
            CUstream s = lock_stream_arg(stream_obj, "stream", sguard);
            require_init();
            PyObject* fn = callback.ptr();
            Py_INCREF(fn);  // owned by the trampoline from here on
            CUresult r;
            {
                py::gil_scoped_release nogil;
                r = CU_NOINIT(cuLaunchHostFunc).raw(s, &host_trampoline, fn);
            }
            if (r != CUDA_SUCCESS) {
                Py_DECREF(fn);
                throw_cuda(r, "cuLaunchHostFunc");
            }
        },
        py::arg("stream"), py::arg("callback"),
        "cuLaunchHostFunc: call `callback()` on a driver thread once the work enqueued on "
        "`stream` before it has completed; later work waits for it. The callback holds the GIL "
        "while it runs, must not call CUDA, and its exceptions go to sys.unraisablehook.");

    m.def(
        "stream_begin_capture",
        [](py::handle stream_obj, py::handle mode_obj) {
            int mode = static_cast<int>(to_int_in(mode_obj, "mode", 0, 2));
            std::shared_lock<std::shared_mutex> sguard;
            CUstream s = lock_stream_arg(stream_obj, "stream", sguard);
            CU(cuStreamBeginCapture)(s, mode);
        },
        py::arg("stream"), py::arg("mode") = 0,
        "cuStreamBeginCapture_v2 (mode: CaptureMode.GLOBAL, THREAD_LOCAL or RELAXED).");

    m.def(
        "stream_end_capture",
        [](py::handle stream_obj) {
            std::shared_lock<std::shared_mutex> sguard;
            CUstream s = lock_stream_arg(stream_obj, "stream", sguard);
            PrimaryContextRef ref = PrimaryContextRef::retain_current();
            CUgraph g = nullptr;
            CU(cuStreamEndCapture)(s, &g);
            return std::make_unique<Graph>(g, std::move(ref));
        },
        py::arg("stream"), "cuStreamEndCapture: the captured Graph.");

    m.def(
        "stream_capture_status",
        [](py::handle stream_obj) {
            std::shared_lock<std::shared_mutex> sguard;
            CUstream s = lock_stream_arg(stream_obj, "stream", sguard);
            int st = 0;
            CU(cuStreamIsCapturing)(s, &st);
            return st;
        },
        py::arg("stream"), "cuStreamIsCapturing: CaptureStatus.NONE, ACTIVE or INVALIDATED.");

    auto stream_cls =
        py::class_<Stream>(m, "Stream", "A CUstream owned by this object, in the current context.")
        .def(py::init([](bool non_blocking, py::handle priority) {
                 int p = static_cast<int>(to_int_in(priority, "priority", -0x80000000LL, 0x7FFFFFFFLL));
                 return std::make_unique<Stream>(non_blocking, p);
             }),
             py::arg("non_blocking") = true, py::arg("priority") = 0)
        .def_property_readonly("handle", &Stream::handle)
        .def_property_readonly("closed", &Stream::closed)
        .def_property_readonly("priority", &Stream::priority, "cuStreamGetPriority.")
        .def_property_readonly(
            "non_blocking",
            [](const Stream& s) { return (s.flags() & CU_STREAM_NON_BLOCKING) != 0; },
            "cuStreamGetFlags has CU_STREAM_NON_BLOCKING.")
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
    g_stream_type = reinterpret_cast<PyTypeObject*>(stream_cls.ptr());

    auto event_cls = py::class_<Event>(m, "Event", "A CUevent owned by this object, in the current context.")
        .def(py::init([](bool timing) { return std::make_unique<Event>(timing); }),
             py::arg("timing") = true)
        .def_property_readonly("handle", &Event::handle)
        .def_property_readonly("closed", &Event::closed)
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
    g_event_type = reinterpret_cast<PyTypeObject*>(event_cls.ptr());
    {
        PyObject* descr = PyDescr_NewMethod(g_event_type, &g_event_record_def);
        if (descr == nullptr) throw py::error_already_set();
        event_cls.attr("record") = py::reinterpret_steal<py::object>(descr);
    }

    py::class_<GraphExec>(m, "GraphExec", "An instantiated (executable) graph.")
        .def("launch", &GraphExec::launch, py::arg("stream") = 0, "cuGraphLaunch on `stream`.")
        .def_property_readonly("handle", &GraphExec::handle)
        .def_property_readonly("closed", &GraphExec::closed)
        .def("close", &GraphExec::close, "cuGraphExecDestroy (idempotent).")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](GraphExec& g, py::args) { g.close(); })
        .def("__repr__", [](const GraphExec& g) {
            return std::string(g.closed() ? "<GraphExec closed>" : "<GraphExec>");
        });

    py::class_<Graph>(m, "Graph", "A CUDA graph captured from a stream (stream_end_capture).")
        .def(
            "instantiate",
            [](const Graph& g, py::handle flags) {
                return g.instantiate(to_u64(flags, "flags"));
            },
            py::arg("flags") = 0, "cuGraphInstantiateWithFlags: a GraphExec.")
        .def_property_readonly("node_count", &Graph::node_count, "Number of nodes (cuGraphGetNodes).")
        .def(
            "fuse_small_steps",
            [](Graph& g, const py::dict& kinds, py::handle program, py::handle block,
               const py::function& alloc) {
                std::unordered_map<CUfunction, StepKind> table;
                for (auto item : kinds) {
                    auto value = py::reinterpret_borrow<py::object>(item.second);
                    if (!py::isinstance<py::tuple>(value) || py::len(value) != 2)
                        throw py::type_error("kinds values must be (step kind, parameter count)");
                    auto pair = value.cast<py::tuple>();
                    const std::uint64_t nparams = to_u64(pair[1], "parameter count");
                    if (nparams > 32) throw py::value_error("parameter count must be <= 32");
                    table.emplace(reinterpret_cast<CUfunction>(static_cast<std::uintptr_t>(
                                      to_u64(item.first, "kinds key"))),
                                  StepKind{static_cast<int>(to_u64(pair[0], "step kind")),
                                           static_cast<int>(nparams)});
                }
                auto fn = reinterpret_cast<CUfunction>(
                    static_cast<std::uintptr_t>(to_u64(program, "program")));
                const std::uint64_t threads = to_u64(block, "block");
                if (threads == 0 || threads > 1024)
                    throw py::value_error("block must be 1..1024 threads");
                auto count = g.fuse_small_steps(
                    table, fn, static_cast<unsigned>(threads), [&alloc](std::size_t nbytes) {
                        return static_cast<CUdeviceptr>(
                            to_u64(alloc(nbytes), "alloc(nbytes) result"));
                    });
                return py::make_tuple(count.steps, count.launches);
            },
            py::arg("kinds"), py::arg("program"), py::arg("block"), py::arg("alloc"),
            "Replace each line of >= 2 kernel nodes of the functions `kinds` names (handle -> "
            "(step kind, parameter count)) with one launch of `program` over their steps, in device memory of "
            "alloc(nbytes) (keep it alive with the graph's executables).  Returns (steps, "
            "launches): kernel nodes replaced, program nodes made; (0, 0) when the driver is "
            "older than CUDA 12.4.")
        .def_property_readonly("handle", &Graph::handle)
        .def_property_readonly("closed", &Graph::closed)
        .def("close", &Graph::close, "cuGraphDestroy (idempotent).")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](Graph& g, py::args) { g.close(); })
        .def("__repr__", [](const Graph& g) {
            return std::string(g.closed() ? "<Graph closed>" : "<Graph>");
        });
}

}  // namespace pgk
