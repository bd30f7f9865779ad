# pkg-config files for the installed package: one cudagap-<component>.pc per component this build
# has, in <libdir>/pkgconfig beside the CMake package (as fmt installs fmt.pc), for build systems
# that are not CMake:
#   c++ -std=c++20 app.cpp $(pkg-config --cflags --libs cudagap-blas)
# Each file names the components it links in Requires, so pkg-config gathers their flags in link
# order; the CUDA, cuDNN, NCCL and BLAS libraries are named by the paths this build found.

# _cudagap_pc_library_flags(<out> <file>...): each library file as -L<folder> -l<name> (pkg-config
# merges the repeated -L), a file that is not lib<name>.so/.a as itself.
function(_cudagap_pc_library_flags out)
  set(flags "")
  foreach(file IN LISTS ARGN)
    cmake_path(GET file FILENAME name)
    if(IS_ABSOLUTE "${file}" AND name MATCHES "^lib(.+)\\.(so|a)(\\..*)?$")
      cmake_path(GET file PARENT_PATH folder)
      string(APPEND flags " -L${folder} -l${CMAKE_MATCH_1}")
    elseif(file MATCHES "^-")
      string(APPEND flags " ${file}")
    elseif(NOT IS_ABSOLUTE "${file}")
      string(APPEND flags " -l${file}")
    else()
      string(APPEND flags " ${file}")
    endif()
  endforeach()
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

# _cudagap_write_pc(<component> DESCRIPTION <text> [REQUIRES <module>...] [CFLAGS <flag>...]
#                   [LIBS <flag>...]): writes <build>/pkgconfig/cudagap-<component>.pc and
# installs it. A component with a library of its own links -lcudagap_<component> first.
function(_cudagap_write_pc component)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "DESCRIPTION" "REQUIRES;CFLAGS;LIBS")
  set(CUDAGAP_PC_COMPONENT "${component}")
  set(CUDAGAP_PC_DESCRIPTION "${arg_DESCRIPTION}")
  list(JOIN arg_REQUIRES " " CUDAGAP_PC_REQUIRES)
  set(CUDAGAP_PC_CFLAGS "")
  foreach(flag IN LISTS arg_CFLAGS)
    string(APPEND CUDAGAP_PC_CFLAGS " ${flag}")
  endforeach()
  set(libs "")
  get_target_property(type cudagap_${component} TYPE)
  if(NOT type STREQUAL "INTERFACE_LIBRARY")
    set(libs "-L\${libdir} -lcudagap_${component}")
  endif()
  _cudagap_pc_library_flags(dependencies ${arg_LIBS})
  string(STRIP "${libs}${dependencies}" CUDAGAP_PC_LIBS)
  set(file "${PROJECT_BINARY_DIR}/pkgconfig/cudagap-${component}.pc")
  configure_file("${PROJECT_SOURCE_DIR}/cmake/cudagap.pc.in" "${file}" @ONLY)
  install(FILES "${file}" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
endfunction()

# cudagap_write_pkg_config_files(): call once every component's target exists.
function(cudagap_write_pkg_config_files)
  # ${pcfiledir} is <prefix>/<libdir>/pkgconfig: climb back to the prefix.
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    message(FATAL_ERROR "cudagap's pkg-config files need a CMAKE_INSTALL_LIBDIR relative to the "
      "prefix (got ${CMAKE_INSTALL_LIBDIR}): configure with -DCMAKE_INSTALL_LIBDIR=lib")
  endif()
  set(CUDAGAP_PC_PREFIX_FROM_PCFILEDIR "..")
  string(REGEX MATCHALL "[^/]+" parts "${CMAKE_INSTALL_LIBDIR}")
  foreach(part IN LISTS parts)
    string(APPEND CUDAGAP_PC_PREFIX_FROM_PCFILEDIR "/..")
  endforeach()

  # The core: the CUDA runtime's headers, and CCCL's where the toolkit keeps them apart (CUDA 13).
  set(cuda_cflags "")
  foreach(dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
    list(APPEND cuda_cflags "-I${dir}")
    if(EXISTS "${dir}/cccl/cuda/memory_resource")
      list(APPEND cuda_cflags "-I${dir}/cccl")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES cuda_cflags)
  set(cuda "${CUDAToolkit_LIBRARY_DIR}")
  _cudagap_write_pc(core DESCRIPTION "${PROJECT_DESCRIPTION}: the core (CUDA runtime)"
    CFLAGS ${cuda_cflags} LIBS "-L${cuda}" cudart)
  _cudagap_write_pc(matrix DESCRIPTION "cudagap's matrix views and GEMM planning (header-only)")
  if(TARGET cudagap_blas)
    _cudagap_write_pc(blas DESCRIPTION "cudagap's cuBLAS and cuRAND wrappers"
      REQUIRES cudagap-core cudagap-matrix LIBS "-L${cuda}" cublas cublasLt curand)
  endif()
  if(TARGET cudagap_dnn)
    _cudagap_write_pc(dnn DESCRIPTION "cudagap's cuDNN wrappers" REQUIRES cudagap-core
      CFLAGS "-I${CUDNN_INCLUDE_DIR}" LIBS "${CUDNN_LIBRARY}")
  endif()
  if(TARGET cudagap_nccl)
    _cudagap_write_pc(nccl DESCRIPTION "cudagap's NCCL wrappers" REQUIRES cudagap-core
      CFLAGS "-I${NCCL_INCLUDE_DIR}" LIBS "${NCCL_LIBRARY}")
  endif()
  if(TARGET cudagap_nn)
    set(zlib "")
    if(CUDAGAP_NN_USES_ZLIB)
      set(zlib zlib)
    endif()
    _cudagap_write_pc(nn DESCRIPTION "cudagap's layers, parameters and mixed precision"
      REQUIRES cudagap-blas cudagap-dnn cudagap-core ${zlib})
  endif()
  if(TARGET cudagap_host_blas)
    set(blas "")
    if(CUDAGAP_HOST_BLAS_USES_BLAS)
      set(blas ${BLAS_LIBRARIES} ${CMAKE_DL_LIBS})
    endif()
    _cudagap_write_pc(host_blas DESCRIPTION "cudagap's CPU GEMM baseline"
      REQUIRES cudagap-matrix LIBS ${blas})
  endif()
  if(TARGET cudagap_json)
    _cudagap_write_pc(json DESCRIPTION "cudagap's reports as JSON (nlohmann-json)"
      REQUIRES cudagap-core nlohmann_json)
  endif()
  if(TARGET cudagap_tools)
    # The library wrappers it was built with link privately, but a static library needs them at
    # the program's link too.
    set(needs "")
    foreach(component IN LISTS CUDAGAP_TOOLS_WRAPPERS)
      list(APPEND needs cudagap-${component})
    endforeach()
    if(CUDAGAP_TOOLS_USES_JSON)
      list(APPEND needs cudagap-json)
    endif()
    _cudagap_write_pc(tools DESCRIPTION "cudagap's diagnosis and VRAM advice"
      REQUIRES ${needs} cudagap-core)
  endif()
endfunction()
