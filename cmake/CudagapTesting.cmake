# cudagap_add_test_suite(<name> SOURCES <files...> LIBRARIES <targets...>)
#
# Builds one Catch2 executable, cudagap_<name>_tests (part of the target cudagap_test_suites),
# and registers its test cases with ctest: those without the [gpu] tag get the label `host`;
# those with it get the label `gpu`, run with --require-gpu, and are reported as Skipped (exit
# code 77, with the reason) on a machine without a usable GPU. A [gpu] test that also carries
# [serial] reads device-wide state that other processes change (free device memory): ctest runs
# it alone (RUN_SERIAL), never beside the other test processes of a parallel run. Cases tagged
# [multi-gpu] are left to the suite's own CMakeLists.txt (tests/nccl registers them with
# --require-gpus 2). Every test
# name starts with "<name>/". (One label per discovery: catch_discover_tests would split a list
# of labels into separate properties.)
include(Catch)

function(cudagap_add_test_suite name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;LIBRARIES")
  set(target cudagap_${name}_tests)
  add_executable(${target} ${arg_SOURCES})
  target_link_libraries(${target} PRIVATE cudagap_test_main cudagap_test_support ${arg_LIBRARIES})
  cudagap_compile_as_suite(${target})
  cudagap_speed_up_suite_compile(${target})
  add_dependencies(cudagap_test_suites ${target})
  # The suites of this build, by name: the Catch2 v3 check builds each of them too.
  set_property(GLOBAL APPEND PROPERTY CUDAGAP_TEST_SUITES ${name})
  # Catch2 v3's catch_discover_tests adds SKIP_RETURN_CODE 4 (its SKIP() macro's exit code),
  # which would replace the 77 of the [gpu] entries: SKIP_IS_FAILURE keeps it out (no test here
  # uses SKIP(); a skip that is not ours should fail). v2 has neither.
  set(v3_only "")
  if(CUDAGAP_CATCH2_MAJOR EQUAL 3)
    set(v3_only SKIP_IS_FAILURE)
  endif()
  # --warn NoTests: a ctest entry that matches no test case fails instead of passing empty
  # (catch_discover_tests splits a test name at a ';', leaving halves that match nothing); under
  # Catch2 v3 that is the default, and the runner (tests/support/main.cpp) takes the v2 option.
  catch_discover_tests(${target}
    TEST_SPEC "~[gpu]~[multi-gpu]"
    TEST_PREFIX "${name}/"
    EXTRA_ARGS --warn NoTests
    ${v3_only}
    PROPERTIES LABELS host)
  catch_discover_tests(${target}
    TEST_SPEC "[gpu]~[serial]"
    TEST_PREFIX "${name}/"
    EXTRA_ARGS --require-gpu --warn NoTests
    ${v3_only}
    PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
  catch_discover_tests(${target}
    TEST_SPEC "[gpu][serial]"
    TEST_PREFIX "${name}/"
    EXTRA_ARGS --require-gpu --warn NoTests
    ${v3_only}
    PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
endfunction()

# cudagap_compile_as_suite(<target>)
#
# A suite's compile options: cudagap's warnings, and in a Release build (-O3) the C++ at -O1. The
# suites check behaviour, not speed, and -O1 takes markedly less CPU time for Catch2's
# macro-heavy files (the quick start's cold test run on 2 cores is to stay under 15 minutes). A
# build that asks for less (the Catch2 v3 check's -O0) keeps its own flags; the libraries the
# suites test stay as configured.
function(cudagap_compile_as_suite target)
  cudagap_set_warnings(${target})
  if(CMAKE_CXX_FLAGS_RELEASE MATCHES "-O[23]")
    target_compile_options(${target} PRIVATE $<$<AND:$<CONFIG:Release>,$<COMPILE_LANGUAGE:CXX>>:-O1>)
  endif()
endfunction()

# cudagap_speed_up_suite_compile(<target>)
#
# What makes a suite's files compile in less CPU time, with nothing they check changed. Every
# suite shares one precompiled header, made once by the object library
# cudagap_test_precompiled_header (compiled as a suite is, with no definitions of its own: GCC
# refuses a precompiled header made with a macro that the file using it lacks). It holds Catch2,
# the CUDA runtime's declarations and the standard headers that nearly every test file includes,
# most of each file's parse time; no cudagap header, which would hide a test file's missing
# include. CUDAGAP_TEST_PRECOMPILED_HEADERS=OFF turns it off (ccache caches no file that uses one
# unless its sloppiness allows pch_defines and time_macros). With CUDAGAP_TEST_SUITES_UNITY=ON (the
# default) each suite is also a unity build, 8 files to a translation unit: all suites built in
# 102 s instead of 166 s on 2 cores, where the quick start's tests must finish in 15 minutes.
# Both hide a test file's missing include; a build with both options OFF shows it.
function(cudagap_speed_up_suite_compile target)
  if(CUDAGAP_TEST_PRECOMPILED_HEADERS)
    if(NOT TARGET cudagap_test_precompiled_header)
      set(source "${PROJECT_BINARY_DIR}/tests/precompiled_header.cpp")
      file(CONFIGURE OUTPUT "${source}" CONTENT
        "// Generated: the translation unit that makes the suites' precompiled header.\n")
      add_library(cudagap_test_precompiled_header OBJECT "${source}")
      target_link_libraries(cudagap_test_precompiled_header PRIVATE cudagap_test_support)
      cudagap_compile_as_suite(cudagap_test_precompiled_header)
      target_precompile_headers(cudagap_test_precompiled_header PRIVATE
        "$<$<COMPILE_LANGUAGE:CXX>:${PROJECT_SOURCE_DIR}/tests/support/catch.hpp>"
        "$<$<COMPILE_LANGUAGE:CXX>:<cuda_runtime_api.h$<ANGLE-R>>"
        "$<$<COMPILE_LANGUAGE:CXX>:<cstddef$<ANGLE-R>>"
        "$<$<COMPILE_LANGUAGE:CXX>:<cstdint$<ANGLE-R>>"
        "$<$<COMPILE_LANGUAGE:CXX>:<filesystem$<ANGLE-R>>"
        "$<$<COMPILE_LANGUAGE:CXX>:<stdexcept$<ANGLE-R>>"
        "$<$<COMPILE_LANGUAGE:CXX>:<string$<ANGLE-R>>"
        "$<$<COMPILE_LANGUAGE:CXX>:<vector$<ANGLE-R>>")
    endif()
    target_precompile_headers(${target} REUSE_FROM cudagap_test_precompiled_header)
  endif()
  if(CUDAGAP_TEST_SUITES_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON)
  endif()
endfunction()

# cudagap_use_nvtx_recorder(<target>)
#
# Gives a suite the NVTX recorder (tests/core/nvtx_recorder.cpp, an NVTX injection library, as
# Nsight Systems provides one): its path as CUDAGAP_NVTX_RECORDER, which
# tests/support/nvtx_recording.hpp names in NVTX_INJECTION64_PATH while the suite loads, and the
# recorder built first. Such a suite holds only the tests of NVTX ranges, so that no other
# test's NVTX call comes first.
function(cudagap_use_nvtx_recorder target)
  target_compile_definitions(${target} PRIVATE
    "CUDAGAP_NVTX_RECORDER=\"$<TARGET_FILE:cudagap_nvtx_recorder>\"")
  target_link_libraries(${target} PRIVATE ${CMAKE_DL_LIBS})
  add_dependencies(${target} cudagap_nvtx_recorder)
endfunction()

# cudagap_add_status_list(<suite> HEADER <file> PATTERN <regex> OUTPUT <name.inc> [EXCLUDE <names>])
#
# Writes <name.inc> into the suite's binary folder with one `{ENUMERATOR, "ENUMERATOR"},` line
# per enumerator of HEADER whose `NAME = value` text matches PATTERN (a regex for the name), and
# puts that folder on the suite's include path. Tests of status names then cover exactly the
# statuses of the headers in use, however a new CUDA, cuBLAS or cuDNN release extends them.
function(cudagap_add_status_list suite)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "HEADER;PATTERN;OUTPUT" "EXCLUDE")
  file(READ "${arg_HEADER}" text)
  string(REGEX MATCHALL "${arg_PATTERN} +=[ ]+[0-9]+" enumerators "${text}")
  if(NOT enumerators)
    message(FATAL_ERROR "no enumerators matching '${arg_PATTERN}' in ${arg_HEADER}")
  endif()
  set(cases "")
  foreach(enumerator IN LISTS enumerators)
    string(REGEX REPLACE " +=.*" "" name "${enumerator}")
    if(NOT name IN_LIST arg_EXCLUDE)
      string(APPEND cases "    {${name}, \"${name}\"},\n")
    endif()
  endforeach()
  file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/${arg_OUTPUT}" CONTENT "${cases}")
  target_include_directories(cudagap_${suite}_tests PRIVATE "${CMAKE_CURRENT_BINARY_DIR}")
endfunction()
