"""Driver API enum values used with ``get_attribute`` (values from the CUDA driver API docs)."""

from __future__ import annotations

import enum


class DeviceAttribute(enum.IntEnum):
    """Common ``CUdevice_attribute`` values for :meth:`Device.get_attribute`."""

    MAX_THREADS_PER_BLOCK = 1
    MAX_BLOCK_DIM_X = 2
    MAX_BLOCK_DIM_Y = 3
    MAX_BLOCK_DIM_Z = 4
    MAX_GRID_DIM_X = 5
    MAX_GRID_DIM_Y = 6
    MAX_GRID_DIM_Z = 7
    MAX_SHARED_MEMORY_PER_BLOCK = 8
    TOTAL_CONSTANT_MEMORY = 9
    WARP_SIZE = 10
    MAX_REGISTERS_PER_BLOCK = 12
    CLOCK_RATE = 13
    MULTIPROCESSOR_COUNT = 16
    INTEGRATED = 18
    CAN_MAP_HOST_MEMORY = 19
    COMPUTE_MODE = 20
    CONCURRENT_KERNELS = 31
    ECC_ENABLED = 32
    PCI_BUS_ID = 33
    PCI_DEVICE_ID = 34
    MEMORY_CLOCK_RATE = 36
    GLOBAL_MEMORY_BUS_WIDTH = 37
    L2_CACHE_SIZE = 38
    MAX_THREADS_PER_MULTIPROCESSOR = 39
    ASYNC_ENGINE_COUNT = 40
    UNIFIED_ADDRESSING = 41
    PCI_DOMAIN_ID = 50
    COMPUTE_CAPABILITY_MAJOR = 75
    COMPUTE_CAPABILITY_MINOR = 76
    STREAM_PRIORITIES_SUPPORTED = 78
    MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81
    MAX_REGISTERS_PER_MULTIPROCESSOR = 82
    MANAGED_MEMORY = 83
    MULTI_GPU_BOARD = 84
    CONCURRENT_MANAGED_ACCESS = 89
    COOPERATIVE_LAUNCH = 95
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
    VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102
    MAX_BLOCKS_PER_MULTIPROCESSOR = 106
    MAX_PERSISTING_L2_CACHE_SIZE = 108
    RESERVED_SHARED_MEMORY_PER_BLOCK = 111
    MEMORY_POOLS_SUPPORTED = 115
    CLUSTER_LAUNCH = 120
    TENSOR_MAP_ACCESS_SUPPORTED = 127


class FunctionAttribute(enum.IntEnum):
    """``CUfunction_attribute`` values for :meth:`Function.get_attribute`."""

    MAX_THREADS_PER_BLOCK = 0
    SHARED_SIZE_BYTES = 1
    CONST_SIZE_BYTES = 2
    LOCAL_SIZE_BYTES = 3
    NUM_REGS = 4
    PTX_VERSION = 5
    BINARY_VERSION = 6
    CACHE_MODE_CA = 7
    MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
    PREFERRED_SHARED_MEMORY_CARVEOUT = 9


class MemPoolAttribute(enum.IntEnum):
    """``CUmemPool_attribute`` values (64-bit ones) for :meth:`MemPool.get_attribute`."""

    RELEASE_THRESHOLD = 4
    RESERVED_MEM_CURRENT = 5
    RESERVED_MEM_HIGH = 6
    USED_MEM_CURRENT = 7
    USED_MEM_HIGH = 8


class CaptureMode(enum.IntEnum):
    """``CUstreamCaptureMode`` for :func:`stream_begin_capture`."""

    GLOBAL = 0
    THREAD_LOCAL = 1
    RELAXED = 2


class CaptureStatus(enum.IntEnum):
    """``CUstreamCaptureStatus`` returned by :func:`stream_capture_status`."""

    NONE = 0
    ACTIVE = 1
    INVALIDATED = 2


class TensorMapDataType(enum.IntEnum):
    """``CUtensorMapDataType`` for :func:`tensor_map_encode_tiled`."""

    UINT8 = 0
    UINT16 = 1
    UINT32 = 2
    INT32 = 3
    UINT64 = 4
    INT64 = 5
    FLOAT16 = 6
    FLOAT32 = 7
    FLOAT64 = 8
    BFLOAT16 = 9
    FLOAT32_FTZ = 10
    TFLOAT32 = 11
    TFLOAT32_FTZ = 12


class TensorMapInterleave(enum.IntEnum):
    """``CUtensorMapInterleave``."""

    NONE = 0
    INTERLEAVE_16B = 1
    INTERLEAVE_32B = 2


class TensorMapSwizzle(enum.IntEnum):
    """``CUtensorMapSwizzle``."""

    NONE = 0
    SWIZZLE_32B = 1
    SWIZZLE_64B = 2
    SWIZZLE_128B = 3


class TensorMapL2Promotion(enum.IntEnum):
    """``CUtensorMapL2promotion``."""

    NONE = 0
    L2_64B = 1
    L2_128B = 2
    L2_256B = 3


class TensorMapFloatOOBFill(enum.IntEnum):
    """``CUtensorMapFloatOOBfill``."""

    NONE = 0
    NAN_REQUEST_ZERO_FMA = 1


# Flat aliases for the most used values.
DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = DeviceAttribute.MAX_THREADS_PER_BLOCK
DEVICE_ATTRIBUTE_WARP_SIZE = DeviceAttribute.WARP_SIZE
DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = DeviceAttribute.MULTIPROCESSOR_COUNT
DEVICE_ATTRIBUTE_L2_CACHE_SIZE = DeviceAttribute.L2_CACHE_SIZE
DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = DeviceAttribute.COMPUTE_CAPABILITY_MAJOR
DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = DeviceAttribute.COMPUTE_CAPABILITY_MINOR
DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = (
    DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
)
FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = FunctionAttribute.MAX_THREADS_PER_BLOCK
FUNC_ATTRIBUTE_NUM_REGS = FunctionAttribute.NUM_REGS
FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES
