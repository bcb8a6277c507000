# Finds the dependencies of pheap::pheap (and pheap::metall) and exposes them as targets.
# Installed with the package and included by pheapConfig.cmake, so consumers of
# find_package(pheap) get the same targets. pheap::graph's own (zlib, libzstd) are in
# pheapGraphDependencies.cmake, pheap::mpi's (MPI) are found by pheapConfig.cmake: a consumer
# needs only what the targets it uses need.
include_guard(GLOBAL)
include(CMakeFindDependencyMacro)

set(THREADS_PREFER_PTHREAD_FLAG ON)
find_dependency(Threads)
find_dependency(Boost 1.74)  # header-only parts: Interprocess, Container, Unordered, CRC

find_package(PkgConfig QUIET)
# pheap_import_library(<target> <header> <library> <why> [FOUND_VAR <var>]): an imported target
# for a library without a CMake package of its own, or a fatal error naming the Debian
# package; with FOUND_VAR, <var> is set TRUE or FALSE instead of failing.
function(pheap_import_library target header library why)
  cmake_parse_arguments(PARSE_ARGV 4 arg "" "FOUND_VAR" "")
  if(arg_FOUND_VAR)
    set(${arg_FOUND_VAR} TRUE PARENT_SCOPE)
  endif()
  if(TARGET ${target})
    return()
  endif()
  string(MAKE_C_IDENTIFIER "PHEAP_${library}" var)
  find_path(${var}_INCLUDE_DIR ${header})
  find_library(${var}_LIBRARY NAMES ${library})
  if(NOT ${var}_INCLUDE_DIR OR NOT ${var}_LIBRARY)
    if(arg_FOUND_VAR)
      set(${arg_FOUND_VAR} FALSE PARENT_SCOPE)
      return()
    endif()
    message(FATAL_ERROR "pheap needs ${why}")
  endif()
  add_library(${target} UNKNOWN IMPORTED)
  set_target_properties(${target} PROPERTIES
    IMPORTED_LOCATION "${${var}_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${${var}_INCLUDE_DIR}")
endfunction()

pheap_import_library(pheap_deps::uring liburing.h uring "liburing (Debian: apt-get install liburing-dev)")
pheap_import_library(pheap_deps::isal isa-l/crc.h isal
                     "Intel ISA-L for CRC32C (Debian: apt-get install libisal-dev)")
