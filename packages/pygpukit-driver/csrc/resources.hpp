// Stream and Event: owned driver handles that keep their context alive. Shared by the files that
// take a Stream/Event argument (launch, graphs, host functions, green contexts).
#pragma once

#include <memory>
#include <mutex>
#include <shared_mutex>

#include <pybind11/pybind11.h>

#include "context.hpp"
#include "loader.hpp"

namespace pgk {

class Stream {
public:
    // A new stream in the current context (retains its device's primary context).
    Stream(bool non_blocking, int priority) {
        PrimaryContextRef ref = PrimaryContextRef::retain_current();
        unsigned int flags = non_blocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT;
        std::shared_ptr<void> owner = current_context_owner();
        CU(cuStreamCreateWithPriority)(&stream_, flags, priority);
        ref_ = std::move(ref);  // only now: on failure above `ref` releases itself
        owner_ = std::move(owner);
    }
    // Adopts a stream made elsewhere (e.g. on a green context); `owner` keeps what the stream
    // belongs to alive until the stream is destroyed.
    Stream(CUstream adopted, PrimaryContextRef ref, std::shared_ptr<void> owner)
        : stream_(adopted), ref_(std::move(ref)), owner_(std::move(owner)) {}
    ~Stream() {
        std::unique_lock<std::shared_mutex> lock(mu_);
        destroy_locked();
    }
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    CUstream get_locked() const {
        if (stream_ == nullptr) throw pybind11::value_error("Stream is closed");
        return stream_;
    }
    std::shared_lock<std::shared_mutex> use() const { return std::shared_lock(mu_); }
    std::uintptr_t handle() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return reinterpret_cast<std::uintptr_t>(get_locked());
    }
    void synchronize() const {
        pybind11::gil_scoped_release nogil;
        std::shared_lock<std::shared_mutex> lock(mu_);
        CU(cuStreamSynchronize)(get_locked());
    }
    bool query() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        CUresult r = CU(cuStreamQuery).raw(get_locked());
        if (r == CUDA_SUCCESS) return true;
        if (r == CUDA_ERROR_NOT_READY) return false;
        throw_cuda(r, "cuStreamQuery");
    }
    int priority() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        int p = 0;
        CU(cuStreamGetPriority)(get_locked(), &p);
        return p;
    }
    unsigned int flags() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        unsigned int f = 0;
        CU(cuStreamGetFlags)(get_locked(), &f);
        return f;
    }
    void close() {
        pybind11::gil_scoped_release nogil;
        std::unique_lock<std::shared_mutex> lock(mu_);
        destroy_locked();
    }
    bool closed() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return stream_ == nullptr;
    }

private:
    void destroy_locked() noexcept {
        if (stream_ == nullptr) return;
        CU_NOINIT(cuStreamDestroy).quiet(stream_);
        stream_ = nullptr;
        ref_.release();
        owner_.reset();
    }

    mutable std::shared_mutex mu_;
    CUstream stream_ = nullptr;
    PrimaryContextRef ref_;
    std::shared_ptr<void> owner_;
};

class Event {
public:
    explicit Event(bool timing) {
        PrimaryContextRef ref = PrimaryContextRef::retain_current();
        std::shared_ptr<void> owner = current_context_owner();
        CU(cuEventCreate)(&event_, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING);
        ref_ = std::move(ref);
        owner_ = std::move(owner);
    }
    ~Event() {
        std::unique_lock<std::shared_mutex> lock(mu_);
        destroy_locked();
    }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    CUevent get_locked() const {
        if (event_ == nullptr) throw pybind11::value_error("Event is closed");
        return event_;
    }
    std::uintptr_t handle() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return reinterpret_cast<std::uintptr_t>(get_locked());
    }
    void synchronize() const {
        pybind11::gil_scoped_release nogil;
        std::shared_lock<std::shared_mutex> lock(mu_);
        CU(cuEventSynchronize)(get_locked());
    }
    bool query() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        CUresult r = CU(cuEventQuery).raw(get_locked());
        if (r == CUDA_SUCCESS) return true;
        if (r == CUDA_ERROR_NOT_READY) return false;
        throw_cuda(r, "cuEventQuery");
    }
    float elapsed_time(const Event& end) const {
        // Lock both (once if they are the same event), in address order.
        const Event* first = this < &end ? this : &end;
        const Event* second = this < &end ? &end : this;
        std::shared_lock<std::shared_mutex> lock(first->mu_);
        std::shared_lock<std::shared_mutex> lock_end;
        if (second != first) lock_end = std::shared_lock(second->mu_);
        float ms = 0.0f;
        CUevent e = &end == this ? get_locked() : end.get_locked();
        CU(cuEventElapsedTime)(&ms, get_locked(), e);
        return ms;
    }
    void close() {
        pybind11::gil_scoped_release nogil;
        std::unique_lock<std::shared_mutex> lock(mu_);
        destroy_locked();
    }
    bool closed() const {
        std::shared_lock<std::shared_mutex> lock(mu_);
        return event_ == nullptr;
    }
    std::shared_lock<std::shared_mutex> use() const { return std::shared_lock(mu_); }

private:
    void destroy_locked() noexcept {
        if (event_ == nullptr) return;
        CU_NOINIT(cuEventDestroy).quiet(event_);
        event_ = nullptr;
        ref_.release();
        owner_.reset();
    }

    mutable std::shared_mutex mu_;
    CUevent event_ = nullptr;
    PrimaryContextRef ref_;
    std::shared_ptr<void> owner_;
};

// The Stream behind `obj` if it is one (exact type or subclass), else nullptr. Fast: compares
// the type pointer cached when the class was registered.
Stream* as_stream(pybind11::handle obj);

// Resolves a stream argument for an enqueue: an int handle, None/0, or a Stream (then its
// shared lock is taken into `guard` so it cannot be destroyed during the call).
CUstream lock_stream_arg(pybind11::handle obj, const char* what,
                         std::shared_lock<std::shared_mutex>& guard);

}  // namespace pgk
