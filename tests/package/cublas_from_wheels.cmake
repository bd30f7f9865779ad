# cuBLAS, cuBLASLt and cuRAND from NVIDIA's wheels when the toolkit has none, with real libraries
# (fake_cuda_layouts.cmake): a toolkit without cuBLAS and cuRAND, and the CUDA 13 wheels' layout
# in a site-packages folder that python3 sees (PYTHONPATH), holding the toolkit's own files.
#   1. cudagap's own configure takes the wheels' copies, says so, and generates (it stopped at
#      generate time before: CUDA::cublas was not a target);
#   2. a consumer of the installed package configures (the package says which copies it took),
#      builds and runs, and ldd shows that it loads cuBLAS, cuBLASLt and cuRAND from the wheels.
# The real toolkit's library folders are hidden from CMake's searches (CMAKE_IGNORE_PATH), so that
# nothing else can satisfy them; cuDNN and NCCL, which live there too, are then optional.
# -D CUDAGAP_SOURCE=<cudagap> -D SOURCE_DIR=<the consumer> -D BINARY_DIR=... -D GENERATOR=...
# -D CONFIGURE_ARGS=<joined by '|'> -D INSTALL_FROM=<cudagap build dir> -D INSTALL_PREFIX=<dir>
# -D TOOLKIT_INCLUDE_DIR=... -D TOOLKIT_LIBRARY_DIR=... -D TOOLKIT_VERSION=...
# -D CUDA_COMPILER=<nvcc> -D PYTHON=<python3> -D LDD=<ldd> -D MAKE_PROGRAM=<the generator's tool>
cmake_minimum_required(VERSION 3.24)
include("${CMAKE_CURRENT_LIST_DIR}/run_step.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/fake_cuda_layouts.cmake")

string(REPLACE "|" ";" CONFIGURE_ARGS "${CONFIGURE_ARGS}")
file(REMOVE_RECURSE "${BINARY_DIR}" "${INSTALL_PREFIX}")
set(toolkit "${BINARY_DIR}/toolkit-without-cublas")
set(site "${BINARY_DIR}/site-packages")
make_toolkit_without_cublas("${toolkit}")
make_cuda_wheels("${site}")
string(REGEX MATCH "^[0-9]+" major "${TOOLKIT_VERSION}")
set(wheel_lib "${site}/nvidia/cu${major}/lib")

# The folders where the real cuBLAS and cuRAND are, as given and with links resolved.
set(hidden "")
foreach(library IN ITEMS "libcublas.so.${major}" "libcublasLt.so.${major}" "libcurand.so.10")
  file(REAL_PATH "${TOOLKIT_LIBRARY_DIR}/${library}" real)
  cmake_path(GET real PARENT_PATH folder)
  list(APPEND hidden "${folder}")
endforeach()
# ... and every system folder that holds a copy too (/usr/local/lib64 may be the toolkit's).
foreach(folder IN ITEMS "${TOOLKIT_LIBRARY_DIR}" /usr/local/lib64 /usr/local/lib /usr/lib64 /usr/lib
                        /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /lib64 /lib)
  file(GLOB copies "${folder}/libcublas*.so*" "${folder}/libcurand*.so*")
  if(copies)
    file(REAL_PATH "${folder}" real)
    list(APPEND hidden "${folder}" "${real}")
  endif()
endforeach()
list(REMOVE_DUPLICATES hidden)
# (A list does not survive a -D argument among others: an initial cache file carries it.)
file(WRITE "${BINARY_DIR}/hide-the-real-libraries.cmake"
  "set(CMAKE_IGNORE_PATH \"${hidden}\" CACHE STRING \"the real cuBLAS and cuRAND folders\")\n")

