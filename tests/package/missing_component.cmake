# find_package(cudagap COMPONENTS dnn) where cuDNN is missing: a REQUIRED request fails with the
# component's reason (set CUDNN_ROOT) instead of CMake's bare "set cudagap_FOUND to FALSE", and
# an OPTIONAL one succeeds without cudagap::dnn.
# -D SOURCE_DIR=... -D BINARY_DIR=... -D GENERATOR=... -D CONFIGURE_ARGS=<joined by '|'>
# -D INSTALL_FROM=<cudagap build dir> -D INSTALL_PREFIX=<dir>
string(REPLACE "|" ";" CONFIGURE_ARGS "${CONFIGURE_ARGS}")
file(REMOVE_RECURSE "${BINARY_DIR}" "${INSTALL_PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${INSTALL_FROM}" --prefix "${INSTALL_PREFIX}"
                RESULT_VARIABLE result OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "install failed (${result}): ${err}")
endif()
set(common -S "${SOURCE_DIR}" -G "${GENERATOR}" ${CONFIGURE_ARGS}
    "-DCMAKE_PREFIX_PATH=${INSTALL_PREFIX}" -DCMAKE_DISABLE_FIND_PACKAGE_CUDNN=TRUE)

execute_process(COMMAND "${CMAKE_COMMAND}" ${common} -B "${BINARY_DIR}/required" -DREQUIRE=ON
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(result EQUAL 0)
  message(FATAL_ERROR "find_package(cudagap REQUIRED COMPONENTS dnn) succeeded without cuDNN:\n${out}")
endif()
foreach(expected "required components are missing"
                 "dnn: cuDNN was not found: set CUDNN_ROOT to the folder holding include/cudnn.h and lib/"
                 "no_such_component: no such component")
  string(FIND "${err}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the failure does not say '${expected}':\n${err}")
  endif()
endforeach()

execute_process(COMMAND "${CMAKE_COMMAND}" ${common} -B "${BINARY_DIR}/optional" -DREQUIRE=OFF
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "find_package(cudagap OPTIONAL_COMPONENTS dnn) failed without cuDNN:\n${out}\n${err}")
endif()
message(STATUS "a missing cuDNN is reported, and optional without it:\n${err}")
