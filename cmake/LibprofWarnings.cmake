# One place for warnings (spdlog's habit): every libprof target calls this.
function(libprof_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX,C>:-Wall -Wextra -Wshadow -Wno-unused-parameter>)
endfunction()
