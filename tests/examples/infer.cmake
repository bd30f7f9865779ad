# cudagap-infer (examples/production_inference), included by tests/examples/CMakeLists.txt after
# cudagap-train's tests (it reuses their tiny IDX set, _tiny, and the data folder, _fashion) and
# after the ONNX exporter's (CUDAGAP_INFER_ONNX_FOUND).
#
# 1. The suite `infer` (test_infer.cpp): the machinery, host parts and [gpu] parts.
# 2. The program as a user runs it: arguments, checkpoints, data, the no-GPU path, --json.
# 3. On a GPU: its accuracy on a checkpoint cudagap-train saved equals cudagap-train's
#    (infer_matches_train.cmake; Skipped without a GPU).
cudagap_add_test_suite(infer SOURCES test_infer.cpp LIBRARIES cudagap_infer_engine)

function(_cudagap_infer_test name)
  cudagap_example_test("${name}" cudagap-infer ${ARGN})
  set_tests_properties("example: ${name}" PROPERTIES FIXTURES_REQUIRED cudagap_train_idx)
endfunction()

set(_infer_quick --requests 20 --warmup 2 --batch-sizes 1,8 --quiet)

_cudagap_infer_test("cudagap-infer --help" ARGS --help EXIT 0
  EXPECT "usage: cudagap-infer" "--buckets LIST" "--export-onnx FILE" "apt-get install dataset-fashion-mnist")
# --version also says whether --export-onnx works (bench/infer and the ONNX proofs read it).
if(CUDAGAP_INFER_ONNX_FOUND)
  set(_infer_exports "ONNX export: yes\n")
else()
  set(_infer_exports "ONNX export: no \\(built without the ONNX C\\+\\+ library\\)\n")
endif()
_cudagap_infer_test("cudagap-infer --version" ARGS --version EXIT 0
  EXPECT "cudagap-infer ${PROJECT_VERSION}\n${_infer_exports}")
_cudagap_infer_test("cudagap-infer rejects an unknown option" ARGS --bogus EXIT 2
  STDERR_EXPECT "unknown option '--bogus'" "usage: cudagap-infer")
_cudagap_infer_test("cudagap-infer rejects buckets out of order" ARGS --buckets 8,1 EXIT 2
  STDERR_EXPECT "--buckets '8,1': buckets must be strictly ascending: 1 follows 8")
_cudagap_infer_test("cudagap-infer rejects a bucket of 0" ARGS --buckets 0,8 EXIT 2
  STDERR_EXPECT "--buckets takes a whole number from 1 to 16384, got '0'")
_cudagap_infer_test("cudagap-infer rejects a batch size that is no number" ARGS --batch-sizes 1,x EXIT 2
  STDERR_EXPECT "--batch-sizes takes a whole number from 1 to 1048576, got 'x'")
_cudagap_infer_test("cudagap-infer rejects an empty list item" ARGS --batch-sizes 1,,8 EXIT 2
  STDERR_EXPECT "--batch-sizes takes a whole number from 1 to 1048576, got ''")
_cudagap_infer_test("cudagap-infer rejects zero requests" ARGS --requests 0 EXIT 2
  STDERR_EXPECT "--requests takes a whole number from 1 to 10000000, got '0'")
_cudagap_infer_test("cudagap-infer rejects a seed with a sign" ARGS --seed -1 EXIT 2
  STDERR_EXPECT "--seed takes a whole number from 0 to [0-9]+, got '-1'")
_cudagap_infer_test("cudagap-infer rejects an unknown mode" ARGS --mode turbo EXIT 2
  STDERR_EXPECT "unknown mode 'turbo' \\(eager, graph, both\\)")
_cudagap_infer_test("cudagap-infer rejects an unknown precision" ARGS --precision fp8 EXIT 2
  STDERR_EXPECT "unknown precision 'fp8' \\(fp16, bf16, fp32\\)")
