# How cudagap's libraries are versioned, installed and exported.

# cudagap_install_component(<component> TARGETS <target>...)
#
# Installs the targets of one component (their libraries and their HEADERS file sets) as the
# export set cudagap-<component>-targets, whose file cudagap-<component>-targets.cmake goes beside
# cudagapConfig.cmake, which loads it when the component is asked for. The same file is written
# into the build folder too (export(EXPORT)), so that find_package(cudagap) works with
# cudagap_DIR=<build folder> without installing. Does nothing when CUDAGAP_INSTALL is off: cudagap
# is then someone else's subproject, which links its targets directly and installs what it wants.
function(cudagap_install_component component)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "TARGETS")
  if(NOT arg_TARGETS)
    message(FATAL_ERROR "cudagap_install_component(${component}): no TARGETS")
  endif()
  if(NOT CUDAGAP_INSTALL)
    return()
  endif()
  set(export_set cudagap-${component}-targets)
  install(TARGETS ${arg_TARGETS} EXPORT ${export_set}
    ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
    LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
    RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
    FILE_SET HEADERS DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
  install(EXPORT ${export_set}
    NAMESPACE cudagap::
    FILE ${export_set}.cmake
    DESTINATION "${CUDAGAP_CMAKE_INSTALL_DIR}")
  export(EXPORT ${export_set}
    NAMESPACE cudagap::
    FILE "${PROJECT_BINARY_DIR}/${export_set}.cmake")
endfunction()

# cudagap_set_library_versions()
#
# Gives every compiled library defined under src/ (whichever components this build has) the
# project's VERSION and, for shared builds (BUILD_SHARED_LIBS=ON), the SOVERSION that goes into
# its SONAME. Before 1.0 a minor release may break the ABI (0.2 renames what 0.1 named), so the
# SOVERSION is major.minor: a program linked against libcudagap_core.so.0.1 never loads
# libcudagap_core.so.0.2. From 1.0 on it becomes the major version alone. Static libraries
# ignore both. Call it after the src/ folders are added.
function(cudagap_set_library_versions)
  if(PROJECT_VERSION_MAJOR EQUAL 0)
    set(soversion "${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}")
  else()
    set(soversion "${PROJECT_VERSION_MAJOR}")
  endif()
  get_property(pending DIRECTORY "${PROJECT_SOURCE_DIR}" PROPERTY SUBDIRECTORIES)
  while(pending)
    list(POP_FRONT pending folder)
    cmake_path(RELATIVE_PATH folder BASE_DIRECTORY "${PROJECT_SOURCE_DIR}" OUTPUT_VARIABLE relative)
    if(NOT relative MATCHES "^src/")
      continue()
    endif()
    get_property(nested DIRECTORY "${folder}" PROPERTY SUBDIRECTORIES)
    list(APPEND pending ${nested})
    get_property(targets DIRECTORY "${folder}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
      get_target_property(type ${target} TYPE)
      if(type MATCHES "^(STATIC|SHARED)_LIBRARY$")
        set_target_properties(${target} PROPERTIES
          VERSION "${PROJECT_VERSION}"
          SOVERSION "${soversion}")
      endif()
    endforeach()
  endwhile()
endfunction()

# The version file of the package: while the major version is 0, find_package(cudagap 0.2)
# accepts only 0.2.x (a minor release may break the API, as the SOVERSION above says); from 1.0
# on, any release of the same major version.
function(cudagap_write_version_file file)
  if(PROJECT_VERSION_MAJOR EQUAL 0)
    set(compatibility SameMinorVersion)
  else()
    set(compatibility SameMajorVersion)
  endif()
  write_basic_package_version_file("${file}" COMPATIBILITY ${compatibility})
endfunction()
