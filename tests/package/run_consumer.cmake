# Configures, builds and runs a consumer project; fails unless it prints "cudagap consumer ok".
# -D SOURCE_DIR=... -D BINARY_DIR=... -D GENERATOR=...
# -D CONFIGURE_ARGS=<arguments joined by '|'>
# Optional: -D INSTALL_FROM=<cudagap build dir> -D INSTALL_PREFIX=<dir> -D RELOCATED_PREFIX=<dir>
# installs cudagap first, then moves the installed tree elsewhere to prove it relocatable.
function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${step} failed (${result}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

string(REPLACE "|" ";" CONFIGURE_ARGS "${CONFIGURE_ARGS}")
file(REMOVE_RECURSE "${BINARY_DIR}")
if(INSTALL_FROM)
  file(REMOVE_RECURSE "${INSTALL_PREFIX}" "${RELOCATED_PREFIX}")
  run("install" "${CMAKE_COMMAND}" --install "${INSTALL_FROM}" --prefix "${INSTALL_PREFIX}")
  file(RENAME "${INSTALL_PREFIX}" "${RELOCATED_PREFIX}")
  list(APPEND CONFIGURE_ARGS "-DCMAKE_PREFIX_PATH=${RELOCATED_PREFIX}")
endif()
run("configure" "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${BINARY_DIR}" -G "${GENERATOR}" ${CONFIGURE_ARGS})
run("build" "${CMAKE_COMMAND}" --build "${BINARY_DIR}")
run("run" "${BINARY_DIR}/consumer")
message(STATUS "${last_output}")
if(NOT last_output MATCHES "cudagap consumer ok")
  message(FATAL_ERROR "the consumer ran but did not finish:\n${last_output}")
endif()
