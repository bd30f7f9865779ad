# Where NVIDIA's Python wheels put their libraries: the one search that FindCUDNN, FindNCCL and
# CudagapCudaLibraries (cuBLAS, cuBLASLt, cuRAND) share, so that every NVIDIA library is looked
# for in the same Python environment, in the same order.
#
# NVIDIA's wheels install below <site-packages>/nvidia/: cuDNN in nvidia/cudnn/, NCCL in
# nvidia/nccl/, the CUDA 13 toolkit's libraries (nvidia-cublas, nvidia-curand,
# nvidia-cuda-runtime, ...) together in nvidia/cu13/, and CUDA 12's each in its own folder
# (nvidia/cublas/, nvidia/curand/). Each such folder holds include/ and lib/, and lib/ only the
# versioned names (libcudnn.so.9, libcublas.so.13): no unversioned link.
#
# The Python environment is the one python3 gives: Python3_EXECUTABLE when the project set it
# (scripts/gpu-check does, with the python3 that has PyTorch), else the first python3 on PATH.
# Its sys.path is read once per configure (a global property keeps it), without importing any
# package: an nvidia/ folder in a sys.path entry counts, whether or not it has an __init__.py.

include_guard(GLOBAL)

# cudagap_nvidia_wheel_roots(<out>): the <site-packages>/nvidia folders of that python3, in
# sys.path order (PYTHONPATH first), or empty when there is no python3 or none has one.
function(cudagap_nvidia_wheel_roots out)
  get_property(asked GLOBAL PROPERTY CUDAGAP_NVIDIA_WHEEL_ROOTS SET)
  if(NOT asked)
    set(roots "")
    set(python "${Python3_EXECUTABLE}")
    if(NOT python)
      find_program(CUDAGAP_WHEEL_PYTHON NAMES python3 python
        DOC "The python3 whose site-packages are searched for NVIDIA's wheels")
      set(python "${CUDAGAP_WHEEL_PYTHON}")
    endif()
    if(python)
      execute_process(
        COMMAND "${python}" -c
                "import os, sys; print(';'.join(d for d in (os.path.join(os.path.abspath(p), 'nvidia') for p in sys.path if p) if os.path.isdir(d)))"
        OUTPUT_VARIABLE roots
        OUTPUT_STRIP_TRAILING_WHITESPACE
        ERROR_QUIET
        RESULT_VARIABLE result)
      if(NOT result EQUAL 0)
        set(roots "")
      endif()
      list(REMOVE_DUPLICATES roots)
    endif()
    set_property(GLOBAL PROPERTY CUDAGAP_NVIDIA_WHEEL_ROOTS "${roots}")
  endif()
  get_property(roots GLOBAL PROPERTY CUDAGAP_NVIDIA_WHEEL_ROOTS)
  set(${out} "${roots}" PARENT_SCOPE)
endfunction()

# cudagap_nvidia_wheel_dirs(<out> <subfolder>...): the folders <root>/<subfolder> that exist, for
# every root of cudagap_nvidia_wheel_roots and each <subfolder> in the order given (e.g. cu13
# cublas: CUDA 13's shared folder before CUDA 12's own), as find_path and find_library hints.
function(cudagap_nvidia_wheel_dirs out)
  cudagap_nvidia_wheel_roots(roots)
  set(dirs "")
  foreach(root IN LISTS roots)
    foreach(subfolder IN LISTS ARGN)
      if(IS_DIRECTORY "${root}/${subfolder}")
        list(APPEND dirs "${root}/${subfolder}")
      endif()
    endforeach()
  endforeach()
  set(${out} "${dirs}" PARENT_SCOPE)
endfunction()
