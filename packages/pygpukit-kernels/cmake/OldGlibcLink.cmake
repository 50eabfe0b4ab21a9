# Link the kernels' shared library for an old glibc (manylinux_2_28) on any build machine.
#
# nvcc needs a host compiler it supports (here the build machine's g++; it refuses zig's clang
# with libc++ and glibc headers), so the host code is compiled as usual.  Only the final link
# changes: instead of g++ (which links against this machine's glibc and gives every libc call
# the newest symbol version it has: pthread_*/dl* GLIBC_2.34, exp/log/pow 2.29, ...), zig's
# `cc` links, with `-target <arch>-linux-gnu.2.28`: lld against zig's glibc 2.28 stubs, so each
# reference gets the version glibc 2.28 has, or the link fails.  Same model as zig's own
# builds (new headers, old stubs), applied to objects g++ compiled.  The pieces:
#
#   libstdc++.a of the g++ that compiled the host code (its headers and library must match),
#       linked statically as before, its symbols kept local by the version script;
#   libgcc_s.so.1 instead of the static libgcc_eh.a: gcc 12's static unwinder calls
#       _dl_find_object (GLIBC_2.35) with no fallback.  The manylinux policy lists
#       libgcc_s.so.1 (its _Unwind_* are GCC_3.0/4.2.0); gcc links it so by default anyway;
#   cmake/glibc_compat.cpp: the two newer glibc symbols that g++'s headers and libstdc++.a still
#       reference (__libc_single_threaded, arc4random), defined inside the library;
#   -z defs: a symbol glibc 2.28 lacks fails the build here instead of the import elsewhere;
#   -z nodelete: never unloaded (below).
#
# Options (same names as pygpukit-driver's):
#   PYGPUKIT_USE_ZIG  ON: link with zig as above (Linux); OFF: link with the host g++ against
#                     this machine's glibc (a wheel for this machine's glibc and newer only)
#   PYGPUKIT_GLIBC    the glibc to link against (default 2.28)
#
# Usage, after enable_language(CUDA):  pgk_link_for_old_glibc(<shared library target>)

option(PYGPUKIT_USE_ZIG "Linux: link the shared library with zig for an old glibc" ON)
set(PYGPUKIT_GLIBC "2.28" CACHE STRING "Linux: the oldest glibc the library must load on")

function(_pgk_host_file out host name)
  execute_process(COMMAND "${host}" -print-file-name=${name}
                  OUTPUT_VARIABLE _path OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _rc)
  # A compiler without the file prints the bare name back.
  if(NOT _rc EQUAL 0 OR NOT IS_ABSOLUTE "${_path}" OR NOT EXISTS "${_path}")
    message(FATAL_ERROR "the CUDA host compiler ${host} has no ${name} (the old-glibc link "
                        "needs GCC's libstdc++ and libgcc_s; or pass -DPYGPUKIT_USE_ZIG=OFF)")
  endif()
  get_filename_component(_path "${_path}" REALPATH)
  set(${out} "${_path}" PARENT_SCOPE)
endfunction()

function(pgk_link_for_old_glibc target)
  if(NOT CMAKE_SYSTEM_NAME STREQUAL "Linux")
    return()  # glibc, ELF version scripts and zig's glibc stubs are Linux matters
  endif()
  set(_exports "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/exports.map")
  # Only the C ABI (pgk_*) is exported: the static C++ runtime and cudart stay private.
  target_link_options(${target} PRIVATE "-Wl,--version-script=${_exports}")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${_exports}")
  if(NOT PYGPUKIT_USE_ZIG)
    # The host g++ links against this machine's glibc (the wheel needs it or newer).
    target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc -Wl,--as-needed)
    return()
  endif()

  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c
            "import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), 'zig'))"
    OUTPUT_VARIABLE _zig OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_VARIABLE _err RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0 OR NOT EXISTS "${_zig}")
    message(FATAL_ERROR "zig not found (install the `ziglang` build requirement, or pass "
                        "-DPYGPUKIT_USE_ZIG=OFF): ${_err}")
  endif()

  # The compiler nvcc compiled the host code with (CMake reads it from nvcc at detection and
  # links with it by default): its C++ runtime is the one to link.
  set(_host "${CMAKE_CUDA_HOST_LINK_LAUNCHER}")
  _pgk_host_file(_libstdcxx "${_host}" libstdc++.a)
  _pgk_host_file(_libgcc_s "${_host}" libgcc_s.so.1)

  execute_process(COMMAND uname -m OUTPUT_VARIABLE _arch OUTPUT_STRIP_TRAILING_WHITESPACE
                  COMMAND_ERROR_IS_FATAL ANY)
  set(_target "${_arch}-linux-gnu.${PYGPUKIT_GLIBC}")
  # A wrapper at a fixed path: zig's path is in the (per-build) isolated environment.  It drops
  # the -L folders that do not exist (CMake's implicit CUDA ones, lib64/ and lib64/stubs/, which
  # the nvidia wheels lack: zig would warn about each).
  set(_linker "${CMAKE_BINARY_DIR}/zig-bin/zig-cc-link")
  file(WRITE "${_linker}" [=[#!/bin/sh
for arg do
  shift
  case "$arg" in -L*) [ -d "${arg#-L}" ] || continue ;; esac
  set -- "$@" "$arg"
done
]=] "exec \"${_zig}\" cc -target ${_target} \"$@\"\n")
  file(CHMOD "${_linker}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
       GROUP_EXECUTE)
  # The CUDA link rule is "<launcher> <flags> -o <target> <objects> <libraries> <cudart ...>".
  set(CMAKE_CUDA_HOST_LINK_LAUNCHER "${_linker}" PARENT_SCOPE)

  # An object library: a C++ source in the target itself would make CMake link it with the
  # C++ rule (plain g++), not the CUDA rule whose launcher is set above.
  add_library(pgk_glibc_compat OBJECT "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/glibc_compat.cpp")
  set_target_properties(pgk_glibc_compat PROPERTIES POSITION_INDEPENDENT_CODE ON
                        CXX_VISIBILITY_PRESET hidden)
  target_sources(${target} PRIVATE $<TARGET_OBJECTS:pgk_glibc_compat>)
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CUDA)
  target_link_libraries(${target} PRIVATE "${_libstdcxx}" "${_libgcc_s}" m)
  # -z nodelete: dlclose leaves the library mapped, as it did when g++ linked it (libstdc++'s
  # STB_GNU_UNIQUE symbols made it so; the version script now keeps them local).  zig links no
  # crtbeginS.o, whose __cxa_finalize call would run the library's static destructors at
  # dlclose: unmapped, they would run at exit() from freed code.
  target_link_options(${target} PRIVATE -Wl,-z,defs -Wl,-z,nodelete -Wl,--as-needed)
  message(STATUS "Linking ${target} with zig for ${_target} (C++ runtime: ${_libstdcxx}, "
                 "${_libgcc_s})")
endfunction()
