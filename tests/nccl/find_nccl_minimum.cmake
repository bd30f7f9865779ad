# FindNCCL against fake NCCL folders (a header with a version, an empty libnccl.so.2), so that
# the minimum of 2.14 is tested without installing an old NCCL: 2.12.3 is not found, with the
# reason (the version, the minimum, what the wrapper needs from 2.14) even though no version was
# asked for, as cudagapConfig.cmake asks; 2.14.3 is found.
# -D MODULE_DIR=<cudagap's cmake/> -D WORK=<scratch folder> -D GENERATOR=<CMake generator>
cmake_minimum_required(VERSION 3.24)

file(REMOVE_RECURSE "${WORK}")
# A project without languages (no compiler check) that finds NCCL under NCCL_ROOT and prints
# what it found.
file(WRITE "${WORK}/project/CMakeLists.txt" "
cmake_minimum_required(VERSION 3.24)
project(find_nccl_minimum LANGUAGES NONE)
list(APPEND CMAKE_MODULE_PATH \"${MODULE_DIR}\")
find_package(NCCL)
message(STATUS \"found: \${NCCL_FOUND}|\${NCCL_VERSION}|\${NCCL_VERSION_SUPPORTED}|\${NCCL_LIBRARY}\")
")

# Configures the project against a fake NCCL <major>.<minor>.<patch>; its output in <out>.
function(configure_against version out)
  string(REPLACE "." ";" parts "${version}")
  list(GET parts 0 major)
  list(GET parts 1 minor)
  list(GET parts 2 patch)
  set(root "${WORK}/nccl-${version}")
  file(WRITE "${root}/include/nccl.h"
    "#define NCCL_MAJOR ${major}\n#define NCCL_MINOR ${minor}\n#define NCCL_PATCH ${patch}\n")
  file(WRITE "${root}/lib/libnccl.so.2" "not a real library: FindNCCL only looks for it\n")
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -S "${WORK}/project" -B "${WORK}/build-${version}" -G "${GENERATOR}"
            "-DNCCL_ROOT=${root}" -DNCCL_SKIP_PYTHON_WHEEL=ON
    OUTPUT_VARIABLE output ERROR_VARIABLE output RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "the configure against NCCL ${version} failed:\n${output}")
  endif()
  set(${out} "${output}" PARENT_SCOPE)
endfunction()

configure_against(2.12.3 old)
if(NOT old MATCHES "found: FALSE\\|2\\.12\\.3\\|FALSE\\|[^\n]*nccl-2\\.12\\.3/lib/libnccl\\.so\\.2")
  message(FATAL_ERROR "NCCL 2.12.3 was not refused (or not found at all):\n${old}")
endif()
if(NOT old MATCHES "NCCL 2\\.12\\.3 \\([^)]*nccl\\.h\\) is older than 2\\.14, the oldest cudagap's nccl wrapper supports \\(non-blocking communicators")
  message(FATAL_ERROR "the refusal of NCCL 2.12.3 does not say why:\n${old}")
endif()

configure_against(2.14.3 new)
if(NOT new MATCHES "found: TRUE\\|2\\.14\\.3\\|TRUE\\|")
  message(FATAL_ERROR "NCCL 2.14.3 was not found:\n${new}")
endif()
message(STATUS "FindNCCL refuses 2.12.3 with the reason and finds 2.14.3")