_cudagap_infer_test("cudagap-infer refuses graph mode under the development profile"
  ARGS --mode graph --profile development EXIT 2
  STDERR_EXPECT "--mode graph needs a profile that does not synchronise after every call")
_cudagap_infer_test("cudagap-infer says an option needs its value" ARGS --checkpoint EXIT 2
  STDERR_EXPECT "--checkpoint needs a value")

# Checkpoints and data are checked before a GPU is needed.
_cudagap_infer_test("cudagap-infer refuses a checkpoint of another model, before it needs a GPU"
  ARGS --data "${_tiny}/good" --checkpoint "${_tiny}/other-model.safetensors" EXIT 1
  STDERR_EXPECT "other-model.safetensors: tensors: " "conv1.weight" "missing")
_cudagap_infer_test("cudagap-infer refuses a checkpoint that is not safetensors"
  ARGS --data "${_tiny}/good" --checkpoint "${_tiny}/good/t10k-labels-idx1-ubyte" EXIT 1
  STDERR_EXPECT "cudagap-infer: [^\n]*good/t10k-labels-idx1-ubyte: ")
_cudagap_infer_test("cudagap-infer says a checkpoint cannot be opened"
  ARGS --data "${_tiny}/good" --checkpoint "${_tiny}/no-such.safetensors" EXIT 1
  STDERR_EXPECT "cannot open[^\n]*no-such.safetensors")
_cudagap_infer_test("cudagap-infer says how to get missing data" ARGS --data "${_tiny}/empty" EXIT 1
  STDERR_EXPECT "Fashion-MNIST's test set is missing from [^\n]*empty \\(t10k-images-idx3-ubyte\\[.gz\\], "
                "apt-get install dataset-fashion-mnist")
_cudagap_infer_test("cudagap-infer refuses a test limit above the data" ARGS --data "${_tiny}/good" --test-limit 33
  EXIT 1 STDERR_EXPECT "--test-limit 33 is more than the 32 test images")

# The run itself: the no-GPU report here, the real one on a GPU.
_cudagap_infer_test("cudagap-infer on the tiny test set" ARGS --data "${_tiny}/good" ${_infer_quick} EXIT 0
  EXPECT "Model: cudagap-train's convnet, 3274634 parameters, initialised from seed 42 \\(no --checkpoint: its predictions are meaningless\\)"
         "Inputs: Fashion-MNIST test set in [^\n]*good, 32 images"
  EXPECT_NO_GPU "No usable GPU, so no inference: "
  EXPECT_GPU "fp16, profile production: 5 buckets planned and captured in [0-9.]+ s"
             "bucket 256: conv1 [a-z_]+ \\([0-9.]+ ms, timed\\), conv2 [a-z_]+ [^\n]*graph of [0-9]+ nodes"
             "activations [0-9.]+ MiB \\(the ledger's bucket 256 activations: [0-9.]+ MiB\\)"
             " batch +bucket +mode +p50 ms +p90 ms +p99 ms +mean ms +images/s +p99/p50"
             "\n +1 +1  eager +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9.]+\n +1 +1  graph "
             "\n +8 +8  graph "
             "Test accuracy \\(32 images\\): eager [0-9.]+% graph [0-9.]+%")
set(_infer_json_gpu "gpu_available=ON" "device:STRING" "results/0/mode=eager" "results/0/batch_size=1"
  "results/0/bucket=1" "results/0/requests=20" "results/0/latency_ms/p50:NUMBER" "results/0/latency_ms/p90:NUMBER"
  "results/0/latency_ms/p99:NUMBER" "results/0/latency_ms/mean:NUMBER" "results/0/images_per_second:NUMBER"
  "results/1/mode=graph" "results/3/batch_size=8" "results/3/bucket=8" "test_accuracy/eager:NUMBER"
  "test_accuracy/graph:NUMBER" "memory_ledger/rows:ARRAY" "memory_ledger/device_read=ON")
