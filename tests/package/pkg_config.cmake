# Installs cudagap, moves the install elsewhere, and builds and runs tests/package/consumer.cpp
# with nothing but `pkg-config --cflags --libs cudagap-core [cudagap-<component>]`, as a Makefile
# would: the .pc files must be installed in <libdir>/pkgconfig, find each other through Requires
# and give every include folder (CUDA's and CCCL's too) and library. Fails unless the consumer
# prints "cudagap consumer ok" (with or without a GPU).
# -D INSTALL_FROM=<cudagap build> -D INSTALL_PREFIX=<dir> -D RELOCATED_PREFIX=<dir>
# -D BINARY_DIR=<dir> -D CXX=<compiler> -D PKG_CONFIG=<pkg-config> -D LIBDIR=<relative libdir>
# Optional: -D COMPONENT=<component> (also its module, and CONSUMER_HAS_<COMPONENT>=1)
include("${CMAKE_CURRENT_LIST_DIR}/run_step.cmake")

file(REMOVE_RECURSE "${INSTALL_PREFIX}" "${RELOCATED_PREFIX}" "${BINARY_DIR}")
file(MAKE_DIRECTORY "${BINARY_DIR}")
run("install" "${CMAKE_COMMAND}" --install "${INSTALL_FROM}" --prefix "${INSTALL_PREFIX}")
file(RENAME "${INSTALL_PREFIX}" "${RELOCATED_PREFIX}")
set(pc_dir "${RELOCATED_PREFIX}/${LIBDIR}/pkgconfig")
if(NOT EXISTS "${pc_dir}/cudagap-core.pc")
  file(GLOB_RECURSE found RELATIVE "${RELOCATED_PREFIX}" "${RELOCATED_PREFIX}/*.pc")
  message(FATAL_ERROR "the install has no ${LIBDIR}/pkgconfig/cudagap-core.pc (.pc files: ${found})")
endif()

set(modules cudagap-core)
set(defines "")
if(COMPONENT)
  list(APPEND modules "cudagap-${COMPONENT}")
  string(TOUPPER "${COMPONENT}" upper)
  set(defines "-DCONSUMER_HAS_${upper}=1")
endif()
# Only this install's files: PKG_CONFIG_LIBDIR replaces the default search path, and the system's
# own modules that a Requires may name (zlib, nlohmann_json) come after.
execute_process(COMMAND "${PKG_CONFIG}" --variable pc_path pkg-config
  OUTPUT_VARIABLE system_path OUTPUT_STRIP_TRAILING_WHITESPACE)
set(ENV{PKG_CONFIG_LIBDIR} "${pc_dir}:${system_path}")
unset(ENV{PKG_CONFIG_PATH})
run("pkg-config --cflags --libs ${modules}" "${PKG_CONFIG}" --cflags --libs ${modules})
string(STRIP "${last_output}" flags)
message(STATUS "pkg-config --cflags --libs ${modules}:\n  ${flags}")
if(NOT flags MATCHES "${RELOCATED_PREFIX}")
  message(FATAL_ERROR "the flags do not point into the moved install ${RELOCATED_PREFIX}: ${flags}")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
run("compile and link" "${CXX}" -std=c++20 ${defines} "${CMAKE_CURRENT_LIST_DIR}/consumer.cpp"
  -o "${BINARY_DIR}/consumer" ${flags})
run("run" "${BINARY_DIR}/consumer")
message(STATUS "${last_output}")
if(NOT last_output MATCHES "cudagap consumer ok")
  message(FATAL_ERROR "the consumer ran but did not finish:\n${last_output}")
endif()
