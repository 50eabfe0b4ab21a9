"""Precompiled CUDA kernels of PyGPUkit: where they are and which GPUs they cover.

The kernels live in a shared library with a C ABI (``include/pygpukit_kernels.h``) and, for the
driver-API route, in standalone fatbins.  This module only locates them and describes the build;
it never loads CUDA itself, so importing it is cheap and works on machines without a GPU.
"""

from __future__ import annotations

from pygpukit_kernels._build import (
    ABI_VERSION,
    DTYPE_CODES,
    INDEX_ERROR_PRESET,
    INDEX_MAX,
    MAX_DIMS,
    SMALL_BLOCK,
    SMALL_KERNELS,
    Activation,
    BinaryOp,
    BuildInfo,
    DType,
    Fp8GemmDesc,
    GemmDesc,
    IndexDesc,
    IndexMode,
    NormOp,
    Precision,
    RandomDist,
    ReduceOp,
    ScanOp,
    SmallStep,
    SortFlag,
    UnaryOp,
    build_info,
    covers,
    fatbin_path,
    header_path,
    library_path,
    load,
)

__version__ = "0.3.0.dev0"

__all__ = [
    "ABI_VERSION",
    "DTYPE_CODES",
    "INDEX_ERROR_PRESET",
    "INDEX_MAX",
    "MAX_DIMS",
    "SMALL_BLOCK",
    "SMALL_KERNELS",
    "Activation",
    "BinaryOp",
    "BuildInfo",
    "DType",
    "Fp8GemmDesc",
    "GemmDesc",
    "IndexDesc",
    "IndexMode",
    "NormOp",
    "SmallStep",
    "Precision",
    "RandomDist",
    "ReduceOp",
    "ScanOp",
    "SortFlag",
    "UnaryOp",
    "__version__",
    "build_info",
    "covers",
    "fatbin_path",
    "header_path",
    "library_path",
    "load",
]
