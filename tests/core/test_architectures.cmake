# cudagap_concrete_cuda_architectures: CMake's special values become the lists CMake resolved,
# so that the library never records "native" (which gpu::parse_cuda_architectures rejects, and
# errors and the doctor would then fail on). Run with cmake -D MODULE=<CudagapArchitectures.cmake> -P.
include("${MODULE}")

set(CMAKE_CUDA_ARCHITECTURES_NATIVE "90-real")
set(CMAKE_CUDA_ARCHITECTURES_ALL "75-real;80-real;86-real;89-real;90")
set(CMAKE_CUDA_ARCHITECTURES_ALL_MAJOR "75-real;80-real;90")

function(expect given wanted)
  cudagap_concrete_cuda_architectures(got "${given}")
  if(NOT got STREQUAL wanted)
    message(FATAL_ERROR "'${given}' became '${got}', expected '${wanted}'")
  endif()
endfunction()

expect("native" "90-real")
expect("all" "75-real;80-real;86-real;89-real;90")
expect("all-major" "75-real;80-real;90")
expect("75-real;80-real;86-real;89-real;90" "75-real;80-real;86-real;89-real;90")
expect("90a-real" "90a-real")
expect("" "")
message(STATUS "special CUDA architecture values resolve to concrete lists")
