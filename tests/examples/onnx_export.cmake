# cudagap-infer's ONNX exporter (examples/production_inference/onnx_export.hpp), on the host:
# cudagap_onnx_export_probe builds the convnet's store with gpu::nn's layers, exports it, re-reads
# the file with ONNX's own parser and checker, and makes the exporter refuse bad input. Included
# by tests/examples/CMakeLists.txt after cudagap_example_test is defined; needs cudagap::nn.
# With ONNX (libonnx-dev and libprotobuf-dev) the exports are checked; without it, that the
# exporter still checks its arguments and then says how to get the library.
include("${PROJECT_SOURCE_DIR}/examples/production_inference/onnx.cmake")
add_executable(cudagap_onnx_export_probe onnx_export_probe.cpp)
target_compile_features(cudagap_onnx_export_probe PRIVATE cxx_std_20)
target_link_libraries(cudagap_onnx_export_probe PRIVATE cudagap::nn)
cudagap_infer_use_onnx(cudagap_onnx_export_probe)
cudagap_set_warnings(cudagap_onnx_export_probe)

set(_onnx "${CMAKE_CURRENT_BINARY_DIR}/onnx-export")
file(MAKE_DIRECTORY "${_onnx}")
# A probe run as a test, optionally a fixture's set-up (SETUP name) or needing one (REQUIRES name).
function(_cudagap_onnx_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "SETUP;REQUIRES" "")
  cudagap_example_test("${name}" cudagap_onnx_export_probe ${arg_UNPARSED_ARGUMENTS})
  if(arg_SETUP)
    set_tests_properties("example: ${name}" PROPERTIES FIXTURES_SETUP ${arg_SETUP})
  endif()
  if(arg_REQUIRES)
    set_tests_properties("example: ${name}" PROPERTIES FIXTURES_REQUIRED ${arg_REQUIRES})
  endif()
endfunction()

# Bad arguments are refused in every build, before anything is written.
set(_refused "refused: infer::export_onnx: the parameters are not those of cudagap-infer's convnet: ")
_cudagap_onnx_test("onnx export names a missing tensor and writes nothing" ARGS refuse missing "${_onnx}/missing"
  EXIT 0 EXPECT "${_refused}tensor 'fc2.bias' is missing \\(expected \\[10\\]\\)\n" "nothing left behind")
_cudagap_onnx_test("onnx export names a misshaped tensor and writes nothing" ARGS refuse misshaped "${_onnx}/misshaped"
  EXIT 0 EXPECT "${_refused}tensor 'conv2.weight' has shape \\[64, 16, 5, 5\\], expected \\[64, 32, 5, 5\\]\n"
                "nothing left behind")
_cudagap_onnx_test("onnx export names a tensor the model does not have" ARGS refuse extra "${_onnx}/extra"
  EXIT 0 EXPECT "${_refused}tensor 'fc3.weight' \\[10, 10\\] is not part of the model; tensor 'fc3.bias' \\[10\\]"
                "nothing left behind")
_cudagap_onnx_test("onnx export refuses values of another size" ARGS refuse values "${_onnx}/values"
  EXIT 0 EXPECT "refused: infer::export_onnx: 3[0-9]+ values given for a store of 3[0-9]+ elements" "nothing left behind")

if(NOT CUDAGAP_INFER_ONNX_FOUND)
  set(_how "built without the ONNX C\\+\\+ library[^\n]*apt-get install libonnx-dev libprotobuf-dev[^\n]*pip")
  _cudagap_onnx_test("onnx export without the library says how to get it" ARGS export "${_onnx}/model.onnx"
    EXIT 1 STDERR_EXPECT "infer::export_onnx: this program was ${_how}")
  _cudagap_onnx_test("onnx export without the library writes nothing" ARGS refuse folder "${_onnx}/folder"
    EXIT 0 EXPECT "refused: infer::export_onnx: this program was ${_how}" "nothing left behind")
  return()
endif()

_cudagap_onnx_test("onnx export: a folder in the way of the file leaves no temporary file" ARGS refuse folder "${_onnx}/folder"
  EXIT 0 EXPECT "refused: [^\n]*infer::export_onnx: cannot rename the temporary file over the target[^\n]*folder/model.onnx"
                "nothing left behind")
_cudagap_onnx_test("onnx export: a missing folder is named" ARGS refuse no-folder "${_onnx}/no-folder"
  EXIT 0 EXPECT "refused: [^\n]*infer::export_onnx: cannot create a temporary file beside the target[^\n]*no-such-folder/model.onnx"
                "nothing left behind")

# From a seed: exported, then re-read and checked against the same values (and, so that the check
# is seen to fail, against another seed's).
_cudagap_onnx_test("onnx export from a seed" ARGS export "${_onnx}/seed7.onnx" --seed 7 SETUP cudagap_onnx_seed7
  EXIT 0 EXPECT "exported [^\n]*seed7.onnx \\([0-9]+ bytes, opset 17\\)")
_cudagap_onnx_test("onnx export from a seed reads back in ONNX and passes its checker"
  ARGS check "${_onnx}/seed7.onnx" --seed 7 REQUIRES cudagap_onnx_seed7
  EXIT 0 EXPECT "checked [^\n]*: IR 8, opset 17, input \\[batch,1,28,28\\], output \\[batch,10\\], 10 nodes, 8 initializers")
_cudagap_onnx_test("onnx export check sees weights of another seed" ARGS check "${_onnx}/seed7.onnx" --seed 8
  REQUIRES cudagap_onnx_seed7 EXIT 1 STDERR_EXPECT "initializer 'conv1.weight' holds other values")

# From a checkpoint as cudagap-train writes it (gpu::nn::write_parameters).
_cudagap_onnx_test("onnx export: a checkpoint" ARGS save-checkpoint "${_onnx}/seed9.safetensors" --seed 9
  SETUP cudagap_onnx_checkpoint EXIT 0 EXPECT "saved ")
_cudagap_onnx_test("onnx export from a checkpoint" ARGS export "${_onnx}/checkpoint.onnx" --checkpoint "${_onnx}/seed9.safetensors"
  REQUIRES cudagap_onnx_checkpoint SETUP cudagap_onnx_from_checkpoint EXIT 0 EXPECT "exported ")
_cudagap_onnx_test("onnx export from a checkpoint holds its weights" ARGS check "${_onnx}/checkpoint.onnx" --seed 9
  REQUIRES cudagap_onnx_from_checkpoint EXIT 0 EXPECT "8 initializers equal to the values")
