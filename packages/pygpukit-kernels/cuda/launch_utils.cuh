// Helpers shared by the launchers: grid sizing and error reporting.
#pragma once

#include <cuda_runtime.h>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <utility>

namespace pgk {

// Enough blocks to fill every SM several times; beyond that a grid-stride loop covers the rest.
inline unsigned grid_for(int64_t work_items, unsigned block) {
  int64_t blocks = (work_items + block - 1) / block;
  const int64_t cap = int64_t{1} << 20;
  if (blocks > cap) blocks = cap;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

// ---- per-device values, read once ----
// Launchers consult device attributes on every call; each such value is read once per device
// into a DeviceCache (a relaxed atomic per device: every thread that races to fill it stores the
// same value).  0 means "not read yet", so a cached value is never 0.
constexpr int kMaxDevices = 64;
using DeviceCache = std::atomic<int>[kMaxDevices];

// `read(dev)` for device `dev`, cached in `cache`; 0 when `read` returns 0 (it could not read:
// nothing is cached, and the CUDA error, not a launch error, is cleared so that launch_status()
// does not report it) or when dev < 0.  Devices numbered kMaxDevices and up are read every time.
template <class Read>
int cached_per_device(DeviceCache& cache, int dev, Read read) {
  if (dev < 0) return 0;
  int v = dev < kMaxDevices ? cache[dev].load(std::memory_order_relaxed) : 0;
  if (v != 0) return v;
  v = read(dev);
  if (v == 0) {
    cudaGetLastError();
  } else if (dev < kMaxDevices) {
    cache[dev].store(v, std::memory_order_relaxed);
  }
  return v;
}

// The current device, -1 when it cannot be read (the error cleared).
inline int current_device() {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) {
    cudaGetLastError();
    return -1;
  }
  return dev;
}

// The SM count of device `dev`, 0 when it cannot be read: launchers size grids and choose tiles
// by it on every call.
inline int sm_count_of_device(int dev) {
  static DeviceCache cache = {};
  return cached_per_device(cache, dev, [](int d) {
    int n = 0;
    return cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, d) == cudaSuccess ? n : 0;
  });
}

// The SM count of the current device, `fallback` when it cannot be read.
inline int current_sm_count(int fallback) {
  const int n = sm_count_of_device(current_device());
  return n > 0 ? n : fallback;
}

// An integer tuning knob from the environment (read once per call site by the caller's static),
// for benchmarking variants of a launch configuration; `dflt` when unset or out of [lo, hi].
inline int tune_knob(const char* name, int dflt, int lo, int hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == 0) return dflt;
  const long x = std::strtol(v, nullptr, 10);
  return (x < lo || x > hi) ? dflt : static_cast<int>(x);
}

// ---- programmatic dependent launch (PDL, compute capability 9.0+) ----
// A kernel launched with launch_k may be scheduled while the kernel before it in the stream is
// still finishing (its blocks wait in pdl_enter, before touching memory, until that kernel has
// completed and its writes are visible), which hides the launch gap between back-to-back
// kernels.  Kernels launched this way must call pdl_enter() before any global memory access;
// it is a no-op when the kernel was launched without the attribute or below sm_90.
// pdl_wait() alone waits without signalling this kernel's own dependents (for a kernel whose
// dependents should not be placed before it ends: scan.cu's scan kernel).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_enter() {
  pdl_wait();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Whether the current device takes PDL launches (PGK_TUNE_PDL=0 turns them off, for benchmarks).
inline bool pdl_enabled() {
  static const int knob = tune_knob("PGK_TUNE_PDL", 1, 0, 1);
  if (!knob) return false;
  static DeviceCache cache = {};  // 1 yes, -1 no (also when the attribute cannot be read)
  return cached_per_device(cache, current_device(), [](int d) {
           int major = 0;
           if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) !=
               cudaSuccess) {
             cudaGetLastError();
             major = 0;
           }
           return major >= 9 ? 1 : -1;
         }) > 0;
}

// Appends the PDL launch attribute to attrs (n of them so far) where pdl_enabled(); returns the
// new count.  Used by launch_k_smem and by the sm_90a FP8 GEMMs' cudaLaunchKernelExC (beside
// their cluster attribute); scan.cu hands the flag to CUB's launcher, which builds its own.
inline unsigned add_pdl_attribute(cudaLaunchAttribute* attrs, unsigned n) {
  if (!pdl_enabled()) return n;
  attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[n].val.programmaticStreamSerializationAllowed = 1;
  return n + 1;
}

// kernel<<<grid, block, smem, stream>>>(args...), with the PDL attribute where the device takes
// it.
template <typename... KArgs, typename... Args>
inline void launch_k_smem(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
                          cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attr[1];
  if (add_pdl_attribute(attr, 0) == 1) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  } else {
    kernel<<<grid, block, smem, stream>>>(std::forward<Args>(args)...);
  }
}

// The same without dynamic shared memory.
template <typename... KArgs, typename... Args>
inline void launch_k(void (*kernel)(KArgs...), dim3 grid, dim3 block, cudaStream_t stream,
                     Args&&... args) {
  launch_k_smem(kernel, grid, block, 0, stream, std::forward<Args>(args)...);
}

// A launch error (bad configuration, no kernel image for this device...) surfaces here.
inline int launch_status() { return static_cast<int>(cudaGetLastError()); }

}  // namespace pgk
