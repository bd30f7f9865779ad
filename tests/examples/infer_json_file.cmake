# cudagap-infer's --json FILE: the report replaces an older one whole (written to a temporary
# file beside it, then renamed over it), also when the run fails, and then it holds the error and
# what was known; no temporary file is left behind. The failure (a checkpoint that cannot be
# opened) comes before the GPU, so it is the same on both kinds of machine; the second run is
# the no-GPU report here and a short real run on a GPU.
#   -D INFER=<cudagap-infer> -D WORK=<folder> -D DATA=<the tiny IDX set's good folder>
cmake_minimum_required(VERSION 3.24)

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(report "${WORK}/report.json")

# Runs cudagap-infer with ARGN and --json ${report}, expects exit status `code`, and leaves the
# report's text in `text` in the caller's scope.
function(run_infer code)
  execute_process(COMMAND "${INFER}" --data "${DATA}" --quiet --json "${report}" ${ARGN}
                  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(shown "cudagap-infer ${ARGN} exited ${result}\n--- stdout:\n${out}\n--- stderr:\n${err}")
  if(NOT result STREQUAL "${code}")
    message(FATAL_ERROR "expected exit status ${code}: ${shown}")
  endif()
  file(GLOB left RELATIVE "${WORK}" "${WORK}/*")
  if(NOT left STREQUAL "report.json")
    message(FATAL_ERROR "the folder holds '${left}', not only report.json (a temporary file left?): ${shown}")
  endif()
  file(READ "${report}" content)
  string(JSON top ERROR_VARIABLE parse_error TYPE "${content}")
  if(parse_error OR NOT top STREQUAL "OBJECT")
    message(FATAL_ERROR "report.json is not one JSON object (${parse_error}): ${content}\n${shown}")
  endif()
  set(text "${content}" PARENT_SCOPE)
endfunction()

# The member `name` of the report must have type `type` (and match `pattern` when given).
function(expect_member name type)
  string(JSON found TYPE "${text}" ${name})
  if(NOT found STREQUAL "${type}")
    message(FATAL_ERROR "'${name}' is ${found}, not ${type}: ${text}")
  endif()
  if(ARGC GREATER 2)
    string(JSON value GET "${text}" ${name})
    if(NOT value MATCHES "${ARGV2}")
      message(FATAL_ERROR "'${name}' is '${value}', which does not match '${ARGV2}': ${text}")
    endif()
  endif()
endfunction()

file(WRITE "${report}" "an older report, which a failure must replace whole\n")
run_infer(1 --checkpoint "${WORK}/no-such.safetensors")
expect_member(program STRING "^cudagap-infer$")
expect_member(error STRING "cannot open[^\n]*no-such.safetensors")
expect_member(checkpoint STRING "no-such.safetensors$")
expect_member(seeded BOOLEAN "^OFF$")
expect_member(buckets ARRAY)
expect_member(results ARRAY)
expect_member(test_images NULL) # the data was not read yet
expect_member(gpu_available BOOLEAN "^OFF$")

run_infer(0 --mode eager --buckets 1,8 --batch-sizes 1 --requests 5 --warmup 1 --test-limit 4)
expect_member(error NULL)
expect_member(test_images NUMBER "^4$")
