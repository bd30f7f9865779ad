# cudagap_add_test_suite(<name> SOURCES <files...> LIBRARIES <targets...>)
#
# Builds one Catch2 executable, cudagap_<name>_tests, and registers its test cases with ctest
# twice: those without the [gpu] tag get the label `host`; those with it get the label `gpu`,
# run with --require-gpu, and are reported as Skipped (exit code 77, with the reason) on a
# machine without a usable GPU. Every test name starts with "<name>/". (One label per
# discovery: catch_discover_tests would split a list of labels into separate properties.)
include(Catch)

function(cudagap_add_test_suite name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;LIBRARIES")
  set(target cudagap_${name}_tests)
  add_executable(${target} ${arg_SOURCES})
  target_link_libraries(${target} PRIVATE cudagap_test_main cudagap_test_support ${arg_LIBRARIES})
  cudagap_set_warnings(${target})
  # --warn NoTests: a ctest entry that matches no test case fails instead of passing empty
  # (catch_discover_tests splits a test name at a ';', leaving halves that match nothing).
  catch_discover_tests(${target}
    TEST_SPEC "~[gpu]"
    TEST_PREFIX "${name}/"
    EXTRA_ARGS --warn NoTests
    PROPERTIES LABELS host)
  catch_discover_tests(${target}
    TEST_SPEC "[gpu]"
    TEST_PREFIX "${name}/"
    EXTRA_ARGS --require-gpu --warn NoTests
    PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
endfunction()
