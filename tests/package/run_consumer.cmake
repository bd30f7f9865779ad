# Configures, builds and runs a consumer project; fails unless it prints "cudagap consumer ok".
# -D SOURCE_DIR=... -D BINARY_DIR=... -D GENERATOR=...
# -D CONFIGURE_ARGS=<arguments joined by '|'>
# Optional: -D INSTALL_FROM=<cudagap build dir> -D INSTALL_PREFIX=<dir> -D RELOCATED_PREFIX=<dir>
# installs cudagap first, then moves the installed tree elsewhere to prove it relocatable.
# Optional: -D CHECK_SUBPROJECT_INSTALL=ON (for a consumer that adds cudagap as a subdirectory):
# installing the consumer installs nothing of cudagap, until it configures with CUDAGAP_INSTALL=ON,
# which then installs cudagap's package, headers and libraries.
include("${CMAKE_CURRENT_LIST_DIR}/run_step.cmake")

string(REPLACE "|" ";" CONFIGURE_ARGS "${CONFIGURE_ARGS}")
file(REMOVE_RECURSE "${BINARY_DIR}")
if(INSTALL_FROM)
  file(REMOVE_RECURSE "${INSTALL_PREFIX}" "${RELOCATED_PREFIX}")
  run("install" "${CMAKE_COMMAND}" --install "${INSTALL_FROM}" --prefix "${INSTALL_PREFIX}")
  file(RENAME "${INSTALL_PREFIX}" "${RELOCATED_PREFIX}")
  # The consumer must find this package, not another one on the machine.
  file(GLOB_RECURSE config "${RELOCATED_PREFIX}/cudagapConfig.cmake")
  if(NOT config)
    message(FATAL_ERROR "the install into ${INSTALL_PREFIX} has no cudagapConfig.cmake")
  endif()
  list(GET config 0 config)
  cmake_path(GET config PARENT_PATH config_dir)
  list(APPEND CONFIGURE_ARGS "-DCMAKE_PREFIX_PATH=${RELOCATED_PREFIX}" "-DEXPECTED_CUDAGAP_DIR=${config_dir}")
endif()
run("configure" "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${BINARY_DIR}" -G "${GENERATOR}" ${CONFIGURE_ARGS})
run("build" "${CMAKE_COMMAND}" --build "${BINARY_DIR}")
run("run" "${BINARY_DIR}/consumer")
message(STATUS "${last_output}")
if(NOT last_output MATCHES "cudagap consumer ok")
  message(FATAL_ERROR "the consumer ran but did not finish:\n${last_output}")
endif()


# Whether <path> (relative) is <tail> or ends with /<tail>.
function(ends_with path tail out)
  string(LENGTH "${path}" path_length)
  string(LENGTH "/${tail}" tail_length)
  set(${out} FALSE PARENT_SCOPE)
  if(path STREQUAL tail)
    set(${out} TRUE PARENT_SCOPE)
  elseif(path_length GREATER tail_length)
    math(EXPR start "${path_length} - ${tail_length}")
    string(SUBSTRING "${path}" ${start} -1 end)
    if(end STREQUAL "/${tail}")
      set(${out} TRUE PARENT_SCOPE)
    endif()
  endif()
endfunction()

if(CHECK_SUBPROJECT_INSTALL)
  set(prefix "${BINARY_DIR}/install-by-default")
  run("install" "${CMAKE_COMMAND}" --install "${BINARY_DIR}" --prefix "${prefix}")
  file(GLOB_RECURSE found RELATIVE "${prefix}" "${prefix}/*")
  if(found)
    message(FATAL_ERROR "cudagap as a subproject installed files without CUDAGAP_INSTALL=ON: ${found}")
  endif()

  run("configure with CUDAGAP_INSTALL=ON"
      "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${BINARY_DIR}" -DCUDAGAP_INSTALL=ON)
  run("build" "${CMAKE_COMMAND}" --build "${BINARY_DIR}")
  set(prefix "${BINARY_DIR}/install-when-asked")
  run("install with CUDAGAP_INSTALL=ON" "${CMAKE_COMMAND}" --install "${BINARY_DIR}" --prefix "${prefix}")
  file(GLOB_RECURSE found RELATIVE "${prefix}" "${prefix}/*")
  foreach(expected IN ITEMS cmake/cudagap/cudagapConfig.cmake cmake/cudagap/cudagapConfigVersion.cmake
                            cmake/cudagap/cudagap-core-targets.cmake cmake/cudagap/FindCUDNN.cmake
                            libcudagap_core.a include/gpu/gpu.hpp include/gpu/host_blas.hpp)
    set(present FALSE)
    foreach(entry IN LISTS found)
      ends_with("${entry}" "${expected}" present)
      if(present)
        break()
      endif()
    endforeach()
    if(NOT present)
      message(FATAL_ERROR "cudagap as a subproject with CUDAGAP_INSTALL=ON did not install "
                          "${expected}; it installed: ${found}")
    endif()
  endforeach()
  message(STATUS "cudagap as a subproject installs nothing by default, and its package when asked")
endif()
