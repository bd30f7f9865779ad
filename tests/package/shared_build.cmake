# A shared build of the libraries alone (BUILD_SHARED_LIBS=ON; no tests, examples, benchmarks or
# docs): every library it defines is shared, with the project's VERSION and the SOVERSION, and
# libcudagap_core.so, the one built here (the cheapest), carries the SONAME
# libcudagap_core.so.<SOVERSION> behind the usual chain of links.
# -D SOURCE_DIR=<cudagap> -D BINARY_DIR=... -D GENERATOR=... -D CONFIGURE_ARGS=<joined by '|'>
# -D VERSION=<project version> -D SOVERSION=<expected SOVERSION> -D READELF=<readelf>
cmake_minimum_required(VERSION 3.24)

include("${CMAKE_CURRENT_LIST_DIR}/run_step.cmake")

string(REPLACE "|" ";" CONFIGURE_ARGS "${CONFIGURE_ARGS}")
file(REMOVE_RECURSE "${BINARY_DIR}")
# tests/package/library_versions.cmake lists each library target's VERSION and SOVERSION once the
# configure step has defined them all.
run("configure" "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${BINARY_DIR}" -G "${GENERATOR}"
    ${CONFIGURE_ARGS} -DBUILD_SHARED_LIBS=ON -DCUDAGAP_BUILD_TESTS=OFF -DCUDAGAP_BUILD_EXAMPLES=OFF
    -DCUDAGAP_BUILD_BENCH=OFF -DCUDAGAP_BUILD_DOCS=OFF
    "-DCMAKE_PROJECT_INCLUDE=${CMAKE_CURRENT_LIST_DIR}/library_versions.cmake")

file(STRINGS "${BINARY_DIR}/library-versions.txt" lines)
set(libraries "")
foreach(line IN LISTS lines)
  string(REPLACE " " ";" fields "${line}")
  list(GET fields 0 name)
  list(GET fields 1 type)
  list(GET fields 2 version)
  list(GET fields 3 soversion)
  if(NOT type STREQUAL "SHARED_LIBRARY")
    message(FATAL_ERROR "${name} is a ${type} in a BUILD_SHARED_LIBS=ON build")
  endif()
  if(NOT version STREQUAL VERSION OR NOT soversion STREQUAL SOVERSION)
    message(FATAL_ERROR "${name} has VERSION '${version}' and SOVERSION '${soversion}', not "
                        "${VERSION} and ${SOVERSION}")
  endif()
  list(APPEND libraries "${name}")
endforeach()
if(NOT "cudagap_core" IN_LIST libraries)
  message(FATAL_ERROR "the shared build has no cudagap_core (libraries: ${libraries})")
endif()
message(STATUS "shared libraries, each with VERSION ${VERSION} and SOVERSION ${SOVERSION}: ${libraries}")

run("build cudagap_core" "${CMAKE_COMMAND}" --build "${BINARY_DIR}" --target cudagap_core)
file(GLOB_RECURSE core "${BINARY_DIR}/libcudagap_core.so.${VERSION}")
if(NOT core)
  message(FATAL_ERROR "building cudagap_core made no libcudagap_core.so.${VERSION}")
endif()
cmake_path(GET core PARENT_PATH folder)
run("readelf" "${READELF}" -d "${core}")
if(NOT last_output MATCHES "\\(SONAME\\)[^\n]*\\[libcudagap_core\\.so\\.([0-9.]+)\\]")
  message(FATAL_ERROR "libcudagap_core.so.${VERSION} has no SONAME:\n${last_output}")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL SOVERSION)
  message(FATAL_ERROR "the SONAME is libcudagap_core.so.${CMAKE_MATCH_1}, not "
                      "libcudagap_core.so.${SOVERSION}")
endif()
foreach(pair IN ITEMS "libcudagap_core.so|libcudagap_core.so.${SOVERSION}"
                      "libcudagap_core.so.${SOVERSION}|libcudagap_core.so.${VERSION}")
  string(REPLACE "|" ";" pair "${pair}")
  list(GET pair 0 link)
  list(GET pair 1 target)
  file(READ_SYMLINK "${folder}/${link}" points_to)
  if(NOT points_to STREQUAL target)
    message(FATAL_ERROR "${link} points to '${points_to}', not ${target}")
  endif()
endforeach()
message(STATUS "libcudagap_core.so -> libcudagap_core.so.${SOVERSION} (the SONAME) -> "
               "libcudagap_core.so.${VERSION}")
