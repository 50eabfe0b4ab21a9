// C++ exceptions for driver errors; translated to pygpukit_driver._errors classes in Python.
#pragma once

#include <exception>
#include <string>

#include <pybind11/pybind11.h>

#include "cuda_decls.hpp"

namespace pgk {

// A failed driver call. Holds no Python objects, so it can be thrown without the GIL.
class CudaError : public std::exception {
public:
    CudaError(CUresult code, std::string api, std::string detail = {});
    const char* what() const noexcept override { return message_.c_str(); }
    CUresult code;
    std::string api;
    std::string detail;  // extra context appended to the message (JIT log, symbol name, hint)

private:
    std::string message_;
};

// The driver library could not be loaded or cuInit failed.
class UnavailableError : public std::exception {
public:
    UnavailableError(CUresult code, std::string api, std::string reason);
    const char* what() const noexcept override { return reason.c_str(); }
    CUresult code;
    std::string api;
    std::string reason;
};

// cuGetErrorName / cuGetErrorString with a built-in fallback for when the driver cannot answer.
std::string error_name(CUresult code);
std::string error_string(CUresult code);

[[noreturn]] void throw_cuda(CUresult code, const char* api, std::string detail = {});
[[noreturn]] void throw_missing_symbol(const char* api, int min_version = 0);
// "12.4 (12040)" for a CUDA version number.
std::string format_cuda_version(int v);
// The loaded driver's version, 0 if unknown.
int loaded_driver_version() noexcept;
// Sets the Python error for the exception being handled (CudaError, pybind11 errors, ...).
// For raw CPython entry points that bypass pybind11's dispatcher. Call inside a catch block.
void set_error_from_current_exception() noexcept;

void register_errors(pybind11::module_& m);

}  // namespace pgk
