# Locate the CUDA toolchain installed from NVIDIA's PyPI wheels (nvidia-cuda-nvcc & co.), which
# all unpack into site-packages/nvidia/cu13 of the build environment.  Sets:
#   PYGPUKIT_CUDA_ROOT      the toolkit-shaped root (bin/nvcc, include, lib, nvvm)
#   PYGPUKIT_CUTLASS_INCLUDE_DIRS   CUTLASS headers from the nvidia-cutlass wheel (may be empty)
# A developer with a real toolkit may pass -DPYGPUKIT_CUDA_ROOT=/usr/local/cuda instead.

find_package(Python COMPONENTS Interpreter REQUIRED)

if(NOT PYGPUKIT_CUDA_ROOT)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c [=[
import importlib.util, os, sys
spec = importlib.util.find_spec("nvidia")
for base in (spec.submodule_search_locations if spec else []):
    root = os.path.join(base, "cu13")
    if os.path.isfile(os.path.join(root, "bin", "nvcc")):
        print(root); sys.exit(0)
sys.exit("nvidia/cu13/bin/nvcc not found: install nvidia-cuda-nvcc==13.0.* (a build requirement)")
]=]
    OUTPUT_VARIABLE PYGPUKIT_CUDA_ROOT
    ERROR_VARIABLE _pgk_err
    RESULT_VARIABLE _pgk_rc
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _pgk_rc EQUAL 0)
    message(FATAL_ERROR "CUDA toolchain wheels not found: ${_pgk_err}")
  endif()
endif()
message(STATUS "CUDA toolchain root: ${PYGPUKIT_CUDA_ROOT}")

execute_process(
  COMMAND "${Python_EXECUTABLE}" -c [=[
import importlib.util, os
spec = importlib.util.find_spec("cutlass_library")
if spec and spec.origin:
    src = os.path.join(os.path.dirname(spec.origin), "source")
    print(os.path.join(src, "include") + ";" + os.path.join(src, "tools", "util", "include"))
]=]
  OUTPUT_VARIABLE PYGPUKIT_CUTLASS_INCLUDE_DIRS
  OUTPUT_STRIP_TRAILING_WHITESPACE)

set(CMAKE_CUDA_COMPILER "${PYGPUKIT_CUDA_ROOT}/bin/nvcc" CACHE FILEPATH "nvcc" FORCE)
# nvcc.profile looks for libraries in lib64/, the wheels ship them in lib/.
if(EXISTS "${PYGPUKIT_CUDA_ROOT}/lib" AND NOT EXISTS "${PYGPUKIT_CUDA_ROOT}/lib64")
  string(APPEND CMAKE_CUDA_FLAGS " -L${PYGPUKIT_CUDA_ROOT}/lib")
endif()
# The wheels put CCCL (cub/thrust/libcu++) under include/cccl rather than include/.
set(PYGPUKIT_CUDA_INCLUDE_DIRS "${PYGPUKIT_CUDA_ROOT}/include" "${PYGPUKIT_CUDA_ROOT}/include/cccl")
