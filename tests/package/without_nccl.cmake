# cudagap's source tree configured with NCCL hidden (CMAKE_DISABLE_FIND_PACKAGE_NCCL, as a
# machine without it): the configure succeeds and says how to enable the wrapper, the build has no
# cudagap_nccl but the other libraries and the tools, and the tools' diagnosis (what
# cudagap-doctor runs) compiles without the wrapper. Only that one object is built: the rest of the
# tree is what every other test builds already.
# -D SOURCE_DIR=<cudagap> -D BINARY_DIR=... -D GENERATOR=... -D CONFIGURE_ARGS=<joined by '|'>
include("${CMAKE_CURRENT_LIST_DIR}/run_step.cmake")

string(REPLACE "|" ";" CONFIGURE_ARGS "${CONFIGURE_ARGS}")
file(REMOVE_RECURSE "${BINARY_DIR}")
run("configure" "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${BINARY_DIR}" -G "${GENERATOR}" ${CONFIGURE_ARGS}
    -DCMAKE_DISABLE_FIND_PACKAGE_NCCL=TRUE -DCUDAGAP_BUILD_TESTS=OFF -DCUDAGAP_BUILD_EXAMPLES=OFF
    -DCUDAGAP_BUILD_BENCH=OFF -DCUDAGAP_BUILD_DOCS=OFF)
string(FIND "${last_output}" "cudagap: NCCL not found, so the nccl component (cudagap::nccl) is disabled. To enable it, set NCCL_ROOT" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the configure does not say how to enable the nccl wrapper:\n${last_output}")
endif()

# The targets of the build system: no nccl, the rest there.
run("help" "${CMAKE_COMMAND}" --build "${BINARY_DIR}" --target help)
foreach(target IN ITEMS cudagap_core cudagap_tools)
  if(NOT last_output MATCHES "(^|[\n .])${target}[:\n ]")
    message(FATAL_ERROR "the build without NCCL has no ${target}:\n${last_output}")
  endif()
endforeach()
if(last_output MATCHES "cudagap_nccl")
  message(FATAL_ERROR "the build without NCCL still has cudagap_nccl:\n${last_output}")
endif()

# The diagnosis, compiled as the doctor's library compiles it without the wrapper.
if(GENERATOR STREQUAL "Ninja")
  run("compile the diagnosis" "${CMAKE_COMMAND}" --build "${BINARY_DIR}"
      --target src/tools/CMakeFiles/cudagap_tools.dir/diagnose.cpp.o)
  file(READ "${BINARY_DIR}/build.ninja" ninja)
  if(NOT ninja MATCHES "CUDAGAP_TOOLS_WITH_NCCL=0")
    message(FATAL_ERROR "the tools are not compiled with CUDAGAP_TOOLS_WITH_NCCL=0 without NCCL")
  endif()
else()
  message(STATUS "generator ${GENERATOR}: the diagnosis is not compiled alone (Ninja names objects)")
endif()
message(STATUS "without NCCL: configured, no cudagap_nccl, the diagnosis compiles")
