// Devices, retained primary contexts, and the reference that keeps a context alive.
#pragma once

#include <pybind11/pybind11.h>

#include "cuda_decls.hpp"

namespace pgk {

// One retain of a device's primary context. Resources (streams, events, modules) hold one so the
// context outlives them: it is taken when the resource is created and given back after the
// resource's handle is destroyed.
class PrimaryContextRef {
public:
    PrimaryContextRef() = default;
    // Retains the primary context of the device whose context is current on this thread.
    static PrimaryContextRef retain_current();
    static PrimaryContextRef retain(CUdevice device);
    PrimaryContextRef(PrimaryContextRef&& other) noexcept;
    PrimaryContextRef& operator=(PrimaryContextRef&& other) noexcept;
    PrimaryContextRef(const PrimaryContextRef&) = delete;
    PrimaryContextRef& operator=(const PrimaryContextRef&) = delete;
    ~PrimaryContextRef() { release(); }

    void release() noexcept;  // idempotent, ignores driver errors
    bool held() const { return held_; }
    CUdevice device() const { return device_; }
    CUcontext context() const { return context_; }

private:
    CUdevice device_ = 0;
    CUcontext context_ = nullptr;
    bool held_ = false;
};

// Makes `ctx` current for the scope (if it is not already), restoring the previous one after.
class ScopedCurrent {
public:
    explicit ScopedCurrent(CUcontext ctx) noexcept;
    ~ScopedCurrent();
    ScopedCurrent(const ScopedCurrent&) = delete;
    ScopedCurrent& operator=(const ScopedCurrent&) = delete;

private:
    CUcontext previous_ = nullptr;
    bool switched_ = false;
};

void register_device(pybind11::module_& m);

}  // namespace pgk
