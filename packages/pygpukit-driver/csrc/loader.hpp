// Finding, loading and initializing the CUDA driver library.
#pragma once

#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include "driver_api.hpp"
#include "errors.hpp"

namespace pgk {

// Environment variable naming a driver library to load instead of the default.
constexpr const char* kDriverEnvVar = "PYGPUKIT_CUDA_DRIVER";

// Loads the library and resolves the table. Called once at module import; never throws.
void load_driver_library();

bool library_loaded();
std::string library_path();  // empty when not loaded

// cuInit(0) exactly once (thread-safe; releases the GIL while waiting). True when usable.
bool try_init();
// Empty when available, else why not (names what was searched and the error).
std::string unavailable_reason();
// Throws UnavailableError unless the library is loaded and cuInit succeeded.
void require_init();
// Throws UnavailableError unless the library is loaded (cuInit not needed).
void require_library();

// A checked driver entry point: calling it throws CudaError on a non-success CUresult.
template <class F>
struct Api {
    F* fn;
    const char* name;
    int min_version;  // the CUDA version that introduced the entry point, e.g. 12040

    template <class... A>
    void operator()(A... a) const {
        CUresult r = raw(a...);
        if (r != CUDA_SUCCESS) throw_cuda(r, name);
    }
    // Returns the CUresult instead of throwing on it (throws only if the symbol is missing).
    template <class... A>
    CUresult raw(A... a) const {
        if (fn == nullptr) throw_missing_symbol(name, min_version);
        return fn(a...);
    }
    // Never throws: for destructors and cleanup paths.
    template <class... A>
    CUresult quiet(A... a) const noexcept {
        if (fn == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
        return fn(a...);
    }
};

void register_loader(pybind11::module_& m);

}  // namespace pgk

// CU(cuMemAlloc)(&ptr, n): initializes the driver if needed, calls, throws CudaError on failure.
#define CU(name)                                                                   \
    (::pgk::require_init(), ::pgk::Api<::pgk::Driver::name##_t>{::pgk::driver().name, #name, \
                                                                ::pgk::Driver::name##_version})
// CU_NOINIT(name): the same entry point without the init check (cleanup paths).
#define CU_NOINIT(name)                                                      \
    (::pgk::Api<::pgk::Driver::name##_t>{::pgk::driver().name, #name,      \
                                         ::pgk::Driver::name##_version})
// True when the loaded driver provides the entry point.
#define CU_HAS(name) (::pgk::driver().name != nullptr)
