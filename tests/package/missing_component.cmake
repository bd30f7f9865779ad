# find_package(cudagap COMPONENTS <component>) where the component's dependency is missing: a
# REQUIRED request fails with the component's reason (what is missing, how to fix it) instead of
# CMake's bare "set cudagap_FOUND to FALSE" or a link-interface error at generate time, and an
# OPTIONAL one succeeds without the component, generating and building the rest.
# -D COMPONENT=dnn|nccl|blas -D SOURCE_DIR=... -D BINARY_DIR=... -D GENERATOR=...
# -D CONFIGURE_ARGS=<joined by '|'> -D INSTALL_FROM=<cudagap build dir> -D INSTALL_PREFIX=<dir>
# blas also needs -D TOOLKIT_INCLUDE_DIR=... -D TOOLKIT_LIBRARY_DIR=... -D TOOLKIT_VERSION=...
# -D MAKE_PROGRAM=<the generator's build tool>
include("${CMAKE_CURRENT_LIST_DIR}/fake_cuda_layouts.cmake")

string(REPLACE "|" ";" CONFIGURE_ARGS "${CONFIGURE_ARGS}")
file(REMOVE_RECURSE "${BINARY_DIR}" "${INSTALL_PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${INSTALL_FROM}" --prefix "${INSTALL_PREFIX}"
                RESULT_VARIABLE result OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "install failed (${result}): ${err}")
endif()

set(environment "")
if(COMPONENT STREQUAL "dnn")
  list(APPEND CONFIGURE_ARGS -DCMAKE_DISABLE_FIND_PACKAGE_CUDNN=TRUE)
  set(expected_reason "dnn: cuDNN was not found: set CUDNN_ROOT to the folder holding include/cudnn.h and lib/")
elseif(COMPONENT STREQUAL "nccl")
  list(APPEND CONFIGURE_ARGS -DCMAKE_DISABLE_FIND_PACKAGE_NCCL=TRUE)
  set(expected_reason "nccl: NCCL was not found: set NCCL_ROOT to the folder holding include/nccl.h and lib/libnccl.so, or install NVIDIA's wheel (pip install nvidia-nccl-cu13)")
elseif(COMPONENT STREQUAL "blas")
  # A CUDA Toolkit without cuBLAS and cuRAND (fake_cuda_layouts.cmake). FindCUDAToolkit must not
  # find the real libraries some other way: no PATH-derived or system prefixes, no CUDA_PATH.
  set(toolkit "${BINARY_DIR}/toolkit-without-cublas")
  make_toolkit_without_cublas("${toolkit}")
  list(FILTER CONFIGURE_ARGS EXCLUDE REGEX "^-DCUDAToolkit_ROOT=")
  # (With those searches off, the build tool must be named: CMake would look for it on PATH.)
  list(APPEND CONFIGURE_ARGS "-DCUDAToolkit_ROOT=${toolkit}" -DCMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH=OFF
              -DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF -DCMAKE_FIND_USE_CMAKE_ENVIRONMENT_PATH=OFF
              "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
  set(environment "${CMAKE_COMMAND}" -E env --unset=CUDA_PATH --unset=CUDAToolkit_ROOT)
  set(expected_reason "blas: the CUDA Toolkit ${TOOLKIT_VERSION} found at ${toolkit}/lib64 has no libcublas (CUDA::cublas) and libcublasLt (CUDA::cublasLt) and libcurand (CUDA::curand): install its cuBLAS and cuRAND libraries")
else()
  message(FATAL_ERROR "COMPONENT must be dnn, nccl or blas, not '${COMPONENT}'")
endif()
set(common -S "${SOURCE_DIR}" -G "${GENERATOR}" ${CONFIGURE_ARGS} "-DCMAKE_PREFIX_PATH=${INSTALL_PREFIX}"
    "-DCOMPONENT=${COMPONENT}")

execute_process(COMMAND ${environment} "${CMAKE_COMMAND}" ${common} -B "${BINARY_DIR}/required" -DREQUIRE=ON
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE required_err)
if(result EQUAL 0)
  message(FATAL_ERROR "find_package(cudagap REQUIRED COMPONENTS ${COMPONENT}) succeeded without its dependency:\n${out}\n${required_err}")
endif()
foreach(expected "required components are missing" "${expected_reason}" "no_such_component: no such component")
  string(FIND "${required_err}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the failure does not say '${expected}':\n${required_err}")
  endif()
endforeach()

execute_process(COMMAND ${environment} "${CMAKE_COMMAND}" ${common} -B "${BINARY_DIR}/optional" -DREQUIRE=OFF
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "find_package(cudagap OPTIONAL_COMPONENTS ${COMPONENT}) failed without its dependency:\n${out}\n${err}")
endif()
if(COMPONENT STREQUAL "blas")
  # The simulation must be what it claims: a toolkit with a runtime and without cuBLAS/cuRAND.
  foreach(expected "CUDA::cudart present" "CUDA::cublas absent" "CUDA::cublasLt absent" "CUDA::curand absent")
    string(FIND "${out}" "toolkit check: ${expected}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "the toolkit without cuBLAS is not one: no 'toolkit check: ${expected}':\n${out}")
    endif()
  endforeach()
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BINARY_DIR}/optional"
                RESULT_VARIABLE result OUTPUT_VARIABLE build_out ERROR_VARIABLE build_err)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "the consumer without ${COMPONENT} did not build:\n${build_out}\n${build_err}")
endif()
message(STATUS "a missing ${COMPONENT} is reported:\n${required_err}\nand optional without it:\n${err}\n${out}")
