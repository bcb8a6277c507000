# Installs a build tree into a fresh prefix, then configures, builds and runs a consumer
# project against it with find_package(pheap): the installed package, not the build tree.
#
#   cmake -DBUILD_DIR=<pheap build> -DWORK=<name> -DCONSUMER=<project dir>
#         -DCXX=<compiler> -DEXPECT_REGEX=<regex> [-DSANITIZE=<list>]
#         [-DCONFIGURE_ARGS=<arg;arg>] [-DEXPECT_CONFIGURE_FAILURE=<regex>] -P install_and_consume.cmake
# CONFIGURE_ARGS: more arguments of the consumer's configure, separated by '|' (a machine without
# MPI: -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON). EXPECT_CONFIGURE_FAILURE: the configure must fail with
# output matching it (nothing is built then).
# SANITIZE: the -fsanitize= list pheap was built with (PHEAP_SANITIZE); the consumer is compiled
# and linked with it too, as a sanitized library needs.
# WORK names the scratch directory $TMPDIR/pheap-<name>-XXXXXXXX (TMPDIR or /tmp), removed when
# the consumer ran: not the build tree, whose tests also run as another user (scripts/test.sh).
set(base "$ENV{TMPDIR}")
if(base STREQUAL "")
  set(base "/tmp")
endif()
string(RANDOM LENGTH 8 suffix)
set(WORK "${base}/pheap-${WORK}-${suffix}")
file(REMOVE_RECURSE "${WORK}")
set(prefix "${WORK}/prefix")
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()
step("install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=${SANITIZE}")
endif()
string(REPLACE "|" ";" CONFIGURE_ARGS "${CONFIGURE_ARGS}")
set(configure ${CMAKE_COMMAND} -S "${CONSUMER}" -B "${WORK}/consumer" -G Ninja
     -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
     "-DCMAKE_CXX_FLAGS=${flags}" "-DCMAKE_C_FLAGS=${flags}" "-DCMAKE_EXE_LINKER_FLAGS=${flags}"
     ${CONFIGURE_ARGS})
if(DEFINED EXPECT_CONFIGURE_FAILURE)
  execute_process(COMMAND ${configure} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  file(REMOVE_RECURSE "${WORK}")
  if(rc STREQUAL "0")
    message(FATAL_ERROR "the consumer's configure succeeded, but must fail:\n${out}\n${err}")
  endif()
  if(NOT "${out}${err}" MATCHES "${EXPECT_CONFIGURE_FAILURE}")
    message(FATAL_ERROR "the configure failed without /${EXPECT_CONFIGURE_FAILURE}/:\n${out}\n${err}")
  endif()
  return()
endif()
step("configure the consumer" ${configure})
step("build the consumer" ${CMAKE_COMMAND} --build "${WORK}/consumer")
# An MPI consumer (a singleton MPI_Init) keeps Open MPI's session files in WORK, not in the
# /tmp/ompi.<host>.<uid> that mpiruns of tests running beside it race to create (mpi_runner.hpp).
set(ENV{OMPI_MCA_orte_tmpdir_base} "${WORK}")
step("run the consumer" "${WORK}/consumer/app" "${WORK}/datastore")
if(NOT step_output MATCHES "${EXPECT_REGEX}")
  message(FATAL_ERROR "consumer output does not match /${EXPECT_REGEX}/:\n${step_output}")
endif()
file(REMOVE_RECURSE "${WORK}")
message(STATUS "installed package served the consumer: ${step_output}")
