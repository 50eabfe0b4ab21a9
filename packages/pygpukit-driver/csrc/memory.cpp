// Device memory: allocation and copies. Pointers and streams are plain ints.
#include <optional>

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

// A Context object (its .handle) or an int CUcontext handle.
CUcontext to_context(py::handle obj, const char* what) {
    if (!PyIndex_Check(obj.ptr()) && py::hasattr(obj, "handle"))
        return reinterpret_cast<CUcontext>(static_cast<std::uintptr_t>(
            to_u64(obj.attr("handle"), what)));
    return reinterpret_cast<CUcontext>(static_cast<std::uintptr_t>(to_u64(obj, what)));
}

// One side of a 2D copy: a device pointer (int) or a host buffer.
struct Side {
    bool host = false;
    CUdeviceptr dev = 0;
    void* ptr = nullptr;
    std::optional<BufferView> view;
};

Side to_side(py::handle obj, const char* what, bool writable) {
    Side s;
    if (PyIndex_Check(obj.ptr())) {
        s.dev = to_ptr(obj, what);
        return s;
    }
    s.host = true;
    s.view.emplace(obj, what,
                   writable ? BufferView::Mode::WriteCContiguous : BufferView::Mode::ReadAnyContiguous);
    s.ptr = s.view->data();
    return s;
}

void copy_2d(py::handle dst_obj, py::handle dst_pitch_obj, py::handle src_obj,
             py::handle src_pitch_obj, py::handle width_obj, py::handle height_obj,
             py::handle stream_obj, bool async) {
    std::size_t dpitch = to_size(dst_pitch_obj, "dst_pitch");
    std::size_t spitch = to_size(src_pitch_obj, "src_pitch");
    std::size_t width = to_size(width_obj, "width");
    std::size_t height = to_size(height_obj, "height");
    if (width > dpitch) throw py::value_error("width must be <= dst_pitch");
    if (width > spitch) throw py::value_error("width must be <= src_pitch");
    Side dst = to_side(dst_obj, "dst", true);
    Side src = to_side(src_obj, "src", false);
    CUstream stream = async ? to_stream(stream_obj, "stream") : nullptr;
    if (width == 0 || height == 0) return;
    auto check = [&](const Side& side, std::size_t pitch, const char* what) {
        if (!side.host) return;
        std::size_t need = (height - 1) * pitch + width;
        if (need > side.view->size())
            throw py::value_error(std::string(what) + " buffer is too small: " +
                                  std::to_string(height) + " rows need " + std::to_string(need) +
                                  " bytes, it has " + std::to_string(side.view->size()));
    };
    check(dst, dpitch, "dst");
    check(src, spitch, "src");
    CUDA_MEMCPY2D c{};
    c.srcMemoryType = src.host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    c.srcHost = src.ptr;
    c.srcDevice = src.dev;
    c.srcPitch = spitch;
    c.dstMemoryType = dst.host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    c.dstHost = dst.ptr;
    c.dstDevice = dst.dev;
    c.dstPitch = dpitch;
    c.WidthInBytes = width;
    c.Height = height;
    py::gil_scoped_release nogil;
    if (async)
        CU(cuMemcpy2DAsync)(&c, stream);
    else
        CU(cuMemcpy2D)(&c);
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
            py::gil_scoped_release nogil;
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
            py::gil_scoped_release nogil;
            CU(cuMemsetD32Async)(p, value, count, stream);
        },
        py::arg("ptr"), py::arg("value"), py::arg("count"), py::arg("stream"),
        "Set `count` 32-bit words to `value`, asynchronously (ptr must be 4-byte aligned).");

    m.def(
        "memset_d16_async",
        [](py::handle ptr_obj, py::handle value_obj, py::handle count_obj, py::handle stream_obj) {
            CUdeviceptr p = to_ptr(ptr_obj, "ptr");
            long long v = to_int_in(value_obj, "value", -0x8000LL, 0xFFFFLL);
            auto value = static_cast<unsigned short>(static_cast<std::uint16_t>(v));
            std::size_t count = to_size(count_obj, "count");
            CUstream stream = to_stream(stream_obj, "stream");
            if (count == 0) return;
            py::gil_scoped_release nogil;
            CU(cuMemsetD16Async)(p, value, count, stream);
        },
        py::arg("ptr"), py::arg("value"), py::arg("count"), py::arg("stream"),
        "Set `count` 16-bit words to `value`, asynchronously (ptr must be 2-byte aligned).");

    m.def(
        "memcpy_2d",
        [](py::handle dst, py::handle dst_pitch, py::handle src, py::handle src_pitch,
           py::handle width, py::handle height) {
            copy_2d(dst, dst_pitch, src, src_pitch, width, height, nullptr, false);
        },
        py::arg("dst"), py::arg("dst_pitch"), py::arg("src"), py::arg("src_pitch"),
        py::arg("width"), py::arg("height"),
        "cuMemcpy2D: copy `height` rows of `width` bytes; dst/src are device pointers (int) or "
        "host buffers, each row starting `pitch` bytes after the previous one.");

    m.def(
        "memcpy_2d_async",
        [](py::handle dst, py::handle dst_pitch, py::handle src, py::handle src_pitch,
           py::handle width, py::handle height, py::handle stream) {
            copy_2d(dst, dst_pitch, src, src_pitch, width, height, stream, true);
        },
        py::arg("dst"), py::arg("dst_pitch"), py::arg("src"), py::arg("src_pitch"),
        py::arg("width"), py::arg("height"), py::arg("stream"),
        "cuMemcpy2DAsync; host buffers must stay alive and unchanged until the copy completes.");

    m.def(
        "memcpy_peer",
        [](py::handle dst, py::handle dst_ctx, py::handle src, py::handle src_ctx,
           py::handle nbytes) {
            CUdeviceptr d = to_ptr(dst, "dst"), s = to_ptr(src, "src");
            CUcontext dc = to_context(dst_ctx, "dst_context"), sc = to_context(src_ctx, "src_context");
            std::size_t n = to_size(nbytes, "nbytes");
            if (n == 0) return;
            py::gil_scoped_release nogil;
            CU(cuMemcpyPeer)(d, dc, s, sc, n);
        },
        py::arg("dst"), py::arg("dst_context"), py::arg("src"), py::arg("src_context"),
        py::arg("nbytes"), "cuMemcpyPeer: copy between the memory of two contexts (devices).");

    m.def(
        "memcpy_peer_async",
        [](py::handle dst, py::handle dst_ctx, py::handle src, py::handle src_ctx,
           py::handle nbytes, py::handle stream_obj) {
            CUdeviceptr d = to_ptr(dst, "dst"), s = to_ptr(src, "src");
            CUcontext dc = to_context(dst_ctx, "dst_context"), sc = to_context(src_ctx, "src_context");
            std::size_t n = to_size(nbytes, "nbytes");
            CUstream stream = to_stream(stream_obj, "stream");
            if (n == 0) return;
            py::gil_scoped_release nogil;
            CU(cuMemcpyPeerAsync)(d, dc, s, sc, n, stream);
        },
        py::arg("dst"), py::arg("dst_context"), py::arg("src"), py::arg("src_context"),
        py::arg("nbytes"), py::arg("stream"), "cuMemcpyPeerAsync.");
}

}  // namespace pgk
