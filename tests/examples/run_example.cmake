# Runs one example program as a user would and checks what it did.
#   -D PROGRAM=<path> -D PROBE=<path of cudagap_gpu_probe>
#   -D ARGS=<arguments joined by '|'>
#   -D EXIT_NO_GPU=<code> -D EXIT_GPU=<code>      the expected exit status on each kind of machine
#   -D EXPECT=<regexes joined by '|'>             must match stdout (or stderr with STDERR_EXPECT)
#   -D EXPECT_NO_GPU=... -D EXPECT_GPU=...        must match, only on that kind of machine
#   -D STDERR_EXPECT=<regexes joined by '|'>      must match stderr
#   -D STDERR_EXPECT_NO_GPU=... -D STDERR_EXPECT_GPU=...   must match stderr, only on that kind
#   -D REJECT=<regexes joined by '|'>             must not match stdout
#   -D JSON=ON                                    stdout must be one JSON object; then
#   -D JSON_CHECKS=... -D JSON_NO_GPU=... -D JSON_GPU=...   checks joined by '|', each
#        "a/b/0/c=value" (the member's value; booleans read ON/OFF), "a/b>=number" (a number at
#        least that) or "a/b:TYPE" (NULL, NUMBER, STRING, BOOLEAN, ARRAY, OBJECT)
# The regexes are CMake regexes; write '\\|' nowhere (the lists are split at '|').
cmake_minimum_required(VERSION 3.24)

execute_process(COMMAND "${PROBE}" OUTPUT_VARIABLE machine OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE probe_result)
if(NOT probe_result EQUAL 0 OR NOT machine MATCHES "^(gpu|none)$")
  message(FATAL_ERROR "the GPU probe failed (${probe_result}): ${machine}")
endif()
if(machine STREQUAL "gpu")
  set(kind GPU)
else()
  set(kind NO_GPU)
endif()

string(REPLACE "|" ";" arguments "${ARGS}")
execute_process(COMMAND "${PROGRAM}" ${arguments}
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
get_filename_component(name "${PROGRAM}" NAME)
set(shown "${name} ${arguments} (machine: ${machine}) exited ${result}\n--- stdout:\n${out}\n--- stderr:\n${err}")

set(expected_exit "${EXIT_${kind}}")
if(NOT result STREQUAL expected_exit)
  message(FATAL_ERROR "expected exit status ${expected_exit}: ${shown}")
endif()
if(out MATCHES "terminate called|what\\(\\):" OR err MATCHES "terminate called|Segmentation|Aborted")
  message(FATAL_ERROR "the program crashed or let an exception escape: ${shown}")
endif()

# Every regex of the lists named after `what` must match the variable `variable` (out or err).
function(require_matches variable what)
  foreach(list_name IN LISTS ARGN)
    string(REPLACE "|" ";" patterns "${${list_name}}")
    foreach(pattern IN LISTS patterns)
      if(NOT "${${variable}}" MATCHES "${pattern}")
        message(FATAL_ERROR "${what} does not match '${pattern}': ${shown}")
      endif()
    endforeach()
  endforeach()
endfunction()

require_matches(out stdout EXPECT EXPECT_${kind})
string(REPLACE "|" ";" patterns "${REJECT}")
foreach(pattern IN LISTS patterns)
  if(out MATCHES "${pattern}")
    message(FATAL_ERROR "stdout matches '${pattern}', which it must not: ${shown}")
  endif()
endforeach()
require_matches(err stderr STDERR_EXPECT STDERR_EXPECT_${kind})

if(JSON)
  # string(JSON) is a real JSON parser: anything but one valid document fails here.
  string(JSON top_type ERROR_VARIABLE parse_error TYPE "${out}")
  if(parse_error OR NOT top_type STREQUAL "OBJECT")
    message(FATAL_ERROR "stdout is not one JSON object (${parse_error}): ${shown}")
  endif()
  foreach(list_name IN ITEMS JSON_CHECKS JSON_${kind})
    string(REPLACE "|" ";" checks "${${list_name}}")
    foreach(check IN LISTS checks)
      if(check MATCHES "^([^=:>]+)>=(.*)$")
        set(mode at_least)
      elseif(check MATCHES "^([^=:]+)=(.*)$")
        set(mode value)
      elseif(check MATCHES "^([^=:]+):([A-Z]+)$")
        set(mode type)
      else()
        message(FATAL_ERROR "bad JSON check '${check}'")
      endif()
      set(expected "${CMAKE_MATCH_2}")
      string(REPLACE "/" ";" path "${CMAKE_MATCH_1}")
      if(mode STREQUAL "value" OR mode STREQUAL "at_least")
        string(JSON actual ERROR_VARIABLE json_error GET "${out}" ${path})
      else()
        string(JSON actual ERROR_VARIABLE json_error TYPE "${out}" ${path})
      endif()
      if(json_error)
        message(FATAL_ERROR "JSON check '${check}' failed: ${json_error}\n${shown}")
      elseif(mode STREQUAL "at_least")
        if(NOT actual GREATER_EQUAL expected)
          message(FATAL_ERROR "JSON check '${check}' failed: got '${actual}'\n${shown}")
        endif()
      elseif(NOT actual STREQUAL expected)
        message(FATAL_ERROR "JSON check '${check}' failed: got '${actual}'\n${shown}")
      endif()
    endforeach()
  endforeach()
endif()
# The whole output goes to the test log (LastTest.log), so a GPU host's run records the real report.
message(STATUS "ok: ${shown}")
