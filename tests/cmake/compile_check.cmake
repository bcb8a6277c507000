# Compiles one translation unit and checks the outcome: the engine of compile-fail tests.
#
#   cmake -DCXX=<compiler> -DSTD=<-std=c++20> -DINCLUDES=<dir;dir> -DDEFINES=<N;N=V>
#         -DSOURCE=<file.cpp> -DEXPECT=fail|pass [-DMESSAGE=<regex>] -P compile_check.cmake
#
# EXPECT=fail passes only if the compiler fails AND its output matches MESSAGE (so a TU that
# fails for another reason — a typo, a missing include path — fails the test); EXPECT=pass
# passes only if the TU compiles. -fsyntax-only: nothing is generated.
foreach(v CXX STD SOURCE EXPECT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "compile_check: ${v} not set")
  endif()
endforeach()
set(args ${STD} -fsyntax-only)
foreach(d IN LISTS INCLUDES)
  if(d)
    list(APPEND args -I${d})
  endif()
endforeach()
foreach(d IN LISTS DEFINES)
  list(APPEND args -D${d})
endforeach()
execute_process(COMMAND ${CXX} ${args} ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(EXPECT STREQUAL "fail")
  if(rc EQUAL 0)
    message(FATAL_ERROR "compiled, but it must be refused:\n${CXX} ${args} ${SOURCE}")
  endif()
  if(NOT out MATCHES "${MESSAGE}")
    message(FATAL_ERROR "refused, but not with the expected message /${MESSAGE}/:\n${out}")
  endif()
  message(STATUS "refused as expected: ${DEFINES}")
elseif(EXPECT STREQUAL "pass")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "does not compile:\n${out}")
  endif()
  message(STATUS "compiles as expected: ${DEFINES}")
else()
  message(FATAL_ERROR "compile_check: EXPECT must be fail or pass, not ${EXPECT}")
endif()
