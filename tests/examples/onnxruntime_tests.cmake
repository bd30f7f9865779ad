# The ONNX Runtime proofs of cudagap-infer's export (issue 13), run by test_onnx_export.py:
#  - on every machine (label host): the exported model runs in ONNX Runtime on the CPU and matches
#    a numpy forward pass of the same checkpoint within FP32 tolerance, at batch 1 and 7; so does
#    the model of bench/infer/onnx_twin.py, the Python twin of the exporter; and where
#    cudagap-infer exports, the twin's model is the exporter's field by field (and their logits
#    in ONNX Runtime equal bit for bit);
#  - on a GPU (label gpu; Skipped without one): cudagap-infer's logits match ONNX Runtime's on the
#    same inputs within the precision's tolerance (FP16 and BF16 under the production profile,
#    FP32 under testing, which has no TF32), with the same predictions. The model is cudagap's
#    export; where cudagap-infer was built without the ONNX C++ library (libonnx-dev, which a lent
#    GPU host lacks) it is the twin's, and the tests' names and output say so.
# ONNX Runtime, numpy and onnx come from a fixture: the configured Python when it imports the three
# (a GPU host's PyTorch environment), else a virtual environment in the build tree that pip fills
# once from PyPI (its wheels are kept beside it); without python3-venv or a network the proofs
# are Skipped with the reason. Registered where cudagap-infer and the tiny IDX set of
# cudagap-train's tests are. Included by tests/examples/CMakeLists.txt.
if(NOT TARGET cudagap-infer OR NOT TARGET cudagap_make_tiny_idx)
  return()
endif()
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  return()
endif()
get_target_property(_infer_definitions cudagap-infer COMPILE_DEFINITIONS)
if("CUDAGAP_INFER_HAVE_ONNX=1" IN_LIST _infer_definitions)
  set(_ort_exporter cudagap)
  set(_ort_model "")
else()
  set(_ort_exporter twin) # onnx_export.cmake's tests say how to get the library
  set(_ort_model " on the Python twin's ONNX model")
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
# test_onnx_export.py <proof> <args...> as the test <name> with <label>, needing the fixtures.
function(_cudagap_ort_test name label)
  add_test(NAME "${name}"
    COMMAND "${Python3_EXECUTABLE}" "${_ort_proof}" ${ARGN} --env "${_ort_record}" --data "${_tiny}/good")
  set_tests_properties("${name}" PROPERTIES FIXTURES_REQUIRED "cudagap_onnxruntime;cudagap_train_idx"
    LABELS ${label} TIMEOUT 300 SKIP_RETURN_CODE 77)
endfunction()

set(_infer "$<TARGET_FILE:cudagap-infer>")
set(_work "${CMAKE_CURRENT_BINARY_DIR}/onnx-proof")
if(_ort_exporter STREQUAL "cudagap")
  _cudagap_ort_test("example: cudagap-infer's ONNX export runs in ONNX Runtime on the CPU and matches a reference forward pass (batch 1 and 7)"
    host cpu --infer "${_infer}" --work "${_work}-cpu")
  _cudagap_ort_test("example: the Python twin of cudagap-infer's ONNX exporter writes the same model, and ONNX Runtime's logits of both are equal"
    host twin --infer "${_infer}" --work "${_work}-twin")
endif()
_cudagap_ort_test("example: the Python twin's ONNX export runs in ONNX Runtime on the CPU and matches a reference forward pass (batch 1 and 7)"
  host cpu --exporter twin --infer "${_infer}" --work "${_work}-twin-cpu")
# The GPU proof's way through the twin, where no GPU is needed: a stand-in of cudagap-infer without
# the exporter whose logits are numpy's forward pass (infer_stand_in.py).
_cudagap_ort_test("example: the GPU proof on the Python twin's model, with a stand-in of cudagap-infer whose logits are numpy's"
  host gpu --exporter twin --infer "${CMAKE_CURRENT_SOURCE_DIR}/infer_stand_in.py" --work "${_work}-stand-in"
  --precision fp32 --profile testing)

foreach(_case IN ITEMS "fp16|production" "bf16|production" "fp32|testing")
  string(REPLACE "|" ";" _case "${_case}")
  list(GET _case 0 _precision)
  list(GET _case 1 _profile)
  _cudagap_ort_test("example: cudagap-infer's GPU logits match ONNX Runtime's${_ort_model} (${_precision}, profile ${_profile})"
    gpu gpu --exporter ${_ort_exporter} --infer "${_infer}" --work "${_work}-gpu-${_precision}"
    --precision ${_precision} --profile ${_profile})
endforeach()
