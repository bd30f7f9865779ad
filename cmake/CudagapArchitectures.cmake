# cudagap_concrete_cuda_architectures(<out> <list>)
#
# The architectures CMake compiles cudagap's kernels for, with CMake's special values `native`,
# `all` and `all-major` replaced by the lists CMake resolved them to once the CUDA language is
# enabled (CMAKE_CUDA_ARCHITECTURES_NATIVE, _ALL, _ALL_MAJOR). The library records this list so
# that its errors and the doctor can compare it with a GPU; gpu::parse_cuda_architectures cannot
# resolve the special values at run time and rejects them.
function(cudagap_concrete_cuda_architectures out list)
  if(list STREQUAL "native")
    set(list "${CMAKE_CUDA_ARCHITECTURES_NATIVE}")
  elseif(list STREQUAL "all")
    set(list "${CMAKE_CUDA_ARCHITECTURES_ALL}")
  elseif(list STREQUAL "all-major")
    set(list "${CMAKE_CUDA_ARCHITECTURES_ALL_MAJOR}")
  endif()
  set(${out} "${list}" PARENT_SCOPE)
endfunction()
