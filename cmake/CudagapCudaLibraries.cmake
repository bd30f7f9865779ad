# cuBLAS, cuBLASLt and cuRAND for cudagap::blas: the toolkit's, or else NVIDIA's Python wheels'.
#
# FindCUDAToolkit defines CUDA::cublas, CUDA::cublasLt and CUDA::curand only when the toolkit
# holds those libraries. A minimal toolkit or a runtime-only container has none; a PyTorch user's
# CUDA libraries often come from pip instead (nvidia-cublas, nvidia-curand), laid out as
# <site-packages>/nvidia/cu13/{include,lib} for CUDA 13 (nvidia/cublas/ and nvidia/curand/ for
# CUDA 12) with the versioned names alone (libcublas.so.13, libcurand.so.10). Where the toolkit
# lacks one, this module makes its imported target from the wheel, found by the one search of
# NVIDIA's wheels (CudagapNvidiaWheels.cmake: python3's site-packages), and says which copy was
# taken. A library in neither place stays without a target; the caller says what to do.
#
# Used by cudagap's own build (after find_package(CUDAToolkit)) and by cudagapConfig.cmake,
# which is installed with this file and its neighbour.

include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/CudagapNvidiaWheels.cmake")

# cudagap_cuda_libraries(REPORT ALL|WHEELS|NONE [MISSING <out>])
#
# Makes CUDA::cublasLt, CUDA::cublas and CUDA::curand where FindCUDAToolkit did not. REPORT says
# what to print: where each library was taken from (ALL), only the ones taken from a wheel
# (WHEELS), or nothing (NONE). MISSING names a variable set to the libraries found in neither
# place ("libcublas (CUDA::cublas)", ...), empty when all were found.
function(cudagap_cuda_libraries)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "REPORT;MISSING" "")
  if(NOT arg_REPORT MATCHES "^(ALL|WHEELS|NONE)$")
    message(FATAL_ERROR "cudagap_cuda_libraries: REPORT must be ALL, WHEELS or NONE, not '${arg_REPORT}'")
  endif()
  # <target>|<header>|<SONAME version>|<name>: cuBLAS carries the toolkit's major version in its
  # SONAME; cuRAND has been libcurand.so.10 since CUDA 10. cuBLASLt first: cuBLAS links it.
  set(major "${CUDAToolkit_VERSION_MAJOR}")
  set(missing "")
  foreach(entry IN ITEMS "cublasLt|cublasLt.h|${major}|cuBLASLt" "cublas|cublas_v2.h|${major}|cuBLAS"
                         "curand|curand.h|10|cuRAND")
    string(REPLACE "|" ";" entry "${entry}")
    list(GET entry 0 name)
    list(GET entry 1 header)
    list(GET entry 2 soversion)
    list(GET entry 3 shown)
    if(TARGET CUDA::${name})
      _cudagap_cuda_library_origin(${name} origin)
      set(from "the CUDA toolkit")
    else()
      _cudagap_cuda_library_from_wheel(${name} ${header} ${soversion} origin)
      set(from "NVIDIA's wheel")
    endif()
    if(NOT TARGET CUDA::${name})
      list(APPEND missing "lib${name} (CUDA::${name})")
    elseif(arg_REPORT STREQUAL "ALL" OR (arg_REPORT STREQUAL "WHEELS" AND from MATCHES "wheel"))
      message(STATUS "cudagap: ${shown} from ${from}: ${origin}")
    endif()
  endforeach()
  if(arg_MISSING)
    set(${arg_MISSING} "${missing}" PARENT_SCOPE)
  endif()
endfunction()

# The file behind the toolkit's CUDA::<name>, for the report.
function(_cudagap_cuda_library_origin name out)
  get_target_property(location CUDA::${name} IMPORTED_LOCATION)
  if(NOT location)
    get_target_property(location CUDA::${name} IMPORTED_LOCATION_RELEASE)
  endif()
  set(${out} "${location}" PARENT_SCOPE)
endfunction()

# CUDA::<name> from the first wheel folder that holds both lib<name>.so.<soversion> and <header>;
# <out> is the library's path (or what was not found, for the report).
function(_cudagap_cuda_library_from_wheel name header soversion out)
  # CUDA 13's wheels share one folder; CUDA 12's have one per library (cublasLt is in cublas's).
  string(REGEX REPLACE "Lt$" "" own "${name}")
  cudagap_nvidia_wheel_dirs(dirs cu${CUDAToolkit_VERSION_MAJOR} ${own})
  string(TOUPPER "${name}" upper)
  find_library(CUDAGAP_WHEEL_${upper}_LIBRARY NAMES lib${name}.so.${soversion} NAMES_PER_DIR
    HINTS ${dirs} PATH_SUFFIXES lib NO_DEFAULT_PATH
    DOC "lib${name} from NVIDIA's wheel (the toolkit has none)")
  find_path(CUDAGAP_WHEEL_${upper}_INCLUDE_DIR NAMES ${header}
    HINTS ${dirs} PATH_SUFFIXES include NO_DEFAULT_PATH
    DOC "The folder of ${header} from NVIDIA's wheel (the toolkit has none)")
  mark_as_advanced(CUDAGAP_WHEEL_${upper}_LIBRARY CUDAGAP_WHEEL_${upper}_INCLUDE_DIR)
  set(library "${CUDAGAP_WHEEL_${upper}_LIBRARY}")
  set(include "${CUDAGAP_WHEEL_${upper}_INCLUDE_DIR}")
  if(NOT library OR NOT include)
    set(${out} "no lib${name}.so.${soversion} and ${header} in the wheel folders [${dirs}]" PARENT_SCOPE)
    return()
  endif()
  add_library(CUDA::${name} SHARED IMPORTED)
  set_target_properties(CUDA::${name} PROPERTIES
    IMPORTED_LOCATION "${library}"
    INTERFACE_INCLUDE_DIRECTORIES "${include}")
  # As the toolkit's targets: the runtime's headers, and cuBLAS's cuBLASLt.
  if(TARGET CUDA::toolkit)
    set_property(TARGET CUDA::${name} APPEND PROPERTY INTERFACE_LINK_LIBRARIES CUDA::toolkit)
  endif()
  if(name STREQUAL "cublas" AND TARGET CUDA::cublasLt)
    set_property(TARGET CUDA::${name} APPEND PROPERTY INTERFACE_LINK_LIBRARIES CUDA::cublasLt)
  endif()
  set(${out} "${library}" PARENT_SCOPE)
endfunction()
