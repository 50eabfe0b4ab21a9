// Device memory: allocation and copies. Pointers and streams are plain ints.
#include <pybind11/stl.h>

#include "loader.hpp"
#include "pyutil.hpp"

namespace py = pybind11;

namespace pgk {
namespace {

CUdeviceptr to_ptr(py::handle obj, const char* what) {
    return static_cast<CUdeviceptr>(to_u64(obj, what));
}

std::size_t to_size(py::handle obj, const char* what) {
    return static_cast<std::size_t>(to_u64(obj, what));
}

}  // namespace

void register_memory(py::module_& m) {
    using Mode = BufferView::Mode;

    m.def(
        "mem_alloc",
        [](py::handle nbytes_obj) {
            std::size_t nbytes = to_size(nbytes_obj, "nbytes");
            if (nbytes == 0) throw py::value_error("nbytes must be positive, got 0");
            CUdeviceptr p = 0;
            CU(cuMemAlloc)(&p, nbytes);
            return static_cast<std::uint64_t>(p);
        },
        py::arg("nbytes"), "cuMemAlloc in the current context; returns the device pointer.");

    m.def(
        "mem_free",
        [](py::handle ptr_obj) {
            CUdeviceptr p = to_ptr(ptr_obj, "ptr");
            CU(cuMemFree)(p);
        },
        py::arg("ptr"), "cuMemFree.");

    // Stream-ordered allocation (the device's default memory pool): the memory may be used by
    // work enqueued on `stream` after this call, and a free is ordered after that work, so
    // neither needs a synchronization.
    m.def(
        "mem_alloc_async",
        [](py::handle nbytes_obj, py::handle stream_obj) {
            std::size_t nbytes = to_size(nbytes_obj, "nbytes");
            if (nbytes == 0) throw py::value_error("nbytes must be positive, got 0");
            CUstream stream = to_stream(stream_obj, "stream");
            CUdeviceptr p = 0;
            CU(cuMemAllocAsync)(&p, nbytes, stream);
            return static_cast<std::uint64_t>(p);
        },
        py::arg("nbytes"), py::arg("stream"),
        "cuMemAllocAsync: stream-ordered allocation from the device's default pool.");

    m.def(
        "mem_free_async",
        [](py::handle ptr_obj, py::handle stream_obj) {
            CUdeviceptr p = to_ptr(ptr_obj, "ptr");
            CUstream stream = to_stream(stream_obj, "stream");
            CU(cuMemFreeAsync)(p, stream);
        },
        py::arg("ptr"), py::arg("stream"),
        "cuMemFreeAsync: free after the work already enqueued on `stream`.");

    m.def(
        "mem_get_info",
        [] {
            std::size_t free_b = 0, total_b = 0;
            CU(cuMemGetInfo)(&free_b, &total_b);
            return py::make_tuple(free_b, total_b);
        },
        "(free, total) bytes of the current context's device.");

    m.def(
        "memcpy_htod",
        [](py::handle dst_obj, py::handle src_obj) {
            CUdeviceptr dst = to_ptr(dst_obj, "dst");
            BufferView src(src_obj, "src", Mode::ReadCContiguous);
            if (src.size() == 0) return;
            py::gil_scoped_release nogil;
            CU(cuMemcpyHtoD)(dst, src.data(), src.size());
        },
        py::arg("dst"), py::arg("src"), "Copy all bytes of a host buffer to device memory.");

    m.def(
        "memcpy_dtoh",
        [](py::handle dst_obj, py::handle src_obj) {
            BufferView dst(dst_obj, "dst", Mode::WriteCContiguous);
            CUdeviceptr src = to_ptr(src_obj, "src");
            if (dst.size() == 0) return;
            py::gil_scoped_release nogil;
            CU(cuMemcpyDtoH)(dst.data(), src, dst.size());
        },
        py::arg("dst"), py::arg("src"), "Fill a writable host buffer from device memory.");

    m.def(
        "memcpy_dtod",
        [](py::handle dst_obj, py::handle src_obj, py::handle n_obj) {
            CUdeviceptr dst = to_ptr(dst_obj, "dst");
            CUdeviceptr src = to_ptr(src_obj, "src");
            std::size_t n = to_size(n_obj, "nbytes");
            if (n == 0) return;
            py::gil_scoped_release nogil;
            CU(cuMemcpyDtoD)(dst, src, n);
        },
        py::arg("dst"), py::arg("src"), py::arg("nbytes"), "Device-to-device copy.");

    m.def(
        "memcpy_htod_async",
        [](py::handle dst_obj, py::handle src_obj, py::handle stream_obj) {
            CUdeviceptr dst = to_ptr(dst_obj, "dst");
            BufferView src(src_obj, "src", Mode::ReadCContiguous);
            CUstream stream = to_stream(stream_obj, "stream");
            if (src.size() == 0) return;
            py::gil_scoped_release nogil;
            CU(cuMemcpyHtoDAsync)(dst, src.data(), src.size(), stream);
        },
        py::arg("dst"), py::arg("src"), py::arg("stream"),
        "Async host-to-device copy; the caller keeps src alive and unchanged until it completes.");

    m.def(
        "memcpy_dtoh_async",
        [](py::handle dst_obj, py::handle src_obj, py::handle stream_obj) {
            BufferView dst(dst_obj, "dst", Mode::WriteCContiguous);
            CUdeviceptr src = to_ptr(src_obj, "src");
            CUstream stream = to_stream(stream_obj, "stream");
            if (dst.size() == 0) return;
            py::gil_scoped_release nogil;
            CU(cuMemcpyDtoHAsync)(dst.data(), src, dst.size(), stream);
        },
        py::arg("dst"), py::arg("src"), py::arg("stream"),
        "Async device-to-host copy; the caller keeps dst alive until it completes.");

    m.def(
        "memcpy_dtod_async",
        [](py::handle dst_obj, py::handle src_obj, py::handle n_obj, py::handle stream_obj) {
            CUdeviceptr dst = to_ptr(dst_obj, "dst");
            CUdeviceptr src = to_ptr(src_obj, "src");
            std::size_t n = to_size(n_obj, "nbytes");
            CUstream stream = to_stream(stream_obj, "stream");
            if (n == 0) return;
            py::gil_scoped_release nogil;
            CU(cuMemcpyDtoDAsync)(dst, src, n, stream);
        },
        py::arg("dst"), py::arg("src"), py::arg("nbytes"), py::arg("stream"),
        "Async device-to-device copy.");

    m.def(
        "memset_d8_async",
        [](py::handle ptr_obj, py::handle value_obj, py::handle count_obj, py::handle stream_obj) {
            CUdeviceptr p = to_ptr(ptr_obj, "ptr");
            auto value = static_cast<unsigned char>(to_int_in(value_obj, "value", 0, 0xFF));
            std::size_t count = to_size(count_obj, "count");
            CUstream stream = to_stream(stream_obj, "stream");
            if (count == 0) return;
            CU(cuMemsetD8Async)(p, value, count, stream);
        },
        py::arg("ptr"), py::arg("value"), py::arg("count"), py::arg("stream"),
        "Set `count` bytes to `value` (0..255), asynchronously.");

    m.def(
        "memset_d32_async",
        [](py::handle ptr_obj, py::handle value_obj, py::handle count_obj, py::handle stream_obj) {
            CUdeviceptr p = to_ptr(ptr_obj, "ptr");
            // Negative values are taken as their 32-bit two's complement.
            long long v = to_int_in(value_obj, "value", -0x80000000LL, 0xFFFFFFFFLL);
            auto value = static_cast<unsigned int>(static_cast<std::uint32_t>(v));
            std::size_t count = to_size(count_obj, "count");
            CUstream stream = to_stream(stream_obj, "stream");
            if (count == 0) return;
            CU(cuMemsetD32Async)(p, value, count, stream);
        },
        py::arg("ptr"), py::arg("value"), py::arg("count"), py::arg("stream"),
        "Set `count` 32-bit words to `value`, asynchronously (ptr must be 4-byte aligned).");
}

}  // namespace pgk
