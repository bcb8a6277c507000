# Runs a program and checks it: exit code 0 and its standard output equal to an expected file
# (or matching a regex). The engine of tests that run example programs.
#
#   cmake -DPROGRAM=<exe> [-DARGS=<a;b>] [-DWORKDIR=<dir>] [-DFRESH_DIR=<dir>]
#         (-DEXPECT_FILE=<file> [-DSORT_LINES=ON] | -DEXPECT_REGEX=<regex>) -P run_check.cmake
#
# FRESH_DIR is removed and recreated before the run (the program's datastores go there).
# SORT_LINES compares the lines as sorted sets (for programs whose output order is unspecified).
if(DEFINED FRESH_DIR)
  file(REMOVE_RECURSE "${FRESH_DIR}")
  file(MAKE_DIRECTORY "${FRESH_DIR}")
endif()
if(NOT DEFINED WORKDIR)
  set(WORKDIR ".")
endif()
execute_process(COMMAND "${PROGRAM}" ${ARGS} WORKING_DIRECTORY "${WORKDIR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "${PROGRAM} exited with ${rc}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(DEFINED EXPECT_FILE)
  file(READ "${EXPECT_FILE}" expected)
  if(SORT_LINES)
    string(REPLACE "\n" ";" out_lines "${out}")
    string(REPLACE "\n" ";" expected_lines "${expected}")
    list(SORT out_lines)
    list(SORT expected_lines)
    set(out "${out_lines}")
    set(expected "${expected_lines}")
  endif()
  if(NOT out STREQUAL expected)
    message(FATAL_ERROR "${PROGRAM}: output differs from ${EXPECT_FILE}\n--- got:\n${out}\n--- expected:\n${expected}\nstderr:\n${err}")
  endif()
elseif(DEFINED EXPECT_REGEX)
  if(NOT out MATCHES "${EXPECT_REGEX}")
    message(FATAL_ERROR "${PROGRAM}: output does not match /${EXPECT_REGEX}/:\n${out}\nstderr:\n${err}")
  endif()
else()
  message(FATAL_ERROR "run_check: EXPECT_FILE or EXPECT_REGEX required")
endif()
message(STATUS "${PROGRAM}: output as expected")
