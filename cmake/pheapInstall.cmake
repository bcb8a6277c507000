# Installs the library, public headers and a relocatable CMake package:
#   find_package(pheap CONFIG REQUIRED)  →  targets pheap::pheap, pheap::c (the C API,
#   <pheap/pheap.h>; src/capi/CMakeLists.txt installs it), pheap::metall (the Metall drop-in:
#   <prefix>/include/pheap-metall/metall/*.hpp) and pheap::metall_c (Metall's C API,
#   <metall/c_api/metall.h>), pheap::graph (component graph), and pheap::mpi and
#   pheap::graph_mpi when MPI was found at build time (component mpi). One export file per
#   component, so a consumer needs only what the targets it uses need (pheapConfig.cmake.in).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS pheap EXPORT pheapTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/pheap DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS pheap_metall EXPORT pheapTargets)
install(TARGETS pheap_metall_c EXPORT pheapTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/compat/metall/include/metall
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/pheap-metall)
install(EXPORT pheapTargets NAMESPACE pheap:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pheap)
install(EXPORT pheapGraphTargets NAMESPACE pheap:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pheap)
if(PHEAP_HAVE_MPI)
  install(EXPORT pheapMpiTargets NAMESPACE pheap:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pheap)
  install(EXPORT pheapGraphMpiTargets NAMESPACE pheap:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pheap)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/pheapConfig.cmake.in
  ${PROJECT_BINARY_DIR}/pheapConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pheap)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/pheapConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/pheapConfig.cmake
  ${PROJECT_BINARY_DIR}/pheapConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/pheapDependencies.cmake
  ${PROJECT_SOURCE_DIR}/cmake/pheapGraphDependencies.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/pheap)
