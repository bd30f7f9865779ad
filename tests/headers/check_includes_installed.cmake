# Fails when an installed header includes a cudagap header (<gpu/...>) that no component
# installs: a consumer of the package would stop at "No such file or directory" although every
# test of the build tree passes, because the build tree compiles against include/ itself.
# Usage: cmake -D HEADERS=<installed headers> -D GENERATED=<generated headers, relative to the
#        include folder> -D ROOT=<include folder of the sources> -P check_includes_installed.cmake
cmake_minimum_required(VERSION 3.24)
list(LENGTH HEADERS _count)
if(_count EQUAL 0)
  message(FATAL_ERROR "no headers were given to check")
endif()
set(_installed ${GENERATED})
foreach(_header IN LISTS HEADERS)
  cmake_path(RELATIVE_PATH _header BASE_DIRECTORY "${ROOT}" OUTPUT_VARIABLE _relative)
  list(APPEND _installed "${_relative}")
endforeach()
set(_missing)
foreach(_header IN LISTS HEADERS)
  file(STRINGS "${_header}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*<gpu/")
  foreach(_line IN LISTS _lines)
    string(REGEX REPLACE ".*<(gpu/[^>]+)>.*" "\\1" _included "${_line}")
    if(NOT _included IN_LIST _installed)
      list(APPEND _missing "${_header} includes <${_included}>")
    endif()
  endforeach()
endforeach()
if(_missing)
  list(JOIN _missing "\n  " _text)
  message(FATAL_ERROR "installed headers include headers that no component installs (add each "
                      "to its component's FILE_SET HEADERS in src/<component>/CMakeLists.txt):"
                      "\n  ${_text}")
endif()
message(STATUS "checked ${_count} installed headers: every <gpu/...> they include is installed")
