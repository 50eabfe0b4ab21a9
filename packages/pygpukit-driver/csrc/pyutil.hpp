// Argument conversion and validation shared by the bindings.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <pybind11/pybind11.h>

#include "cuda_decls.hpp"

namespace pgk {

namespace py = pybind11;

// A non-negative int (anything with __index__) up to 2**64-1; TypeError/ValueError name `what`.
std::uint64_t to_u64(py::handle obj, const char* what);
// An int in [lo, hi]; TypeError/ValueError name `what`.
long long to_int_in(py::handle obj, const char* what, long long lo, long long hi);
// A stream argument: an int handle (0 = legacy default stream) or a Stream object.
CUstream to_stream(py::handle obj, const char* what);
// 1 to 3 positive ints, or one int; missing trailing dimensions are 1.
std::array<unsigned int, 3> to_dim3(py::handle obj, const char* what);
std::string type_name(py::handle obj);

// A Python buffer held for the lifetime of this object (release needs the GIL).
class BufferView {
public:
    enum class Mode { ReadCContiguous, WriteCContiguous, ReadAnyContiguous };
    BufferView(py::handle obj, const char* what, Mode mode);
    ~BufferView();
    BufferView(const BufferView&) = delete;
    BufferView& operator=(const BufferView&) = delete;
    BufferView(BufferView&& other) noexcept;
    BufferView& operator=(BufferView&&) = delete;

    void* data() const { return view_.buf; }
    std::size_t size() const { return static_cast<std::size_t>(view_.len); }

private:
    Py_buffer view_{};
    bool held_ = false;
};

// Implemented with the Stream class: the handle if obj is a Stream, else nullopt-like false.
bool stream_handle_of(py::handle obj, CUstream* out);

}  // namespace pgk
