#include "pyutil.hpp"

#include <utility>

namespace pgk {

std::string type_name(py::handle obj) { return Py_TYPE(obj.ptr())->tp_name; }

namespace {

// Converts with __index__ (so bool and numpy integers work, float does not).
py::int_ as_index(py::handle obj, const char* what) {
    if (!PyIndex_Check(obj.ptr()))
        throw py::type_error(std::string(what) + " must be an int, got " + type_name(obj));
    return py::reinterpret_steal<py::int_>(PyNumber_Index(obj.ptr()));
}

}  // namespace

std::uint64_t to_u64(py::handle obj, const char* what) {
    py::int_ v = as_index(obj, what);
    if (!v) throw py::error_already_set();
    int overflow = 0;
    long long s = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (overflow < 0 || (overflow == 0 && s < 0)) {
        PyErr_Clear();
        throw py::value_error(std::string(what) + " must be non-negative, got " +
                              py::str(v).cast<std::string>());
    }
    if (overflow == 0) return static_cast<std::uint64_t>(s);
    unsigned long long u = PyLong_AsUnsignedLongLong(v.ptr());
    if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
        PyErr_Clear();
        throw py::value_error(std::string(what) + " is too large (must fit in 64 bits), got " +
                              py::str(v).cast<std::string>());
    }
    return u;
}

long long to_int_in(py::handle obj, const char* what, long long lo, long long hi) {
    py::int_ v = as_index(obj, what);
    if (!v) throw py::error_already_set();
    int overflow = 0;
    long long s = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (overflow != 0 || s < lo || s > hi) {
        PyErr_Clear();
        throw py::value_error(std::string(what) + " must be in [" + std::to_string(lo) + ", " +
                              std::to_string(hi) + "], got " + py::str(v).cast<std::string>());
    }
    return s;
}

CUstream to_stream(py::handle obj, const char* what) {
    CUstream s = nullptr;
    if (stream_handle_of(obj, &s)) return s;
    if (obj.is_none()) return nullptr;
    return reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(to_u64(obj, what)));
}

std::array<unsigned int, 3> to_dim3(py::handle obj, const char* what) {
    std::array<unsigned int, 3> dims{1, 1, 1};
    const long long max = 0xFFFFFFFFLL;
    if (PyIndex_Check(obj.ptr())) {
        dims[0] = static_cast<unsigned int>(to_int_in(obj, what, 1, max));
        return dims;
    }
    if (!PyTuple_Check(obj.ptr()) && !PyList_Check(obj.ptr()))
        throw py::type_error(std::string(what) +
                             " must be an int or a tuple of 1 to 3 ints, got " + type_name(obj));
    py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
    size_t n = seq.size();
    if (n < 1 || n > 3)
        throw py::value_error(std::string(what) + " must have 1 to 3 dimensions, got " +
                              std::to_string(n));
    for (size_t i = 0; i < n; ++i) {
        std::string name = std::string(what) + "[" + std::to_string(i) + "]";
        dims[i] = static_cast<unsigned int>(to_int_in(seq[i], name.c_str(), 1, max));
    }
    return dims;
}

BufferView::BufferView(py::handle obj, const char* what, Mode mode) {
    if (!PyObject_CheckBuffer(obj.ptr()))
        throw py::type_error(std::string(what) +
                             " must support the buffer protocol (bytes, bytearray, memoryview, "
                             "array.array, numpy array, ctypes object...), got " +
                             type_name(obj));
    int flags = 0;
    switch (mode) {
        case Mode::ReadCContiguous: flags = PyBUF_C_CONTIGUOUS; break;
        case Mode::WriteCContiguous: flags = PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE; break;
        case Mode::ReadAnyContiguous: flags = PyBUF_ANY_CONTIGUOUS; break;
    }
    if (PyObject_GetBuffer(obj.ptr(), &view_, flags) == 0) {
        held_ = true;
        return;
    }
    std::string original = py::error_already_set().what();
    if (mode == Mode::WriteCContiguous) {
        // Tell a read-only buffer apart from a non-contiguous one.
        Py_buffer probe{};
        if (PyObject_GetBuffer(obj.ptr(), &probe, PyBUF_FULL_RO) == 0) {
            bool readonly = probe.readonly != 0;
            PyBuffer_Release(&probe);
            if (readonly)
                throw py::type_error(std::string(what) + " must be a writable buffer, got a "
                                     "read-only " + type_name(obj));
        } else {
            PyErr_Clear();
        }
    }
    throw py::value_error(std::string(what) + " must be a " +
                          (mode == Mode::ReadAnyContiguous ? "contiguous" : "C-contiguous") +
                          " buffer (" + original + ")");
}

BufferView::BufferView(BufferView&& other) noexcept : view_(other.view_), held_(other.held_) {
    other.held_ = false;
}

BufferView::~BufferView() {
    if (held_) PyBuffer_Release(&view_);
}

}  // namespace pgk
