# Writes the first ```cpp block of a Markdown file to a .cpp file, so a test can compile and run
# the README's first example exactly as a reader copies it.
#
#   cmake -DMARKDOWN=README.md -DOUT=readme_first_example.cpp -P extract_first_cpp_block.cmake
file(READ "${MARKDOWN}" text)
string(FIND "${text}" "```cpp\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${MARKDOWN} has no ```cpp block")
endif()
math(EXPR start "${start} + 7")
string(SUBSTRING "${text}" ${start} -1 rest)
string(FIND "${rest}" "\n```" end)
if(end EQUAL -1)
  message(FATAL_ERROR "${MARKDOWN}: the first ```cpp block is not closed")
endif()
math(EXPR end "${end} + 1")
string(SUBSTRING "${rest}" 0 ${end} code)
file(WRITE "${OUT}.tmp" "// Extracted from ${MARKDOWN} (first ```cpp block) by the build; do not edit.\n#line 1 \"README.md first cpp block\"\n${code}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