# The toolkit's cuDNN and NCCL come through the fake toolkit's links; PATH gives no prefixes (the
# real toolkit's bin/ may be on it).
list(FILTER CONFIGURE_ARGS EXCLUDE REGEX "^-D(CUDAToolkit_ROOT|CUDNN_ROOT|NCCL_ROOT)=")
set(fake_args -C "${BINARY_DIR}/hide-the-real-libraries.cmake" ${CONFIGURE_ARGS}
    "-DCUDAToolkit_ROOT=${toolkit}" "-DPython3_EXECUTABLE=${PYTHON}"
    -DCMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH=OFF "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
set(environment "${CMAKE_COMMAND}" -E env --unset=CUDA_PATH --unset=CUDAToolkit_ROOT
    --unset=LD_LIBRARY_PATH "PYTHONPATH=${site}")

# The configure output must name the wheel's copy of each library.
function(expect_wheel_copies what output)
  foreach(pair IN ITEMS "cuBLASLt|libcublasLt.so.${major}" "cuBLAS|libcublas.so.${major}"
                        "cuRAND|libcurand.so.10")
    string(REPLACE "|" ";" pair "${pair}")
    list(GET pair 0 shown)
    list(GET pair 1 file)
    string(FIND "${output}" "cudagap: ${shown} from NVIDIA's wheel: ${wheel_lib}/${file}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${what} does not say that it took ${shown} from the wheel "
                          "(${wheel_lib}/${file}):\n${output}")
    endif()
  endforeach()
endfunction()

# 1. cudagap's own configure: the libraries alone, one architecture, the real nvcc (the fake
#    toolkit's bin/ is empty, as FindCUDAToolkit must see it).
run("configure cudagap" ${environment} "${CMAKE_COMMAND}" -S "${CUDAGAP_SOURCE}" -B "${BINARY_DIR}/cudagap"
    -G "${GENERATOR}" ${fake_args} "-DCMAKE_CUDA_COMPILER=${CUDA_COMPILER}" -DCMAKE_CUDA_ARCHITECTURES=75-real
    -DCUDAGAP_BUILD_TESTS=OFF -DCUDAGAP_BUILD_EXAMPLES=OFF -DCUDAGAP_BUILD_BENCH=OFF -DCUDAGAP_BUILD_DOCS=OFF)
expect_wheel_copies("cudagap's configure" "${last_output}")

# 2. The installed package, a consumer of it, and what that consumer loads.
run("install" "${CMAKE_COMMAND}" --install "${INSTALL_FROM}" --prefix "${INSTALL_PREFIX}")
run("configure the consumer" ${environment} "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${BINARY_DIR}/consumer"
    -G "${GENERATOR}" ${fake_args} "-DCMAKE_PREFIX_PATH=${INSTALL_PREFIX}")
expect_wheel_copies("find_package(cudagap)" "${last_output}")
run("build the consumer" "${CMAKE_COMMAND}" --build "${BINARY_DIR}/consumer")
set(consumer "${BINARY_DIR}/consumer/consumer")
run("run the consumer" "${CMAKE_COMMAND}" -E env --unset=LD_LIBRARY_PATH "${consumer}")
if(NOT last_output MATCHES "cudagap consumer ok" OR NOT last_output MATCHES "\ncuBLAS ${major}\\.")
  message(FATAL_ERROR "the consumer did not finish with cuBLAS ${major}:\n${last_output}")
endif()
run("ldd" "${CMAKE_COMMAND}" -E env --unset=LD_LIBRARY_PATH "${LDD}" "${consumer}")
set(loaded "${last_output}")
# cuRAND only when the consumer needs it (a linker with --as-needed drops what it does not call).
set(expected "libcublas.so.${major}" "libcublasLt.so.${major}")
if(loaded MATCHES "libcurand\\.so")
  list(APPEND expected "libcurand.so.10")
endif()
foreach(file IN LISTS expected)
  string(FIND "${loaded}" "${file} => ${wheel_lib}/${file} " at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the consumer does not load ${file} from the wheel (${wheel_lib}):\n${loaded}")
  endif()
endforeach()
message(STATUS "cuBLAS, cuBLASLt and cuRAND from the wheels in ${site}: configured, built, and "
               "loaded (${expected})")
