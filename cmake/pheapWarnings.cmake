include_guard(GLOBAL)
function(pheap_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow=local
    -Wnon-virtual-dtor -Wno-missing-field-initializers)
endfunction()
