# Fails when a public header declares an aggregate that designated_initializers.cpp does not fill.
# An aggregate here is a namespace-scope `struct` (column 0) that is not a deleter: cudagap's
# plain-data types, which users fill with designated initializers and which must therefore give
# every member a default (or g++ -Wextra warns about the members a user leaves out).
# Usage: cmake -D HEADERS=<list> -D FILLED=<designated_initializers.cpp> -P check_aggregates.cmake
file(READ "${FILLED}" _filled)
set(_missing)
set(_count 0)
foreach(_header IN LISTS HEADERS)
  file(STRINGS "${_header}" _lines REGEX "^struct [a-z_0-9]+")
  foreach(_line IN LISTS _lines)
    string(REGEX REPLACE "^struct ([a-z_0-9]+).*" "\\1" _name "${_line}")
    # Deleters, declarations (`struct x;`), specialisations (`struct x<T> {`) and empty structs
    # (a trait's primary template, `struct x {};`) fill nothing.
    if(_name MATCHES "_deleter$" OR _line MATCHES "^struct [a-z_0-9]+ *([<;]|{};)")
      continue()
    endif()
    math(EXPR _count "${_count} + 1")
    # A class template's aggregate is filled as one of its specialisations: `::name<args>, `.
    if(NOT _filled MATCHES "::${_name}(<[a-z_:]+>)?,[ \n]")
      list(APPEND _missing "${_header}: ${_name}")
    endif()
  endforeach()
endforeach()
if(_count EQUAL 0)
  message(FATAL_ERROR "no aggregates found in the headers given: ${HEADERS}")
endif()
if(_missing)
  list(JOIN _missing "\n  " _text)
  message(FATAL_ERROR "aggregates that ${FILLED} does not fill with CUDAGAP_FILL(type, first, "
                      "last) (give every member a default member initializer, then add them):\n  ${_text}")
endif()
message(STATUS "${_count} aggregates in the public headers, each filled by designated initializers")
