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
struct CUmemPoolHandle_st;
struct CUgraph_st;
struct CUgraphExec_st;
struct CUgraphNode_st;
struct CUgreenCtx_st;
struct CUdevResourceDesc_st;
struct CUarray_st;
using CUcontext = CUctx_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUmemoryPool = CUmemPoolHandle_st*;
using CUgraph = CUgraph_st*;
using CUgraphExec = CUgraphExec_st*;
using CUgraphNode = CUgraphNode_st*;
using CUgreenCtx = CUgreenCtx_st*;
using CUdevResourceDesc = CUdevResourceDesc_st*;
using CUarray = CUarray_st*;
using CUhostFn = void (*)(void* userData);
using CUoccupancyB2DSize = std::size_t (*)(int blockSize);

struct CUkern_st;
using CUkernel = CUkern_st*;
using CUgraphNodeType = int;
constexpr CUgraphNodeType CU_GRAPH_NODE_TYPE_KERNEL = 0;

// CUgraphEdgeData (CUDA 12.3+): ports and type of an edge; all zero is a full dependency.
struct CUgraphEdgeData {
    unsigned char from_port;
    unsigned char to_port;
    unsigned char type;
    unsigned char reserved[5];
};
static_assert(sizeof(CUgraphEdgeData) == 8, "CUgraphEdgeData layout");

// CUDA_KERNEL_NODE_PARAMS (the _v2 layout of the 12.0 ABI: kern and ctx after extra).
struct CUDA_KERNEL_NODE_PARAMS {
    CUfunction func;
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    void** kernelParams;
    void** extra;
    CUkernel kern;
    CUcontext ctx;
};
static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS) == 72, "CUDA_KERNEL_NODE_PARAMS layout");
static_assert(offsetof(CUDA_KERNEL_NODE_PARAMS, kernelParams) == 40,
              "CUDA_KERNEL_NODE_PARAMS layout");

struct CUuuid {
    unsigned char bytes[16];
};

using CUdevice_attribute = int;
using CUfunction_attribute = int;
using CUjit_option = int;
using CUdriverProcAddressQueryResult = int;
using CUmemPool_attribute = int;
using CUmemorytype = int;
using CUstreamCaptureMode = int;
using CUstreamCaptureStatus = int;
using CUdevResourceType = int;
using CUlaunchAttributeID = int;
using CUtensorMapDataType = int;
using CUtensorMapInterleave = int;
using CUtensorMapSwizzle = int;
using CUtensorMapL2promotion = int;
using CUtensorMapFloatOOBfill = int;
using cuuint32_t = std::uint32_t;

// CUDA_MEMCPY2D (the _v2 layout, 128 bytes on 64-bit targets).
struct CUDA_MEMCPY2D {
    std::size_t srcXInBytes;
    std::size_t srcY;
    CUmemorytype srcMemoryType;
    const void* srcHost;
    CUdeviceptr srcDevice;
    CUarray srcArray;
    std::size_t srcPitch;
    std::size_t dstXInBytes;
    std::size_t dstY;
    CUmemorytype dstMemoryType;
    void* dstHost;
    CUdeviceptr dstDevice;
    CUarray dstArray;
    std::size_t dstPitch;
    std::size_t WidthInBytes;
    std::size_t Height;
};
static_assert(sizeof(CUDA_MEMCPY2D) == 128, "CUDA_MEMCPY2D layout");
static_assert(offsetof(CUDA_MEMCPY2D, srcHost) == 24, "CUDA_MEMCPY2D layout");
static_assert(offsetof(CUDA_MEMCPY2D, dstXInBytes) == 56, "CUDA_MEMCPY2D layout");
static_assert(offsetof(CUDA_MEMCPY2D, WidthInBytes) == 112, "CUDA_MEMCPY2D layout");