_cudagap_infer_test("cudagap-infer --json on the tiny test set"
  ARGS --data "${_tiny}/good" --precision bf16 ${_infer_quick} --json - JSON EXIT 0
  JSON_CHECKS "program=cudagap-infer" "version=${PROJECT_VERSION}" "precision=bf16" "profile=production"
              "checkpoint:NULL" "seeded=ON" "buckets/0=1" "buckets/4=256" "test_images=32" "onnx:NULL" "results:ARRAY"
  JSON_NO_GPU "gpu_available=OFF" "device:NULL" "reason:STRING" "test_accuracy:NULL"
  JSON_GPU ${_infer_json_gpu})
_cudagap_infer_test("cudagap-infer splits a batch larger than the largest bucket"
  ARGS --data "${_tiny}/good" --buckets 1,8 --batch-sizes 20 --requests 5 --warmup 1 --quiet --json - JSON EXIT 0
  JSON_CHECKS "buckets/1=8"
  JSON_GPU "results/0/batch_size=20" "results/0/bucket=8" "results/0/launches_per_request=3"
           "results/1/launches_per_request=3")
_cudagap_infer_test("cudagap-infer --test-limit takes the first test images"
  ARGS --data "${_tiny}/good" --test-limit 4 --mode eager ${_infer_quick} --json - JSON EXIT 0
  JSON_CHECKS "test_images=4"
  JSON_GPU "results/0/mode=eager" "results/1/mode=eager" "test_accuracy/eager:NUMBER" "test_accuracy/graph:NULL")
_cudagap_infer_test("cudagap-infer --outputs needs the GPU's logits"
  ARGS --data "${_tiny}/good" --outputs "${CMAKE_CURRENT_BINARY_DIR}/infer-outputs.safetensors" ${_infer_quick}
  EXIT 0 EXPECT_NO_GPU "--outputs [^\n]*infer-outputs.safetensors not written: it holds the GPU's logits"
  EXPECT_GPU "Wrote [^\n]*infer-outputs.safetensors: 'input' \\[32, 1, 28, 28\\] and cudagap's graph logits 'output' \\[32, 10\\]")
_cudagap_infer_test("cudagap-infer skips graph mode under the development profile, with the reason"
  ARGS --data "${_tiny}/good" --profile development --batch-sizes 1 --requests 5 --warmup 1 --quiet EXIT 0
  EXPECT_GPU "Graph mode skipped: the development profile synchronises after every call"
             "Test accuracy \\(32 images\\): eager [0-9.]+%\n")

# A failure still writes the --json report, with the error and what was known (on stdout here;
# to a file, replaced whole, in infer_json_file.cmake); a report that cannot be written is a failure.
_cudagap_infer_test("cudagap-infer --json reports a failure with the error"
  ARGS --data "${_tiny}/good" --checkpoint "${_tiny}/no-such.safetensors" --json - JSON EXIT 1
  STDERR_EXPECT "cannot open[^\n]*no-such.safetensors"
  JSON_CHECKS "program=cudagap-infer" "error:STRING" "checkpoint=${_tiny}/no-such.safetensors" "seeded=OFF"
              "buckets/4=256" "results:ARRAY" "test_images:NULL" "data:NULL" "gpu_available=OFF")
_cudagap_infer_test("cudagap-infer says when the JSON report cannot be written"
  ARGS --data "${_tiny}/good" ${_infer_quick} --json "${CMAKE_CURRENT_BINARY_DIR}/no-such-folder/report.json" EXIT 1
  STDERR_EXPECT "cannot write the JSON report to [^\n]*no-such-folder/report.json: ")
add_test(NAME "example: cudagap-infer --json FILE replaces the report whole, also on a failure"
  COMMAND "${CMAKE_COMMAND}" "-DINFER=$<TARGET_FILE:cudagap-infer>" "-DWORK=${CMAKE_CURRENT_BINARY_DIR}/infer-json-file"
          "-DDATA=${_tiny}/good" -P "${CMAKE_CURRENT_SOURCE_DIR}/infer_json_file.cmake")
