# Finds pheap's dependencies and exposes them as targets. Installed with the package and
# included by pheapConfig.cmake, so consumers of find_package(pheap) get the same targets.
include_guard(GLOBAL)
include(CMakeFindDependencyMacro)

set(THREADS_PREFER_PTHREAD_FLAG ON)
find_dependency(Threads)
find_dependency(Boost 1.74)  # header-only parts: Interprocess, Container, Unordered, CRC

find_package(PkgConfig QUIET)
if(NOT TARGET pheap_deps::uring)
  find_path(PHEAP_URING_INCLUDE_DIR liburing.h)
  find_library(PHEAP_URING_LIBRARY NAMES uring)
  if(NOT PHEAP_URING_INCLUDE_DIR OR NOT PHEAP_URING_LIBRARY)
    message(FATAL_ERROR "pheap needs liburing (Debian: apt-get install liburing-dev)")
  endif()
  add_library(pheap_deps::uring UNKNOWN IMPORTED)
  set_target_properties(pheap_deps::uring PROPERTIES
    IMPORTED_LOCATION "${PHEAP_URING_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${PHEAP_URING_INCLUDE_DIR}")
endif()
if(NOT TARGET pheap_deps::isal)
  find_path(PHEAP_ISAL_INCLUDE_DIR isa-l/crc.h)
  find_library(PHEAP_ISAL_LIBRARY NAMES isal)
  if(NOT PHEAP_ISAL_INCLUDE_DIR OR NOT PHEAP_ISAL_LIBRARY)
    message(FATAL_ERROR "pheap needs Intel ISA-L for CRC32C (Debian: apt-get install libisal-dev)")
  endif()
  add_library(pheap_deps::isal UNKNOWN IMPORTED)
  set_target_properties(pheap_deps::isal PROPERTIES
    IMPORTED_LOCATION "${PHEAP_ISAL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${PHEAP_ISAL_INCLUDE_DIR}")
endif()
# Compressed edge-list inputs of the graph layer (pheap::graph): zlib and libzstd.
find_dependency(ZLIB)
if(NOT TARGET pheap_deps::zstd)
  find_path(PHEAP_ZSTD_INCLUDE_DIR zstd.h)
  find_library(PHEAP_ZSTD_LIBRARY NAMES zstd)
  if(NOT PHEAP_ZSTD_INCLUDE_DIR OR NOT PHEAP_ZSTD_LIBRARY)
    message(FATAL_ERROR "pheap needs libzstd for compressed edge lists (Debian: apt-get install libzstd-dev)")
  endif()
  add_library(pheap_deps::zstd UNKNOWN IMPORTED)
  set_target_properties(pheap_deps::zstd PROPERTIES
    IMPORTED_LOCATION "${PHEAP_ZSTD_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${PHEAP_ZSTD_INCLUDE_DIR}")
endif()
