# cudagap_set_warnings(<target>)
#
# The warning flags of cudagap's own code (never of its consumers): -Wall -Wextra -Wpedantic for
# C++ sources, -Werror when CUDAGAP_WARNINGS_AS_ERRORS is on. CUDA sources get -Wall -Wextra for
# their host code only: nvcc's generated stubs do not compile cleanly under -Wpedantic.
function(cudagap_set_warnings target)
  set(cxx_flags -Wall -Wextra -Wpedantic)
  if(CUDAGAP_WARNINGS_AS_ERRORS)
    list(APPEND cxx_flags -Werror)
  endif()
  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:CXX>:${cxx_flags}>"
    "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>")
endfunction()