set_tests_properties("example: cudagap-infer --json FILE replaces the report whole, also on a failure"
  PROPERTIES LABELS examples TIMEOUT 300 FIXTURES_REQUIRED cudagap_train_idx
  ENVIRONMENT_MODIFICATION "CUDAGAP_PROFILE=unset:")

# --export-onnx needs no GPU; without the ONNX library it says how to get it.
if(CUDAGAP_INFER_ONNX_FOUND)
  _cudagap_infer_test("cudagap-infer --export-onnx works without a GPU"
    ARGS --data "${_tiny}/good" --export-onnx "${CMAKE_CURRENT_BINARY_DIR}/infer-export.onnx" ${_infer_quick} EXIT 0
    EXPECT "Model exported to [^\n]*infer-export.onnx \\(ONNX opset 17" "Next steps:\n 1. Convert to TensorRT: trtexec --onnx="
           " 2. Deploy with Triton Inference Server")
  _cudagap_infer_test("cudagap-infer --export-onnx --json names the file"
    ARGS --data "${_tiny}/good" --export-onnx "${CMAKE_CURRENT_BINARY_DIR}/infer-export-json.onnx" ${_infer_quick}
         --json - JSON EXIT 0
    JSON_CHECKS "onnx/opset=17" "onnx/path=${CMAKE_CURRENT_BINARY_DIR}/infer-export-json.onnx")
else()
  _cudagap_infer_test("cudagap-infer --export-onnx says how to get ONNX"
    ARGS --data "${_tiny}/good" --export-onnx "${CMAKE_CURRENT_BINARY_DIR}/infer-export.onnx" EXIT 1
    STDERR_EXPECT "--export-onnx: " "libonnx-dev")
endif()

# On a GPU: cudagap-train saves a checkpoint, and cudagap-infer's accuracy on it (eager and graph)
# equals the training run's final accuracy. The real data subset when there is one (1,000 test
# images), else the tiny set. Skipped (its output says so) without a GPU.
if(_fashion)  # (tests/examples/CMakeLists.txt: a folder this build reads, or empty)
  set(_infer_train_args --data "${_fashion}" --train-limit 2000 --test-limit 1000 --epochs 2 --batch-size 32)
  set(_infer_args --data "${_fashion}" --test-limit 1000)
else()
  set(_infer_train_args --data "${_tiny}/good" --epochs 3 --batch-size 16)
  set(_infer_args --data "${_tiny}/good")
endif()
foreach(_precision IN ITEMS fp16 bf16)
  list(JOIN _infer_train_args "|" _train_joined)
  list(JOIN _infer_args "|" _infer_joined)
  set(_name "example: cudagap-infer's accuracy equals cudagap-train's on its checkpoint (${_precision})")
  add_test(NAME "${_name}"
    COMMAND "${CMAKE_COMMAND}" "-DPROBE=$<TARGET_FILE:cudagap_gpu_probe>" "-DTRAIN=$<TARGET_FILE:cudagap-train>"
            "-DINFER=$<TARGET_FILE:cudagap-infer>" "-DWORK=${CMAKE_CURRENT_BINARY_DIR}/infer-vs-train-${_precision}"
            "-DPRECISION=${_precision}" "-DTRAIN_ARGS=${_train_joined}" "-DINFER_ARGS=${_infer_joined}"
            -P "${CMAKE_CURRENT_SOURCE_DIR}/infer_matches_train.cmake")
  set_tests_properties("${_name}" PROPERTIES LABELS gpu TIMEOUT 600 FIXTURES_REQUIRED cudagap_train_idx
    SKIP_REGULAR_EXPRESSION "cudagap-infer-vs-train: skipped: no usable GPU")
endforeach()
