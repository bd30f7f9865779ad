# Builds an example as a user would: installs cudagap into a fresh prefix, copies the example's
# folder out of the source tree, configures it with find_package against that prefix, builds
# it, and runs the program through run_example.cmake.
#   -D INSTALL_FROM=<cudagap build dir> -D PREFIX=<install prefix> -D EXAMPLE=<example folder>
#   -D WORK=<scratch folder> -D GENERATOR=... -D CONFIGURE_ARGS=<joined by '|'>
#   -D EXTRA_PREFIX_PATH=<the build's CMAKE_PREFIX_PATH, joined by '|'; may be empty>
#   -D PROGRAM_NAME=<executable> -D RUN_SCRIPT=<run_example.cmake> and its -D options
#   (PROBE, ARGS, EXIT_NO_GPU, EXIT_GPU, EXPECT, JSON, JSON_CHECKS, ...) passed on.
cmake_minimum_required(VERSION 3.24)

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${step} failed (${result}):\n${out}\n${err}")
  endif()
endfunction()

file(REMOVE_RECURSE "${PREFIX}" "${WORK}")
run("install" "${CMAKE_COMMAND}" --install "${INSTALL_FROM}" --prefix "${PREFIX}")
get_filename_component(example_name "${EXAMPLE}" NAME)
file(COPY "${EXAMPLE}" DESTINATION "${WORK}")
set(source "${WORK}/${example_name}")
if(EXISTS "${source}/build")
  message(FATAL_ERROR "the example folder carries a build folder: ${source}/build")
endif()

string(REPLACE "|" ";" configure_args "${CONFIGURE_ARGS}")
# The installed cudagap first, then where the build found its own packages (.deps/ on a GPU host).
set(prefix_path "${PREFIX}")
if(EXTRA_PREFIX_PATH)
  string(REPLACE "|" ";" extra_prefix_path "${EXTRA_PREFIX_PATH}")
  list(APPEND prefix_path ${extra_prefix_path})
endif()
run("configure" "${CMAKE_COMMAND}" -S "${source}" -B "${WORK}/build" -G "${GENERATOR}"
    ${configure_args} "-DCMAKE_PREFIX_PATH=${prefix_path}")
run("build" "${CMAKE_COMMAND}" --build "${WORK}/build")

set(forward)
foreach(variable IN ITEMS PROBE ARGS EXIT_NO_GPU EXIT_GPU EXPECT EXPECT_NO_GPU EXPECT_GPU
                          STDERR_EXPECT JSON JSON_CHECKS JSON_NO_GPU JSON_GPU)
  if(DEFINED ${variable})
    list(APPEND forward "-D" "${variable}=${${variable}}")
  endif()
endforeach()
execute_process(COMMAND "${CMAKE_COMMAND}" "-DPROGRAM=${WORK}/build/${PROGRAM_NAME}" ${forward}
                        -P "${RUN_SCRIPT}"
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "the copied ${PROGRAM_NAME} did not behave:\n${out}\n${err}")
endif()
message(STATUS "${out}")
