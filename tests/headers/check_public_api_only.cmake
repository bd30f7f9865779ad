# Fails when an example or a benchmark reaches into cudagap's internals (`detail::`, a
# <gpu/detail/...> header, a private header under src/): they are the templates users copy, and
# the API they show must be the public one.
# Usage: cmake -D ROOT=<cudagap source dir> -P check_public_api_only.cmake
file(GLOB_RECURSE _files LIST_DIRECTORIES false
  "${ROOT}/examples/*.cpp" "${ROOT}/examples/*.hpp" "${ROOT}/bench/*.cpp" "${ROOT}/bench/*.hpp")
list(LENGTH _files _count)
if(_count EQUAL 0)
  message(FATAL_ERROR "no sources found under ${ROOT}/examples and ${ROOT}/bench")
endif()
# Strings, not lists: a line of C++ holds semicolons.
set(_offenders "")
foreach(_file IN LISTS _files)
  file(STRINGS "${_file}" _lines REGEX "detail::|<gpu/detail/|#include \"[./]*src/")
  if(_lines)
    cmake_path(RELATIVE_PATH _file BASE_DIRECTORY "${ROOT}" OUTPUT_VARIABLE _relative)
    string(APPEND _offenders "\n  ${_relative}")
  endif()
endforeach()
if(_offenders)
  message(FATAL_ERROR "examples and benchmarks must use cudagap's public API only (add a "
                      "documented public function if one is missing); these use detail:: or "
                      "a private header:${_offenders}")
endif()
message(STATUS "checked ${_count} example and benchmark sources: public API only")
