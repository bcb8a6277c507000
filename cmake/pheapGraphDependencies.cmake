# The dependencies of pheap::graph alone — zlib and libzstd, for compressed edge lists — as
# targets (ZLIB::ZLIB, pheap_deps::zstd). Sets pheap_graph_deps_FOUND and, when one is missing,
# pheap_graph_deps_MISSING (what to install). The build includes it and fails without them;
# pheapConfig.cmake loads pheap::graph only where they are found.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/pheapDependencies.cmake)  # pheap_import_library
set(pheap_graph_deps_FOUND TRUE)
set(pheap_graph_deps_MISSING "")
find_package(ZLIB QUIET)
if(NOT ZLIB_FOUND)
  set(pheap_graph_deps_FOUND FALSE)
  list(APPEND pheap_graph_deps_MISSING "zlib (Debian: zlib1g-dev)")
endif()
pheap_import_library(pheap_deps::zstd zstd.h zstd "libzstd" FOUND_VAR _pheap_zstd_found)
if(NOT _pheap_zstd_found)
  set(pheap_graph_deps_FOUND FALSE)
  list(APPEND pheap_graph_deps_MISSING "libzstd (Debian: libzstd-dev)")
endif()
