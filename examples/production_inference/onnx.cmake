# ONNX export for cudagap-infer: the official ONNX C++ library when this machine has it.
#
#   include(${CMAKE_CURRENT_LIST_DIR}/onnx.cmake)
#   cudagap_infer_use_onnx(<target>)
#
# adds onnx_export.cpp (and this folder, for onnx_export.hpp) to <target>. When find_package finds
# ONNX 1.12 or later (the first with opset 17; Debian's libonnx-dev) and the protobuf library its
# headers include (libprotobuf-dev: Debian's libonnx-dev does not pull it in), <target> links ONNX
# and gets CUDAGAP_INFER_HAVE_ONNX, so infer::onnx_export_available() is true. Otherwise <target>
# still builds: infer::export_onnx checks its arguments, then throws
# infer::onnx_export_unavailable_reason(), which says how to get the library. Turn it off on a
# machine that has it with -DCMAKE_DISABLE_FIND_PACKAGE_ONNX=ON. Sets CUDAGAP_INFER_ONNX_FOUND (ON or
# OFF) in the caller's scope, and prints one status line saying which, once per configure.
include_guard(GLOBAL)

# The reason ONNX export is off in this configure, empty when it is on; sets <library> to the
# ONNX library's imported target. A macro, so that what find_package sets (its imported targets,
# ONNX_VERSION, ...) lands in the function calling it. The target carries ONNX_ML=1, without
# which onnx/onnx_pb.h includes an onnx/onnx.pb.h that does not exist: ONNX 1.16 and later
# (Debian 13's 1.17) export it as ONNX::onnx, earlier ones (Debian 12's 1.12) as plain onnx, a
# name that, linked where no such target exists, becomes a bare -lonnx.
macro(_cudagap_infer_find_onnx why library)
  set(${why} "")
  set(${library} "")
  find_package(ONNX 1.12 QUIET)
  if(NOT ONNX_FOUND)
    if(ONNX_CONSIDERED_VERSIONS)
      set(${why} "ONNX ${ONNX_CONSIDERED_VERSIONS} is older than 1.12, the first with opset 17")
    else()
      set(${why} "ONNX's C++ library was not found (Debian and Ubuntu: libonnx-dev)")
    endif()
  elseif(TARGET ONNX::onnx)
    set(${library} ONNX::onnx)
  elseif(TARGET onnx)
    set(${library} onnx)
  else()
    string(CONCAT ${why} "ONNX ${ONNX_VERSION} was found (${ONNX_DIR}) but defines neither the "
                         "target ONNX::onnx (ONNX 1.16 and later) nor onnx (earlier ones)")
  endif()
  if(NOT ${why})
    # ONNX's package config links protobuf::libprotobuf without finding it; the headers are needed too.
    find_package(Protobuf QUIET)
    if(NOT Protobuf_FOUND OR NOT TARGET protobuf::libprotobuf)
      set(${why} "ONNX ${ONNX_VERSION} was found but not the protobuf library and headers it needs (libprotobuf-dev)")
    endif()
  endif()
endmacro()

function(cudagap_infer_use_onnx target)
  target_sources(${target} PRIVATE "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/onnx_export.cpp")
  target_include_directories(${target} PRIVATE "${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  _cudagap_infer_find_onnx(why onnx_target)
  get_property(reported GLOBAL PROPERTY _CUDAGAP_INFER_ONNX_REPORTED)
  set_property(GLOBAL PROPERTY _CUDAGAP_INFER_ONNX_REPORTED ON)
  if(why)
    if(NOT reported)
      message(STATUS "cudagap-infer: ONNX export off: ${why}. To turn it on: apt-get install libonnx-dev "
                     "libprotobuf-dev, then configure again (pip's onnx package has no C++ library)")
    endif()
    set(CUDAGAP_INFER_ONNX_FOUND OFF PARENT_SCOPE)
    return()
  endif()
  target_link_libraries(${target} PRIVATE ${onnx_target})
  target_compile_definitions(${target} PRIVATE CUDAGAP_INFER_HAVE_ONNX=1)
  if(NOT reported)
    message(STATUS "cudagap-infer: ONNX export on: ONNX ${ONNX_VERSION} (${ONNX_DIR}, target "
                   "${onnx_target}), protobuf ${Protobuf_VERSION}")
  endif()
  set(CUDAGAP_INFER_ONNX_FOUND ON PARENT_SCOPE)
endfunction()
