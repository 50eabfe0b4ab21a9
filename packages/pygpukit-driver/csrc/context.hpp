// Devices, retained primary contexts, and the reference that keeps a context alive.
#pragma once

#include <memory>

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

// Green contexts register the CUcontext they convert to, so that resources made while one is
// current keep it alive (a context outlives the resources made in it).
void register_context_owner(CUcontext ctx, std::weak_ptr<void> owner);
void unregister_context_owner(CUcontext ctx) noexcept;
// The owner of the calling thread's current context if it is a registered (green) context.
std::shared_ptr<void> current_context_owner();
// The calling thread's current context (nullptr if none); throws CudaError on failure.
CUcontext current_context();

void register_device(pybind11::module_& m);

}  // namespace pgk
