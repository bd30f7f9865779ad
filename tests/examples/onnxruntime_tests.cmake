# The ONNX Runtime proofs of cudagap-infer's export (issue 13), run by test_onnx_export.py:
#  - on every machine (label host): the exported model runs in ONNX Runtime on the CPU and matches
#    a numpy forward pass of the same checkpoint within FP32 tolerance, at batch 1 and 7;
#  - on a GPU (label gpu; Skipped without one): cudagap-infer's logits match ONNX Runtime's on the
#    same inputs within the precision's tolerance (FP16 and BF16 under the production profile,
#    FP32 under testing, which has no TF32), with the same predictions.
# ONNX Runtime comes from a fixture: the configured Python when it imports onnxruntime and numpy
# (a GPU host's PyTorch environment), else a virtual environment in the build tree that pip fills
# once from PyPI (its wheels are kept beside it); without python3-venv or a network the proofs
# are Skipped with the reason. Registered only when cudagap-infer exports ONNX (libonnx-dev) and
# the tiny IDX set of cudagap-train's tests is there. Included by tests/examples/CMakeLists.txt.
if(NOT TARGET cudagap-infer OR NOT TARGET cudagap_make_tiny_idx)
  return()
endif()
get_target_property(_infer_definitions cudagap-infer COMPILE_DEFINITIONS)
if(NOT "CUDAGAP_INFER_HAVE_ONNX=1" IN_LIST _infer_definitions)
  return() # built without ONNX: the export itself says how to get it (onnx_export.cmake's tests)
endif()
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  return()
endif()

set(_ort_record "${CMAKE_CURRENT_BINARY_DIR}/onnxruntime-python.json")
set(_ort_setup "example: ONNX Runtime for the export proofs (the configured Python, or a venv in the build tree)")
add_test(NAME "${_ort_setup}"
  COMMAND "${Python3_EXECUTABLE}" "${CMAKE_CURRENT_SOURCE_DIR}/onnxruntime_env.py"
          --venv "${PROJECT_BINARY_DIR}/onnxruntime-venv" --wheels "${PROJECT_BINARY_DIR}/onnxruntime-wheels"
          --record "${_ort_record}" --python "${Python3_EXECUTABLE}")
set_tests_properties("${_ort_setup}" PROPERTIES FIXTURES_SETUP cudagap_onnxruntime LABELS host
  TIMEOUT 600 SKIP_RETURN_CODE 77)

set(_ort_proof "${CMAKE_CURRENT_SOURCE_DIR}/test_onnx_export.py")
set(_ort_name "example: cudagap-infer's ONNX export runs in ONNX Runtime on the CPU and matches a reference forward pass (batch 1 and 7)")
add_test(NAME "${_ort_name}"
  COMMAND "${Python3_EXECUTABLE}" "${_ort_proof}" cpu --infer "$<TARGET_FILE:cudagap-infer>" --env "${_ort_record}"
          --work "${CMAKE_CURRENT_BINARY_DIR}/onnx-cpu-proof" --data "${_tiny}/good")
set_tests_properties("${_ort_name}" PROPERTIES FIXTURES_REQUIRED "cudagap_onnxruntime;cudagap_train_idx"
  LABELS host TIMEOUT 300 SKIP_RETURN_CODE 77)

foreach(_case IN ITEMS "fp16|production" "bf16|production" "fp32|testing")
  string(REPLACE "|" ";" _case "${_case}")
  list(GET _case 0 _precision)
  list(GET _case 1 _profile)
  set(_ort_name "example: cudagap-infer's GPU logits match ONNX Runtime's (${_precision}, profile ${_profile})")
  add_test(NAME "${_ort_name}"
    COMMAND "${Python3_EXECUTABLE}" "${_ort_proof}" gpu --infer "$<TARGET_FILE:cudagap-infer>" --env "${_ort_record}"
            --work "${CMAKE_CURRENT_BINARY_DIR}/onnx-gpu-proof-${_precision}" --data "${_tiny}/good"
            --precision ${_precision} --profile ${_profile})
  set_tests_properties("${_ort_name}" PROPERTIES FIXTURES_REQUIRED "cudagap_onnxruntime;cudagap_train_idx"
    LABELS gpu TIMEOUT 300 SKIP_RETURN_CODE 77)
endforeach()
