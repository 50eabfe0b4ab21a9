// The few CUDA driver API types, enums and constants this binding needs,
// declared here so that it builds with a plain C++ compiler (no cuda.h).
// Values and layouts follow the CUDA driver API reference (cuda.h, 12.x/13.x).
#pragma once

#include <cstddef>
#include <cstdint>

// Only 64-bit targets are supported: there the driver's calling convention (CUDAAPI, which is
// __stdcall on Windows) is the platform default, so plain function types match the ABI.
static_assert(sizeof(void*) == 8, "pygpukit-driver supports 64-bit targets only");

namespace pgk {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // CUdeviceptr_v2: pointer-sized on 64-bit
using cuuint64_t = std::uint64_t;

struct CUctx_st;
struct CUstream_st;
struct CUevent_st;
struct CUmod_st;
struct CUfunc_st;
using CUcontext = CUctx_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;

struct CUuuid {
    unsigned char bytes[16];
};

using CUdevice_attribute = int;
using CUfunction_attribute = int;
using CUjit_option = int;
using CUdriverProcAddressQueryResult = int;

// CUresult values used by the binding itself (others are only passed through).
constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
constexpr CUresult CUDA_ERROR_DEINITIALIZED = 4;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
constexpr CUresult CUDA_ERROR_INVALID_CONTEXT = 201;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;

// CUdevice_attribute
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

// CUjit_option
constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER = 3;
constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

// Flags
constexpr unsigned int CU_STREAM_DEFAULT = 0x0;
constexpr unsigned int CU_STREAM_NON_BLOCKING = 0x1;
constexpr unsigned int CU_EVENT_DEFAULT = 0x0;
constexpr unsigned int CU_EVENT_DISABLE_TIMING = 0x2;
constexpr cuuint64_t CU_GET_PROC_ADDRESS_DEFAULT = 0;

// Special stream handles.
constexpr std::uintptr_t CU_STREAM_LEGACY = 0x1;
constexpr std::uintptr_t CU_STREAM_PER_THREAD = 0x2;

}  // namespace pgk
