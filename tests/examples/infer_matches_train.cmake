# cudagap-infer serves what cudagap-train trained: train a short run that saves its checkpoint,
# serve that checkpoint, and check that the test accuracy (eager and graph) equals the training
# run's final one, and that --outputs wrote the inputs and logits it says.
#   -D PROBE=<cudagap_gpu_probe> -D TRAIN=<cudagap-train> -D INFER=<cudagap-infer> -D WORK=<folder>
#   -D PRECISION=fp16|bf16 -D TRAIN_ARGS=<'|'-joined> -D INFER_ARGS=<'|'-joined>
# Both run under the testing profile (deterministic algorithms, no timing): the two processes
# still plan other batch sizes (training's batch, inference's buckets), whose algorithms may
# round a last bit differently, and a near tie between two classes may then flip. So "equal" is
# at most one image of difference; eager and graph, the same plans in one process, agree exactly.
# Without a GPU the script prints that it is skipped (the test's SKIP_REGULAR_EXPRESSION).
cmake_minimum_required(VERSION 3.24)

execute_process(COMMAND "${PROBE}" OUTPUT_VARIABLE machine OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT machine STREQUAL "gpu")
  message("cudagap-infer-vs-train: skipped: no usable GPU (the probe says '${machine}')")
  return()
endif()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
string(REPLACE "|" ";" train_args "${TRAIN_ARGS}")
string(REPLACE "|" ";" infer_args "${INFER_ARGS}")

function(run_program what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${what}: ${ARGN}\n${out}${err}")
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${what} exited ${result}")
  endif()
endfunction()

run_program(cudagap-train "${TRAIN}" ${train_args} --precision ${PRECISION} --profile testing --quiet
  --save "${WORK}/model.safetensors" --json "${WORK}/train.json")
run_program(cudagap-infer "${INFER}" ${infer_args} --checkpoint "${WORK}/model.safetensors" --precision ${PRECISION}
  --profile testing --batch-sizes 1 --requests 10 --warmup 1 --quiet --json "${WORK}/infer.json"
  --outputs "${WORK}/outputs.safetensors")

file(READ "${WORK}/train.json" train)
file(READ "${WORK}/infer.json" infer)
string(JSON trained GET "${train}" final_test_accuracy)
string(JSON eager GET "${infer}" test_accuracy eager)
string(JSON graph GET "${infer}" test_accuracy graph)
string(JSON images GET "${infer}" test_images)
string(JSON train_images GET "${train}" test_images)
if(NOT images EQUAL train_images)
  message(FATAL_ERROR "cudagap-infer evaluated ${images} test images, cudagap-train ${train_images}")
endif()
if(NOT eager STREQUAL graph)
  message(FATAL_ERROR "eager ${eager} and graph ${graph} accuracies differ: the same plans must agree exactly")
endif()

# An accuracy in millionths (CMake has integers only): "0.8125" -> 812500.
function(millionths text out)
  if(text MATCHES "^1(\\.0*)?$")
    set(${out} 1000000 PARENT_SCOPE)
  elseif(text MATCHES "^0(\\.([0-9]*))?$")
    string(SUBSTRING "${CMAKE_MATCH_2}000000" 0 6 digits)
    string(REGEX REPLACE "^0+([0-9])" "\\1" digits "${digits}")
    set(${out} ${digits} PARENT_SCOPE)
  else()
    message(FATAL_ERROR "not an accuracy: '${text}'")
  endif()
endfunction()
millionths("${trained}" a)
millionths("${eager}" b)
math(EXPR difference "${a} - ${b}")
math(EXPR one_image "1000000 / ${images} + 1")
if(difference GREATER one_image OR difference LESS -${one_image})
  message(FATAL_ERROR "cudagap-train's final accuracy ${trained} and cudagap-infer's ${eager} differ by more "
                      "than one of ${images} images")
endif()

# --outputs: a safetensors file, 8 bytes of header length (little-endian), then the JSON header.
file(READ "${WORK}/outputs.safetensors" length_hex LIMIT 8 HEX)
string(REGEX MATCHALL ".." bytes "${length_hex}")
list(REVERSE bytes)
list(JOIN bytes "" length_hex)
math(EXPR header_length "0x${length_hex}")
file(READ "${WORK}/outputs.safetensors" header OFFSET 8 LIMIT ${header_length})
set(k 64)
if(images LESS 64)
  set(k ${images})
endif()
foreach(check IN ITEMS "input;0;${k}" "input;1;1" "input;3;28" "output;0;${k}" "output;1;10")
  list(GET check 0 tensor)
  list(GET check 1 dimension)
  list(GET check 2 expected)
  string(JSON found GET "${header}" ${tensor} shape ${dimension})
  if(NOT found EQUAL expected)
    message(FATAL_ERROR "outputs.safetensors: ${tensor} dimension ${dimension} is ${found}, not ${expected}: ${header}")
  endif()
endforeach()
string(JSON mode GET "${header}" __metadata__ mode)
if(NOT mode STREQUAL "graph")
  message(FATAL_ERROR "outputs.safetensors holds the ${mode} logits; graph ran, so they should be graph's")
endif()
message(STATUS "ok: accuracy ${trained} (cudagap-train), ${eager} eager and ${graph} graph (cudagap-infer), "
               "${images} test images, ${PRECISION}")
