# examples/production_inference/onnx.cmake against stand-ins for the ONNX packages of Debian 13
# (ONNX 1.17: the target ONNX::onnx only), Debian 12 (ONNX 1.12: the target onnx) and a package
# with neither: the first two turn the export on and link their target, which carries ONNX_ML=1;
# the third turns it off and says why. No ONNX is needed on this machine; nothing is compiled.
#   cmake -D SOURCE=<cudagap source> -D WORK=<scratch folder> -D GENERATOR=... -P onnx_targets.cmake
cmake_minimum_required(VERSION 3.24)

file(REMOVE_RECURSE "${WORK}")
# A protobuf stand-in, which ONNX's headers would need.
file(WRITE "${WORK}/protobuf/ProtobufConfig.cmake"
  "set(Protobuf_VERSION 3.21.12)\nadd_library(protobuf::libprotobuf INTERFACE IMPORTED)\n")

# Writes the ONNX package <name> of version <version> whose imported target is <target> (none:
# no target).
function(fake_onnx name version target)
  set(dir "${WORK}/${name}")
  set(config "set(ONNX_VERSION ${version})\n")
  if(NOT target STREQUAL "none")
    string(APPEND config "add_library(${target} INTERFACE IMPORTED)\n"
      "set_target_properties(${target} PROPERTIES INTERFACE_COMPILE_DEFINITIONS "
      "\"ONNX_NAMESPACE=onnx;ONNX_ML=1\")\n")
  endif()
  file(WRITE "${dir}/ONNXConfig.cmake" "${config}")
  file(WRITE "${dir}/ONNXConfigVersion.cmake"
    "set(PACKAGE_VERSION ${version})\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n")
endfunction()
fake_onnx(onnx-1.17 1.17.0 ONNX::onnx)
fake_onnx(onnx-1.12 1.12.0 onnx)
fake_onnx(onnx-neither 1.17.0 none)

file(WRITE "${WORK}/project/CMakeLists.txt" "cmake_minimum_required(VERSION 3.24)
project(onnx_targets CXX)
include(\"${SOURCE}/examples/production_inference/onnx.cmake\")
add_executable(probe main.cpp)
cudagap_infer_use_onnx(probe)
get_target_property(libraries probe LINK_LIBRARIES)
get_target_property(definitions probe COMPILE_DEFINITIONS)
message(STATUS \"probe: on=\${CUDAGAP_INFER_ONNX_FOUND} links=\${libraries} defines=\${definitions}\")
")
file(WRITE "${WORK}/project/main.cpp" "int main() {}\n")

# Configures the project against the package <name>; fails unless its output matches each regex.
function(check name)
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -S "${WORK}/project" -B "${WORK}/build-${name}" -G "${GENERATOR}"
            "-DONNX_DIR=${WORK}/${name}" "-DProtobuf_DIR=${WORK}/protobuf"
            -DCMAKE_FIND_PACKAGE_PREFER_CONFIG=ON
    RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "configuring against ${name} failed (${result}):\n${out}\n${err}")
  endif()
  foreach(pattern IN LISTS ARGN)
    if(NOT out MATCHES "${pattern}")
      message(FATAL_ERROR "against ${name}, the output does not match '${pattern}':\n${out}")
    endif()
  endforeach()
  message(STATUS "${name}: as expected")
endfunction()

check(onnx-1.17 "ONNX export on: ONNX 1.17.0 \\([^\n]*, target ONNX::onnx\\)"
      "probe: on=ON links=ONNX::onnx defines=CUDAGAP_INFER_HAVE_ONNX=1")
check(onnx-1.12 "ONNX export on: ONNX 1.12.0 \\([^\n]*, target onnx\\)"
      "probe: on=ON links=onnx defines=CUDAGAP_INFER_HAVE_ONNX=1")
check(onnx-neither "ONNX export off: ONNX 1.17.0 was found \\([^\n]*\\) but defines neither the target ONNX::onnx"
      "probe: on=OFF links=[^\n]*NOTFOUND defines=[^\n]*NOTFOUND")
