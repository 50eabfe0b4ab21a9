#include "errors.hpp"

#include <utility>

#include "driver_api.hpp"
#include "loader.hpp"

namespace py = pybind11;

namespace pgk {
namespace {

struct KnownError {
    CUresult code;
    const char* name;
    const char* description;
};

// Used only when the driver cannot name a code itself (not loaded, or cuGetErrorName missing).
constexpr KnownError kKnownErrors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER", "CUDA driver version is insufficient"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two devices"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "peer access has not been enabled"},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped"},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const KnownError* known(CUresult code) {
    for (const auto& e : kKnownErrors)
        if (e.code == code) return &e;
    return nullptr;
}

std::string format_message(CUresult code, const std::string& api, const std::string& detail) {
    std::string msg = api + " failed: " + error_name(code) + " (" + std::to_string(code) +
                      "): " + error_string(code);
    if (!detail.empty()) msg += "; " + detail;
    return msg;
}

// Builds the Python exception through pygpukit_driver._errors and sets it as the current error.
void set_python_error(const char* factory, CUresult code, const std::string& api,
                      const std::string& text, const char* fallback_message) {
    try {
        py::module_ errors = py::module_::import("pygpukit_driver._errors");
        py::object exc = errors.attr(factory)(code, error_name(code), error_string(code), api, text);
        PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    } catch (py::error_already_set& e) {
        // Should not happen; keep the original failure visible rather than the import error.
        (void)e;
        PyErr_SetString(PyExc_RuntimeError, fallback_message);
    }
}

}  // namespace

CudaError::CudaError(CUresult code_, std::string api_, std::string detail_)
    : code(code_), api(std::move(api_)), detail(std::move(detail_)) {
    message_ = format_message(code, api, detail);
}

UnavailableError::UnavailableError(CUresult code_, std::string api_, std::string reason_)
    : code(code_), api(std::move(api_)), reason(std::move(reason_)) {}

std::string error_name(CUresult code) {
    const char* s = nullptr;
    auto fn = driver().cuGetErrorName;
    if (fn != nullptr && fn(code, &s) == CUDA_SUCCESS && s != nullptr) return s;
    if (const KnownError* e = known(code)) return e->name;
    return "CUDA_ERROR_UNRECOGNIZED";
}

std::string error_string(CUresult code) {
    const char* s = nullptr;
    auto fn = driver().cuGetErrorString;
    if (fn != nullptr && fn(code, &s) == CUDA_SUCCESS && s != nullptr) return s;
    if (const KnownError* e = known(code)) return e->description;
    return "unrecognized CUresult code " + std::to_string(code);
}

void throw_cuda(CUresult code, const char* api, std::string detail) {
    if (code == CUDA_ERROR_INVALID_CONTEXT && detail.empty() &&
        driver().cuCtxGetCurrent != nullptr) {
        CUcontext cur = nullptr;
        if (driver().cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == nullptr)
            detail = "no CUDA context is current on this thread; call "
                     "Device(i).primary_context().set_current() first";
    }
    throw CudaError(code, api, std::move(detail));
}

std::string format_cuda_version(int v) {
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10) + " (" +
           std::to_string(v) + ")";
}

int loaded_driver_version() noexcept {
    int v = 0;
    auto fn = driver().cuDriverGetVersion;
    if (fn == nullptr || fn(&v) != CUDA_SUCCESS) return 0;
    return v;
}

void throw_missing_symbol(const char* api, int min_version) {
    int have = loaded_driver_version();
    std::string msg = std::string("the loaded CUDA driver (CUDA ") +
                      (have > 0 ? format_cuda_version(have) : std::string("version unknown")) +
                      ") does not provide " + api;
    if (min_version > 0) msg += "; it needs a CUDA " + format_cuda_version(min_version) + "+ driver";
    throw CudaError(CUDA_ERROR_NOT_SUPPORTED, api, msg);
}

void set_error_from_current_exception() noexcept {
    try {
        throw;
    } catch (py::error_already_set& e) {
        e.restore();
    } catch (const py::builtin_exception& e) {
        e.set_error();
    } catch (const CudaError& e) {
        set_python_error("_from_native", e.code, e.api, e.detail, e.what());
    } catch (const UnavailableError& e) {
        set_python_error("_unavailable_from_native", e.code, e.api, e.reason, e.what());
    } catch (const std::bad_alloc&) {
        PyErr_NoMemory();
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
    }
}

void register_errors(py::module_& m) {
    (void)m;
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const CudaError& e) {
            set_python_error("_from_native", e.code, e.api, e.detail, e.what());
        } catch (const UnavailableError& e) {
            set_python_error("_unavailable_from_native", e.code, e.api, e.reason, e.what());
        }
    });
}

}  // namespace pgk
