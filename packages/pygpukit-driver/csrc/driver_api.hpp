// The table of driver entry points the binding uses.
//
// Adding a function is one line: X(name, "fallback dlsym name", cudaVersion, signature)
//   name         the cuGetProcAddress symbol (no _v2 suffix) and the member name in Driver
//   fallback     the explicitly versioned exported name used with dlsym/GetProcAddress when
//                the driver has no cuGetProcAddress (or it does not know the symbol)
//   cudaVersion  the ABI version asked of cuGetProcAddress (e.g. 12000 selects the 12.0 ABI)
//   signature    the function type, e.g. CUresult(CUdeviceptr*, size_t)
#pragma once

#include "cuda_decls.hpp"

// clang-format off
#define PGK_DRIVER_FUNCTIONS(X)                                                                   \
    /* errors, init, version */                                                                 \
    X(cuGetErrorName, "cuGetErrorName", 12000, CUresult(CUresult, const char**))                 \
    X(cuGetErrorString, "cuGetErrorString", 12000, CUresult(CUresult, const char**))             \
    X(cuInit, "cuInit", 12000, CUresult(unsigned int))                                           \
    X(cuDriverGetVersion, "cuDriverGetVersion", 12000, CUresult(int*))                           \
    /* devices */                                                                                \
    X(cuDeviceGetCount, "cuDeviceGetCount", 12000, CUresult(int*))                               \
    X(cuDeviceGet, "cuDeviceGet", 12000, CUresult(CUdevice*, int))                               \
    X(cuDeviceGetName, "cuDeviceGetName", 12000, CUresult(char*, int, CUdevice))                 \
    X(cuDeviceGetAttribute, "cuDeviceGetAttribute", 12000,                                       \
      CUresult(int*, CUdevice_attribute, CUdevice))                                              \
    X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", 12000, CUresult(size_t*, CUdevice))               \
    X(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId", 12000, CUresult(char*, int, CUdevice))         \
    X(cuDeviceGetUuid, "cuDeviceGetUuid_v2", 12000, CUresult(CUuuid*, CUdevice))                 \
    /* contexts */                                                                               \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 12000, CUresult(CUcontext*, CUdevice)) \
    X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", 12000, CUresult(CUdevice))      \
    X(cuCtxSetCurrent, "cuCtxSetCurrent", 12000, CUresult(CUcontext))                            \
    X(cuCtxGetCurrent, "cuCtxGetCurrent", 12000, CUresult(CUcontext*))                           \
    X(cuCtxGetDevice, "cuCtxGetDevice", 12000, CUresult(CUdevice*))                              \
    X(cuCtxSynchronize, "cuCtxSynchronize", 12000, CUresult())                                   \
    X(cuCtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange", 12000, CUresult(int*, int*))   \
    /* memory */                                                                                 \
    X(cuMemAlloc, "cuMemAlloc_v2", 12000, CUresult(CUdeviceptr*, size_t))                        \
    X(cuMemFree, "cuMemFree_v2", 12000, CUresult(CUdeviceptr))                                   \
    X(cuMemGetInfo, "cuMemGetInfo_v2", 12000, CUresult(size_t*, size_t*))                        \
    X(cuMemAllocAsync, "cuMemAllocAsync", 12000, CUresult(CUdeviceptr*, size_t, CUstream))       \
    X(cuMemFreeAsync, "cuMemFreeAsync", 12000, CUresult(CUdeviceptr, CUstream))                  \
    X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", 12000, CUresult(CUdeviceptr, const void*, size_t))        \
    X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", 12000, CUresult(void*, CUdeviceptr, size_t))              \
    X(cuMemcpyDtoD, "cuMemcpyDtoD_v2", 12000, CUresult(CUdeviceptr, CUdeviceptr, size_t))        \
    X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", 12000,                                          \
      CUresult(CUdeviceptr, const void*, size_t, CUstream))                                      \
    X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", 12000,                                          \
      CUresult(void*, CUdeviceptr, size_t, CUstream))                                            \
    X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", 12000,                                          \
      CUresult(CUdeviceptr, CUdeviceptr, size_t, CUstream))                                      \
    X(cuMemsetD8Async, "cuMemsetD8Async", 12000,                                                 \
      CUresult(CUdeviceptr, unsigned char, size_t, CUstream))                                    \
    X(cuMemsetD32Async, "cuMemsetD32Async", 12000,                                               \
      CUresult(CUdeviceptr, unsigned int, size_t, CUstream))                                     \
    /* streams and events */                                                                     \
    X(cuStreamCreateWithPriority, "cuStreamCreateWithPriority", 12000,                           \
      CUresult(CUstream*, unsigned int, int))                                                    \
    X(cuStreamDestroy, "cuStreamDestroy_v2", 12000, CUresult(CUstream))                          \
    X(cuStreamSynchronize, "cuStreamSynchronize", 12000, CUresult(CUstream))                     \
    X(cuStreamQuery, "cuStreamQuery", 12000, CUresult(CUstream))                                 \
    X(cuStreamWaitEvent, "cuStreamWaitEvent", 12000, CUresult(CUstream, CUevent, unsigned int))  \
    X(cuEventCreate, "cuEventCreate", 12000, CUresult(CUevent*, unsigned int))                   \
    X(cuEventDestroy, "cuEventDestroy_v2", 12000, CUresult(CUevent))                             \
    X(cuEventRecord, "cuEventRecord", 12000, CUresult(CUevent, CUstream))                        \
    X(cuEventSynchronize, "cuEventSynchronize", 12000, CUresult(CUevent))                        \
    X(cuEventQuery, "cuEventQuery", 12000, CUresult(CUevent))                                    \
    X(cuEventElapsedTime, "cuEventElapsedTime", 12000, CUresult(float*, CUevent, CUevent))       \
    /* modules and launch */                                                                     \
    X(cuModuleLoadDataEx, "cuModuleLoadDataEx", 12000,                                           \
      CUresult(CUmodule*, const void*, unsigned int, CUjit_option*, void**))                     \
    X(cuModuleUnload, "cuModuleUnload", 12000, CUresult(CUmodule))                               \
    X(cuModuleGetFunction, "cuModuleGetFunction", 12000,                                         \
      CUresult(CUfunction*, CUmodule, const char*))                                              \
    X(cuModuleGetGlobal, "cuModuleGetGlobal_v2", 12000,                                          \
      CUresult(CUdeviceptr*, size_t*, CUmodule, const char*))                                    \
    X(cuFuncGetAttribute, "cuFuncGetAttribute", 12000,                                           \
      CUresult(int*, CUfunction_attribute, CUfunction))                                          \
    X(cuFuncSetAttribute, "cuFuncSetAttribute", 12000,                                           \
      CUresult(CUfunction, CUfunction_attribute, int))                                           \
    X(cuLaunchKernel, "cuLaunchKernel", 12000,                                                   \
      CUresult(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, \
               unsigned int, unsigned int, CUstream, void**, void**))                            \
    X(cuLaunchKernelEx, "cuLaunchKernelEx", 12000,                                               \
      CUresult(const CUlaunchConfig*, CUfunction, void**, void**))                               \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", \
      12000, CUresult(int*, CUfunction, int, size_t))                                            \
    X(cuOccupancyMaxPotentialBlockSize, "cuOccupancyMaxPotentialBlockSize", 12000,               \
      CUresult(int*, int*, CUfunction, CUoccupancyB2DSize, size_t, int))                         \
    /* memory pools, pinned host memory, more copies */                                          \
    X(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", 12000,                             \
      CUresult(CUmemoryPool*, CUdevice))                                                         \
    X(cuMemPoolSetAttribute, "cuMemPoolSetAttribute", 12000,                                     \
      CUresult(CUmemoryPool, CUmemPool_attribute, void*))                                        \
    X(cuMemPoolGetAttribute, "cuMemPoolGetAttribute", 12000,                                     \
      CUresult(CUmemoryPool, CUmemPool_attribute, void*))                                        \
    X(cuMemPoolTrimTo, "cuMemPoolTrimTo", 12000, CUresult(CUmemoryPool, size_t))                 \
    X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 12000,                                 \
      CUresult(CUdeviceptr*, size_t, CUmemoryPool, CUstream))                                    \
    X(cuMemHostAlloc, "cuMemHostAlloc", 12000, CUresult(void**, size_t, unsigned int))           \
    X(cuMemFreeHost, "cuMemFreeHost", 12000, CUresult(void*))                                    \
    X(cuMemHostRegister, "cuMemHostRegister_v2", 12000, CUresult(void*, size_t, unsigned int))   \
    X(cuMemHostUnregister, "cuMemHostUnregister", 12000, CUresult(void*))                        \
    X(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", 12000,                          \
      CUresult(CUdeviceptr*, void*, unsigned int))                                               \
    X(cuMemcpy2D, "cuMemcpy2D_v2", 12000, CUresult(const CUDA_MEMCPY2D*))                        \
    X(cuMemcpy2DAsync, "cuMemcpy2DAsync_v2", 12000, CUresult(const CUDA_MEMCPY2D*, CUstream))    \
    X(cuMemcpyPeer, "cuMemcpyPeer", 12000,                                                       \
      CUresult(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t))                          \
    X(cuMemcpyPeerAsync, "cuMemcpyPeerAsync", 12000,                                             \
      CUresult(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream))                \
    X(cuMemsetD16Async, "cuMemsetD16Async", 12000,                                               \
      CUresult(CUdeviceptr, unsigned short, size_t, CUstream))                                   \
    /* streams: priorities, host functions, capture; graphs */                                   \
    X(cuStreamGetPriority, "cuStreamGetPriority", 12000, CUresult(CUstream, int*))               \
    X(cuStreamGetFlags, "cuStreamGetFlags", 12000, CUresult(CUstream, unsigned int*))            \
    X(cuLaunchHostFunc, "cuLaunchHostFunc", 12000, CUresult(CUstream, CUhostFn, void*))          \
    X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", 12000,                                    \
      CUresult(CUstream, CUstreamCaptureMode))                                                   \
    X(cuStreamEndCapture, "cuStreamEndCapture", 12000, CUresult(CUstream, CUgraph*))             \
    X(cuStreamIsCapturing, "cuStreamIsCapturing", 12000,                                         \
      CUresult(CUstream, CUstreamCaptureStatus*))                                                \
    X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 12000,                         \
      CUresult(CUgraphExec*, CUgraph, unsigned long long))                                       \
    X(cuGraphLaunch, "cuGraphLaunch", 12000, CUresult(CUgraphExec, CUstream))                    \
    X(cuGraphDestroy, "cuGraphDestroy", 12000, CUresult(CUgraph))                                \
    X(cuGraphExecDestroy, "cuGraphExecDestroy", 12000, CUresult(CUgraphExec))                    \
    X(cuGraphGetNodes, "cuGraphGetNodes", 12000, CUresult(CUgraph, CUgraphNode*, size_t*))       \
    X(cuGraphNodeGetType, "cuGraphNodeGetType", 12000, CUresult(CUgraphNode, CUgraphNodeType*))  \
    X(cuGraphKernelNodeGetParams, "cuGraphKernelNodeGetParams_v2", 12000,                        \
      CUresult(CUgraphNode, CUDA_KERNEL_NODE_PARAMS*))                                           \
    X(cuGraphAddKernelNode, "cuGraphAddKernelNode_v2", 12000,                                    \
      CUresult(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,                                \
               const CUDA_KERNEL_NODE_PARAMS*))                                                  \
    X(cuGraphDestroyNode, "cuGraphDestroyNode", 12000, CUresult(CUgraphNode))                    \
    /* edges with their data (programmatic edges make the 12.0 queries lossy): CUDA 12.3+ */     \
    X(cuGraphNodeGetDependencies, "cuGraphNodeGetDependencies_v2", 12030,                        \
      CUresult(CUgraphNode, CUgraphNode*, CUgraphEdgeData*, size_t*))                            \
    X(cuGraphNodeGetDependentNodes, "cuGraphNodeGetDependentNodes_v2", 12030,                    \
      CUresult(CUgraphNode, CUgraphNode*, CUgraphEdgeData*, size_t*))                            \
    X(cuGraphAddDependencies, "cuGraphAddDependencies_v2", 12030,                                \
      CUresult(CUgraph, const CUgraphNode*, const CUgraphNode*, const CUgraphEdgeData*, size_t)) \
    X(cuFuncGetParamInfo, "cuFuncGetParamInfo", 12040,                                           \
      CUresult(CUfunction, size_t, size_t*, size_t*))                                            \
    /* peer access */                                                                            \
    X(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer", 12000, CUresult(int*, CUdevice, CUdevice)) \
    X(cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess", 12000, CUresult(CUcontext, unsigned int))  \
    /* green contexts (CUDA 12.4+ drivers; cuGreenCtxStreamCreate 12.5+) */                     \
    X(cuDeviceGetDevResource, "cuDeviceGetDevResource", 12040,                                   \
      CUresult(CUdevice, CUdevResource*, CUdevResourceType))                                     \
    X(cuDevSmResourceSplitByCount, "cuDevSmResourceSplitByCount", 12040,                         \
      CUresult(CUdevResource*, unsigned int*, const CUdevResource*, CUdevResource*,              \
               unsigned int, unsigned int))                                                      \
    X(cuDevResourceGenerateDesc, "cuDevResourceGenerateDesc", 12040,                             \
      CUresult(CUdevResourceDesc*, CUdevResource*, unsigned int))                                \
    X(cuGreenCtxCreate, "cuGreenCtxCreate", 12040,                                               \
      CUresult(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned int))                          \
    X(cuGreenCtxDestroy, "cuGreenCtxDestroy", 12040, CUresult(CUgreenCtx))                       \
    X(cuGreenCtxGetDevResource, "cuGreenCtxGetDevResource", 12040,                               \
      CUresult(CUgreenCtx, CUdevResource*, CUdevResourceType))                                   \
    X(cuCtxFromGreenCtx, "cuCtxFromGreenCtx", 12040, CUresult(CUcontext*, CUgreenCtx))           \
    X(cuGreenCtxStreamCreate, "cuGreenCtxStreamCreate", 12050,                                   \
      CUresult(CUstream*, CUgreenCtx, unsigned int, int))                                        \
    /* tensor maps (TMA) */                                                                      \
    X(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", 12000,                                   \
      CUresult(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,          \
               const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,   \
               CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill))
// clang-format on

namespace pgk {

// One function-pointer member per table row, e.g. `CUresult (*cuMemAlloc)(CUdeviceptr*, size_t)`.
struct Driver {
#define PGK_DECLARE_MEMBER(name, fallback, version, ...) \
    using name##_t = __VA_ARGS__;                        \
    static constexpr int name##_version = version;       \
    name##_t* name = nullptr;
    PGK_DRIVER_FUNCTIONS(PGK_DECLARE_MEMBER)
#undef PGK_DECLARE_MEMBER
};

// The resolved table (members are nullptr for symbols the driver lacks).
const Driver& driver();

}  // namespace pgk
