# The fake layouts of the package tests, made of the real toolkit's files (symbolic links, so
# that programs built against them load real libraries):
#   make_toolkit_without_cublas(<folder>): a CUDA Toolkit without cuBLAS and cuRAND, as a minimal
#     install or a runtime-only container has: the real toolkit's headers and libraries minus
#     cublas* and curand*, and its version in version.txt, the file FindCUDAToolkit takes for a
#     toolkit root when there is no nvcc (bin/ is empty).
#   make_cuda_wheels(<site-packages>): NVIDIA's CUDA 13 wheels' layout as their RECORD files list
#     it (nvidia-cublas, nvidia-curand: nvidia/cu13/include/ and nvidia/cu13/lib/ with the
#     versioned names alone, libcublas.so.13, libcublasLt.so.13, libcurand.so.10), holding the
#     real toolkit's cuBLAS and cuRAND.
# Both read TOOLKIT_INCLUDE_DIR, TOOLKIT_LIBRARY_DIR and TOOLKIT_VERSION.

function(make_toolkit_without_cublas toolkit)
  file(MAKE_DIRECTORY "${toolkit}/bin" "${toolkit}/include" "${toolkit}/lib64")
  file(WRITE "${toolkit}/version.txt" "CUDA Version ${TOOLKIT_VERSION}\n")
  foreach(pair IN ITEMS "include|${TOOLKIT_INCLUDE_DIR}" "lib64|${TOOLKIT_LIBRARY_DIR}")
    string(REPLACE "|" ";" pair "${pair}")
    list(GET pair 0 folder)
    list(GET pair 1 real)
    file(GLOB entries RELATIVE "${real}" "${real}/*")
    foreach(entry IN LISTS entries)
      if(NOT entry MATCHES "^(lib)?(cublas|curand)")
        file(CREATE_LINK "${real}/${entry}" "${toolkit}/${folder}/${entry}" SYMBOLIC)
      endif()
    endforeach()
  endforeach()
endfunction()

function(make_cuda_wheels site)
  string(REGEX MATCH "^[0-9]+" major "${TOOLKIT_VERSION}")
  set(wheel "${site}/nvidia/cu${major}")
  file(MAKE_DIRECTORY "${wheel}/include" "${wheel}/lib")
  file(GLOB headers RELATIVE "${TOOLKIT_INCLUDE_DIR}" "${TOOLKIT_INCLUDE_DIR}/cublas*.h"
                                                      "${TOOLKIT_INCLUDE_DIR}/curand*.h")
  foreach(header IN LISTS headers)
    file(CREATE_LINK "${TOOLKIT_INCLUDE_DIR}/${header}" "${wheel}/include/${header}" SYMBOLIC)
  endforeach()
  foreach(library IN ITEMS "libcublas.so.${major}" "libcublasLt.so.${major}" "libcurand.so.10")
    if(NOT EXISTS "${TOOLKIT_LIBRARY_DIR}/${library}")
      message(FATAL_ERROR "the toolkit at ${TOOLKIT_LIBRARY_DIR} has no ${library} to put in the wheel")
    endif()
    file(REAL_PATH "${TOOLKIT_LIBRARY_DIR}/${library}" real)
    file(CREATE_LINK "${real}" "${wheel}/lib/${library}" SYMBOLIC)
  endforeach()
endfunction()