// CUlaunchAttribute: a 4-byte id, 4 bytes of padding, a 64-byte value union.
union CUlaunchAttributeValue {
    char pad[64];
    struct {
        unsigned int x, y, z;
    } clusterDim;
    int cooperative;
    int priority;
    int programmaticStreamSerializationAllowed;
    int clusterSchedulingPolicyPreference;
};
struct CUlaunchAttribute {
    CUlaunchAttributeID id;
    char pad[8 - sizeof(CUlaunchAttributeID)];
    CUlaunchAttributeValue value;
};
static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute layout");
static_assert(offsetof(CUlaunchAttribute, value) == 8, "CUlaunchAttribute layout");

struct CUlaunchConfig {
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute* attrs;
    unsigned int numAttrs;
};
static_assert(sizeof(CUlaunchConfig) == 56, "CUlaunchConfig layout");
static_assert(offsetof(CUlaunchConfig, hStream) == 32, "CUlaunchConfig layout");
static_assert(offsetof(CUlaunchConfig, attrs) == 40, "CUlaunchConfig layout");

// CUdevResource (CUDA 12.4+): 144 bytes. A 4-byte type, 92 bytes reserved for the driver, then
// the public union (CUdevSmResource first). CUDA 12.x declares the union as 48 bytes holding
// only smCount; CUDA 13 declares 40 bytes (smCount, minSmPartitionSize, smCoscheduledAlignment,
// flags) followed by a `nextResource` pointer. Both are 144 bytes with smCount at offset 96.
struct CUdevSmResource {
    unsigned int smCount;
    unsigned int minSmPartitionSize;      // CUDA 13+ (0 from older drivers)
    unsigned int smCoscheduledAlignment;  // CUDA 13+
    unsigned int flags;                   // CUDA 13+
};
struct CUdevResource {
    CUdevResourceType type;
    unsigned char _internal_padding[92];
    union {
        CUdevSmResource sm;
        unsigned char _oversize[40];
    };
    CUdevResource* nextResource;
};
static_assert(sizeof(CUdevResource) == 144, "CUdevResource layout");
static_assert(offsetof(CUdevResource, sm) == 96, "CUdevResource layout");

// CUtensorMap: 128 opaque bytes, 64-byte aligned.
struct alignas(64) CUtensorMap {
    std::uint64_t opaque[16];
};
static_assert(sizeof(CUtensorMap) == 128, "CUtensorMap layout");

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
constexpr CUresult CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704;
constexpr CUresult CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712;
constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;

// CUdevice_attribute
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;

// CUmemPool_attribute
constexpr CUmemPool_attribute CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4;
constexpr CUmemPool_attribute CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5;
constexpr CUmemPool_attribute CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH = 6;
constexpr CUmemPool_attribute CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7;
constexpr CUmemPool_attribute CU_MEMPOOL_ATTR_USED_MEM_HIGH = 8;

// CUmemorytype
constexpr CUmemorytype CU_MEMORYTYPE_HOST = 1;
constexpr CUmemorytype CU_MEMORYTYPE_DEVICE = 2;

// cuMemHostAlloc / cuMemHostRegister flags
constexpr unsigned int CU_MEMHOSTALLOC_PORTABLE = 0x1;
constexpr unsigned int CU_MEMHOSTALLOC_DEVICEMAP = 0x2;
constexpr unsigned int CU_MEMHOSTALLOC_WRITECOMBINED = 0x4;
constexpr unsigned int CU_MEMHOSTREGISTER_PORTABLE = 0x1;
constexpr unsigned int CU_MEMHOSTREGISTER_DEVICEMAP = 0x2;
constexpr unsigned int CU_MEMHOSTREGISTER_READ_ONLY = 0x8;

// CUlaunchAttributeID
constexpr CUlaunchAttributeID CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2;
constexpr CUlaunchAttributeID CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4;
constexpr CUlaunchAttributeID CU_LAUNCH_ATTRIBUTE_PRIORITY = 8;
constexpr CUlaunchAttributeID CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;

// Green contexts
constexpr CUdevResourceType CU_DEV_RESOURCE_TYPE_SM = 1;
constexpr unsigned int CU_GREEN_CTX_DEFAULT_STREAM = 0x1;

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
