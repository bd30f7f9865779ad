# FindCUDNN against the layout of NVIDIA's cuDNN wheel (pip install nvidia-cudnn-cu13, what
# PyTorch ships, the only cuDNN of the lent GPU hosts): <site-packages>/nvidia/cudnn/include and
# lib/, where lib holds libcudnn.so.9 and no unversioned libcudnn.so. A fake wheel is made in
# WORK and found three ways:
#   1. through python3 (PYTHONPATH points at the fake site-packages), as cudagap's own configure
#      finds it;
#   2. with CUDNN_ROOT = the parent of the include folder found in 1, which is what
#      tests/examples gives the copied example's configure (and tests/package its consumers);
#   3. with CUDNN_ROOT = the site-packages folder (documented in FindCUDNN).
# -D MODULE_DIR=<cudagap's cmake/> -D WORK=<scratch folder> -D GENERATOR=... -D CXX_COMPILER=...
cmake_minimum_required(VERSION 3.24)

file(REMOVE_RECURSE "${WORK}")
set(site "${WORK}/site-packages")
set(wheel "${site}/nvidia/cudnn")
file(WRITE "${site}/nvidia/__init__.py" "")
file(WRITE "${wheel}/__init__.py" "")
file(WRITE "${wheel}/include/cudnn_version.h"
  "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 87\n#define CUDNN_PATCHLEVEL 6\n")
file(WRITE "${wheel}/include/cudnn.h" "#include \"cudnn_version.h\"\n")
file(WRITE "${wheel}/lib/libcudnn.so.9" "not a real library: FindCUDNN only looks for it\n")

# A project that finds cuDNN and prints what it found. No CUDAToolkit: its folders are searched
# before the wheel, and a toolkit with its own cuDNN would hide the fake.
file(WRITE "${WORK}/project/CMakeLists.txt" "
cmake_minimum_required(VERSION 3.24)
project(find_cudnn_wheel LANGUAGES CXX)
list(APPEND CMAKE_MODULE_PATH \"${MODULE_DIR}\")
find_package(CUDNN REQUIRED)
message(STATUS \"found: \${CUDNN_VERSION}|\${CUDNN_INCLUDE_DIR}|\${CUDNN_LIBRARY}\")
")

function(find_it label)
  file(REMOVE_RECURSE "${WORK}/build-${label}")
  execute_process(COMMAND ${ARGN} "${CMAKE_COMMAND}" -S "${WORK}/project" -B "${WORK}/build-${label}"
                          -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" ${extra}
                  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(expected "found: 9.87.6|${wheel}/include|${wheel}/lib/libcudnn.so.9")
  string(FIND "${out}" "${expected}" at)
  if(NOT result EQUAL 0 OR at EQUAL -1)
    message(FATAL_ERROR "${label}: FindCUDNN did not find the wheel (expected '${expected}'):\n${out}\n${err}")
  endif()
  message(STATUS "${label}: found the wheel")
endfunction()

set(extra "")
find_it(python "${CMAKE_COMMAND}" -E env --unset=CUDNN_ROOT "PYTHONPATH=${site}")
set(found_include "${wheel}/include")
cmake_path(GET found_include PARENT_PATH copied_root) # as tests/examples/CMakeLists.txt does
set(extra "-DCUDNN_ROOT=${copied_root}")
find_it(copied-example "${CMAKE_COMMAND}" -E env --unset=PYTHONPATH --unset=CUDNN_ROOT)
set(extra "-DCUDNN_ROOT=${site}")
find_it(site-packages "${CMAKE_COMMAND}" -E env --unset=PYTHONPATH --unset=CUDNN_ROOT)
