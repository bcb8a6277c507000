# Runs a program and checks it: exit code 0 and its standard output equal to an expected file
# (or matching a regex). The engine of tests that run example programs.
#
#   cmake -DPROGRAM=<exe> [-DARGS=<a;b>] [-DWORKDIR=<dir>] [-DFRESH=<name>]
#         (-DEXPECT_FILE=<file> [-DSORT_LINES=ON] | -DEXPECT_REGEX=<regex>) -P run_check.cmake
#
# FRESH: the run gets a new directory $TMPDIR/pheap-<name>-XXXXXXXX (TMPDIR or /tmp), removed
# afterwards; "%FRESH%" in ARGS and WORKDIR stands for it (the program's datastores go there).
# Not in the build tree: the same build's tests also run as another user (scripts/test.sh).
# SORT_LINES compares the lines as sorted sets (for programs whose output order is unspecified).
if(DEFINED FRESH)
  set(base "$ENV{TMPDIR}")
  if(base STREQUAL "")
    set(base "/tmp")
  endif()
  string(RANDOM LENGTH 8 suffix)
  set(fresh_dir "${base}/pheap-${FRESH}-${suffix}")
  file(REMOVE_RECURSE "${fresh_dir}")
  file(MAKE_DIRECTORY "${fresh_dir}")
  string(REPLACE "%FRESH%" "${fresh_dir}" ARGS "${ARGS}")
  if(DEFINED WORKDIR)
    string(REPLACE "%FRESH%" "${fresh_dir}" WORKDIR "${WORKDIR}")
  endif()
endif()
if(NOT DEFINED WORKDIR)
  set(WORKDIR ".")
endif()
execute_process(COMMAND "${PROGRAM}" ${ARGS} WORKING_DIRECTORY "${WORKDIR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(DEFINED fresh_dir)
  file(REMOVE_RECURSE "${fresh_dir}")
endif()
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
